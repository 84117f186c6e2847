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

import pytest

from conftest import write_repo
from nsccn.config import load_config
from nsccn.reading.scan import scan_repository
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
        from nsccn.reading.extract import content_hash
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


# -- item 10: repository strings reach the terminal escaped --------------------------------------

ESC_NAME = "esc\x1b]0;owned\x07\x1b[2J.py"
FORGED = "  1. 9.9999  func:forged.py:trusted  (forged.py:1)"
NL_NAME = f"nl\n{FORGED}\n.py"
C1_NAME = "c1\x9b31m\u202eyp.py"  # an 8-bit CSI, a right-to-left override
ESCAPES = {
    ESC_NAME: 'def esc_target(x):\n    """Clears \x1b[2J the screen."""\n    return "\x1b]0;title\x07" + nl_target(x)\n',
    NL_NAME: "def nl_target(x):\n    return c1_target(x)\n",
    C1_NAME: "def c1_target(x):\n    return x\n",
    "ok.py": "from nl import nl_target\n\n\ndef caller():\n\treturn esc_target(1)\n",
}
RAW = ("\x1b", "\x07", "\x9b", "\u202e")


def assert_clean(text: str, what) -> None:
    assert not [c for c in RAW if c in text], (what, text)
    assert "forged.py" not in "\n".join(ln for ln in text.splitlines() if ln.lstrip().startswith("1. 9.9999")), what


def test_escape_codes_and_newlines_in_names_are_escaped_in_text_and_exact_in_json(tmp_path):
    import asyncio

    from fastmcp import Client

    from nsccn.serving.escape import block, one_line
    from nsccn.indexing.indexer import index_repository
    from nsccn.serving.mcp_server import create_server

    assert one_line("a\nb\x1bc\td") == "a\\nb\\x1bc\\td" and block("a\n\tb\r\n\x1b\r") == "a\n\tb\r\n\\x1b\\r"
    repo = tmp_path / "r"
    repo.mkdir()
    for name, text in ESCAPES.items():
        (repo / name).write_text(text)
    index_repository(repo, workers=1)
    root = ["--root", str(repo)]
    runs = [["search", "esc_target nl_target c1_target clears"], ["map"], ["symbol", "esc_target"], ["symbol", "nl_target"],
            ["symbol", "c1_target"], ["skeleton", ESC_NAME], ["window", f"func:{ESC_NAME}:esc_target"],
            ["window", f"func:{NL_NAME}:nl_target"], ["trace", f"func:{ESC_NAME}:esc_target", "--depth", "3"],
            ["refs", f"func:{C1_NAME}:c1_target"], ["context", "esc_target clears the screen"],
            ["localize", "esc_target clears the screen and nl_target"], ["window", "func:nope\x1b[2J.py:x"]]
    for args in runs:
        r = nsccn(*args, *root, timeout=60)
        assert "Traceback" not in r.stderr, (args, r.stderr)
        assert_clean(r.stdout, args)
        assert_clean(r.stderr, args)
    r = nsccn("symbol", "nl_target", *root)
    assert r.stdout.splitlines() == [f"func:{one_line(NL_NAME)}:nl_target  ({one_line(NL_NAME)}:1)", "    def nl_target(x)"]
    r = nsccn("window", f"func:{ESC_NAME}:esc_target", *root)
    assert "\\x1b[2J the screen" in r.stdout and "\\x1b]0;title\\x07" in r.stdout
    r = nsccn("window", "func:ok.py:caller", *root)
    assert "\treturn esc_target(1)" in r.stdout  # a tab in code is the code's own
    # JSON stays exact.
    r = nsccn("search", "esc_target nl_target c1_target", *root, "--json")
    assert {ESC_NAME, NL_NAME, C1_NAME} <= {x["file"] for x in json.loads(r.stdout)["results"]}
    assert not [c for c in RAW if c in r.stdout]
    r = nsccn("window", f"func:{ESC_NAME}:esc_target", *root, "--json")
    assert "\x1b[2J the screen" in json.loads(r.stdout)["code"]

    # The MCP answers' text, which a client may print; the structured content stays exact.
    server = create_server(repo)

    async def calls():
        out = []
        async with Client(server) as c:
            for tool, args in [("search_and_rank", {"query": "esc_target nl_target c1_target"}),
                               ("read_skeleton", {"file_path": ESC_NAME}), ("read_skeleton", {"file_path": NL_NAME}),
                               ("open_surgical_window", {"entity_id": f"func:{ESC_NAME}:esc_target"}),
                               ("open_surgical_window", {"entity_id": f"func:{C1_NAME}:c1_target"}),
                               ("repo_map", {}), ("find_symbol", {"name": "nl_target"}),
                               ("trace_causal_path", {"entity_id": f"func:{ESC_NAME}:esc_target"}),
                               ("find_references", {"entity_id": f"func:{C1_NAME}:c1_target"}),
                               ("assemble_context", {"query": "esc_target clears the screen"}),
                               ("localize_issue", {"report": "esc_target clears the screen"}), ("index_status", {})]:
                r = await c.call_tool(tool, args)
                out.append((tool, r.content[0].text, r.structured_content))
        return out

    results = asyncio.run(calls())
    for tool, text, data in results:
        assert_clean(text, tool)
    data = {t: d for t, _, d in results}
    assert {ESC_NAME, NL_NAME, C1_NAME} <= {x["file"] for x in data["search_and_rank"]["results"]}
    assert data["open_surgical_window"]["file"] == C1_NAME and data["find_symbol"]["definitions"][0]["file"] == NL_NAME
    sk = [d for t, _, d in results if t == "read_skeleton"]
    assert sk[0]["file"] == ESC_NAME and "\x1b[2J the screen" in sk[0]["skeleton"] and sk[1]["file"] == NL_NAME


