"""Training the learned ranker: LightGBM LambdaMART on (query, candidates, labels) records.

A record is one query's candidates as `benchmarks/localize.py --features` writes them (or
`nsccn train-ranker` builds them from the repository's own history): `file_rows`/`file_labels`,
`function_rows`/`function_labels`, and the fusion's own order (`fusion_files`,
`fusion_functions`) that follows the candidates in an answer. Deterministic for a given seed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from nsccn.model import split_entity_id
from nsccn.ranking import Ranker, Trees, _mask, order
from nsccn.ranking.features import FEATURE_VERSION, FILE_FEATURES, FUNCTION_FEATURES, Candidates

PARAMS = {
    "objective": "lambdarank",
    "metric": "ndcg",
    "eval_at": [1, 5, 10],
    "lambdarank_truncation_level": 20,
    "num_leaves": 15,
    "min_data_in_leaf": 20,
    "learning_rate": 0.05,
    "feature_fraction": 0.8,
    "bagging_fraction": 0.8,
    "bagging_freq": 1,
    "lambda_l2": 1.0,
    "verbosity": -1,
    "deterministic": True,
    "force_row_wise": True,
    "num_threads": 1,
}
ROUNDS = 300
# Evidence whose direction should hold in every repository: a better rank, more of the query
# matched or mentioned, more similar past fixes (`fit(monotone=True)`; measured, not the default).
_BETTER_LOWER = ("_rank",)
_BETTER_HIGHER = ("_score", "_score_rel", "bm25_rel", "coverage", "_mentioned", "_overlap", "_hits", "_similar",
                  "raises_named", "frames_in_file", "file_frames", "innermost_frame", "idents_defined",
                  "idents_defined_weighted", "name_identifier", "qualname_in_query", "name_called", "name_backticked",
                  "name_in_frame", "name_word", "name_in_title", "stem_in_terms")


def monotone_constraints(names: Sequence[str]) -> list[int]:
    """LightGBM's constraint of each feature: +1 where more can only help, -1 only hurt, 0 either."""
    out = []
    for name in names:
        if name.startswith("q_") or "prior" in name:  # the query itself; PageRank's prior says nothing of fit
            out.append(0)
        elif name.endswith(_BETTER_LOWER):
            out.append(-1)
        else:
            out.append(int(name.endswith(_BETTER_HIGHER) or name.startswith("bm25_")))
    return out


def load_records(paths: Iterable[Path]) -> list[dict]:
    out = []
    for path in paths:
        with open(path) as fh:
            out += [json.loads(line) for line in fh if line.strip()]
    return out


def restrict_expansion(record: dict, expand: int, per_file: int) -> dict:
    """`record` as `features.candidates(expand=expand, per_file=per_file)` would have made it, from
    a record featured with at least that much expansion: the functions that joined as a file's
    are kept only for the fusion's and whole-file BM25's best `expand` files, `per_file` each.
    A function's features do not depend on the other candidates, so the rows left are exact."""
    places = record.get("expanded") or []
    if not places:
        return record
    first = len(record["functions"]) - len(places)
    fusion_rank, bm25_rank = FILE_FEATURES.index("fusion_rank"), FILE_FEATURES.index("file_bm25_rank")
    best = {p for p, row in zip(record["files"], record["file_rows"])
            if row[fusion_rank] <= expand or row[bm25_rank] <= expand}
    keep = list(range(first)) + [first + i for i, place in enumerate(places) if place < per_file
                                 and split_entity_id(record["functions"][first + i])[1] in best]
    return dict(record, functions=[record["functions"][i] for i in keep],
                function_rows=[record["function_rows"][i] for i in keep],
                function_labels=[record["function_labels"][i] for i in keep],
                expanded=[places[i - first] for i in keep[first:]])


def training_matrix(records: Sequence[dict], level: str, names: list[str], disabled: frozenset[str]):
    """The rows, labels, query sizes and row weights of every query with a correct candidate (a
    row's weight is its record's `weight`, 1 if none: LightGBM weighs a query by its rows' mean)."""
    xs, ys, groups, weights = [], [], [], []
    for r in records:
        rows, labels = r[f"{level}_rows"], r[f"{level}_labels"]
        if not len(rows) or not any(labels):  # nothing to learn from a query whose answer is not a candidate
            continue
        xs.append(np.asarray(rows, dtype=np.float64).reshape(-1, len(names)))
        ys.append(np.asarray(labels, dtype=np.float64))
        groups.append(len(rows))
        weights.append(np.full(len(rows), float(r.get("weight", 1.0))))
    if not xs:
        raise ValueError(f"no {level} training data: no query has a correct candidate")
    return _mask(np.vstack(xs), names, disabled), np.concatenate(ys), groups, np.concatenate(weights)


def _fit_level(records, level, names, disabled, seed, rounds, bag: int = 1, monotone: bool = False) -> Trees:
    """`bag` > 1: that many models of seeds seed, seed+1, ... (other row and column samples) as one
    set of trees scoring their mean."""
    import lightgbm as lgb  # training only: queries evaluate the trees with numpy

    x, y, groups, weights = training_matrix(records, level, names, disabled)
    data = lgb.Dataset(x, y, group=groups, weight=None if (weights == 1.0).all() else weights, feature_name=names,
                       free_raw_data=bag == 1)
    out = None
    for s in range(seed, seed + bag):
        params = dict(PARAMS, seed=s, bagging_seed=s, feature_fraction_seed=s, data_random_seed=seed)
        if monotone:
            params["monotone_constraints"] = monotone_constraints(names)
        trees = Trees.from_lightgbm_dump(lgb.train(params, data, num_boost_round=rounds).dump_model())
        if bag > 1:
            trees.value = trees.value / bag
        out = trees if out is None else out.beside(trees)  # a bag's models side by side
    return out


def fit(records: Sequence[dict], disabled: frozenset[str] = frozenset(), seed: int = 0, rounds: int = ROUNDS,
        info: dict | None = None, bag: int = 1, monotone: bool = False) -> Ranker:
    """One model for files and one for functions, trained on `records` (a record's `weight`, if
    any, is its query's weight). `bag` and `monotone`: measured, not shipped (docs/learned-ranking.md)."""
    files = _fit_level(records, "file", FILE_FEATURES, disabled, seed, rounds, bag, monotone)
    functions = _fit_level(records, "function", FUNCTION_FEATURES, disabled, seed, rounds, bag, monotone)
    meta = {"feature_version": FEATURE_VERSION, "queries": len(records), "seed": seed, "rounds": rounds,
            "repos": sorted({r["repo"] for r in records})} | ({"bag": bag} if bag > 1 else {})
    return Ranker(files, functions, dict(meta, **(info or {})), disabled=disabled)


def rerank(ranker: Ranker, record: dict) -> tuple[list[str], list[str]]:
    """A recorded query's files and functions in the model's order (then the fusion's rest)."""
    cands = Candidates(record["files"], record["file_rows"], record["functions"], record["function_rows"])
    file_scores, fn_scores = ranker.score(cands)
    return (order(record["files"], file_scores, record["fusion_files"]),
            order(record["functions"], fn_scores, record["fusion_functions"]))
