"""The same held-out queries under two training runs, query by query:

    python paired.py OLD/results.json[.gz] NEW/results.json [ROW ...]

ROW: rows of train_ranker.py's results (default "learned, grouped folds"). Per part (dev or mined
for grouped folds, the repository for leave-one-repository-out) and metric: the mean before and
after, how many queries got better and worse, and the two-sided sign test's p of that split.
"""
import gzip
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/
from paired_sign import KEYS, compare  # noqa: E402


def load(path, row):
    data = json.load(gzip.open(path) if path.endswith(".gz") else open(path))
    return {r["instance_id"]: r for r in data[row]["instances"]}


for row in sys.argv[3:] or ["learned, grouped folds"]:
    a, b = load(sys.argv[1], row), load(sys.argv[2], row)
    parts = {}
    for i in sorted(a.keys() & b.keys()):
        parts.setdefault(a[i].get("held_out", a[i]["repo"]), []).append(i)
    print(row, {part: len(ids) for part, ids in parts.items()})
    for part, common in sorted(parts.items()):
        line = []
        for k in KEYS:
            before, after, better, worse, p = compare(a, b, common, k)
            line.append(f"{k} {before:.1f}->{after:.1f} (+{better}/-{worse}, p={p:.3f})")
        print(" ", part, len(common), "; ".join(line))
