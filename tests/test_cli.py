"""The `nsccn` command as a user runs it: a real subprocess, real output, real exit codes."""

import json
import os
import signal
import subprocess
import sys

import pytest

from conftest import SHOP
from nsccn.store import Store


def nsccn(*args, cwd=None, env=None):
    return subprocess.run([sys.executable, "-m", "nsccn.cli", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=120, env=None if env is None else {**os.environ, **env})


def test_cli_round_trip(shop_repo):
    r = nsccn("index", str(shop_repo), "--workers", "1")
    assert r.returncode == 0, r.stderr
    assert "entities:" in r.stdout and "edges:" in r.stdout and "CALLS" in r.stdout

    r = nsccn("index", str(shop_repo), "--json")
    summary = json.loads(r.stdout)
    assert summary["files_indexed"] == 0 and summary["files_unchanged"] == 6

    root = ["--root", str(shop_repo)]
    r = nsccn("search", "add_item", *root, "--json")
    assert r.returncode == 0
    assert json.loads(r.stdout)["results"][0]["id"] == "method:shop/models.py:User.add_item"

    r = nsccn("skeleton", "shop/models.py", *root)
    assert r.returncode == 0 and "class User(Model):" in r.stdout and "tokens" not in r.stderr
    r = nsccn("skeleton", "shop/models.py", *root, "--tokens", "--json")  # counted only when asked for
    data = json.loads(r.stdout)
    assert "class User(Model):" in data["skeleton"] and 0 < data["tokens"] < data["source_tokens"]

    r = nsccn("trace", "func:shop/service.py:register", *root, "--depth", "2")
    assert r.returncode == 0 and "-> CALLS func:shop/models.py:make_user" in r.stdout

    r = nsccn("trace", "method:shop/base.py:Model.validate", *root, "--direction", "upstream", "--json")
    data = json.loads(r.stdout)
    assert "method:shop/base.py:Model.save" in data["entities"]

    r = nsccn("window", "func:shop/models.py:bump", *root, "--context", "0")
    assert r.returncode == 0 and "def bump():" in r.stdout and "global COUNTER" in r.stdout

    r = nsccn("status", *root, "--json")
    status = json.loads(r.stdout)
    assert status["files"] == 6 and status["stale_files"]["changed"] == 0

    r = nsccn("map", *root, "--max-tokens", "100")
    assert r.returncode == 0 and "shop/" in r.stdout

    r = nsccn("symbol", "make_user", *root)
    assert r.returncode == 0 and "func:shop/models.py:make_user" in r.stdout
    r = nsccn("refs", "func:shop/models.py:make_user", *root)
    assert r.returncode == 0 and "shop/service.py:" in r.stdout
    r = nsccn("context", "register a user", *root, "--max-tokens", "400")
    assert r.returncode == 0 and "def register" in r.stdout and "of 400 tokens" in r.stderr


def test_cli_localize_reads_the_report_from_argument_file_or_stdin(shop_index, tmp_path):
    repo, _ = shop_index
    report = ("Adding items never stops at the maximum: a user's add_item accepts more items than MAX_ITEMS\n"
              "when the items list is full.\n")
    root = ["--root", str(repo)]
    r = nsccn("localize", report, *root, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["files"][0] == "shop/models.py"
    assert out["functions"][0]["id"] == "method:shop/models.py:User.add_item"
    assert out["functions"][0]["line"] > 1 and "bm25" in out["signals"]

    path = tmp_path / "report.md"
    path.write_text(report)
    by_file = subprocess.run([sys.executable, "-m", "nsccn.cli", "localize", "--file", str(path), *root, "--limit", "3"],
                             capture_output=True, text=True, timeout=120)
    piped = subprocess.run([sys.executable, "-m", "nsccn.cli", "localize", *root, "--limit", "3"],
                           input=report, capture_output=True, text=True, timeout=120)
    assert by_file.returncode == piped.returncode == 0
    assert by_file.stdout == piped.stdout
    assert "1. shop/models.py" in piped.stdout and "method:shop/models.py:User.add_item  (shop/models.py:" in piped.stdout


@pytest.mark.parametrize(
    "args, code, text",
    [
        (["window", "func:shop/models.py:make_usr"], 1, "func:shop/models.py:make_user"),
        (["skeleton", "../../etc/passwd"], 1, "leads outside the repository"),
        (["trace", "func:shop/models.py:bump", "--depth", "50"], 2, "depth must be between 1 and 10"),
        (["search", ""], 2, "empty"),
        (["localize", "  "], 2, "report is empty"),
        (["localize", "users", "--limit", "0"], 2, "limit must be between 1 and 50"),
        (["localize", "--file", "/no/such/report.md"], 1, "cannot read the report file"),
        (["trace"], 2, ""),
        (["frobnicate"], 2, ""),
    ],
)
def test_cli_errors_and_exit_codes(shop_index, args, code, text):
    repo, _ = shop_index
    r = nsccn(*args, "--root", str(repo)) if args[0] not in ("frobnicate",) else nsccn(*args)
    assert r.returncode == code
    assert text in r.stderr
    assert "Traceback" not in r.stderr


def test_cli_without_index(tmp_path):
    r = nsccn("search", "x", "--root", str(tmp_path))
    assert r.returncode == 3 and "nsccn index" in r.stderr


def test_cli_works_from_a_subdirectory_of_the_repository(shop_index):
    """As git does: inside the repository, the enclosing index is found; paths may be given
    from where one stands."""
    repo, _ = shop_index
    sub = repo / "shop"
    r = nsccn("search", "add_item", "--json", cwd=sub)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["results"][0]["id"] == "method:shop/models.py:User.add_item"
    r = nsccn("skeleton", "models.py", cwd=sub)
    assert r.returncode == 0 and "class User(Model):" in r.stdout, r.stderr
    r = nsccn("skeleton", "shop/models.py", cwd=sub)  # a path from the repository root works too
    assert r.returncode == 0 and "class User(Model):" in r.stdout
    for focus in ("models.py", "shop/models.py"):  # the map's focus too, either way
        r = nsccn("map", "--focus", focus, "--json", cwd=sub)
        assert r.returncode == 0, (focus, r.stderr)
        assert json.loads(r.stdout)["map"].startswith("shop/models.py:"), r.stdout[:300]
    r = nsccn("status", "--json", "--root", str(sub))
    assert r.returncode == 0 and json.loads(r.stdout)["root"] == str(repo.resolve())


def test_cli_index_from_a_subdirectory_updates_the_enclosing_index(shop_index):
    """`nsccn index` with no path, inside an indexed repository, updates that index (as queries
    find it) instead of making a second index of the subdirectory; a path given is indexed as given."""
    repo, _ = shop_index
    sub = repo / "shop"
    (sub / "extra.py").write_text("def newly_added_helper():\n    return 1\n")
    r = nsccn("index", "--in-process", cwd=sub)
    assert r.returncode == 0, r.stderr
    assert not (sub / ".nsccn").exists()
    assert str(repo.resolve()) in r.stdout
    r = nsccn("search", "newly_added_helper", "--json", cwd=repo)
    assert json.loads(r.stdout)["results"][0]["id"] == "func:shop/extra.py:newly_added_helper"


def test_cli_index_from_a_subdirectory_of_an_unindexed_work_tree_indexes_its_top(shop_repo):
    """With no index yet, `nsccn index` in a subdirectory of a git work tree indexes the whole
    repository (as git commands work on it from anywhere), so queries from anywhere in it find
    that one index; `nsccn index .` still indexes the subdirectory as its own repository."""
    (shop_repo / ".git").mkdir()
    sub = shop_repo / "shop"
    r = nsccn("index", "--in-process", cwd=sub)
    assert r.returncode == 0, r.stderr
    assert not (sub / ".nsccn").exists() and (shop_repo / ".nsccn").is_dir()
    r = nsccn("search", "add_item", "--json", cwd=sub)
    assert json.loads(r.stdout)["results"][0]["id"] == "method:shop/models.py:User.add_item"
    r = nsccn("index", ".", "--in-process", cwd=sub)
    assert r.returncode == 0, r.stderr
    assert (sub / ".nsccn").is_dir()


def test_an_index_directory_outside_the_repository_is_found_from_a_subdirectory_and_never_given_to_another(
        shop_repo, tmp_path):
    """With NSCCN_INDEX_DIR the index's location says nothing of what it indexes, so it records
    its repository: from a subdirectory queries, status and `nsccn index` work on the whole
    repository (not on the subdirectory, whose index would drop every other file), and another
    repository is refused there with a message, the first one's index kept."""
    env = {"NSCCN_INDEX_DIR": str(tmp_path / "outside-index")}
    r = nsccn("index", "--in-process", cwd=shop_repo, env=env)
    assert r.returncode == 0, r.stderr
    sub = shop_repo / "shop"
    r = nsccn("status", "--json", cwd=sub, env=env)
    status = json.loads(r.stdout)
    assert status["root"] == str(shop_repo.resolve()) and status["stale_files"]["deleted"] == 0, status
    r = nsccn("index", "--in-process", "--json", cwd=sub, env=env)
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["files_deleted"] == 0 and summary["files_unchanged"] == status["files"], summary
    r = nsccn("search", "add_item", "--json", cwd=sub, env=env)
    assert json.loads(r.stdout)["results"][0]["id"] == "method:shop/models.py:User.add_item"

    other = tmp_path / "other"
    other.mkdir()
    (other / "lone.py").write_text("def lone():\n    return 1\n")
    for command in (["index", str(other), "--in-process"], ["index", str(other), "--pipeline"],
                    ["serve", str(other), "--no-mcp"]):
        r = nsccn(*command, env=env)
        assert r.returncode != 0 and f"holds the index of {shop_repo.resolve()}" in r.stderr, (command, r.stderr)
    r = nsccn("search", "add_item", "--json", cwd=shop_repo, env=env)
    assert json.loads(r.stdout)["results"][0]["id"] == "method:shop/models.py:User.add_item"


def test_cli_status_without_an_index_exits_3(tmp_path):
    (tmp_path / ".git").mkdir()  # a repository of its own: no looking above it
    r = nsccn("status", "--json", cwd=tmp_path)
    assert r.returncode == 3
    assert json.loads(r.stdout)["indexed"] is False
    r = nsccn("status", cwd=tmp_path)
    assert r.returncode == 3 and "indexed: False" in r.stdout


def test_cli_index_names_skipped_symlinks(shop_repo):
    """A symlink to a directory of the repository is indexed at its target (whichever name sorts
    first), and called so; a loop is a loop; each reason names a path."""
    import os

    os.symlink("shop", shop_repo / "a_link")  # sorts before its target
    os.symlink("..", shop_repo / "shop" / "loop")
    r = nsccn("index", str(shop_repo), "--workers", "1")
    assert r.returncode == 0, r.stderr
    assert "1 directory symlink inside the repository (indexed at its target) (e.g. a_link)" in r.stdout
    assert "1 symlink loop (e.g. shop/loop)" in r.stdout
    assert "None" not in r.stdout
    r = nsccn("search", "add_item", "--json", "--root", str(shop_repo))
    assert json.loads(r.stdout)["results"][0]["id"] == "method:shop/models.py:User.add_item"


def test_index_runs_small_jobs_in_process_and_the_pipeline_on_request(shop_repo):
    """A job below PIPELINE_FROM_FILES files to parse costs less without the actors' start: the
    default `nsccn index` does it in this process; `--pipeline` runs the actors whatever the size."""
    r = nsccn("index", str(shop_repo), "--json")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["files_indexed"] == len(SHOP) and "pipeline" not in summary
    (shop_repo / "shop" / "extra.py").write_text("def extra():\n    return 1\n")
    r = nsccn("index", str(shop_repo), "--pipeline", "--json")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["files_indexed"] == 1 and summary["pipeline"]["actors"]


def test_an_index_into_a_log_says_how_far_it_is_in_plain_lines(shop_repo):
    """stderr not a terminal (a pipe, a log file): no bar, and no silence either, the first and the
    last count of each phase as a line (and one every 10 s between); --json prints none."""
    r = nsccn("index", str(shop_repo), "--in-process", "--embed", env={"HF_HUB_OFFLINE": "1"})
    assert r.returncode == 0, r.stderr
    lines = [line for line in r.stderr.splitlines() if line.startswith("nsccn: ")]
    n = len(SHOP)
    assert lines[0].startswith("nsccn: parsing 1/") and f"nsccn: parsing {n}/{n} files" in r.stderr
    embedded = [line for line in lines if line.startswith("nsccn: embedding ")]
    assert embedded and embedded[-1].split()[2].split("/")[0] == embedded[-1].split()[2].split("/")[1]
    assert "\r" not in r.stderr  # no bar redrawn into the log
    (shop_repo / "shop" / "extra.py").write_text("def extra():\n    return 1\n")
    quiet = nsccn("index", str(shop_repo), "--in-process", "--json")
    assert quiet.returncode == 0 and "nsccn: parsing" not in quiet.stderr


def test_an_index_runs_parsers_end_once_every_file_is_committed(shop_repo):
    """The parsers of an index run end when the watcher has nothing left for them, not with the
    run: while the writer resolves (held back here) and reads the history, what they held (up to a
    large file's syntax tree each) is back with the system. Their end is no crash."""
    r = nsccn("index", str(shop_repo), "--pipeline", "--workers", "2", "--json",
              env={"NSCCN_TEST_RESOLVE_DELAY": "3"})
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    actors = summary["pipeline"]["actors"]
    for name in ("parser-0", "parser-1"):
        assert actors[name]["state"] == "finished", actors[name]
        # One exit each: 0, or the stop's own SIGTERM for a parser still starting (its handler not
        # yet installed) when the other had parsed everything; a crash is any other code.
        assert actors[name]["restarts"] == 0 and [code for _, code in actors[name]["exits"]] in ([0], [-signal.SIGTERM])
    assert actors["writer"]["state"] == "stopped"
    assert summary["files_indexed"] == len(SHOP)
    with Store(shop_repo / ".nsccn" / "index.db", readonly=True) as store:
        assert store.entity("func:shop/service.py:register") is not None


def test_a_pipeline_run_with_nothing_to_parse_starts_no_parser(shop_repo):
    """The supervisor of an index run starts the parsers once the watcher's scan has found work:
    with nothing changed, only the watcher and the writer run (their start is the run's cost)."""
    r = nsccn("index", str(shop_repo), "--pipeline", "--workers", "2", "--json")
    assert r.returncode == 0, r.stderr
    actors = json.loads(r.stdout)["pipeline"]["actors"]
    assert [len(actors[p]["exits"]) for p in ("parser-0", "parser-1")] == [1, 1]  # a first build parses
    r = nsccn("index", str(shop_repo), "--pipeline", "--workers", "2", "--json")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    actors = summary["pipeline"]["actors"]
    assert summary["files_indexed"] == 0 and summary["files_unchanged"] == len(SHOP)
    assert actors["parser-0"]["exits"] == actors["parser-1"]["exits"] == []
    assert len(actors["watcher"]["exits"]) == len(actors["writer"]["exits"]) == 1
    (shop_repo / "shop" / "extra.py").write_text("def extra():\n    return 1\n")
    r = nsccn("index", str(shop_repo), "--pipeline", "--workers", "2", "--json")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["files_indexed"] == 1 and summary["pipeline"]["actors"]["parser-0"]["exits"]
    with Store(shop_repo / ".nsccn" / "index.db", readonly=True) as store:
        assert store.entity("func:shop/extra.py:extra") is not None


def test_answers_built_from_edges_say_when_the_references_are_not_resolved_yet(shop_repo):
    """Between a build's commits and its resolution the index has entities and no edges: a trace
    then must not read as "nothing calls it". Held there (the writer waits before resolving),
    trace, refs, map and context say so, in --json and as a note; once resolved they do not. An
    index run that stopped after writing (its marker left) says edges may be out of date until the
    next run resolves them."""
    import time

    from nsccn.store import IndexMissing, IndexNotReady

    target = "method:shop/base.py:Model.save"
    root = ["--root", str(shop_repo)]
    run = subprocess.Popen([sys.executable, "-m", "nsccn.cli", "index", str(shop_repo), "--pipeline", "--json"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env={**os.environ, "NSCCN_TEST_RESOLVE_DELAY": "15"})  # room for the calls below on a busy machine
    try:
        db = shop_repo / ".nsccn" / "index.db"

        def written() -> bool:
            try:
                with Store(db, readonly=True) as store:
                    return store.counts()["files"] == len(SHOP) and store.get_meta("resolve_pending") == "1"
            except (IndexMissing, IndexNotReady):  # not made yet, or being made
                return False

        deadline = time.monotonic() + 60
        while not written():
            assert time.monotonic() < deadline and run.poll() is None, "the build never got to its resolution"
            time.sleep(0.05)
        r = nsccn("trace", target, "--direction", "upstream", *root, "--json")
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        assert out["adjacency_list"] == {} and "no reference of this index is resolved yet" in out["unresolved"]
        r = nsccn("trace", target, "--direction", "upstream", *root)
        assert "# note: no reference of this index is resolved yet" in r.stderr
        for args in (["refs", target], ["map"], ["context", "save a model"]):
            r = nsccn(*args, *root, "--json")
            assert r.returncode == 0 and "unresolved" in json.loads(r.stdout), (args, r.stderr)
        r = nsccn("trace", "func:shop/later.py:soon", *root)  # not (yet) indexed: maybe not yet, it says
        assert r.returncode == 1 and "files are being written into the index now" in r.stderr
        assert run.wait(timeout=90) == 0, run.stderr.read()
    finally:
        run.kill()
        run.wait()
    r = nsccn("trace", target, "--direction", "upstream", *root, "--json")
    out = json.loads(r.stdout)
    assert out["adjacency_list"] and "unresolved" not in out and "# note" not in nsccn("refs", target, *root).stderr
    r = nsccn("trace", "func:shop/later.py:soon", *root)
    assert r.returncode == 1 and "unknown entity id" in r.stderr and "being written" not in r.stderr
    with Store(shop_repo / ".nsccn" / "index.db") as store:  # as a run that stopped after writing leaves it
        store.set_meta("resolve_pending", "1")
    out = json.loads(nsccn("refs", target, *root, "--json").stdout)
    assert out["references"] and "edges may be missing or out of date" in out["unresolved"]
    assert "unresolved" in json.loads(nsccn("status", *root, "--json").stdout)
    assert nsccn("index", str(shop_repo), "--in-process").returncode == 0  # the next run resolves them
    assert "unresolved" not in json.loads(nsccn("refs", target, *root, "--json").stdout)
