"""A repository is untrusted input, second round (issue 45, items 5-10): hostile fixture
repositories through the real command, the real pipeline under `nsccn serve` and the library.

Dotfiles and dot-directories edited live, a full disk under the writer, an index directory
reached through symlinks someone else planted, a huge tsconfig.json, escape codes and newlines
in file names.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import write_repo
from nsccn.config import load_config
from nsccn.scan import scan_repository
from test_pipeline import Pipeline, alive, indexed_hash, indexed_paths, quiet, settled, wait_for

PY = sys.executable


def nsccn(*args, env=None, timeout=120):
    return subprocess.run([PY, "-m", "nsccn.cli", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def serve(repo: Path, env: dict | None = None, *extra: str) -> Pipeline:
    """`nsccn serve` itself, the way a user starts it, with the real watcher."""
    p = Pipeline.__new__(Pipeline)
    p.pids = set()
    p.proc = subprocess.Popen([PY, "-m", "nsccn.cli", "serve", str(repo), "--no-mcp", "--no-embed", "--workers", "1", *extra],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, **(env or {})})
    return p


def stop(p: Pipeline) -> None:
    try:
        code, _, err = p.stop(signal.SIGTERM)
        assert code == 0, err[-2000:]
    finally:
        p.kill_all()
    assert not [pid for pid in p.pids if alive(pid)]


# -- items 5 and 6: the live path and the scan share one rule for dotfiles ----------------------------

SECRET = "DB_PASSWORD=hunter2-do-not-index\n"
# Dot-directories (walked, unless a default ignores them by name) and dotfiles (never indexed,
# whatever directory they are in), a binary by name, an ignored directory.
LIVE_TREE = {
    "app/.env.local": SECRET,
    ".env": SECRET,
    "app/.secrets": SECRET,
    ".github/workflows/ci.yml": "name: ci\non: push\n",
    ".github/CODEOWNERS": "* @someone\n",
    ".config/tool/settings.py": "def configured():\n    return 1\n",
    "src/.hidden.py": "def hidden_but_python():\n    return 2\n",
    "src/pic.png": "not really a picture\n",
    ".venv/lib/site.py": "def in_a_venv():\n    pass\n",
    "node_modules/x/index.js": "function vendored() {}\n",
}


def test_live_edits_index_what_the_scan_indexes(tmp_path):
    repo = write_repo(tmp_path / "repo", {"a.py": "def a():\n    pass\n",
                                          ".github/workflows/conf.yml": "name: first\non: push\n"})
    db = repo / ".nsccn" / "index.db"
    p = serve(repo)
    try:
        wait_for(lambda: settled(repo, 0, p), 60, "the initial index")
        assert ".github/workflows/conf.yml" in indexed_paths(db)  # the scan walks .github/
        for rel, text in LIVE_TREE.items():
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            (repo / rel).write_text(text)
        time.sleep(0.3)
        # An edit under a dot-directory lands (it stayed stale, 3 of 3 runs).
        edited = b"name: second\non: pull_request\n"
        (repo / ".github/workflows/conf.yml").write_bytes(edited)
        from nsccn.extract import content_hash
        wait_for(lambda: indexed_hash(db, ".github/workflows/conf.yml") == content_hash(edited), 30,
                 "the edit under .github/ to be indexed")
        quiet(repo, p, after=0.5)
        live = indexed_paths(db)
        scanned = {f.path for f in scan_repository(repo, load_config(repo)).files}
        assert live == scanned, (live ^ scanned)
        assert {".github/workflows/ci.yml", ".github/CODEOWNERS", ".config/tool/settings.py", "src/.hidden.py"} <= live
        assert not live & {"app/.env.local", ".env", "app/.secrets", "src/pic.png"}
        r = nsccn("skeleton", "app/.env.local", "--root", str(repo), timeout=30)
        assert "hunter2" not in r.stdout and r.returncode != 0
        r = nsccn("search", "DB_PASSWORD hunter2", "--root", str(repo), "--json", timeout=30)
        assert json.loads(r.stdout)["results"] == []
    finally:
        stop(p)
