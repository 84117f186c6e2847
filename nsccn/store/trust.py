"""Whether an index file is one this user's nsccn made, before anything reads a row of it.

A repository is untrusted input, and it can carry `.nsccn/index.db` (a plain `git clone` brings
it): forged entities that every answer would repeat to an agent, and SQL triggers that would run
inside our own writes. The index stays where users expect it (in the repository, by default),
and is trusted only when both hold:

* its meta carries an HMAC of its random id under a per-user secret (`secret_path`: created 0600
  as `~/.local/state/nsccn/secret`, or under `$NSCCN_STATE_DIR`, never in a repository): only
  this user's nsccn can have made it;
* its schema objects are exactly ours (`sqlite_master` against the objects our own schema makes
  in memory: tables, indexes, FTS5 and sqlite-vec shadow tables, with their SQL text), so no
  trigger, view or altered table survives even in a file that was ours once.

Reading `sqlite_master` and the meta table runs no trigger (triggers fire on writes only), and
connections run with `trusted_schema=OFF`; the checks run before any write, the WAL pragma included.
The text of every CREATE statement is part of the check: an edit to it (a comment included) makes
existing indexes rebuild once.
"""

from __future__ import annotations

import hmac
import os
import re
import secrets
import stat
import tempfile
from functools import lru_cache
from hashlib import sha256
from pathlib import Path

import apsw

from nsccn.private import PrivatePathError, create_private_once, private_dir

ID_KEY, MAC_KEY = "index_id", "index_mac"
_VEC_INDEX = re.compile(r"CREATE VIRTUAL TABLE vec_index USING vec0\(embedding float\[(\d{1,5})\] distance_metric=l2\)")


def state_dir() -> Path:
    """`~/.local/state/nsccn`, or `$NSCCN_STATE_DIR`. Not `$XDG_STATE_HOME`: MCP clients start
    servers with a few variables only (HOME, PATH, ...), and a server that looked for the key
    elsewhere than the `nsccn index` before it would take every index for a foreign one."""
    if os.environ.get("NSCCN_STATE_DIR"):
        return Path(os.environ["NSCCN_STATE_DIR"])
    return Path.home() / ".local" / "state" / "nsccn"


def secret_path() -> Path:
    return state_dir() / "secret"


def _fallback_path() -> Path:
    """Where the secret goes when the state directory cannot be made (a read-only home): a
    private directory under the temporary directory (lost at reboot: indexes then rebuild)."""
    return Path(tempfile.gettempdir()) / f"nsccn-{os.getuid()}" / "secret"


