"""The MCP front, in process: a real fastmcp Client talking to the server over the in-memory transport.

Fixture repositories are small Python packages written into tmp_path and indexed with the library.
The stdio subprocess tests are in test_mcp_stdio.py.
"""

import asyncio
import json
import os
import re
import textwrap
import time
from pathlib import Path

import pytest
from fastmcp import Client
from fastmcp.exceptions import ToolError

from nsccn.indexing.indexer import index_repository
from nsccn.serving.mcp_server import create_server, render_json
from nsccn.tokens import count_tokens

TOOLS = {
    "search_and_rank", "read_skeleton", "trace_causal_path", "open_surgical_window", "repo_map",
    "find_symbol", "find_references", "assemble_context", "index_status", "localize_issue", "detect_changes",
}


def _big_module(n: int = 120) -> str:
    """A long chain of documented functions (f0 -> f1 -> ...), all calling `helper`, and a big class."""
    out = ['"""A generated module, long enough to overflow small caps."""\n\n\ndef helper(x):\n    """Shared helper."""\n    return x + 1\n']
    for i in range(n):
        nxt = f"    y = f{i + 1}(y)\n" if i + 1 < n else ""
        out.append(
            f"\n\ndef f{i}(value: int, scale: float = 1.0) -> int:\n"
            f'    """Step {i} of the pipeline: scales the value and hands it to the next step."""\n'
            f"    y = helper(value) * scale\n{nxt}    return int(y)\n"
        )
    out.append('\n\nclass Giant:\n    """A class with many methods."""\n')
    for i in range(60):
        out.append(f"\n    def m{i}(self, a, b=2):\n        \"\"\"Method {i}.\"\"\"\n        c = a + b + {i}\n        return helper(c)\n")
    return "".join(out)


ACME = {
    "acme/__init__.py": '"""The acme package."""\nfrom .auth import AuthService\n',
    "acme/config.py": """
        import os

        TIMEOUT = 30
        API_URL = os.environ.get("ACME_API_URL", "http://localhost")
    """,
    "acme/errors.py": """
        class AcmeError(Exception):
            \"\"\"Base error.\"\"\"


        class AuthError(AcmeError):
            \"\"\"Authentication failed.\"\"\"
    """,
    "acme/auth.py": """
        \"\"\"Authentication: tokens and sessions.\"\"\"
        from .config import TIMEOUT
        from .errors import AuthError


        def check_expiry(token):
            \"\"\"Is the token still valid?\"\"\"
            return token.get("exp", 0) > TIMEOUT


        def verify_signature(token):
            \"\"\"Does the token carry a good signature?\"\"\"
            return token.get("sig") == "ok"


        def validate_token(token: dict) -> bool:
            \"\"\"Validate a JWT token: signature, then expiry.\"\"\"
            if not verify_signature(token):
                raise AuthError("bad signature")
            return check_expiry(token)


        class AuthService:
            \"\"\"Handles authentication and sessions.\"\"\"

            def __init__(self, secret: str):
                self.secret = secret
                self.sessions = {}

            def login(self, user, token):
                \"\"\"Log a user in when the token validates.\"\"\"
                if validate_token(token):
                    self.sessions[user] = token
                    return True
                return False
    """,
    "acme/api.py": """
        from .auth import AuthService, validate_token


        def handle_login(request):
            \"\"\"HTTP handler: log in.\"\"\"
            service = AuthService("s3cret")
            return service.login(request["user"], request["token"])


        def handle_check(request):
            \"\"\"HTTP handler: check a token.\"\"\"
            return validate_token(request["token"])
    """,
    "acme/big.py": _big_module(),
}


def write_repo(root: Path, files: dict[str, str]) -> Path:
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(content).lstrip("\n"))
    return root


def make_repo(root: Path, cap: int | None = None, index: bool = True) -> Path:
    write_repo(root, ACME)
    if cap is not None:
        (root / ".nsccn").mkdir(parents=True, exist_ok=True)
        (root / ".nsccn" / "config.json").write_text(json.dumps({"result_token_cap": cap}))
    if index:
        index_repository(root, workers=1)
    return root


def touch_later(path: Path) -> None:
    """Make sure a rewrite is seen as a change even on coarse mtime clocks."""
    st = path.stat()
    os.utime(path, (st.st_atime, st.st_mtime + 2))


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    return make_repo(tmp_path_factory.mktemp("mcp") / "acme_repo")


