"""The `nsccn` command.

Exit codes: 0 success, 1 the query failed (unknown id, bad path, nothing found), 2 bad usage,
3 no index yet.
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
from nsccn.escape import block, one_line
from nsccn.private import PrivatePathError

if TYPE_CHECKING:  # the query stack (search, graph, ranking) is imported only by the commands that query
    from nsccn.navigator import Navigator

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_NO_INDEX = 0, 1, 2, 3


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
            from nsccn.indexer import PIPELINE_FROM_FILES, files_to_parse
            from nsccn.scan import scan_repository

            scan = scan_repository(root.resolve(), config)
            in_process = files_to_parse(root.resolve(), config.db_path(root.resolve()), scan) < PIPELINE_FROM_FILES
    if in_process:
        from nsccn.indexer import index_repository

        try:
            summary = index_repository(root, config=config, workers=args.workers, progress=progress,
                                       embed=not args.no_embed, embed_progress=embed_progress, scan=scan)
        except Exception as exc:
            from nsccn.store import is_disk_full

            if is_disk_full(exc):  # what was committed stays; the next run goes on from there
                print(f"nsccn: disk full: the index of {root} could not be written ({is_disk_full(exc)}); what was committed"
                      " stays: free some space and run `nsccn index` again", file=sys.stderr)
                return EXIT_FAILED
            from nsccn.resolve_partitions import ResolveFailed  # not imported by a run that resolves nothing

            if not isinstance(exc, ResolveFailed):
                raise
            # Rolled back, the crash marker kept: the next run resolves again.
            print(f"nsccn: {exc}; the index keeps its old edges and the next run resolves again", file=sys.stderr)
            return EXIT_FAILED
        summary.seconds = time.perf_counter() - started  # the scan made here included
    else:  # the actor pipeline (supervisor/): parser pool, single writer, embedder
        from supervisor.cli import pipeline_index

        summary = pipeline_index(root, workers=args.workers, embed=not args.no_embed, progress=not args.json,
                                 overrides=_tcp_override(args))
        if isinstance(summary, int):
            return summary
    progress.close()
    embed_progress.close()
    for warning in summary.warnings:  # the index is complete; these say what it could not honour
        print(f"nsccn: warning: {one_line(warning)}", file=sys.stderr)
    if args.json:
        _print_json(summary.as_dict())
        return EXIT_OK
    print(f"indexed {summary.root} in {summary.seconds:.2f} s -> {summary.db_path}")
    print(f"  files: {summary.files_seen} seen, {summary.files_indexed} parsed, {summary.files_unchanged} unchanged,"
          f" {summary.files_deleted} removed, {summary.files_with_syntax_errors} with syntax errors")
    if summary.skipped:
        detail = ", ".join(f"{n} {why}" + (f" (e.g. {one_line(summary.skipped_examples[why])})" if summary.skipped_examples.get(why) else "")
                           for why, n in summary.skipped.items())
        print(f"  skipped: {detail}")
    print(f"  entities: {summary.entities}   lines parsed: {summary.lines_indexed}")
    rels = ", ".join(f"{k} {v}" for k, v in sorted(summary.edges_by_relation.items()))
    print(f"  edges: {summary.edges} ({rels})")
    if summary.vectors:
        v = summary.vectors
        print(f"  vectors: {v['embedded']} embedded, {v['from_cache']} from cache, model {v['model']}")
    return EXIT_OK


def cmd_search(nav: Navigator, args) -> dict:
    out = nav.search(args.query, limit=args.limit, offset=args.offset, diversity=args.diversity)
    stale = nav.stale_note(r["file"] for r in out["results"])
    if stale:  # in the answer itself, not only on stderr
        out["stale"] = stale
    if not args.json:
        for i, r in enumerate(out["results"], start=args.offset + 1):
            print(f"{i:>3}. {r['score']:.4f}  {one_line(r['id'])}  ({one_line(r['file'])}:{r['line']})")
            print(f"       {one_line(r['signature'])}")
        if not out["results"]:
            print("no results")
        if out.get("more"):
            print(f"  ... {one_line(out['more'])}")
        if out.get("query_capped"):
            print(f"# note: {out['query_capped']}", file=sys.stderr)
        _print_notes(out, "stale")
        print(f"# ranking: {out['ranking']}", file=sys.stderr)
    return out


def _report_text(args) -> str:
    """The bug report: the argument, a file (--file), or standard input (`-`, or nothing given)."""
    from nsccn.navigator import NavigatorError

    if args.file:
        try:
            return Path(args.file).read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise NavigatorError(f"cannot read the report file {args.file}: {exc.strerror or exc}") from None
    if args.report not in (None, "-"):
        return args.report
    if args.report is None and sys.stdin.isatty():
        raise NavigatorError("no report: give it as an argument, with --file PATH, or on standard input")
    return sys.stdin.read()


def cmd_localize(nav: Navigator, args) -> dict:
    out = nav.localize(_report_text(args), limit=args.limit)
    if not args.json:
        print("files, most likely to change first:")
        for i, path in enumerate(out["files"], start=1):
            print(f"{i:>3}. {one_line(path)}")
        print("functions:")
        for i, r in enumerate(out["functions"], start=1):
            print(f"{i:>3}. {one_line(r['id'])}  ({one_line(r['file'])}:{r['line']})")
        if not out["files"]:
            print("nothing matched: try other words, or `nsccn map` to see what exists")
        print(f"# ranking: {out['ranking']}", file=sys.stderr)
        if out.get("query_capped"):
            print(f"# note: {out['query_capped']}", file=sys.stderr)
    return out


def cmd_skeleton(nav: Navigator, args) -> dict:
    out = nav.skeleton(_from_here(nav, args, args.file), tokens=args.tokens)
    if not args.json:
        print(block(out["skeleton"]), end="")
        if args.tokens:
            print(f"# {out['tokens']} tokens (source {out['source_tokens']}, {out['reduction']:.0%} smaller)",
                  file=sys.stderr)
        _print_notes(out, "stale")
    return out


def cmd_trace(nav: Navigator, args) -> dict:
    relations = args.relation or None
    out = nav.trace(args.entity_id, args.direction, args.depth, relations, args.min_confidence)
    if not args.json:
        _print_tree(out)
        _print_notes(out, "stale", "unresolved")
    return out


def _print_notes(out: dict, *keys: str) -> None:
    for key in keys:
        if out.get(key):
            print(f"# note: {one_line(out[key])}", file=sys.stderr)


def _print_tree(out: dict) -> None:
    ents = out["entities"]
    key = "target" if out["direction"] != "upstream" else "source"
    print(f"{one_line(out['root'])}  [{out['direction']}, depth {out['depth']}, {', '.join(out['relations'])}]")
    seen = {out["root"]}

    def walk(node: str, indent: int) -> None:
        for item in out["adjacency_list"].get(node, []):
            other = item.get("target") or item.get("source")
            meta = ents.get(other, {})
            where = f"{one_line(meta['file'])}:{meta['line']}" if "file" in meta else meta.get("kind", "")
            arrow = "->" if "target" in item else "<-"
            print(f"{'  ' * indent}{arrow} {item['relation']} {one_line(other)}  ({where}; {item['resolution']}, {item['confidence']})")
            if other not in seen:
                seen.add(other)
                walk(other, indent + 1)

    walk(out["root"], 1)
    if out["truncated"]:
        print("  ... truncated: narrow with --relation, --min-confidence or a smaller --depth")
    del key


def cmd_window(nav: Navigator, args) -> dict:
    out = nav.window(args.entity_id, args.context)
    if not args.json:
        print(f"# {one_line(out['entity_id'])}  {one_line(out['file'])}:{out['start']}-{out['end']}")
        print(block(out["code"]), end="")
        _print_notes(out, "stale")
    return out


def cmd_symbol(nav: Navigator, args) -> dict:
    out = nav.find_symbol(args.name)
    if not args.json:
        for d in out["definitions"]:
            print(f"{one_line(d['id'])}  ({one_line(d['file'])}:{d['line']})\n    {one_line(d['signature'])}")
    return out


def cmd_refs(nav: Navigator, args) -> dict:
    out = nav.find_references(args.entity_id, limit=args.limit)
    if not args.json:
        for r in out["references"]:
            print(f"{one_line(r['file'])}:{r['line']}  {r['relation']}  from {one_line(r['from'])}  ({r['resolution']}, {r['confidence']})")
        if not out["references"]:
            print("no references")
        _print_notes(out, "unresolved")
    return out


def cmd_map(nav: Navigator, args) -> dict:
    focus = [_from_here(nav, args, f) for f in args.focus] if args.focus else None  # a file as typed in a subdirectory
    out = nav.repo_map(args.max_tokens, focus)
    if not args.json:
        print(block(out["map"]), end="")  # (its names and signatures are one line each already)
        print(f"# {out['tokens']} tokens, {out['files_shown']} of {out['files_total']} files", file=sys.stderr)
        _print_notes(out, "unresolved")
    return out


def cmd_context(nav: Navigator, args) -> dict:
    out = nav.assemble_context(args.query, args.max_tokens)
    if not args.json:
        print(block(out["context"]))
        print(f"# {out['tokens']} of {out['max_tokens']} tokens", file=sys.stderr)
        _print_notes(out, "unresolved")
    return out


def cmd_status(nav: Navigator, args) -> dict:
    out = nav.status()
    if not out.get("indexed"):
        args.exit_code = EXIT_NO_INDEX  # printed all the same: where the index would be, and why not
    try:
        from supervisor.control import query_status

        live = query_status(nav.root, nav.config)
        if live is not None:
            out["pipeline"] = live
    except ImportError:
        pass
    if not args.json:
        for k, v in out.items():
            if k == "configuration" and "settings" in v:
                print("configuration:")
                for name, item in v["settings"].items():
                    print(f"  {name} = {json.dumps(item['value'])}  ({item['from']})")
                for line in v["refused"]:
                    print(f"  refused: {one_line(line)}")
                continue
            print(f"{k}: {json.dumps(v, default=str) if isinstance(v, (dict, list)) else one_line(v)}")
        clients = ((out.get("pipeline") or {}).get("clients") or {})
        if "attached" in clients:
            who = ", ".join(f"pid {c['pid']} since {c['since']}" for c in clients["attached"])
            left = f"; stops in {clients['stops_in_s']:g} s with none" if "stops_in_s" in clients else ""
            print(f"clients: {len(clients['attached'])} attached" + (f" ({who})" if who else "") + left)
    return out


def cmd_train_ranker(nav: Navigator, args) -> dict:
    progress = None
    if not args.json:
        def progress(done: int, total: int) -> None:
            if done == total or done % 25 == 0:
                print(f"  featurized {done}/{total} fix commits", file=sys.stderr, flush=True)
    out = nav.train_ranker(commits=args.commits, rounds=args.rounds, reset=args.reset, progress=progress)
    if not args.json:
        if args.reset:
            print(f"removed {out['removed']}" if out["removed"] else "no repository model to remove")
        else:
            print(f"trained on {out['queries']} of this repository's fix commits -> {out['model']}")
            print(f"note: {out['note']}")
        print(f"ranking: {out['ranking']}")
    return out


def cmd_serve(args) -> int:
    """Index through the pipeline, keep watching, serve MCP on stdio (nothing else on stdout)."""
    from supervisor.cli import serve

    root = _repository(args)
    if not root.is_dir():
        print(f"nsccn: {root} is not a directory", file=sys.stderr)
        return EXIT_USAGE
    return serve(str(root), workers=args.workers, embed=not args.no_embed, mcp=not args.no_mcp,
                 overrides=_tcp_override(args))


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


def _tcp_override(args) -> dict | None:
    """`--tcp HOST:BASE_PORT`: the pipeline over tcp (CURVE-authenticated), from the command line."""
    if not getattr(args, "tcp", None):
        return None
    from nsccn.config import _pipeline_from_env

    return {"pipeline": _pipeline_from_env(args.tcp, "--tcp")}


def cmd_worker(args) -> int:
    """A parser on another host: connects to a tcp pipeline with a copy of its key."""
    from nsccn.config import _pipeline_from_env
    from supervisor.keys import read_key
    from workers.base import remote_spec, setup_logging
    from workers.parser import Parser

    where = _pipeline_from_env(args.connect, "--connect")
    read_key(args.key_file)  # missing, or readable by others: say so before anything starts
    if not Path(args.root).is_dir():
        print(f"nsccn: {args.root} is not a directory (the repository, at the path the pipeline's host uses)",
              file=sys.stderr)
        return EXIT_USAGE
    spec = remote_spec("parser", where["host"], where["base_port"], args.key_file, args.root, args.name)
    setup_logging(spec.name)
    return Parser(spec).main()


def cmd_mcp(args) -> int:
    """Serve the MCP tools over stdio in this process, against the existing index (no pipeline)."""
    root = Path(args.root)
    if not root.is_dir():
        print(f"nsccn: {root} is not a directory", file=sys.stderr)
        return EXIT_USAGE
    from nsccn.mcp_server import run_stdio

    run_stdio(find_root(root))
    return EXIT_OK


QUERY_EMBED_TIMEOUT_S = 3.0  # past it, the model is loaded here (as long as the pipeline's own load)


def pipeline_embedder(nav: Navigator):
    """The running pipeline's embedder, to embed this query with the model it has loaded already
    (a CLI search would otherwise load one of its own, ~2 s); None when no pipeline with an
    embedder runs on the repository, or the index has no vectors (no query embedding needed)."""
    from nsccn.config import STATIC_MODEL

    if nav.vectors()[0] in (None, STATIC_MODEL):
        return None  # no vectors, or the static model's: embedded here in microseconds
    try:
        from supervisor.addresses import key_path, running_pipeline
    except ImportError:
        return None
    info = running_pipeline(nav.root, nav.config)
    query = ((info or {}).get("addresses") or {}).get("query")
    if not info or not info.get("embed") or not query:
        return None
    from workers.query_client import QueryEmbedClient

    key_file = str(key_path(nav.root, nav.config)) if query.startswith("tcp://") else ""
    return QueryEmbedClient(query, root=nav.root, timeout_s=QUERY_EMBED_TIMEOUT_S, key_file=key_file)


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


def _from_here(nav: Navigator, args, path: str) -> str:
    """A file path as the user typed it in a subdirectory (`nsccn skeleton models.py` inside
    src/pkg/): relative to where they are, when it is not a path from the repository root."""
    here = getattr(args, "here", None)
    if not here or not isinstance(path, str) or Path(path).is_absolute() or (nav.root / path).exists():
        return path
    return (here / path).as_posix() if (nav.root / here / path).exists() else path


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {value}")
    return value


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
    sp.add_argument("--tcp", metavar="HOST:BASE_PORT", help="run the pipeline over tcp on HOST (CURVE-authenticated)")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_index, needs_nav=False)

    sp = sub.add_parser("serve", help="index, keep watching and serve MCP on stdio (the actor pipeline)")
    sp.add_argument("path", nargs="?", default=None,
                    help="the repository (default: the one around this directory whose index exists, else the top of the git work tree around it, else this directory)")
    sp.add_argument("--workers", type=int, default=0, help="parser processes (0: one per core)")
    sp.add_argument("--no-embed", action="store_true", help="no embeddings (lexical + graph search only)")
    sp.add_argument("--no-mcp", action="store_true", help="index and watch only, no MCP on stdio")
    sp.add_argument("--tcp", metavar="HOST:BASE_PORT", help="run the pipeline over tcp on HOST (CURVE-authenticated)")
    sp.set_defaults(func=cmd_serve, needs_nav=False)

    sp = sub.add_parser("stop", help="stop the repository's pipeline (started by `nsccn serve`, lingering after it)")
    sp.add_argument("path", nargs="?", default=".", help="the repository, or a directory inside it")
    sp.set_defaults(func=cmd_stop, needs_nav=False)

    sp = sub.add_parser("worker", help="a parser on another host, for a pipeline running over tcp")
    sp.add_argument("--connect", required=True, metavar="HOST:BASE_PORT", help="the pipeline's host and base port")
    sp.add_argument("--key-file", required=True, help="a copy (mode 0600) of the pipeline's <index dir>/pipeline.key")
    sp.add_argument("--root", default=".", help="the repository here, at the path the pipeline's host uses")
    sp.add_argument("--name", default=None, help="actor name (default: parser-<host>-<pid>)")
    sp.set_defaults(func=cmd_worker, needs_nav=False)

    sp = query_cmd("search", "ranked entities for a query", cmd_search)
    sp.set_defaults(embeds_query=True)
    sp.add_argument("query")
    sp.add_argument("--limit", type=int, default=10)
    sp.add_argument("--offset", type=int, default=0)
    sp.add_argument("--diversity", type=float, default=0.0,
                    help="0 (default): plain ranking; up to 1: near-duplicates of listed hits give way (MMR)")
    sp = query_cmd("localize", "files and functions a bug report's fix most likely touches", cmd_localize)
    sp.set_defaults(embeds_query=True)
    sp.add_argument("report", nargs="?", help="the report's text; `-` or nothing: read standard input")
    sp.add_argument("--file", help="read the report from this file")
    sp.add_argument("--limit", type=int, default=10, help="files and functions to list (1-50)")
    sp = query_cmd("skeleton", "a file's signatures and docstrings, bodies elided", cmd_skeleton)
    sp.add_argument("file")
    sp.add_argument("--tokens", action="store_true", help="also count the skeleton's and the file's tokens "
                    "(o200k_base; loading the tokenizer takes about a second)")
    sp = query_cmd("trace", "causal path from an entity", cmd_trace)
    sp.add_argument("entity_id")
    sp.add_argument("--direction", default="downstream", choices=["downstream", "upstream", "state", "all"])
    sp.add_argument("--depth", type=int, default=3)
    sp.add_argument("--relation", action="append", help="follow only this relation (repeatable)")
    sp.add_argument("--min-confidence", type=float, default=0.0)
    sp = query_cmd("window", "an entity's exact lines, numbered", cmd_window)
    sp.add_argument("entity_id")
    sp.add_argument("--context", type=int, default=5)
    sp = query_cmd("symbol", "where a name is defined", cmd_symbol)
    sp.add_argument("name")
    sp = query_cmd("refs", "every call/import/inheritance site of an entity", cmd_refs)
    sp.add_argument("entity_id")
    sp.add_argument("--limit", type=_positive_int, default=100, help="references to list (1 or more)")
    sp = query_cmd("map", "ranked repository map within a token budget", cmd_map)
    sp.add_argument("--max-tokens", type=int, default=1024)
    sp.add_argument("--focus", action="append", help="entity id or file path to center on (repeatable)")
    sp = query_cmd("context", "token-budgeted context for a task", cmd_context)
    sp.set_defaults(embeds_query=True)
    sp.add_argument("query")
    sp.add_argument("--max-tokens", type=int, default=8000)
    query_cmd("status", "what the index holds and how fresh it is", cmd_status)
    sp = query_cmd("train-ranker", "adapt the learned ranker to this repository's own fix commits", cmd_train_ranker)
    sp.add_argument("--commits", type=int, default=300, help="newest fix commits to train on (10-5000)")
    sp.add_argument("--rounds", type=int, default=60, help="trees added to the shipped model (1-1000)")
    sp.add_argument("--reset", action="store_true", help="remove the repository's model: back to the shipped one")
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
        from nsccn.navigator import Navigator, NavigatorError
        from nsccn.store import IndexMissing

        given = Path(args.root).resolve()
        root = find_root(given)  # from a subdirectory: the enclosing repository's index
        args.here = given.relative_to(root) if root != given else None
        nav = Navigator(root)
    except (ConfigError, PrivatePathError) as exc:  # a bad config file, an index dir we must not use
        print(f"nsccn: {exc}", file=sys.stderr)
        return EXIT_FAILED
    try:
        if getattr(args, "embeds_query", False):
            nav.embedder = pipeline_embedder(nav)
        out = args.func(nav, args)
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
        no_index = isinstance(exc.__cause__, IndexMissing) or "run `nsccn index`" in exc.message
        return EXIT_NO_INDEX if no_index else EXIT_FAILED
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
