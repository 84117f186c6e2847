"""The index database: one SQLite file per repository (WAL), written by one writer, read by many.

Writes replace a file's rows in one transaction, so a crash never leaves half a file.
Readers open with `readonly=True` and never wait on the writer (WAL snapshots).
"""

from __future__ import annotations

import errno
import json
import os
import stat
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import repeat
from operator import attrgetter
from pathlib import Path

import apsw
import msgspec

from nsccn.model import TEXT, ParsedFile
from nsccn.private import open_private, private_dir
from nsccn.store import trust
from nsccn.store.schema import INHERITS_ID, REF_INDEXES, RESOLVE_PENDING, SCHEMA_VERSION, migrate
from nsccn.store.terms import file_terms

__all__ = ["WRITER_CACHE_MIB", "RESOLVE_PENDING", "Store", "EntityRow", "EdgeRow", "SCHEMA_VERSION", "IndexMissing", "IndexNotReady", "IndexOutdated", "IndexUntrusted"]

COUNTS_KEY = "counts"  # meta: Store.counts() as JSON, deleted by every write that changes them
# The writers' page cache: resolution writes 600k edges in one transaction, and a 64 MiB cache of
# dirty pages made a third of the writer's memory (benchmarks/results/index-speed/writer_cache.md).
WRITER_CACHE_MIB = 16
ENTITY_COLUMNS = "id, kind, path, qualname, name, start_line, end_line, signature, docstring, decorators, parent"
# Which entities get a vector, as SQL over `entities`: a module without a docstring has nothing
# its members don't say better (nsccn.vectors.semantic and the pipeline's writer select with it).
EMBEDDABLE_SQL = "(kind IN ('func', 'method', 'class') OR (kind = 'module' AND docstring != ''))"
TEXT_COLUMNS = "id, path, qualname, signature, docstring, body_head"  # what an entity's embedded text is made of


# A file system with less room than this under the index is called full in every answer's notes:
# SQLite fails a transaction with SQLITE_FULL once a page cannot be written.
LOW_SPACE_BYTES = 1 << 20


def is_disk_full(exc: BaseException | None) -> BaseException | None:
    """The error a full file system gave a write (None: not that): SQLITE_FULL (apsw.FullError), ENOSPC, or one
    of those as the text of another error (a resolve child's), or behind another error: SQLite
    rolls a transaction back itself on SQLITE_FULL, so `with conn:` then fails its own ROLLBACK
    ("no transaction is active") during the handling of the FullError."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, apsw.FullError) or (isinstance(exc, OSError) and exc.errno == errno.ENOSPC):
            return exc
        text = str(exc)
        if "database or disk is full" in text or "No space left on device" in text or "FullError" in text:
            return exc
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


def disk_note(index_dir: str | os.PathLike) -> str | None:
    """A note for every answer while the index's file system is (nearly) full: None otherwise."""
    try:
        st = os.statvfs(index_dir)
    except OSError:
        return None
    free = st.f_bavail * st.f_frsize
    if free >= LOW_SPACE_BYTES:
        return None
    return (f"disk full: {free // 1024} KiB free on the file system of {index_dir}; edits made since cannot be "
            "indexed until space is freed (a running pipeline keeps them and writes them then)")


class IndexMissing(FileNotFoundError):
    """There is no index at that path yet."""


class IndexOutdated(RuntimeError):
    """The index has a schema this nsccn does not read: `nsccn index` rebuilds it."""


class IndexNotReady(IndexMissing):
    """The index file exists, its schema not yet: a first build has just begun."""


class IndexUntrusted(IndexMissing):
    """The index file was not made by this user's nsccn (a repository can ship one): never read."""


# Structs, not dataclasses: a central change's walk makes 20,000 rows, and a frozen dataclass's
# constructor costs ten times a Struct's (0.6 µs a row)
class EntityRow(msgspec.Struct, frozen=True):
    id: str
    kind: str
    path: str
    qualname: str
    name: str
    start_line: int
    end_line: int
    signature: str
    docstring: str
    decorators: list[str]
    parent: str | None

    @classmethod
    def from_row(cls, row) -> "EntityRow":
        return cls(*row[:9], [] if row[9] == "[]" else json.loads(row[9]), row[10])  # most have none: no parse

    def brief(self) -> dict:
        return {
            "id": self.id,
            "kind": self.kind,
            "file": self.path,
            "line": self.start_line,
            "end_line": self.end_line,
            "signature": self.signature,
        }


class EdgeRow(msgspec.Struct, frozen=True):
    source: str
    target: str
    relation: str
    confidence: float
    resolution: str
    line: int
    path: str


# Set by `semantic.embed_index` once every entity has its vector of the recorded model; any file
# written or removed clears it. A run that changed nothing need not look at the vectors.
VECTORS_COMPLETE = "vectors_complete"


