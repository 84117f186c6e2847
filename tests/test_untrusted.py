"""A repository is untrusted input, second round (issue 45, items 1-4, 11, 12): hostile fixture
repositories written by each test, through the real command (`nsccn index`, in-process and the
pipeline), real git and a real SQLite file.

* an index the repository ships (`.nsccn/index.db`, with a forged entity and a trigger) is not
  ours: it is rebuilt from the files, and no reader answers from it;
* a shipped `.git/config` cannot make our git calls run a program or fetch;
* a file name that is not UTF-8 costs that file only;
* a one-line minified file grows the index linearly;
* a hostile commit message is capped and cannot forge a change; a symlinked `.git` is not read;
* a setting out of its range is one warning and is not used.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from conftest import write_repo
from nsccn.config import load_settings
from nsccn.store import Store
from test_pipeline import Pipeline, indexed_paths, quiet, settled, wait_for

PY = sys.executable


def nsccn(*args, timeout=120, **kw):
    return subprocess.run([PY, "-m", "nsccn.cli", *args], capture_output=True, text=True, timeout=timeout, **kw)


def entity_ids(db: Path) -> set[str]:
    with Store(db, readonly=True) as store:
        return {r[0] for r in store.conn.execute("SELECT id FROM entities")}


APP = {"app.py": "def handler(x):\n    return helper(x)\n\n\ndef helper(x):\n    return x\n"}


# -- item 12: every setting has a range --------------------------------------------------------


def test_a_setting_out_of_range_is_one_warning_and_not_used(tmp_path):
    repo = write_repo(tmp_path / "r", {**APP, ".nsccn/config.json": json.dumps(
        {"rrf_k": -1, "max_file_size": 0, "watch_debounce_ms": -5, "result_token_cap": 10**12})})
    s = load_settings(repo)
    assert (s.config.rrf_k, s.config.max_file_size, s.config.watch_debounce_ms) == (60, 1 << 20, 100)
    assert s.config.result_token_cap == 8000 and "rrf_k" not in s.sources
    assert len(s.refused) == 4 and any("ignoring 'rrf_k' = -1" in line and "must be 1 to 10000" in line for line in s.refused)
    r = nsccn("index", str(repo), "--in-process")
    assert r.returncode == 0 and r.stderr.count("ignoring 'rrf_k' = -1") == 1, r.stderr
    r = nsccn("search", "handler helper", "--root", str(repo))  # divided by rrf_k + rank: ZeroDivisionError
    assert r.returncode == 0 and "func:app.py:handler" in r.stdout and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.count("ignoring 'rrf_k'") == 1


# -- item 3: a file name that is not UTF-8 -------------------------------------------------------


def test_a_file_name_that_is_not_utf8_is_skipped_and_named(tmp_path):
    repo = write_repo(tmp_path / "r", {"ok.py": "def fine():\n    return 1\n"})
    bad = os.fsdecode(b"caf\xe9.py")  # Latin-1: legal on Linux, kept by git
    (repo / bad).write_text("def cafe():\n    return 2\n")
    (repo / os.fsdecode(b"d\xe9")).mkdir()
    (repo / os.fsdecode(b"d\xe9") / "m.py").write_text("def under():\n    return 3\n")
    db = repo / ".nsccn" / "index.db"
    for mode in ("--in-process", "--pipeline"):
        for p in db.parent.glob("index.db*"):
            p.unlink()
        r = nsccn("index", str(repo), mode, "--workers", "1", "--json")
        assert r.returncode == 0 and "Traceback" not in r.stderr, (mode, r.stderr[-2000:])
        out = json.loads(r.stdout)
        assert out["files_indexed"] == 1 and out["skipped"] == {"file name not valid UTF-8": 2}, (mode, out)
        assert "caf\\xe9.py: skipped, its name is not valid UTF-8" in out["warnings"], out["warnings"]
        assert indexed_paths(db) == {"ok.py"}

    # Under serve: one appears, the watcher names it and lives on; a later edit still lands.
    p = Pipeline.__new__(Pipeline)
    p.pids = set()
    p.proc = subprocess.Popen([PY, "-m", "nsccn.cli", "serve", str(repo), "--no-mcp", "--no-embed", "--workers", "1"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: settled(repo, 0, p), 60, "the initial index")
        (repo / os.fsdecode(b"na\xefve.py")).write_text("def naive():\n    return 4\n")
        time.sleep(0.3)
        (repo / "ok.py").write_text("def fine():\n    return 1\n\ndef later():\n    return 5\n")
        wait_for(lambda: "func:ok.py:later" in entity_ids(db), 30, "an edit after the bad name")
        st = quiet(repo, p)
        assert all(a["restarts"] == 0 for a in st["actors"].values()), st["actors"]
        assert indexed_paths(db) == {"ok.py"}
        code, _out, err = p.stop()
        assert code == 0, err[-2000:]
        log = (repo / ".nsccn" / "logs" / "watcher.log").read_text()
        assert "na\\xefve.py: skipped, its name is not valid UTF-8" in log and "surrogates" not in log, log[-3000:]
    finally:
        p.kill_all()
