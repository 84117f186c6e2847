"""The MCP front: NSCCN's navigation tools served over MCP (stdio) with fastmcp.

Agents zoom in: `repo_map` / `read_skeleton` (the map) -> `search_and_rank` (entry points; or
`localize_issue`: the files and functions a bug report's fix touches) -> `trace_causal_path` (the
causal chain) -> `open_surgical_window` (the exact lines), with `find_symbol`, `find_references`,
`assemble_context` and `index_status` around them.

What every tool guarantees:
- the answer (its text content, counted with the real tokenizer) stays within
  `Config.result_token_cap` tokens (8000 by default); when it was cut it says so and says how
  to get the rest (an offset, a narrower call);
- bad input is a tool error (`ToolError`) whose message names the valid range or the closest
  ids, never a stack trace;
- an answer that involves files changed on disk since they were indexed, or that was computed
  while the pipeline is still indexing or embedding, carries a `stale` / `partial` note; one
  built from edges while written files wait for their references to be resolved, `unresolved`.

Each answer is one text block meant for the model (compact JSON for the structured tools, plain
numbered code for skeletons and windows) plus the same data as `structuredContent` for
programmatic clients.

`create_server(root)` builds the server in-process (tests use `fastmcp.Client(server)`);
`run_stdio(root)` serves it over stdio (`nsccn mcp`, and the pipeline's MCP front actor, which
passes `status_provider`: a callable returning the live pipeline status, merged into
`index_status` and used for the `partial` note: a dict whose `partial` is true, whose `state` is
"indexing", or whose `files_pending` / `vectors_pending` / `pending` is above 0, marks answers as
partial).
"""

# No `from __future__ import annotations`: the tool signatures are read by pydantic at
# registration, and some of their annotations close over `cap`.
import json
import logging
import os
import threading
import time
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated, Any

import anyio
import apsw
from fastmcp import FastMCP
from fastmcp.exceptions import ToolError, ValidationError as FastMCPValidationError
from fastmcp.server.middleware import Middleware
from fastmcp.tools.base import ToolResult
from mcp_types import TextContent, ToolAnnotations
from pydantic import BeforeValidator, Field, ValidationError as PydanticValidationError

from nsccn import __version__
from nsccn.escape import block, json_text, one_line
from nsccn.navigator import Navigator, NavigatorError, said
from nsccn.tokens import count_tokens, truncate_to_tokens

log = logging.getLogger("nsccn.mcp")

SERVER_NAME = "nsccn"
ENTITY_KINDS = ("module", "class", "func", "method")
DIRECTIONS = ("downstream", "upstream", "state", "all")
RELATIONS = ("CALLS", "INHERITS", "IMPORTS", "MUTATES", "READS_CONFIG", "PROPAGATES_ERROR", "CONTAINS")
MAX_DEPTH = 10
MAX_SEARCH_LIMIT = 100
MAX_REFS_LIMIT = 500
MAX_SYMBOL_LIMIT = 100
MAX_CONTEXT_LINES = 200
MIN_MAP_TOKENS = 64
MIN_CONTEXT_TOKENS = 200
MAX_SIGNATURE_CHARS = 300  # one absurd signature must not eat a whole answer
MAX_ERROR_CHARS = 2000  # a tool error longer than this is cut in the middle
MAX_EDGE_LINES = 5  # line numbers listed per trace edge; `sites` counts them all
STALE_CHECK_MAX_FILES = 64
GLOBAL_STALE_TTL_S = 2.0
DEFAULT_TIME_BUDGET_S = 20.0  # Config.tool_time_budget_s
BUDGET_GRACE_S = 2.0  # past the budget, how long a body that is not in SQLite may still take
MAX_CONCURRENT_CALLS = 8  # calls in flight at once, each with its own read connection
PIPELINE_STATUS_TTL_S = 1.0

INSTRUCTIONS = """\
NSCCN is a live map of this repository's code: entities (modules, classes, functions, methods),
the causal edges between them (CALLS, INHERITS, IMPORTS, MUTATES, READS_CONFIG, PROPAGATES_ERROR)
with a confidence each, compressed skeletons, and hybrid search.
Zoom in instead of reading whole files: repo_map or read_skeleton to orient -> search_and_rank to
find entry points (localize_issue for a whole bug report: the files and functions to change) ->
trace_causal_path to follow the causal chain -> open_surgical_window to read the exact lines you
will edit. find_symbol / find_references answer "where is X defined / used";
assemble_context builds a one-shot token-budgeted bundle for a task.
Entity ids look like func:pkg/mod.py:name, method:pkg/mod.py:Class.method, class:pkg/mod.py:Class,
module:pkg/mod.py:pkg.mod. Paths are relative to the repository root.
Every answer stays under a token cap and says when it was cut and how to get the rest."""

_READ_ONLY = ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False)


def _json_array(value: Any) -> Any:
    """A list given as a JSON-encoded string (`'["CALLS"]'`, as the MCP Inspector CLI and some
    other clients send every argument) is that list; anything else is left to validation."""
    if isinstance(value, str) and value.lstrip().startswith("["):
        try:
            return json.loads(value)
        except ValueError:
            return value  # not JSON after all: validation says it should be a list
    return value