@pytest.fixture(scope="module")
def server(repo):
    return create_server(repo)


def run(server, script):
    """Run `script(client)` in one MCP session against `server`."""

    async def main():
        async with Client(server) as client:
            return await script(client)

    return asyncio.run(main())


def call(server, tool: str, **args):
    """(text, structured) of one tool call."""

    async def script(c):
        r = await c.call_tool(tool, args)
        assert not r.is_error
        assert len(r.content) == 1
        return r.content[0].text, r.structured_content

    return run(server, script)


def call_error(server, tool: str, **args) -> str:
    async def script(c):
        with pytest.raises(ToolError) as exc:
            await c.call_tool(tool, args)
        return str(exc.value)

    msg = run(server, script)
    assert "Traceback" not in msg and 'File "' not in msg
    return msg


# -- listing ----------------------------------------------------------------------------------------


def test_lists_the_tools_with_guidance_and_bounds(server):
    async def script(c):
        return await c.list_tools(), c.instructions

    tools, instructions = run(server, script)
    by_name = {t.name: t for t in tools}
    assert set(by_name) == TOOLS
    for t in tools:
        assert t.description and len(t.description) < 700
        assert t.annotations.read_only_hint is True
    # when to use which: the descriptions name the zoom-in order
    assert "search_and_rank" in by_name["read_skeleton"].description or "open_surgical_window" in by_name["read_skeleton"].description
    assert "trace_causal_path" in by_name["search_and_rank"].description
    props = by_name["trace_causal_path"].input_schema["properties"]
    assert props["depth"]["minimum"] == 1 and props["depth"]["maximum"] == 10 and props["depth"]["default"] == 3
    assert props["direction"]["enum"] == ["downstream", "upstream", "state", "all"]
    assert by_name["search_and_rank"].input_schema["required"] == ["query"]
    assert by_name["open_surgical_window"].input_schema["properties"]["context_lines"]["default"] == 5
    assert by_name["repo_map"].input_schema["properties"]["max_tokens"]["default"] == 1024
    assert by_name["assemble_context"].input_schema["properties"]["max_tokens"]["default"] == 8000
    assert "repo_map" in instructions and "open_surgical_window" in instructions


# -- each tool --------------------------------------------------------------------------------------


def test_search_and_rank_spec_shape_and_paging(server):
    text, data = call(server, "search_and_rank", query="validate token signature", limit=3)
    assert json.loads(text) == data
    first = data["results"][0]
    assert set(first) >= {"id", "score", "sig", "file", "line"}
    ids = [r["id"] for r in data["results"]]
    assert "func:acme/auth.py:validate_token" in ids
    hit = next(r for r in data["results"] if r["id"] == "func:acme/auth.py:validate_token")
    assert hit["sig"] == "def validate_token(token: dict) -> bool" and hit["file"] == "acme/auth.py" and hit["line"] == 16
    assert "offset=3" in data["more"]
    _, page2 = call(server, "search_and_rank", query="validate token signature", limit=3, offset=3)
    assert not set(ids) & {r["id"] for r in page2["results"]}
    _, only = call(server, "search_and_rank", query="auth", kinds=["class"])
    assert only["results"] and all(r["kind"] == "class" for r in only["results"])
    _, diverse = call(server, "search_and_rank", query="validate token signature", limit=3, diversity=0.9)
    assert diverse["results"][0]["id"] == ids[0]  # the best hit stays first
    assert len({r["file"] for r in diverse["results"]}) > len({r["file"] for r in data["results"]})


def test_a_pasted_bug_report_is_not_echoed_back_in_full(server):
    report = ("Login fails for valid users.\n" + "Some long log line that says nothing useful. " * 800
              + '\nTraceback (most recent call last):\n  File "acme/auth.py", line 19, in validate_token\n'
              "acme.errors.AuthError: bad signature\n")
    text, data = call(server, "search_and_rank", query=report, limit=5)
    assert count_tokens(text) < 1500 and len(data["query"]) <= 200
    assert data["results"][0]["id"] == "func:acme/auth.py:validate_token"


