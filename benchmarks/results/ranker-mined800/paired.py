"""The same held-out queries under two training runs, query by query:

    python paired.py OLD/results.json[.gz] NEW/results.json [ROW ...]

ROW: rows of train_ranker.py's results (default "learned, grouped folds"). Per part (dev or mined
for grouped folds, the repository for leave-one-repository-out) and metric: the mean before and
after, how many queries got better and worse, and the two-sided sign test's p of that split.
"""
import gzip
import json
import sys
from math import comb

KEYS = ("file@1", "file@3", "file@5", "function@5", "function@10")


def load(path, row):
    data = json.load(gzip.open(path) if path.endswith(".gz") else open(path))
    return {r["instance_id"]: r for r in data[row]["instances"]}


def sign_p(better, worse):
    n = better + worse
    return min(1.0, 2 * sum(comb(n, i) for i in range(min(better, worse) + 1)) / 2 ** n) if n else 1.0


for row in sys.argv[3:] or ["learned, grouped folds"]:
    a, b = load(sys.argv[1], row), load(sys.argv[2], row)
    parts = {}
    for i in sorted(a.keys() & b.keys()):
        parts.setdefault(a[i].get("held_out", a[i]["repo"]), []).append(i)
    print(row, {part: len(ids) for part, ids in parts.items()})
    for part, common in sorted(parts.items()):
        line = []
        for k in KEYS:
            xs = [i for i in common if a[i]["metrics"].get(k) is not None]
            before = 100 * sum(a[i]["metrics"][k] for i in xs) / max(1, len(xs))
            after = 100 * sum(b[i]["metrics"][k] for i in xs) / max(1, len(xs))
            better = sum(1 for i in xs if b[i]["metrics"][k] and not a[i]["metrics"][k])
            worse = sum(1 for i in xs if a[i]["metrics"][k] and not b[i]["metrics"][k])
            line.append(f"{k} {before:.1f}->{after:.1f} (+{better}/-{worse}, p={sign_p(better, worse):.3f})")
        print(" ", part, len(common), "; ".join(line))