def _string_list(description: str, enum: Iterable[str] | None = None):
    """A `list[str] | None` parameter that also takes a JSON-encoded array; `enum` lists the
    valid items in the schema (checked by the tool itself, so a bad item gets our message)."""
    item = Annotated[str, Field(json_schema_extra={"enum": list(enum)})] if enum else str
    return Annotated[list[item] | None, BeforeValidator(_json_array), Field(description=description)]


def _range(lo: int | float, hi: int | float | None = None, **extra) -> dict:
    """JSON-schema bounds for a parameter, advertised to clients but checked by our own code,
    so an out-of-range value gets our message (the valid range) instead of a validation dump."""
    d: dict[str, Any] = {"minimum": lo}
    if hi is not None:
        d["maximum"] = hi
    d.update(extra)
    return d


# -- rendering ------------------------------------------------------------------------------------


def _flat(v: Any) -> bool:
    """A scalar, a list of scalars, or a dict of those: printed on one line."""
    if isinstance(v, dict):
        return all(not isinstance(x, (dict, list)) or (isinstance(x, list) and all(not isinstance(y, (dict, list)) for y in x))
                   for x in v.values())
    if isinstance(v, list):
        return all(not isinstance(x, (dict, list)) for x in v)
    return True


def render_json(v: Any, indent: int = 0, max_depth: int = 99) -> str:
    """Valid JSON, one entry per line down to flat records (or `max_depth` levels): readable and
    cheap in tokens."""
    if _flat(v) or not v or indent >= max_depth:
        return json_text(json.dumps(v, ensure_ascii=False))  # C1 controls and the like escaped too
    pad = " " * (indent + 1)
    if isinstance(v, dict):
        body = ",\n".join(f"{pad}{json_text(json.dumps(k, ensure_ascii=False))}: {render_json(x, indent + 1, max_depth)}"
                          for k, x in v.items())
        return "{\n" + body + "\n" + " " * indent + "}"
    body = ",\n".join(pad + render_json(x, indent + 1, max_depth) for x in v)
    return "[\n" + body + "\n" + " " * indent + "]"


def _short(sig: str) -> str:
    return sig if len(sig) <= MAX_SIGNATURE_CHARS else sig[: MAX_SIGNATURE_CHARS - 3] + "..."


def _echo(query: str, limit: int = 200) -> str:
    """The query as echoed in an answer: a pasted bug report must not eat the answer's budget."""
    q = " ".join(query.split())
    return q if len(q) <= limit else q[: limit - 3] + "..."


def _fit(n_items: int, render: Callable[[int], str], cap: int) -> tuple[int, str]:
    """The largest k <= n_items with count_tokens(render(k)) <= cap, and render(k)."""
    text = render(n_items)
    total = count_tokens(text)
    if total <= cap:
        return n_items, text
    lo, hi = 0, n_items - 1
    guess = min(hi, int(n_items * cap / total))  # tokens are roughly even per item: start near the answer
    if guess > 0:
        if count_tokens(render(guess)) <= cap:
            lo = guess
        else:
            hi = guess - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count_tokens(render(mid)) <= cap:
            lo = mid
        else:
            hi = mid - 1
    return lo, render(lo)


def _user_error(message: str) -> ToolError:
    """A tool error caused by the caller's input: logged quietly, returned verbatim (cut to
    MAX_ERROR_CHARS should it echo a huge argument that no `said` clipped)."""
    if len(message) > MAX_ERROR_CHARS:
        message = f"{message[: MAX_ERROR_CHARS - 200]} ... [{len(message):,} characters] ... {message[-150:]}"
    return ToolError(message, log_level=logging.DEBUG)


class ArgumentErrors(Middleware):
    """Arguments of the wrong type or missing: a plain message naming the parameter and its valid
    values (from the tool's schema), instead of pydantic's multi-line dump with a URL."""

    def __init__(self, server: FastMCP):
        self.server = server

    async def on_call_tool(self, context, call_next):
        try:
            return await call_next(context)
        except (FastMCPValidationError, PydanticValidationError) as exc:
            cause = exc.__cause__ if isinstance(exc.__cause__, PydanticValidationError) else exc
            name = context.message.name
            props: dict = {}
            try:
                tool = await self.server.get_tool(name)
                props = (tool.parameters or {}).get("properties", {}) if tool else {}
            except Exception:
                pass
            parts = []
            errors = cause.errors() if isinstance(cause, PydanticValidationError) else []
            for err in errors:
                loc = [str(x) for x in err.get("loc", ()) if not isinstance(x, int)]
                param = loc[-1] if loc else "?"
                if err.get("type") in ("missing", "missing_argument"):
                    what = "is required"
                elif err.get("type") in ("extra_forbidden", "unexpected_keyword_argument"):
                    what = f"is not a parameter of {name}; parameters: {', '.join(props) or 'none'}"
                else:
                    what = f"{err.get('msg', 'is invalid').lower()} (got {said(err.get('input'))})"
                desc = props.get(param, {}).get("description")
                parts.append(f"{param} {what}" + (f"; expected {desc}" if desc else ""))
            msg = f"invalid arguments for {name}: " + ("; ".join(parts) if parts else str(exc).splitlines()[0])
            raise _user_error(msg) from None


def _closest_message(exc: NavigatorError) -> str:
    msg = one_line(exc.message)  # it may quote a repository's path or name
    if exc.suggestions:
        msg += "\ndid you mean: " + ", ".join(map(one_line, exc.suggestions))
    return msg