# -- item 9: a huge tsconfig.json costs a bounded amount per resolve ---------------------------------


def test_a_huge_tsconfig_is_capped_and_each_resolve_tries_few_aliases(tmp_path):
    from nsccn.languages.naming import MAX_ALIAS_NAMES, MAX_ALIASES
    from nsccn.languages.project import CAPPED, MAX_PATH_ALIASES
    from nsccn.indexing.resolve import Resolver
    from nsccn.store import Store

    n_files, n_aliases = 200, 20_000
    # Half the aliases name src/ (every file matches them), half a directory of their own.
    paths = {"@/*": ["src/*"], **{f"@alias{i}/*": ["src/*" if i % 2 else f"lib{i}/*"] for i in range(n_aliases)}}
    files = {"tsconfig.json": json.dumps({"compilerOptions": {"baseUrl": ".", "paths": paths}}, indent=1),
             "src/lib/helper.ts": "export function helper(x: number): number { return x; }\n",
             "src/main.ts": "import { helper } from '@/lib/helper';\nexport function main() { return helper(1); }\n"}
    for i in range(n_files):
        files[f"src/m{i}/file{i}.ts"] = f"export function f{i}(x: number): number {{ return x + {i}; }}\n"
    repo = write_repo(tmp_path / "r", files)
    assert len(files["tsconfig.json"]) > 500_000
    r = nsccn("index", str(repo), "--in-process", "--json")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["skipped"][CAPPED] == 1 and summary["skipped_examples"][CAPPED] == "tsconfig.json"
    r = nsccn("refs", "func:src/lib/helper.ts:helper", "--root", str(repo), "--json")
    assert "func:src/main.ts:main" in [x["from"] for x in json.loads(r.stdout)["references"]]  # `@/` still resolves

    # One file edited: the incremental index's resolve builds the same tables as this one.
    (repo / "src/m0/file0.ts").write_text("export function f0(x: number): number { return x - 1; }\n")
    r = nsccn("index", str(repo), "--in-process", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["files_indexed"] == 1, r.stderr
    with Store(repo / ".nsccn" / "index.db", readonly=True) as store:
        project = Resolver(store).project
    assert len(project.aliases) <= MAX_PATH_ALIASES <= MAX_ALIASES  # 20,001 before
    longest = max(len(p) for p in files)
    assert project.tried <= (n_files + 2) * 3 < longest * (n_files + 2)  # lookups, not one per alias per file
    assert project.tried < n_aliases  # (before: every alias against every file, 4 million tries)
    assert MAX_ALIAS_NAMES <= 64
    # The pipeline's writer counts it alike.
    for p in (repo / ".nsccn").glob("index.db*"):
        p.unlink()
    r = nsccn("index", str(repo), "--pipeline", "--workers", "1", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["skipped"][CAPPED] == 1


# -- item 8: no symlink someone else made, at any component of the index directory ---------------------

OTHER_UID = 4242  # the repository's owner, not the user running nsccn


def chown_tree(path: Path, uid: int) -> None:
    for dirpath, dirnames, filenames in os.walk(path):
        for name in [*dirnames, *filenames, ""]:
            os.lchown(os.path.join(dirpath, name), uid, uid)


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="making files of another user needs root")


@needs_root
def test_private_files_are_never_reached_through_another_users_symlink(tmp_path):
    from nsccn.private import PrivatePathError, open_private, private_dir, write_private

    secret = tmp_path / "root-only"
    secret.mkdir(mode=0o700)
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "logs").symlink_to(secret)  # a symlink inside a directory of theirs
    os.symlink(theirs, tmp_path / "idx")
    chown_tree(theirs, OTHER_UID)
    os.lchown(tmp_path / "idx", OTHER_UID, OTHER_UID)
    for make in (lambda: open_private(tmp_path / "idx" / "logs" / "watcher.log", os.O_WRONLY),
                 lambda: private_dir(tmp_path / "idx" / "logs" / "sub"),
                 lambda: write_private(tmp_path / "idx" / "logs" / "pipeline.json", b"{}")):
        with pytest.raises(PrivatePathError, match=f"symlink owned by uid {OTHER_UID}"):
            make()
    assert list(secret.iterdir()) == []
    # A directory of theirs, no symlink: refused as a place for our files (they could link or swap them).
    with pytest.raises(PrivatePathError, match=f"belongs to uid {OTHER_UID}"):
        open_private(theirs / "x.log", os.O_WRONLY)
    # Our own symlinks (and root's) are followed as before.
    mine = tmp_path / "mine"
    mine.symlink_to(secret)
    os.close(open_private(mine / "ok.log", os.O_WRONLY))
    assert (secret / "ok.log").exists()


