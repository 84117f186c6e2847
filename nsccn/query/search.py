"""The query path: which ranking answers a search or a localization, decided here once.

    query -> query analysis (`nsccn.query.query_analysis`)
          -> retrieval streams (`nsccn.query.streams`)
          -> the hand-tuned fusion (`nsccn.query.fusion`): RRF over the streams, graph and prior
          -> the learned ranker (`nsccn.ranking`), when a usable model is there: it re-ranks the
             fusion's candidates by their features (`nsccn.ranking.features`)

`ranking_for` chooses between the learned ranker and the fusion (no model, or a model made for
other features: the fusion, and the answer says why); `search` and `localize` run the choice.
A stage that answers before the fusion (an exact name lookup) belongs in `search`, above both.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from nsccn import ranking

from nsccn.query import fusion
from nsccn.query.fusion import Localization
from nsccn.query.query_analysis import analyze_query
from nsccn.ranking import Ranker
from nsccn.query.calibration import function_probabilities, probabilities
from nsccn.store import Store
from nsccn.query.streams import Hit

# `search` hands a query to the learned ranker when it says more than a name: this many distinct
# terms, or a traceback frame. A one- or two-word lookup ("revoke token") keeps the fusion, whose
# exact name match the model weighs against centrality. Measured on 499 commit subjects of 17
# held-out repositories (benchmarks/search_bench.py): learned for 3+ terms Acc@1/5/10 40.5 / 72.3
# / 78.2, learned for all 41.7 / 74.1 / 79.8, fusion for all 16.2 / 26.7 / 37.9.
REPORT_TERMS = 3
LOOKUP = "hand-tuned fusion (a one- or two-word lookup; the learned ranker takes longer queries)"


def reads_like_report(query: str) -> bool:
    """Whether a search query says more than a name: REPORT_TERMS distinct terms, or a traceback frame."""
    a = analyze_query(query)
    return len(a.terms) >= REPORT_TERMS or bool(a.frames)


def ranking_for(index_dir: Path | None, query: str | None = None) -> tuple[Ranker | None, str]:
    """The learned ranker that answers (None: the hand-tuned fusion) and a line saying which. With
    `query` (a search), a query that is only a name keeps the fusion."""
    ranker, which = ranking.active_ranker(index_dir)
    if ranker is not None and query is not None and not reads_like_report(query):
        return None, LOOKUP
    return ranker, which


def search(store: Store, query: str, limit: int, ranker: Ranker | None, signals: frozenset[str] | None = None,
           kinds: tuple[str, ...] | None = None, embedder=None, rrf_k: int = fusion.RRF_K, diversity: float = 0.0,
           use_vectors: bool = True) -> list[Hit]:
    """Ranked entities for a query: the learned ranker's order when `ranker` is given, else the
    fusion's (`signals` chooses its streams); `diversity` > 0 spreads them (`fusion.diversify`).
    Either way a hit's score is the probability that it is what the query sought
    (`nsccn.query.calibration`)."""
    if ranker is None:
        return probabilities(fusion.search(store, query, limit=limit, signals=signals, embedder=embedder, kinds=kinds,
                                           rrf_k=rrf_k, diversity=diversity))
    wanted = max(limit, 40) if diversity else limit
    hits = probabilities(ranking.search(store, query, wanted, ranker, kinds=kinds, embedder=embedder, rrf_k=rrf_k,
                                        use_vectors=use_vectors))
    if diversity:
        from nsccn.vectors.semantic import entity_vectors  # numpy and the vector tables: only when asked

        hits = fusion.diversify(hits, limit, diversity, entity_vectors(store, [h.entity.id for h in hits]))
    return hits


def localize(store: Store, report: str, limit: int, ranker: Ranker | None, signals: frozenset[str] | None = None,
             embedder=None, rrf_k: int = fusion.RRF_K, use_vectors: bool = True) -> Localization:
    """Files and functions where the fix for a report most likely goes: the learned ranker's when
    `ranker` is given, each function with the probability that the fix changes it
    (`function_scores`; files have none), else the fusion's, without scores (`signals` chooses its
    streams)."""
    if ranker is None:
        return fusion.localize(store, report, limit=limit, signals=signals, embedder=embedder, rrf_k=rrf_k)
    loc = ranking.localize(store, report, ranker, limit=limit, embedder=embedder, rrf_k=rrf_k,
                           use_vectors=use_vectors)
    return replace(loc, function_scores=function_probabilities(loc.function_scores))
