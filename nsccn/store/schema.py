"""The SQLite schema, versioned. An index of an older schema than `REBUILD_BELOW` is rebuilt (its
tables dropped and made anew: the next index run is a first build), never read as if it were new."""

from __future__ import annotations

import sys
from collections.abc import Callable

import apsw

from nsccn.store.extraction import EXTRACTED_BY, extraction_digest

SCHEMA_VERSION = 6
# Schemas before 4 keep ids as text in edges and refs: no migration reads them, the index is rebuilt.
# Indexes before 6 may hold entities_fts rows of entities written twice (see `Store._insert_file`).
REBUILD_BELOW = 6

INHERITS_ID = 4  # symbols.id of 'INHERITS', fixed by the schema

# The tables an index run fills: dropped and made anew when an older index is rebuilt.
INDEX_TABLES = (
    "files", "entities", "refs", "edges", "skeletons", "ranks", "symbols", "entities_fts", "files_fts",
    "text_fts", "files_fts_ids",  # (schemas 2-3 had files_fts_ids; 5 added text_fts)
)

INDEX_SCHEMA = """
    -- Every string an edge or a reference names (entity ids, targets, expressions, relation and
    -- resolution names, scopes), once: edges and refs hold these integers, not repeated text.
    CREATE TABLE symbols(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
    -- The relations first, in the order of their names: an index on (source, relation) lists a
    -- node's edges as the text-id schema did (CALLS, CONTAINS, ...), and INHERITS has a fixed id
    -- (INHERITS_ID) the partial index below can name.
    INSERT INTO symbols(id, name) VALUES(1, 'CALLS'), (2, 'CONTAINS'), (3, 'IMPORTS'), (4, 'INHERITS'),
        (5, 'MUTATES'), (6, 'PROPAGATES_ERROR'), (7, 'READS_CONFIG');
    CREATE TABLE files(
        id INTEGER PRIMARY KEY,         -- also the rowid of the file's files_fts row
        path TEXT NOT NULL UNIQUE,
        language TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        size INTEGER NOT NULL,
        mtime REAL NOT NULL,
        line_count INTEGER NOT NULL,
        module TEXT NOT NULL,
        imports TEXT NOT NULL,          -- JSON: local name -> dotted target
        module_globals TEXT NOT NULL,   -- JSON list
        error_lines TEXT NOT NULL,      -- JSON list
        indexed_at REAL NOT NULL,
        refs_first INTEGER NOT NULL,    -- a file's refs are written together: rowids refs_first..refs_last
        refs_last INTEGER NOT NULL
    );
    CREATE TABLE entities(
        rowid INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        kind TEXT NOT NULL,
        path TEXT NOT NULL,
        qualname TEXT NOT NULL,
        name TEXT NOT NULL,
        start_line INTEGER NOT NULL,
        end_line INTEGER NOT NULL,
        signature TEXT NOT NULL,
        docstring TEXT NOT NULL,
        decorators TEXT NOT NULL,       -- JSON list
        parent TEXT,
        body_head TEXT NOT NULL
    );
    CREATE INDEX entities_path ON entities(path);
    CREATE INDEX entities_name ON entities(name);
    CREATE INDEX entities_qualname ON entities(qualname);
    CREATE TABLE refs(                  -- every column a symbols.id but file (files.id) and line
        rowid INTEGER PRIMARY KEY,
        file INTEGER NOT NULL,
        source INTEGER NOT NULL,
        relation INTEGER NOT NULL,
        target INTEGER NOT NULL,        -- the expression as written
        line INTEGER NOT NULL,
        scope INTEGER NOT NULL,
        tail INTEGER NOT NULL,          -- last identifier of target: what re-resolution keys on
        head INTEGER NOT NULL           -- first identifier of target
    );
    CREATE INDEX refs_tail ON refs(tail);
    CREATE INDEX refs_head ON refs(head);
    -- Clustered by the refs row each edge was resolved from (a file's edges are one range of it,
    -- and go with it), then in the order resolution found them (`n`: 0, 1, ... within the ref);
    -- source, relation, target, resolution: symbols.id.
    CREATE TABLE edges(
        ref INTEGER NOT NULL,
        n INTEGER NOT NULL,
        target INTEGER NOT NULL,
        source INTEGER NOT NULL,
        relation INTEGER NOT NULL,
        confidence REAL NOT NULL,
        resolution INTEGER NOT NULL,
        line INTEGER NOT NULL,
        PRIMARY KEY(ref, n)
    ) WITHOUT ROWID;
    CREATE INDEX edges_source ON edges(source, relation);
    -- The class hierarchy, read whole by every resolution: a few thousand rows, not a scan of all edges.
    CREATE INDEX edges_inherits ON edges(source, target) WHERE relation = 4;
    CREATE INDEX edges_target ON edges(target, relation);
    CREATE TABLE skeletons(
        path TEXT PRIMARY KEY,
        content_hash TEXT NOT NULL,
        skeleton TEXT NOT NULL,
        skeleton_tokens INTEGER,        -- filled lazily by the first reader that counts
        source_tokens INTEGER
    );
    CREATE TABLE ranks(
        entity_rowid INTEGER PRIMARY KEY,  -- entities.rowid
        rank REAL NOT NULL                 -- PageRank over the reference graph, recomputed per index run
    );
    CREATE VIRTUAL TABLE entities_fts USING fts5(
        name, path, signature, docstring, body,
        content='', contentless_delete=1,
        tokenize="unicode61 tokenchars '_'"
    );
    -- BM25 over whole files ranks files better than their best entity alone; rowid = files.id.
    CREATE VIRTUAL TABLE files_fts USING fts5(
        path, body,
        content='', contentless_delete=1,
        tokenize="unicode61 tokenchars '_'"
    );
    -- Files read as text (docs, data): their own table, so their words never change the BM25
    -- statistics of code files (the learned ranker's features); rowid = files.id.
    CREATE VIRTUAL TABLE text_fts USING fts5(
        path, body,
        content='', contentless_delete=1,
        tokenize="unicode61 tokenchars '_'"
    );
"""

