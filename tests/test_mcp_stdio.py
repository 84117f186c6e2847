"""The MCP front over a real stdio subprocess: `nsccn mcp --root <fixture>` (and `nsccn serve`, once
the pipeline exists), driven by fastmcp's stdio client, exactly as Claude Code or Cursor would."""

import asyncio
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from fastmcp.exceptions import ToolError

from nsccn.indexing.indexer import index_repository
from nsccn.tokens import count_tokens
from test_mcp_server import TOOLS, make_repo, touch_later


def nsccn_command() -> tuple[str, list[str]]:
    exe = Path(sys.executable).parent / "nsccn"
    if exe.exists():
        return str(exe), []
    found = shutil.which("nsccn")
    return (found, []) if found else (sys.executable, ["-m", "nsccn.cli"])


def has_subcommand(name: str) -> bool:
    from nsccn_cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return name in sub.choices


def has_pipeline() -> bool:
    """`nsccn serve` and the supervisor/workers packages it runs."""
    try:
        return has_subcommand("serve") and all(importlib.util.find_spec(m) for m in ("supervisor.cli", "workers.mcp_front"))
    except ImportError:
        return False


async def wait_until_indexed(c: Client, timeout_s: float = 60) -> dict:
    """Under `nsccn serve` the index is built while the session is already open."""
    deadline = time.monotonic() + timeout_s
    while True:
        st = (await c.call_tool("index_status", {})).structured_content
        live = st.get("pipeline") or {}
        if st.get("indexed") and st.get("files", 0) >= 6 and live.get("files_pending", 0) == 0 and live.get("state") != "indexing":
            return st
        assert time.monotonic() < deadline, f"the pipeline did not finish indexing: {st}"
        await asyncio.sleep(0.2)


async def exercise(transport: StdioTransport, repo: Path, live: bool = False) -> None:
    """List tools, call each, bad inputs, the cap, and an edit + re-index seen by later answers.

    live: the server is `nsccn serve` (its watcher re-indexes edits by itself), not `nsccn mcp`
    (the test re-indexes through the library, from this process)."""
    async with Client(transport, timeout=60) as c:
        if live:
            st = await wait_until_indexed(c)
            assert "pipeline" in st and st["pipeline"]["actors"]
        tools = await c.list_tools()
        assert {t.name for t in tools} == TOOLS

        found = (await c.call_tool("search_and_rank", {"query": "validate token", "limit": 5})).structured_content
        assert found["results"][0]["id"] == "func:acme/auth.py:validate_token"
        loc = (await c.call_tool("localize_issue", {"report": "a token with a bad signature is accepted"})).structured_content
        assert loc["files"][0] == "acme/auth.py" and loc["functions"][0]["file"] == "acme/auth.py"
        skel = await c.call_tool("read_skeleton", {"file_path": "acme/auth.py"})
        assert "def validate_token(token: dict) -> bool:" in skel.content[0].text
        trace = await c.call_tool("trace_causal_path", {"entity_id": "method:acme/auth.py:AuthService.login"})
        assert json.loads(trace.content[0].text)["adjacency_list"]["func:acme/auth.py:validate_token"]
        win = (await c.call_tool("open_surgical_window", {"entity_id": "func:acme/auth.py:check_expiry", "context_lines": 0})).structured_content
        assert win["code"].startswith(f"{win['start']} | def check_expiry(token):")
        assert "acme/" in (await c.call_tool("repo_map", {"max_tokens": 256})).structured_content["map"]
        assert (await c.call_tool("find_symbol", {"name": "AuthService"})).structured_content["total"] == 1
        refs = (await c.call_tool("find_references", {"entity_id": "func:acme/auth.py:validate_token"})).structured_content
        assert refs["total"] >= 2
        ctx = await c.call_tool("assemble_context", {"query": "login with a bad token", "max_tokens": 500})
        assert count_tokens(ctx.content[0].text) <= 500
        status = (await c.call_tool("index_status", {})).structured_content
        assert status["indexed"] and status["files"] >= 6

        # the default cap holds over the wire too
        big = await c.call_tool("read_skeleton", {"file_path": "acme/big.py"})
        assert count_tokens(big.content[0].text) <= 8000

        # bad input: clear errors, no stack traces, and the session survives them
        for tool, args, expect in [
            ("trace_causal_path", {"entity_id": "func:acme/auth.py:validate", "depth": 3}, "did you mean"),
            ("trace_causal_path", {"entity_id": "func:acme/auth.py:validate_token", "depth": 50}, "between 1 and 10"),
            ("read_skeleton", {"file_path": "/etc/passwd"}, "outside the repository"),
            ("search_and_rank", {"query": "token", "limit": -3}, "between 1 and 100"),
            ("search_and_rank", {"query": ""}, "query is empty"),
        ]:
            with pytest.raises(ToolError) as exc:
                await c.call_tool(tool, args)
            assert expect in str(exc.value) and "Traceback" not in str(exc.value)

        # edit a file during the session: first flagged stale, then, once re-indexed, in the answers
        auth = repo / "acme" / "auth.py"
        auth.write_text(auth.read_text() + textwrap.dedent('''

            def rotate_secret(service, new_secret):
                """Rotate the signing secret of an AuthService."""
                service.secret = new_secret
                return validate_token({"sig": "ok"})
        '''))
        touch_later(auth)
        if live:  # the watcher re-indexes on its own: wait for the new function to appear
            deadline = time.monotonic() + 30
            while True:
                again = (await c.call_tool("search_and_rank", {"query": "rotate secret"})).structured_content
                if again["results"] and again["results"][0]["id"] == "func:acme/auth.py:rotate_secret":
                    break
                assert time.monotonic() < deadline, f"the edit never reached the index: {again}"
                await asyncio.sleep(0.2)
            await wait_until_indexed(c)
        else:
            stale = (await c.call_tool("search_and_rank", {"query": "validate token"})).structured_content
            assert "acme/auth.py" in stale.get("stale", "")
            await asyncio.to_thread(index_repository, repo, None, None, 1)
            again = (await c.call_tool("search_and_rank", {"query": "rotate secret"})).structured_content
            assert again["results"][0]["id"] == "func:acme/auth.py:rotate_secret"
        assert "stale" not in again
        refs2 = (await c.call_tool("find_references", {"entity_id": "func:acme/auth.py:validate_token"})).structured_content
        assert "func:acme/auth.py:rotate_secret" in {r["from"] for r in refs2["references"]}


