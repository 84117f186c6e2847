"""The sqlite-vec store: model bookkeeping, the embedding cache, exact and quantized k-NN."""

from __future__ import annotations

import apsw
import numpy as np
import pytest

from nsccn.vectors.embed import embedding_text, load_embedder, text_hash
from nsccn.vectors.table import CENTER_FIRST_AT, VectorStore, quantize


def unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


@pytest.fixture
def conn(tmp_path):
    c = apsw.Connection(str(tmp_path / "index.db"))
    c.execute("PRAGMA journal_mode=WAL")
    yield c
    c.close()


@pytest.fixture
def store(conn):
    s = VectorStore(conn)
    s.ensure_model("test-model", 64)
    return s


def fill(store: VectorStore, vecs: np.ndarray, prefix: str = "func:a.py:f") -> list[str]:
    ids = [f"{prefix}{i}" for i in range(len(vecs))]
    store.upsert([(eid, f"hash-{eid}", v) for eid, v in zip(ids, vecs)])
    return ids


def test_fresh_store_needs_a_model(conn):
    s = VectorStore(conn)
    assert s.model_id is None and s.count() == 0
    with pytest.raises(RuntimeError):
        s.knn(np.ones(8), 3)
    assert s.ensure_model("m", 8) is False  # fresh: nothing to re-embed
    assert s.ensure_model("m", 8) is False  # same model: nothing to do
    assert VectorStore(conn).model_id == "m"  # recorded in the database
    # A store laid out by another version of this module is rebuilt, not misread.
    conn.execute("UPDATE vec_meta SET value = 0 WHERE key = 'schema'")
    assert s.ensure_model("m", 8) is True
    assert s.ensure_model("m", 8) is False


def test_knn_exact_matches_brute_force(store):
    rng = np.random.default_rng(7)
    vecs = unit(rng.standard_normal((500, 64)))
    ids = fill(store, vecs)
    assert store.count() == 500
    for q in unit(rng.standard_normal((5, 64))):
        got = store.knn(q, 10, quantized=False)
        sims = vecs @ q
        want = np.argsort(-sims)[:10]
        assert [eid for eid, _ in got] == [ids[i] for i in want]
        assert np.allclose([d for _, d in got], 1 - sims[want], atol=1e-5)
    # The stored vector itself is at distance 0.
    assert store.knn(vecs[42], 1, quantized=False)[0][0] == ids[42]
    assert store.knn(vecs[42], 0) == []


def test_upsert_replaces_and_normalizes(store):
    rng = np.random.default_rng(1)
    vecs = unit(rng.standard_normal((50, 64)))
    ids = fill(store, vecs)
    new = rng.standard_normal(64) * 5  # not unit length: stored normalized
    store.upsert([(ids[3], "new-hash", new)])
    assert store.count() == 50
    top_id, dist = store.knn(new, 1, quantized=False)[0]
    assert top_id == ids[3] and dist == pytest.approx(0, abs=1e-5)
    assert store.knn(new, 1, quantized=True)[0][0] == ids[3]
    assert store.hashes([ids[3]]) == {ids[3]: "new-hash"}
    assert np.allclose(store.vectors([ids[3]])[ids[3]], unit(new), atol=1e-6)
    # The same entity twice in one batch: the last one wins.
    store.upsert([(ids[4], "a", vecs[0]), (ids[4], "b", vecs[1])])
    assert store.hashes([ids[4]]) == {ids[4]: "b"} and store.count() == 50
    with pytest.raises(ValueError):
        store.upsert([("x", "h", np.ones(32))])
    with pytest.raises(ValueError):
        store.knn(np.ones(32), 3)


def test_delete(store, conn):
    rng = np.random.default_rng(2)
    vecs = unit(rng.standard_normal((100, 64)))
    ids = fill(store, vecs)
    gone = ids[:10]
    assert store.delete(gone + ["func:nowhere.py:f"]) == 10
    assert store.count() == 90
    assert conn.execute("SELECT count(*) FROM vec_index").fetchone()[0] == 90
    for quantized in (False, True):
        hits = {eid for eid, _ in store.knn(vecs[0], 100, quantized=quantized)}
        assert hits.isdisjoint(gone) and len(hits) == 90
    # The cache keeps deleted entities' vectors.
    assert f"hash-{ids[0]}" in store.cached([f"hash-{ids[0]}"])