# The static model's vector of each stored commit's message, by the commit's sha
# (nsccn.vectors.commit_vectors): the ranker's semantic "similar past fixes". Part of the history's
# schema (every index has it, with or without entity vectors); made by an index run that embeds.
COMMIT_VECTORS_SCHEMA = """
    CREATE TABLE IF NOT EXISTS commit_vectors(
        rowid INTEGER PRIMARY KEY,
        sha TEXT NOT NULL UNIQUE,
        model_id TEXT NOT NULL,
        vector BLOB NOT NULL            -- float16, L2-normalized
    );
"""

# The repository's git history (nsccn/reading/history.py): commits, the files and functions each changed,
# and its message for BM25 against a query. Kept when an older index is rebuilt.
HISTORY_SCHEMA = """
    CREATE TABLE IF NOT EXISTS commits(
        rowid INTEGER PRIMARY KEY,
        sha TEXT NOT NULL UNIQUE,
        time INTEGER NOT NULL,
        message TEXT NOT NULL,
        is_fix INTEGER NOT NULL,
        n_files INTEGER NOT NULL
    );
    CREATE TABLE IF NOT EXISTS commit_changes(
        commit_id INTEGER NOT NULL,     -- commits.rowid
        path TEXT NOT NULL,
        name TEXT NOT NULL              -- '' for the file itself, else a changed function's name
    );
    CREATE INDEX IF NOT EXISTS commit_changes_path ON commit_changes(path, name);
    CREATE INDEX IF NOT EXISTS commit_changes_commit ON commit_changes(commit_id);
    CREATE VIRTUAL TABLE IF NOT EXISTS commits_fts USING fts5(
        message, content='', contentless_delete=1, tokenize="unicode61 tokenchars '_'"
    );
""" + COMMIT_VECTORS_SCHEMA

# The refs' own indexes, which only re-resolving an edit reads (`Store.refs(names=...)`): a first
# build writes its refs without them and makes them once, one sort each (`Store.ref_indexes`).
REF_INDEXES = {"refs_tail": "CREATE INDEX refs_tail ON refs(tail)", "refs_head": "CREATE INDEX refs_head ON refs(head)"}

