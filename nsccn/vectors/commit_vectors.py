"""The static model's vectors of the history's commit messages (table `commit_vectors`), and what they
say about a query: how like it the past commits that changed each candidate file read
(`history.semantic_fixes`). BugLocator's similar-past-fixes compares words (BM25); this compares
what the static model makes of them, so a report and a past fix that say the same thing in other
words still meet. A message costs what an entity's text does (~0.2 ms), 3,000 of them well under a
second; a query reads at most `history.MAX_COMMITS` vectors (float16) and does one product.
"""

from __future__ import annotations

import apsw

from nsccn.reading import history
from nsccn.store import Store
from nsccn.store.schema import COMMIT_VECTORS_SCHEMA
from nsccn.vectors.static_file import QUERY_READING, STATIC_MODEL


def vectors_key(model_id: str) -> str:
    """What a commit vector's `model_id` column holds: the model and how it reads a query (a message
    is read as a query is), so vectors of another model or another reading are made again."""
    return f"{model_id}+{QUERY_READING}"


SHIPPED_KEY = vectors_key(STATIC_MODEL)

EMBED_CHUNK = 128  # messages a call: a long history is never one large matrix of token rows


def embed_commits(store: Store, model=None) -> int:
    """Vectors for the stored commits that have none made by `model` (a `StaticModel`; default the
    shipped one, whatever model embeds the entities: a message costs microseconds); those of
    commits no longer stored, or of another model, go. Returns how many were embedded (0 without
    the model file: the semantic history features are then missing)."""
    from nsccn.vectors.static_embed import ModelUnavailable, load_static_model

    if model is None:
        try:
            model = load_static_model()
        except ModelUnavailable:
            return 0
    import numpy as np  # (here: `nsccn index` with nothing to do asks `commits_embedded` only)

    c = store.conn
    with c:
        c.execute(COMMIT_VECTORS_SCHEMA)  # an index made before the table
        if not history.has_history(store):
            c.execute("DELETE FROM commit_vectors")
            return 0
        key = vectors_key(model.model_id)
        c.execute("DELETE FROM commit_vectors WHERE model_id != ? OR sha NOT IN (SELECT sha FROM commits)", (key,))
        todo = c.execute("SELECT sha, message FROM commits WHERE sha NOT IN (SELECT sha FROM commit_vectors)").fetchall()
        for i in range(0, len(todo), EMBED_CHUNK):
            chunk = todo[i : i + EMBED_CHUNK]
            vectors = model.embed([message for _, message in chunk], query=True).astype(np.float16)
            c.executemany("INSERT INTO commit_vectors(sha, model_id, vector) VALUES(?,?,?)",
                          [(sha, key, v.tobytes()) for (sha, _), v in zip(chunk, vectors)])
    return len(todo)


def commits_embedded(store: Store) -> bool:
    """Whether every stored commit has the shipped static model's vector (or there is no history)."""
    if not history.has_history(store):
        return True
    try:
        return store.conn.execute(
            "SELECT NOT EXISTS (SELECT 1 FROM commits WHERE sha NOT IN "
            "(SELECT sha FROM commit_vectors WHERE model_id = ?))", (SHIPPED_KEY,)).fetchone()[0] == 1
    except apsw.SQLError:  # an index from before the table, opened read-only
        return False


def commit_vector_count(store: Store) -> int:
    try:
        return store.conn.execute("SELECT count(*) FROM commit_vectors WHERE model_id=?", (SHIPPED_KEY,)).fetchone()[0]
    except apsw.SQLError:  # an index from before the table, opened read-only
        return 0


# The commits' vectors as arrays, per database file, while no commit vector is added or removed: a
# server answers many queries from one read (sympy: ~5 ms of reading 3,000 rows saved a query).
_MATRICES: dict[str, tuple[tuple, tuple]] = {}
_MATRICES_KEPT = 2


def _commit_matrix(store: Store):
    """(rowids, times, n_files, float32 vectors), newest first, of the commits with the shipped
    static model's vectors; None without any."""
    import numpy as np

    c = store.conn
    key = tuple(c.execute("SELECT count(*), max(v.rowid), max(cm.rowid) FROM commit_vectors v "
                          "JOIN commits cm ON cm.sha = v.sha WHERE v.model_id = ?", (SHIPPED_KEY,)).fetchone())
    if not key[0]:
        return None
    path = str(getattr(store, "path", id(store)))
    cached = _MATRICES.get(path)
    if cached is not None and cached[0] == key:
        return cached[1]
    rows = c.execute(
        "SELECT cm.rowid, cm.time, cm.n_files, v.vector FROM commits cm JOIN commit_vectors v ON v.sha = cm.sha "
        "WHERE v.model_id = ? ORDER BY cm.time DESC, cm.rowid DESC", (SHIPPED_KEY,)).fetchall()
    arrays = (np.array([r[0] for r in rows], dtype=np.int64), np.array([r[1] for r in rows], dtype=np.int64),
              np.array([r[2] for r in rows], dtype=np.int64),
              np.frombuffer(b"".join(r[3] for r in rows), dtype=np.float16).reshape(len(rows), -1).astype(np.float32))
    while len(_MATRICES) >= _MATRICES_KEPT:
        _MATRICES.pop(next(iter(_MATRICES)))
    _MATRICES[path] = (key, arrays)
    return arrays


def semantic_evidence(store: Store, query: str, paths: list[str], before: int | None = None
                      ) -> dict[str, tuple[float, float, float]] | None:
    """`history.semantic_fixes` of the candidate files `paths` for `query`, from the newest
    `history.MAX_COMMITS` commits older than `before` that have the static model's vectors; None
    when the index has none (the features are then missing, never zero)."""
    if not paths:
        return None
    import numpy as np

    from nsccn.vectors.static_embed import ModelUnavailable, load_static_model

    try:
        arrays = _commit_matrix(store)
        model = load_static_model()
    except ModelUnavailable:  # said where the entities' vectors are refused: missing here too
        return None
    except apsw.SQLError:  # an index from before the table, opened read-only
        return None
    if arrays is None:
        return None
    ids, times, n_files, matrix = arrays
    keep = np.flatnonzero(times < ((1 << 62) if before is None else before))[: history.MAX_COMMITS]
    ids, n_files, matrix = ids[keep], n_files[keep], matrix[keep]
    if not len(ids):
        return None
    sims = matrix @ model.embed([query], query=True)[0]
    k = min(history.SIMILAR_COMMITS, len(sims))
    top = ids[np.argpartition(-sims, k - 1)[:k]].tolist()
    return history.semantic_fixes(store, dict(zip(ids.tolist(), sims.tolist())), dict(zip(ids.tolist(), n_files.tolist())),
                                  paths, top)
