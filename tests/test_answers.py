"""The Navigator's answers are typed (nsccn.serving.answers): every answer of a real index holds
the types its Struct declares (a round trip through plain data gives it back), and the tools'
renderers, the MCP answer and the command's printout, read only fields an answer declares (a
Struct has no other attribute: a misspelt or missing field fails here, on a fresh index and on one
whose files changed since, where the notes are set).
"""

from __future__ import annotations

import asyncio
import difflib

import msgspec
import pytest
from fastmcp import Client

from nsccn.serving import answers
from nsccn.serving.answers import plain
from nsccn.serving.mcp_server import create_server
from nsccn.serving.navigator import Navigator
from nsccn_cli import main as nsccn
from test_mcp_server import make_repo

LOGIN = "method:acme/auth.py:AuthService.login"
VALIDATE = "func:acme/auth.py:validate_token"
REPORT = "login accepts a token whose signature is wrong: AuthError('bad signature') never raised"


def calls(root) -> list[tuple[type, str, tuple, dict, str, dict, list[str]]]:
    """(answer type, Navigator method, args, keywords, MCP tool, its arguments, the command line)
    of every typed answer; the change for `impact`: verify_signature's body, as a diff."""
    auth = (root / "acme/auth.py").read_text()
    diff = "".join(difflib.unified_diff(auth.splitlines(True), auth.replace('== "ok"', '== "OK"').splitlines(True),
                                        "a/acme/auth.py", "b/acme/auth.py"))
    (root.parent / "change.diff").write_text(diff)
    return [
        (answers.SearchAnswer, "search", ("validate token signature",), {"limit": 3},
         "search_and_rank", {"query": "validate token signature", "limit": 3},
         ["search", "validate token signature", "--limit", "3"]),
        (answers.LocalizeAnswer, "localize", (REPORT,), {"limit": 3},
         "localize_issue", {"report": REPORT, "limit": 3}, ["localize", REPORT, "--limit", "3"]),
        (answers.SkeletonAnswer, "skeleton", ("acme/auth.py",), {},
         "read_skeleton", {"file_path": "acme/auth.py"}, ["skeleton", "acme/auth.py", "--tokens"]),
        (answers.TraceAnswer, "trace", (LOGIN, "all"), {},
         "trace_causal_path", {"entity_id": LOGIN, "direction": "all"}, ["trace", LOGIN, "--direction", "all"]),
        (answers.WindowAnswer, "window", (LOGIN,), {}, "open_surgical_window", {"entity_id": LOGIN}, ["window", LOGIN]),
        (answers.SymbolAnswer, "find_symbol", ("login",), {}, "find_symbol", {"name": "login"}, ["symbol", "login"]),
        (answers.ReferencesAnswer, "find_references", (VALIDATE,), {"limit": 1},
         "find_references", {"entity_id": VALIDATE, "limit": 1}, ["refs", VALIDATE, "--limit", "1"]),
        (answers.RepoMapAnswer, "repo_map", (), {"max_tokens": 300},
         "repo_map", {"max_tokens": 300}, ["map", "--max-tokens", "300"]),
        (answers.ImpactAnswer, "impact", (), {"diff": diff},
         "detect_changes", {"diff": diff}, ["impact", "--diff", str(root.parent / "change.diff")]),
        (answers.ContextAnswer, "assemble_context", ("validate the token signature",), {"max_tokens": 600},
         "assemble_context", {"query": "validate the token signature", "max_tokens": 600},
         ["context", "validate the token signature", "--max-tokens", "600"]),
    ]


@pytest.fixture(scope="module", params=["fresh", "edited"])
def acme(request, tmp_path_factory):
    """The acme repository indexed; `edited`: auth.py then changed on disk (every note set)."""
    root = make_repo(tmp_path_factory.mktemp("answers") / "acme")
    if request.param == "edited":
        auth = root / "acme/auth.py"
        auth.write_text("import sys\n\n\n" + auth.read_text())
    return root


def edited(root) -> bool:
    return (root / "acme/auth.py").read_text().startswith("import sys")


def test_every_answer_holds_its_declared_types(acme):
    nav = Navigator(acme)
    try:
        for kind, method, args, kw, *_ in calls(acme):
            ans = getattr(nav, method)(*args, **kw)
            assert type(ans) is kind, method
            assert msgspec.convert(plain(ans), kind) == ans, method  # every value of the declared type
            with pytest.raises(AttributeError):  # no field but the declared ones, not even a misspelt note
                ans.stael = "x"
    finally:
        nav.close()


def test_the_renderers_read_only_declared_fields(acme, capsys):
    """Both renderings of each typed answer run (an undeclared field read raises AttributeError: an
    internal error over MCP, a traceback on the command line)."""
    made = calls(acme)

    async def mcp():
        async with Client(create_server(acme)) as c:
            return [(tool, await c.call_tool_mcp(tool, args)) for _, _, _, _, tool, args, _ in made]

    for tool, r in asyncio.run(mcp()):
        assert not r.is_error, (tool, r.content[0].text)
        if edited(acme):  # the notes were rendered
            assert "changed" in r.content[0].text, tool
    notes = ""
    for *_, argv in made:
        for extra in ([], ["--json"]):
            code = nsccn([*argv, "--root", str(acme), *extra])
            notes += capsys.readouterr().err
            assert code == 0, (argv, notes)
    assert ("changed" in notes) == edited(acme)
