"""Property-based fuzzing of every MCP tool's arguments (issue 12, item 5): hypothesis draws
arguments from each tool's advertised JSON schema — valid values, the values around its bounds,
wrong types, absurd sizes, paths out of the repository, unknown and missing parameters — and sends
them to a real `nsccn mcp` server over stdio. Every call must give a result or a clean tool error:
never an internal failure, a stack trace or a hang.

Shared by `tests/test_mcp_fuzz.py` (a few seconds in CI) and `benchmarks/mcp_fuzz.py` (many more
examples).
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from hypothesis import strategies as st

from nsccn.config import load_config
from nsccn.store import Store
from nsccn.tokens import count_tokens

LONG_PATH = "/".join(["a"] * 30_000) + "/auth.py"
ODD_STRINGS = [
    "", " ", "\n", "\x00", "\x00abc", "\ufeff", "🙂" * 50, "..", "../../etc/passwd", "/etc/passwd", "~", "C:\\Windows",
    "a" * 100_000, LONG_PATH, 'Traceback:\n  File "/x/auth.py", line ' + "9" * 5000 + ", in validate_token\n",
    "func:", "func::", ":::", "ext:json.dumps", "module:acme/auth.py:", "*", "%", "_", "'; DROP TABLE entities; --",
    '"unbalanced', "NEAR(a b)", "a OR", "AND", "-x", "x*", "{}", "[]", "null",
]
WRONG_TYPES = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**30), 10**30), st.floats(allow_nan=False, allow_infinity=False),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)


class StdioSession:
    """A real MCP stdio session driven from synchronous code (hypothesis tests are synchronous):
    the client's event loop runs on a thread of its own."""

    def __init__(self, root: Path, command: list[str], log_file: Path | None = None, timeout_s: float = 120):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        transport = StdioTransport(command[0], command[1:] + ["mcp", "--root", str(root)], keep_alive=False,
                                   log_file=log_file)
        self.client = Client(transport, timeout=timeout_s)
        self._run(self.client.__aenter__(), timeout_s)

    def _run(self, coro, timeout_s: float):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout_s)

    def tools(self) -> list:
        return self._run(self.client.list_tools(), 60)

    def call(self, tool: str, args: dict, timeout_s: float):
        """The CallToolResult; a TimeoutError when the server does not answer within timeout_s."""
        return self._run(self.client.call_tool(tool, args, raise_on_error=False), timeout_s)

    def close(self) -> None:
        try:
            self._run(self.client.__aexit__(None, None, None), 60)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)


def index_samples(root: Path) -> dict[str, list[str]]:
    """Real entity ids, file paths and names of the index: fuzzing mixes them with garbage."""
    with Store(load_config(root).db_path(root), readonly=True) as store:
        rows = store.conn.execute("SELECT id, path, name, qualname FROM entities ORDER BY rowid LIMIT 400").fetchall()
    return {
        "ids": sorted({r[0] for r in rows}),
        "paths": sorted({r[1] for r in rows}),
        "names": sorted({r[2] for r in rows} | {r[3] for r in rows}),
    }


def _string_values(name: str, samples: dict[str, list[str]]) -> st.SearchStrategy:
    real = samples["ids"] + samples["paths"] + samples["names"]
    near = st.sampled_from(real).flatmap(  # a real value, slightly broken
        lambda v: st.sampled_from([v, v.upper(), v + "x", v[:-1], " " + v + " ", v.replace(":", "/"), v * 3]))
    return st.one_of(
        st.sampled_from(real), near, st.sampled_from(ODD_STRINGS), st.text(max_size=200),
        st.text(alphabet=st.characters(codec="utf-8"), max_size=50),
        st.lists(st.sampled_from(samples["names"] + ["the", "token", "bug", "fails"]), max_size=30).map(" ".join),
    )


def _value(name: str, schema: dict, samples: dict[str, list[str]]) -> st.SearchStrategy:
    """Values for one parameter: mostly of its type (in range and around the bounds), some of any type."""
    kinds = [s for s in schema.get("anyOf", [schema]) if s.get("type") != "null"]
    typ = kinds[0].get("type") if kinds else None
    lo = schema.get("minimum", kinds[0].get("minimum") if kinds else None)
    hi = schema.get("maximum", kinds[0].get("maximum") if kinds else None)
    if typ == "integer":
        edges = [v for b in (lo, hi) if b is not None for v in (b - 1, b, b + 1)] + [0, -1, 2**31, 2**63, 10**100]
        own = st.one_of(st.integers(lo if lo is not None else -1000, hi if hi is not None else 10**6),
                        st.sampled_from(edges))
    elif typ == "number":
        own = st.one_of(st.floats(lo, hi), st.sampled_from([-0.5, 1.5, 1e308, -1e308, 5e-324]), st.integers(-2, 3))
    elif typ == "array":
        valid = {"kinds": ["module", "class", "func", "method"],
                 "relations": ["CALLS", "INHERITS", "IMPORTS", "MUTATES", "READS_CONFIG", "PROPAGATES_ERROR", "CONTAINS"],
                 }.get(name, samples["ids"][:20] + samples["paths"][:20])
        item = st.one_of(st.sampled_from(valid), st.sampled_from(ODD_STRINGS[:12]), WRONG_TYPES)
        own = st.lists(item, max_size=6)
    elif "enum" in schema or (kinds and "enum" in kinds[0]):
        enum = schema.get("enum") or kinds[0]["enum"]
        own = st.one_of(st.sampled_from(enum), st.sampled_from([e.upper() for e in enum] + ["", "sideways"]))
    else:
        own = _string_values(name, samples)
    if len(schema.get("anyOf", [])) > 1:
        own = st.one_of(own, st.none())
    return st.one_of(own, own, own, WRONG_TYPES)  # three in four of its own type


