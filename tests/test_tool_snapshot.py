"""The tools as users see them, held against a snapshot recorded before the tools were declared
once (issue 40): the MCP tool list (names, descriptions, input schemas) and a sample of answers
over stdio (`nsccn mcp`, a real fastmcp client), and the CLI's output and exit code for every
command (the `nsccn` console script, in a real process).

Record again, after a change meant to show: NSCCN_RECORD_SNAPSHOT=1 pytest tests/test_tool_snapshot.py
"""

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from test_mcp_server import make_repo

SNAPSHOT = Path(__file__).parent / "data" / "tool_snapshot.json"
RECORD = os.environ.get("NSCCN_RECORD_SNAPSHOT") == "1"
NSCCN = Path(sys.executable).parent / "nsccn"

LOGIN = "method:acme/auth.py:AuthService.login"
REPORT = ("Login accepts tokens whose signature is wrong when they are not expired yet.\n"
          "I expected AuthError('bad signature') from the signature check.")

# (tool, arguments): answers and errors, every parameter's bounds among them
MCP_CALLS = [
    ("search_and_rank", {"query": "validate token signature", "limit": 3}),
    ("search_and_rank", {"query": "user", "limit": 2, "offset": 1, "kinds": ["method"], "diversity": 0.5}),
    ("search_and_rank", {"query": "x", "kinds": '["func"]'}),
    ("search_and_rank", {"query": "  "}),
    ("search_and_rank", {"query": "x", "limit": 0}),
    ("search_and_rank", {"query": "x", "limit": 101}),
    ("search_and_rank", {"query": "x", "offset": -1}),
    ("search_and_rank", {"query": "x", "kinds": ["bogus"]}),
    ("search_and_rank", {"query": "x", "diversity": 2}),
    ("search_and_rank", {"query": "x", "limit": "many"}),
    ("search_and_rank", {}),
    ("search_and_rank", {"query": "x", "colour": "red"}),
    ("localize_issue", {"report": REPORT, "limit": 3}),
    ("localize_issue", {"report": ""}),
    ("localize_issue", {"report": "x", "limit": 51}),
    ("read_skeleton", {"file_path": "acme/auth.py"}),
    ("read_skeleton", {"file_path": "acme/auth.py", "offset": 3}),
    ("read_skeleton", {"file_path": "acme/auht.py"}),
    ("read_skeleton", {"file_path": "acme/auth.py", "offset": 9999}),
    ("read_skeleton", {"file_path": "/etc/passwd"}),
    ("read_skeleton", {"file_path": ""}),
    ("trace_causal_path", {"entity_id": LOGIN}),
    ("trace_causal_path", {"entity_id": LOGIN, "direction": "upstream", "depth": 2,
                           "relations": ["CALLS"], "min_confidence": 0.5}),
    ("trace_causal_path", {"entity_id": LOGIN, "direction": "sideways"}),
    ("trace_causal_path", {"entity_id": LOGIN, "depth": 0}),
    ("trace_causal_path", {"entity_id": LOGIN, "depth": 11}),
    ("trace_causal_path", {"entity_id": LOGIN, "relations": ["EATS"]}),
    ("trace_causal_path", {"entity_id": LOGIN, "min_confidence": 2}),
    ("trace_causal_path", {"entity_id": "method:acme/auth.py:AuthService.logn"}),
    ("open_surgical_window", {"entity_id": LOGIN}),
    ("open_surgical_window", {"entity_id": LOGIN, "context_lines": 0, "from_line": 12}),
    ("open_surgical_window", {"entity_id": LOGIN, "context_lines": 201}),
    ("open_surgical_window", {"entity_id": LOGIN, "from_line": 1}),
    ("repo_map", {"max_tokens": 256}),
    ("repo_map", {"max_tokens": 300, "focus": ["acme/auth.py"]}),
    ("repo_map", {"max_tokens": 10}),
    ("repo_map", {"focus": [" "]}),
    ("find_symbol", {"name": "login"}),
    ("find_symbol", {"name": "AuthService.login", "limit": 1}),
    ("find_symbol", {"name": "logn"}),
    ("find_symbol", {"name": ""}),
    ("find_symbol", {"name": "x", "limit": 0}),
    ("find_references", {"entity_id": "func:acme/auth.py:validate_token"}),
    ("find_references", {"entity_id": "func:acme/auth.py:validate_token", "limit": 1, "offset": 1}),
    ("find_references", {"entity_id": "func:acme/auth.py:validate_token", "limit": 501}),
    ("find_references", {"entity_id": "func:acme/auth.py:validate_token", "offset": -2}),
    ("assemble_context", {"query": "validate the token signature", "max_tokens": 600}),
    ("assemble_context", {"query": ""}),
    ("assemble_context", {"query": "x", "max_tokens": 100}),
    ("index_status", {}),
]

