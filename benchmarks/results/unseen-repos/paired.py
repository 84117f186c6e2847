"""Configurations of `benchmarks/localize.py` on the same queries, query by query:

    python paired.py RANKINGS.jsonl [RANKINGS.jsonl ...]

RANKINGS: the rankings.jsonl of localize.py runs (several runs' files are read together). A run
on an index with vectors is told apart by its `embed_s`: its `default` is named `default+vectors`.
For each pair below whose two configurations both ran: per metric the two means over the queries
both answered, how many queries got better and worse, and the two-sided sign test's p.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/
from paired_sign import KEYS, compare  # noqa: E402

PAIRS = (("bm25", "default"), ("lexical-full", "default"), ("bm25", "lexical-full"), ("vector", "default+vectors"),
         ("default", "default+vectors"))


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
        before, after, better, worse, p = compare(a, b, common, k)
        print(f"  {k:12s} {before:5.1f} -> {after:5.1f}  better {better:3d}, worse {worse:3d}, p = {p:.3g}")