def test_nsccn_mcp_over_stdio(tmp_path):
    repo = make_repo(tmp_path / "acme_repo")
    cmd, pre = nsccn_command()
    log = tmp_path / "server.log"
    transport = StdioTransport(cmd, pre + ["mcp", "--root", str(repo)], keep_alive=False, log_file=log)
    asyncio.run(exercise(transport, repo))
    assert "Traceback" not in log.read_text()


def test_array_arguments_sent_as_json_strings_are_accepted(tmp_path):
    """The MCP Inspector CLI sends every argument as a string: `relations='["CALLS"]'`. Such a
    JSON-encoded array is the array, one plain string a list of one; the schemas list the valid
    kinds and relations. Ids and paths are taken as typed: a name for an id, an absolute path."""
    repo = make_repo(tmp_path / "acme_repo")
    cmd, pre = nsccn_command()

    async def main():
        async with Client(StdioTransport(cmd, pre + ["mcp", "--root", str(repo)], keep_alive=False), timeout=60) as c:
            schemas = {t.name: t.input_schema["properties"] for t in await c.list_tools()}
            items = lambda p: next(a["items"] for a in p["anyOf"] if a.get("type") == "array")  # noqa: E731
            assert items(schemas["search_and_rank"]["kinds"])["enum"] == ["module", "class", "func", "method"]
            assert "PROPAGATES_ERROR" in items(schemas["trace_causal_path"]["relations"])["enum"]
            assert items(schemas["repo_map"]["focus"]) == {"type": "string"}

            found = (await c.call_tool("search_and_rank", {"query": "validate token", "kinds": '["func"]'})).structured_content
            assert found["results"] and {r["kind"] for r in found["results"]} == {"func"}
            trace = (await c.call_tool("trace_causal_path", {"entity_id": "method:acme/auth.py:AuthService.login",
                                                             "relations": '["CALLS", "MUTATES"]'})).structured_content
            assert trace["relations"] == ["CALLS", "MUTATES"]
            assert "func:acme/auth.py:validate_token" in trace["adjacency_list"]
            focused = (await c.call_tool("repo_map", {"max_tokens": 200, "focus": '["acme/auth.py"]'})).structured_content
            assert focused["files_shown"] >= 1
            with pytest.raises(ToolError, match=r"unknown relations \['CALS'\]; valid: \['CALLS'"):
                await c.call_tool("trace_causal_path", {"entity_id": "method:acme/auth.py:AuthService.login",
                                                        "relations": '["CALS"]'})
            # one plain string is a list of one (as `limit: "5"` is the number 5)
            one = (await c.call_tool("search_and_rank", {"query": "validate token", "kinds": "class"})).structured_content
            assert one["results"] and {r["kind"] for r in one["results"]} == {"class"}
            trace = (await c.call_tool("trace_causal_path", {"entity_id": "method:acme/auth.py:AuthService.login",
                                                             "relations": "MUTATES"})).structured_content
            assert trace["relations"] == ["MUTATES"]
            focused = (await c.call_tool("repo_map", {"max_tokens": 200, "focus": "acme/auth.py"})).structured_content
            assert focused["files_shown"] >= 1
            with pytest.raises(ToolError, match=r"unknown kinds \['funk'\]"):
                await c.call_tool("search_and_rank", {"query": "validate token", "kinds": "funk"})

            # any unambiguous name where an id is expected; a prefix is completed
            win = (await c.call_tool("open_surgical_window", {"entity_id": "AuthService.login"})).structured_content
            assert win["entity_id"] == "method:acme/auth.py:AuthService.login"
            refs = (await c.call_tool("find_references", {"entity_id": "acme/auth.py:validate_token"})).structured_content
            assert refs["entity_id"] == "func:acme/auth.py:validate_token" and refs["total"] >= 2
            with pytest.raises(ToolError, match=r"did you mean[\s\S]*method:acme/auth.py:AuthService.login"):
                await c.call_tool("trace_causal_path", {"entity_id": "AuthService.log"})  # completed
            # paths: absolute inside the repository, and `..` that stays inside, as the command line takes them
            for path in (str(repo / "acme" / "auth.py"), "acme/../acme/auth.py"):
                skel = await c.call_tool("read_skeleton", {"file_path": path})
                assert "def validate_token(token: dict) -> bool:" in skel.content[0].text
            with pytest.raises(ToolError, match="outside the repository"):
                await c.call_tool("read_skeleton", {"file_path": "acme/../../etc/passwd"})

    asyncio.run(main())


