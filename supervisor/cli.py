"""`nsccn index` through the pipeline, `nsccn serve --no-mcp` (the pipeline alone; with MCP, `nsccn serve`
is the MCP front, `workers.mcp_front`), `nsccn stop`, and `python -m supervisor`.

    python -m supervisor index PATH [--workers N] [--embed] [--json]
    python -m supervisor serve PATH --no-mcp [--workers N] [--no-embed]   # the pipeline in the foreground (MCP: `nsccn serve`)
    python -m supervisor pipeline PATH     # the shared pipeline `nsccn serve` starts detached
    python -m supervisor monitor PATH      # status + lock for actors started by `honcho start`
    python -m supervisor status PATH
    python -m supervisor stop PATH
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

from dataclasses import dataclass, field

from nsccn.config import ConfigError, load_config
from nsccn.private import PrivatePathError
from nsccn.indexing.indexer import IndexSummary
from nsccn.store import Store
from supervisor.addresses import lock_path, running_pipeline
from supervisor.main import PipelineBusy, Policy, Supervisor, process_alive

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


@dataclass
class PipelineSummary(IndexSummary):
    """What `nsccn index` prints for the library path, plus the pipeline's per-actor restarts
    and peak memory."""

    pipeline: dict = field(default_factory=dict)


def setup_logging(level: int) -> None:
    logging.basicConfig(stream=sys.stderr, level=level, format="%(asctime)s supervisor %(levelname)s %(message)s")


def busy_message(info: dict) -> str:
    if info.get("mode") == "index":
        what = "an index run is in progress"
    elif info.get("mode") == "serve":
        what = "a pipeline is serving and keeping the index up to date"
    else:
        what = f"a pipeline ({info.get('mode', 'unknown mode')}) is running"
    return (
        f"{what} on {info.get('root', 'this repository')} (pid {info.get('pid')}, since {info.get('started')};"
        f" index {info.get('db')}, logs in {info.get('logs')}): see `nsccn status --root {info.get('root', '.')}`"
    )


class _PlainBar:
    """The part of tqdm's interface `_Progress` uses, as plain lines: into a pipe or a log a bar
    redrawn in place is noise, so a line at the start, at most one every `every_s` seconds, and
    one at the end."""

    def __init__(self, total: int, unit: str, desc: str, every_s: float = 10.0):
        self.total, self.unit, self.desc, self.every_s = total, unit, desc, every_s
        self.n, self.started, self.closed = 0, time.monotonic(), False
        self.last = self.started
        self._line()

    def _line(self) -> None:
        print(f"nsccn: {self.desc} {self.n}/{self.total} {self.unit} ({time.monotonic() - self.started:.0f} s)",
              file=sys.stderr, flush=True)

    def update(self, k: int) -> None:
        self.n += k
        now = time.monotonic()
        if now - self.last >= self.every_s:
            self.last = now
            self._line()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._line()


def _bar(total: int, unit: str, desc: str):
    """A tqdm bar on a terminal, plain lines anywhere else."""
    if not sys.stderr.isatty():
        return _PlainBar(total, unit, desc)
    from tqdm import tqdm

    return tqdm(total=total, unit=unit, desc=desc, file=sys.stderr, dynamic_ncols=True)


class _Progress:
    """Progress on stderr: files (with files/s and ETA), then entities embedded; bars on a
    terminal, plain lines into a pipe or a file (`_bar`)."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.files = None
        self.files_done = False
        self.vectors = None
        self.started = time.monotonic()

    def __call__(self, sup: Supervisor) -> None:
        if not self.enabled:
            return
        w = sup.slots.get("watcher")
        ws = w.hb.stats if w and w.hb else None
        if ws and ws.get("bulk_total") and not self.files_done:
            total, done = ws["bulk_total"], ws.get("bulk_done", 0)
            if self.files is None:
                self.files = _bar(total, "file", "indexing")
            if self.files.total != total:
                self.files.total = total
            if done != self.files.n:
                self.files.update(done - self.files.n)
            if done >= total and ws.get("idle"):
                self.files.close()  # its rate and elapsed time are the parse phase's
                self.files_done = True
        r = sup.slots.get("writer")
        rs = r.hb.stats if r and r.hb else None
        if sup.embed and rs and (ws is None or ws.get("idle")) and rs.get("vectors_pending") is not None:
            written = sup.stats_of("writer").get("vectors_written", 0)
            pending = rs.get("vectors_pending", 0)
            if self.vectors is None and pending:
                self.vectors = _bar(written + pending, "entity", "embedding")
            if self.vectors is not None:
                self.vectors.total = written + pending
                if written != self.vectors.n:
                    self.vectors.update(written - self.vectors.n)

    def close(self, sup: Supervisor | None = None) -> None:
        if self.enabled and self.files is None and sup is not None and sup.complete is not None and sup.complete.files:
            # the bulk finished before a watcher heartbeat said how large it was (a small tree, a busy
            # machine): still one line saying what was indexed
            self.files = _bar(sup.complete.files, "file", "indexing")
        if self.files is not None and not self.files_done and sup is not None and sup.complete is not None:
            self.files.update(self.files.total - self.files.n)
        if self.vectors is not None and sup is not None and sup.complete is not None:
            written = sup.stats_of("writer").get("vectors_written", self.vectors.n)
            self.vectors.total = written
            self.vectors.update(written - self.vectors.n)
        for bar in (self.files, self.vectors):
            if bar is not None:
                bar.close()