def _valid_value(name: str, schema: dict, samples: dict[str, list[str]]) -> st.SearchStrategy:
    """A value a well-behaved agent would send: in range, of the right type, naming real things."""
    kinds = [s for s in schema.get("anyOf", [schema]) if s.get("type") != "null"]
    typ = kinds[0].get("type") if kinds else None
    lo = schema.get("minimum", kinds[0].get("minimum") if kinds else None)
    hi = schema.get("maximum", kinds[0].get("maximum") if kinds else None)
    if typ == "integer":
        lo = 1 if lo is None else lo
        return st.integers(lo, min(hi if hi is not None else lo + 50, lo + 50)) | st.sampled_from([lo] + ([hi] if hi else []))
    if typ == "number":
        return st.floats(lo or 0.0, 1.0 if hi is None else hi)
    if "enum" in schema or (kinds and "enum" in kinds[0]):
        return st.sampled_from(schema.get("enum") or kinds[0]["enum"])
    if typ == "array":
        pool = {"kinds": ["module", "class", "func", "method"],
                "relations": ["CALLS", "INHERITS", "IMPORTS", "MUTATES", "READS_CONFIG", "PROPAGATES_ERROR", "CONTAINS"],
                }.get(name, samples["ids"] + samples["paths"])
        return st.lists(st.sampled_from(pool), min_size=1, max_size=4)
    pool = {"entity_id": samples["ids"], "file_path": samples["paths"], "name": samples["names"]}.get(name)
    if pool:
        return st.sampled_from(pool)
    words = samples["names"] + ["the", "token", "fails", "when", "login", "config", "error", "value"]
    return st.lists(st.sampled_from(words), min_size=1, max_size=40).map(" ".join)


def arguments(schema: dict, samples: dict[str, list[str]]) -> st.SearchStrategy:
    """Arguments for a tool: half the time what a well-behaved agent sends (optional parameters
    present or not), half the time anything: each parameter of any value or missing (required ones
    too, now and then), and now and then a parameter the tool does not have."""
    props = schema.get("properties", {})
    required = set(schema.get("required", []))
    valid = st.fixed_dictionaries(
        {n: _valid_value(n, p, samples) for n, p in props.items() if n in required},
        optional={n: _valid_value(n, p, samples) for n, p in props.items() if n not in required},
    )
    drawn = {
        name: st.one_of(_value(name, p, samples).map(lambda v: (True, v)), st.just((False, None)))
        if name not in required else
        st.one_of(*[_value(name, p, samples).map(lambda v: (True, v))] * 9, st.just((False, None)))
        for name, p in props.items()
    }
    extra = st.one_of(st.just({}), st.just({}), st.just({}), st.dictionaries(
        st.sampled_from(["bogus", "Query", "limit ", "__proto__"]), WRONG_TYPES, max_size=2))
    anything = st.tuples(st.fixed_dictionaries(drawn), extra).map(
        lambda t: {**{k: v for k, (keep, v) in t[0].items() if keep}, **t[1]})
    return st.one_of(valid, anything)


def check_result(tool: str, args: dict, result, cap: int = 8000) -> None:
    """A result within the token cap, or a clean tool error: the caller's mistake in a line (plus
    the closest ids), never an internal failure or a stack trace."""
    text = "".join(getattr(c, "text", "") for c in result.content or [])
    where = f"{tool}({_short_args(args)})"
    if result.is_error:
        assert text.strip(), f"{where}: an empty error"
        assert "Traceback (most recent call last)" not in text, f"{where}: a stack trace: {text[:500]}"
        assert "failed inside NSCCN" not in text, f"{where}: an internal failure: {text[:500]}"
        assert "Error calling tool" not in text, f"{where}: an unexpected exception: {text[:500]}"
        first, *rest = text.split("\n")
        assert not rest or (len(rest) == 1 and rest[0].startswith("did you mean: ")), f"{where}: not one line: {text[:500]}"
        assert len(text) < 4000, f"{where}: an error of {len(text)} characters"
    else:
        assert count_tokens(text) <= cap, f"{where}: {count_tokens(text)} tokens, over the cap"


def _short_args(args: dict) -> str:
    return ", ".join(f"{k}={v!r:.80}" for k, v in args.items())
