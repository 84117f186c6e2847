"""The `nsccn` command: above the library (nsccn/), the actors (workers/) and their supervisor
(supervisor/), so that it can start pipelines while the library never reaches up into them. The
query commands are built from the tools' table (nsccn.serving.tools).

Exit codes: 0 success, 1 the query failed (unknown id, bad path, nothing found), 2 bad usage (an
argument out of its range, as an MCP call with it is told), 3 no index yet.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from nsccn import __version__
from nsccn.config import ConfigError
from nsccn.serving.escape import one_line
from nsccn.private import PrivatePathError
from nsccn.serving.tools import COMMANDS, EXIT_FAILED, EXIT_NO_INDEX, EXIT_OK, EXIT_USAGE

if TYPE_CHECKING:  # the query stack (search, graph, ranking) is imported only by the commands that query
    from nsccn.serving.navigator import Navigator

def _print_json(data) -> None:
    print(json.dumps(data, indent=2, default=str))


def _repository(args) -> Path:
    """The repository `index` and `serve` work on: the path given, else (from a subdirectory) the
    enclosing repository whose index exists, as queries find it, not a second index of the
    subdirectory; with no index yet, the top of the git work tree around (as git commands work on
    the whole repository from anywhere in it), else this directory."""
    if args.path is not None:
        return Path(args.path)
    here = Path.cwd().resolve()
    root = find_root(here)
    if root == here and not _has_index(here):
        return work_tree_top(here) or here
    return root


def _has_index(root: Path) -> bool:
    from nsccn.config import load_config

    try:
        config = load_config(root)
    except (ValueError, OSError):
        return True  # a bad configuration: the command there says so
    return Path(config.index_dir).is_absolute() or config.db_path(root).is_file()


def work_tree_top(start: Path) -> Path | None:
    """The nearest directory at or above `start` that holds a `.git` (a work tree's top), or None."""
    return next((cand for cand in (start, *start.parents) if (cand / ".git").exists()), None)


class _Progress:
    """The progress of one phase of `nsccn index` (files parsed, entities embedded), made on its
    first report: a tqdm bar on a terminal; into a log or a pipe a plain line at the start, at
    most one every `every_s` seconds and at the end, so long work (embedding a large repository
    takes minutes) is never silent and never floods the log; nothing with `quiet` (--json)."""

    def __init__(self, what: str, unit: str, quiet: bool, every_s: float = 10.0):
        self.what, self.unit, self.quiet, self.every_s = what, unit, quiet, every_s
        self.bar = None
        self.started = self.last = None

    def __call__(self, done: int, total: int) -> None:
        if self.quiet:
            return
        now = time.monotonic()
        if self.started is None:
            self.started = now
            if sys.stderr.isatty():
                from tqdm import tqdm  # a run with nothing to parse does without

                self.bar = tqdm(total=total, unit=self.unit, desc=self.what, file=sys.stderr)
        if self.bar is not None:
            self.bar.n = done
            self.bar.refresh()
        elif self.last is None or done >= total or now - self.last >= self.every_s:
            self.last = now
            print(f"nsccn: {self.what} {done}/{total} {self.unit} ({now - self.started:.0f} s)", file=sys.stderr,
                  flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def cmd_index(args) -> int:
    if args.ray or args.repos or args.out:  # on a Ray cluster (nsccn_cli/ray_index.py)
        from nsccn_cli.ray_index import cmd_index_ray

        return cmd_index_ray(args)
    root = _repository(args)
    if not root.is_dir():
        print(f"nsccn: {root} is not a directory", file=sys.stderr)
        return EXIT_USAGE
    progress = _Progress("parsing", "files", quiet=args.json)
    embed_progress = _Progress("embedding", "entities", quiet=args.json)
    in_process, scan, config = args.in_process, None, None
    started = time.perf_counter()
    if not args.pipeline:
        from nsccn.config import load_config
        from supervisor.addresses import running_pipeline

        config = load_config(root.resolve())
        info = running_pipeline(root.resolve(), config)
        if info is not None:  # its writer owns the index: a second writer would go behind its back
            from supervisor.cli import busy_message  # (zmq and the supervisor: only when one runs)

            print(f"nsccn: {busy_message(info)}", file=sys.stderr)
            return EXIT_FAILED
        if not in_process:  # a small job costs less in this process than the actors' start
            from nsccn.indexing.indexer import PIPELINE_FROM_FILES, files_to_parse
            from nsccn.reading.scan import scan_repository

            scan = scan_repository(root.resolve(), config)
            in_process = files_to_parse(root.resolve(), config.db_path(root.resolve()), scan) < PIPELINE_FROM_FILES
    if in_process:
        from nsccn.indexing.indexer import index_repository

        try:
            summary = index_repository(root, config=config, workers=args.workers, progress=progress,
                                       embed=not args.no_embed, embed_progress=embed_progress, scan=scan)
        except Exception as exc:
            from nsccn.store import is_disk_full

            if is_disk_full(exc):  # what was committed stays; the next run goes on from there
                print(f"nsccn: disk full: the index of {root} could not be written ({is_disk_full(exc)}); what was committed"
                      " stays: free some space and run `nsccn index` again", file=sys.stderr)
                return EXIT_FAILED
            from nsccn.errors import ResolveFailed

            if not isinstance(exc, ResolveFailed):
                raise
            # Rolled back, the crash marker kept: the next run resolves again.
            print(f"nsccn: {exc}; the index keeps its old edges and the next run resolves again", file=sys.stderr)
            return EXIT_FAILED
        summary.seconds = time.perf_counter() - started  # the scan made here included
    else:  # the actor pipeline (supervisor/): parser pool, single writer, embedder
        from supervisor.cli import pipeline_index

        summary = pipeline_index(root, workers=args.workers, embed=not args.no_embed, progress=not args.json)
        if isinstance(summary, int):
            return summary
    progress.close()
    embed_progress.close()
    return print_index_summary(summary, args.json)


def print_index_summary(summary, as_json: bool) -> int:
    """`nsccn index`'s report of one repository: warnings on stderr, the summary on stdout."""
    for warning in summary.warnings:  # the index is complete; these say what it could not honour
        print(f"nsccn: warning: {one_line(warning)}", file=sys.stderr)
    if as_json:
        _print_json(summary.as_dict())
        return EXIT_OK
    print(f"indexed {summary.root} in {summary.seconds:.2f} s -> {summary.db_path}")
    print(f"  files: {summary.files_seen} seen, {summary.files_indexed} parsed, {summary.files_unchanged} unchanged,"
          f" {summary.files_deleted} removed, {summary.files_with_syntax_errors} with syntax errors")
    if summary.files_with_syntax_errors:  # named, so they can be looked at
        from nsccn.serving.navigator import Navigator

        nav = Navigator(Path(summary.root))
        try:
            named = nav.syntax_errors(3)
        finally:
            nav.close()
        more = "; `nsccn status --syntax-errors` lists all" if summary.files_with_syntax_errors > len(named) else ""
        print(f"  syntax errors in: {'; '.join(map(one_line, named))}{more}")
    if summary.skipped:
        detail = ", ".join(f"{n} {why}" + (f" (e.g. {one_line(summary.skipped_examples[why])})" if summary.skipped_examples.get(why) else "")
                           for why, n in summary.skipped.items())
        print(f"  skipped: {detail}")
    print(f"  entities: {summary.entities}   lines parsed: {summary.lines_indexed}")
    rels = ", ".join(f"{k} {v}" for k, v in sorted(summary.edges_by_relation.items()))
    print(f"  edges: {summary.edges} ({rels})")
    if summary.vectors:
        v = summary.vectors
        nodes = f", {v['from_nodes']} made on the Ray nodes" if v.get("from_nodes") else ""
        print(f"  vectors: {v['embedded']} embedded, {v['from_cache']} from cache{nodes}, model {v['model']}")
    if summary.ray:
        r = summary.ray
        print(f"  ray: {r['tasks']} tasks on {r['nodes']} node(s), {r['cpus']} CPUs, {r['retries']} retried;"
              f" start {r['seconds']['ray_start']:.1f} s, parse {r['seconds'].get('parse', 0):.1f} s")
    return EXIT_OK


def cmd_serve(args) -> int:
    """Index through the pipeline, keep watching, serve MCP on stdio (nothing else on stdout)."""
    root = _repository(args)
    if not root.is_dir():
        print(f"nsccn: {root} is not a directory", file=sys.stderr)
        return EXIT_USAGE
    if args.no_mcp:  # the pipeline in this process
        from supervisor.cli import serve
    else:  # the MCP front, attached to the shared pipeline
        from workers.mcp_front import serve
    return serve(str(root), workers=args.workers, embed=not args.no_embed)


def cmd_stop(args) -> int:
    """End the repository's shared pipeline (the one `nsccn serve` starts and leaves lingering)."""
    from nsccn.config import load_config
    from supervisor.cli import stop

    given = Path(args.path)
    if not given.is_dir():
        print(f"nsccn: {args.path} is not a directory", file=sys.stderr)
        return EXIT_USAGE
    root = find_root(given.resolve())
    return stop(root, load_config(root))


def cmd_mcp(args) -> int:
    """Serve the MCP tools over stdio in this process, against the existing index (no pipeline)."""
    root = Path(args.root)
    if not root.is_dir():
        print(f"nsccn: {root} is not a directory", file=sys.stderr)
        return EXIT_USAGE
    from nsccn.serving.mcp_server import run_stdio

    run_stdio(find_root(root))
    return EXIT_OK


def live_status(nav: Navigator) -> dict | None:
    """The running pipeline's status (`nsccn status`), or None when none runs."""
    try:
        from supervisor.control import query_status
    except ImportError:
        return None
    return query_status(nav.root, nav.config)


QUERY_EMBED_TIMEOUT_S = 3.0  # past it, the model is loaded here (as long as the pipeline's own load)


def pipeline_embedder(nav: Navigator):
    """The running pipeline's embedder, to embed this query with the model it has loaded already
    (a CLI search would otherwise load one of its own, ~2 s); None when no pipeline with an
    embedder runs on the repository, or the index has no vectors (no query embedding needed)."""
    from nsccn.config import STATIC_MODEL

    if nav.vectors()[0] in (None, STATIC_MODEL):
        return None  # no vectors, or the static model's: embedded here in microseconds
    try:
        from supervisor.addresses import running_pipeline
    except ImportError:
        return None
    info = running_pipeline(nav.root, nav.config)
    query = ((info or {}).get("addresses") or {}).get("query")
    if not info or not info.get("embed") or not query:
        return None
    from workers.query_client import QueryEmbedClient

    return QueryEmbedClient(query, root=nav.root, timeout_s=QUERY_EMBED_TIMEOUT_S)


def find_root(start: Path) -> Path:
    """The repository a query is about, found as git finds its own: the nearest directory at or
    above `start` whose index exists, not looking above a `.git` (the top of a work tree). `start`
    itself when none has one (the command then says there is no index). An index directory
    outside the repository (an absolute path) says which repository it holds: that one, when
    `start` is in it, else `start`."""
    from nsccn.config import indexed_root, load_config

    start = start.resolve()
    for cand in (start, *start.parents):
        try:
            config = load_config(cand)
        except (ValueError, OSError):
            return cand  # its configuration is bad: the Navigator there says so
        if Path(config.index_dir).is_absolute():
            held = indexed_root(config)
            return held if held is not None and (held == start or held in start.parents) else start
        if config.db_path(cand).is_file():
            return cand
        if (cand / ".git").exists():
            break
    return start


def _config_problem(root: Path) -> str | None:
    """One line saying what is wrong with the repository's `.nsccn/config.json`, or None. Checked
    once up front, so no command goes on to fail with a traceback half way."""
    from nsccn.config import load_config

    if not root.is_dir():
        return None  # the command says so itself
    try:
        load_config(root)
    except (ValueError, OSError) as exc:
        text = str(exc) if isinstance(exc, ValueError) else f"cannot read the configuration {exc.filename or ''}: {exc.strerror or exc}"
        return " ".join(text.split())
    return None


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="nsccn", description="Neuro-Symbolic Causal Code Navigator")
    p.add_argument("--version", action="version", version=f"nsccn {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    def query_cmd(name, help_, func):
        sp = sub.add_parser(name, help=help_)
        sp.add_argument("--root", default=".", help="the repository, or any directory inside it (default: the current "
                        "directory; the nearest enclosing index is used, as git finds its repository)")
        sp.add_argument("--json", action="store_true", help="print JSON")
        sp.set_defaults(func=func, needs_nav=True)
        return sp

    sp = sub.add_parser("index", help="index a repository (incremental) and exit")
    sp.add_argument("path", nargs="?", default=None,
                    help="the repository (default: the one around this directory whose index exists, else the top of the git work tree around it, else this directory)")
    sp.add_argument("--workers", type=int, default=0, help="parser processes (0: one per core)")
    vectors = sp.add_mutually_exclusive_group()
    vectors.add_argument("--no-embed", action="store_true",
                         help="no vectors (lexical + graph search only; by default every entity gets one)")
    vectors.add_argument("--embed", action="store_true", help=argparse.SUPPRESS)  # the default since vectors are cheap
    mode = sp.add_mutually_exclusive_group()
    mode.add_argument("--in-process", action="store_true", help="index in this process (no actor pipeline)")
    mode.add_argument("--pipeline", action="store_true",
                      help="run the actor pipeline however few files need a parse (default: only for many)")
    mode.add_argument("--ray", metavar="ADDRESS", help="parse on a Ray cluster: local (a runtime on loopback, in this"
                      " command), auto (this machine's cluster), HOST:PORT or ray://HOST:PORT (a private cluster);"
                      " needs pip install 'nsccn[ray]'")
    sp.add_argument("--repos", metavar="FILE", help="with --ray: index many repositories, one path (or git URL and"
                    " commit) a line, or a directory of checkouts")
    sp.add_argument("--out", metavar="DIR", help="with --repos: each repository's index in DIR/NAME (default: its own .nsccn/)")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_index, needs_nav=False)

    sp = sub.add_parser("serve", help="index, keep watching and serve MCP on stdio (the actor pipeline)")
    sp.add_argument("path", nargs="?", default=None,
                    help="the repository (default: the one around this directory whose index exists, else the top of the git work tree around it, else this directory)")
    sp.add_argument("--workers", type=int, default=0, help="parser processes (0: one per core)")
    sp.add_argument("--no-embed", action="store_true", help="no embeddings (lexical + graph search only)")
    sp.add_argument("--no-mcp", action="store_true", help="index and watch only, no MCP on stdio")
    sp.set_defaults(func=cmd_serve, needs_nav=False)

    sp = sub.add_parser("stop", help="stop the repository's pipeline (started by `nsccn serve`, lingering after it)")
    sp.add_argument("path", nargs="?", default=".", help="the repository, or a directory inside it")
    sp.set_defaults(func=cmd_stop, needs_nav=False)

    for tool in COMMANDS:  # the query commands, declared once in nsccn.serving.tools
        sp = query_cmd(tool.command, tool.help, tool.run)
        sp.set_defaults(embeds_query=tool.embeds_query, tool=tool)
        tool.add_cli(sp)  # its parameters (as MCP has them) and its own arguments
    sp = sub.add_parser("mcp", help="serve the MCP tools over stdio against an existing index (no pipeline)")
    sp.add_argument("--root", default=".", help="repository root (default: current directory)")
    sp.set_defaults(func=cmd_mcp, needs_nav=False)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0) if exc.code in (0, None) else EXIT_USAGE
    bad_config = _config_problem(Path(getattr(args, "root", None) or getattr(args, "path", None) or "."))
    if bad_config:
        print(f"nsccn: {bad_config}", file=sys.stderr)
        return EXIT_USAGE
    try:
        if not args.needs_nav:
            return args.func(args)
        from nsccn.serving.answers import plain
        from nsccn.serving.navigator import ArgumentError, Navigator, NavigatorError, NoIndex

        given = Path(args.root).resolve()
        if not given.is_dir():  # a typo, not a repository without an index
            print(f"nsccn: no such directory: {args.root}" if not given.exists() else f"nsccn: {args.root} is not a directory",
                  file=sys.stderr)
            return EXIT_USAGE
        root = find_root(given)  # from a subdirectory: the enclosing repository's index
        args.here = given.relative_to(root) if root != given else None
        nav = Navigator(root)
    except (ConfigError, PrivatePathError) as exc:  # a bad config file, an index dir we must not use
        print(f"nsccn: {exc}", file=sys.stderr)
        return EXIT_FAILED
    try:
        args.tool.cli_request(args, int(nav.config.result_token_cap))  # as MCP checks them: the same messages
        if getattr(args, "embeds_query", False):
            nav.embedder = pipeline_embedder(nav)
        args.pipeline_status = live_status
        out = plain(args.func(nav, args))  # the answer as JSON-able data, once, here
        full = nav.disk_note() if isinstance(out, dict) else None
        if full:  # in every answer: edits made now are not in the index until there is room
            out["disk_full"] = full
            if not args.json:
                print(f"# note: {one_line(full)}", file=sys.stderr)
    except NavigatorError as exc:
        if args.json:
            _print_json(exc.as_dict())
        else:
            print(f"nsccn: {one_line(exc.message)}", file=sys.stderr)  # it may quote a path or a name
            if exc.suggestions:
                print("did you mean:\n  " + "\n  ".join(map(one_line, exc.suggestions)), file=sys.stderr)
        return EXIT_NO_INDEX if isinstance(exc, NoIndex) else EXIT_USAGE if isinstance(exc, ArgumentError) else EXIT_FAILED
    finally:
        if nav.embedder is not None:
            nav.embedder.close()
        nav.close()
    if args.json:
        _print_json(out)
    return getattr(args, "exit_code", EXIT_OK)


def entry() -> int:
    try:
        return main()
    except BrokenPipeError:  # `nsccn ... | head` closed the pipe: not an error
        sys.stderr.close()
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(entry())
