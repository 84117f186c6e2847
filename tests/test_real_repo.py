"""Opt-in: a CLI round trip on a real checkout of a public repository.

    NSCCN_REAL_REPO=/path/to/checkout python -m pytest tests/test_real_repo.py

e.g. requests or sympy at a base commit of ../shared/bench (`git archive COMMIT | tar -x -C DIR`).
Skipped in CI, which has no such checkout.
"""

import json
import os
import subprocess
import sys

import pytest

REPO = os.environ.get("NSCCN_REAL_REPO")
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not REPO, reason="set NSCCN_REAL_REPO to a checkout")]


def run(*args):
    r = subprocess.run([sys.executable, "-m", "nsccn.cli", *args], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_real_repo_round_trip():
    summary = json.loads(run("index", REPO, "--json"))
    assert summary["files_seen"] > 10 and summary["entities"] > 100
    root = ["--root", REPO, "--json"]
    status = json.loads(run("status", *root))
    assert status["stale_files"]["changed"] == 0
    # The most called function in the repository: its window, callers and skeleton must agree.
    top = json.loads(run("map", *root, "--max-tokens", "400"))
    assert top["files_shown"] > 0
    from nsccn.store import Store

    with Store(summary["db_path"], readonly=True) as store:
        eid, path, start, end = store.conn.execute(
            "SELECT e.id, e.path, e.start_line, e.end_line FROM edges ed JOIN symbols t ON t.id = ed.target "
            "JOIN entities e ON e.id = t.name WHERE ed.relation=(SELECT id FROM symbols WHERE name='CALLS') "
            "AND e.kind IN ('func','method') GROUP BY e.id ORDER BY COUNT(*) DESC LIMIT 1"
        ).fetchone()
    window = json.loads(run("window", eid, *root, "--context", "0"))
    lines = open(os.path.join(REPO, path), encoding="utf-8", errors="replace").read().splitlines()
    assert window["code"].splitlines()[0].split(" | ", 1)[1] == lines[start - 1]
    callers = json.loads(run("trace", eid, *root, "--direction", "upstream", "--depth", "1"))
    assert callers["adjacency_list"][eid]
    skel = json.loads(run("skeleton", path, *root))
    assert skel["tokens"] < skel["source_tokens"]
    name = eid.rsplit(":", 1)[1].rsplit(".", 1)[-1]
    hits = json.loads(run("search", name, *root, "--limit", "10"))["results"]
    assert eid in [h["id"] for h in hits]
