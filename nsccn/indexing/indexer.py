"""Index a repository in one call: scan, parse what changed, write, resolve.

This is the library path (one process, optionally a pool of parser processes). The actor
pipeline (`nsccn serve`) runs the same steps in separate processes; both look at files and write
them through nsccn.indexing.index_session.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from nsccn.config import STATIC_MODEL, Config, ensure_index_dir, load_config
from nsccn.vectors.static_file import uses_static_model
from nsccn.model import Parsed, Removed  # what nsccn.indexing.index_session.look_at returns
from nsccn.store import VECTORS_COMPLETE, WRITER_CACHE_MIB, IndexMissing, Store

if TYPE_CHECKING:  # the scan (pathspec) is imported by the runs that scan, not by the pipeline's CLI
    from nsccn.indexing.index_session import FileResult
    from nsccn.reading.scan import FileInfo, ScanResult

    # (root, files to parse, config, {path: (hash, size, mtime)} of the index) -> every file looked at
    ParseAll = Callable[[Path, list[FileInfo], Config, dict], Iterator[FileResult]]

WRITE_BATCH = 256  # files per transaction...
WRITE_BATCH_LINES = 20_000  # ...or this many lines: a batch's memory stays flat however large its files
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
    ray: dict | None = None  # `nsccn index --ray`: what ran where (nsccn.indexing.ray_index.RayStats)

    def as_dict(self) -> dict:
        d = dict(self.__dict__)
        d["skipped"] = dict(self.skipped)
        if d["ray"] is None:
            del d["ray"]
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


def _look_at(args: tuple) -> FileResult:
    from nsccn.indexing.index_session import look_at

    return look_at(*args)


def index_repository(
    root: str | Path,
    db_path: str | Path | None = None,
    config: Config | None = None,
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
    embed: bool = True,
    embed_progress: Callable[[int, int], None] | None = None,
    scan: ScanResult | None = None,
    parse: ParseAll | None = None,
    precomputed_vectors: Mapping[str, bytes] | None = None,
    make_embedder: Callable[[], object] | None = None,
) -> IndexSummary:
    """Bring the index of `root` up to date; only new, changed and deleted files cost work.
    `scan`: the repository's scan, when the caller has just made it. `parse`: who looks at the
    files to parse (default: this process, or a pool of `workers`; nsccn.indexing.ray_index: a Ray cluster).
    `precomputed_vectors`: text hash -> vector of the configured model, made beside the parse
    (filled while `parse` runs; read when the vectors are brought up to date). `make_embedder`:
    makes the embedder of the vectors (default: the configured model loaded here; a Ray actor pool)."""
    started = time.perf_counter()
    root = Path(root).resolve()
    config = config or load_config(root)
    if db_path is None:
        ensure_index_dir(root, config)  # 0700, never through a symlink the repository carries
    db_path = Path(db_path) if db_path else config.db_path(root)
    summary = IndexSummary(str(root), str(db_path))
    if scan is None:
        from nsccn.reading.scan import scan_repository

        scan = scan_repository(root, config)
    summary.files_seen = len(scan.files)
    summary.skipped.update(scan.skipped)
    summary.skipped_examples.update(scan.skipped_examples)
    summary.warnings = list(scan.warnings)
    with Store(db_path, cache_mib=WRITER_CACHE_MIB) as store:
        from nsccn.indexing.index_session import IndexSession  # the parse and resolution: a run that writes

        session = IndexSession(store)
        known = store.file_states()
        plan = plan_changes(root, store, scan.files, known)
        if plan.to_delete:
            session.apply([Removed(seq=0, path=p) for p in plan.to_delete])
        parse = parse or (lambda *args: _parse_all(*args, workers))
        write_in_batches(session, parse(root, plan.to_parse, config, known),
                         (lambda done: progress(done, len(plan.to_parse))) if progress else None)
        tally = session.tally
        summary.files_unchanged = plan.unchanged + tally.unchanged
        summary.files_deleted = tally.removed
        summary.files_indexed = tally.written
        summary.lines_indexed = tally.lines
        summary.skipped.update(tally.skipped)
        for why, path in tally.skipped_examples.items():
            summary.skipped_examples.setdefault(why, path)
        history = None
        if config.history and plan.to_parse:
            # Resolution below runs on one core: git reads the history on the other meanwhile.
            from nsccn.reading.history import start_update

            history = start_update(store, root, max_commits=config.history_max_commits)
        if session.needs_resolve:
            # With parser processes (workers != 1), child processes resolve as well: the cores
            # the parse used are free now (nsccn.indexing.resolve_partitions).
            session.resolve(parallel=workers != 1)
            session.settle(summary.files_seen)
        if history is not None:
            summary.history_commits = history(store).kept
        elif config.history:
            from nsccn.reading.history import update_for_root

            summary.history_commits = update_for_root(store, root, max_commits=config.history_max_commits).kept
        if embed and not _vectors_current(store, config):
            from nsccn.vectors.embed import ModelUnavailable
            from nsccn.vectors.semantic import default_embedder, embed_index

            try:
                embedder = make_embedder() if make_embedder else default_embedder(config.embedding_model, config.embedding_dim or None)
            except ModelUnavailable as exc:  # the index is complete without vectors; search says so
                summary.warnings.append(f"no vectors: {exc}")
            else:
                summary.vectors = embed_index(store, embedder, progress=embed_progress,
                                              include_tests=config.embed_test_files, precomputed=precomputed_vectors)
        counts = store.counts()
    summary.entities = counts["entities"]
    summary.edges = counts["edges"]
    summary.edges_by_relation = counts["edges_by_relation"]
    summary.files_with_syntax_errors = counts["files_with_syntax_errors"]
    summary.seconds = time.perf_counter() - started
    return summary


def write_in_batches(session, results: Iterable[FileResult], on_result: Callable[[int], None] | None = None) -> None:
    """Parse results into an `IndexSession`: parsed files a batch at a time (WRITE_BATCH files or
    WRITE_BATCH_LINES lines), skips, touches and removals at once. `on_result(n)` after the n-th."""
    batch: list[Parsed] = []
    lines = 0
    for done, result in enumerate(results, 1):
        if on_result:
            on_result(done)
        if not isinstance(result, Parsed):
            session.apply([result])
            continue
        batch.append(result)
        lines += result.file.line_count
        if len(batch) >= WRITE_BATCH or lines >= WRITE_BATCH_LINES:
            session.apply(batch)
            batch, lines = [], 0
    if batch:
        session.apply(batch)


def _vectors_current(store: Store, config: Config) -> bool:
    """Whether the static model's vectors are complete and no file changed since (a run that found
    nothing to do then loads no model and reads no vector). A transformer's id depends on what
    loads, so its vectors are always looked at."""
    if not uses_static_model(config):
        return False
    from nsccn.vectors.commit_vectors import commits_embedded

    return (store.get_meta(VECTORS_COMPLETE) == STATIC_MODEL
            and store.get_meta("embedding_skips_tests", "0") == ("0" if config.embed_test_files else "1")
            and commits_embedded(store))


def _parse_all(root: Path, todo: list[FileInfo], config: Config, known: dict, workers: int) -> Iterator[FileResult]:
    """Every file of `todo` looked at (nsccn.indexing.index_session.look_at), in this process or a pool."""
    from nsccn.indexing.index_session import look_at  # the parse: only a run with files to parse

    if workers == 0:
        workers = os.cpu_count() or 1
    jobs = [(str(root), f.path, config.max_file_size, known.get(f.path, (None,))[0]) for f in todo]
    if workers <= 1 or len(todo) < 64:
        for job in jobs:
            yield look_at(*job)
        return
    from concurrent.futures import ProcessPoolExecutor  # multiprocessing: only for a pool

    with ProcessPoolExecutor(max_workers=workers) as pool:
        yield from pool.map(_look_at, jobs, chunksize=16)
