"""A CLI query loads only what its answer needs (issue 14, item 6): a search over the default
static vectors embeds its query here with numpy alone; over a transformer's vectors it asks the
running pipeline's embedder, or without one loads the bundled model lean (no fastembed); a
skeleton counts tokens only when asked. Checked by what a real `nsccn` process has
imported when it answers (the wall time is measured by benchmarks/cli_latency.py)."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import stop_group

from nsccn.config import STATIC_MODEL, Config
from nsccn.indexing.indexer import index_repository
from test_mcp_server import make_repo

HEAVY = ("fastembed", "onnxruntime", "tokenizers", "lightgbm", "bpe_openai", "numpy", "zmq")
PROBE = """
import contextlib, io, json, sys
from nsccn_cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    rc = main(sys.argv[1:])
print(json.dumps({"rc": rc, "out": out.getvalue(), "loaded": [m for m in %r if m in sys.modules]}))
""" % (HEAVY,)


def cli(*args: str) -> dict:
    """Run one CLI command in a fresh interpreter; its answer and which heavy modules it loaded."""
    r = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads(r.stdout.splitlines()[-1])
    assert res["rc"] == 0, (res, r.stderr[-2000:])
    return res


@pytest.fixture(scope="module")
def repo_with_vectors(tmp_path_factory) -> Path:
    """Vectors of a transformer (the bundled MiniLM tuned for code: a user setting)."""
    repo = make_repo(tmp_path_factory.mktemp("cost") / "acme_repo", index=False)
    summary = index_repository(repo, workers=1, embed=True, config=Config(embedding_model="minilm-code"))
    assert summary.vectors and summary.vectors["model"] == "nsccn/minilm-code-v1"
    return repo


def test_search_over_the_default_static_vectors_loads_numpy_alone(tmp_path):
    repo = make_repo(tmp_path / "acme_repo", index=False)
    summary = index_repository(repo, workers=1)
    assert summary.vectors and summary.vectors["model"] == STATIC_MODEL
    res = cli("search", "validate token", "--root", str(repo), "--json")
    answer = json.loads(res["out"])
    assert "vector" in answer["signals"] and answer["vectors"] == STATIC_MODEL
    assert answer["results"][0]["id"] == "func:acme/auth.py:validate_token"
    assert res["loaded"] == ["numpy"]  # no onnxruntime, no tokenizer, no socket to a pipeline


def test_search_without_a_pipeline_loads_the_bundled_model_lean(repo_with_vectors):
    res = cli("search", "validate token", "--root", str(repo_with_vectors), "--json")
    answer = json.loads(res["out"])
    assert "vector" in answer["signals"] and answer["results"][0]["id"] == "func:acme/auth.py:validate_token"
    assert "onnxruntime" in res["loaded"]  # the query was embedded here...
    assert not {"fastembed", "lightgbm", "bpe_openai", "zmq"} & set(res["loaded"])  # ...with nothing more


def test_skeleton_and_window_load_no_model_and_no_tokenizer(repo_with_vectors):
    res = cli("skeleton", "acme/auth.py", "--root", str(repo_with_vectors))
    assert "def validate_token(token: dict) -> bool:" in res["out"]
    assert res["loaded"] == []
    res = cli("window", "func:acme/auth.py:validate_token", "--root", str(repo_with_vectors))
    assert "def validate_token" in res["out"] and res["loaded"] == []
    res = cli("skeleton", "acme/auth.py", "--root", str(repo_with_vectors), "--tokens", "--json")
    assert json.loads(res["out"])["tokens"] > 0 and "bpe_openai" in res["loaded"]


def test_search_asks_the_running_pipelines_embedder(repo_with_vectors):
    """With `nsccn serve` running (its embedder has the model loaded), a CLI search gets its query
    vector from it and loads no model of its own."""
    nsccn = Path(sys.executable).parent / "nsccn"
    cmd = [str(nsccn)] if nsccn.exists() else [sys.executable, "-m", "nsccn.cli"]
    log = (repo_with_vectors.parent / "serve.log").open("w")
    proc = subprocess.Popen([*cmd, "serve", str(repo_with_vectors), "--no-mcp", "--workers", "1"],
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                            env={**os.environ, "NSCCN_EMBED_MODEL": "minilm-code"})
    try:
        deadline = time.monotonic() + 90
        while True:
            r = subprocess.run([*cmd, "status", "--json", "--root", str(repo_with_vectors)],
                               capture_output=True, text=True, timeout=60)
            st = json.loads(r.stdout) if r.stdout.startswith("{") else {}
            live = st.get("pipeline") or {}
            embedder = (live.get("actors") or {}).get("embedder") or {}
            if live.get("state") == "watching" and embedder.get("state") == "running":  # its model is loaded
                break
            assert proc.poll() is None and time.monotonic() < deadline, (st, (repo_with_vectors.parent / "serve.log").read_text()[-3000:])
            time.sleep(0.5)
        res = cli("search", "validate token", "--root", str(repo_with_vectors), "--json")
        answer = json.loads(res["out"])
        assert "vector" in answer["signals"] and answer["results"][0]["id"] == "func:acme/auth.py:validate_token"
        assert "zmq" in res["loaded"] and "onnxruntime" not in res["loaded"], res["loaded"]
    finally:
        stop_group(proc)


# What `nsccn index` must not import: the query stack, a process pool, the progress bar (stderr is
# no terminal here: tqdm would disable itself), the pipeline's messages, vectors.
NOT_FOR_INDEX = ("nsccn.serving.navigator", "nsccn.query.search", "nsccn.query.fusion", "nsccn.graph.trace", "multiprocessing", "concurrent.futures.process",
                 "tqdm", "nsccn.messages", "zmq")
INDEX_PROBE = PROBE.replace(repr(HEAVY), repr(NOT_FOR_INDEX + ("numpy", "nsccn.indexing.resolve", "nsccn.reading.extract")))


def test_index_loads_only_what_the_index_run_needs(tmp_path):
    repo = make_repo(tmp_path / "acme_repo", index=False)
    index_repository(repo, workers=1)

    def index() -> dict:
        r = subprocess.run([sys.executable, "-c", INDEX_PROBE, "index", str(repo), "--workers", "2"],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr[-3000:]
        res = json.loads(r.stdout.splitlines()[-1])
        assert res["rc"] == 0, (res, r.stderr[-2000:])
        return res

    res = index()  # nothing changed: no parse, no resolution, no PageRank
    assert "0 parsed" in res["out"] and res["loaded"] == []
    (repo / "acme" / "auth.py").write_text((repo / "acme" / "auth.py").read_text() + "\ndef added():\n    return 1\n")
    res = index()  # one file: parsed and resolved here (and PageRank, a fifth of this small tree changed)
    assert "1 parsed" in res["out"] and "nsccn.indexing.resolve" in res["loaded"]
    assert not {"nsccn.serving.navigator", "multiprocessing", "tqdm", "nsccn.messages", "zmq"} & set(res["loaded"])
