"""Configurations of `benchmarks/localize.py` on the same queries, query by query:

    python paired.py RANKINGS.jsonl [RANKINGS.jsonl ...]

RANKINGS: the rankings.jsonl of localize.py runs (several runs' files are read together). A run
on an index with vectors is told apart by its `embed_s`: its `default` is named `default+vectors`.
For each pair below whose two configurations both ran: per metric the two means over the queries
both answered, how many queries got better and worse, and the two-sided sign test's p.
"""
import json
import sys
from math import comb

KEYS = ("file@1", "file@3", "file@5", "function@5", "function@10")
PAIRS = (("bm25", "default"), ("lexical-full", "default"), ("bm25", "lexical-full"), ("vector", "default+vectors"),
         ("default", "default+vectors"))


def sign_p(better, worse):
    n = better + worse
    return min(1.0, 2 * sum(comb(n, i) for i in range(min(better, worse) + 1)) / 2 ** n) if n else 1.0


runs: dict[str, dict[str, dict]] = {}
for path in sys.argv[1:]:
    for line in open(path):
        r = json.loads(line)
        if r.get("error"):
            continue
        config = r["config"]
        if config == "default" and r.get("embed_s") is not None:
            config = "default+vectors"
        runs.setdefault(config, {})[r["instance_id"]] = r

for a_name, b_name in PAIRS:
    if a_name not in runs or b_name not in runs:
        continue
    a, b = runs[a_name], runs[b_name]
    common = sorted(a.keys() & b.keys())
    print(f"{a_name} -> {b_name} ({len(common)} queries)")
    for k in KEYS:
        xs = [i for i in common if a[i]["metrics"].get(k) is not None]
        before = 100 * sum(a[i]["metrics"][k] for i in xs) / max(1, len(xs))
        after = 100 * sum(b[i]["metrics"][k] for i in xs) / max(1, len(xs))
        better = sum(1 for i in xs if b[i]["metrics"][k] and not a[i]["metrics"][k])
        worse = sum(1 for i in xs if a[i]["metrics"][k] and not b[i]["metrics"][k])
        print(f"  {k:12s} {before:5.1f} -> {after:5.1f}  better {better:3d}, worse {worse:3d}, p = {sign_p(better, worse):.3g}")