def test_quantized_agrees_with_exact(conn):
    """recall@10 of the bit coarse pass + float re-rank against exact search.

    Clustered unit vectors, like embeddings (isotropic random vectors have no real
    neighbours, so sign bits rank them near-randomly: see benchmarks/vectors_bench.py)."""
    rng = np.random.default_rng(3)
    dim, n = 256, 4000
    centers = unit(rng.standard_normal((80, dim)))
    vecs = unit(centers[rng.integers(0, 80, n)] + 0.08 * rng.standard_normal((n, dim)))
    # 100 candidates of 4000: the coarse pass really has to find them.
    store = VectorStore(conn, quantize_threshold=1000, oversample=10, min_candidates=0)
    store.ensure_model("m", dim)
    fill(store, vecs)
    center = np.frombuffer(conn.execute("SELECT value FROM vec_meta WHERE key = 'bit_center'").fetchone()[0], np.float32)
    assert np.allclose(center, vecs.mean(axis=0), atol=1e-3)  # re-centered as the store grew
    recalls = []
    for i in rng.integers(0, n, 40):
        q = unit(vecs[i] + 0.05 * rng.standard_normal(dim))
        exact = store.knn(q, 10, quantized=False)
        quant = store.knn(q, 10, quantized=True)
        assert store.knn(q, 10) == quant  # auto: past the threshold, quantized
        recalls.append(len({e for e, _ in exact} & {e for e, _ in quant}) / 10)
        # Re-ranked distances are the true cosine distances.
        d = dict(exact)
        assert all(abs(d[e] - dist) < 1e-4 for e, dist in quant if e in d)
    assert np.mean(recalls) >= 0.95
    small = VectorStore(conn, quantize_threshold=10_000)
    q = unit(rng.standard_normal(dim))
    assert small.knn(q, 10) == small.knn(q, 10, quantized=False)  # auto: below it, exact


def test_model_switch_clears_vectors_and_keeps_caches_apart(store, conn):
    rng = np.random.default_rng(4)
    fill(store, unit(rng.standard_normal((20, 64))))
    assert store.ensure_model("other-model", 32) is True
    assert store.count() == 0
    assert store.cached(["hash-func:a.py:f0"]) == {}  # other model: no hit
    assert VectorStore(conn).dim == 32
    fill(store, unit(rng.standard_normal((5, 32))))
    assert store.knn(np.ones(32), 5)[0][0].startswith("func:a.py:f")
    # Back to the first model: its cache entries serve again.
    assert store.ensure_model("test-model", 64) is True
    assert store.count() == 0
    assert len(store.cached([f"hash-func:a.py:f{i}" for i in range(20)])) == 20


def test_cache_means_unchanged_text_is_embedded_once(conn):
    embedder = load_embedder("all-MiniLM-L6-v2", threads=2)
    store = VectorStore(conn)
    store.ensure_model(embedder.model_id, embedder.dim)
    calls: list[int] = []

    def index(entities: dict[str, str]) -> None:
        """The writer's loop: entity id -> text; embed only what the cache lacks."""
        wanted = {eid: text_hash(t) for eid, t in entities.items()}
        need = store.fill_from_cache(wanted)
        calls.append(len(need))
        if need:
            vecs = embedder.embed_documents([entities[eid] for eid in need])
            store.upsert([(eid, wanted[eid], v) for eid, v in zip(need, vecs)])

    texts = {
        "func:a.py:load": embedding_text("load", "def load(path)", "Read a JSON file.", "return json.load(open(path))"),
        "func:a.py:dump": embedding_text("dump", "def dump(obj, path)", "Write a JSON file.", "json.dump(obj, open(path, 'w'))"),
        "func:b.py:area": embedding_text("area", "def area(r)", "Area of a circle.", "return math.pi * r * r"),
    }
    index(texts)
    assert calls == [3] and store.count() == 3
    index(texts)  # nothing changed
    assert calls[-1] == 0

    # Deleted, then back: served from the cache.
    store.delete(["func:b.py:area"])
    assert store.count() == 2
    index(texts)
    assert calls[-1] == 0 and store.count() == 3

    # Renamed (new id) with the same text: cache hit. One text edited: one embedding.
    renamed = {("func:c.py:area" if k == "func:b.py:area" else k): v for k, v in texts.items()}
    renamed["func:a.py:load"] += "\nvalidate(data)"
    store.delete(["func:b.py:area"])
    index(renamed)
    assert calls[-1] == 1 and store.count() == 3
    assert store.missing({k: text_hash(v) for k, v in renamed.items()}) == []

    q = embedder.embed_query("circle area")
    assert store.knn(q, 1)[0][0] == "func:c.py:area"


