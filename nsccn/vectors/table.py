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
recall@10 at 100k from 0.91 to 0.98 with 1000 candidates (measured offline on 100k mixtures
of MiniLM embeddings of stdlib code; benchmarks/vectors_bench.py measures what shipped).

The caller owns the connection and its transactions; every write method here runs in a
savepoint, so it is atomic on its own and nests inside the caller's transaction.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping, Sequence

import apsw
import numpy as np
import sqlite_vec

from nsccn.store.schema import VECTOR_TABLES, vec_index_sql

# sqlite-vec refuses k above this in a KNN query.
MAX_K = 4096
# Above this many vectors, knn(quantized=None) takes the binary coarse pass.
DEFAULT_QUANTIZE_THRESHOLD = 50_000
# Coarse candidates before the float re-rank: k * oversample, at least MIN_CANDIDATES.
DEFAULT_OVERSAMPLE = 10
DEFAULT_MIN_CANDIDATES = 1000
# The bit threshold (the mean vector) is computed once this many vectors are stored, and again
# each time the store has grown by this factor since (every stored bit vector is rewritten
# then, so the cost stays amortized O(1) per vector).
CENTER_FIRST_AT = 1000
CENTER_GROWTH = 8
# The layout of the vec_ tables; a store written with another one is rebuilt by ensure_model.
SCHEMA_VERSION = 1
# SQLite's default limit on host parameters is 32766; stay well below it.
_CHUNK = 900
# Below the quantization threshold, exact search runs over the float vectors held in memory (one
# matrix product: ~2 ms for 30k vectors, where vec0's scan of its chunks takes ~30 ms). The matrix
# is cached per database file and brought up to date when the vectors' generation (bumped by every
# write) moves: by reading only the rows added since, when no write since replaced or deleted one
# (a bulk embedding only adds: a query then never re-reads the whole table behind it), else whole.
_MATRICES: dict[str, tuple[tuple, list[str], np.ndarray, int]] = {}  # file -> key, ids, matrix, last rowid
_MATRICES_LOCK = threading.Lock()
_MATRICES_KEPT = 2


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


def nearest(ids: list[str], sims: np.ndarray, k: int) -> list[tuple[str, float]]:
    """The `k` ids of highest cosine (`sims`, one per id): [(id, 1 - cosine)], nearest first."""
    if not ids:
        return []
    k = min(k, len(ids))
    top = np.argpartition(-sims, k - 1)[:k]
    top = top[np.argsort(-sims[top], kind="stable")]
    return [(ids[i], float(1.0 - sims[i])) for i in top]


def _chunks(seq: Sequence, n: int = _CHUNK) -> Iterable[Sequence]:
    for i in range(0, len(seq), n):
        yield seq[i : i + n]


def _marks(n: int) -> str:
    return ",".join("?" * n)


def _normalize(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float32)
    return (v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-12)).astype(np.float32, copy=False)