def test_localize_issue_ranks_the_files_and_functions_to_change(server):
    report = ("Login accepts tokens whose signature is wrong when they are not expired yet.\n"
              "I expected AuthError('bad signature') from the signature check.\n" + "log line " * 300)
    text, data = call(server, "localize_issue", report=report, limit=3)
    assert json.loads(text) == data
    assert data["files"][0] == "acme/auth.py" and len(data["files"]) <= 3
    ids = [f["id"] for f in data["functions"]]
    assert {"func:acme/auth.py:verify_signature", "func:acme/auth.py:validate_token"} & set(ids[:2])
    first = data["functions"][0]
    assert set(first) >= {"id", "sig", "file", "line"} and first["line"] > 1
    assert len(data["report"]) <= 200 and "bm25" in data["signals"]


def test_read_skeleton_elides_bodies_and_counts_tokens(server, repo):
    text, data = call(server, "read_skeleton", file_path="acme/auth.py")
    assert text.startswith("# acme/auth.py: skeleton")
    assert "def validate_token(token: dict) -> bool:" in text
    assert '"""Validate a JWT token: signature, then expiry."""' in text
    assert "raise AuthError" not in text and "..." in text
    assert data["tokens"] == count_tokens(data["skeleton"]) and data["source_tokens"] > data["tokens"]
    # an absolute path inside the repository is accepted
    _, same = call(server, "read_skeleton", file_path=str(repo / "acme" / "auth.py"))
    assert same["skeleton"] == data["skeleton"]


def test_trace_causal_path_edges_carry_relation_and_confidence(server):
    text, data = call(server, "trace_causal_path", entity_id="method:acme/auth.py:AuthService.login")
    assert json.loads(text) == data
    assert data["root"] == "method:acme/auth.py:AuthService.login" and data["direction"] == "downstream" and data["depth"] == 3
    first = {e["target"]: e for e in data["adjacency_list"]["method:acme/auth.py:AuthService.login"]}
    assert first["func:acme/auth.py:validate_token"]["relation"] == "CALLS"
    assert first["func:acme/auth.py:validate_token"]["confidence"] == 1.0
    second = {e["target"] for e in data["adjacency_list"]["func:acme/auth.py:validate_token"]}
    assert {"func:acme/auth.py:verify_signature", "func:acme/auth.py:check_expiry"} <= second
    assert data["entities"]["func:acme/auth.py:check_expiry"]["signature"] == "def check_expiry(token)"
    assert data["entities"]["func:acme/auth.py:check_expiry"]["hops"] == 2
    _, up = call(server, "trace_causal_path", entity_id="func:acme/auth.py:validate_token", direction="upstream", depth=1)
    callers = {e["source"] for e in up["adjacency_list"]["func:acme/auth.py:validate_token"]}
    assert callers == {"method:acme/auth.py:AuthService.login", "func:acme/api.py:handle_check"}
    _, state = call(server, "trace_causal_path", entity_id="func:acme/auth.py:check_expiry", direction="state")
    assert any(e["relation"] == "READS_CONFIG" for e in state["adjacency_list"].get("func:acme/auth.py:check_expiry", []))


def test_open_surgical_window_exact_numbered_lines(server, repo):
    text, data = call(server, "open_surgical_window", entity_id="func:acme/auth.py:validate_token", context_lines=0)
    assert (data["start"], data["end"]) == (16, 20)
    src = (repo / "acme/auth.py").read_text().splitlines()
    expected = "".join(f"{n} | {src[n - 1]}\n" for n in range(16, 21))
    assert data["code"] == expected
    assert text.endswith(expected) and text.startswith("# func:acme/auth.py:validate_token  acme/auth.py:16-20")
    _, wide = call(server, "open_surgical_window", entity_id="func:acme/auth.py:validate_token")
    assert wide["shown"] == [11, 25]


