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
from nsccn.ranking import Ranker, Trees, file_matrix, function_matrix, order, relative
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
# The query-relative columns a model is trained with (`nsccn.ranking.relative`).
RELATIVE = (tuple(relative.names(relative.FILE_COLUMNS)), tuple(relative.names(relative.FUNCTION_COLUMNS)))
NO_RELATIVE: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())


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


def _matrix(records: Sequence[dict], level: str, disabled: frozenset[str], derived: Sequence[str] = ()):
    """The rows of every query with a correct candidate, as a model with these groups left out and
    these derived columns reads them (each query's derived columns from its own candidates)."""
    make = file_matrix if level == "file" else function_matrix
    xs, ys, groups = [], [], []
    for r in records:
        rows, labels = r[f"{level}_rows"], r[f"{level}_labels"]
        if not len(rows) or not any(labels):  # nothing to learn from a query whose answer is not a candidate
            continue
        xs.append(make(rows, disabled, derived))
        ys.append(np.asarray(labels, dtype=np.float64))
        groups.append(len(rows))
    if not xs:
        raise ValueError(f"no {level} training data: no query has a correct candidate")
    return np.vstack(xs), np.concatenate(ys), groups


def _fit_level(records, level, disabled, derived, seed, rounds, bag: int = 1) -> Trees:
    """`bag` models trained with seeds seed, seed+1, ... (other row and column samples), averaged:
    one set of trees whose score is their mean."""
    import lightgbm as lgb  # training only: queries evaluate the trees with numpy

    from nsccn.ranking.adapt import concat

    names = (FILE_FEATURES if level == "file" else FUNCTION_FEATURES) + list(derived)
    x, y, groups = _matrix(records, level, disabled, derived)
    data = lgb.Dataset(x, y, group=groups, feature_name=[n.replace("@", "__") for n in names], free_raw_data=False)
    out = None
    for s in range(seed, seed + bag):
        params = dict(PARAMS, seed=s, bagging_seed=s, feature_fraction_seed=s, data_random_seed=seed)
        trees = Trees.from_lightgbm_dump(lgb.train(params, data, num_boost_round=rounds).dump_model())
        trees.value = trees.value / bag
        out = trees if out is None else concat(out, trees)
    return out


def fit(records: Sequence[dict], disabled: frozenset[str] = frozenset(), seed: int = 0, rounds: int = ROUNDS,
        info: dict | None = None, derived: tuple[Sequence[str], Sequence[str]] = RELATIVE, bag: int = 1) -> Ranker:
    """One model for files and one for functions, trained on `records`; `derived`: the
    query-relative columns of each (`nsccn.ranking.relative`); `bag`: that many seeds averaged."""
    files = _fit_level(records, "file", disabled, derived[0], seed, rounds, bag)
    functions = _fit_level(records, "function", disabled, derived[1], seed, rounds, bag)
    meta = {"feature_version": FEATURE_VERSION, "queries": len(records), "seed": seed, "rounds": rounds,
            "repos": sorted({r["repo"] for r in records})} | ({"bag": bag} if bag > 1 else {})
    return Ranker(files, functions, dict(meta, **(info or {})), disabled=disabled,
                  file_derived=tuple(derived[0]), function_derived=tuple(derived[1]))


def rerank(ranker: Ranker, record: dict) -> tuple[list[str], list[str]]:
    """A recorded query's files and functions in the model's order (then the fusion's rest)."""
    cands = Candidates(record["files"], record["file_rows"], record["functions"], record["function_rows"])
    file_scores, fn_scores = ranker.score(cands)
    return (order(record["files"], file_scores, record["fusion_files"]),
            order(record["functions"], fn_scores, record["fusion_functions"]))