# -- the server -----------------------------------------------------------------------------------


class NavigatorService:
    """The navigators behind the tools: a pool of read-only connections, one per call in flight,
    so a slow call holds no lock the others need; each call's time budget; reopening when the
    index file is replaced; staleness and pipeline notes; the token cap."""

    def __init__(self, root: str | Path, db_path: str | Path | None = None, embedder=None,
                 status_provider: Callable[[], dict | None] | None = None):
        self._primary = Navigator(root, db_path=db_path)
        self._primary.embedder = embedder
        self.root = self._primary.root
        self.cap = int(self._primary.config.result_token_cap)
        self.budget_s = float(getattr(self._primary.config, "tool_time_budget_s", DEFAULT_TIME_BUDGET_S))
        self.status_provider = status_provider
        self._idle: list[Navigator] = [self._primary]  # navigators no call holds
        self._pool_lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(MAX_CONCURRENT_CALLS)
        self._local = threading.local()  # the navigator of the call running on this thread
        self._db_ino: dict[int, tuple[int, int] | None] = {}
        self._closed = False
        self._global_stale: tuple[float, dict] | None = None
        self._pipeline: tuple[float, dict | None] | None = None

    @property
    def nav(self) -> Navigator:
        """The navigator of the call running on this thread (outside a call: the first one)."""
        return getattr(self._local, "nav", None) or self._primary

    def close(self) -> None:
        with self._pool_lock:
            self._closed = True
            for nav in self._idle:
                nav.close()

    def _acquire(self, deadline: float) -> Navigator:
        if not self._slots.acquire(timeout=max(0.0, deadline - time.monotonic())):
            raise _user_error(f"the server is busy with {MAX_CONCURRENT_CALLS} calls; try again in a moment")
        with self._pool_lock:
            if self._idle:  # the first navigator when it is free: sequential calls share one connection
                nav = self._primary if self._primary in self._idle else self._idle[-1]
                self._idle.remove(nav)
                return nav
        nav = Navigator(self.root, config=self._primary.config, db_path=self._primary.db_path)
        nav.embedder = self._primary.embedder
        return nav

    def _release(self, nav: Navigator) -> None:
        nav.deadline = None
        with self._pool_lock:
            if self._closed:
                nav.close()
            else:
                self._idle.append(nav)
        self._slots.release()

    # The index file can be deleted and rebuilt (a full re-index): follow it.
    def _check_db(self, nav: Navigator) -> None:
        try:
            st = os.stat(nav.db_path)
            ino = (st.st_dev, st.st_ino)
        except OSError:
            ino = None
        if ino != self._db_ino.get(id(nav), False):
            nav.close()
            self._db_ino[id(nav)] = ino

    async def call(self, tool: str, fn: Callable[[], ToolResult]) -> ToolResult:
        """Run one tool body on a worker thread with its own connection, within the time budget:
        SQLite work past the deadline is interrupted (the connection's progress handler), and
        should the body still not return, the answer is a time-budget error all the same."""
        deadline = time.monotonic() + self.budget_s
        try:
            with anyio.fail_after(self.budget_s + BUDGET_GRACE_S):
                return await anyio.to_thread.run_sync(self._run, tool, fn, deadline, abandon_on_cancel=True)
        except TimeoutError:
            raise self._over_budget(tool) from None

    def _run(self, tool: str, fn: Callable[[], ToolResult], deadline: float) -> ToolResult:
        nav = self._acquire(deadline)
        self._local.nav = nav
        try:
            self._check_db(nav)
            nav.deadline = deadline
            return fn()
        except ToolError:
            raise
        except apsw.InterruptError:
            raise self._over_budget(tool) from None
        except NavigatorError as exc:
            raise _user_error(_closest_message(exc)) from None
        except RuntimeError as exc:
            if "nsccn index" in str(exc):  # e.g. an index of another schema version: actionable
                raise _user_error(str(exc)) from None
            raise self._internal(tool, exc) from None
        except Exception as exc:  # never a stack trace to the agent; the log has it
            raise self._internal(tool, exc) from None
        finally:
            self._local.nav = None
            self._release(nav)

    def _over_budget(self, tool: str) -> ToolError:
        return _user_error(f"{tool} stopped: it ran past its time budget of {self.budget_s:g} s "
                           "(tool_time_budget_s); narrow the call: a shorter query, a smaller depth or limit")

    @staticmethod
    def _internal(tool: str, exc: Exception) -> ToolError:
        log.error("tool %s failed:\n%s", tool, "".join(traceback.format_exception(exc)))
        return ToolError(f"{tool} failed inside NSCCN ({type(exc).__name__}: {exc}); the server log has the details")

    # -- freshness ---------------------------------------------------------------------------

    def changed_files(self, paths: Iterable[str]) -> list[str]:
        """Which of these indexed files differ on disk (size or mtime) from the index."""
        return self.nav.changed_files(paths, STALE_CHECK_MAX_FILES)

    def global_staleness(self) -> dict:
        now = time.monotonic()
        cached = self._global_stale  # read once: concurrent calls replace it whole
        if cached is None or now - cached[0] > GLOBAL_STALE_TTL_S:
            cached = self._global_stale = (now, self.nav.staleness(limit=10))
        return cached[1]

    def pipeline_status(self, fresh: bool = False) -> dict | None:
        if self.status_provider is None:
            return None
        now = time.monotonic()
        cached = self._pipeline  # read once: concurrent calls replace it whole
        if fresh or cached is None or now - cached[0] > PIPELINE_STATUS_TTL_S:
            try:
                live = self.status_provider()
            except Exception as exc:  # a sick pipeline must not break queries
                live = {"error": f"status unavailable: {type(exc).__name__}: {exc}"}
            cached = self._pipeline = (now, live if isinstance(live, dict) or live is None else {"status": live})
        return cached[1]

    def partial_note(self) -> str | None:
        live = self.pipeline_status()
        if not live:
            return None
        pending = {k: live[k] for k in ("files_pending", "vectors_pending", "pending")
                   if isinstance(live.get(k), (int, float)) and live[k] > 0}
        if live.get("partial") or pending or live.get("state") == "indexing":
            what = ", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in pending.items()) or "indexing in progress"
            return f"the index is still being built ({what}); answers may miss what is not indexed yet"
        return None

    def notes(self, out: dict, files: Iterable[str] | None = None, whole_index: bool = False,
              answer: dict | None = None) -> dict:
        """Add `stale` / `partial` notes to an answer; `answer`: the navigator's answer it is made
        from, whose `unresolved` note (an answer built from edges) it keeps."""
        if answer and answer.get("unresolved"):
            out["unresolved"] = answer["unresolved"]
        if files is not None:
            changed = self.changed_files(files)
            if changed and "stale" not in out:
                out["stale"] = (f"{len(changed)} file(s) in this answer changed on disk since they were indexed "
                                f"({', '.join(changed[:5])}{', ...' if len(changed) > 5 else ''}); lines and edges "
                                "may be off until they are re-indexed (`nsccn index`, or the watcher under `nsccn serve`)")
        if whole_index:
            g = self.global_staleness()
            n = g["changed"] + g["deleted"]
            if n and "stale" not in out:
                out["stale"] = (f"{n} indexed file(s) changed on disk since indexing (e.g. {', '.join(g['examples'][:3])}); "
                                "re-index for exact answers")
        partial = self.partial_note()
        if partial:
            out["partial"] = partial
        live = self.pipeline_status()  # the pipeline gone (`nsccn serve` reattaching): say so first
        if live and isinstance(live.get("stale"), str):
            out["stale"] = live["stale"] + (f"; also: {out['stale']}" if out.get("stale") else "")
        full = (live or {}).get("disk_full") or self.nav.disk_note()  # the writer's own word first
        if full:
            out["disk_full"] = full if full.startswith("disk full") else f"disk full: {full}"
        return out


