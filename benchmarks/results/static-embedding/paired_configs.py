#!/usr/bin/env python
"""Two configurations of one `benchmarks/localize.py` rankings file, query by query.

    python benchmarks/results/static-embedding/paired_configs.py RANKINGS.jsonl --before default-lexical --after default

Per metric: the means over the queries both configurations answered, how many queries got
better and worse, and the two-sided sign test's p (`benchmarks/paired_sign.py`).
"""

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from paired_sign import KEYS, compare  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rankings", type=Path)
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    args = ap.parse_args()
    by: dict[str, dict[str, dict]] = {args.before: {}, args.after: {}}
    for line in args.rankings.read_text().splitlines():
        r = json.loads(line)
        if r["config"] in by and not r.get("error"):
            by[r["config"]][r["instance_id"]] = r
    ids = sorted(set(by[args.before]) & set(by[args.after]))
    print(f"{len(ids)} queries: {args.before} -> {args.after}\n")
    print("| metric | before | after | better | worse | p |\n|---|---|---|---|---|---|")
    for key in KEYS:
        b, a, up, down, p = compare(by[args.before], by[args.after], ids, key)
        print(f"| {key} | {b:.1f} | {a:.1f} | {up} | {down} | {p:.2g} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