def test_prune_cache_keeps_referenced(store):
    rng = np.random.default_rng(5)
    ids = fill(store, unit(rng.standard_normal((10, 64))))
    store.delete(ids[:4])
    assert store.prune_cache(keep_unreferenced=1) == 3
    assert len(store.cached([f"hash-{e}" for e in ids])) == 7
    # Quantized search still works after pruning (its re-rank reads the cache).
    assert len(store.knn(rng.standard_normal(64), 6, quantized=True)) == 6


def test_read_only_connection_can_search(store, tmp_path):
    rng = np.random.default_rng(6)
    vecs = unit(rng.standard_normal((30, 64)))
    ids = fill(store, vecs)
    ro = apsw.Connection(str(tmp_path / "index.db"), flags=apsw.SQLITE_OPEN_READONLY)
    reader = VectorStore(ro)
    assert reader.model_id == "test-model" and reader.count() == 30
    assert reader.knn(vecs[7], 1)[0][0] == ids[7]
    assert reader.knn(vecs[7], 1, quantized=True)[0][0] == ids[7]
    ro.close()


def test_bit_layout_is_sqlite_vec_s(conn):
    VectorStore(conn)  # loads the extension
    rng = np.random.default_rng(8)
    for v in rng.standard_normal((5, 40)).astype(np.float32):
        (theirs,) = conn.execute("SELECT vec_quantize_binary(?)", (v.tobytes(),)).fetchone()
        assert quantize(v).tobytes() == theirs


def test_recenter_keeps_search_consistent(store):
    rng = np.random.default_rng(9)
    # Anisotropic, like embeddings: every component shifted by an offset.
    offset = rng.standard_normal(64) * 0.5
    n = CENTER_FIRST_AT - 10
    vecs = unit(offset + rng.standard_normal((n, 64)) * 0.3)
    ids = fill(store, vecs)
    assert store.conn.execute("SELECT value FROM vec_meta WHERE key = 'bit_center'").fetchone() is None
    before = [store.knn(v, 5, quantized=True) for v in vecs[:5]]
    more = unit(offset + rng.standard_normal((20, 64)) * 0.3)
    fill(store, more, prefix="func:b.py:g")  # crosses CENTER_FIRST_AT: every bit vector rewritten
    assert store.conn.execute("SELECT value FROM vec_meta WHERE key = 'bit_center_n'").fetchone()[0] == n + 20
    for v, eid in zip(vecs[:5], ids[:5]):
        assert store.knn(v, 1, quantized=True)[0][0] == eid
    assert [r[0][0] for r in before] == ids[:5]


