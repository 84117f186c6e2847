"""Vectors for the index: which entities to embed, with what text, and the nearest-neighbour stream.

The embedder (nsccn.vectors.embed) and the vector table (nsccn.vectors.table) know nothing of entities; this
module joins them to the store. An entity whose embedded text is unchanged is never embedded
again: vectors are cached by the hash of that text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import lru_cache

import numpy as np

from nsccn.vectors.embed import FALLBACK_MODEL, STATIC_MODEL, embedding_text, is_bundled, load_bundled_query_embedder, load_embedder, text_hash
from nsccn.model import split_entity_id
from nsccn.store import EMBEDDABLE_SQL, TEXT_COLUMNS, VECTORS_COMPLETE, Store
from nsccn.reading.testpaths import is_test_path
from nsccn.vectors.table import VectorStore, nearest
from nsccn.vectors.static_file import retired_static_model
from nsccn.vectors.static_embed import STATIC_MAX_CHARS

# Texts per embed_documents call of `embed_index` (vectors are written after each).
EMBED_CHUNK = 256
# The static model's stream: its first RERANK_DEPTH entities ordered again by its second stage
# (`StaticModel.second_stage`, then `file_stage`); chosen on a validation set (docs/semantic-search.md;
# 100 until stop 66: deeper finds more of the right files once the files' context is read).
RERANK_DEPTH = 200
# The second stage counts each candidate's file too: + FILE_STAGE x the best score among the
# candidates of its file. A query is mostly about one file; among equally close functions, the one
# in the file that answers best comes first. Files keep their order (a file's best is scaled by
# 1 + FILE_STAGE). Chosen on repositories in no training or evaluation set ("The files' best", stop 66).
FILE_STAGE = 1.0
# The static model's stream reads each entity's vector with its file's: the cosine of the query with
# normalize(v + FILE_CONTEXT x its file's mean vector, normalized). A function's own text is short;
# its module says what it is part of. Chosen on repositories in no training or evaluation set
# (docs/semantic-search.md, "A file's context").
FILE_CONTEXT = 0.3
# The second stage also reads the other entities of the first EXPAND_FILES files it ranks, those the
# cosine put past RERANK_DEPTH too: a big module's method that says the query's words comes up beside
# its file's first candidates. Chosen on repositories in no training or evaluation set ("The first
# files read whole", stop 67).
EXPAND_FILES = 3
EXPAND_LIMIT = 100  # of those files' other entities, the nearest this many by cosine: a bound on the work


def file_keys(paths) -> tuple[np.ndarray, list]:
    """Each of `paths`' index among the distinct paths, and those paths in order of first sight."""
    index: dict = {}
    of = np.fromiter((index.setdefault(p, len(index)) for p in paths), dtype=np.intp, count=len(paths))
    return of, list(index)


class FileContext:
    """Each entity's file, each file's mean vector (normalized) and each entity's norm once mixed
    with it: the cosines of `FILE_CONTEXT`'s mixed vectors for a query cost one product more over
    the files, and no second copy of the entities' vectors is held."""

    def __init__(self, paths: list[str], matrix: np.ndarray, weight: float | None = None):
        self.of, self.paths = file_keys(paths)  # each entity's file index; file index -> its path
        means = np.zeros((len(self.paths), matrix.shape[1]), dtype=np.float32)
        if len(self.of):  # a file's entities are stored together, mostly: summed run by run (np.add.at row by row is 10x slower)
            runs = np.flatnonzero(np.r_[True, self.of[1:] != self.of[:-1]])
            np.add.at(means, self.of[runs], np.add.reduceat(matrix, runs, axis=0))
        means /= np.maximum(np.linalg.norm(means, axis=1, keepdims=True), 1e-12)
        self.means, self.weight = means, np.float32(FILE_CONTEXT if weight is None else weight)
        self._skipped: dict[Callable[[str], bool], np.ndarray] = {}
        # |v + w m|^2 = |v|^2 + w^2 |m|^2 + 2 w v.m, row by row
        own = np.einsum("ij,ij->i", matrix, matrix)
        mean_sq = np.einsum("ij,ij->i", means, means)[self.of]
        cross = np.zeros(len(matrix), dtype=np.float32)
        for i in range(0, len(matrix), 8192):  # in blocks: no (n, dim) copy of the files' means
            cross[i:i + 8192] = np.einsum("ij,ij->i", matrix[i:i + 8192], means[self.of[i:i + 8192]])
        self.norms = np.maximum(np.sqrt(own + self.weight ** 2 * mean_sq + 2 * self.weight * cross), 1e-12)

    def skipped(self, skip_path: Callable[[str], bool]) -> np.ndarray:
        """Per file, whether `skip_path` is true of its path; remembered for the function (a query
        of the ranker asks it of every file again: ~2 ms on sympy's 2,000)."""
        mask = self._skipped.get(skip_path)
        if mask is None:
            if len(self._skipped) > 4:
                self._skipped.clear()
            mask = self._skipped[skip_path] = np.fromiter(
                (bool(skip_path(p)) for p in self.paths), dtype=bool, count=len(self.paths))
        return mask

    def cosines(self, matrix: np.ndarray, q: np.ndarray) -> np.ndarray:
        """The query's cosine with every entity's mixed vector (`matrix`: the one this was made of)."""
        return (matrix @ q + self.weight * (self.means @ q)[self.of]) / self.norms