class Store:
    def __init__(self, db_path: str | Path, readonly: bool = False, cache_mib: int = 64):
        self.path = Path(db_path)
        self.readonly = readonly
        self._derived: dict[str, tuple[tuple[int, int], object]] = {}  # `derived`: key -> (version, value)
        self._postings: dict = {}  # full-text table -> its nsccn.store.bm25.Postings
        self._last_match: dict[str, tuple] = {}  # full-text table -> (query and index version, its Matches)
        self.replaced: str | None = None  # why a file that was not our index was removed (the writer)
        if readonly:
            if not self.path.exists():
                raise IndexMissing(f"no index at {self.path}: run `nsccn index` first")
            self.conn = self._open_checked(apsw.SQLITE_OPEN_READONLY)
        else:
            # 0600 whatever the umask (SQLite gives the -wal and -shm files the database's mode).
            if not self.path.parent.exists():
                private_dir(self.path.parent)
            flags = apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
            self.conn = self._open_checked(flags)
            if os.environ.get("NSCCN_TEST_MAX_PAGES"):  # tests: a real SQLITE_FULL without filling a disk
                self.conn.execute(f"PRAGMA max_page_count={int(os.environ['NSCCN_TEST_MAX_PAGES'])}")
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            migrate(self.conn, str(self.path), identity=trust.new_identity)
            self.ref_indexes()  # a first build that stopped before resolving left them out
        self.conn.execute(f"PRAGMA cache_size={-1024 * int(cache_mib)}")

    def _open_checked(self, flags: int) -> apsw.Connection:
        """A connection to an index this user's nsccn made (nsccn.store.trust), checked before
        anything reads a row or writes. A reader refuses any other (IndexUntrusted); the writer
        removes it, says why in one line, and starts a new one (the run rebuilds it from the files)."""
        for _attempt in (0, 1):
            why = None
            if self.readonly:
                side = self._unsafe_sidecar()
                why = f"{side} is not a file of this user's" if side else None
            else:
                while side := self._unsafe_sidecar():
                    os.unlink(side)  # the link itself: SQLite would have written the WAL through it
                os.close(open_private(self.path, os.O_RDWR))
            conn = apsw.Connection(str(self.path), flags=flags)
            conn.set_busy_timeout(10_000)
            if why is None:
                try:
                    issue = trust.problem(conn)
                except apsw.Error as exc:  # not a database at all, or a damaged one
                    issue = ("foreign", f"it cannot be read as an index: {exc}")
                if issue is None or (issue[0] in ("new", "version", "extraction") and not self.readonly):
                    return conn  # (the writer's migration makes a new schema, rebuilds an older one)
                conn.close()
                if issue[0] == "new":
                    raise IndexNotReady(f"the index at {self.path} is being created: try again in a moment")
                if issue[0] == "version":
                    raise IndexOutdated(f"index at {self.path} has schema {issue[1]}, this nsccn reads {SCHEMA_VERSION}:"
                                       " re-run `nsccn index`")
                if issue[0] == "extraction":
                    raise IndexOutdated(f"the index at {self.path} was made by another version of nsccn's indexing"
                                       " code: re-run `nsccn index`")
                why = issue[1]
            else:
                conn.close()
            if self.readonly:
                raise IndexUntrusted(f"the index at {self.path} was not made by this user's nsccn ({why}): nothing is"
                                     " read from it; run `nsccn index` to rebuild it from the repository")
            self.replaced = (f"{self.path} is not an index this user's nsccn made ({why}):"
                             " removed, rebuilding it from the repository")
            print(f"nsccn: warning: {self.replaced}", file=sys.stderr, flush=True)
            for suffix in ("", "-wal", "-shm", "-journal"):
                try:
                    os.unlink(f"{self.path}{suffix}")
                except FileNotFoundError:
                    pass
        raise IndexUntrusted(f"the index at {self.path} cannot be made anew")

    def _unsafe_sidecar(self) -> str | None:
        """A -wal, -shm or -journal file beside the index that is not a regular file of ours (a
        repository can carry `.nsccn/index.db-wal -> ~/.bashrc`), or the index itself a symlink
        (the writer's open_private refuses that one)."""
        for suffix in ("-wal", "-shm", "-journal") if not self.readonly else ("", "-wal", "-shm", "-journal"):
            side = f"{self.path}{suffix}"
            try:
                st = os.lstat(side)
            except FileNotFoundError:
                continue
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
                return side
        return None

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- metadata ----------------------------------------------------------------------------

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else default

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)", (key, value))

    # -- writing -----------------------------------------------------------------------------

    def file_states(self) -> dict[str, tuple[str, int, float]]:
        """path -> (content hash, size, mtime) of every indexed file."""
        return {p: (h, s, m) for p, h, s, m in self.conn.execute("SELECT path, content_hash, size, mtime FROM files")}

    def touch_file(self, path: str, mtime: float) -> None:
        """Record a new mtime for a file whose content did not change."""
        self.conn.execute("UPDATE files SET mtime=? WHERE path=?", (mtime, path))

    def write_files(self, parsed: Iterable[ParsedFile], affected_names: bool = True) -> set[str]:
        """Replace each file's rows, all in one transaction. Returns the names whose meaning may
        have changed, for `resolve.resolve_affected`: only what the file defines or exports
        differently than before. An edit inside a body changes no other file's edges.
        `affected_names=False` (a build that resolves every reference anyway) returns none: on a
        first build they are every name of the repository, held until the end for nothing."""
        affected: set[str] = set()
        now = time.time()
        parsed = list(parsed)
        with self.conn:
            self._counts_changed()
            if self.conn.execute("SELECT 1 FROM refs LIMIT 1").fetchone() is None:
                # A first build: its refs go in without their indexes (a B-tree insert per ref
                # each); resolution makes them once, one sort each (`ref_indexes`).
                for name in REF_INDEXES:
                    self.conn.execute(f"DROP INDEX IF EXISTS {name}")
            sym, tails, heads = self._intern_refs(parsed)
            for pf in parsed:
                before = self._symbols(pf.path) if affected_names else None
                self._delete_file_rows(pf.path)
                self._insert_file(pf, now, sym, tails, heads)
                if affected_names:
                    affected |= _changed_names(before, _symbols_of(pf))
        return affected

    def delete_files(self, paths: Iterable[str]) -> set[str]:
        affected: set[str] = set()
        with self.conn:
            self._counts_changed()
            for path in paths:
                affected |= _changed_names(self._symbols(path), None)
                self._delete_file_rows(path)
        return affected

    def _symbols(self, path: str) -> "_Symbols | None":
        """What other files can see of a file: its entities, imports (re-exports), globals, bases."""
        c = self.conn
        row = c.execute("SELECT id, module, imports, module_globals FROM files WHERE path=?", (path,)).fetchone()
        if row is None:
            return None
        ids = {eid: name for eid, name in c.execute("SELECT id, name FROM entities WHERE path=?", (path,))}
        bases = set(
            c.execute(
                "SELECT s.name, t.name FROM refs r JOIN symbols s ON s.id = r.source JOIN symbols t ON t.id = r.target"
                " JOIN files f ON f.id=? WHERE r.rowid BETWEEN f.refs_first AND f.refs_last"
                f" AND r.relation = {INHERITS_ID}",
                (row[0],),
            )
        )
        binds = self.symbol("BINDS")
        bindings = {t for (t,) in c.execute(
            "SELECT t.name FROM refs r JOIN symbols t ON t.id = r.target JOIN files f ON f.id=?"
            " WHERE r.rowid BETWEEN f.refs_first AND f.refs_last AND r.relation = ?", (row[0], binds))} if binds else set()
        return _Symbols(row[1], ids, json.loads(row[2]), set(json.loads(row[3])), bases, bindings)

    def _delete_file_rows(self, path: str) -> None:
        c = self.conn
        row = c.execute("SELECT id, refs_first, refs_last FROM files WHERE path=?", (path,)).fetchone()
        # Any statement on entities_fts first writes out the rows inserted before it in this
        # transaction (a new segment, ~0.5 ms): a new file, with no rows to delete, runs none.
        if c.execute("SELECT 1 FROM entities WHERE path=? LIMIT 1", (path,)).fetchone():
            c.execute("DELETE FROM entities_fts WHERE rowid IN (SELECT rowid FROM entities WHERE path=?)", (path,))
        c.execute("DELETE FROM entities WHERE path=?", (path,))
        c.execute("DELETE FROM skeletons WHERE path=?", (path,))
        if row is None:
            return
        file_id, first, last = row
        c.execute("DELETE FROM edges WHERE ref BETWEEN ? AND ?", (first, last))
        c.execute("DELETE FROM refs WHERE rowid BETWEEN ? AND ?", (first, last))
        c.execute("DELETE FROM files_fts WHERE rowid=?", (file_id,))
        c.execute("DELETE FROM text_fts WHERE rowid=?", (file_id,))
        c.execute("DELETE FROM files WHERE id=?", (file_id,))

    def intern(self, names: Iterable[str]) -> dict[str, int]:
        """symbols.id of each name, new names added (inside the caller's transaction)."""
        c = self.conn
        wanted = list(set(names))
        ids: dict[str, int] = {}
        self._select_symbols(wanted, ids)
        new = [name for name in wanted if name not in ids]
        if new:  # one statement for all (a cold index adds ~100k names), then their ids read back
            c.executemany("INSERT INTO symbols(name) VALUES(?)", zip(new))
            self._select_symbols(new, ids)
        return ids

    def _select_symbols(self, names: list[str], ids: dict[str, int]) -> None:
        for i in range(0, len(names), 500):
            chunk = names[i : i + 500]
            ids.update(self.conn.execute(f"SELECT name, id FROM symbols WHERE name IN ({','.join('?' * len(chunk))})", chunk))

    def _intern_refs(self, parsed: list[ParsedFile]) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
        """symbols.id of every string the refs of these files name, and of each target the ids
        of its tail and head: split once per distinct target, not once per reference."""
        names: set[str] = set()
        targets: set[str] = set()
        for pf in parsed:  # column by column, the per-reference work in C
            names.update(map(_SOURCE, pf.refs), map(_RELATION, pf.refs), map(_SCOPE, pf.refs))
            targets.update(map(_TARGET, pf.refs))
        tails = {t: _tail(t) for t in targets}
        heads = {t: _head(t) for t in targets}
        sym = self.intern(names.union(targets, tails.values(), heads.values()))
        return sym, {t: sym[n] for t, n in tails.items()}, {t: sym[n] for t, n in heads.items()}

    def symbol(self, name: str) -> int | None:
        row = self.conn.execute("SELECT id FROM symbols WHERE name=?", (name,)).fetchone()
        return row[0] if row else None

    def _insert_file(self, pf: ParsedFile, now: float, sym: dict[str, int], tails: dict[str, int],
                     heads: dict[str, int]) -> None:
        c = self.conn
        c.execute(
            "INSERT INTO files(path, language, content_hash, size, mtime, line_count, module, imports, module_globals,"
            " error_lines, indexed_at, refs_first, refs_last) VALUES(?,?,?,?,?,?,?,?,?,?,?,0,-1)",
            (
                pf.path,
                pf.language,
                pf.content_hash,
                pf.size,
                pf.mtime,
                pf.line_count,
                pf.module,
                json.dumps(pf.imports),
                json.dumps(pf.module_globals),
                json.dumps(pf.error_lines),
                now,
            ),
        )
        file_id = c.last_insert_rowid()
        terms = pf.terms if pf.terms is not None and len(pf.terms.entities) == len(pf.entities) else file_terms(pf)
        fts = "text_fts" if pf.language == TEXT else "files_fts"  # text never moves code's BM25 statistics
        c.execute(f"INSERT INTO {fts}(rowid, path, body) VALUES(?,?,?)", (file_id, terms.path, terms.body))
        # A file that defines one name twice (a redefinition, a property's setter) gives two
        # entities one id: the last one is the entity. Writing both (INSERT OR REPLACE) left the
        # first one's entities_fts row behind, counted in BM25 and, once its rowid came back to a
        # new entity, a second row under one rowid: FTS5 then reports the index malformed.
        last = {e.id: i for i, e in enumerate(pf.entities)}
        for i, (e, (name, signature, docstring, body)) in enumerate(zip(pf.entities, terms.entities)):
            if last[e.id] != i:
                continue
            c.execute(
                "INSERT INTO entities(id, kind, path, qualname, name, start_line, end_line, signature,"
                " docstring, decorators, parent, body_head) VALUES(?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    e.id,
                    e.kind,
                    e.path,
                    e.qualname,
                    e.name,
                    e.start_line,
                    e.end_line,
                    e.signature,
                    e.docstring,
                    json.dumps(e.decorators),
                    e.parent,
                    e.body_head,
                ),
            )
            rowid = c.last_insert_rowid()
            c.execute(
                "INSERT INTO entities_fts(rowid, name, path, signature, docstring, body) VALUES(?,?,?,?,?,?)",
                (rowid, name, terms.path, signature, docstring, body),
            )
        first = c.execute("SELECT COALESCE(MAX(rowid), 0) + 1 FROM refs").fetchone()[0]
        ids, targets = sym.__getitem__, list(map(_TARGET, pf.refs))
        c.executemany(
            "INSERT INTO refs(file, source, relation, target, line, scope, tail, head) VALUES(?,?,?,?,?,?,?,?)",
            zip(repeat(file_id), map(ids, map(_SOURCE, pf.refs)), map(ids, map(_RELATION, pf.refs)), map(ids, targets),
                map(_LINE, pf.refs), map(ids, map(_SCOPE, pf.refs)), map(tails.__getitem__, targets),
                map(heads.__getitem__, targets)),
        )
        last = c.execute("SELECT COALESCE(MAX(rowid), 0) FROM refs").fetchone()[0]
        if last >= first:  # one writer, one statement: the file's refs took consecutive rowids
            c.execute("UPDATE files SET refs_first=?, refs_last=? WHERE id=?", (first, last, file_id))
        c.execute(
            "INSERT INTO skeletons(path, content_hash, skeleton) VALUES(?,?,?)", (pf.path, pf.content_hash, pf.skeleton)
        )

    _REF_JOINS = (
        " FROM refs r JOIN files f ON f.id = r.file JOIN symbols s ON s.id = r.source JOIN symbols rl ON rl.id = r.relation"
        " JOIN symbols t ON t.id = r.target JOIN symbols sc ON sc.id = r.scope"
    )
    _REFS = "SELECT r.rowid, f.path, s.name, rl.name, t.name, r.line, sc.name" + _REF_JOINS

    def refs(self, paths: Iterable[str] | None = None, names: Iterable[str] | None = None) -> list[tuple]:
        """(rowid, path, source, relation, target, line, scope) of every ref, or of refs in `paths`
        plus refs whose target's first or last identifier is in `names`."""
        if paths is None and names is None:
            return [row for chunk in self.ref_chunks() for row in chunk]
        out: dict[int, tuple] = {}
        for p in paths or ():
            q = self._REFS + " JOIN files g ON g.path=? WHERE r.rowid BETWEEN g.refs_first AND g.refs_last"
            for row in self.conn.execute(q, (p,)):
                out[row[0]] = row
        for n in names or ():
            sid = self.symbol(n)
            if sid is None:
                continue
            for row in self.conn.execute(self._REFS + " WHERE r.tail=? OR r.head=?", (sid, sid)):
                out[row[0]] = row
        return list(out.values())

    def refs_by_tail(self, names: Iterable[str], relations: Sequence[str]) -> dict[str, list[tuple]]:
        """Per name, the refs of these relations whose target's last identifier it is, as
        `refs(names=[name])` gives those (by rowid), one query per 500 names."""
        out: dict[str, list[tuple]] = {n: [] for n in names}
        names = list(out)
        q = ("SELECT tl.name, r.rowid, f.path, s.name, rl.name, t.name, r.line, sc.name" + self._REF_JOINS
             + " JOIN symbols tl ON tl.id = r.tail WHERE tl.name IN ({})"
             f" AND r.relation IN (SELECT id FROM symbols WHERE name IN ({','.join('?' * len(relations))}))"
             " ORDER BY r.rowid")
        for i in range(0, len(names), 500):
            chunk = names[i : i + 500]
            for row in self.conn.execute(q.format(",".join("?" * len(chunk))), chunk + list(relations)):
                out[row[0]].append(row[1:])
        return out

    def relation_pairs(self, relation: str) -> Iterator[tuple[str, str]]:
        """(source, target) of every ref of one relation: a scan, for the relations read whole
        when first needed (RETURNS, MENTIONS, the IMPORTS made inside functions)."""
        q = ("SELECT s.name, t.name FROM refs r JOIN symbols s ON s.id = r.source JOIN symbols t ON t.id = r.target"
             " WHERE r.relation = (SELECT id FROM symbols WHERE name = ?)")
        return self.conn.execute(q, (relation,))

    def refs_naming(self, targets: Iterable[str], relation: str) -> list[tuple[str, str, int]]:
        """(source, target, line) of the refs of one relation whose target is exactly one of
        `targets` (through the refs' tail index: no scan)."""
        rel = self.symbol(relation)
        out = []
        for target in dict.fromkeys(targets) if rel is not None else ():
            sid, tail = self.symbol(target), self.symbol(_tail(target))
            if sid is None or tail is None:
                continue
            q = ("SELECT s.name, r.line FROM refs r JOIN symbols s ON s.id = r.source"
                 " WHERE r.tail=? AND r.target=? AND r.relation=? ORDER BY r.rowid")
            out += [(source, target, line) for source, line in self.conn.execute(q, (tail, sid, rel))]
        return out

    def ref_chunks(self, size: int = 20_000, relation: str | None = None, after: int = 0,
                   upto: int | None = None) -> Iterator[list[tuple]]:
        """Every ref (of one relation; with rowid in (after, upto]), as `refs` gives them, `size` at
        a time: memory stays flat however many the repository has, and no statement is open
        between chunks (the caller may write)."""
        q = self._REFS + " WHERE r.rowid > ?"
        args: tuple = ()
        if upto is not None:
            q += " AND r.rowid <= ?"
            args = (upto,)
        if relation is not None:
            q += " AND r.relation=(SELECT id FROM symbols WHERE name=?)"
            args = (*args, relation)
        q += " ORDER BY r.rowid LIMIT ?"
        last = after
        while True:
            rows = self.conn.execute(q, (last, *args, size)).fetchall()
            if not rows:
                return
            yield rows
            last = rows[-1][0]

    def ref_indexes(self) -> None:
        """Make the refs' indexes a first build wrote without (`write_files`); nothing if they exist."""
        have = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='index' AND tbl_name='refs'")}
        for name, sql in REF_INDEXES.items():
            if name not in have:
                self.conn.execute(sql)

    def ref_count(self) -> int:
        return self.conn.execute("SELECT COUNT(*) FROM refs").fetchone()[0]

    def delete_edges(self, ref_ids: Iterable[int] | None = None, relation: str | None = None) -> None:
        """Delete the edges resolved from these refs (`None`: all), or every edge of one relation."""
        c = self.conn
        self._counts_changed()
        if relation is not None:
            c.execute("DELETE FROM edges WHERE relation=(SELECT id FROM symbols WHERE name=?)", (relation,))
        elif ref_ids is None:
            c.execute("DELETE FROM edges")
        else:
            c.execute("CREATE TEMP TABLE IF NOT EXISTS doomed(ref INTEGER PRIMARY KEY)")
            c.execute("DELETE FROM temp.doomed")
            c.executemany("INSERT OR IGNORE INTO temp.doomed VALUES(?)", ((r,) for r in ref_ids))
            c.execute("DELETE FROM edges WHERE ref IN (SELECT ref FROM temp.doomed)")

    @contextmanager
    def edges_replaced(self) -> Iterator[None]:
        """Delete every edge for the caller to insert all of them again, inside its transaction.
        The edges' own indexes are dropped meanwhile and made again at the end: one sort each,
        not a B-tree insert per edge (sympy's 623k edges: 0.8 + 0.8 CPU-s, not 1.9-2.8). A
        rollback (the caller's exception) brings the indexes back with the old edges."""
        c = self.conn
        if not c.in_transaction:
            raise RuntimeError("edges_replaced runs inside the caller's transaction")
        indexes = c.execute(
            "SELECT name, sql FROM sqlite_master WHERE type='index' AND tbl_name='edges' AND sql IS NOT NULL"
        ).fetchall()
        for name, _ in indexes:
            c.execute(f'DROP INDEX "{name}"')
        self.delete_edges(None)
        yield
        for _, sql in indexes:
            c.execute(sql)

    def add_edges(self, edges: list[tuple]) -> None:
        """Insert edges, each (source, target, relation, confidence, resolution, line, path, ref),
        inside the caller's transaction."""
        self._counts_changed()
        if not edges:
            return
        # Column by column: the per-edge work stays in C (hundreds of thousands of edges a bulk).
        source, target, relation, confidence, resolution, line, _, ref = zip(*edges)
        self.add_edge_columns(source, target, relation, confidence, resolution, line, ref)

    def add_edge_columns(self, source: Sequence[str], target: Sequence[str], relation: Sequence[str],
                         confidence: Sequence[float], resolution: Sequence[str], line: Sequence[int],
                         ref: Sequence[int]) -> None:
        """`add_edges` given column by column (as nsccn.indexing.resolve_partitions' children send them);
        a ref's edges come together, in the order resolution found them."""
        self._counts_changed()
        sym = self.intern(set(source).union(target, relation, resolution))
        ids = sym.__getitem__
        self.conn.executemany(
            "INSERT INTO edges(ref, n, source, relation, target, confidence, resolution, line) VALUES(?,?,?,?,?,?,?,?)",
            zip(ref, _nth_of_ref(ref), map(ids, source), map(ids, relation), map(ids, target), confidence,
                map(ids, resolution), line),
        )

    def replace_edges(self, ref_ids: Iterable[int] | None, edges: Iterable[tuple]) -> None:
        """Replace the edges resolved from these refs (`None`: all edges) in one transaction.
        An edge is (source, target, relation, confidence, resolution, line, path, ref)."""
        with self.conn:
            self.delete_edges(ref_ids)
            self.add_edges(list(edges))

    def inherits(self) -> list[tuple[str, str, str, int, int]]:
        """(class id, base id, path of the reference, its rowid, the edge's n) of every INHERITS
        edge: where each base was named, for the hierarchy's order."""
        return self.conn.execute(
            "SELECT s.name, t.name, f.path, e.ref, e.n FROM edges e JOIN symbols s ON s.id = e.source"
            " JOIN symbols t ON t.id = e.target JOIN refs r ON r.rowid = e.ref JOIN files f ON f.id = r.file"
            f" WHERE e.relation = {INHERITS_ID}"  # a literal: it picks the partial index edges_inherits
        ).fetchall()

    # -- reading -----------------------------------------------------------------------------

    def entity(self, entity_id: str) -> EntityRow | None:
        row = self.conn.execute(f"SELECT {ENTITY_COLUMNS} FROM entities WHERE id=?", (entity_id,)).fetchone()
        return EntityRow.from_row(row) if row else None

    def entities(self, ids: Iterable[str]) -> dict[str, EntityRow]:
        ids = list(dict.fromkeys(ids))
        out: dict[str, EntityRow] = {}
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            q = f"SELECT {ENTITY_COLUMNS} FROM entities WHERE id IN ({','.join('?' * len(chunk))})"
            for row in self.conn.execute(q, chunk):
                out[row[0]] = EntityRow.from_row(row)
        return out

    def entities_in_file(self, path: str) -> list[EntityRow]:
        # of one span, in the order written (rowid): what the path index gave anyway, written out for
        # `entities_in_files`
        q = f"SELECT {ENTITY_COLUMNS} FROM entities WHERE path=? ORDER BY start_line, end_line DESC, rowid"
        return [EntityRow.from_row(r) for r in self.conn.execute(q, (path,))]

    def entities_in_files(self, paths: Iterable[str], parameterized: bool = False) -> dict[str, list[EntityRow]]:
        """`entities_in_file` of each path, one query per 500 of them (`parameterized`: only the
        functions and methods with decorators or a default value)."""
        out: dict[str, list[EntityRow]] = {p: [] for p in paths}
        paths = list(out)
        where = " AND kind IN ('func', 'method') AND (decorators != '[]' OR instr(signature, '=') > 0)" if parameterized else ""
        for i in range(0, len(paths), 500):
            chunk = paths[i : i + 500]
            q = (f"SELECT {ENTITY_COLUMNS} FROM entities WHERE path IN ({','.join('?' * len(chunk))}){where}"
                 " ORDER BY path, start_line, end_line DESC, rowid")
            for r in self.conn.execute(q, chunk):
                out[r[2]].append(EntityRow.from_row(r))
        return out

    def functions_in_files(self, paths: list[str]) -> list[tuple[str, str, str, str, str]]:
        """(path, kind, qualname, name, decorators as JSON) of every function and method in these files."""
        q = ("SELECT path, kind, qualname, name, decorators FROM entities WHERE kind IN ('func', 'method') "
             "AND path IN (SELECT value FROM json_each(?))")
        return list(self.conn.execute(q, (json.dumps(paths),)))

    def methods_named(self, names: Iterable[str]) -> dict[str, int]:
        """Per name, how many methods have it."""
        out = dict.fromkeys(names, 0)
        names = list(out)
        for i in range(0, len(names), 500):
            chunk = names[i : i + 500]
            q = f"SELECT name, count(*) FROM entities WHERE kind='method' AND name IN ({','.join('?' * len(chunk))}) GROUP BY name"
            out.update(self.conn.execute(q, chunk))
        return out

    def method_owners(self, names: Iterable[str]) -> dict[str, dict[str, str]]:
        """Per name, its methods: parent (the class) -> method id (one query per 500 names, by the name index)."""
        out: dict[str, dict[str, str]] = {n: {} for n in names}
        names = list(out)
        for i in range(0, len(names), 500):
            chunk = names[i : i + 500]
            q = f"SELECT name, parent, id FROM entities WHERE kind='method' AND name IN ({','.join('?' * len(chunk))})"
            for name, parent, eid in self.conn.execute(q, chunk):
                out[name][parent] = eid
        return out

    def entities_named(self, name: str) -> list[EntityRow]:
        q = f"SELECT {ENTITY_COLUMNS} FROM entities WHERE name=? OR qualname=? ORDER BY path, start_line"
        return [EntityRow.from_row(r) for r in self.conn.execute(q, (name, name))]

    def entity_at_rowids(self, rowids: list[int]) -> dict[int, EntityRow]:
        out: dict[int, EntityRow] = {}
        for i in range(0, len(rowids), 500):
            chunk = rowids[i : i + 500]
            q = f"SELECT rowid, {ENTITY_COLUMNS} FROM entities WHERE rowid IN ({','.join('?' * len(chunk))})"
            for row in self.conn.execute(q, chunk):
                out[row[0]] = EntityRow.from_row(row[1:])
        return out

    def all_entity_ids(self) -> Iterator[str]:
        for (eid,) in self.conn.execute("SELECT id FROM entities"):
            yield eid

    def file(self, path: str) -> dict | None:
        row = self.conn.execute(
            "SELECT path, language, content_hash, size, mtime, line_count, module, error_lines, indexed_at FROM files WHERE path=?",
            (path,),
        ).fetchone()
        if row is None:
            return None
        keys = ("path", "language", "content_hash", "size", "mtime", "line_count", "module", "error_lines", "indexed_at")
        out = dict(zip(keys, row))
        out["error_lines"] = json.loads(out["error_lines"])
        return out

    def file_paths(self) -> list[str]:
        return [p for (p,) in self.conn.execute("SELECT path FROM files ORDER BY path")]

    def version(self) -> tuple[int, int]:
        """Changes when the index does: another connection's commit moves `data_version`, this
        one's writes `total_changes`. What the query caches are kept against."""
        return self.conn.execute("PRAGMA data_version").fetchone()[0], self.conn.total_changes()

    def files_by_name(self) -> dict[str, list[str]]:
        """File name (lower case) -> the indexed paths of that name, in index order. Cached until
        the index changes (`version`): looking paths up (query analysis) then costs no scan of
        `files`."""
        def build() -> dict[str, list[str]]:
            by_name: dict[str, list[str]] = {}
            for (p,) in self.conn.execute("SELECT path FROM files ORDER BY rowid"):
                by_name.setdefault(p.rsplit("/", 1)[-1].lower(), []).append(p)
            return by_name

        return self.derived("files_by_name", build)

    def bm25_matches(self, table: str, terms: list[str]):
        """The rows of a full-text table matching any of `terms`, ready to score with FTS5's bm25
        (`nsccn.store.bm25.Matches`), or None where FTS5 must answer. The last answer is kept:
        one query's stream, in-file ranking and features read the same rows."""
        from nsccn.store import bm25  # numpy: only for queries, never for `nsccn index`

        version = self.version()
        key = (tuple(terms), version)
        last = self._last_match.get(table)
        if last is not None and last[0] == key:
            return last[1]
        postings = self._postings.get(table) or self._postings.setdefault(table, bm25.Postings(self.conn, table))
        found = postings.match(terms, version)
        self._last_match[table] = (key, found)
        return found

    def drop_query_caches(self) -> None:
        """Forget what queries keep (postings, row lengths, file names): the next query reads the
        index as a fresh process does (benchmarks measure the first query with it)."""
        self._postings.clear()
        self._last_match.clear()
        self._derived.clear()

    def derived(self, key: str, build):
        """`build()`, made once per index version on this connection: a value read from the index
        alone (a long-lived server answers its next question without reading it again)."""
        version = self.version()
        hit = self._derived.get(key)
        if hit is None or hit[0] != version:
            hit = self._derived[key] = (version, build())
        return hit[1]

    def skeleton(self, path: str) -> tuple[str, str] | None:
        row = self.conn.execute("SELECT skeleton, content_hash FROM skeletons WHERE path=?", (path,)).fetchone()
        return (row[0], row[1]) if row else None

    def edges_from(self, source: str, relations: Iterable[str] | None = None) -> list[EdgeRow]:
        return self._edges("source", source, relations)

    def edges_to(self, target: str, relations: Iterable[str] | None = None) -> list[EdgeRow]:
        return self._edges("target", target, relations)

    _EDGE_ROWS = (
        "SELECT s.name, t.name, rl.name, e.confidence, h.name, e.line, f.path FROM edges e"
        " JOIN symbols s ON s.id = e.source JOIN symbols t ON t.id = e.target"
        " JOIN symbols rl ON rl.id = e.relation JOIN symbols h ON h.id = e.resolution"
        " JOIN refs r ON r.rowid = e.ref JOIN files f ON f.id = r.file"
    )

    def all_edges(self) -> list[EdgeRow]:
        """Every edge with its ids as text (for reports and benchmarks; queries read by node)."""
        return [EdgeRow(*r) for r in self.conn.execute(self._EDGE_ROWS + " ORDER BY s.name, t.name, e.line")]

    # A node's edges by line; of one line, by relation, then as resolution wrote them: the order the
    # index gives anyway (by its (target|source, relation) index, sorted stably by line), written
    # out so that `edges_to_many` gives each node the very list `edges_to` does.
    _EDGE_ORDER = " ORDER BY e.line, e.relation, e.ref, e.n"

    def _edges(self, column: str, value: str, relations: Iterable[str] | None) -> list[EdgeRow]:
        q = self._EDGE_ROWS + f" WHERE e.{column}=(SELECT id FROM symbols WHERE name=?)"
        args: list = [value]
        if relations:
            rels = list(relations)
            q += f" AND e.relation IN (SELECT id FROM symbols WHERE name IN ({','.join('?' * len(rels))}))"
            args += rels
        return [EdgeRow(*r) for r in self.conn.execute(q + self._EDGE_ORDER, args)]

    def edges_from_many(self, sources: Iterable[str], relations: Iterable[str] | None = None) -> dict[str, list[EdgeRow]]:
        """`edges_from` of each source, one query per 500 of them."""
        return self._edges_many("source", sources, relations)

    def edges_to_many(self, targets: Iterable[str], relations: Iterable[str] | None = None) -> dict[str, list[EdgeRow]]:
        """`edges_to` of each target, one query per 500 of them."""
        return self._edges_many("target", targets, relations)

    def _edges_many(self, column: str, values: Iterable[str], relations: Iterable[str] | None) -> dict[str, list[EdgeRow]]:
        """The rows `_edges` gives each node, with two joins where it makes six (a central sympy
        change's walk reads 20,000 edges: 47 ms so, 38 this way): the nodes asked and the relations are
        looked up first, a resolution's name and a file's path (a few dozen, a few thousand) kept per
        index version."""
        out: dict[str, list[EdgeRow]] = {v: [] for v in values}
        values = list(out)
        other = "target" if column == "source" else "source"
        rel_ids = self._symbol_ids(list(relations or ()))
        if relations and not rel_ids:
            return out
        names, paths = self._symbol_names(), self._file_paths()
        where_rel = f" AND e.relation IN ({','.join(map(str, rel_ids.values()))})" if relations else ""
        for i in range(0, len(values), 500):
            ids = self._symbol_ids(values[i : i + 500])
            if not ids:
                continue
            q = (f"SELECT o.name, e.{column}, e.relation, e.confidence, e.resolution, e.line, r.file FROM edges e"
                 f" JOIN symbols o ON o.id = e.{other} JOIN refs r ON r.rowid = e.ref"
                 f" WHERE e.{column} IN ({','.join(map(str, ids.values()))}){where_rel}" + self._EDGE_ORDER)
            rows = self.conn.execute(q).fetchall()
            self._name_symbols(names, {r[2] for r in rows} | {r[4] for r in rows})
            node = {v: k for k, v in ids.items()}
            for o, n, rel, conf, res, line, f in rows:
                rel, res, path = names.get(rel), names.get(res), paths.get(f)
                if rel is None or res is None or path is None:
                    continue  # (what the joins of `_EDGE_ROWS` drop: a damaged index)
                n = node[n]
                out[n].append(EdgeRow(o, n, rel, conf, res, line, path) if column == "target"
                              else EdgeRow(n, o, rel, conf, res, line, path))
        return out

    def _symbol_ids(self, names: list[str]) -> dict[str, int]:
        """name -> symbols.id of those of `names` the index has."""
        if not names:
            return {}
        return dict(self.conn.execute(f"SELECT name, id FROM symbols WHERE name IN ({','.join('?' * len(names))})", names))

    def _symbol_names(self) -> dict[int, str]:
        """symbols.id -> name of the relations and resolutions edges were read with, kept per index version."""
        return self.derived("symbol_names", dict)

    def _name_symbols(self, names: dict[int, str], ids: set[int]) -> None:
        missing = [i for i in ids if i not in names]
        for i in range(0, len(missing), 500):
            chunk = missing[i : i + 500]
            names.update(self.conn.execute(f"SELECT id, name FROM symbols WHERE id IN ({','.join('?' * len(chunk))})", chunk))

    def _file_paths(self) -> dict[int, str]:
        """files.id -> path, kept per index version."""
        return self.derived("file_paths", lambda: dict(self.conn.execute("SELECT id, path FROM files")))

    def counts(self) -> dict:
        """Files, entities, edges (per relation), files with syntax errors. Kept in meta until a
        write changes them: counting 600k edges costs more than a no-change index run."""
        c = self.conn
        kept = self.get_meta(COUNTS_KEY)
        if kept is not None:
            return json.loads(kept)
        edges = dict(c.execute(
            "SELECT rl.name, n FROM (SELECT relation, COUNT(*) n FROM edges GROUP BY relation)"
            " JOIN symbols rl ON rl.id = relation").fetchall())
        out = {
            "files": c.execute("SELECT COUNT(*) FROM files").fetchone()[0],
            "entities": c.execute("SELECT COUNT(*) FROM entities").fetchone()[0],
            "edges": sum(edges.values()),
            "edges_by_relation": edges,
            "files_with_syntax_errors": c.execute("SELECT COUNT(*) FROM files WHERE error_lines != '[]'").fetchone()[0],
        }
        if not self.readonly:
            self.set_meta(COUNTS_KEY, json.dumps(out))
        return out

    def _counts_changed(self) -> None:
        # Files changed: the cached counts are stale, and the vectors may be (`semantic.embed_index`
        # marks them complete again).
        self.conn.execute("DELETE FROM meta WHERE key IN (?, ?)", (COUNTS_KEY, VECTORS_COMPLETE))


