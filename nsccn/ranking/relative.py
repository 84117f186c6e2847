"""Query-relative features: where a candidate stands among the same query's other candidates.

A feature's raw value means different things in different repositories and for different
queries: a whole-file BM25 of 40 is the best match of a long report in a large repository and a
weak one of another; a PageRank of 0.002 is central in one repository and not in the next. Trees
split on raw values learn the training repositories' scales. Beside a column's raw value, a
derived column gives its **rank** among the query's candidates (1 = the largest; ties share the
best rank) and its **share** of the query's largest value (v / max; 0 when no candidate has a
positive value). Missing values stay missing.

Derived columns are named `FEATURE@rank` and `FEATURE@share`. A model lists the ones it was
trained with in its header, so they are computed from its candidate rows the same way at training
and at query time (`nsccn.ranking.Ranker.score`, `nsccn.ranking.train`); nothing is stored in the
training records.
"""

from __future__ import annotations

import numpy as np

KINDS = ("rank", "share")

# The raw columns whose scale varies by repository and by query: absolute scores, sizes, counts,
# centrality and history (not ranks, which are query-relative already, nor 0/1 flags).
FILE_COLUMNS = (
    "file_bm25_score", "pagerank_max", "pagerank_sum_log", "idents_defined_weighted", "n_entities_log", "lines_log",
    "hist_commits", "hist_fixes", "hist_similar", "hist_title_similar", "file_coverage", "title_file_coverage",
    "code_file_coverage", "path_parts_overlap", "raises_named",
)
FUNCTION_COLUMNS = (
    "bm25_name", "bm25_path", "bm25_signature", "bm25_docstring", "bm25_body", "pagerank", "calls_in_log",
    "calls_out_log", "lines_log", "hist_fn_commits", "hist_fn_fixes", "hist_fn_similar", "hist_fn_title_similar",
    "hist_file_similar", "coverage", "title_coverage", "code_coverage", "name_parts_overlap", "raises_named",
)


def names(columns: tuple[str, ...] | list[str]) -> list[str]:
    """The derived columns' names for these raw columns, in the order `extend` appends them."""
    return [f"{c}@{k}" for c in columns for k in KINDS]


def base_of(name: str) -> str:
    """The raw feature a (possibly derived) column is made from."""
    return name.split("@", 1)[0]


def check(derived: list[str], base: list[str]) -> None:
    """Raise ValueError unless every derived name is one this module computes from a raw column of `base`."""
    for name in derived:
        column, _, kind = name.partition("@")
        if kind not in KINDS or column not in base:
            raise ValueError(f"unknown derived feature {name!r}")


def extend(x: np.ndarray, base: list[str], derived: list[str]) -> np.ndarray:
    """One query's candidate rows `x` (columns `base`) with the `derived` columns appended."""
    if not derived:
        return x
    out = np.empty((x.shape[0], len(derived)), dtype=np.float64)
    index = {n: i for i, n in enumerate(base)}
    for j, name in enumerate(derived):
        column, _, kind = name.partition("@")
        v = x[:, index[column]]
        if kind == "rank":
            out[:, j] = _rank(v)
        else:
            top = np.nanmax(v) if x.shape[0] and not np.isnan(v).all() else np.nan
            out[:, j] = v / top if top > 0 else np.where(np.isnan(v), np.nan, 0.0)
    return np.hstack([x, out])


def _rank(v: np.ndarray) -> np.ndarray:
    """1 + how many of the query's values are larger (ties share the best rank); NaN stays NaN."""
    present = ~np.isnan(v)
    values = np.sort(v[present])[::-1]
    out = np.full(v.shape, np.nan)
    # The number of values strictly larger than each: the left insertion point in the descending order.
    out[present] = 1 + np.searchsorted(-values, -v[present], side="left")
    return out
