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

The tools are declared once, in nsccn/serving/tools.py (parameters, limits, the Navigator call, the
text), and registered here from that table. Each answer is one text block meant for the model (compact JSON for the structured tools, plain
numbered code for skeletons and windows) plus the same data as `structuredContent` for
programmatic clients.

`create_server(root)` builds the server in-process (tests use `fastmcp.Client(server)`);
`run_stdio(root)` serves it over stdio (`nsccn mcp`, and the pipeline's MCP front actor, which
passes `status_provider`: a callable returning the live pipeline status, merged into
`index_status` and used for the `partial` note: a dict whose `partial` is true, whose `state` is
"indexing", or whose `files_pending` / `vectors_pending` / `pending` is above 0, marks answers as
partial).
"""

import inspect
import logging
import os
import threading
import time
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path

import anyio
import apsw
from fastmcp import FastMCP
from fastmcp.exceptions import ToolError, ValidationError as FastMCPValidationError
from fastmcp.server.middleware import Middleware
from fastmcp.tools.base import ToolResult
from mcp_types import TextContent, ToolAnnotations
from pydantic import ValidationError as PydanticValidationError

from nsccn import __version__
from nsccn.serving.escape import one_line
from nsccn.serving.navigator import ArgumentError, Navigator, NavigatorError, said
from nsccn.serving.render import render_json  # noqa: F401  (tests read answers with it)
from nsccn.store import IndexOutdated
from nsccn.tokens import count_tokens
from nsccn.serving.tools import MCP_TOOLS, REQUIRED, Tool, mcp_signature

log = logging.getLogger("nsccn.mcp")

SERVER_NAME = "nsccn"
MAX_ERROR_CHARS = 2000  # a tool error longer than this is cut in the middle
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
            parts, own = [], []
            errors = cause.errors() if isinstance(cause, PydanticValidationError) else []
            declared = {p.name: p for t in MCP_TOOLS if t.name == name for p in t.mcp_params}
            for err in errors:
                loc = [str(x) for x in err.get("loc", ()) if not isinstance(x, int)]
                param = loc[-1] if loc else "?"
                p = declared.get(param)
                if p is not None and p.type in (int, float) and err.get("type") not in (
                        "missing", "missing_argument", "extra_forbidden", "unexpected_keyword_argument"):
                    own.append(p.type_message(err.get("input"), self.server._nsccn.cap))  # as the command line says it
                    continue
                if err.get("type") in ("missing", "missing_argument"):
                    what = "is required"
                elif err.get("type") in ("extra_forbidden", "unexpected_keyword_argument"):
                    what = f"is not a parameter of {name}; parameters: {', '.join(props) or 'none'}"
                else:
                    what = f"{err.get('msg', 'is invalid').lower()} (got {said(err.get('input'))})"
                desc = props.get(param, {}).get("description")
                parts.append(f"{param} {what}" + (f"; expected {desc}" if desc else ""))
            if own and not parts:
                raise _user_error("; ".join(own)) from None
            parts = own + parts
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
        except ArgumentError as exc:  # the caller's input: its message as it is
            raise _user_error(exc.message) from None
        except NavigatorError as exc:
            raise _user_error(_closest_message(exc)) from None
        except IndexOutdated as exc:  # an index of another schema version: actionable (`nsccn index`)
            raise _user_error(str(exc)) from None
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

    def partial_note(self, vectors: bool = True) -> str | None:
        """A line while the pipeline is still building the index, or None; `vectors`: the answer
        reads vectors (search, localize, context), so vectors still pending concern it too."""
        live = self.pipeline_status()
        if not live:
            return None
        keys = ("files_pending", "vectors_pending", "pending") if vectors else ("files_pending", "pending")
        pending = {k: live[k] for k in keys if isinstance(live.get(k), (int, float)) and live[k] > 0}
        files_only = not vectors and not live.get("files_pending") and live.get("state") != "indexing"
        if (live.get("partial") and not files_only) or pending or live.get("state") == "indexing":
            what = ", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in pending.items()) or "indexing in progress"
            return f"the index is still being built ({what}); answers may miss what is not indexed yet"
        return None

    def notes(self, out: dict, files: Iterable[str] | None = None, whole_index: bool = False,
              answer=None, vectors: bool = False) -> dict:
        """Add `stale` / `partial` notes to an answer; `answer`: the navigator's answer it is made
        from, whose `unresolved` note (an answer built from edges) it keeps; `vectors`: the answer
        reads vectors (only then do pending vectors make it partial)."""
        unresolved = answer.get("unresolved") if isinstance(answer, dict) else getattr(answer, "unresolved", None)
        if unresolved:
            out["unresolved"] = unresolved
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
        partial = self.partial_note(vectors)
        if partial:
            out["partial"] = partial
        live = self.pipeline_status()  # the pipeline gone (`nsccn serve` reattaching): say so first
        if live and isinstance(live.get("stale"), str):
            out["stale"] = live["stale"] + (f"; also: {out['stale']}" if out.get("stale") else "")
        full = (live or {}).get("disk_full") or self.nav.disk_note()  # the writer's own word first
        if full:
            out["disk_full"] = full if full.startswith("disk full") else f"disk full: {full}"
        return out


def _result(text: str, data: dict) -> ToolResult:
    return ToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def create_server(root: str | Path, db_path: str | Path | None = None, embedder=None,
                  status_provider: Callable[[], dict | None] | None = None) -> FastMCP:
    """A FastMCP server exposing NSCCN's tools for the repository at `root`."""
    svc = NavigatorService(root, db_path=db_path, embedder=embedder, status_provider=status_provider)
    # Every answer is measured in tokens: load the tokenizer now, not in a tool's thread that may
    # still run when the client leaves (importing at interpreter shutdown fails with a traceback).
    count_tokens("warm")
    mcp = FastMCP(SERVER_NAME, instructions=INSTRUCTIONS, version=__version__, mask_error_details=True)
    mcp._nsccn = svc  # for tests and the front actor
    mcp.add_middleware(ArgumentErrors(mcp))

    for t in MCP_TOOLS:  # each declared once, in nsccn.serving.tools
        fn = _tool_function(svc, t)
        mcp.tool(name=t.name, description=t.description, annotations=_READ_ONLY, output_schema=None)(fn)
    return mcp


def _tool_function(svc: NavigatorService, t: Tool):
    """The tool as fastmcp registers it: a function whose signature is the tool's parameters
    (pydantic makes the input schema and converts the arguments from it); the body checks them
    against their limits and answers, on a worker thread within the time budget."""
    cap = svc.cap
    params = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=ann,
                                default=inspect.Parameter.empty if default is REQUIRED else default)
              for name, ann, default in mcp_signature(t, cap)]

    async def call(**arguments) -> ToolResult:
        def run() -> ToolResult:
            return _result(*t.answer(svc, t.request(arguments, cap)))

        return await svc.call(t.name, run)

    call.__name__ = t.name
    call.__signature__ = inspect.Signature(params, return_annotation=ToolResult)
    call.__annotations__ = {**{p.name: p.annotation for p in params}, "return": ToolResult}
    return call


def run_stdio(root: str | Path, db_path: str | Path | None = None, embedder=None,
              status_provider: Callable[[], dict | None] | None = None) -> None:
    """Serve the tools over stdio until the client closes the stream. Logs go to stderr."""
    server = create_server(root, db_path=db_path, embedder=embedder, status_provider=status_provider)
    try:
        server.run(transport="stdio", show_banner=False)
    finally:
        server._nsccn.close()
