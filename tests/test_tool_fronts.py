"""One table of tools (issue 40): a parameter's limits are declared once (nsccn.serving.params),
so the command line (a real `nsccn` process) and MCP (a real client over stdio, `nsccn mcp`) answer
a bad value with the same message, and both take every value the declaration allows.

The cases are made from the declarations: for every tool that is both a command and an MCP tool,
every parameter on both fronts gets a value below and above its bounds, a word for a number, a
value outside its choices, a blank string where one is refused; and each tool is called once with
every parameter at its lower bound and once at its upper. A bound added in one place only (an
argparse `choices`, a check in the Navigator or in one tool's answer, a schema maximum) makes one
front refuse what the other takes, or say it differently, and this test fails.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from nsccn.errors import ArgumentError
from nsccn.indexing.indexer import index_repository
from nsccn.serving.params import CAP, POSITIONAL, REQUIRED, Param
from nsccn.serving.tools import MCP_TOOLS, Tool
from test_mcp_server import make_repo

NSCCN = Path(sys.executable).parent / "nsccn"
CAP_TOKENS = 8000  # the default result_token_cap
LOGIN = "method:acme/auth.py:AuthService.login"

# A valid value for each tool's required parameters (a new tool with a required parameter needs one here).
REQUIRED_VALUES = {
    "search_and_rank": {"query": "validate token"},
    "localize_issue": {"report": "login accepts a token whose signature is wrong"},
    "read_skeleton": {"file_path": "acme/auth.py"},
    "trace_causal_path": {"entity_id": LOGIN},
    "open_surgical_window": {"entity_id": LOGIN},
    "find_symbol": {"name": "login"},
    "find_references": {"entity_id": "func:acme/auth.py:validate_token"},
    "assemble_context": {"query": "validate the token signature"},
}

BOTH = [t for t in MCP_TOOLS if t.command]


def shared(tool: Tool) -> list[Param]:
    """The parameters both fronts take, with limits known before the call."""
    return [p for p in tool.params if p.mcp and p.cli is not None and p.check]


def bound(p: Param, which: str) -> float | None:
    lo, hi = p.bounds(CAP_TOKENS)
    return lo if which == "lo" else hi


def bad_values(p: Param, word: bool = True) -> list:
    """Values the declaration refuses; `word`: also a word for a number."""
    out = []
    if p.empty is not None:
        out.append("   ")
    if p.enum is not None:
        out.append("bogus")
    if p.items is not None:
        out.append(["BOGUS"])
    if p.lo is not None:
        step = 1 if p.type is int else 0.5
        out.append(bound(p, "lo") - step)
        if bound(p, "hi") is not None:
            out.append(bound(p, "hi") + step)
        if word:
            out.append("many")
    return out


def edge_values(p: Param, which: str):
    """The parameter at one end of what it allows (None: nothing to vary)."""
    if p.enum is not None:
        return p.enum[0] if which == "lo" else p.enum[-1]
    if p.items is not None:
        return [p.items[0]] if which == "lo" else list(p.items)
    if p.lo is not None:
        b = bound(p, which)
        return None if b is None else (int(b) if p.type is int else float(b))
    return None


def declared_message(p: Param, value) -> str:
    """What the declaration itself says of `value`."""
    if isinstance(value, str) and p.type in (int, float):
        return p.type_message(value, CAP_TOKENS)
    with pytest.raises(ArgumentError) as err:
        p.validate(value, CAP_TOKENS)
    return err.value.message


def argv(tool: Tool, arguments: dict) -> list[str]:
    """The command line for these arguments, spelled as the parameters say."""
    positional, flags = [], []
    for p in tool.params:
        if p.name not in arguments or p.cli is None:
            continue
        v = arguments[p.name]
        if p.cli == POSITIONAL:
            positional.append(str(v))
        elif p.type is bool:
            flags += [p.flag] if v else []
        elif p.is_list():
            for item in v:
                flags += [p.flag, item]
        else:
            flags += [p.flag, str(v)]
    return [tool.command, *positional, *flags]


def cases() -> list[tuple[Tool, dict, str | None, str]]:
    """(tool, arguments, the expected error or None, what the case is)."""
    out = []
    for tool in BOTH:
        base = REQUIRED_VALUES.get(tool.name, {})
        ends = []
        for which in ("lo", "hi"):
            args = dict(base)
            for p in shared(tool):
                v = edge_values(p, which)
                if v is not None:
                    args[p.name] = v
            if args not in ends:
                ends.append(args)
                out.append((tool, args, None, f"{tool.name} at every {which} bound"))
        numbers = [p for p in shared(tool) if p.lo is not None]
        for p in shared(tool):
            for v in bad_values(p, word=numbers[:1] == [p]):  # a word for a number: once a tool
                out.append((tool, {**base, p.name: v}, declared_message(p, v), f"{tool.name} {p.name}={v!r}"))
    return out


CASES = cases()


def test_every_tool_and_parameter_is_covered():
    for tool in BOTH:
        for p in tool.params:
            if p.default is REQUIRED:
                assert p.name in REQUIRED_VALUES.get(tool.name, {}), f"{tool.name}: give {p.name} a valid value above"
    checked = {(t.name, p.name) for t in BOTH for p in shared(t) if bad_values(p)}
    assert ("search_and_rank", "limit") in checked and ("find_references", "limit") in checked
    assert ("trace_causal_path", "direction") in checked and ("assemble_context", "max_tokens") in checked
    assert len(CASES) > 50


@pytest.fixture(scope="module")
def acme(tmp_path_factory) -> Path:
    """The fixture repository as a git work tree (so the change tool has a HEAD), indexed."""
    repo = make_repo(tmp_path_factory.mktemp("fronts") / "acme", index=False)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run(git + ["init", "-q"], cwd=repo, check=True)
    subprocess.run(git + ["add", "-A"], cwd=repo, check=True)
    subprocess.run(git + ["commit", "-qm", "init"], cwd=repo, check=True)
    index_repository(repo, workers=1)
    return repo


def _cli(repo: Path, args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([str(NSCCN), *args], cwd=repo, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL, env={**os.environ, "NSCCN_LOG_LEVEL": "WARNING"})


def _mcp(repo: Path) -> list:
    transport = StdioTransport(command=str(NSCCN), args=["mcp", "--root", str(repo)], cwd=str(repo),
                               env={**os.environ, "NSCCN_LOG_LEVEL": "WARNING"})

    async def main():
        async with Client(transport) as c:
            return [await c.call_tool_mcp(tool.name, args) for tool, args, _, _ in CASES]

    return asyncio.run(main())


def test_the_command_line_and_mcp_take_and_refuse_the_same_values(acme):
    with ThreadPoolExecutor(4) as pool:
        cli = list(pool.map(lambda case: _cli(acme, argv(case[0], case[1])), CASES))
    mcp = _mcp(acme)
    for (tool, args, expected, what), r, m in zip(CASES, cli, mcp):
        said_mcp = "".join(b.text for b in m.content)
        if expected is None:  # every value the declaration allows is taken by both
            assert r.returncode == 0, f"{what}: the command line refused it: {r.stderr}"
            assert not m.is_error, f"{what}: MCP refused it: {said_mcp}"
        else:  # the declaration's own message, from both
            assert r.returncode == 2 and r.stderr == f"nsccn: {expected}\n", f"{what}: command line: {r.stderr!r}"
            assert m.is_error and said_mcp == expected, f"{what}: MCP: {said_mcp!r}"