def test_repo_map_symbol_references_context_status(server):
    text, data = call(server, "repo_map", max_tokens=300)
    assert count_tokens(text) <= 300 and "acme/" in data["map"]
    _, focused = call(server, "repo_map", max_tokens=200, focus=["acme/auth.py"])
    assert focused["map"].startswith("acme/auth.py:")

    _, sym = call(server, "find_symbol", name="AuthService.login")
    assert [d["id"] for d in sym["definitions"]] == ["method:acme/auth.py:AuthService.login"]
    _, dotted = call(server, "find_symbol", name="acme.auth.validate_token")
    assert dotted["definitions"][0]["id"] == "func:acme/auth.py:validate_token"

    _, refs = call(server, "find_references", entity_id="func:acme/auth.py:validate_token")
    sites = {(r["from"], r["relation"], r["file"]) for r in refs["references"]}
    assert ("method:acme/auth.py:AuthService.login", "CALLS", "acme/auth.py") in sites
    assert ("func:acme/api.py:handle_check", "CALLS", "acme/api.py") in sites
    assert any(r["relation"] == "IMPORTS" for r in refs["references"])
    assert all(isinstance(r["line"], int) and 0 <= r["confidence"] <= 1 for r in refs["references"])

    text, ctx = call(server, "assemble_context", query="login fails when the token signature is bad", max_tokens=600)
    assert count_tokens(text) <= 600
    assert "validate_token" in text

    text, st = call(server, "index_status")
    assert st["indexed"] and st["files"] == len(ACME) and st["entities"] > 100 and st["edges"] > 0
    assert st["stale_files"]["changed"] == 0 and st["server"]["result_token_cap"] == 8000
    assert json.loads(text) == st


# -- bad input: tool errors with the valid range or the closest ids, never a stack trace ------------


@pytest.mark.parametrize(
    "tool,args,expect",
    [
        ("trace_causal_path", {"entity_id": "func:acme/auth.py:validate_tokn"}, "did you mean: func:acme/auth.py:validate_token"),
        ("open_surgical_window", {"entity_id": "validate_tok"}, "did you mean: func:acme/auth.py:validate_token"),
        ("find_references", {"entity_id": ""}, "entity_id is empty"),
        ("trace_causal_path", {"entity_id": "func:acme/auth.py:validate_token", "depth": 0}, "between 1 and 10, not 0"),
        ("trace_causal_path", {"entity_id": "func:acme/auth.py:validate_token", "depth": 50}, "between 1 and 10, not 50"),
        ("trace_causal_path", {"entity_id": "func:acme/auth.py:validate_token", "direction": "sideways"}, "one of ['downstream'"),
        ("trace_causal_path", {"entity_id": "func:acme/auth.py:validate_token", "relations": ["CALL"]}, "valid: ['CALLS'"),
        ("trace_causal_path", {"entity_id": "func:acme/auth.py:validate_token", "min_confidence": 2}, "between 0 and 1"),
        ("read_skeleton", {"file_path": "../../etc/passwd"}, "is outside the repository"),
        ("read_skeleton", {"file_path": "/etc/passwd"}, "outside the repository"),
        ("read_skeleton", {"file_path": "acme/auht.py"}, "did you mean: acme/auth.py"),
        ("read_skeleton", {"file_path": "acme/auth.py", "offset": 10_000}, "offset must be below"),
        ("search_and_rank", {"query": ""}, "query is empty"),
        ("search_and_rank", {"query": "   "}, "query is empty"),
        ("search_and_rank", {"query": "token", "limit": -1}, "between 1 and 100, not -1"),
        ("search_and_rank", {"query": "token", "limit": 1000}, "between 1 and 100, not 1000"),
        ("search_and_rank", {"query": "token", "offset": -5}, "0 or more"),
        ("search_and_rank", {"query": "token", "kinds": ["function"]}, "valid kinds"),
        ("search_and_rank", {"query": "token", "diversity": 1.5}, "diversity must be between 0 and 1"),
        ("search_and_rank", {"query": "token", "limit": "ten"}, "limit"),
        ("search_and_rank", {}, "query is required"),
        ("search_and_rank", {"query": "token", "colour": "red"}, "colour is not a parameter"),
        ("open_surgical_window", {"entity_id": "func:acme/auth.py:validate_token", "context_lines": 500}, "between 0 and 200"),
        ("open_surgical_window", {"entity_id": "func:acme/auth.py:validate_token", "from_line": 99}, "from_line must be between"),
        ("find_symbol", {"name": "validate_tokn"}, "did you mean: validate_token"),
        ("find_symbol", {"name": ""}, "name is empty"),
        ("find_references", {"entity_id": "func:acme/auth.py:validate_token", "limit": 0}, "between 1 and 500"),
        ("repo_map", {"max_tokens": 10}, "between 64 and 8000"),
        ("repo_map", {"max_tokens": 100_000}, "between 64 and 8000"),
        ("repo_map", {"focus": ["no/such.py"]}, "none of the focus items"),
        ("assemble_context", {"query": "x", "max_tokens": 50}, "between 200 and 8000"),
        ("localize_issue", {"report": " "}, "report is empty"),
        ("localize_issue", {"report": "token", "limit": 51}, "between 1 and 50, not 51"),
        ("localize_issue", {}, "report is required"),
        ("assemble_context", {"query": ""}, "query is empty"),
    ],
)
def test_bad_input_is_a_clear_tool_error(server, tool, args, expect):
    msg = call_error(server, tool, **args)
    assert expect in msg, msg


