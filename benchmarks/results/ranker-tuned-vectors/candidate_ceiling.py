#!/usr/bin/env python
"""How much of function@10 the ranker can reach: the share of queries whose gold functions (the
first ten, as function@10 counts them) are all among the candidates it ranks, and whose gold
files are all among the file candidates.

    python candidate_ceiling.py NAME='GLOB' [NAME='GLOB' ...]

Records are `benchmarks/localize.py --features` output.
"""

from __future__ import annotations

import glob
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from localize import all_in_top_k, dedup, ranked_locs  # noqa: E402


def ceiling(paths: list[str]) -> dict[str, float]:
    n = every = some = files = 0
    for path in paths:
        with open(path) as fh:
            for line in fh:
                r = json.loads(line)
                gold = dedup(r["gold_functions"])[:10]
                if not gold:
                    continue
                n += 1
                locs = ranked_locs(r["functions"])
                every += all_in_top_k(gold, locs, len(locs))
                some += any(g in set(locs) for g in gold)
                files += all_in_top_k(dedup(r["gold_files"]), dedup(r["files"]), len(r["files"]))
    return {"queries": n, "all gold functions": 100 * every / max(1, n),
            "some gold function": 100 * some / max(1, n), "all gold files": 100 * files / max(1, n)}


def main(argv: list[str]) -> int:
    print("| records | queries with gold functions | all gold functions among candidates "
          "| some gold function | all gold files among file candidates |\n|---|---|---|---|---|")
    for arg in argv:
        name, pattern = arg.split("=", 1)
        c = ceiling(sorted(glob.glob(pattern)))
        print(f"| {name} | {c['queries']} | {c['all gold functions']:.1f} | {c['some gold function']:.1f} "
              f"| {c['all gold files']:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