def _read(path: Path) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise PrivatePathError(f"cannot read nsccn's key {path}: {exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
            raise PrivatePathError(f"nsccn's key {path} is not a regular file of this user: remove it")
        if st.st_mode & 0o077:  # others could read it, so could have signed a forged index with it
            raise PrivatePathError(f"nsccn's key {path} has mode {stat.S_IMODE(st.st_mode):04o}: remove it"
                                   " (every index is then rebuilt once)")
        data = os.read(fd, 1024).strip()
    finally:
        os.close(fd)
    if len(data) < 32:
        raise PrivatePathError(f"nsccn's key {path} is damaged: remove it (every index is then rebuilt once)")
    return data


def load_secret(create: bool) -> bytes | None:
    """This user's secret; made when `create` (the writer) and missing. None: there is none."""
    for path in (secret_path(), _fallback_path()):
        found = _read(path)
        if found is not None or not create:
            if found is not None:
                return found
            continue
        try:
            private_dir(path.parent, strict=path == _fallback_path())
            create_private_once(path, secrets.token_hex(32).encode())  # two writers at once: one wins
        except OSError:
            continue  # a read-only home: the fallback
        return _read(path)
    return None


def mac(secret: bytes, index_id: str) -> str:
    return hmac.new(secret, b"nsccn-index\0" + index_id.encode(), sha256).hexdigest()


def new_identity() -> dict[str, str]:
    """The meta rows that sign a new index (written by `migrate` with its schema, in one transaction)."""
    secret = load_secret(create=True)
    if secret is None:
        raise PrivatePathError(f"cannot create nsccn's key under {state_dir()} or {_fallback_path().parent}")
    index_id = secrets.token_hex(16)
    return {ID_KEY: index_id, MAC_KEY: mac(secret, index_id)}


def _catalogue(conn: apsw.Connection) -> set[tuple]:
    return set(conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master"))


# What sqlite-vec (0.1.9) makes for vec_index besides the table itself (its shadow tables), pinned
# so that a reader need not load the extension (60 ms, and numpy with its package) to check an
# index; an index holding other ones is checked against what the installed sqlite-vec makes
# (tests/test_untrusted.py compares the two).
VEC0_SHADOW = frozenset({
    ("index", "sqlite_autoindex_vec_index_info_1", "vec_index_info", None),
    ("index", "sqlite_autoindex_vec_index_vector_chunks00_1", "vec_index_vector_chunks00", None),
    ("table", "sqlite_sequence", "sqlite_sequence", "CREATE TABLE sqlite_sequence(name,seq)"),
    ("table", "vec_index_chunks", "vec_index_chunks", 'CREATE TABLE "vec_index_chunks"(chunk_id INTEGER PRIMARY KEY'
     " AUTOINCREMENT,size INTEGER NOT NULL,validity BLOB NOT NULL,rowids BLOB NOT NULL)"),
    ("table", "vec_index_info", "vec_index_info", 'CREATE TABLE "vec_index_info" (key text primary key, value any)'),
    ("table", "vec_index_rowids", "vec_index_rowids", 'CREATE TABLE "vec_index_rowids"(rowid INTEGER PRIMARY KEY'
     " AUTOINCREMENT,id,chunk_id INTEGER,chunk_offset INTEGER)"),
    ("table", "vec_index_vector_chunks00", "vec_index_vector_chunks00",
     'CREATE TABLE "vec_index_vector_chunks00"(rowid PRIMARY KEY,vectors BLOB NOT NULL)'),
})


@lru_cache(maxsize=4)
def expected_objects(vec_dim: int | None, pinned: bool = True) -> frozenset[tuple]:
    """Every schema object our schema makes (with the vector tables of that dimension, if any),
    made in memory: ~1.5 ms, once a process."""
    from nsccn.store.schema import VECTOR_TABLES, migrate, vec_index_sql

    conn = apsw.Connection(":memory:")
    try:
        migrate(conn)
        if vec_dim is None:
            return frozenset(_catalogue(conn))
        conn.execute(VECTOR_TABLES)
        if pinned:
            return frozenset(_catalogue(conn) | VEC0_SHADOW | {("table", "vec_index", "vec_index", vec_index_sql(vec_dim))})
        from nsccn.vectors.table import load_sqlite_vec

        load_sqlite_vec(conn)
        conn.execute(vec_index_sql(vec_dim))
        return frozenset(_catalogue(conn))
    finally:
        conn.close()


def problem(conn: apsw.Connection) -> tuple[str, str | None] | None:
    """Why the index on `conn` is not one to use, or None. ("new", None): it holds no schema yet
    (or only the start of ours: a first build under way); ("foreign", why): not ours, or altered;
    ("version", v): ours, of another schema version, ("extraction", d): ours, made by other indexing code
    (`nsccn.store.extraction`; d its digest): the caller's migration decides."""
    from nsccn.store.extraction import EXTRACTED_BY, extraction_digest
    from nsccn.store.schema import SCHEMA_VERSION

    conn.execute("PRAGMA trusted_schema=OFF")  # functions in a schema's SQL run only if innocuous
    objects = _catalogue(conn)
    if not objects:
        return "new", None
    ours = expected_objects(None)
    meta = next((o for o in objects if o[1] == "meta"), None)
    if meta is None or meta not in ours:
        return "foreign", "its meta table is not nsccn's"
    foreign = sorted(o for o in objects if o[0] in ("trigger", "view"))
    if foreign:  # never ours, whatever the version: before any row is read
        return "foreign", f"it holds a {foreign[0][0]} {foreign[0][1]!r}"
    rows = dict(conn.execute("SELECT key, value FROM meta WHERE key IN (?, ?, ?, 'schema_version')",
                             (ID_KEY, MAC_KEY, EXTRACTED_BY)))
    if "schema_version" not in rows and all(o[2] == "meta" and o in ours for o in objects):
        return "new", None  # the schema is being created: meta is made first, in the same transaction
    secret = load_secret(create=False)
    index_id, signed = rows.get(ID_KEY), rows.get(MAC_KEY)
    if not (secret and isinstance(index_id, str) and isinstance(signed, str)
            and hmac.compare_digest(mac(secret, index_id), signed)):
        return "foreign", "it is not signed with this user's key: not made by this user's nsccn on this machine"
    version = str(rows.get("schema_version"))
    if version != str(SCHEMA_VERSION):
        return "version", version
    vec = next((o for o in objects if o[1] == "vec_index" and o[0] == "table"), None)
    dim = None
    if vec is not None:
        m = _VEC_INDEX.fullmatch(vec[3] or "")
        if m is None:
            return "foreign", "its vec_index table is not nsccn's"
        dim = int(m.group(1))
    extra = objects - expected_objects(dim)
    if extra and dim is not None:  # another sqlite-vec than the pinned one: ask it
        extra -= expected_objects(dim, pinned=False)
    extra = sorted(extra, key=lambda o: (o[0], o[1]))
    if extra:
        return "foreign", f"it holds a {extra[0][0]} {extra[0][1]!r} that nsccn does not make"
    if rows.get(EXTRACTED_BY) != extraction_digest():
        return "extraction", rows.get(EXTRACTED_BY)
    return None