# (arguments, standard input): every command, its answers and its errors
CLI_CALLS = [
    (["search", "validate token signature", "--limit", "3"], None),
    (["search", "validate token signature", "--limit", "3", "--json"], None),
    (["search", "user", "--limit", "2", "--offset", "1", "--diversity", "0.5"], None),
    (["search", "zzzqqq"], None),
    (["search", "x", "--limit", "0"], None),
    (["search", "x", "--limit", "101"], None),
    (["search", "x", "--limit", "many"], None),
    (["search", "x", "--diversity", "3"], None),
    (["search"], None),
    (["localize", REPORT, "--limit", "3"], None),
    (["localize", "--limit", "3", "--json"], REPORT),
    (["localize", "x", "--limit", "51"], None),
    (["localize", "--file", "no-such-report.txt"], None),
    (["skeleton", "acme/auth.py"], None),
    (["skeleton", "acme/auth.py", "--json"], None),
    (["skeleton", "acme/auht.py"], None),
    (["skeleton", "acme/auht.py", "--json"], None),
    (["trace", LOGIN], None),
    (["trace", LOGIN, "--direction", "upstream", "--depth", "2", "--relation", "CALLS", "--json"], None),
    (["trace", LOGIN, "--direction", "sideways"], None),
    (["trace", LOGIN, "--depth", "0"], None),
    (["trace", LOGIN, "--relation", "EATS"], None),
    (["trace", LOGIN, "--min-confidence", "2"], None),
    (["window", LOGIN], None),
    (["window", LOGIN, "--context", "0", "--json"], None),
    (["window", LOGIN, "--context", "201"], None),
    (["window", "method:acme/auth.py:AuthService.logn"], None),
    (["symbol", "login"], None),
    (["symbol", "AuthService.login", "--json"], None),
    (["symbol", "logn"], None),
    (["refs", "func:acme/auth.py:validate_token"], None),
    (["refs", "func:acme/auth.py:validate_token", "--limit", "1", "--json"], None),
    (["refs", "func:acme/auth.py:validate_token", "--limit", "0"], None),
    (["map", "--max-tokens", "256"], None),
    (["map", "--max-tokens", "300", "--focus", "acme/auth.py", "--json"], None),
    (["map", "--max-tokens", "10"], None),
    (["context", "validate the token signature", "--max-tokens", "600"], None),
    (["context", "x", "--max-tokens", "100"], None),
    (["status"], None),
    (["status", "--json"], None),
    (["train-ranker", "--commits", "5"], None),
    (["train-ranker", "--rounds", "0", "--json"], None),
    (["index", "no-such-dir"], None),
    (["serve", "no-such-dir"], None),
    (["stop", "no-such-dir"], None),
    (["stop", "."], None),
    (["mcp", "--root", "no-such-dir"], None),
    (["index", ".", "--ray", "nonsense"], None),
    (["index", "--repos", "repos.txt"], None),
    (["frobnicate"], None),
    ([], None),
    (["--version"], None),
]

# An index, and no index: the same commands where none was built (exit 3)
EMPTY_CALLS = [
    (["search", "x"], None),
    (["search", "x", "--json"], None),
    (["status", "--json"], None),
    (["window", LOGIN], None),
]

# Values that differ from run to run, whatever the code: times, sizes on disk, the temporary root.
_VOLATILE = {"seconds", "last_indexed", "since", "age_s", "mtime", "size_bytes", "bytes", "db_bytes", "peak_rss_mb",
             "supervisor_peak_rss_mb", "exits"}
SRC = str(Path(__file__).resolve().parents[1])  # this checkout: the shipped ranker's path


def _scrub(value, root: str):
    if isinstance(value, dict):
        return {k: ("<volatile>" if k in _VOLATILE else _scrub(v, root)) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v, root) for v in value]
    if isinstance(value, str):
        value = value.replace(root, "<ROOT>").replace(SRC, "<SRC>")
        value = re.sub(r"/tmp/pytest-of-[^/]+/pytest-\d+", "<TMP>", value)
        # progress bars: how many a run draws depends on timing
        value = re.sub(r"^.*\[[\d:]+<[\d:?]+, +[\d.?]+ ?\w+/s\]\n?", "", value, flags=re.M)
        value = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", "<TIME>", value)
        return re.sub(r"\b\d+\.\d+ s\b", "<N> s", value)
    return value