# "1" from a commit that wrote files until their references are resolved: a run that dies in
# between leaves it, and readers say the graph is behind (`Navigator.unresolved_note`).
RESOLVE_PENDING = "resolve_pending"
RANKS_PENDING = "ranks_pending_files"  # files changed since PageRank was last computed
# Meta keys about the index run's state: meaningless once the tables are rebuilt.
RUN_META = (RESOLVE_PENDING, RANKS_PENDING, "last_indexed", "counts")


def migrate(conn: apsw.Connection, where: str = "", identity: Callable[[], dict[str, str]] | None = None) -> int:
    """Create the schema of a new database, or rebuild an older one (one line on stderr says so),
    in one transaction: no reader sees half of it. A new one is signed with `identity()`'s meta
    rows (nsccn.store.trust) in that transaction too. Returns the version."""
    digest = extraction_digest()
    with conn:
        conn.execute("CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT)")
        row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        version = int(row[0]) if row else 0
        if version > SCHEMA_VERSION:
            raise RuntimeError(
                f"index schema version {version} is newer than this nsccn ({SCHEMA_VERSION}); upgrade nsccn or delete the index"
            )
        made_by = conn.execute("SELECT value FROM meta WHERE key=?", (EXTRACTED_BY,)).fetchone()
        if version == SCHEMA_VERSION and made_by is not None and made_by[0] == digest:
            return version
        if version == SCHEMA_VERSION:  # what unchanged files hold was extracted by other code
            print(f"nsccn: warning: the index {where} was made by another version of nsccn's indexing code:"
                  " rebuilding it from the repository", file=sys.stderr)
            _drop_index_tables(conn)
        elif 0 < version < REBUILD_BELOW:
            print(f"nsccn: warning: the index {where} has schema {version}, this nsccn writes {SCHEMA_VERSION}:"
                  " rebuilding it from the repository", file=sys.stderr)
            _drop_index_tables(conn)
        elif version == 0 and identity is not None:
            conn.executemany("INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)", identity().items())
        conn.execute(INDEX_SCHEMA)
        conn.execute(HISTORY_SCHEMA)
        conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES('schema_version', ?)", (str(SCHEMA_VERSION),))
        conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)", (EXTRACTED_BY, digest))
    return SCHEMA_VERSION


def _drop_index_tables(conn: apsw.Connection) -> None:
    """What an index run fills, and its run state: the next run is a first build (history stays)."""
    for table in INDEX_TABLES:
        conn.execute(f"DROP TABLE IF EXISTS {table}")
    conn.executemany("DELETE FROM meta WHERE key=?", ((k,) for k in RUN_META))


# The vector tables (nsccn.vectors.table), made by the first embedding run; vec_index is sqlite-vec's.
VECTOR_TABLES = """
                CREATE TABLE IF NOT EXISTS vec_meta (key TEXT PRIMARY KEY, value) WITHOUT ROWID;
                CREATE TABLE IF NOT EXISTS vec_ids (
                    rowid INTEGER PRIMARY KEY,
                    entity_id TEXT NOT NULL UNIQUE,
                    text_hash TEXT NOT NULL,
                    cache_id INTEGER NOT NULL  -- vec_cache.id: the re-rank reads vectors there
                );
                CREATE TABLE IF NOT EXISTS vec_bits (rowid INTEGER PRIMARY KEY, bits BLOB NOT NULL);
                -- A rowid table, not WITHOUT ROWID: a 1-1.5 KB vector fits in a table leaf
                -- cell, but spills to a 4 KB overflow page per row in an index-style b-tree.
                CREATE TABLE IF NOT EXISTS vec_cache (
                    id INTEGER PRIMARY KEY,
                    model_id TEXT NOT NULL,
                    dim INTEGER NOT NULL,
                    text_hash TEXT NOT NULL,
                    vector BLOB NOT NULL,
                    used INTEGER NOT NULL,  -- unix time of the last store or hit, for pruning
                    UNIQUE (model_id, dim, text_hash)
                );
"""


def vec_index_sql(dim: int) -> str:
    # distance_metric=l2 rather than cosine: the vectors are unit length, so the
    # ranking is the same (|a-b|^2 = 2 - 2cos), and sqlite-vec's L2 is ~15% faster.
    return f"CREATE VIRTUAL TABLE vec_index USING vec0(embedding float[{dim}] distance_metric=l2)"