def pipeline_index(
    root: str | Path,
    workers: int = 0,
    embed: bool = False,
    progress: bool = True,
    policy: Policy | None = None,
    overrides: dict | None = None,
) -> PipelineSummary | int:
    """Index `root` through the actor pipeline and return a summary (as the library's), or an exit
    code when another pipeline runs on the repository or this one failed."""
    root = Path(root).resolve()
    config = load_config(root, overrides)
    setup_logging(logging.WARNING)
    started = time.perf_counter()
    bars = _Progress(progress)
    sup = Supervisor(root, "index", parsers=workers, embed=embed, config=config, policy=policy,
                     on_progress=bars)
    try:
        code = sup.run()
    except PipelineBusy as busy:
        print(f"nsccn: {busy_message(busy.info)}", file=sys.stderr)
        return EXIT_FAILED
    except PrivatePathError as exc:
        print(f"nsccn: {exc}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        bars.close(sup)
    if code != 0 or sup.complete is None:
        why = sup.failure or ("interrupted" if code else "the pipeline stopped before the index was complete")
        print(f"nsccn: index incomplete: {why}", file=sys.stderr)
        return code or EXIT_FAILED
    ws = sup.stats_of("watcher")
    rs = sup.stats_of("writer")
    summary = PipelineSummary(str(root), str(config.db_path(root)))
    summary.files_seen = int(ws.get("files_seen", 0))
    summary.files_indexed = int(rs.get("files_written", 0))
    summary.files_unchanged = int(ws.get("unchanged", 0)) + int(rs.get("unchanged", 0))
    summary.files_deleted = int(rs.get("removed", 0))
    summary.lines_indexed = int(rs.get("lines", 0))
    summary.warnings = list(rs.get("warnings") or []) + list(ws.get("warnings") or [])
    if sup.embed_problem:
        summary.warnings.append(f"no vectors: {sup.embed_problem}")
    for part in (ws.get("skipped") or {}, rs.get("skipped") or {}):
        for why, n in part.items():
            summary.skipped[why] += n
    for part in (ws.get("skipped_examples") or {}, rs.get("skipped_examples") or {}):
        for why, path in part.items():
            summary.skipped_examples.setdefault(why, path)
    counts = sup.complete.counts
    if not counts:
        with Store(config.db_path(root), readonly=True) as store:
            counts = store.counts()
    summary.entities = counts["entities"]
    summary.edges = counts["edges"]
    summary.edges_by_relation = counts["edges_by_relation"]
    summary.files_with_syntax_errors = counts["files_with_syntax_errors"]
    if sup.embed:
        c = sup.complete
        # The static model embeds in the writer; another model in the embedder actor.
        embedded = int((rs if sup.embed_in_writer else sup.stats_of("embedder")).get("embedded", 0))
        summary.vectors = {
            "embedded": embedded,
            "from_cache": max(0, c.vectors - embedded),
            "vectors": c.vectors,
            "entities_without_vectors": c.entities_without_vectors,
            "model": rs.get("model"),
        }
    summary.seconds = time.perf_counter() - started
    summary.pipeline = sup.summary()
    return summary


def serve(root: str | Path, workers: int = 0, embed: bool = True, overrides: dict | None = None) -> int:
    """The pipeline itself, in this process, until a signal or `nsccn stop` (`nsccn serve
    --no-mcp`; with MCP, `nsccn serve` is `workers.mcp_front.serve`, attached to a shared one)."""
    root = Path(root).resolve()
    config = load_config(root, overrides)
    setup_logging(logging.INFO)
    try:
        return Supervisor(root, "serve", parsers=workers, embed=embed, config=config).run()
    except PrivatePathError as exc:
        print(f"nsccn: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except PipelineBusy as busy:
        print(f"nsccn: {busy_message(busy.info)}", file=sys.stderr)
        return EXIT_FAILED


def run_shared_pipeline(root: Path, workers: int = 0, embed: bool = True, overrides: dict | None = None) -> int:
    """The detached pipeline `nsccn serve` starts: it ends after `pipeline_linger_s` without clients."""
    config = load_config(root, overrides)
    setup_logging(logging.INFO)
    sup = Supervisor(root, "serve", parsers=workers, embed=embed, config=config,
                     linger_s=max(0.0, config.pipeline_linger_s))
    try:
        return sup.run()
    except PipelineBusy:
        return EXIT_OK  # another one won: the clients find it
    except PrivatePathError as exc:
        print(f"nsccn: {exc}", file=sys.stderr)
        return EXIT_FAILED


def stop(root: Path, config, timeout_s: float = 30.0) -> int:
    """`nsccn stop`: end the repository's pipeline and wait until it is gone."""
    from supervisor.control import request_shutdown

    info = running_pipeline(root, config)
    if info is None:
        print(f"no pipeline runs on {root}")
        return EXIT_OK
    if not request_shutdown(root, config, reason="nsccn stop"):
        print(f"nsccn: the pipeline on {root} (pid {info.get('pid')}) did not answer the stop request;"
              f" it holds {lock_path(root, config)}", file=sys.stderr)
        return EXIT_FAILED
    deadline = time.monotonic() + timeout_s
    pid = info.get("pid")
    # Gone means the process too: its lock is released a moment before the interpreter exits.
    while running_pipeline(root, config) is not None or (isinstance(pid, int) and process_alive(pid)):
        if time.monotonic() > deadline:
            print(f"nsccn: the pipeline (pid {info.get('pid')}) did not stop within {timeout_s:g} s", file=sys.stderr)
            return EXIT_FAILED
        time.sleep(0.1)
    print(f"stopped the pipeline on {root} (pid {info.get('pid')})")
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except (ConfigError, PrivatePathError) as exc:
        print(f"nsccn: {exc}", file=sys.stderr)
        return EXIT_FAILED


def _main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m supervisor", description="the NSCCN actor pipeline")
    sub = p.add_subparsers(dest="command", required=True)
    for name in ("index", "serve", "pipeline", "monitor", "status", "stop"):
        sp = sub.add_parser(name)
        sp.add_argument("path", nargs="?", default=".")
        if name in ("index", "serve", "pipeline"):
            sp.add_argument("--workers", type=int, default=0, help="parser processes (0: one per core)")
        if name == "index":
            sp.add_argument("--no-embed", action="store_true", help="no vectors (by default every entity gets one)")
            sp.add_argument("--embed", action="store_true", help=argparse.SUPPRESS)  # the default now
            sp.add_argument("--json", action="store_true")
        if name in ("serve", "pipeline"):
            sp.add_argument("--no-embed", action="store_true")
        if name == "serve":
            sp.add_argument("--no-mcp", action="store_true", help="the pipeline alone (required here: MCP is `nsccn serve`)")
    args = p.parse_args(argv)
    root = Path(args.path).resolve()
    if not root.is_dir():
        print(f"{root} is not a directory", file=sys.stderr)
        return EXIT_USAGE
    if args.command == "index":
        out = pipeline_index(root, args.workers, not args.no_embed, progress=not args.json)
        if isinstance(out, int):
            return out
        d = out.as_dict()
        print(json.dumps(d, indent=2, default=str) if args.json else f"indexed {root} in {out.seconds:.2f} s")
        return EXIT_OK
    if args.command == "serve":
        if not args.no_mcp:  # the MCP front is an actor's (workers.mcp_front): the supervisor only runs pipelines
            print("python -m supervisor serve runs the pipeline alone: give --no-mcp (MCP on stdio: `nsccn serve`)",
                  file=sys.stderr)
            return EXIT_USAGE
        return serve(root, args.workers, embed=not args.no_embed)
    if args.command == "pipeline":
        return run_shared_pipeline(root, args.workers, embed=not args.no_embed)
    if args.command == "monitor":
        setup_logging(logging.INFO)
        try:
            return Supervisor(root, "monitor").run()
        except PipelineBusy as busy:
            print(f"nsccn: {busy_message(busy.info)}", file=sys.stderr)
            return EXIT_FAILED
    if args.command == "status":
        from supervisor.control import query_status

        st = query_status(root)
        print(json.dumps(st, indent=2, default=str) if st else "no pipeline runs on this repository")
        return EXIT_OK
    if args.command == "stop":
        return stop(root, load_config(root))
    return EXIT_USAGE