def test_nsccn_mcp_without_index_still_serves_status(tmp_path):
    repo = make_repo(tmp_path / "acme_repo", index=False)
    cmd, pre = nsccn_command()

    async def main():
        async with Client(StdioTransport(cmd, pre + ["mcp", "--root", str(repo)], keep_alive=False), timeout=60) as c:
            st = (await c.call_tool("index_status", {})).structured_content
            assert st["indexed"] is False and "nsccn index" in st["hint"]
            with pytest.raises(ToolError, match="run `nsccn index`"):
                await c.call_tool("find_symbol", {"name": "validate_token"})

    asyncio.run(main())


def test_nsccn_mcp_bad_root_exits_with_usage_error(tmp_path):
    cmd, pre = nsccn_command()
    r = subprocess.run([cmd, *pre, "mcp", "--root", str(tmp_path / "missing")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "not a directory" in r.stderr


@pytest.mark.skipif(not has_pipeline(), reason="`nsccn serve` (the pipeline) is not in this tree yet")
def test_nsccn_serve_over_stdio(tmp_path):
    """The same session against the actor pipeline: indexing, watching and the MCP front actor."""
    repo = make_repo(tmp_path / "acme_repo", index=False)
    cmd, pre = nsccn_command()
    log = tmp_path / "serve.log"
    # The whole environment: the MCP client passes only a few variables by default, and the
    # pipeline this starts must see the tests' short linger (conftest) to end with the session.
    # No path: as an MCP client's configuration usually starts it, in the repository.
    transport = StdioTransport(cmd, pre + ["serve", "--no-embed", "--workers", "1"], keep_alive=False,
                               log_file=log, env=dict(os.environ), cwd=str(repo))
    try:
        asyncio.run(exercise(transport, repo, live=True))
    except BaseException:
        print(log.read_text()[-5000:])
        raise


# -- a query is untrusted input: no call stalls the server (issue 12, item 5) -----------------------


def test_a_pathological_query_does_not_stall_the_server(tmp_path):
    """A 1 MB traceback of long paths (252 s in one search before) runs beside a good call over
    real stdio: the good call is answered promptly, the bad one is bounded and says what it cut.
    (`benchmarks/mcp_stall.py` measures the same on a real repository.)"""
    from conftest import pathological_traceback

    repo = make_repo(tmp_path / "acme_repo")
    cmd, pre = nsccn_command()
    log = tmp_path / "server.log"
    transport = StdioTransport(cmd, pre + ["mcp", "--root", str(repo)], keep_alive=False, log_file=log)
    bad_query = pathological_traceback(1 << 20, depth=400)

    async def main():
        async with Client(transport, timeout=60) as c:
            await c.call_tool("index_status", {})  # the session is up
            bad = asyncio.create_task(c.call_tool("search_and_rank", {"query": bad_query}, raise_on_error=False))
            await asyncio.sleep(0.5)  # the 1 MB request is on its way or running
            t = time.monotonic()
            good = await c.call_tool("find_symbol", {"name": "validate_token"})
            good_s = time.monotonic() - t
            assert good.structured_content["total"] == 1
            assert good_s < 5, f"a good call waited {good_s:.1f} s behind the pathological one"
            res = await bad
            text = res.content[0].text
            if res.is_error:  # stopped by the time budget: a clear one-line error
                assert "time budget" in text and "Traceback" not in text
            else:
                assert "innermost 100 of" in res.structured_content["query_capped"]

    asyncio.run(main())
    assert "Traceback" not in log.read_text()


def _generated_repo(root: Path, files: int = 40, functions: int = 100) -> Path:
    """Enough entities (4,000) that whole-index SQL statements run past a tiny time budget."""
    for f in range(files):
        p = root / "pkg" / f"mod{f}.py"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("".join(f"def fn_{f}_{i}(x):\n    return fn_{f}_{i + 1}(x) + helper(x)\n\n" for i in range(functions))
                     + "def helper(x):\n    return x\n")
    index_repository(root, workers=1)
    return root


def test_a_call_past_its_time_budget_is_a_clear_error_and_the_server_goes_on(tmp_path):
    repo = _generated_repo(tmp_path / "gen")
    # The time budget is the user's setting (a repository's own config may not set it).
    user_config = tmp_path / "user-config.json"
    user_config.write_text(json.dumps({"tool_time_budget_s": 0.001}))
    cmd, pre = nsccn_command()
    log = tmp_path / "server.log"
    transport = StdioTransport(cmd, pre + ["mcp", "--root", str(repo)], keep_alive=False, log_file=log,
                               env=dict(os.environ, NSCCN_CONFIG=str(user_config)))

    async def main():
        async with Client(transport, timeout=60) as c:
            for _ in range(2):  # the interrupted connection serves the next call as well
                with pytest.raises(ToolError) as exc:
                    await c.call_tool("search_and_rank", {"query": "fn helper", "limit": 100})
                msg = str(exc.value)
                assert "search_and_rank stopped: it ran past its time budget of 0.001 s" in msg
                assert "\n" not in msg and "Traceback" not in msg
            # a cheap call: answered, or (the budget is tiny) stopped the same clean way, never stuck
            refs = await c.call_tool("find_references", {"entity_id": "func:pkg/mod0.py:fn_0_1"}, raise_on_error=False)
            if refs.is_error:
                assert "find_references stopped: it ran past its time budget" in refs.content[0].text
            else:
                assert refs.structured_content["total"] == 1

    asyncio.run(main())
    assert "Traceback" not in log.read_text()