@needs_root
def test_root_serving_another_users_repository_never_logs_through_their_symlinks(tmp_path):
    repo = write_repo(tmp_path / "repo", {"a.py": "def a():\n    pass\n"})
    chown_tree(repo, OTHER_UID)
    secret = tmp_path / "root-only"
    secret.mkdir(mode=0o700)
    p = serve(repo)
    try:
        st = wait_for(lambda: settled(repo, 0, p), 60, "the initial index")
        watcher = st["actors"]["watcher"]["pid"]
        # The owner swaps .nsccn for a directory of theirs whose logs/ leads into root's directory.
        theirs = tmp_path / "theirs"
        theirs.mkdir()
        (theirs / "logs").symlink_to(secret)
        chown_tree(theirs, OTHER_UID)
        os.rename(repo / ".nsccn", repo / ".nsccn-away")
        os.symlink(theirs, repo / ".nsccn")
        os.lchown(repo / ".nsccn", OTHER_UID, OTHER_UID)
        os.kill(watcher, signal.SIGKILL)  # the supervisor restarts it: a new log file opened
        time.sleep(3)
        assert list(secret.iterdir()) == [] and list(theirs.iterdir()) == [theirs / "logs"]
        assert p.proc.poll() is None  # refused, not dead: it starts the watcher once the owner puts things back
        os.unlink(repo / ".nsccn")
        os.rename(repo / ".nsccn-away", repo / ".nsccn")
        st = wait_for(lambda: (s := settled(repo, 0, p)) and s["actors"]["watcher"]["pid"] not in (None, watcher) and s, 30,
                      "the watcher to start again")
        assert st["actors"]["watcher"]["restarts"] >= 1
        assert f"symlink owned by uid {OTHER_UID}" in st["actors"]["watcher"]["last_error"]  # what status said meanwhile
    finally:
        stop(p)
    assert list(secret.iterdir()) == []


