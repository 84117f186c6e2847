"""Index a repository in one call: scan, parse what changed, write, resolve.

This is the library path (one process, optionally a pool of parser processes). The actor
pipeline (`nsccn serve`) runs the same steps in separate processes.
"""

from __future__ import annotations

import logging
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from nsccn.config import STATIC_MODEL, Config, ensure_index_dir, is_static_model, load_config
from nsccn.languages.project import CAPPED, over_limits
from nsccn.model import ParsedFile
from nsccn.store import RESOLVE_PENDING, VECTORS_COMPLETE, WRITER_CACHE_MIB, IndexMissing, Store

if TYPE_CHECKING:  # the scan (pathspec) is imported by the runs that scan, not by the pipeline's CLI
    from nsccn.scan import FileInfo, ScanResult

log = logging.getLogger(__name__)

WRITE_BATCH = 256  # files per transaction...
WRITE_BATCH_LINES = 20_000  # ...or this many lines: a batch's memory stays flat however large its files
RANKS_REFRESH_SHARE = 0.05
# `nsccn index` runs the actor pipeline only when this many files (or more) need a parse: below
# it, starting the actors costs more than they save (benchmarks/results/index-speed/threshold.md).
PIPELINE_FROM_FILES = 400


@dataclass
class IndexSummary:
    root: str
    db_path: str
    files_seen: int = 0
    files_indexed: int = 0
    files_unchanged: int = 0
    files_deleted: int = 0
    skipped: Counter = field(default_factory=Counter)
    skipped_examples: dict = field(default_factory=dict)
    files_with_syntax_errors: int = 0
    entities: int = 0
    edges: int = 0
    edges_by_relation: dict = field(default_factory=dict)
    seconds: float = 0.0
    lines_indexed: int = 0
    vectors: dict = field(default_factory=dict)
    history_commits: int = 0
    warnings: list = field(default_factory=list)  # e.g. unusable .gitignore patterns, with file and line

    def as_dict(self) -> dict:
        d = dict(self.__dict__)
        d["skipped"] = dict(self.skipped)
        return d


@dataclass
class Plan:
    """What an index run has to do, from a scan compared with the store."""

    to_parse: list[FileInfo]  # new, or size/mtime changed (content may still be the same)
    to_delete: list[str]
    unchanged: int


def plan_changes(root: Path, store: Store, files: list[FileInfo], known: dict | None = None) -> Plan:
    """`known`: the store's file_states(), when the caller has them already."""
    known = store.file_states() if known is None else known
    to_parse: list[FileInfo] = []
    unchanged = 0
    for f in files:
        state = known.get(f.path)
        if state is None:
            to_parse.append(f)
        elif state[1] == f.size and state[2] == f.mtime:
            unchanged += 1
        else:
            to_parse.append(f)  # the parse step compares hashes and touches instead when equal
    present = {f.path for f in files}
    return Plan(to_parse, [p for p in known if p not in present], unchanged)


def files_to_parse(root: Path, db_path: Path, scan: ScanResult) -> int:
    """How many files an index run would parse (new or changed size/mtime), without writing."""
    try:
        with Store(db_path, readonly=True) as store:
            return len(plan_changes(root, store, scan.files).to_parse)
    except (IndexMissing, RuntimeError):  # no index yet, or one of another schema: all of them
        return len(scan.files)


def parse_one(root: str, info: FileInfo, max_size: int, known_hash: str | None) -> ParsedFile | str | None:
    """A ParsedFile, the string reason the file was skipped, or None when its content is unchanged."""
    from nsccn.extract import content_hash, parse_file  # the parse: only a run with files to parse
    from nsccn.scan import read_source

    data, reason = read_source(Path(root), info.path, max_size)
    if data is None:
        return reason
    if known_hash is not None and content_hash(data) == known_hash:
        return None
    try:
        return parse_file(info.path, data, info.mtime)
    except Exception as exc:  # a bug of ours must cost one file, not the index run
        log.warning("could not parse %s: %r", info.path, exc)
        return "parser error"


def _parse_star(args):
    return args[1], parse_one(*args)


