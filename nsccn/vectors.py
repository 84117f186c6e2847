"""Entity vectors in SQLite through sqlite-vec: exact and binary-quantized k-NN, and the cache
that makes sure an unchanged text is never embedded twice.

Tables (all prefixed ``vec_``; the database holds the rest of the index too):

* ``vec_meta``   key/value: the model id and dimension the vectors were made with.
* ``vec_ids``    integer rowid <-> entity id, plus the hash of the text that was embedded.
* ``vec_index``  vec0 virtual table keyed by that rowid: ``embedding float[dim]``.
* ``vec_bits``   the same rowid -> binary-quantized vector (one bit per component: is it above
                 the corpus mean), scanned by sqlite-vec's ``vec_distance_hamming`` for the
                 coarse pass of large indexes.
* ``vec_cache``  (model id, dim, text hash) -> float32 vector. Outlives the entity: a deleted
                 entity that comes back, or one renamed with the same text, is served from here.

Vectors are stored L2-normalized; distances returned are cosine distances (1 - cos).

Why the bits live in a plain table rather than a ``bit[dim]`` column of vec0: a vec0 KNN query
costs ~0.1 ms per requested neighbour on top of its scan (k=100: 10 ms, k=1000: 146 ms over
100k vectors), while ``ORDER BY vec_distance_hamming(...) LIMIT n`` over a plain table costs
~10 ms whatever n. The coarse pass needs ~1000 candidates for a good recall at 100k vectors.
Why centered: embeddings are anisotropic (a quarter of MiniLM's components have a clearly
non-zero mean), so plain sign bits are unbalanced; thresholding at the mean instead raised
recall@10 at 100k from 0.91 to 0.98 with 1000 candidates (benchmarks/vectors_bench.py).
The caller owns the connection and its transactions; every write method here runs in a
savepoint, so it is atomic on its own and nests inside the caller's transaction.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence

import apsw
import numpy as np
import sqlite_vec

# sqlite-vec refuses k above this in a KNN query.
MAX_K = 4096
# Above this many vectors, knn(quantized=None) takes the binary coarse pass.
DEFAULT_QUANTIZE_THRESHOLD = 50_000
# Coarse candidates before the float re-rank: k * oversample, at least MIN_CANDIDATES.
DEFAULT_OVERSAMPLE = 10
DEFAULT_MIN_CANDIDATES = 1000
# The bit threshold (the mean vector) is computed once this many vectors are stored, and again
# each time the store has grown this factor since; bits written before use the old one.
CENTER_FIRST_AT = 1000
CENTER_GROWTH = 8
# SQLite's default limit on host parameters is 32766; stay well below it.
_CHUNK = 900


def load_sqlite_vec(conn: apsw.Connection) -> None:
    """Load the sqlite-vec extension into `conn`, once."""
    try:
        conn.execute("SELECT vec_version()").fetchall()
        return
    except apsw.SQLError:
        pass
    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    conn.enable_load_extension(False)


def _chunks(seq: Sequence, n: int = _CHUNK) -> Iterable[Sequence]:
    for i in range(0, len(seq), n):
        yield seq[i : i + n]


def _normalize(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float32)
    return (v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-12)).astype(np.float32, copy=False)


class VectorStore:
    """Vectors of one embedding model over an `apsw.Connection` owned by the caller.

    Opening one never writes, so read-only connections can search; `ensure_model` creates
    the tables.
    """

    def __init__(
        self,
        conn: apsw.Connection,
        *,
        quantize_threshold: int = DEFAULT_QUANTIZE_THRESHOLD,
        oversample: int = DEFAULT_OVERSAMPLE,
    ) -> None:
        self.conn = conn
        self.quantize_threshold = quantize_threshold
        self.oversample = oversample
        load_sqlite_vec(conn)
        self.model_id: str | None = None
        self.dim: int | None = None
        self._load_meta()

    # ---------------------------------------------------------------------------- model

    def _load_meta(self) -> None:
        if not self._table_exists("vec_meta"):
            return
        meta = dict(self.conn.execute("SELECT key, value FROM vec_meta").fetchall())
        if "model_id" in meta and "dim" in meta:
            self.model_id, self.dim = str(meta["model_id"]), int(meta["dim"])

    def _table_exists(self, name: str) -> bool:
        row = self.conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone()
        return row is not None

    @property
    def has_bits(self) -> bool:
        """sqlite-vec's bit vectors need a dimension divisible by 8."""
        return self.dim is not None and self.dim % 8 == 0

    def ensure_model(self, model_id: str, dim: int) -> bool:
        """Make this store hold vectors of `model_id` at `dim`, creating the tables if needed.

        Vectors of two models never share an index: if another model (or dimension) made
        the stored vectors, they are all dropped and True is returned, meaning every entity
        must be embedded again (the cache may still serve some: see `fill_from_cache`).
        Returns False when the stored model already matches, or on a fresh store.
        """
        if dim <= 0:
            raise ValueError(f"dim must be positive, not {dim}")
        self._load_meta()
        if self.model_id == model_id and self.dim == dim and self._table_exists("vec_index"):
            return False
        changed = self.model_id is not None
        with self.conn:
            self.conn.execute(
                """
                CREATE TABLE IF NOT EXISTS vec_meta (key TEXT PRIMARY KEY, value) WITHOUT ROWID;
                CREATE TABLE IF NOT EXISTS vec_ids (
                    rowid INTEGER PRIMARY KEY,
                    entity_id TEXT NOT NULL UNIQUE,
                    text_hash TEXT NOT NULL
                );
                CREATE TABLE IF NOT EXISTS vec_cache (
                    model_id TEXT NOT NULL,
                    dim INTEGER NOT NULL,
                    text_hash TEXT NOT NULL,
                    vector BLOB NOT NULL,
                    used INTEGER NOT NULL,  -- unix time of the last store or hit, for pruning
                    PRIMARY KEY (model_id, dim, text_hash)
                ) WITHOUT ROWID;
                DROP TABLE IF EXISTS vec_index;
                DELETE FROM vec_ids;
                """
            )
            # distance_metric=l2 rather than cosine: the vectors are unit length, so the
            # ranking is the same (|a-b|^2 = 2 - 2cos), and sqlite-vec's L2 is ~15% faster.
            bits = f", embedding_bits bit[{dim}]" if dim % 8 == 0 else ""
            self.conn.execute(
                f"CREATE VIRTUAL TABLE vec_index USING vec0(embedding float[{dim}] distance_metric=l2{bits})"
            )
            self.conn.executemany(
                "INSERT OR REPLACE INTO vec_meta (key, value) VALUES (?, ?)",
                [("model_id", model_id), ("dim", dim)],
            )
        self.model_id, self.dim = model_id, dim
        return changed

    def _require_model(self) -> tuple[str, int]:
        if self.model_id is None or self.dim is None:
            raise RuntimeError("no model recorded: call ensure_model(model_id, dim) first")
        return self.model_id, self.dim

    # ---------------------------------------------------------------------------- writes

    def upsert(self, items: Iterable[tuple[str, str, np.ndarray]]) -> int:
        """Store (entity_id, text_hash, vector) triples, replacing what an entity had.

        Each vector also goes into the cache under its text hash. Returns the count stored.
        """
        model_id, dim = self._require_model()
        items = list(items)
        if not items:
            return 0
        vecs = _normalize(np.stack([np.asarray(v, dtype=np.float32).reshape(-1) for _, _, v in items]))
        if vecs.shape[1] != dim:
            raise ValueError(f"vectors have {vecs.shape[1]} dimensions, the store holds {dim}")
        now = int(time.time())
        bits_col = ", embedding_bits" if self.has_bits else ""
        bits_val = ", vec_quantize_binary(?)" if self.has_bits else ""
        with self.conn:
            existing = self._rowids([eid for eid, _, _ in items])
            new_rows, vec_rows, cache_rows = [], [], []
            for (eid, th, _), vec in zip(items, vecs):
                blob = vec.tobytes()
                cache_rows.append((model_id, dim, th, blob, now))
                rowid = existing.get(eid)
                if rowid is None:
                    new_rows.append((eid, th, blob))
                else:
                    vec_rows.append((rowid, th, blob))
            if vec_rows:
                self.conn.executemany(
                    "UPDATE vec_ids SET text_hash = ? WHERE rowid = ?", [(th, r) for r, th, _ in vec_rows]
                )
                # vec0 has no upsert; delete + insert keeps the rowid.
                self.conn.executemany("DELETE FROM vec_index WHERE rowid = ?", [(r,) for r, _, _ in vec_rows])
            for eid, th, blob in new_rows:
                self.conn.execute("INSERT INTO vec_ids (entity_id, text_hash) VALUES (?, ?)", (eid, th))
                vec_rows.append((self.conn.last_insert_rowid(), th, blob))
            params = [(r, b, b) if self.has_bits else (r, b) for r, _, b in vec_rows]
            self.conn.executemany(
                f"INSERT INTO vec_index (rowid, embedding{bits_col}) VALUES (?, ?{bits_val})", params
            )
            self.conn.executemany(
                "INSERT OR REPLACE INTO vec_cache (model_id, dim, text_hash, vector, used) VALUES (?, ?, ?, ?, ?)",
                cache_rows,
            )
        return len(items)

    def delete(self, entity_ids: Iterable[str]) -> int:
        """Remove the vectors of these entities (their cache entries stay). Returns how many."""
        if self.model_id is None:
            return 0
        with self.conn:
            rowids = list(self._rowids(list(entity_ids)).values())
            for chunk in _chunks(rowids):
                marks = ",".join("?" * len(chunk))
                self.conn.execute(f"DELETE FROM vec_ids WHERE rowid IN ({marks})", chunk)
            self.conn.executemany("DELETE FROM vec_index WHERE rowid = ?", [(r,) for r in rowids])
        return len(rowids)

    def clear(self) -> None:
        """Drop every entity vector (the cache stays)."""
        if self.model_id is None:
            return
        with self.conn:
            self.conn.execute("DELETE FROM vec_ids; DELETE FROM vec_index;")

    def prune_cache(self, keep_unreferenced: int = 100_000) -> int:
        """Bound the cache: keep every entry an entity of the current model still uses, and
        the `keep_unreferenced` most recently used others (old versions of edited functions,
        deleted entities, other models). Returns the number of entries removed."""
        if not self._table_exists("vec_cache"):
            return 0
        with self.conn:
            self.conn.execute(
                """
                DELETE FROM vec_cache WHERE (model_id, dim, text_hash) IN (
                    SELECT c.model_id, c.dim, c.text_hash FROM vec_cache c
                    WHERE NOT (c.model_id = ?1 AND c.dim = ?2
                               AND c.text_hash IN (SELECT text_hash FROM vec_ids))
                    ORDER BY c.used DESC LIMIT -1 OFFSET ?3
                )
                """,
                (self.model_id, self.dim, keep_unreferenced),
            )
            return self.conn.changes()

    # ---------------------------------------------------------------------------- reads

    def _rowids(self, entity_ids: Sequence[str]) -> dict[str, int]:
        out: dict[str, int] = {}
        for chunk in _chunks(list(entity_ids)):
            marks = ",".join("?" * len(chunk))
            out.update(
                self.conn.execute(
                    f"SELECT entity_id, rowid FROM vec_ids WHERE entity_id IN ({marks})", chunk
                ).fetchall()
            )
        return out

    def count(self) -> int:
        """Entities with a vector."""
        if self.model_id is None:
            return 0
        return int(self.conn.execute("SELECT count(*) FROM vec_ids").fetchone()[0])

    def hashes(self, entity_ids: Sequence[str] | None = None) -> dict[str, str]:
        """entity_id -> hash of the text its vector was made from (all entities if None)."""
        if self.model_id is None:
            return {}
        if entity_ids is None:
            return dict(self.conn.execute("SELECT entity_id, text_hash FROM vec_ids").fetchall())
        out: dict[str, str] = {}
        for chunk in _chunks(list(entity_ids)):
            marks = ",".join("?" * len(chunk))
            out.update(
                self.conn.execute(
                    f"SELECT entity_id, text_hash FROM vec_ids WHERE entity_id IN ({marks})", chunk
                ).fetchall()
            )
        return out

    def cached(self, text_hashes: Iterable[str]) -> dict[str, np.ndarray]:
        """text_hash -> vector, for the hashes the cache holds for the current model."""
        if self.model_id is None or not self._table_exists("vec_cache"):
            return {}
        out: dict[str, np.ndarray] = {}
        for chunk in _chunks(list(dict.fromkeys(text_hashes))):
            marks = ",".join("?" * len(chunk))
            rows = self.conn.execute(
                f"SELECT text_hash, vector FROM vec_cache WHERE model_id = ? AND dim = ? AND text_hash IN ({marks})",
                (self.model_id, self.dim, *chunk),
            ).fetchall()
            out.update((th, np.frombuffer(blob, dtype=np.float32)) for th, blob in rows)
        return out

    def stale(self, wanted: Mapping[str, str]) -> list[str]:
        """Ids in `wanted` (entity_id -> text hash) whose vector is absent or made from
        another text."""
        have = self.hashes(list(wanted))
        return [eid for eid, th in wanted.items() if have.get(eid) != th]

    def missing(self, wanted: Mapping[str, str]) -> list[str]:
        """Ids in `wanted` that need the model: stale, and their text is not in the cache."""
        stale = self.stale(wanted)
        hit = self.cached(wanted[eid] for eid in stale)
        return [eid for eid in stale if wanted[eid] not in hit]

    def fill_from_cache(self, wanted: Mapping[str, str]) -> list[str]:
        """Bring `wanted` (entity_id -> text hash) up to date from the cache; return the ids
        still needing the model. The writer's loop: ids = fill_from_cache(m); embed them;
        upsert."""
        stale = self.stale(wanted)
        hit = self.cached(wanted[eid] for eid in stale)
        self.upsert((eid, wanted[eid], hit[wanted[eid]]) for eid in stale if wanted[eid] in hit)
        return [eid for eid in stale if wanted[eid] not in hit]

    def vectors(self, entity_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """entity_id -> stored vector (e.g. for MMR diversity over search hits)."""
        if self.model_id is None:
            return {}
        out: dict[str, np.ndarray] = {}
        for chunk in _chunks(list(entity_ids)):
            marks = ",".join("?" * len(chunk))
            rows = self.conn.execute(
                f"""SELECT i.entity_id, c.vector FROM vec_ids i
                    JOIN vec_cache c ON c.model_id = ? AND c.dim = ? AND c.text_hash = i.text_hash
                    WHERE i.entity_id IN ({marks})""",
                (self.model_id, self.dim, *chunk),
            ).fetchall()
            out.update((eid, np.frombuffer(blob, dtype=np.float32)) for eid, blob in rows)
        return out

    # ---------------------------------------------------------------------------- search

    def knn(self, query: np.ndarray, k: int = 10, quantized: bool | None = None) -> list[tuple[str, float]]:
        """The `k` nearest entities to `query`: [(entity_id, cosine distance)], nearest first.

        `quantized`: False searches the float vectors exactly; True takes a coarse pass over
        the sign bits (hamming distance, k * oversample candidates) and re-ranks those by the
        float vectors; None picks quantized once the store holds `quantize_threshold` vectors.
        k is capped at 4096 (sqlite-vec's limit).
        """
        _, dim = self._require_model()
        q = _normalize(np.asarray(query, dtype=np.float32).reshape(-1))
        if q.shape[0] != dim:
            raise ValueError(f"query has {q.shape[0]} dimensions, the store holds {dim}")
        k = min(int(k), MAX_K)
        if k <= 0:
            return []
        if quantized is None:
            quantized = self.count() >= self.quantize_threshold
        if quantized and self.has_bits:
            return self._knn_quantized(q, k)
        return self._knn_exact(q, k)

    def _knn_exact(self, q: np.ndarray, k: int) -> list[tuple[str, float]]:
        rows = self.conn.execute(
            """
            WITH hits AS (SELECT rowid, distance FROM vec_index WHERE embedding MATCH ? AND k = ?)
            SELECT i.entity_id, hits.distance FROM hits JOIN vec_ids i ON i.rowid = hits.rowid
            ORDER BY hits.distance
            """,
            (q.tobytes(), k),
        ).fetchall()
        # L2 between unit vectors -> cosine distance: |a-b|^2 / 2 = 1 - cos.
        return [(eid, float(d) * float(d) / 2.0) for eid, d in rows]

    def _knn_quantized(self, q: np.ndarray, k: int) -> list[tuple[str, float]]:
        n_cand = min(max(k * self.oversample, k), MAX_K)
        blob = q.tobytes()
        # The re-rank reads the float vectors from vec_cache (a plain B-tree, ~100x faster
        # per point lookup than reading vec0's chunked storage by rowid).
        rows = self.conn.execute(
            """
            WITH cand AS (
                SELECT rowid FROM vec_index WHERE embedding_bits MATCH vec_quantize_binary(?) AND k = ?
            )
            SELECT i.entity_id, c.vector FROM cand
            JOIN vec_ids i ON i.rowid = cand.rowid
            LEFT JOIN vec_cache c ON c.model_id = ? AND c.dim = ? AND c.text_hash = i.text_hash
            """,
            (blob, n_cand, self.model_id, self.dim),
        ).fetchall()
        if not rows:
            return []
        ids = [eid for eid, _ in rows]
        lost = [eid for eid, v in rows if v is None]
        got = dict(rows)
        if lost:  # someone pruned the cache by hand: read those from vec_index
            got.update(self._index_vectors(lost))
        mat = np.stack([np.frombuffer(got[eid], dtype=np.float32) for eid in ids])
        dist = 1.0 - mat @ q
        order = np.argsort(dist, kind="stable")[:k]
        return [(ids[i], float(dist[i])) for i in order]

    def _index_vectors(self, entity_ids: list[str]) -> dict[str, bytes]:
        out = {}
        for eid, rowid in self._rowids(entity_ids).items():
            out[eid] = self.conn.execute("SELECT embedding FROM vec_index WHERE rowid = ?", (rowid,)).fetchone()[0]
        return out