def _nth_of_ref(refs: Iterable[int]) -> Iterator[int]:
    """0, 1, ... along each run of edges resolved from one ref (they come grouped by ref)."""
    last, n = None, 0
    for ref in refs:
        n = n + 1 if ref == last else 0
        last = ref
        yield n


_SOURCE, _RELATION, _TARGET, _LINE, _SCOPE = (attrgetter(f) for f in ("source", "relation", "target", "line", "scope"))


def _tail(target: str) -> str:
    return target.rsplit(".", 1)[-1].split(":")[-1]


def _head(target: str) -> str:
    return target.split(".", 1)[0].split(":")[-1]


@dataclass(frozen=True, slots=True)
class _Symbols:
    module: str
    ids: dict[str, str]  # entity id -> name
    imports: dict[str, str]
    globals: set[str]
    bases: set[tuple[str, str]]  # (class id, base expression)
    bindings: set[str]  # "NAME=VALUE": a global bound to a name (nsccn/indexing/resolve_aliases.py)


def _symbols_of(pf: ParsedFile) -> _Symbols:
    return _Symbols(
        pf.module,
        {e.id: e.name for e in pf.entities},
        pf.imports,
        set(pf.module_globals),
        {(r.source, r.target) for r in pf.refs if r.relation == "INHERITS"},
        {r.target for r in pf.refs if r.relation == "BINDS"},
    )