# -- item 7: a full disk holds the writer, never ends it -------------------------------------------------


@pytest.fixture
def small_fs(tmp_path):
    """A real 16 MiB file system (tmpfs), or a skip where this user cannot mount one."""
    mnt = tmp_path / "fs"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def fill(fs: Path) -> Path:
    """Fill the file system to the last byte; the filler file, to remove."""
    filler = fs / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (1 << 16, 1 << 12, 1 << 9, 1):
            try:
                while os.write(fd, b"\0" * size):
                    pass
            except OSError:
                pass
    finally:
        os.close(fd)
    return filler


def test_a_full_disk_holds_edits_under_serve_and_writes_them_when_space_returns(tmp_path, small_fs, monkeypatch):
    from test_pipeline import make_repo, module_source, status_of

    repo = make_repo(tmp_path / "repo", 64)
    env = {"NSCCN_INDEX_DIR": str(small_fs / "idx")}
    monkeypatch.setenv("NSCCN_INDEX_DIR", env["NSCCN_INDEX_DIR"])
    db = small_fs / "idx" / "index.db"
    p = serve(repo, env)
    filler = None
    try:
        wait_for(lambda: settled(repo, 0, p), 60, "the initial index")
        filler = fill(small_fs)
        for i in range(64):
            (repo / f"pkg{i % 8}" / f"mod{i}.py").write_text(module_source(i, 64, f"\n\ndef while_full_{i}():\n    return {i}\n"))
        st = wait_for(lambda: (s := status_of(repo)) and s.get("disk_full") and s, 30, "the writer to report a full disk")
        p.track(st)
        assert st["state"] == "disk full" and st["actors"]["writer"]["restarts"] == 0
        r = nsccn("status", "--root", str(repo), env=env, timeout=30)
        assert "disk full" in r.stdout, r.stdout
        r = nsccn("search", "helper", "--root", str(repo), env=env, timeout=30)
        assert r.returncode == 0 and "# note: disk full" in r.stderr, r.stderr
        time.sleep(5)  # a few retries, all failing: still alive, still holding
        st = p.track(status_of(repo))
        assert st["disk_full"] and st["actors"]["writer"]["restarts"] == 0 and p.proc.poll() is None

        filler.unlink()
        filler = None
        from test_hostile import entity_ids
        wait_for(lambda: sum(f"func:pkg{i % 8}/mod{i}.py:while_full_{i}" in (ids := entity_ids(db)) for i in range(64)) == 64
                 and ids, 60, "every edit held while full to be indexed")
        st = quiet(repo, p, after=0.5)
        assert not st["disk_full"] and all(a["restarts"] == 0 for a in st["actors"].values())
        r = nsccn("search", "helper", "--root", str(repo), env=env, timeout=30)
        assert "disk full" not in r.stderr
    finally:
        if filler is not None:
            filler.unlink()
        stop(p)


@pytest.mark.parametrize("mode", ["--in-process", "--pipeline"])
def test_a_first_build_on_a_full_disk_is_one_line(tmp_path, mode):
    """A real SQLITE_FULL from SQLite's page limit (NSCCN_TEST_MAX_PAGES: no root needed)."""
    from test_pipeline import make_repo

    repo = make_repo(tmp_path / "repo", 64)
    r = nsccn("index", str(repo), mode, "--workers", "1", env={"NSCCN_TEST_MAX_PAGES": "60"}, timeout=120)
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr and "database or disk is full" in r.stderr, r.stderr
    if mode == "--in-process":
        assert len([ln for ln in r.stderr.splitlines() if not ln.startswith("nsccn: parsing")]) == 1, r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith(("nsccn: disk full", "nsccn: index incomplete: disk full")), r.stderr
    r = nsccn("index", str(repo), mode, "--workers", "1", timeout=120)  # room again: it goes on from there
    assert r.returncode == 0, r.stderr
