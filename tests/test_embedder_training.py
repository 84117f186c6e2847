"""Tuning the bundled embedder: training pairs from mined commits, the vector-only evaluation,
and the weight-only int8 export (on a real fixture repository, the bundled models, and a small
ONNX graph; the PyTorch training itself is not run here)."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import embedder_eval  # noqa: E402
import mine_history as mh  # noqa: E402
import train_embedder  # noqa: E402

from nsccn.vectors.embed import FALLBACK_MODEL, PLAIN_MINILM  # noqa: E402
from tests.test_history import commit, git  # noqa: E402

V1 = ("class Cache:\n    \"\"\"Keeps values by key.\"\"\"\n\n    def get(self, key):\n        return self.data[key]\n\n"
      "    def put(self, key, value):\n        self.data[key] = value\n\n\n"
      "def make_cache():\n    return Cache()\n")


@pytest.fixture(scope="module")
def mirrors(tmp_path_factory):
    """A repository with one fix commit, as a bare mirror (`MIRRORS/acme+cache/repo`), and the
    instance `mine_history` makes of it."""
    root = tmp_path_factory.mktemp("fixture") / "work"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    commit(root, {"pkg/__init__.py": "", "pkg/cache.py": V1, "pkg/net.py": "def download(url):\n    return url\n",
                  "tests/test_cache.py": "def test_x():\n    pass\n"}, "Initial import of the cache", 1_600_000_000)
    commit(root, {"pkg/cache.py": V1.replace("return self.data[key]", "return self.data.get(key)")},
           "Fix KeyError in Cache.get for missing keys", 1_600_086_400)
    out = root.parent / "mirrors"
    subprocess.run(["git", "clone", "-q", "--bare", str(root), str(out / "acme+cache" / "repo")], check=True)
    rows = mh.mine_repository(root, "acme/cache", per_repo=5)
    assert [r["gold_functions"] for r in rows] == [["pkg/cache.py:Cache.get"]]
    return out, rows


def test_a_mined_commit_becomes_its_message_its_changed_function_and_same_file_negatives(mirrors):
    root, rows = mirrors
    (pair,) = train_embedder.pairs_of(rows, root)
    assert pair["query"] == "Fix KeyError in Cache.get for missing keys" and pair["repo"] == "acme/cache"
    assert len(pair["pos"]) == 1 and pair["pos"][0].startswith("Cache.get (cache get)\npkg/cache.py\ndef get(self, key)")
    # The other entities of the changed file, never the changed one, never another file's.
    assert sorted(n.split("\n")[0] for n in pair["negs"]) == ["Cache", "Cache.put (cache put)", "make_cache (make cache)"]
    # Batches hold one repository each; a repository's short last batch is dropped.
    batches = train_embedder.batches([dict(pair, repo=r) for r in "aaaaabb"], 2, random.Random(0))
    assert [len(b) for b in batches] == [2, 2, 2] and all(len({p["repo"] for p in b}) == 1 for b in batches)


def test_the_vector_only_evaluation_ranks_the_newest_tree_and_skips_queries_it_cannot_score(mirrors):
    root, rows = mirrors
    gone = dict(rows[0], instance_id="gone", gold_functions=["pkg/cache.py:Cache.evict"])
    download = dict(rows[0], instance_id="dl", problem_statement="fetch a file from a web address",
                    gold_functions=["pkg/net.py:download"], gold_files=["pkg/net.py"])
    result = embedder_eval.evaluate([*rows, gone, download], root, [FALLBACK_MODEL, PLAIN_MINILM], threads=1)
    for model in (FALLBACK_MODEL, PLAIN_MINILM):
        per = result[model]
        assert per["all"]["n"] == per["acme/cache"]["n"] == 2  # the query of a function that is not there is left out
        assert per["all"]["function@5"] == 100.0  # five of five entities: everything is in the top 5
        assert per["all"]["file@1"] == 100.0  # `download` is the only function of pkg/net.py, and the nearest
    assert "| acme/cache | nsccn/minilm-code-v1 | 2 |" in embedder_eval.table(result)


def test_weight_only_int8_keeps_the_graph_s_output_and_quarters_its_weights(tmp_path):
    onnx = pytest.importorskip("onnx")
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    table, weight = rng.normal(size=(400, 256)).astype(np.float32), rng.normal(size=(256, 300)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "ids"], ["rows"]), helper.make_node("MatMul", ["rows", "weight"], ["out"])],
        "g", [helper.make_tensor_value_info("ids", TensorProto.INT64, [None])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [None, 300])],
        [numpy_helper.from_array(table, "table"), numpy_helper.from_array(weight, "weight")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    plain = model.SerializeToString()
    small = train_embedder.weight_only_int8(onnx.load_from_string(plain))
    onnx.checker.check_model(small)
    assert {i.data_type for i in small.graph.initializer} == {TensorProto.INT8, TensorProto.FLOAT}
    assert len(small.SerializeToString()) < 0.3 * len(plain)
    ids = np.array([0, 7, 399])
    want = ort.InferenceSession(plain).run(None, {"ids": ids})[0]
    got = ort.InferenceSession(small.SerializeToString()).run(None, {"ids": ids})[0]
    assert np.abs(got - want).max() < 0.02 * np.abs(want).max()
    assert np.abs(got - want).max() > 0  # it did quantize


def test_the_teachers_vectors_resume_from_the_parts_an_earlier_run_left(tmp_path):
    import gzip
    import json

    import static_teacher

    texts = ["def get(self, key): return self.data[key]", "class Cache: pass", "parse the config file",
             "retry the request on timeout", "x = 1"]
    corpus = tmp_path / "texts.jsonl.gz"
    with gzip.open(corpus, "wt") as f:
        f.writelines(json.dumps(t) + "\n" for t in texts)
    parts = tmp_path / "parts"
    base = ["--texts", str(corpus), "--parts", str(parts), "--part-rows", "2", "--dim", "3"]
    # a run stopped on time keeps what it finished and ends before the PCA
    assert static_teacher.main([*base, "--out", str(tmp_path / "t.npz"), "--stop-after", "1e-9"]) == 3
    assert sorted(p.name for p in parts.glob("part-*.npy")) == ["part-00000.npy"]
    first = np.load(parts / "part-00000.npy")
    assert static_teacher.main([*base, "--out", str(tmp_path / "t.npz")]) == 0
    assert len(list(parts.glob("part-*.npy"))) == 3 and np.array_equal(np.load(parts / "part-00000.npy"), first)
    whole = static_teacher.tokenizer().embed(texts, batch_size=32)
    resumed = np.concatenate([np.load(parts / f"part-{i:05d}.npy") for i in range(3)]).astype(np.float32)
    assert np.min(np.sum(whole * resumed, axis=1)) > 0.999  # the parts are the corpus's vectors, in order
    assert int(np.load(tmp_path / "t.npz")["texts"]) == 5
    with pytest.raises(SystemExit, match="parts of other texts"):
        static_teacher.embed_in_parts(texts[:3], parts, 2, 0)
    # a corpus that extends this one is reduced with its basis, so the two concatenate (build --texts A B)
    more = tmp_path / "more.jsonl.gz"
    with gzip.open(more, "wt") as f:
        f.writelines(json.dumps(t) + "\n" for t in texts[3:])
    assert static_teacher.main(["--texts", str(more), "--dim", "3", "--basis", str(tmp_path / "t.npz"),
                                "--out", str(tmp_path / "more.npz")]) == 0
    first, extended = static_teacher.load_teacher(tmp_path / "t.npz"), static_teacher.load_teacher(tmp_path / "more.npz")
    assert np.allclose(extended, first[3:], atol=0.02 * np.abs(first).max())
    assert np.array_equal(np.load(tmp_path / "more.npz")["basis"], np.load(tmp_path / "t.npz")["basis"])
