"""Metrics of held-out scores (heldout_scores.py), as shipped and with a function's score raised by
its file's score (`score`: + v x the file's final score; `rank`: - v x log2(2 + the file's rank)).

    python blends.py OUT.pkl [--blends]
"""
import collections
import pickle
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/
from localize import instance_metrics  # noqa: E402

from nsccn.model import split_entity_id  # noqa: E402
from nsccn.ranking import order, with_function_evidence  # noqa: E402

KEYS = ("file@1", "file@3", "file@5", "function@5", "function@10")
recs = pickle.load(open(sys.argv[1], "rb"))


def evaluate(v=0.0, mode="score"):
    res = collections.defaultdict(lambda: collections.defaultdict(list))
    for r in recs:
        fs = with_function_evidence(r["files"], r["fs"], r["functions"], r["gs"], 0.3)
        gs = np.asarray(r["gs"])
        if v and len(gs):
            paths = [split_entity_id(x)[1] for x in r["functions"]]
            if mode == "score":
                best, low = dict(zip(r["files"], fs)), float(np.min(fs)) if len(fs) else 0.0
                gs = gs + v * np.array([best.get(p, low) for p in paths])
            else:
                rank = {r["files"][i]: n for n, i in enumerate(np.argsort(-fs, kind="stable"))}
                gs = gs - v * np.log2(2 + np.array([rank.get(p, len(rank)) for p in paths]))
        m = instance_metrics(r["gold_files"], r["gold_functions"], order(r["files"], fs, r["fusion_files"])[:50],
                             order(r["functions"], gs, r["fusion_functions"])[:50])
        for k in KEYS:
            if m[k] is not None:
                res[r["held_out"]][k].append(m[k])
    return " | ".join(f"{p} " + " / ".join(f"{100 * np.mean(res[p][k]):.1f}" for k in KEYS) for p in ("dev", "mined"))


print("as shipped     ", evaluate())
if "--blends" in sys.argv:
    for mode in ("score", "rank"):
        for v in (0.1, 0.2, 0.3, 0.5, 0.8):
            print(f"{mode} {v:<4}     ", evaluate(v, mode))
