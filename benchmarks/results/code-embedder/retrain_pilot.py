"""Pilot: does a ranker that learns from the tuned model's vector ranks gain more than one that
learns from the plain model's? Four grouped folds over the twelve held-out repositories' feature
records (three repositories a fold; trained on the other nine's 1,080 queries, scored on the
fold's): the same queries featured three ways, without vectors, with the plain model's vectors,
with the tuned model's. No record of a repository the embedder was tuned on is used.

    python retrain_pilot.py LEX_GLOB PLAIN_VEC_GLOB TUNED_VEC_GLOB

(`benchmarks/localize.py --features` records: `--configs default` on indexes without vectors,
`--configs vector,default` on indexes embedded by each model.) Output: retrain-pilot.txt.
"""
import glob
import json
import sys
from pathlib import Path

import lightgbm as lgb
import numpy as np

_ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(_ROOT / "benchmarks")); sys.path.insert(0, str(_ROOT))
from localize import instance_metrics  # noqa: E402
from paired_sign import KEYS, compare  # noqa: E402

from nsccn.ranking import FUNCTION_EVIDENCE, order, with_function_evidence  # noqa: E402
from nsccn.ranking.features import FILE_FEATURES, FUNCTION_FEATURES  # noqa: E402
from nsccn.ranking.train import PARAMS, ROUNDS  # noqa: E402


def rows(r, level):
    width = len(FILE_FEATURES if level == "file" else FUNCTION_FEATURES)
    return np.asarray(r[f"{level}_rows"], float).reshape(-1, width)


def train(rs, level):
    keep = [r for r in rs if np.asarray(r[f"{level}_labels"]).any()]
    d = lgb.Dataset(np.vstack([rows(r, level) for r in keep]), np.concatenate([r[f"{level}_labels"] for r in keep]),
                    group=[len(r[f"{level}_labels"]) for r in keep])
    return lgb.train(dict(PARAMS, seed=0, verbose=-1), d, num_boost_round=ROUNDS)


def grouped(recs):
    repos = sorted({r["repo"] for r in recs})
    out = {}
    for fold in (repos[i::4] for i in range(4)):
        tr = [r for r in recs if r["repo"] not in fold]
        mf, mg = train(tr, "file"), train(tr, "function")
        for r in (r for r in recs if r["repo"] in fold):
            gs = mg.predict(rows(r, "function")) if r["functions"] else np.zeros(0)
            fs = mf.predict(rows(r, "file")) if r["files"] else np.zeros(0)
            fs = with_function_evidence(r["files"], fs, r["functions"], gs, FUNCTION_EVIDENCE)
            out[r["instance_id"]] = instance_metrics(r["gold_files"], r["gold_functions"],
                                                     order(r["files"], fs, r["fusion_files"])[:50],
                                                     order(r["functions"], gs, r["fusion_functions"])[:50])
    return out


def main():
    names = ("no vectors", "plain MiniLM vectors", "tuned vectors")
    results = [grouped([json.loads(line) for f in sorted(glob.glob(g)) for line in open(f)]) for g in sys.argv[1:4]]
    ids = sorted(set.intersection(*(set(r) for r in results)))
    records = [{i: {"metrics": res[i]} for i in ids} for res in results]
    print(f"{len(ids)} queries, four grouped folds over the twelve held-out repositories")
    for name, res in zip(names, results):
        print(f"{name:22s}", " ".join(f"{k} {100 * np.mean([res[i][k] for i in ids if res[i][k] is not None]):5.1f}" for k in KEYS))
    for a, b in ((1, 2), (0, 2)):
        cells = (compare(records[a], records[b], ids, k) for k in KEYS)
        print(f"{names[a]} -> {names[b]}:", "; ".join(f"{k} +{better}/-{worse} p {p:.2g}"
                                                       for k, (_, _, better, worse, p) in zip(KEYS, cells)))


if __name__ == "__main__":
    main()