def quantize(vecs: np.ndarray, center: np.ndarray | None = None) -> np.ndarray:
    """One bit per component, set when it is above `center` (0 when None); packed
    least-significant bit first, the layout of sqlite-vec's ``bit[]`` vectors."""
    x = vecs if center is None else vecs - center
    return np.packbits(x > 0, axis=-1, bitorder="little")


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
        min_candidates: int = DEFAULT_MIN_CANDIDATES,
    ) -> None:
        self.conn = conn
        self.quantize_threshold = quantize_threshold
        self.oversample = oversample
        self.min_candidates = min_candidates
        load_sqlite_vec(conn)
        self.model_id: str | None = None
        self.dim: int | None = None
        self._load_meta()

    # ---------------------------------------------------------------------------- model

    def _meta(self) -> dict[str, object]:
        if not self._table_exists("vec_meta"):
            return {}
        return dict(self.conn.execute("SELECT key, value FROM vec_meta").fetchall())

    def _load_meta(self) -> None:
        meta = self._meta()
        if "model_id" in meta and "dim" in meta:
            self.model_id, self.dim = str(meta["model_id"]), int(meta["dim"])  # type: ignore[arg-type]
        else:
            self.model_id, self.dim = None, None

    def _table_exists(self, name: str) -> bool:
        row = self.conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone()
        return row is not None

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
        meta = self._meta()
        if (
            self.model_id == model_id
            and self.dim == dim
            and meta.get("schema") == SCHEMA_VERSION
            and self._table_exists("vec_index")
        ):
            return False
        changed = self.model_id is not None
        with self.conn:
            if meta.get("schema") != SCHEMA_VERSION:
                # Laid out by another version (or none yet): start over, cache included.
                self.conn.execute(
                    "DROP TABLE IF EXISTS vec_index; DROP TABLE IF EXISTS vec_ids;"
                    "DROP TABLE IF EXISTS vec_bits; DROP TABLE IF EXISTS vec_cache;"
                )
            self.conn.execute(
                VECTOR_TABLES + """
                DROP TABLE IF EXISTS vec_index;
                DELETE FROM vec_ids;
                DELETE FROM vec_bits;
                DELETE FROM vec_meta WHERE key IN ('bit_center', 'bit_center_n');
                """
            )
            self.conn.execute(vec_index_sql(dim))
            self.conn.executemany(
                "INSERT OR REPLACE INTO vec_meta (key, value) VALUES (?, ?)",
                [("model_id", model_id), ("dim", dim), ("schema", SCHEMA_VERSION)],
            )
            self._bump(rewrote=True)
        self.model_id, self.dim = model_id, dim
        return changed

    def _require_model(self) -> tuple[str, int]:
        if self.model_id is None or self.dim is None:
            raise RuntimeError("no model recorded: call ensure_model(model_id, dim) first")
        return self.model_id, self.dim

    def _center(self) -> tuple[np.ndarray | None, int]:
        """The bit threshold and the vector count it was computed at."""
        rows = dict(
            self.conn.execute(
                "SELECT key, value FROM vec_meta WHERE key IN ('bit_center', 'bit_center_n')"
            ).fetchall()
        )
        if "bit_center" not in rows:
            return None, 0
        return np.frombuffer(rows["bit_center"], dtype=np.float32), int(rows["bit_center_n"])

    # ---------------------------------------------------------------------------- writes

    def upsert(self, items: Iterable[tuple[str, str, np.ndarray]]) -> int:
        """Store (entity_id, text_hash, vector) triples, replacing what an entity had.

        Each vector also goes into the cache under its text hash. Returns the count stored.
        May re-center the bit vectors (see CENTER_FIRST_AT), which rewrites all of them.
        """
        model_id, dim = self._require_model()
        items = list({eid: (eid, th, v) for eid, th, v in items}.values())  # last one wins
        if not items:
            return 0
        vecs = _normalize(np.stack([np.asarray(v, dtype=np.float32).reshape(-1) for _, _, v in items]))
        if vecs.shape[1] != dim:
            raise ValueError(f"vectors have {vecs.shape[1]} dimensions, the store holds {dim}")
        now = int(time.time())
        with self.conn:
            center, centered_at = self._center()
            bits = quantize(vecs, center)
            # Cache first: its row id is what vec_ids points at. ON CONFLICT keeps the id of
            # an existing row (INSERT OR REPLACE would delete it and make a new one).
            cache_ids = [
                self.conn.execute(
                    """INSERT INTO vec_cache (model_id, dim, text_hash, vector, used) VALUES (?, ?, ?, ?, ?)
                       ON CONFLICT (model_id, dim, text_hash)
                       DO UPDATE SET vector = excluded.vector, used = excluded.used
                       RETURNING id""",
                    (model_id, dim, th, vec.tobytes(), now),
                ).fetchone()[0]
                for (_, th, _), vec in zip(items, vecs)
            ]
            existing = self._rowids([eid for eid, _, _ in items])
            rows: list[tuple[int, bytes, bytes]] = []  # rowid, vector, bits
            replaced: list[tuple[str, int, int]] = []
            rewrote = False
            for (eid, th, _), cid, vec, b in zip(items, cache_ids, vecs, bits):
                rowid = existing.get(eid)
                if rowid is None:
                    self.conn.execute(
                        "INSERT INTO vec_ids (entity_id, text_hash, cache_id) VALUES (?, ?, ?)", (eid, th, cid)
                    )
                    rowid = self.conn.last_insert_rowid()
                else:
                    replaced.append((th, cid, rowid))
                rows.append((rowid, vec.tobytes(), b.tobytes()))
            if replaced:
                self.conn.executemany("UPDATE vec_ids SET text_hash = ?, cache_id = ? WHERE rowid = ?", replaced)
                # vec0 has no upsert; delete + insert keeps the rowid.
                self.conn.executemany("DELETE FROM vec_index WHERE rowid = ?", [(r,) for _, _, r in replaced])
                rewrote = True
            self.conn.executemany(
                "INSERT INTO vec_index (rowid, embedding) VALUES (?, ?)", [(r, v) for r, v, _ in rows]
            )
            self.conn.executemany(
                "INSERT OR REPLACE INTO vec_bits (rowid, bits) VALUES (?, ?)", [(r, b) for r, _, b in rows]
            )
            n = self.count()
            if n >= CENTER_FIRST_AT and (center is None or n >= centered_at * CENTER_GROWTH):
                self.recenter()  # the bit vectors only: the float vectors stay
            self._bump(rewrote=rewrote)
        return len(items)

    def recenter(self) -> None:
        """Set the bit threshold to the mean of the stored vectors and rewrite every bit vector."""
        model_id, dim = self._require_model()
        join = "FROM vec_ids i JOIN vec_cache c ON c.id = i.cache_id"
        with self.conn:
            total, n = np.zeros(dim, dtype=np.float64), 0
            for (blob,) in self.conn.execute(f"SELECT c.vector {join}"):
                total += np.frombuffer(blob, dtype=np.float32)
                n += 1
            if n == 0:
                return
            center = (total / n).astype(np.float32)
            self.conn.executemany(
                "INSERT OR REPLACE INTO vec_meta (key, value) VALUES (?, ?)",
                [("bit_center", center.tobytes()), ("bit_center_n", n)],
            )
            last = -1  # rewrite the bits in rowid-ordered slices, not all vectors in memory at once
            while True:
                rows = self.conn.execute(
                    f"SELECT i.rowid, c.vector {join} WHERE i.rowid > ? ORDER BY i.rowid LIMIT 10000", (last,)
                ).fetchall()
                if not rows:
                    break
                last = rows[-1][0]
                bits = quantize(np.stack([np.frombuffer(blob, dtype=np.float32) for _, blob in rows]), center)
                self.conn.executemany(
                    "UPDATE vec_bits SET bits = ? WHERE rowid = ?",
                    [(b.tobytes(), r) for (r, _), b in zip(rows, bits)],
                )

    def delete(self, entity_ids: Iterable[str]) -> int:
        """Remove the vectors of these entities (their cache entries stay). Returns how many."""
        if self.model_id is None:
            return 0
        with self.conn:
            rowids = list(self._rowids(list(entity_ids)).values())
            for chunk in _chunks(rowids):
                self.conn.execute(f"DELETE FROM vec_ids WHERE rowid IN ({_marks(len(chunk))})", chunk)
                self.conn.execute(f"DELETE FROM vec_bits WHERE rowid IN ({_marks(len(chunk))})", chunk)
            self.conn.executemany("DELETE FROM vec_index WHERE rowid = ?", [(r,) for r in rowids])
            if rowids:
                self._bump(rewrote=True)
        return len(rowids)

    def clear(self) -> None:
        """Drop every entity vector (the cache stays)."""
        if self.model_id is None:
            return
        with self.conn:
            self.conn.execute("DELETE FROM vec_ids; DELETE FROM vec_bits; DELETE FROM vec_index;")
            self._bump(rewrote=True)

    def _bump(self, rewrote: bool) -> None:
        """Count a change of the stored vectors: in-memory copies (`_matrix`) are brought up to
        date. `rewrote`: a vector was replaced or deleted (not only added): `rewritten` says at
        which generation, and a copy older than it is read again whole."""
        self.conn.execute(
            "INSERT INTO vec_meta (key, value) VALUES ('generation', 1) "
            "ON CONFLICT (key) DO UPDATE SET value = value + 1"
        )
        self.conn.execute(
            f"INSERT {'OR REPLACE' if rewrote else 'OR IGNORE'} INTO vec_meta (key, value) "
            "SELECT 'rewritten', value FROM vec_meta WHERE key = 'generation'"
        )

    def prune_cache(self, keep_unreferenced: int = 100_000) -> int:
        """Bound the cache: keep every entry an entity of the current model still uses, and
        the `keep_unreferenced` most recently used others (old versions of edited functions,
        deleted entities, other models). Returns the number of entries removed."""
        if not self._table_exists("vec_cache"):
            return 0
        with self.conn:
            self.conn.execute(
                """
                DELETE FROM vec_cache WHERE id IN (
                    SELECT c.id FROM vec_cache c
                    WHERE c.id NOT IN (SELECT cache_id FROM vec_ids)
                    ORDER BY c.used DESC LIMIT -1 OFFSET ?
                )
                """,
                (keep_unreferenced,),
            )
            return self.conn.changes()

    # ---------------------------------------------------------------------------- reads

    def _rowids(self, entity_ids: Sequence[str]) -> dict[str, int]:
        out: dict[str, int] = {}
        for chunk in _chunks(list(entity_ids)):
            out.update(
                self.conn.execute(
                    f"SELECT entity_id, rowid FROM vec_ids WHERE entity_id IN ({_marks(len(chunk))})", chunk
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
            out.update(
                self.conn.execute(
                    f"SELECT entity_id, text_hash FROM vec_ids WHERE entity_id IN ({_marks(len(chunk))})", chunk
                ).fetchall()
            )
        return out

    def cached(self, text_hashes: Iterable[str]) -> dict[str, np.ndarray]:
        """text_hash -> vector, for the hashes the cache holds for the current model."""
        if self.model_id is None or not self._table_exists("vec_cache"):
            return {}
        out: dict[str, np.ndarray] = {}
        for chunk in _chunks(list(dict.fromkeys(text_hashes))):
            rows = self.conn.execute(
                f"""SELECT text_hash, vector FROM vec_cache
                    WHERE model_id = ? AND dim = ? AND text_hash IN ({_marks(len(chunk))})""",
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
            rows = self.conn.execute(
                f"""SELECT i.entity_id, c.vector FROM vec_ids i JOIN vec_cache c ON c.id = i.cache_id
                    WHERE i.entity_id IN ({_marks(len(chunk))})""",
                chunk,
            ).fetchall()
            out.update((eid, np.frombuffer(blob, dtype=np.float32)) for eid, blob in rows)
        return out

    # ---------------------------------------------------------------------------- search

    def knn(self, query: np.ndarray, k: int = 10, quantized: bool | None = None) -> list[tuple[str, float]]:
        """The `k` nearest entities to `query`: [(entity_id, cosine distance)], nearest first.

        `quantized`: False searches the float vectors exactly (vec0); True takes a coarse
        pass over the bit vectors (hamming distance, max(k * oversample, min_candidates)
        candidates) and re-ranks those by their float vectors; None picks quantized once the
        store holds `quantize_threshold` vectors. k is capped at 4096 (sqlite-vec's limit).
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
        return self._knn_quantized(q, k) if quantized else self._knn_exact(q, k)

    def exact_matrix(self) -> tuple[tuple, list[str], np.ndarray] | None:
        """(a key that changes whenever the vectors do, entity ids, (n, dim) matrix) of every stored
        vector, as the exact search holds them; None where `knn` would not search them exactly (an
        in-memory database, or a store of `quantize_threshold` vectors or more)."""
        if not self.conn.filename or self.count() >= self.quantize_threshold:
            return None
        return self._matrix()

    def _matrix(self) -> tuple[tuple, list[str], np.ndarray] | None:
        """(key, entity ids, (n, dim) float matrix) of every stored vector, kept in memory per
        database file and brought up to date when the vectors change (only the rows added since,
        when none was replaced or deleted since); None for an in-memory database."""
        name = self.conn.filename
        if not name:
            return None
        join = "SELECT i.rowid, i.entity_id, c.vector FROM vec_ids i JOIN vec_cache c ON c.id = i.cache_id"
        with self.conn:  # one read transaction: the generation and the rows agree
            meta = dict(self.conn.execute(
                "SELECT key, value FROM vec_meta WHERE key IN ('generation', 'rewritten')").fetchall())
            gen, rewritten = meta.get("generation"), meta.get("rewritten")
            key = (self.model_id, self.dim, gen)
            held = _MATRICES.get(name)
            if held is not None and held[0] == key:
                return key, held[1], held[2]
            grows = (held is not None and held[0][:2] == key[:2] and None not in (gen, rewritten, held[0][2])
                     and rewritten <= held[0][2] < gen)  # only additions since the copy was read
            rows = self.conn.execute(join + (" WHERE i.rowid > ?" if grows else ""),
                                     (held[3],) if grows else ()).fetchall()
        added = np.frombuffer(b"".join(blob for _, _, blob in rows), dtype=np.float32).reshape(len(rows), self.dim)
        last = max((r for r, _, _ in rows), default=held[3] if grows else 0)
        if grows:
            ids, matrix = held[1] + [eid for _, eid, _ in rows], np.concatenate([held[2], added])
        else:
            ids, matrix = [eid for _, eid, _ in rows], added
        with _MATRICES_LOCK:
            _MATRICES.pop(name, None)
            _MATRICES[name] = (key, ids, matrix, last)
            while len(_MATRICES) > _MATRICES_KEPT:
                _MATRICES.pop(next(iter(_MATRICES)))
        return key, ids, matrix

    def _knn_exact(self, q: np.ndarray, k: int) -> list[tuple[str, float]]:
        held = self._matrix()
        if held is None:
            return self._knn_vec0(q, k)
        _, ids, matrix = held
        return nearest(ids, matrix @ q, k)

    def _knn_vec0(self, q: np.ndarray, k: int) -> list[tuple[str, float]]:
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
        n_cand = max(k * self.oversample, self.min_candidates, k)
        # One read transaction, so the threshold and the bits come from the same snapshot
        # even when a writer re-centers meanwhile.
        with self.conn:
            center, _ = self._center()
            # The re-rank reads the float vectors from vec_cache, a plain table (a point
            # lookup in vec0's chunked storage costs ~100x more), and runs in SQL: handing
            # 1000 blobs to Python and back costs more than the distances themselves.
            rows = self.conn.execute(
                """
                WITH cand AS (
                    SELECT rowid FROM vec_bits
                    ORDER BY vec_distance_hamming(vec_bit(bits), vec_bit(?)) LIMIT ?
                )
                SELECT i.entity_id, vec_distance_l2(c.vector, ?) AS d
                FROM cand JOIN vec_ids i ON i.rowid = cand.rowid JOIN vec_cache c ON c.id = i.cache_id
                ORDER BY d LIMIT ?
                """,
                (quantize(q, center).tobytes(), n_cand, q.tobytes(), k),
            ).fetchall()
        return [(eid, float(d) * float(d) / 2.0) for eid, d in rows]