def test_internal_failure_is_a_tool_error_without_stack_trace(repo):
    server = create_server(repo)

    def boom(*a, **k):
        raise KeyError("corrupt row")

    server._nsccn.nav.search = boom
    msg = call_error(server, "search_and_rank", query="token")
    assert "search_and_rank failed inside NSCCN" in msg and "KeyError" in msg


# -- caps -------------------------------------------------------------------------------------------


CAP = 400


@pytest.fixture(scope="module")
def capped(tmp_path_factory):
    repo = make_repo(tmp_path_factory.mktemp("mcp_cap") / "acme_repo", cap=CAP)
    return repo, create_server(repo)


def test_every_answer_stays_under_the_cap_and_says_how_to_continue(capped):
    repo, server = capped

    async def script(c):
        out = {}
        calls = {
            "search_and_rank": {"query": "step of the pipeline scales the value", "limit": 100},
            "read_skeleton": {"file_path": "acme/big.py"},
            "trace_causal_path": {"entity_id": "func:acme/big.py:f0", "depth": 10},
            "open_surgical_window": {"entity_id": "class:acme/big.py:Giant"},
            "repo_map": {"max_tokens": CAP},
            "find_symbol": {"name": "helper", "limit": 100},
            "find_references": {"entity_id": "func:acme/big.py:helper", "limit": 500},
            "assemble_context": {"query": "pipeline step scale", "max_tokens": CAP},
            "index_status": {},
            "localize_issue": {"report": "each step of the pipeline scales the value " * 20, "limit": 50},
        }
        for tool, args in calls.items():
            r = await c.call_tool(tool, args)
            out[tool] = (r.content[0].text, r.structured_content)
        return out

    out = run(server, script)
    for tool, (text, data) in out.items():
        assert count_tokens(text) <= CAP, (tool, count_tokens(text))
    assert "offset=" in out["search_and_rank"][1]["truncated"]
    assert "offset=" in out["read_skeleton"][1]["truncated"]
    assert "nearest" in out["trace_causal_path"][1]["truncated"]
    assert "from_line=" in out["open_surgical_window"][1]["truncated"]
    assert "method:acme/big.py:Giant.m0" in out["open_surgical_window"][1]["truncated"]
    assert "offset=" in out["find_references"][1]["more"]
    assert "cap" in out["localize_issue"][1]["truncated"] and out["localize_issue"][1]["files"]
    assert json.loads(out["trace_causal_path"][0]) == out["trace_causal_path"][1]


def test_following_the_continuation_yields_everything(capped):
    repo, server = capped

    async def script(c):
        # skeleton pages
        pages, offset = [], 0
        while True:
            r = (await c.call_tool("read_skeleton", {"file_path": "acme/big.py", "offset": offset})).structured_content
            pages.append(r["skeleton"])
            if "truncated" not in r:
                break
            offset = int(re.search(r"offset=(\d+)", r["truncated"]).group(1))
        # window pages
        lines, nxt = [], None
        while True:
            args = {"entity_id": "class:acme/big.py:Giant", "context_lines": 0}
            if nxt:
                args["from_line"] = nxt
            r = (await c.call_tool("open_surgical_window", args)).structured_content
            lines.append(r["code"])
            if "truncated" not in r:
                break
            nxt = int(re.search(r"from_line=(\d+)", r["truncated"]).group(1))
        # reference pages
        refs, off = [], 0
        while True:
            r = (await c.call_tool("find_references", {"entity_id": "func:acme/big.py:helper", "limit": 500, "offset": off})).structured_content
            refs += r["references"]
            if "more" not in r:
                break
            off = len(refs)
        return pages, lines, refs, r["total"]

    pages, lines, refs, total = run(server, script)
    from nsccn.serving.navigator import Navigator

    nav = Navigator(repo)
    try:
        assert "".join(pages) == nav.skeleton("acme/big.py").skeleton
        assert "".join(lines) == nav.window("class:acme/big.py:Giant", 0).code
        assert len(refs) == total == nav.find_references("func:acme/big.py:helper").total
        assert len({(r["from"], r["line"], r["relation"]) for r in refs}) == total
    finally:
        nav.close()


