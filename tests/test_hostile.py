"""A repository is untrusted input: hostile fixture repositories, through the real command, the
real pipeline (watcher, parsers, writer) and the library.

Bad ignore patterns, FIFOs, symlinks swapped in under a running `nsccn serve`, syntax nested
deeper than the stack, an index read before its schema exists, a malformed configuration.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import apsw
import pytest

from conftest import write_repo
from nsccn.reading.extract import TOO_DEEP, parse_file
from nsccn.indexing.indexer import index_repository
from nsccn.serving.navigator import Navigator, NavigatorError
from nsccn.store import IndexNotReady, Store
from test_pipeline import Pipeline, alive, indexed_paths, quiet, settled, wait_for

PY = sys.executable


def nsccn(*args, timeout=120):
    return subprocess.run([PY, "-m", "nsccn.cli", *args], capture_output=True, text=True, timeout=timeout)


def entity_ids(db: Path) -> set[str]:
    with Store(db, readonly=True) as store:
        return {r[0] for r in store.conn.execute("SELECT id FROM entities")}


# -- item 4: one bad .gitignore line never stops indexing -----------------------------------------


def test_bad_nested_gitignore_line_costs_that_line_only(tmp_path):
    repo = write_repo(tmp_path / "r", {
        "top.py": "def top():\n    pass\n",
        "vendor/lib/.gitignore": "*.gen.py\n[z-a]\nskipme.py\n",
        "vendor/lib/kept.py": "def kept():\n    pass\n",
        "vendor/lib/skipme.py": "def skipped():\n    pass\n",
        "vendor/lib/x.gen.py": "def generated():\n    pass\n",
    })
    db = repo / ".nsccn" / "index.db"
    for mode in (["--in-process"], ["--pipeline"]):  # the library path, then the pipeline (its watcher scans)
        if db.exists():
            for p in db.parent.glob("index.db*"):
                p.unlink()
        r = nsccn("index", str(repo), "--workers", "1", *mode)
        assert r.returncode == 0, r.stderr
        assert "vendor/lib/.gitignore:2" in r.stderr and "[z-a]" in r.stderr, r.stderr
        assert "Traceback" not in r.stderr
        # The other patterns of that file still apply.
        assert indexed_paths(db) == {"top.py", "vendor/lib/kept.py"}, mode


# -- item 6: FIFOs never hang a read ------------------------------------------------------------


def test_fifo_is_skipped_and_a_file_swapped_for_one_answers_with_an_error(tmp_path):
    repo = write_repo(tmp_path / "r", {"ok.py": "def fine():\n    return 1\n",
                                       "y.py": '"""Y."""\n\ndef why():\n    return 2\n'})
    os.mkfifo(repo / "x.py")
    r = nsccn("index", str(repo), "--in-process", "--workers", "1", "--json", timeout=60)
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["skipped"] == {"not a regular file": 1} and summary["files_indexed"] == 2

    # An indexed file swapped for a FIFO: window and skeleton say so at once (no writer ever comes).
    (repo / "y.py").unlink()
    os.mkfifo(repo / "y.py")
    root = ["--root", str(repo)]
    for cmd in (["window", "func:y.py:why"], ["skeleton", "y.py"]):
        r = nsccn(*cmd, *root, timeout=30)
        assert r.returncode == 1 and "not a regular file (a FIFO)" in r.stderr, (cmd, r.stderr)
        assert "Traceback" not in r.stderr
    r = nsccn("status", *root, "--json", timeout=30)
    assert r.returncode == 0 and json.loads(r.stdout)["stale_files"]["examples"] == ["y.py"]


# -- item 6: the live path applies the scan's rules ---------------------------------------------


def test_symlink_swap_and_fifo_under_serve(tmp_path):
    outside = write_repo(tmp_path / "outside", {"secret.py": '"""Outside secret."""\n\ndef outside_secret():\n    pass\n'})
    repo = write_repo(tmp_path / "repo", {"a.py": "def inside_a():\n    pass\n", "b.py": "def inside_b():\n    pass\n"})
    db = repo / ".nsccn" / "index.db"
    p = Pipeline.__new__(Pipeline)  # `nsccn serve` itself, with the real watcher
    p.pids = set()
    p.proc = subprocess.Popen([PY, "-m", "nsccn.cli", "serve", str(repo), "--no-mcp", "--no-embed", "--workers", "1"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: settled(repo, 0, p), 60, "the initial index")
        assert indexed_paths(db) == {"a.py", "b.py"}

        # a.py replaced by a symlink to a file outside: its old entities go, the outside ones never come.
        (repo / "a.py").unlink()
        os.symlink(outside / "secret.py", repo / "a.py")
        wait_for(lambda: indexed_paths(db) == {"b.py"}, 30, "a.py to leave the index")
        # A FIFO appears; the parsers must not hang on it: a later edit still lands.
        os.mkfifo(repo / "pipe.py")
        time.sleep(0.3)
        (repo / "b.py").write_text("def inside_b():\n    pass\n\ndef later_edit():\n    pass\n")
        wait_for(lambda: "func:b.py:later_edit" in entity_ids(db), 30, "an edit after the FIFO")
        st = quiet(repo, p)
        assert all(a["restarts"] == 0 for a in st["actors"].values())
        ids = entity_ids(db)
        assert not [i for i in ids if "outside_secret" in i or i.startswith(("func:a.py", "func:pipe.py"))], ids
        r = nsccn("symbol", "outside_secret", "--root", str(repo), timeout=30)
        assert r.returncode == 1 and "no definition named" in r.stderr
        code, out, err = p.stop(signal.SIGTERM)
        assert code == 0, err[-2000:]
    finally:
        p.kill_all()
    assert not [pid for pid in p.pids if alive(pid)]


# -- item 7: deep nesting loses only what is too deep -------------------------------------------

HEAD = 'import os\n\n\ndef before():\n    """Before the deep part."""\n    return helper()\n\n\n'
TAIL = '\n\ndef after():\n    """After the deep part."""\n    return before()\n\n\ndef helper():\n    return 1\n'
DEEP = {
    "concat.py": HEAD + "x = " + " + ".join(f"'s{i}'" for i in range(1000)) + "\n" + TAIL,
    "calls.py": HEAD + "y = " + "f(" * 500 + "1" + ")" * 500 + "\n" + TAIL,
    "defs.py": HEAD + "".join("    " * i + f"def d{i}():\n" for i in range(400)) + "    " * 400 + "pass\n" + TAIL,
    "attrs.py": HEAD + "z = a" + ".b" * 3000 + "\n" + TAIL,
    "broken.py": HEAD + "def broken():\n    w = " + "(" * 1500 + "\n" + TAIL,  # a syntax error 1,500 deep
}


def test_deep_nesting_keeps_everything_outside_the_deep_region(tmp_path):
    compile(DEEP["concat.py"], "concat.py", "exec")  # CPython takes it: so must we
    for name, src in DEEP.items():
        pf = parse_file(name, src.encode())
        names = {e.qualname for e in pf.entities}
        # (an unclosed parenthesis makes tree-sitter's error start at the top of the file, so
        # what precedes broken.py's error is lost: syntax-error recovery, not depth)
        assert ({"after", "helper"} if name == "broken.py" else {"before", "after", "helper"}) <= names, name
        assert "d0" in names or name != "defs.py"
    concat = parse_file("concat.py", DEEP["concat.py"].encode())
    assert concat.deep_lines == []  # a long chain is walked in a loop: nothing lost at all

    # The same in both index paths: entities, and the skip counted under the same reason.
    repo = write_repo(tmp_path / "r", DEEP)
    lib = index_repository(repo, tmp_path / "lib.db", workers=1)
    r = nsccn("index", str(repo), "--pipeline", "--workers", "1", "--json")
    assert r.returncode == 0, r.stderr
    pipe = json.loads(r.stdout)
    assert lib.skipped[TOO_DEEP] >= 2 and dict(lib.skipped) == pipe["skipped"]
    assert pipe["files_indexed"] == lib.files_indexed == len(DEEP)
    ids = entity_ids(repo / ".nsccn" / "index.db")
    assert ids == entity_ids(tmp_path / "lib.db")
    for name in DEEP:
        for fn in ("after", "helper") if name == "broken.py" else ("before", "after", "helper"):
            assert f"func:{name}:{fn}" in ids
    r = nsccn("symbol", "after", "--root", str(repo), "--json")
    assert json.loads(r.stdout)["total"] == len(DEEP)


# -- item 8: the small ones --------------------------------------------------------------------


def test_index_being_created_is_a_clear_answer(tmp_path):
    repo = write_repo(tmp_path / "r", {"a.py": "def a():\n    pass\n"})
    db = repo / ".nsccn" / "index.db"
    db.parent.mkdir()
    db.write_bytes(b"")  # the writer has created the file, not yet the schema
    for setup in ("empty file", "meta table only"):
        if setup == "meta table only":
            conn = apsw.Connection(str(db))
            conn.execute("CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT)")
            conn.close()
        with pytest.raises(IndexNotReady, match="being created"):
            Store(db, readonly=True)
        r = nsccn("search", "a", "--root", str(repo))
        assert r.returncode == 3 and "being created" in r.stderr and "Traceback" not in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
        r = nsccn("status", "--root", str(repo), "--json")
        assert r.returncode == 3 and "being created" in json.loads(r.stdout)["why"]  # no usable index yet


@pytest.mark.parametrize("content", [b'{"max_file_size": ', b'{"max_file_size": "big"}', b"[1, 2]", b"\xff\xfe"])
def test_malformed_config_is_one_line(tmp_path, content):
    repo = write_repo(tmp_path / "r", {"a.py": "def a():\n    pass\n", ".nsccn/config.json": content})
    for cmd in (["index", str(repo), "--in-process"], ["status", "--root", str(repo)],
                ["search", "a", "--root", str(repo)]):
        r = nsccn(*cmd)
        assert r.returncode == 2, (cmd, r.stderr)
        assert r.stderr.startswith("nsccn: bad configuration in ") and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_backslash_is_part_of_a_file_name(tmp_path):
    repo = write_repo(tmp_path / "r", {"back\\slash.py": '"""Odd name."""\n\ndef odd():\n    return 1\n',
                                       "pkg/mod.py": "from back import x\n\ndef g():\n    return odd()\n\ndef odd2():\n    return g()\n"})
    index_repository(repo, workers=1)
    nav = Navigator(repo)
    try:
        out = nav.skeleton("back\\slash.py")
        assert out.file == "back\\slash.py" and "def odd():" in out.skeleton
        assert "def odd():" in nav.window("func:back\\slash.py:odd", 0).code
        assert nav.skeleton("pkg\\mod.py").file == "pkg/mod.py"  # a Windows-style path still works
    finally:
        nav.close()
    r = nsccn("skeleton", "back\\slash.py", "--root", str(repo))
    assert r.returncode == 0 and "def odd():" in r.stdout, r.stderr


def test_refs_limit_below_one_is_refused(shop_index):
    repo, _ = shop_index
    nav = Navigator(repo)
    try:
        with pytest.raises(NavigatorError, match="limit must be between 1 and 500"):
            nav.find_references("method:shop/base.py:Model.save", limit=-1)
    finally:
        nav.close()
    r = nsccn("refs", "method:shop/base.py:Model.save", "--limit", "-1", "--root", str(repo))
    assert r.returncode == 2 and "must be between 1 and 500, not -1" in r.stderr and not r.stdout


def test_read_bytes_refuses_all_but_regular_files_inside(tmp_path):
    from nsccn.reading.repofile import UnreadableFile, read_bytes, stat_file

    outside = write_repo(tmp_path / "out", {"secret.py": "SECRET = 1\n"})
    repo = write_repo(tmp_path / "r", {"a.py": "A = 1\n", "big.py": "x = 1\n" * 100})
    os.symlink(repo / "a.py", repo / "inside_link.py")
    os.symlink(outside / "secret.py", repo / "out_link.py")
    os.symlink(outside, repo / "outdir")  # a parent directory leading out: caught on the descriptor
    os.mkfifo(repo / "f.py")
    os.symlink(repo / "nowhere.py", repo / "broken.py")
    assert read_bytes(repo, "inside_link.py")[0] == b"A = 1\n"
    assert stat_file(repo, "a.py").st_size == 6
    for rel, reason in (("out_link.py", "symlink outside repository"), ("outdir/secret.py", "symlink outside repository"),
                        ("f.py", "not a regular file"), ("broken.py", "missing"), ("gone.py", "missing"),
                        ("big.py", "too large"), ("../r/a.py", "symlink outside repository")):
        with pytest.raises(UnreadableFile) as err:
            read_bytes(repo, rel, max_size=100)
        assert err.value.reason == reason, rel
    for rel in ("out_link.py", "f.py"):
        with pytest.raises(UnreadableFile):
            stat_file(repo, rel)


def test_a_repository_package_named_like_an_actor_is_never_run(tmp_path):
    """The actors run as `python -P -m workers.X` with the repository as working directory: a
    repository holding its own `workers/` or `supervisor/` package must not get it imported."""
    marker = tmp_path / "pwned"
    evil = f"open({str(marker)!r}, 'w').write('ran')\n"
    repo = write_repo(tmp_path / "r", {
        "app.py": "def main():\n    pass\n",
        "workers/__init__.py": evil, "workers/parser.py": evil, "workers/writer.py": evil,
        "workers/watcher.py": evil, "supervisor/__init__.py": evil, "supervisor/__main__.py": evil,
    })
    r = subprocess.run([sys.executable, "-m", "nsccn.cli", "index", str(repo), "--pipeline", "--workers", "1"],
                       capture_output=True, text=True, timeout=240, cwd=str(repo.parent))
    assert r.returncode == 0, r.stderr
    assert not marker.exists()
    assert "app.py" in indexed_paths(repo / ".nsccn" / "index.db")