def file_stage(paths, scores, weight: float | None = None) -> np.ndarray:
    """The second stage's `scores` of candidates in files `paths` (paths, or any key of a file), each
    + `FILE_STAGE` (or `weight`) x the best score among the candidates of its file."""
    scores = np.asarray(scores, dtype=np.float32)
    weight = FILE_STAGE if weight is None else weight
    if not weight or not len(scores):
        return scores
    of, files = file_keys(paths)
    best = np.full(len(files), -np.inf, dtype=np.float32)
    np.maximum.at(best, of, scores)
    return scores + np.float32(weight) * best[of]


def staged(cosines: np.ndarray, file_of: np.ndarray, stage: Callable[[np.ndarray], np.ndarray],
           depth: int | None = None, expand: int | None = None, expand_limit: int | None = None,
           file_weight: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The static stream's second stage over entities of `cosines` (one each; -inf: left out) in
    files `file_of` (a key per entity): the first `RERANK_DEPTH` by cosine, then the other entities
    of the first `EXPAND_FILES` files they rank (the `EXPAND_LIMIT` nearest), scored by
    `stage(indices)` and `file_stage`. Returns the candidates' indices and their scores (order them
    by score, stably: ties keep this order)."""
    depth = RERANK_DEPTH if depth is None else depth
    expand = EXPAND_FILES if expand is None else expand
    expand_limit = EXPAND_LIMIT if expand_limit is None else expand_limit
    top = np.argsort(-cosines, kind="stable")[:depth]
    top = top[np.isfinite(cosines[top])]
    if not len(top):
        return top, np.zeros(0, dtype=np.float32)
    raw = np.asarray(stage(top), dtype=np.float32)
    if expand:
        ranked = top[np.argsort(-file_stage(file_of[top], raw, file_weight), kind="stable")]
        first = list(dict.fromkeys(file_of[ranked].tolist()))[:expand]
        extra = np.flatnonzero(np.isin(file_of, first) & np.isfinite(cosines))
        extra = extra[~np.isin(extra, top)]
        extra = extra[np.argsort(-cosines[extra], kind="stable")[:expand_limit]]
        if len(extra):
            top, raw = np.concatenate([top, extra]), np.concatenate([raw, np.asarray(stage(extra), dtype=np.float32)])
    return top, file_stage(file_of[top], raw, file_weight)


_FILE_CONTEXTS: dict[str, tuple[tuple, FileContext]] = {}  # database file -> the vectors' key, their context


def _in_file_context(vs: VectorStore, q: np.ndarray) -> tuple[list[str], np.ndarray, FileContext] | None:
    """Every vector's entity id, the query's cosine with it read in its file's context (`FileContext`)
    and that context; None where the store is not searched exactly (then `knn` reads the vectors alone)."""
    held = vs.exact_matrix()
    if held is None:
        return None
    key, ids, matrix = held
    if not ids:
        return ids, np.zeros(0, dtype=np.float32), FileContext([], np.zeros((0, 1), dtype=np.float32))
    name = vs.conn.filename
    cached = _FILE_CONTEXTS.get(name)
    if cached is None or cached[0] != key:
        _FILE_CONTEXTS.clear()  # one database's at a time: a server answers for one index
        cached = _FILE_CONTEXTS[name] = (key, FileContext([split_entity_id(e)[1] for e in ids], matrix))
    context = cached[1]
    return ids, context.cosines(matrix, np.asarray(q, dtype=np.float32).reshape(-1)), context


_query_embeddings = 0
_query_model: dict[tuple[str, bool], object] = {}  # (model id, optimized?) -> the one embedder kept


def bundled_query_embedder(model_id: str = FALLBACK_MODEL):
    """A bundled model (the index's own: `embed.is_bundled`) for a query. The first query of a
    process gets the model that loads in ~30 ms; a process that asks again is one that embeds many
    (a server without the embedder actor, a benchmark): from then on the optimized graph,
    ~0.15-0.2 s more to load once, then a third less per query (`benchmarks/query_embed.py`).
    The vectors agree to < 1e-6."""
    global _query_embeddings
    _query_embeddings += 1
    key = (model_id, _query_embeddings > 1 and model_id != STATIC_MODEL)
    if key not in _query_model:
        _query_model.clear()  # the plain graph (or another model's) is not needed again
        _query_model[key] = load_bundled_query_embedder(optimize=key[1], model_id=model_id)
    return _query_model[key]


@lru_cache(maxsize=4)
def default_embedder(model: str | None = None, dim: int | None = None):
    return load_embedder(model, dim)


def embeddable(kind: str, docstring: str) -> bool:
    """`EMBEDDABLE_SQL` for an entity in hand (a parse result not yet written)."""
    return kind in ("func", "method", "class") or (kind == "module" and docstring != "")


def texts_of_entities(entities, max_chars: int, include_tests: bool = True) -> dict[str, str]:
    """`nsccn.model.Entity`s -> entity id -> the text `wanted_texts` will read for it once written:
    a Ray node embeds a file's entities beside its parse (nsccn.indexing.ray_index)."""
    return texts_of_rows(((e.id, e.path, e.qualname, e.signature, e.docstring, e.body_head)
                          for e in entities if embeddable(e.kind, e.docstring)), max_chars, include_tests)


def texts_of_rows(rows, max_chars: int, include_tests: bool = True) -> dict[str, str]:
    """Rows of `SELECT {TEXT_COLUMNS}` -> entity id -> the text to embed for it."""
    return {
        eid: embedding_text(qualname, sig, doc, head, path=path, max_chars=max_chars)
        for eid, path, qualname, sig, doc, head in rows
        if include_tests or not is_test_path(path)
    }


def texts_of_ids(store: Store, ids: list[str], max_chars: int) -> dict[str, str]:
    """Entity id -> the text the index embeds for it, for those of `ids` that exist."""
    if not ids:
        return {}
    rows = store.conn.execute(
        f"SELECT {TEXT_COLUMNS} FROM entities WHERE id IN ({','.join('?' * len(ids))})", ids).fetchall()
    return texts_of_rows(rows, max_chars)


def wanted_texts(store: Store, max_chars: int, include_tests: bool = True) -> dict[str, str]:
    """entity id -> the text to embed for it; without `include_tests`, entities of test and
    documentation files (`testpaths.is_test_path`) get no vector."""
    rows = store.conn.execute(f"SELECT {TEXT_COLUMNS} FROM entities WHERE {EMBEDDABLE_SQL}")
    return texts_of_rows(rows, max_chars, include_tests)


def embed_index(
    store: Store,
    embedder=None,
    progress: Callable[[int, int], None] | None = None,
    batch: int = EMBED_CHUNK,
    include_tests: bool = True,
    precomputed: Mapping[str, bytes] | None = None,
) -> dict:
    """Bring the vectors of a (writable) store up to date with its entities (see `wanted_texts`
    for `include_tests`). `precomputed`: text hash -> float32 vector bytes already made by this
    embedder's model elsewhere (Ray nodes, beside the parse): stored as they are, not embedded again."""
    embedder = embedder or default_embedder()
    store.conn.execute("DELETE FROM meta WHERE key=?", (VECTORS_COMPLETE,))
    vs = VectorStore(store.conn)
    remodel = vs.ensure_model(embedder.model_id, embedder.dim)
    texts = wanted_texts(store, embedder.max_chars, include_tests)
    wanted = {eid: text_hash(t) for eid, t in texts.items()}
    gone = [eid for eid in vs.hashes() if eid not in wanted]
    if gone:
        vs.delete(gone)
    todo = vs.fill_from_cache(wanted)  # the ones the cache could not serve
    given = 0
    if precomputed:
        have = [e for e in todo if wanted[e] in precomputed]
        for i in range(0, len(have), batch):
            vs.upsert((e, wanted[e], np.frombuffer(precomputed[wanted[e]], dtype=np.float32))
                      for e in have[i : i + batch])
        given = len(have)
        todo = [e for e in todo if wanted[e] not in precomputed]
    done = 0
    chunks = [todo[i : i + batch] for i in range(0, len(todo), batch)]
    # An embedder with `embed_chunks` (a pool of Ray actors: nsccn.indexing.ray_embed) has the
    # chunks embedded side by side, each with the call made here otherwise.
    embed_chunks = getattr(embedder, "embed_chunks", None) or (lambda cs: map(embedder.embed_documents, cs))
    for ids, vectors in zip(chunks, embed_chunks([[texts[e] for e in ids] for ids in chunks])):
        vs.upsert((e, wanted[e], v) for e, v in zip(ids, vectors))
        done += len(ids)
        if progress:
            progress(done, len(todo))
    from nsccn.vectors.commit_vectors import embed_commits

    commits = embed_commits(store)  # the history's messages, for the ranker's semantic history
    store.set_meta("embedding_model", embedder.model_id)
    store.set_meta("embedding_skips_tests", "0" if include_tests else "1")
    store.set_meta(VECTORS_COMPLETE, embedder.model_id)
    info = embedder.info() if hasattr(embedder, "info") else {}
    if info.get("fallback"):
        store.set_meta("embedding_fallback", str(info.get("fallback_reason", "")))
    out = {"embedded": done, "from_cache": len(wanted) - len(todo) - given, "removed": len(gone), "remodeled": remodel,
           "model": embedder.model_id, "commits_embedded": commits}
    if precomputed is not None:
        out["from_nodes"] = given
    return out


def has_vectors(store: Store) -> bool:
    row = store.conn.execute("SELECT 1 FROM sqlite_master WHERE name='vec_ids'").fetchone()
    return bool(row) and store.conn.execute("SELECT EXISTS(SELECT 1 FROM vec_ids)").fetchone()[0] == 1


def entity_vectors(store: Store, entity_ids: list[str]) -> dict:
    """entity id -> its stored vector, for those of `entity_ids` that have one."""
    if not has_vectors(store):
        return {}
    return VectorStore(store.conn).vectors(entity_ids)


def vector_status(store: Store) -> dict:
    if not has_vectors(store):
        return {"vectors": 0, "model": None, "note": "no vectors yet: search runs lexical + graph only"}
    vs = VectorStore(store.conn)
    n = vs.count()
    # Modules without a docstring are never embedded (wanted_texts): they are not missing.
    skips_tests = store.get_meta("embedding_skips_tests") == "1"
    if skips_tests:
        paths = store.conn.execute(f"SELECT path FROM entities WHERE {EMBEDDABLE_SQL}")
        total = sum(1 for (p,) in paths if not is_test_path(p))
    else:
        total = store.conn.execute(f"SELECT COUNT(*) FROM entities WHERE {EMBEDDABLE_SQL}").fetchone()[0]
    out = {"vectors": n, "entities_without_vectors": max(0, total - n), "model": vs.model_id, "dim": vs.dim}
    if skips_tests:
        out["note"] = "entities of test and documentation files are not embedded (embed_test_files: false)"
    if retired_static_model(vs.model_id):
        out["note"] = f"made by {vs.model_id}, replaced by {STATIC_MODEL}: `nsccn index` embeds them again"
    fallback = store.get_meta("embedding_fallback")
    if fallback:
        out["fallback"] = fallback
    return out


def _recorded_model(vs: VectorStore) -> tuple[str | None, int | None]:
    """The configuration that most likely made the stored vectors, to load the same for queries."""
    if vs.model_id and vs.model_id.startswith("nsccn/"):
        return None, None  # the bundled fallback: loading the default falls back to it again
    return (vs.model_id.split("@")[0], vs.dim) if vs.model_id else (None, None)


def nearest_rowids(store: Store, query: str, limit: int, embedder=None,
                   skip_path: Callable[[str], bool] | None = None, names: bool = True) -> list[int]:
    """Entity rowids nearest to the query; [] when the index has no vectors. `skip_path`: entities
    of the paths it is true for are left out (the entity id carries the path: no row read for it).
    `names`: the static stream's second stage reads the candidates' names (`StaticModel.second_stage`)."""
    if not has_vectors(store):
        return []
    vs = VectorStore(store.conn)
    if vs.model_id == STATIC_MODEL:  # microseconds here: never a round trip to another process's model
        embedder = bundled_query_embedder(STATIC_MODEL)
    if embedder is None and is_bundled(vs.model_id):
        embedder = bundled_query_embedder(vs.model_id)  # the vectors' own model, without fastembed's imports
    embedder = embedder or default_embedder(*_recorded_model(vs))
    if vs.model_id != embedder.model_id:
        raise RuntimeError(
            f"the index holds vectors of {vs.model_id}, the query embedder is {embedder.model_id}: re-embed the index"
        )
    q = embedder.embed_query(query)
    static = getattr(embedder.backend, "model", None) if vs.model_id == STATIC_MODEL else None
    if static is not None:
        hits = _static_stream(store, vs, static, query, q, limit, skip_path, names)
    else:
        hits = [(eid, 1.0 - dist) for eid, dist in vs.knn(q, k=limit)
                if skip_path is None or not skip_path(split_entity_id(eid)[1])]
    ids = [eid for eid, _ in hits[:limit]]
    rows = dict(store.conn.execute(
        f"SELECT id, rowid FROM entities WHERE id IN ({','.join('?' * len(ids))})", ids
    ).fetchall()) if ids else {}
    return [rows[e] for e in ids if e in rows]


def _static_stream(store: Store, vs: VectorStore, model, query: str, q: np.ndarray, limit: int,
                   skip_path: Callable[[str], bool] | None, names: bool = True) -> list[tuple[str, float]]:
    """The static model's stream, [(entity id, cosine)] best first: the cosines in the files' context,
    the first of them ordered again by the second stage (`staged`: cosine + the late interactions of
    the query with their texts and their names, the first files read whole, `file_stage`), then the
    rest by cosine."""
    held = _in_file_context(vs, q)
    if held is not None:
        ids, cosines, context = held
        file_of = context.of
        skipped = context.skipped(skip_path) if skip_path is not None else None
    else:  # a store of more vectors than the exact search takes: the first pass's, their own cosines
        found = vs.knn(q, k=max(limit, RERANK_DEPTH))
        ids, cosines = [e for e, _ in found], np.array([1.0 - d for _, d in found], dtype=np.float32)
        file_of, paths = file_keys([split_entity_id(e)[1] for e in ids])
        skipped = np.array([bool(skip_path(p)) for p in paths], dtype=bool) if skip_path is not None else None
    if skipped is not None and len(skipped):
        cosines = np.where(skipped[file_of], -np.inf, cosines).astype(np.float32)

    def stage(at: np.ndarray) -> np.ndarray:
        texts = texts_of_ids(store, [ids[j] for j in at], STATIC_MAX_CHARS)
        return model.second_stage(query, [texts.get(ids[j], "") for j in at], cosines[at],
                                  [split_entity_id(ids[j])[2] for j in at] if names else None)

    cand, scores = staged(cosines, file_of, stage)
    hits = [(ids[j], float(cosines[j])) for j in cand[np.argsort(-scores, kind="stable")].tolist()]
    if len(hits) < limit:  # the rest by cosine (a left-out entity's distance is infinite)
        taken = {e for e, _ in hits}
        hits += [(e, 1.0 - d) for e, d in nearest(ids, cosines, limit + len(hits))
                 if e not in taken and np.isfinite(d)][: limit - len(hits)]
    return hits
