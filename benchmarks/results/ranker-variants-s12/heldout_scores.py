"""Held-out scores of every query (grouped folds, as `benchmarks/train_ranker.py --grouped`), kept
raw so that ways of combining them can be compared offline on the same models.

    PARAMS='{"objective": "rank_xendcg"}' python heldout_scores.py DEV.jsonl MINED.jsonl OUT.pkl
    LABELS=samefile python heldout_scores.py DEV.jsonl MINED.jsonl OUT.pkl

PARAMS: LightGBM parameters over `nsccn.ranking.train.PARAMS` (none: the shipped training).
LABELS=samefile: graded function labels in training (a gold function 2, another function of a
gold file 1, the rest 0; thirteenth stop) instead of gold 1, the rest 0.
Folds: each dev repository one fold, the mined repositories six folds (every sixth by name).
"""
import json
import os
import pickle
import sys
from pathlib import Path

import numpy as np

import nsccn.ranking.train as train
from nsccn.model import split_entity_id
from nsccn.ranking.features import FILE_FEATURES, FUNCTION_FEATURES

train.PARAMS.update(json.loads(os.environ.get("PARAMS", "{}")))
dev, mined = train.load_records([Path(sys.argv[1])]), train.load_records([Path(sys.argv[2])])


def relabel(r):
    if os.environ.get("LABELS") != "samefile":
        return r
    gold_files = set(r["gold_files"])
    return dict(r, function_labels=[2.0 if label else float(split_entity_id(f)[1] in gold_files)
                                    for f, label in zip(r["functions"], r["function_labels"])])


repos = sorted({r["repo"] for r in mined})
folds = [[r for r in dev if r["repo"] == repo] for repo in sorted({r["repo"] for r in dev})]
n_dev = len(folds)
folds += [[r for r in mined if r["repo"] in set(repos[g::6])] for g in range(6)]
out = []
for i, test in enumerate(folds):
    ranker = train.fit([relabel(r) for j, fold in enumerate(folds) if j != i for r in fold], seed=0)
    for r in test:
        fx = np.asarray(r["file_rows"], dtype=np.float64).reshape(-1, len(FILE_FEATURES))
        gx = np.asarray(r["function_rows"], dtype=np.float64).reshape(-1, len(FUNCTION_FEATURES))
        out.append(dict({k: r[k] for k in ("instance_id", "repo", "gold_files", "gold_functions", "files",
                                           "functions", "fusion_files", "fusion_functions")},
                        held_out="dev" if i < n_dev else "mined",
                        fs=ranker.files.predict(fx) if len(fx) else np.zeros(0),
                        gs=ranker.functions.predict(gx) if len(gx) else np.zeros(0)))
    print("fold", i, len(test), flush=True)
pickle.dump(out, open(sys.argv[3], "wb"))
