"""The commands of README.md and docs/mcp.md work as written, in a fresh copy of this clone, with
no virtual environment active (a bare PATH, as an MCP client or honcho starts them).

The quickstart's index + search, the Claude Code registration line and the Procfile line are run
here; every other command in a ```bash block must match a row of COVERED, which names the test
that runs it (a new command without a row fails this test)."""

import asyncio
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from conftest import stop_group

from test_mcp_server import make_repo

PROJECT = Path(__file__).resolve().parents[1]
DOCS = ("README.md", "docs/mcp.md")
BARE_PATH = "/usr/bin:/bin"

# command pattern -> the test file that runs it (and a string that file must contain)
COVERED = [
    (r"^python3 -m venv \.venv && \.venv/bin/pip install -q -e '\.\[test\]' && \.venv/bin/python -m pytest -q$",
     ".ci/run", ".venv/bin/python -m pytest -q"),
    (r"^python3 -m venv \.venv && \.venv/bin/pip install -q -e \. && \.venv/bin/nsccn index \. && \.venv/bin/nsccn search ",
     "tests/test_docs_commands.py", "test_quickstart_indexes_and_searches_this_clone"),
    (r'^claude mcp add (--scope user )?nsccn -- "\$PWD/\.venv/bin/nsccn" (serve|mcp --root)( |$)',
     "tests/test_docs_commands.py", "test_registration_line_connects_without_an_active_venv"),
    (r"^NSCCN_ROOT=\S+ \.venv/bin/honcho start", "tests/test_docs_commands.py", "test_procfile_runs_without_an_active_venv"),
    (r"^nsccn index PATH --in-process", "tests/test_hostile.py", '"--in-process"'),
    (r"^nsccn index PATH --pipeline", "tests/test_cli.py", '"--pipeline"'),
    (r"^nsccn index (PATH )?--ray ", "tests/test_ray_index.py", '"--ray"'),
    # any other `nsccn SUBCOMMAND ...`: a test must start a real `nsccn SUBCOMMAND` process (runs_subcommand)
]
# how the tests start the CLI: nsccn("sub", ...), [sys.executable, "-m", "nsccn.cli", "sub", ...], pre + ["sub", ...]
CLI_CALL = r'(?:nsccn\(|"nsccn\.cli", |\*cmd, |\*pre, |pre \+ \[|\[str\(nsccn\), )"{}"'


def runs_subcommand(sub: str) -> bool:
    pattern = re.compile(CLI_CALL.format(re.escape(sub)))
    return any(pattern.search(f.read_text()) for f in (PROJECT / "tests").glob("test_*.py"))


def bash_commands(doc: str) -> list[str]:
    """Every command line of the document's ```bash blocks, comments cut."""
    out, inside = [], False
    for line in (PROJECT / doc).read_text().splitlines():
        if line.startswith("```"):
            inside = line.strip() == "```bash" if not inside else False
            continue
        if inside:
            cmd = re.sub(r"\s+#.*$", "", line).strip()
            if cmd and not cmd.startswith("#"):
                out.append(cmd)
    return out


def fresh_copy(dest: Path) -> Path:
    """This clone's tracked files (as they are in the work tree), without .venv or .nsccn, and
    this test run's virtual environment at .venv, where the quickstart would have made it."""
    if not (PROJECT / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout")
    files = subprocess.run(["git", "-C", str(PROJECT), "ls-files", "-z"], capture_output=True, check=True).stdout
    for rel in filter(None, files.decode().split("\0")):
        src = PROJECT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    venv = Path(sys.prefix)
    if not (venv / "bin" / "nsccn").exists():
        pytest.skip("nsccn is not installed in this interpreter's environment")
    (dest / ".venv").symlink_to(venv)
    return dest


def bare_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "NSCCN_PYTHON")}
    env["PATH"] = BARE_PATH
    env.update(extra)
    return env


def doc_line(doc: str, pattern: str) -> str:
    hits = [c for c in bash_commands(doc) if re.search(pattern, c)]
    assert hits, f"{doc} has no command matching {pattern}"
    return hits[0]


def test_every_documented_command_is_run_by_a_test():
    missing = []
    for doc in DOCS:
        for cmd in bash_commands(doc):
            row = next((r for r in COVERED if re.search(r[0], cmd)), None)
            if row is None:
                sub = re.match(r"nsccn ([a-z-]+)", cmd)
                if not (sub and runs_subcommand(sub.group(1))):
                    missing.append(f"{doc}: {cmd}")
                continue
            runner = PROJECT / row[1]
            assert runner.is_file() and row[2] in runner.read_text(), f"{row[1]} does not run {cmd!r}"
    assert not missing, "documented commands no test runs:\n" + "\n".join(missing)