def _changed_names(before: _Symbols | None, after: _Symbols | None) -> set[str]:
    """Names whose resolution elsewhere may differ between two versions of one file."""
    if before is None or after is None:
        whole = before or after
        if whole is None:
            return set()
        names = set(whole.ids.values()) | whole.globals | set(whole.imports) | {whole.module.rsplit(".", 1)[-1]}
        return names | ({EVERYTHING} if _project_facts(whole.imports) else set())
    names = {before.ids.get(i) or after.ids[i] for i in before.ids.keys() ^ after.ids.keys()}
    names |= before.globals ^ after.globals
    names |= {b.partition("=")[0] for b in before.bindings ^ after.bindings}  # `s = attrs` now `s = attrib`
    rebound = {k for k in before.imports.keys() | after.imports.keys() if before.imports.get(k) != after.imports.get(k)}
    names |= rebound
    if _project_facts(before.imports) != _project_facts(after.imports):
        names.add(EVERYTHING)  # go.mod, tsconfig.json, Cargo.toml: how every import maps to files
    if before.bases != after.bases:
        # A class that changed its bases changes what self.m() means in it and in every subclass,
        # wherever they are: rare enough to re-resolve everything.
        names.add(EVERYTHING)
    if rebound and any(base.split(".", 1)[0] in rebound for _, base in after.bases):
        names.add(EVERYTHING)  # the same bases written, now imported from another module
    return {n for n in names if n}


EVERYTHING = "*"  # among affected names: re-resolve every reference


def _project_facts(imports: dict[str, str]) -> dict[str, str]:
    """The facts of a project file (nsccn.languages.project), kept among its imports."""
    return {k: v for k, v in imports.items() if k.startswith("project.")}