def _note_lines(out: dict) -> str:
    """The answer's notes as `# note:` lines for the text the model reads."""
    return "".join(f"# note: {one_line(out[key])}\n" for key in ("disk_full", "stale", "partial", "unresolved") if out.get(key))


def _result(text: str, data: dict) -> ToolResult:
    return ToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def _check_int(name: str, value: int, lo: int, hi: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _user_error(f"{name} must be an integer" + (f" between {lo} and {hi}" if hi is not None else f" >= {lo}"))
    if value < lo or (hi is not None and value > hi):
        rng = f"between {lo} and {hi}" if hi is not None else f"{lo} or more"
        raise _user_error(f"{name} must be {rng}, not {said(value)}")
    return value


def _norm_path(root: Path, file_path: str) -> str:
    """Agents often pass absolute paths: accept those inside the repository."""
    if not isinstance(file_path, str) or not file_path.strip():
        raise _user_error("file_path is empty: give a path relative to the repository root, e.g. pkg/module.py")
    p = file_path.strip()
    if os.path.isabs(p):
        try:
            rel = Path(os.path.realpath(p)).relative_to(root)
        except ValueError:
            raise _user_error(f"{said(p)} is outside the repository ({root}); give a path relative to its root") from None
        return rel.as_posix()
    return p


def create_server(root: str | Path, db_path: str | Path | None = None, embedder=None,
                  status_provider: Callable[[], dict | None] | None = None) -> FastMCP:
    """A FastMCP server exposing NSCCN's tools for the repository at `root`."""
    svc = NavigatorService(root, db_path=db_path, embedder=embedder, status_provider=status_provider)
    cap = svc.cap
    # Every answer is measured in tokens: load the tokenizer now, not in a tool's thread that may
    # still run when the client leaves (importing at interpreter shutdown fails with a traceback).
    count_tokens("warm")
    mcp = FastMCP(SERVER_NAME, instructions=INSTRUCTIONS, version=__version__, mask_error_details=True)
    mcp._nsccn = svc  # for tests and the front actor
    mcp.add_middleware(ArgumentErrors(mcp))

    def tool(description: str):
        return mcp.tool(description=description, annotations=_READ_ONLY, output_schema=None)

    # -- search_and_rank ---------------------------------------------------------------------

    @tool(
        "Locate: find the entities (functions, methods, classes) a task or bug report is about, best first, "
        "by hybrid ranking (lexical BM25 + identifier/path/traceback analysis + vectors when available + call graph). "
        "Use it first when you know what you want but not where it is; then trace_causal_path or open_surgical_window on an id."
    )
    async def search_and_rank(
        query: Annotated[str, Field(description="a name, a phrase, or a whole bug report / traceback")],
        limit: Annotated[int, Field(description="results to return (1-100)", json_schema_extra=_range(1, MAX_SEARCH_LIMIT))] = 10,
        offset: Annotated[int, Field(description="skip this many results (paging)", json_schema_extra=_range(0))] = 0,
        kinds: _string_list("only these kinds: module, class, func, method", ENTITY_KINDS) = None,
        diversity: Annotated[float, Field(description="0: plain ranking; up to 1: near-duplicates of results "
                                          "already listed give way to other places (MMR)",
                                          json_schema_extra=_range(0, 1))] = 0.0,
    ) -> ToolResult:
        def run():
            if not isinstance(query, str) or not query.strip():
                raise _user_error("query is empty: give a name, a phrase or a bug report")
            _check_int("limit", limit, 1, MAX_SEARCH_LIMIT)
            _check_int("offset", offset, 0)
            if kinds:
                bad = [k for k in kinds if k not in ENTITY_KINDS]
                if bad:
                    raise _user_error(f"unknown kinds {said(bad)}; valid kinds: {list(ENTITY_KINDS)}")
            res = svc.nav.search(query, limit=limit, offset=offset, kinds=kinds or None, diversity=diversity)
            rows = [{"id": r["id"], "score": round(r["score"], 4), "sig": _short(r["signature"]), "file": r["file"],
                     "line": r["line"], "kind": r["kind"]} for r in res["results"]]
            base = {"query": _echo(query), "signals": res.get("signals", [])}
            if res.get("query_capped"):  # what the caps on query analysis left out
                base["query_capped"] = res["query_capped"]

            def build(k: int) -> dict:
                out = {**base, "results": rows[:k]}
                if k < len(rows):
                    out["truncated"] = (f"cut to {k} of {len(rows)} results by the {cap}-token cap; "
                                        f"call again with offset={offset + k} for the rest")
                elif res.get("more"):
                    out["more"] = res["more"]
                return out

            files = [r["file"] for r in rows]
            svc.notes(base, files)
            if not rows:
                base["hint"] = "nothing matched: try other words, a bare identifier, or repo_map to see what exists"
            k, text = _fit(len(rows), lambda k: render_json(build(k)), cap)
            return _result(text, build(k))

        return await svc.call("search_and_rank", run)

    # -- localize_issue ---------------------------------------------------------------------

    @tool(
        "Localize a bug: paste an issue, bug report, traceback or task; get the files and the functions its fix most "
        "likely touches, best first (the ranking measured by NSCCN's localization benchmark: tests and docs demoted, "
        "hits rolled up to files and outermost functions). Then read_skeleton the files, open_surgical_window the functions."
    )
    async def localize_issue(
        report: Annotated[str, Field(description="the issue / bug report / traceback / task, as written")],
        limit: Annotated[int, Field(description=f"files and functions to list (1-{Navigator.MAX_LOCALIZE})",
                                    json_schema_extra=_range(1, Navigator.MAX_LOCALIZE))] = 10,
    ) -> ToolResult:
        def run():
            res = svc.nav.localize(report, limit=limit)  # checks report and limit (NavigatorError -> tool error)
            functions = [{"id": r["id"], "sig": _short(r["signature"]), "file": r["file"], "line": r["line"]}
                         for r in res["functions"]]
            base = {"report": _echo(report), "signals": res["signals"]}
            if res.get("query_capped"):
                base["query_capped"] = res["query_capped"]

            def build(k: int) -> dict:
                out = {**base, "files": res["files"][:k], "functions": functions[:k]}
                if k < max(len(functions), len(res["files"])):
                    out["truncated"] = (f"cut to the first {k} files and functions by the {cap}-token cap; "
                                        "the rest rank lower (search_and_rank pages through entities)")
                return out

            svc.notes(base, res["files"])
            if not res["files"]:
                base["hint"] = "nothing matched: try other words, a bare identifier, or repo_map to see what exists"
            k, text = _fit(max(len(functions), len(res["files"])), lambda k: render_json(build(k)), cap)
            return _result(text, build(k))

        return await svc.call("localize_issue", run)

    # -- read_skeleton ----------------------------------------------------------------------

    @tool(
        "Orient: a file's skeleton (imports, signatures, type hints, docstrings; bodies elided as ...) with its token "
        "count, typically 70-90% smaller than the file. Use it instead of reading a whole file to see what it defines; "
        "then open_surgical_window on the entity you need."
    )
    async def read_skeleton(
        file_path: Annotated[str, Field(description="path relative to the repository root, e.g. pkg/models.py")],
        offset: Annotated[int, Field(description="skip this many skeleton lines (to continue a cut skeleton)",
                                     json_schema_extra=_range(0))] = 0,
    ) -> ToolResult:
        def run():
            _check_int("offset", offset, 0)
            res = svc.nav.skeleton(_norm_path(svc.root, file_path))
            lines = res["skeleton"].splitlines(keepends=True)
            if offset and offset >= len(lines):
                raise _user_error(f"offset must be below {len(lines)} (the skeleton's line count), not {offset}")
            body_lines = lines[offset:]
            rel = res["file"]
            shown = one_line(rel)
            head = (f"# {shown}: skeleton {res['tokens']} tokens, the file {res['source_tokens']} tokens "
                    f"({res['reduction']:.0%} smaller); entity ids: <kind>:{shown}:<Qualified.name>\n")
            base = {k: res[k] for k in ("file", "tokens", "source_tokens", "reduction")}
            if res.get("stale"):
                base["stale"] = res["stale"]
            svc.notes(base)

            def build(k: int) -> tuple[str, dict]:
                out = {**base, "skeleton": "".join(body_lines[:k])}
                if offset:
                    out["offset"] = offset
                text = head + (f"# (from skeleton line {offset})\n" if offset else "") + block(out["skeleton"])
                if k < len(body_lines):
                    out["truncated"] = (f"cut at skeleton line {offset + k} of {len(lines)} by the {cap}-token cap; call "
                                        f"read_skeleton(file_path={rel!r}, offset={offset + k}) for the rest")
                    text += ("" if text.endswith("\n") else "\n") + f"# ... {out['truncated']}\n"
                text += _note_lines(out)
                return text, out

            k, text = _fit(len(body_lines), lambda k: build(k)[0], cap)
            return _result(text, build(k)[1])

        return await svc.call("read_skeleton", run)

    # -- trace_causal_path --------------------------------------------------------------------

    @tool(
        "Trace: follow the causal graph from an entity: downstream (what it calls), upstream (who calls it), "
        "state (what it mutates / which config it reads) or all, up to depth hops. Returns an adjacency list with each "
        "edge's relation, confidence (1.0 certain, lower = guessed) and how it was resolved, plus each entity's signature. "
        "Use it after search_and_rank to find the cause or impact of a change; ids starting ext:/var:/attr:/env:/config: "
        "are external symbols, variables, attributes and settings, not repository entities."
    )
    async def trace_causal_path(
        entity_id: Annotated[str, Field(description="entity id, e.g. func:pkg/auth.py:validate_token")],
        direction: Annotated[str, Field(description="downstream | upstream | state | all",
                                        json_schema_extra={"enum": list(DIRECTIONS)})] = "downstream",
        depth: Annotated[int, Field(description="max hops (1-10)", json_schema_extra=_range(1, MAX_DEPTH))] = 3,
        relations: _string_list("follow only these relations: CALLS, INHERITS, IMPORTS, MUTATES, READS_CONFIG, "
                                "PROPAGATES_ERROR, CONTAINS", RELATIONS) = None,
        min_confidence: Annotated[float, Field(description="drop edges below this confidence (0-1)",
                                               json_schema_extra=_range(0, 1))] = 0.0,
    ) -> ToolResult:
        def run():
            if direction not in DIRECTIONS:
                raise _user_error(f"direction must be one of {list(DIRECTIONS)}, not {said(direction)}")
            _check_int("depth", depth, 1, MAX_DEPTH)
            if relations:
                bad = [r for r in relations if r not in RELATIONS]
                if bad:
                    raise _user_error(f"unknown relations {said(bad)}; valid: {list(RELATIONS)}")
            if not isinstance(min_confidence, (int, float)) or not 0.0 <= min_confidence <= 1.0:
                raise _user_error(f"min_confidence must be between 0 and 1, not {said(min_confidence)}")
            res = svc.nav.trace(entity_id, direction, depth, relations or None, float(min_confidence))
            order = list(res["entities"])  # breadth-first: nearest hops first
            ents = {}
            for eid, meta in res["entities"].items():
                if "signature" in meta:  # kind and file are in the id
                    ents[eid] = {"line": meta["line"], "end_line": meta["end_line"],
                                 "signature": _short(meta["signature"]), "hops": meta["hops"]}
                else:
                    ents[eid] = {"kind": meta.get("kind"), "hops": meta["hops"]}
            adjacency = {}
            for src, items in res["adjacency_list"].items():
                adjacency[src] = []
                for it in items:
                    it = dict(it)
                    if len(it.get("lines", ())) > MAX_EDGE_LINES:  # the same call at many lines
                        it["sites"] = len(it["lines"])
                        it["lines"] = it["lines"][:MAX_EDGE_LINES]
                    adjacency[src].append(it)
            files = [e.split(":", 2)[1] for e in order if e.split(":", 1)[0] in ENTITY_KINDS and e.count(":") >= 2]
            base = {"root": res["root"], "direction": res["direction"], "depth": res["depth"], "relations": res["relations"]}
            svc.notes(base, files, answer=res)
            n_edges = sum(len(v) for v in adjacency.values())

            def build(k: int) -> dict:
                keep = set(order[:k])
                adj = {}
                for src, items in adjacency.items():
                    if src not in keep:
                        continue
                    kept = [it for it in items if (it.get("target") or it.get("source")) in keep]
                    if kept:
                        adj[src] = kept
                out = {**base, "adjacency_list": adj, "entities": {e: ents[e] for e in order[:k]},
                       "nodes": len(order), "edges": n_edges}
                notes = []
                if res.get("truncated"):
                    notes.append(f"the traversal stopped at {len(order)} nodes")
                if k < len(order):
                    notes.append(f"cut to the {k} nearest of {len(order)} nodes by the {cap}-token cap")
                if notes:
                    out["truncated"] = ("; ".join(notes) + "; narrow with a smaller depth, relations=[...], "
                                        "min_confidence=0.9, or trace again from a node at the edge")
                return out

            k, text = _fit(len(order), lambda k: render_json(build(k)), cap)
            return _result(text, build(k))

        return await svc.call("trace_causal_path", run)

    # -- open_surgical_window -----------------------------------------------------------------

    @tool(
        "Examine: the exact numbered source lines of one entity (plus context_lines around it), straight from disk. "
        "Use it last, when you know which entity you need to read or edit, instead of reading the whole file."
    )
    async def open_surgical_window(
        entity_id: Annotated[str, Field(description="entity id, e.g. method:pkg/models.py:User.save")],
        context_lines: Annotated[int, Field(description="lines of context above and below (0-200)",
                                            json_schema_extra=_range(0, MAX_CONTEXT_LINES))] = 5,
        from_line: Annotated[int | None, Field(description="start showing at this line number (to continue a cut window)",
                                               json_schema_extra=_range(1))] = None,
    ) -> ToolResult:
        def run():
            _check_int("context_lines", context_lines, 0, MAX_CONTEXT_LINES)
            res = svc.nav.window(entity_id, context_lines)
            lo, hi = res["shown"]
            code_lines = res["code"].splitlines(keepends=True)
            if from_line is not None:
                _check_int("from_line", from_line, lo, hi)
                code_lines = code_lines[from_line - lo:]
                lo = from_line
            base = {k: res[k] for k in ("entity_id", "file", "start", "end")}
            if res.get("stale"):
                base["stale"] = res["stale"]
            svc.notes(base)

            def build(k: int) -> tuple[str, dict]:
                out = {**base, "shown": [lo, lo + k - 1] if k else [lo, lo - 1], "code": "".join(code_lines[:k])}
                head = (f"# {one_line(res['entity_id'])}  {one_line(res['file'])}:{res['start']}-{res['end']}"
                        f"  (showing lines {lo}-{lo + k - 1})\n")
                text = head + block(out["code"])
                if k < len(code_lines):
                    nxt = lo + k
                    children = [e for e in svc.nav.store.entities_in_file(res["file"])
                                if e.parent == res["entity_id"]][:8]
                    hint = f"call open_surgical_window(entity_id={res['entity_id']!r}, from_line={nxt}) for the rest"
                    if children:
                        hint += " or open a smaller entity inside: " + ", ".join(c.id for c in children)
                    out["truncated"] = f"cut at line {nxt - 1} of {hi} by the {cap}-token cap; {hint}"
                    text += f"# ... {out['truncated']}\n"
                text += _note_lines(out)
                return text, out

            k, text = _fit(len(code_lines), lambda k: build(k)[0], cap)
            return _result(text, build(k)[1])

        return await svc.call("open_surgical_window", run)

    # -- repo_map ------------------------------------------------------------------------------

    @tool(
        "Map: the repository's most important files and definitions (signatures), ranked by PageRank over the "
        "reference graph and cut to max_tokens; pass focus (entity ids or file paths) to centre it on a region. "
        "Use it first in an unfamiliar repository, or to see what surrounds the code you found."
    )
    async def repo_map(
        max_tokens: Annotated[int, Field(description=f"token budget ({MIN_MAP_TOKENS}-{cap})",
                                         json_schema_extra=_range(MIN_MAP_TOKENS, cap))] = 1024,
        focus: _string_list("entity ids or file paths to personalize the ranking toward") = None,
    ) -> ToolResult:
        def run():
            _check_int("max_tokens", max_tokens, MIN_MAP_TOKENS, cap)
            if focus is not None and not all(isinstance(f, str) and f.strip() for f in focus):
                raise _user_error("focus must be a list of entity ids or file paths")
            res = svc.nav.repo_map(max_tokens - 40 if max_tokens > 2 * MIN_MAP_TOKENS else max_tokens,
                                   [f.strip() for f in focus] if focus else None)
            out = {k: res[k] for k in ("tokens", "files_shown", "files_total", "truncated")}
            if res.get("hint"):
                out["hint"] = res["hint"]
            svc.notes(out, whole_index=True, answer=res)
            text = (f"# repository map: {res['files_shown']} of {res['files_total']} files, {res['tokens']} tokens"
                    + (f"; {res['hint']}" if res.get("hint") else "") + "\n" + block(res["map"]))
            text += _note_lines(out)
            out["map"] = res["map"]
            text, cut = truncate_to_tokens(text, cap)
            if cut:
                out["truncated"] = True
            return _result(text, out)

        return await svc.call("repo_map", run)

    # -- find_symbol / find_references ---------------------------------------------------------------

    @tool(
        "Look up where a name is defined: bare (save), qualified (User.save) or dotted module path "
        "(pkg.models.User); suggests close names when nothing matches. Use it when you already know the name."
    )
    async def find_symbol(
        name: Annotated[str, Field(description="a function, class or method name, bare or qualified")],
        limit: Annotated[int, Field(description=f"definitions to return (1-{MAX_SYMBOL_LIMIT})",
                                    json_schema_extra=_range(1, MAX_SYMBOL_LIMIT))] = 20,
    ) -> ToolResult:
        def run():
            if not isinstance(name, str) or not name.strip():
                raise _user_error("name is empty: give a function, class or method name")
            _check_int("limit", limit, 1, MAX_SYMBOL_LIMIT)
            res = svc.nav.find_symbol(name, limit=limit)
            defs = [{**d, "signature": _short(d["signature"])} for d in res["definitions"]]
            base = {"name": res["name"], "total": res["total"]}
            svc.notes(base, [d["file"] for d in defs])

            def build(k: int) -> dict:
                out = {**base, "definitions": defs[:k]}
                if k < res["total"]:
                    out["more"] = (f"showing {k} of {res['total']}; qualify the name (Class.method, pkg.module.name) "
                                   + ("or raise limit" if k == len(defs) else f"(cut by the {cap}-token cap)"))
                return out

            k, text = _fit(len(defs), lambda k: render_json(build(k)), cap)
            return _result(text, build(k))

        return await svc.call("find_symbol", run)

    @tool(
        "Every place that uses an entity: call sites, imports, subclasses, raises (file:line, the using entity, "
        "the edge's confidence and how it was resolved). Use it before changing a signature or behaviour."
    )
    async def find_references(
        entity_id: Annotated[str, Field(description="entity id, e.g. func:pkg/auth.py:validate_token")],
        limit: Annotated[int, Field(description=f"references to return (1-{MAX_REFS_LIMIT})",
                                    json_schema_extra=_range(1, MAX_REFS_LIMIT))] = 50,
        offset: Annotated[int, Field(description="skip this many references (paging)", json_schema_extra=_range(0))] = 0,
    ) -> ToolResult:
        def run():
            _check_int("limit", limit, 1, MAX_REFS_LIMIT)
            _check_int("offset", offset, 0)
            res = svc.nav.find_references(entity_id, limit=offset + limit)
            refs = res["references"][offset:]
            base = {"entity_id": res["entity_id"], "total": res["total"], "offset": offset}
            svc.notes(base, [r["file"] for r in refs] + [res["entity_id"].split(":", 2)[1]], answer=res)

            def build(k: int) -> dict:
                out = {**base, "references": refs[:k]}
                if offset + k < res["total"]:
                    why = "" if k == len(refs) else f" (cut by the {cap}-token cap)"
                    out["more"] = f"{res['total'] - offset - k} more{why}; call again with offset={offset + k}"
                return out

            k, text = _fit(len(refs), lambda k: render_json(build(k)), cap)
            return _result(text, build(k))

        return await svc.call("find_references", run)

    # -- assemble_context ----------------------------------------------------------------------

    @tool(
        "One shot: a token-budgeted context for a task: the best-matching entities' code, their callers' and callees' "
        "signatures, and a focused slice of the repository map, never over max_tokens. Use it when you want one "
        "answer to start from instead of several navigation calls."
    )
    async def assemble_context(
        query: Annotated[str, Field(description="the task, question or bug report")],
        max_tokens: Annotated[int, Field(description=f"token budget ({MIN_CONTEXT_TOKENS}-{cap})",
                                         json_schema_extra=_range(MIN_CONTEXT_TOKENS, cap))] = min(8000, cap),
    ) -> ToolResult:
        def run():
            if not isinstance(query, str) or not query.strip():
                raise _user_error("query is empty: describe the task or paste the bug report")
            _check_int("max_tokens", max_tokens, MIN_CONTEXT_TOKENS, cap)
            head = f"# context for: {_echo(query, 160)}\n# @TOKENS@ of {max_tokens} tokens\n"
            # room for the header and a stale/partial note, so the context itself is never cut
            budget = max(MIN_CONTEXT_TOKENS, max_tokens - count_tokens(head) - (80 if max_tokens > 400 else 8))
            res = svc.nav.assemble_context(query, budget)
            out = {"query": _echo(query), "tokens": res["tokens"], "max_tokens": max_tokens, "entities": res["entities"]}
            svc.notes(out, [e.split(":", 2)[1] for e in res["entities"]], answer=res)
            text = head.replace("@TOKENS@", str(res["tokens"]), 1) + block(res["context"]) + ("" if res["context"].endswith("\n") else "\n")
            text += _note_lines(out)
            out["context"] = res["context"]
            text, cut = truncate_to_tokens(text, max_tokens)
            if cut:
                out["truncated"] = True
            return _result(text, out)

        return await svc.call("assemble_context", run)

    # -- index_status --------------------------------------------------------------------------

    @tool(
        "What the index holds and how fresh it is: files, entities, edges by relation, vectors done/pending, last "
        "update, files changed on disk but not yet re-indexed, and the pipeline's actor health when served by `nsccn serve`. "
        "Use it when answers look incomplete or stale."
    )
    async def index_status() -> ToolResult:
        def run():
            out = svc.nav.status()
            live = svc.pipeline_status(fresh=True)
            if live is not None:
                out["pipeline"] = live
            partial = svc.partial_note()
            if partial:
                out["partial"] = partial
            full = (live or {}).get("disk_full") or svc.nav.disk_note()
            if full:
                out["disk_full"] = full
            out["server"] = {"nsccn": __version__, "result_token_cap": cap,
                             "query_embedding": svc.nav.embedder is not None}
            if not out.get("indexed"):
                out["hint"] = f"no index yet: run `nsccn index {svc.root}` (or `nsccn serve`)"
            text, cut = truncate_to_tokens(render_json(out, max_depth=3), cap)  # one line per actor
            return _result(text, out)

        return await svc.call("index_status", run)

    return mcp


def run_stdio(root: str | Path, db_path: str | Path | None = None, embedder=None,
              status_provider: Callable[[], dict | None] | None = None) -> None:
    """Serve the tools over stdio until the client closes the stream. Logs go to stderr."""
    server = create_server(root, db_path=db_path, embedder=embedder, status_provider=status_provider)
    try:
        server.run(transport="stdio", show_banner=False)
    finally:
        server._nsccn.close()
