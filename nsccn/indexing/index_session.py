"""One index session: what every writer of an index does, in the one way it is done.

`nsccn index --in-process` (nsccn.indexing.indexer) and the writer actor (workers/writer.py) both write
through an `IndexSession`, and every parser (the library's process pool, the parser actor, a Ray
task) looks at a file with `look_at`:

    look_at(root, path, ...)  -> Parsed | Unchanged | Skipped | Removed    (one file, as it is now)
    look_at_bytes(path, data, ...)  -> the same, of bytes read already (a Ray task's, nsccn.indexing.ray_index)
    session.sort(results)     -> Changes: what to write, delete and touch, against the index
    session.commit(changes)   -> one transaction, with the "resolve pending" marker in it
    session.resolve()         -> every reference, or those the commits since the last one affect
    session.settle(files)     -> PageRank when enough changed, the marker cleared

A crash between a commit and its resolution leaves the marker set; the next session sees it and
resolves everything (`full`).
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Union

from nsccn.errors import ResolveFailed  # what `resolve` raises: rolled back, the marker kept
from nsccn.model import Parsed, ParsedFile, Removed, Skipped, Unchanged
from nsccn.store import RESOLVE_PENDING, Store
from nsccn.store.schema import RANKS_PENDING

if TYPE_CHECKING:  # numpy: only a session that embeds as it writes (the writer actor) has one
    from nsccn.vectors.table import VectorStore

FileResult = Union[Parsed, Unchanged, Skipped, Removed]
__all__ = ["Changes", "FileResult", "IndexSession", "ResolveFailed", "Tally", "look_at", "look_at_bytes", "path_of", "rank",
           "unreadable"]

RANKS_REFRESH_SHARE = 0.05  # PageRank again once this share of the files changed since the last time
EXTRACTION_FAILED = "extraction failed"  # the skip reason of a file the extractor failed on


def look_at(root: str | Path, path: str, max_size: int, known_hash: str | None = None, seq: int = 0) -> FileResult:
    """One file as it is now: gone -> Removed; unreadable, binary, too large, not a regular file,
    a symlink out of the repository -> Skipped; the content the index holds (`known_hash`) ->
    Unchanged; else Parsed. The size and mtime are the opened file's, taken before its bytes are
    read: a write that lands after the read leaves a newer mtime, and the next look parses again."""
    from nsccn.reading.repofile import UnreadableFile, read_bytes

    # The one safe read of the library: a file swapped for a FIFO, a device or a symlink out of
    # the repository is refused here, before any byte is read, as the scan refuses it.
    try:
        data, st = read_bytes(root, path, max_size)
    except UnreadableFile as exc:
        return unreadable(path, exc.reason, seq)
    return look_at_bytes(path, data, st.st_size, st.st_mtime, known_hash, seq)


def unreadable(path: str, reason: str, seq: int = 0) -> Removed | Skipped:
    """A file `read_bytes` refused (`reason`): gone (Removed), else Skipped for that reason."""
    if reason in ("missing", "directory"):
        return Removed(seq=seq, path=path)
    return Skipped(seq=seq, path=path, reason=reason)


def look_at_bytes(path: str, data: bytes, size: int, mtime: float, known_hash: str | None = None,
                  seq: int = 0) -> Parsed | Unchanged | Skipped:
    """`look_at` of bytes read already (by `read_bytes`, here or on another machine: a Ray task
    gets them through the object store): binary -> Skipped, `known_hash` -> Unchanged, else Parsed."""
    # (the parse's modules: imported by a session with files to look at, not by one that finds
    # nothing changed)
    from nsccn.reading.extract import content_hash, parse_file
    from nsccn.reading.scan import is_binary

    if is_binary(data):
        return Skipped(seq=seq, path=path, reason="binary")
    if known_hash is not None and content_hash(data) == known_hash:
        return Unchanged(seq=seq, path=path, size=size, mtime=mtime)
    try:
        parsed = parse_file(path, data, mtime)
    except Exception as exc:  # a bug of ours must cost one file, not the index run (nor the actor)
        return Skipped(seq=seq, path=path, reason=f"{EXTRACTION_FAILED}: {type(exc).__name__}")
    return Parsed(seq=seq, file=parsed)


def path_of(result: FileResult) -> str:
    return result.file.path if isinstance(result, Parsed) else result.path


@dataclass
class Tally:
    """What the results sorted so far came to: the counts `nsccn index` prints."""

    written: int = 0
    lines: int = 0  # lines of the files written
    unchanged: int = 0  # Unchanged results
    removed: int = 0  # indexed files deleted: gone, or skipped now
    duplicates: int = 0  # results the index holds already
    skipped: Counter = field(default_factory=Counter)  # reason -> files (and files indexed less a part)
    skipped_examples: dict = field(default_factory=dict)  # reason -> one path

    def skip(self, reason: str, path: str) -> None:
        self.skipped[reason] += 1
        self.skipped_examples.setdefault(reason, path)


@dataclass
class Changes:
    """One batch for the index: files to write, paths to delete, (path, mtime) to touch."""

    write: list[ParsedFile] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)
    touch: list[tuple[str, float]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.write or self.delete or self.touch)


class IndexSession:
    """The writes to one index, from its opening until it is closed: commits, and the
    resolution and PageRank they make due. `log`: where to say what was left out of a file
    (the writer actor's log); None says nothing (`nsccn index` prints its summary instead)."""

    def __init__(self, store: Store, log: logging.Logger | None = None):
        self.store = store
        self.log = log
        self.tally = Tally()
        self.first_build = _count(store, "SELECT COUNT(*) FROM files") == 0
        # A marker left by a crash between a commit and its resolution: resolve everything.
        self.interrupted = store.get_meta(RESOLVE_PENDING) == "1"
        self.changed = False  # committed since the last resolution
        self.paths: set[str] = set()  # what an incremental resolution must look at again (kept
        self.names: set[str] = set()  # only while the next one is not a full one)

    @property
    def full(self) -> bool:
        """The next resolution is a full one (a first build, or after an interrupted one): it
        needs no list of what changed, which on a first build is every path and name."""
        return self.first_build or self.interrupted

    @property
    def needs_resolve(self) -> bool:
        return self.changed or self.interrupted

    # -- committing ----------------------------------------------------------------------------

    def sort(self, results: list[FileResult]) -> Changes:
        """What these results (one per path) change in the index as it is now; counted in `tally`."""
        from nsccn.reading.extract import TOO_DEEP
        from nsccn.languages.project import CAPPED, over_limits

        current = self.file_rows([path_of(r) for r in results])
        out = Changes()
        for m in results:
            path = path_of(m)
            cur = current.get(path)
            if isinstance(m, Parsed):
                if cur is not None and cur[0] == m.file.content_hash:
                    self.tally.duplicates += 1
                    if cur[1] != m.file.mtime:
                        out.touch.append((path, m.file.mtime))
                    continue
                out.write.append(m.file)
                if m.file.deep_lines:  # indexed, less a region too deeply nested to walk
                    self.tally.skip(TOO_DEEP, path)
                    if self.log:
                        self.log.warning("%s: nested too deeply from line %d: that region is left out",
                                         path, m.file.deep_lines[0])
                capped = over_limits(m.file) if m.file.language == "tsconfig" else None
                if capped:  # indexed, less what is over a project file's caps
                    self.tally.skip(CAPPED, path)
                    if self.log:
                        self.log.warning("%s", capped)
            elif isinstance(m, Unchanged):
                self.tally.unchanged += 1
                if cur is not None and cur[1] != m.mtime:
                    out.touch.append((path, m.mtime))
            elif isinstance(m, Skipped):
                self.tally.skip(m.reason, path)
                if cur is not None:  # indexed before, now it can't be: drop it
                    out.delete.append(path)
            elif cur is not None:  # Removed
                out.delete.append(path)
        return out

    def commit(self, changes: Changes, vectors: VectorStore | None = None) -> None:
        """One transaction: the files, their deletions and touches, the resolve marker, and the
        vectors of entities the written files no longer define (`vectors`: a session embedding
        as it writes). What it changed is remembered for the next resolution."""
        changed = [pf.path for pf in changes.write] + changes.delete
        old_ids = self.entity_ids(changed) if vectors is not None else set()
        names: set[str] = set()
        with self.store.conn:
            if changed:
                self.store.set_meta(RESOLVE_PENDING, "1")
            if changes.write:
                names |= self.store.write_files(changes.write, affected_names=not self.full)
            if changes.delete:
                names |= self.store.delete_files(changes.delete)
            for path, mtime in changes.touch:
                self.store.touch_file(path, mtime)
            if vectors is not None and old_ids:
                gone = old_ids - self.entity_ids([pf.path for pf in changes.write])
                if gone:
                    vectors.delete(gone)
        self.tally.written += len(changes.write)
        self.tally.lines += sum(pf.line_count for pf in changes.write)
        self.tally.removed += len(changes.delete)
        if changed:
            self.changed = True
            if not self.full:  # else all is resolved again: nothing to remember
                self.paths.update(changed)
                self.names |= names

    def apply(self, results: list[FileResult]) -> Changes:
        """`sort` and `commit` in one: the library indexer's batches (the writer actor commits
        what it sorted itself, to hold a batch back on a full disk or write it file by file)."""
        changes = self.sort(results)
        if changes:
            self.commit(changes)
        return changes

    # -- resolving -------------------------------------------------------------------------------

    def resolve(self, parallel: bool = True) -> int:
        """Resolve references: all of them after a first build or an interrupted one, else those
        in the changed files and those elsewhere that name what changed. `parallel`: child
        processes may resolve a full pass (nsccn.indexing.resolve_partitions), the parse's cores being free."""
        from nsccn.indexing.resolution import bulk_children, resolve_affected, resolve_everything  # only a session that wrote needs it

        if self.full:
            children = bulk_children(self.store) if parallel else 0
            if self.log:
                self.log.info("resolving every reference%s", f" in {children} child processes" if children else "")
            return resolve_everything(self.store, children=children)
        if self.paths:
            return resolve_affected(self.store, self.paths, self.names, allow_children=parallel)
        return 0

    def settle(self, files_seen: int = 0, ranks_now: bool = True) -> bool:
        """After a resolution: PageRank once enough of the repository changed since it was last
        computed (a global, slow-moving prior: not on every small edit), or on a full pass; the
        marker cleared. Returns whether PageRank was due; `ranks_now` False leaves computing it to
        the caller (`rank` on a read connection, `store_ranks` here: the writer actor's live edits)."""
        pending = int(self.store.get_meta(RANKS_PENDING, "0") or 0) + len(self.paths)
        files = max(1, files_seen, _count(self.store, "SELECT COUNT(*) FROM files"))
        due = self.full or pending > RANKS_REFRESH_SHARE * files
        if due:
            if ranks_now:
                from nsccn.indexing.repomap import compute_ranks  # numpy: only for a session that needs it

                compute_ranks(self.store)
            pending = 0
        with self.store.conn:
            self.store.set_meta(RANKS_PENDING, str(pending))
            self.store.set_meta(RESOLVE_PENDING, "0")
            self.store.set_meta("last_indexed", str(time.time()))
        self.paths.clear()
        self.names.clear()
        self.interrupted = False
        self.first_build = False
        self.changed = False
        return due

    def store_ranks(self, ranks) -> int:
        """Write ranks computed by `rank` (on another connection, off the caller's loop)."""
        from nsccn.indexing.repomap import write_ranks

        return write_ranks(self.store, *ranks)

    # -- reading -------------------------------------------------------------------------------

    def file_rows(self, paths: list[str]) -> dict[str, tuple[str, float]]:
        """path -> (content hash, mtime) of these paths' indexed files."""
        out = {}
        for i in range(0, len(paths), 500):
            chunk = paths[i : i + 500]
            q = f"SELECT path, content_hash, mtime FROM files WHERE path IN ({','.join('?' * len(chunk))})"
            out.update({p: (h, m) for p, h, m in self.store.conn.execute(q, chunk).fetchall()})
        return out

    def entity_ids(self, paths: list[str]) -> set[str]:
        out: set[str] = set()
        for i in range(0, len(paths), 500):
            chunk = paths[i : i + 500]
            q = f"SELECT id FROM entities WHERE path IN ({','.join('?' * len(chunk))})"
            out.update(r[0] for r in self.store.conn.execute(q, chunk).fetchall())
        return out


def rank(db_path: str | Path):
    """PageRank of the index at `db_path`, read on a connection of its own (a thread may run it
    while the session goes on writing): what `IndexSession.store_ranks` writes."""
    from nsccn.indexing.repomap import ranks_of

    with Store(db_path, readonly=True) as ro:
        return ranks_of(ro)


def _count(store: Store, q: str) -> int:
    return int(store.conn.execute(q).fetchall()[0][0])