def test_every_test_benchmark_and_result_the_docs_name_exists():
    """`python -m pytest -q tests/X.py`, `python benchmarks/X.py` and `benchmarks/results/...` in
    the prose of the README and every page of docs/ name something there."""
    named = set()
    for doc in ["README.md", *(str(p.relative_to(PROJECT)) for p in sorted((PROJECT / "docs").glob("*.md")))]:
        text = (PROJECT / doc).read_text()
        named |= set(re.findall(r"python -m pytest -q (tests/[\w/]+\.py)", text))
        named |= set(re.findall(r"python (benchmarks/[\w/]+\.py)", text))
        named |= {m.rstrip(".,") for m in re.findall(r"benchmarks/results/[\w./+-]+", text)}
    assert len(named) > 50 and not [n for n in sorted(named) if not (PROJECT / n).exists()]


def test_quickstart_indexes_and_searches_this_clone(tmp_path):
    clone = fresh_copy(tmp_path / "nsccn")
    line = doc_line("README.md", r"\.venv/bin/nsccn index \.")
    tail = line[line.index(".venv/bin/nsccn index"):]  # the venv and the install are .ci/run's part
    r = subprocess.run(["/bin/sh", "-c", tail], cwd=clone, env=bare_env(), capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "nsccn/languages/python.py" in r.stdout  # where skeletons are built


def test_registration_line_connects_without_an_active_venv(tmp_path):
    """The documented line registers the server for the user (`--scope user`: for every project,
    not only the NSCCN clone it is run from) with no repository named: the client starts it in the
    user's project, here a subdirectory of it, and it serves the repository around it."""
    clone = fresh_copy(tmp_path / "nsccn")
    repo = make_repo(tmp_path / "acme_repo", index=False)
    subprocess.run(["git", "init", "-q", str(repo)], check=True, capture_output=True)  # the top of the work tree
    for doc in DOCS:
        line = doc_line(doc, r"^claude mcp add .*nsccn -- .* serve$")
        argv = shlex.split(line.replace("$PWD", str(clone)))
        assert argv[argv.index("add") + 1:argv.index("add") + 3] == ["--scope", "user"], f"{doc}: {line}"
        server = argv[argv.index("--") + 1:]
        assert server[1:] == ["serve"] and Path(server[0]).is_absolute(), f"{doc}: {line}"

    async def main():
        where = repo / "acme"  # where the user works: the client starts the server there
        transport = StdioTransport(server[0], server[1:] + ["--no-embed"], env=bare_env(), cwd=str(where),
                                   keep_alive=False, log_file=tmp_path / "serve.log")
        async with Client(transport, timeout=60) as c:
            deadline = time.monotonic() + 60
            while True:  # indexed, and its references resolved (before, the graph signals are missing)
                st = (await c.call_tool("index_status", {})).structured_content
                if st.get("indexed") and not st.get("unresolved"):
                    break
                assert time.monotonic() < deadline
                await asyncio.sleep(0.2)
            for _ in range(100):
                found = (await c.call_tool("search_and_rank", {"query": "validate token"})).structured_content
                if found["results"]:
                    break
                await asyncio.sleep(0.2)
            assert found["results"][0]["id"] == "func:acme/auth.py:validate_token"

    asyncio.run(main())


def test_procfile_runs_without_an_active_venv(tmp_path):
    clone = fresh_copy(tmp_path / "nsccn")
    repo = make_repo(tmp_path / "acme_repo", index=False)
    line = doc_line("README.md", r"honcho start")
    cmd = line.replace("/abs/path/to/repo", str(repo)).replace("parser=2", "parser=1")
    log = (tmp_path / "honcho.log").open("w")
    proc = subprocess.Popen(["/bin/sh", "-c", cmd], cwd=clone, env=bare_env(), stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while True:
            r = subprocess.run([str(clone / ".venv/bin/nsccn"), "status", "--json", "--root", str(repo)],
                               env=bare_env(), capture_output=True, text=True, timeout=60)
            st = json.loads(r.stdout) if r.stdout.strip().startswith("{") else {}
            if st.get("pipeline") and st.get("entities", 0) > 0:
                break
            assert proc.poll() is None, (tmp_path / "honcho.log").read_text()[-3000:]
            assert time.monotonic() < deadline, (tmp_path / "honcho.log").read_text()[-3000:]
            time.sleep(0.5)
    finally:
        stop_group(proc)
    assert "No module named" not in (tmp_path / "honcho.log").read_text()