def test_render_json_is_valid_and_one_record_per_line():
    data = {"a": [{"x": 1, "l": [1, 2]}, {"x": 2, "l": []}], "b": {"k": {"s": "t"}}, "c": 3, "d": []}
    text = render_json(data)
    assert json.loads(text) == data
    assert '{"x": 1, "l": [1, 2]}' in text.splitlines()[2]


# -- freshness: stale notes, re-indexing mid-session, partial pipeline ------------------------------


def test_edit_then_reindex_during_a_session_shows_up(tmp_path):
    repo = make_repo(tmp_path / "r")
    server = create_server(repo)
    auth = repo / "acme" / "auth.py"

    async def script(c):
        before = (await c.call_tool("open_surgical_window", {"entity_id": "func:acme/auth.py:check_expiry", "context_lines": 0})).structured_content
        assert "stale" not in before
        # edit on disk, not yet re-indexed: answers say so
        auth.write_text('"""Moved down."""\n\n\n' + auth.read_text() + textwrap.dedent('''

            def revoke_token(token):
                """Revoke a token so that it no longer validates."""
                token["revoked"] = True
                return check_expiry(token)
        '''))
        touch_later(auth)
        stale_win = (await c.call_tool("open_surgical_window", {"entity_id": "func:acme/auth.py:check_expiry", "context_lines": 0})).structured_content
        assert "stale" in stale_win  # and the lines where the function is now, found by re-parsing
        assert stale_win["start"] == before["start"] + 3 and stale_win["code"].split("| ", 1)[1].startswith("def check_expiry")
        stale_trace = (await c.call_tool("trace_causal_path", {"entity_id": "func:acme/auth.py:check_expiry"})).structured_content
        assert "acme/auth.py" in stale_trace["stale"]
        stale_search = (await c.call_tool("search_and_rank", {"query": "check expiry"})).structured_content
        assert "acme/auth.py" in stale_search["stale"]
        stale_text = (await c.call_tool("read_skeleton", {"file_path": "acme/auth.py"})).content[0].text
        assert "# note:" in stale_text
        status = (await c.call_tool("index_status", {})).structured_content
        assert status["stale_files"]["changed"] == 1
        # re-index while the session is open: later answers see the new code
        index_repository(repo, workers=1)
        found = (await c.call_tool("search_and_rank", {"query": "revoke token"})).structured_content
        # Found now (first by BM25 and by the vectors; the fusion's PageRank nudge can put the much
        # called validate_token beside it).
        assert "func:acme/auth.py:revoke_token" in [r["id"] for r in found["results"][:2]]
        assert "stale" not in found
        after = (await c.call_tool("open_surgical_window", {"entity_id": "func:acme/auth.py:check_expiry", "context_lines": 0})).structured_content
        assert after["start"] == before["start"] + 3 and "stale" not in after
        up = (await c.call_tool("trace_causal_path", {"entity_id": "func:acme/auth.py:check_expiry", "direction": "upstream", "depth": 1})).structured_content
        assert "func:acme/auth.py:revoke_token" in {e["source"] for e in up["adjacency_list"]["func:acme/auth.py:check_expiry"]}
        skel = (await c.call_tool("read_skeleton", {"file_path": "acme/auth.py"})).structured_content
        assert "def revoke_token(token):" in skel["skeleton"] and "stale" not in skel

    run(server, script)


def test_index_created_or_rebuilt_mid_session(tmp_path):
    repo = make_repo(tmp_path / "r", index=False)
    server = create_server(repo)

    async def script(c):
        st = (await c.call_tool("index_status", {})).structured_content
        assert st["indexed"] is False and "nsccn index" in st["hint"]
        with pytest.raises(ToolError, match="nsccn index"):
            await c.call_tool("search_and_rank", {"query": "token"})
        index_repository(repo, workers=1)
        r = (await c.call_tool("find_symbol", {"name": "validate_token"})).structured_content
        assert r["total"] == 1
        # a full rebuild replaces the database file: the server follows it
        (repo / "acme" / "extra.py").write_text("def brand_new():\n    return 1\n")
        for p in (repo / ".nsccn").glob("index.db*"):
            p.unlink()
        index_repository(repo, workers=1)
        r = (await c.call_tool("find_symbol", {"name": "brand_new"})).structured_content
        assert r["definitions"][0]["id"] == "func:acme/extra.py:brand_new"

    run(server, script)


