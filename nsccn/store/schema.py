"""The SQLite schema, versioned; `migrate` brings any older database forward."""

from __future__ import annotations

import apsw

SCHEMA_VERSION = 3

# Each entry upgrades the schema from version i to i+1; entry 0 creates it.
MIGRATIONS: list[str] = [
    """
    CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);
    CREATE TABLE files(
        path TEXT PRIMARY KEY,
        language TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        size INTEGER NOT NULL,
        mtime REAL NOT NULL,
        line_count INTEGER NOT NULL,
        module TEXT NOT NULL,
        imports TEXT NOT NULL,          -- JSON: local name -> dotted target
        module_globals TEXT NOT NULL,   -- JSON list
        error_lines TEXT NOT NULL,      -- JSON list
        indexed_at REAL NOT NULL
    );
    CREATE INDEX files_module ON files(module);
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
    CREATE TABLE refs(
        path TEXT NOT NULL,
        source TEXT NOT NULL,
        relation TEXT NOT NULL,
        target TEXT NOT NULL,
        line INTEGER NOT NULL,
        scope TEXT NOT NULL,
        tail TEXT NOT NULL,             -- last identifier of target: what re-resolution keys on
        head TEXT NOT NULL              -- first identifier of target
    );
    CREATE INDEX refs_path ON refs(path);
    CREATE INDEX refs_tail ON refs(tail);
    CREATE INDEX refs_head ON refs(head);
    CREATE TABLE edges(
        source TEXT NOT NULL,
        target TEXT NOT NULL,
        relation TEXT NOT NULL,
        confidence REAL NOT NULL,
        resolution TEXT NOT NULL,
        line INTEGER NOT NULL,
        path TEXT NOT NULL,             -- the source's file, so a file's edges go with it
        ref INTEGER NOT NULL            -- the refs row it was resolved from
    );
    CREATE INDEX edges_ref ON edges(ref);
    CREATE INDEX edges_source ON edges(source, relation);
    CREATE INDEX edges_target ON edges(target, relation);
    CREATE INDEX edges_path ON edges(path);
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
    """,
    # 2: a file-level lexical index (BM25 over whole files ranks files better than their best
    # entity alone). Existing rows are filled from what the entities table keeps; the next
    # re-index of a file writes its full text terms.
    """
    CREATE VIRTUAL TABLE files_fts USING fts5(
        path, body,
        content='', contentless_delete=1,
        tokenize="unicode61 tokenchars '_'"
    );
    CREATE TABLE files_fts_ids(rowid INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE);
    INSERT INTO files_fts_ids(path) SELECT path FROM files;
    INSERT INTO files_fts(rowid, path, body)
        SELECT i.rowid, replace(replace(i.path, '/', ' '), '.py', ''),
               (SELECT group_concat(e.qualname || ' ' || e.signature || ' ' || e.docstring, ' ')
                FROM entities e WHERE e.path = i.path)
        FROM files_fts_ids i;
    """,
    # 3: the repository's git history (nsccn/history.py): commits, the files and functions each
    # changed, and its message for BM25 against a query.
    """
    CREATE TABLE commits(
        rowid INTEGER PRIMARY KEY,
        sha TEXT NOT NULL UNIQUE,
        time INTEGER NOT NULL,
        message TEXT NOT NULL,
        is_fix INTEGER NOT NULL,
        n_files INTEGER NOT NULL
    );
    CREATE TABLE commit_changes(
        commit_id INTEGER NOT NULL,     -- commits.rowid
        path TEXT NOT NULL,
        name TEXT NOT NULL              -- '' for the file itself, else a changed function's name
    );
    CREATE INDEX commit_changes_path ON commit_changes(path, name);
    CREATE INDEX commit_changes_commit ON commit_changes(commit_id);
    CREATE VIRTUAL TABLE commits_fts USING fts5(
        message, content='', contentless_delete=1, tokenize="unicode61 tokenchars '_'"
    );
    """,
]


def migrate(conn: apsw.Connection) -> int:
    """Apply every migration the database lacks, each in its own transaction (all of them in one
    for a new database); returns the version."""
    with conn:  # a fresh database gets its whole schema in one transaction: no reader sees half of it
        conn.execute("CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT)")
        row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        version = int(row[0]) if row else 0
        if version == 0:
            for script in MIGRATIONS:
                conn.execute(script)
            version = len(MIGRATIONS)
            conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES('schema_version', ?)", (str(version),))
    if version > SCHEMA_VERSION:
        raise RuntimeError(
            f"index schema version {version} is newer than this nsccn ({SCHEMA_VERSION}); upgrade nsccn or delete the index"
        )
    while version < SCHEMA_VERSION:
        with conn:
            conn.execute(MIGRATIONS[version])
            version += 1
            conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES('schema_version', ?)", (str(version),))
    return version
