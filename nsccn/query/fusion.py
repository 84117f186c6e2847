"""The hand-tuned fusion: the retrieval streams (`nsccn.query.streams`) combined by Reciprocal Rank
Fusion, then graph expansion and the structural prior (`search`); for a bug report, files and
functions by hierarchical localization over those hits (`fusion_localize`, `localize`).

`fuse` combines ranks, never raw scores, so streams with incomparable scales mix fairly. The
learned ranker (`nsccn.ranking`) draws its candidates and many features from a `Fusion`.
"""

from __future__ import annotations

import time
from collections import defaultdict
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from nsccn.model import split_entity_id
from nsccn.query.query_analysis import MAX_EMBED_CHARS, QueryAnalysis, analyze_query
from nsccn.store import Store
from nsccn.query.streams import (
    Hit, bm25_stream, exact_stream, file_bm25, graph_stream, in_file_bm25, outermost_functions, prior_stream,
    vector_stream,
)
from nsccn.reading.testpaths import is_test_path

ALL_SIGNALS = frozenset({"bm25", "vector", "query_analysis", "graph", "prior"})
DEFAULT_SIGNALS = ALL_SIGNALS
RRF_K = 60
# RRF weight per stream: exact identifier/path/traceback matches are strong evidence; graph
# neighbours and the structural prior only nudge. Vectors count half: with the bundled
# general-purpose model (MiniLM) the vector stream alone localizes far worse than BM25 alone
# (function@10 32.4 vs 46.2 over all 181 dev instances; docs/localization.md).
STREAM_WEIGHTS = {"bm25": 1.0, "vector": 0.5, "exact": 1.0, "graph": 0.5, "prior": 0.1}


def fuse(
    streams: dict[str, list[int]],
    k: int = RRF_K,
    weights: dict[str, float] | None = None,
    item_weights: dict[str, dict[int, float]] | None = None,
) -> dict[int, float]:
    """Reciprocal Rank Fusion: score(d) = sum over streams of w / (k + rank(d)), w the stream's
    weight times the item's own weight in that stream (default 1)."""
    scores: dict[int, float] = defaultdict(float)
    for name, ranked in streams.items():
        w = (weights or {}).get(name, 1.0)
        own = (item_weights or {}).get(name, {})
        for rank, rid in enumerate(ranked, start=1):
            scores[rid] += w * own.get(rid, 1.0) / (k + rank)
    return scores


def search(
    store: Store,
    query: str,
    limit: int = 10,
    signals: frozenset[str] | None = None,
    kinds: tuple[str, ...] | None = None,
    embedder=None,
    rrf_k: int = RRF_K,
    diversity: float = 0.0,
) -> list[Hit]:
    """Ranked entities for a query (a name, a phrase, or a whole bug report).

    `diversity` > 0 re-ranks by Maximal Marginal Relevance (`diversify`): near-duplicates of a hit
    already listed (sibling overloads, one file's many similar methods) give way to other places."""
    if not query or not query.strip():
        raise ValueError("the query is empty")
    if not 0.0 <= diversity <= 1.0:
        raise ValueError(f"diversity must be between 0 and 1, not {diversity}")
    signals = DEFAULT_SIGNALS if signals is None else signals
    unknown = set(signals) - ALL_SIGNALS
    if unknown:
        raise ValueError(f"unknown signals {sorted(unknown)}; known: {sorted(ALL_SIGNALS)}")
    analysis = analyze_query(query)
    streams: dict[str, list[int]] = {}
    if "bm25" in signals:
        streams["bm25"] = bm25_stream(store, analysis.weighted_terms())
    if "vector" in signals:
        streams["vector"] = vector_stream(store, query[:MAX_EMBED_CHARS], embedder=embedder)
    item_weights: dict[str, dict[int, float]] = {"exact": {}}
    if "query_analysis" in signals:
        streams["exact"] = exact_stream(store, analysis, item_weights["exact"])
    scores = fuse(streams, k=rrf_k, weights=STREAM_WEIGHTS, item_weights=item_weights)
    # Second-order streams read the first fusion, then everything is fused again.
    if "graph" in signals:
        streams["graph"] = graph_stream(store, scores)
    if "prior" in signals:
        streams["prior"] = prior_stream(store, [r for r, _ in sorted(scores.items(), key=lambda x: -x[1])[:100]])
    if "graph" in signals or "prior" in signals:
        scores = fuse(streams, k=rrf_k, weights=STREAM_WEIGHTS, item_weights=item_weights)
    ranked = sorted(scores.items(), key=lambda x: -x[1])
    ranks = {name: {rid: i for i, rid in enumerate(s, start=1)} for name, s in streams.items()}
    wanted = max(limit * 4, 100)
    rows = store.entity_at_rowids([rid for rid, _ in ranked[:wanted]])
    hits: list[Hit] = []
    for rid, score in ranked[:wanted]:
        row = rows.get(rid)
        if row is None or (kinds and row.kind not in kinds):
            continue
        hits.append(Hit(row, score, {n: r[rid] for n, r in ranks.items() if rid in r}))
        if len(hits) >= limit and not diversity:
            break
    if diversity:
        from nsccn.vectors.semantic import entity_vectors  # numpy and the vector tables: only when asked

        return diversify(hits, limit, diversity, entity_vectors(store, [h.entity.id for h in hits]))
    return hits