def _scrub_text(text: str, root: str) -> str:
    """Text output: the root, clock times, and the `"seconds": ...` / `"last_indexed": ...` of JSON."""
    text = _scrub(text, root)
    text = re.sub(r'("(?:%s)": )(\[[^]]*\]|"[^"]*"|[-\d.e]+|null)' % "|".join(_VOLATILE), r'\1"<volatile>"', text)
    return re.sub(r'("exits": )\[(\s*\[\s*\d+,\s*-?\d+\s*\],?)*\s*\]', r'\1"<volatile>"', text)


def _mcp_answers(repo: Path) -> dict:
    transport = StdioTransport(command=str(NSCCN), args=["mcp", "--root", str(repo)], cwd=str(repo),
                               env={**os.environ, "NSCCN_LOG_LEVEL": "WARNING"})

    async def main():
        out = {"tools": [], "answers": []}
        async with Client(transport) as c:
            out["instructions"] = c.instructions
            out["server"] = c.server_info.name if c.server_info else None
            for t in await c.list_tools():
                out["tools"].append({"name": t.name, "description": t.description, "inputSchema": t.input_schema,
                                     "outputSchema": t.output_schema,
                                     "annotations": t.annotations.model_dump() if t.annotations else None})
            for tool, args in MCP_CALLS:
                r = await c.call_tool_mcp(tool, args)
                out["answers"].append({
                    "call": [tool, args], "is_error": bool(r.is_error),
                    "text": [_scrub_text(b.text, str(repo)) for b in r.content],
                    "structured": _scrub(r.structured_content, str(repo)),
                })
        return out

    return asyncio.run(main())


def _cli(args: list[str], cwd: Path, stdin: str | None) -> dict:
    r = subprocess.run([str(NSCCN), *args], cwd=cwd, input=stdin or "", capture_output=True, text=True,
                       timeout=120, env={**os.environ, "NSCCN_LOG_LEVEL": "WARNING", "COLUMNS": "100"})
    return {"call": args, "rc": r.returncode, "stdout": _scrub_text(r.stdout, str(cwd)),
            "stderr": _blank_lines_out(_scrub_text(r.stderr, str(cwd)))}


_PROGRESS_LINE = re.compile(r"nsccn: (?:parsing|indexing|embedding) \d+/\d+ \w+ \(\d+ s\)\s*")


def _blank_lines_out(text: str) -> str:
    """Without its empty lines (a progress bar's leaves one or two, as the run's timing has it) and
    its plain progress lines (how many and what they count is the run's timing too)."""
    return "".join(line for line in text.splitlines(keepends=True)
                   if line.strip() and not _PROGRESS_LINE.fullmatch(line))


@pytest.fixture(scope="module")
def acme(tmp_path_factory) -> Path:
    return make_repo(tmp_path_factory.mktemp("snap") / "acme_repo")


@pytest.fixture(scope="module")
def snapshot() -> dict:
    if RECORD:
        return {}
    return json.loads(SNAPSHOT.read_text())


def _check(snapshot: dict, key: str, now) -> None:
    if RECORD:
        data = json.loads(SNAPSHOT.read_text()) if SNAPSHOT.exists() else {}
        data[key] = now
        SNAPSHOT.write_text(json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
        return
    want = snapshot[key]
    if isinstance(want, list):  # one item at a time: a failure names the call
        assert len(now) == len(want)
        for got, expected in zip(now, want):
            assert got == expected
    else:
        for k in want:
            assert now[k] == want[k], k


def test_mcp_tools_and_answers_are_the_snapshot(acme, snapshot):
    out = _mcp_answers(acme)
    _check(snapshot, "mcp_tools", {k: out[k] for k in ("tools", "instructions", "server")})
    _check(snapshot, "mcp_answers", out["answers"])


def test_cli_output_and_exit_codes_are_the_snapshot(acme, snapshot):
    _check(snapshot, "cli", [_cli(args, acme, stdin) for args, stdin in CLI_CALLS])


def test_cli_without_an_index_is_the_snapshot(tmp_path, snapshot):
    empty = tmp_path / "empty"
    empty.mkdir()
    _check(snapshot, "cli_no_index", [_cli(args, empty, stdin) for args, stdin in EMPTY_CALLS])


def test_cli_index_is_the_snapshot(tmp_path, snapshot):
    """`nsccn index` in process and through the pipeline: the summary, first build and no change."""
    from test_mcp_server import ACME, write_repo

    out = []
    for i, mode in enumerate(("--in-process", "--pipeline")):
        repo = write_repo(tmp_path / f"r{i}", ACME)
        for extra in ([], ["--json"]):
            out.append(_cli(["index", ".", mode, "--workers", "1", *extra], repo, None))
    _check(snapshot, "cli_index", out)