def index_repository(
    root: str | Path,
    db_path: str | Path | None = None,
    config: Config | None = None,
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
    embed: bool = True,
    embed_progress: Callable[[int, int], None] | None = None,
    scan: ScanResult | None = None,
) -> IndexSummary:
    """Bring the index of `root` up to date; only new, changed and deleted files cost work.
    `scan`: the repository's scan, when the caller has just made it."""
    started = time.perf_counter()
    root = Path(root).resolve()
    config = config or load_config(root)
    if db_path is None:
        ensure_index_dir(root, config)  # 0700, never through a symlink the repository carries
    db_path = Path(db_path) if db_path else config.db_path(root)
    summary = IndexSummary(str(root), str(db_path))
    if scan is None:
        from nsccn.scan import scan_repository

        scan = scan_repository(root, config)
    summary.files_seen = len(scan.files)
    summary.skipped.update(scan.skipped)
    summary.skipped_examples.update(scan.skipped_examples)
    summary.warnings = list(scan.warnings)
    with Store(db_path, cache_mib=WRITER_CACHE_MIB) as store:
        known = store.file_states()
        plan = plan_changes(root, store, scan.files, known)
        # A run that died between writing files and resolving their references leaves this set:
        # the next run re-resolves everything instead of trusting half-made edges.
        interrupted = store.get_meta(RESOLVE_PENDING) == "1"
        if plan.to_parse or plan.to_delete:
            store.set_meta(RESOLVE_PENDING, "1")
        summary.files_unchanged = plan.unchanged
        full = not known or interrupted  # a first build, or a repair after a crash: resolve everything
        changed_paths: set[str] = set()
        names: set[str] = set()  # what an incremental resolution must look up again (none when full)
        if plan.to_delete:
            names |= store.delete_files(plan.to_delete)
            changed_paths.update(plan.to_delete)
            summary.files_deleted = len(plan.to_delete)
        batch: list[ParsedFile] = []
        batch_lines = 0
        done = 0
        for info, result in _parse_all(root, plan.to_parse, config, known, workers):
            done += 1
            if progress:
                progress(done, len(plan.to_parse))
            if isinstance(result, str):
                summary.skipped[result] += 1
                summary.skipped_examples.setdefault(result, info.path)
                if info.path in known:  # it was indexed before, now it can't be: drop it
                    names |= store.delete_files([info.path])
                    changed_paths.add(info.path)
                continue
            if result is None:
                store.touch_file(info.path, info.mtime)
                summary.files_unchanged += 1
                continue
            if result.deep_lines:  # indexed, less a region too deeply nested to walk
                from nsccn.extract import TOO_DEEP

                summary.skipped[TOO_DEEP] += 1
                summary.skipped_examples.setdefault(TOO_DEEP, info.path)
            if result.language == "tsconfig" and over_limits(result):  # indexed, less what is over its caps
                summary.skipped[CAPPED] += 1
                summary.skipped_examples.setdefault(CAPPED, info.path)
            batch.append(result)
            summary.lines_indexed += result.line_count
            batch_lines += result.line_count
            if len(batch) >= WRITE_BATCH or batch_lines >= WRITE_BATCH_LINES:
                names |= store.write_files(batch, affected_names=not full)
                changed_paths.update(p.path for p in batch)
                summary.files_indexed += len(batch)
                batch, batch_lines = [], 0
        if batch:
            names |= store.write_files(batch, affected_names=not full)
            changed_paths.update(p.path for p in batch)
            summary.files_indexed += len(batch)
        history = None
        if config.history and plan.to_parse:
            # Resolution below runs on one core: git reads the history on the other meanwhile.
            from nsccn.history import start_update

            history = start_update(store, root, max_commits=config.history_max_commits)
        if changed_paths or interrupted:
            from nsccn.resolve import resolve_affected, resolve_all  # only a run that wrote needs it
            from nsccn.resolve_partitions import bulk_children

            if full:
                # With parser processes (workers != 1), child processes resolve as well: the
                # cores the parse used are free now (nsccn.resolve_partitions).
                resolve_all(store, children=bulk_children(store) if workers != 1 else 0)
            else:
                resolve_affected(store, changed_paths, names, allow_children=workers != 1)
            # PageRank is a global, slow-moving prior: recompute once enough of the repository
            # changed since the last computation, not on every small edit.
            pending = int(store.get_meta("ranks_pending_files", "0") or 0) + len(changed_paths)
            if pending > RANKS_REFRESH_SHARE * max(1, summary.files_seen) or not known or interrupted:
                from nsccn.repomap import compute_ranks  # numpy: only for a run that needs it

                compute_ranks(store)
                pending = 0
            store.set_meta("ranks_pending_files", str(pending))
            store.set_meta(RESOLVE_PENDING, "0")
            store.set_meta("last_indexed", str(time.time()))
        elif plan.to_parse:  # only touched (same content, new mtime): nothing to resolve after all
            store.set_meta(RESOLVE_PENDING, "0")
        if history is not None:
            summary.history_commits = history(store).kept
        elif config.history:
            from nsccn.history import update_for_root

            summary.history_commits = update_for_root(store, root, max_commits=config.history_max_commits).kept
        if embed and not _vectors_current(store, config):
            from nsccn.embed import ModelUnavailable
            from nsccn.semantic import default_embedder, embed_index

            try:
                embedder = default_embedder(config.embedding_model, config.embedding_dim or None)
            except ModelUnavailable as exc:  # the index is complete without vectors; search says so
                summary.warnings.append(f"no vectors: {exc}")
            else:
                summary.vectors = embed_index(store, embedder, progress=embed_progress,
                                              include_tests=config.embed_test_files)
        counts = store.counts()
    summary.entities = counts["entities"]
    summary.edges = counts["edges"]
    summary.edges_by_relation = counts["edges_by_relation"]
    summary.files_with_syntax_errors = counts["files_with_syntax_errors"]
    summary.seconds = time.perf_counter() - started
    return summary


def _vectors_current(store: Store, config: Config) -> bool:
    """Whether the static model's vectors are complete and no file changed since (a run that found
    nothing to do then loads no model and reads no vector). A transformer's id depends on what
    loads, so its vectors are always looked at."""
    if not is_static_model(os.environ.get("NSCCN_EMBED_MODEL") or config.embedding_model):
        return False
    return (store.get_meta(VECTORS_COMPLETE) == STATIC_MODEL
            and store.get_meta("embedding_skips_tests", "0") == ("0" if config.embed_test_files else "1"))


def _parse_all(
    root: Path, todo: list[FileInfo], config: Config, known: dict, workers: int
) -> Iterator[tuple[FileInfo, ParsedFile | str | None]]:
    if workers == 0:
        workers = os.cpu_count() or 1
    jobs = [(str(root), f, config.max_file_size, known.get(f.path, (None,))[0]) for f in todo]
    if workers <= 1 or len(todo) < 64:
        for job in jobs:
            yield job[1], parse_one(*job)
        return
    from concurrent.futures import ProcessPoolExecutor  # multiprocessing: only for a pool

    with ProcessPoolExecutor(max_workers=workers) as pool:
        yield from pool.map(_parse_star, jobs, chunksize=16)