def diversify(hits: list[Hit], limit: int, diversity: float, vectors: dict) -> list[Hit]:
    """Maximal Marginal Relevance: take, one at a time, the hit with the best
    (1 - diversity) * relevance - diversity * (its greatest similarity to a hit already taken).

    Relevance is the fused score scaled to [0, 1]. Similarity is the cosine of the two entities'
    vectors; for an entity without a vector (a lexical-only index) it is 1 within one file and 0
    across files, so diversity still spreads the results over files."""
    import numpy as np

    if not hits:
        return []
    top = max(h.score for h in hits) or 1.0
    unit = {}
    for eid, vec in vectors.items():
        norm = float(np.linalg.norm(vec))
        if norm:
            unit[eid] = vec / norm

    def similarity(a: Hit, b: Hit) -> float:
        va, vb = unit.get(a.entity.id), unit.get(b.entity.id)
        if va is not None and vb is not None:
            return float(va @ vb)
        return 1.0 if a.entity.path == b.entity.path else 0.0

    taken: list[Hit] = []
    closest = [0.0] * len(hits)  # each candidate's greatest similarity to the hits taken so far
    left = set(range(len(hits)))
    while left and len(taken) < limit:
        best = max(left, key=lambda i: ((1 - diversity) * hits[i].score / top - diversity * closest[i], -i))
        left.remove(best)
        taken.append(hits[best])
        for i in left:
            closest[i] = max(closest[i], similarity(hits[i], hits[best]))
    return taken


FILE_SHARE = 1.0  # weight of a function's file rank in its own score (hierarchical localization)
TEST_PENALTY = 0.3  # a bug is fixed in the code under test; tests mention the bug's words too
# Second stage: the functions of the best files are ranked by BM25 within their file, so a
# function the repository-wide streams cut off (a big file's 150th method) can still come up.
# (Vector similarity within the file was tried as a second such stream and added nothing.)
IN_FILE_FILES = 5
IN_FILE_DEPTH = 10  # functions taken from each of those files
FUNCTION_KINDS = ("func", "method", "class")


@dataclass
class Localization:
    files: list[str]
    functions: list[str]  # entity ids of functions, methods and classes (outermost functions)
    seconds: float
    # function id -> score: the learned ranker's raw score, made the probability that the fix
    # changes it by the query path (`calibration.function_probabilities`); none from the fusion.
    function_scores: dict[str, float] = field(default_factory=dict)


@dataclass
class Fusion:
    """What the hand-tuned fusion ranking of a bug report saw and decided: the learned ranker's
    candidates and many of its features come from here."""

    analysis: QueryAnalysis
    terms: list[str]  # weighted BM25 terms
    hits: list[Hit]  # entity hits, test files demoted, best first
    files: list[str]  # files, best first (entity hits fused with whole-file BM25)
    file_scores: dict[str, float]
    entity_files: list[str]  # files by their entity hits alone
    file_bm25: list[str]  # whole-file BM25 ranking (test files left out)
    top_files: list[str]  # the files whose functions were ranked again within their file
    in_file: list[str]  # those functions: the best files in order, each file's best functions in order
    functions: list[str]  # outermost functions, best first
    fn_scores: dict[str, float]
    outer: dict[str, str]  # entity id -> its outermost function