def test_partial_pipeline_is_reported(repo):
    state = {"files_pending": 7, "actors": {"parser-0": "alive"}}
    server = create_server(repo, status_provider=lambda: dict(state))

    async def script(c):
        r = (await c.call_tool("search_and_rank", {"query": "token"})).structured_content
        assert "files pending: 7" in r["partial"]
        st = (await c.call_tool("index_status", {})).structured_content
        assert st["pipeline"]["actors"] == {"parser-0": "alive"} and "partial" in st
        state["files_pending"] = 0
        server._nsccn._pipeline = None  # drop the 1 s cache
        r = (await c.call_tool("search_and_rank", {"query": "token"})).structured_content
        assert "partial" not in r

    run(server, script)


def test_pending_vectors_are_noted_only_where_vectors_answer(repo):
    """References, skeletons and traces never read vectors: vectors still being embedded do not make
    them partial; a search (which does read them) says so."""
    server = create_server(repo, status_provider=lambda: {"vectors_pending": 40, "partial": True, "state": "embedding"})

    async def script(c):
        r = (await c.call_tool("search_and_rank", {"query": "token"})).structured_content
        assert "vectors pending: 40" in r["partial"]
        refs = (await c.call_tool("find_references", {"entity_id": "func:acme/auth.py:validate_token"})).structured_content
        assert refs["total"] >= 2 and "partial" not in refs
        sym = (await c.call_tool("find_symbol", {"name": "validate_token"})).structured_content
        assert "partial" not in sym

    run(server, script)


def test_broken_status_provider_does_not_break_queries(repo):
    def broken():
        raise ConnectionError("control socket gone")

    server = create_server(repo, status_provider=broken)
    _, st = call(server, "index_status")
    assert "control socket gone" in st["pipeline"]["error"]
    _, r = call(server, "search_and_rank", query="token")
    assert r["results"]


def test_embedder_is_passed_to_the_navigator(repo):
    class FakeEmbedder:
        model_id = "fake"

        def embed_query(self, text):
            return [0.0] * 8

    server = create_server(repo, embedder=FakeEmbedder())
    assert server._nsccn.nav.embedder.model_id == "fake"
    _, st = call(server, "index_status")
    assert st["server"]["query_embedding"] is True


def test_queries_are_fast_in_process(server):
    async def script(c):
        t = time.perf_counter()
        for _ in range(5):
            await c.call_tool("trace_causal_path", {"entity_id": "func:acme/auth.py:validate_token"})
            await c.call_tool("open_surgical_window", {"entity_id": "func:acme/auth.py:validate_token"})
        return (time.perf_counter() - t) / 10

    assert run(server, script) < 0.25


def test_graph_answers_say_when_written_files_are_not_resolved_yet(tmp_path):
    """A commit that wrote files leaves the resolve marker until their references are resolved (a
    writer busy resolving, or a run that stopped first): the graph tools say so, in the data and
    in the text, and stop saying it once a run has resolved them; the other tools are unaffected."""
    from nsccn.store import Store

    repo = make_repo(tmp_path / "r")
    server = create_server(repo)
    db = repo / ".nsccn" / "index.db"
    with Store(db) as store:
        store.set_meta("resolve_pending", "1")

    async def script(c):
        calls = {"trace_causal_path": {"entity_id": "func:acme/auth.py:check_expiry", "direction": "upstream"},
                 "find_references": {"entity_id": "func:acme/auth.py:check_expiry"},
                 "repo_map": {"max_tokens": 512}, "assemble_context": {"query": "token expiry", "max_tokens": 2000}}
        for tool, args in calls.items():
            r = await c.call_tool(tool, args)
            assert "edges may be missing or out of date" in r.structured_content["unresolved"], tool
            assert "out of date" in r.content[0].text, tool
        window = (await c.call_tool("open_surgical_window", {"entity_id": "func:acme/auth.py:check_expiry"})).structured_content
        assert "unresolved" not in window
        index_repository(repo, workers=1)  # the next run resolves them
        for tool, args in calls.items():
            assert "unresolved" not in (await c.call_tool(tool, args)).structured_content, tool

    run(server, script)