def test_in_memory_exact_search_agrees_with_vec0_and_follows_writes(store, conn, tmp_path):
    rng = np.random.default_rng(11)
    vecs = unit(rng.standard_normal((300, 64)))
    fill(store, vecs)
    queries = unit(rng.standard_normal((5, 64)))
    for q in queries:
        mem = store.knn(q, 20, quantized=False)
        vec0 = store._knn_vec0(q, 20)
        assert [e for e, _ in mem] == [e for e, _ in vec0]
        assert np.allclose([d for _, d in mem], [d for _, d in vec0], atol=1e-5)
    # Another connection's writes (the pipeline's writer) reach a reader holding the matrix.
    reader = VectorStore(apsw.Connection(str(tmp_path / "index.db"), flags=apsw.SQLITE_OPEN_READONLY))
    q = queries[0]
    assert reader.knn(q, 1, quantized=False)[0][0] != "func:new.py:g"
    store.upsert([("func:new.py:g", "hash-new", q)])
    assert reader.knn(q, 1, quantized=False)[0] == ("func:new.py:g", pytest.approx(0.0, abs=1e-5))
    store.delete(["func:new.py:g"])
    assert reader.knn(q, 1, quantized=False)[0][0] != "func:new.py:g"
    store.clear()
    assert reader.knn(q, 3, quantized=False) == []
    reader.conn.close()


def test_the_held_matrix_reads_only_what_a_bulk_embedding_added(store, conn, tmp_path):
    """A reader's matrix follows a writer that only adds vectors by reading the added rows (so a
    query during a bulk embedding never re-reads the whole table), and reads it whole again after
    a vector was replaced or deleted; either way it answers as a matrix read from nothing."""
    from nsccn.vectors import table

    rng = np.random.default_rng(5)
    fill(store, unit(rng.standard_normal((200, 64))))
    reader = VectorStore(apsw.Connection(str(tmp_path / "index.db"), flags=apsw.SQLITE_OPEN_READONLY))
    name = reader.conn.filename
    queries = unit(rng.standard_normal((4, 64)))

    def fresh(q):
        table._MATRICES.pop(name, None)
        return reader.knn(q, 15, quantized=False)

    reader.knn(queries[0], 5, quantized=False)
    first = table._MATRICES[name][2]
    fill(store, unit(rng.standard_normal((50, 64))), prefix="func:b.py:g")  # a batch added
    held = [reader.knn(q, 15, quantized=False) for q in queries]
    grown = table._MATRICES[name][2]
    assert grown.shape == (250, 64) and np.shares_memory(grown, first) is False
    assert np.array_equal(grown[:200], first)  # the old rows kept, the new ones appended
    assert held == [fresh(q) for q in queries]

    store.upsert([("func:a.py:f3", "hash-changed", queries[1])])  # replaced: the copy is read again
    assert reader.knn(queries[1], 1, quantized=False)[0][0] == "func:a.py:f3"
    assert [reader.knn(q, 15, quantized=False) for q in queries] == [fresh(q) for q in queries]
    store.delete(["func:a.py:f3"])
    assert reader.knn(queries[1], 1, quantized=False)[0][0] != "func:a.py:f3"
    fill(store, unit(rng.standard_normal((10, 64))), prefix="func:c.py:h")
    assert [reader.knn(q, 15, quantized=False) for q in queries] == [fresh(q) for q in queries]
    reader.conn.close()


def test_the_exact_matrix_is_the_exact_search_s_and_changes_its_key_with_the_vectors(conn, store):
    """`exact_matrix`: the vectors the exact search holds, with a key that moves on every write (what
    the files' context of the vector stream is cached by); None where the search would not be exact."""
    rng = np.random.default_rng(5)
    vecs = unit(rng.standard_normal((30, 64)))
    ids = fill(store, vecs)
    key, held_ids, matrix = store.exact_matrix()
    assert held_ids == ids and np.allclose(matrix, vecs, atol=1e-6)
    fill(store, unit(rng.standard_normal((2, 64))), prefix="func:b.py:g")
    key2, held_ids, matrix = store.exact_matrix()
    assert key2 != key and len(held_ids) == 32 == len(matrix)
    assert VectorStore(conn, quantize_threshold=32).exact_matrix() is None  # the coarse pass's store
    memory = apsw.Connection(":memory:")
    in_memory = VectorStore(memory)
    in_memory.ensure_model("test-model", 64)
    fill(in_memory, vecs)
    assert in_memory.exact_matrix() is None  # vec0 searches it
    memory.close()