def fusion_localize(
    store: Store, query: str, limit: int = 50, signals: frozenset[str] | None = None, embedder=None,
    rrf_k: int = RRF_K,
) -> Fusion:
    """The hand-tuned fusion: files from entity hits aggregated per file (best hit plus damped
    further hits) fused with a whole-file BM25 ranking; functions from entity hits rolled up to
    their outermost function, plus the share of their file's rank, plus the BM25 ranking of the
    best files' functions within their file."""
    signals_used = DEFAULT_SIGNALS if signals is None else signals
    analysis = analyze_query(query)
    terms = analysis.weighted_terms()
    hits = search(store, query, limit=limit * 6, signals=signals, embedder=embedder, rrf_k=rrf_k)
    for hit in hits:
        if is_test_path(hit.entity.path):
            hit.score *= TEST_PENALTY
    hits.sort(key=lambda h: -h.score)
    files: dict[str, float] = defaultdict(float)
    seen: dict[str, int] = defaultdict(int)
    for hit in hits:
        # A file (or a function, below) scores by its best hit plus a little for each further one.
        seen[hit.entity.path] += 1
        files[hit.entity.path] += hit.score / seen[hit.entity.path] ** 2
    entity_files = sorted(files, key=lambda p: -files[p])
    ranked_files, file_scores, by_file_bm25 = entity_files, dict(files), []
    if "bm25" in signals_used:  # whole-file BM25: a second opinion on files
        by_file_bm25 = [p for p in file_bm25(store, terms, code_only=True) if not is_test_path(p)]
        file_scores = fuse({"entities": entity_files, "files": by_file_bm25}, k=rrf_k)
        ranked_files = sorted(file_scores, key=lambda p: -file_scores[p])

    fn_hits = [h for h in hits if h.entity.kind in FUNCTION_KINDS]
    top_files = [p for p in ranked_files if not is_test_path(p)][:IN_FILE_FILES]
    in_file = in_file_bm25(store, terms, top_files) if "bm25" in signals_used else {}
    everything = [h.entity.id for h in fn_hits] + [e for ids in in_file.values() for e in ids]
    outer = outermost_functions(store, list(dict.fromkeys(everything)))

    fn_scores: dict[str, float] = defaultdict(float)
    seen = defaultdict(int)
    for hit in fn_hits:
        fid = outer[hit.entity.id]
        seen[fid] += 1
        fn_scores[fid] += hit.score / seen[fid] ** 2
    # One more ranked list: the best files in order, each file's best functions in order.
    in_file_ranked: list[str] = []
    for path in top_files:
        in_file_ranked.extend(list(dict.fromkeys(outer[e] for e in in_file.get(path, [])))[:IN_FILE_DEPTH])
    for rank, fid in enumerate(in_file_ranked, start=1):
        fn_scores[fid] += 1.0 / (rrf_k + rank)
    file_rank = {p: i for i, p in enumerate(ranked_files, start=1)}
    for fid in fn_scores:
        fn_scores[fid] += FILE_SHARE / (rrf_k + file_rank.get(split_entity_id(fid)[1], 1000))
    functions = sorted(fn_scores, key=lambda f: -fn_scores[f])
    return Fusion(analysis, terms, hits, ranked_files, file_scores, entity_files, by_file_bm25, top_files,
                  in_file_ranked, functions, dict(fn_scores), outer)


def localize(
    index: Store | str | Path, query: str, limit: int = 50, signals: frozenset[str] | None = None, embedder=None,
    rrf_k: int = RRF_K,
) -> Localization:
    """Rank files and functions for a bug report: where its fix most likely goes (the benchmark's
    entry point, and `Navigator.localize`). `index`: an open Store, or the path of an index file.
    This is the hand-tuned fusion (`fusion_localize`); `nsccn.ranking.localize` re-ranks its
    candidates with the learned model.
    """
    started = time.perf_counter()
    opened = nullcontext(index) if isinstance(index, Store) else Store(index, readonly=True)
    with opened as store:
        fusion = fusion_localize(store, query, limit=limit, signals=signals, embedder=embedder, rrf_k=rrf_k)
    return Localization(fusion.files[:limit], fusion.functions[:limit], time.perf_counter() - started)
