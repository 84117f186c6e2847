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


def _matrix(records: Sequence[dict], level: str, names: list[str], disabled: frozenset[str]):
    xs, ys, groups = [], [], []
    for r in records:
        rows, labels = r[f"{level}_rows"], r[f"{level}_labels"]
        if not len(rows) or not any(labels):  # nothing to learn from a query whose answer is not a candidate
            continue
        xs.append(np.asarray(rows, dtype=np.float64).reshape(-1, len(names)))
        ys.append(np.asarray(labels, dtype=np.float64))
        groups.append(len(rows))
    if not xs:
        raise ValueError(f"no {level} training data: no query has a correct candidate")
    return _mask(np.vstack(xs), names, disabled), np.concatenate(ys), groups


def _fit_level(records, level, names, disabled, seed, rounds, weights=None) -> Trees:
    import lightgbm as lgb  # training only: queries evaluate the trees with numpy

    x, y, groups = _matrix(records, level, names, disabled)
    params = dict(PARAMS, seed=seed, bagging_seed=seed, feature_fraction_seed=seed, data_random_seed=seed)
    data = lgb.Dataset(x, y, group=groups, feature_name=names, free_raw_data=True)
    booster = lgb.train(params, data, num_boost_round=rounds)
    return Trees.from_lightgbm_dump(booster.dump_model())


def fit(records: Sequence[dict], disabled: frozenset[str] = frozenset(), seed: int = 0, rounds: int = ROUNDS,
        info: dict | None = None) -> Ranker:
    """One model for files and one for functions, trained on `records`."""
    files = _fit_level(records, "file", FILE_FEATURES, disabled, seed, rounds)
    functions = _fit_level(records, "function", FUNCTION_FEATURES, disabled, seed, rounds)
    meta = {"feature_version": FEATURE_VERSION, "queries": len(records), "seed": seed, "rounds": rounds,
            "repos": sorted({r["repo"] for r in records})}
    return Ranker(files, functions, dict(meta, **(info or {})), disabled=disabled)


def rerank(ranker: Ranker, record: dict) -> tuple[list[str], list[str]]:
    """A recorded query's files and functions in the model's order (then the fusion's rest)."""
    cands = Candidates(record["files"], record["file_rows"], record["functions"], record["function_rows"])
    file_scores, fn_scores = ranker.score(cands)
    return (order(record["files"], file_scores, record["fusion_files"]),
            order(record["functions"], fn_scores, record["fusion_functions"]))
