#!/usr/bin/env python
"""What the static vector stream's second stage and its files' context cost a query: the stream as
shipped (as the ranker reads it: without the candidates' names, `ranking.STREAM_NAMES`), with the names
read too (the stream `nsccn search` fuses, stop 68), with stop 66's (its first files not read whole: `semantic.EXPAND_FILES` 0), with stop 65's (100 deep,
without the files' best: `semantic.file_stage`), without the files' context (each entity's own cosine)
and without the second stage, rotated query by query on one index.

    python benchmarks/static_stage_cost.py --db INDEX --reports ../shared/bench/swebench-dev.jsonl --repo sympy/sympy [--n 40]

The stream is read as the learned ranker's features read it (`ranking.vector_ranks`: 400 deep, test
files left out); without the stage is `semantic.RERANK_DEPTH` 0 (cosine alone, files' context kept). The
first report is read once untimed (model load, vector matrix, the files' context). Prints the median
and mean milliseconds of each.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from nsccn import ranking  # noqa: E402
from nsccn.ranking import vector_ranks  # noqa: E402
from nsccn.store import Store  # noqa: E402
from nsccn.vectors import semantic  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--reports", type=Path, required=True)
    ap.add_argument("--repo", required=True)
    ap.add_argument("--n", type=int, default=40)
    args = ap.parse_args()
    reports = [json.loads(line) for line in args.reports.read_text().splitlines() if line.strip()]
    queries = [r["problem_statement"] for r in reports if r["repo"] == args.repo][: args.n]
    if not queries:
        ap.error(f"no report of {args.repo} in {args.reports}")
    kept = {name: getattr(semantic, name) for name in ("RERANK_DEPTH", "FILE_STAGE", "EXPAND_FILES", "_in_file_context")}
    arms = {  # how each arm sets the stream up
        "as shipped": lambda: None,
        "with the names": lambda: setattr(ranking, "STREAM_NAMES", True),
        "stop 66's stage": lambda: setattr(semantic, "EXPAND_FILES", 0),
        "stop 65's stage (100 deep)": lambda: (setattr(semantic, "RERANK_DEPTH", 100), setattr(semantic, "FILE_STAGE", 0.0),
                                               setattr(semantic, "EXPAND_FILES", 0)),
        "without the files' context": lambda: setattr(semantic, "_in_file_context", lambda *a: None),
        "cosine alone": lambda: setattr(semantic, "RERANK_DEPTH", 0),
    }
    times: dict[str, list[float]] = {arm: [] for arm in arms}
    with Store(args.db, readonly=True) as store:
        vector_ranks(store, queries[0])
        for i, query in enumerate(queries):
            names = list(arms)
            for arm in names[i % len(names):] + names[: i % len(names)]:  # rotated: no arm always goes first
                arms[arm]()
                t0 = time.perf_counter()
                vector_ranks(store, query)
                times[arm].append(time.perf_counter() - t0)
                for name, value in kept.items():
                    setattr(semantic, name, value)
                ranking.STREAM_NAMES = False
    for arm, ts in times.items():
        print(f"{arm:>26}: p50 {1000 * statistics.median(ts):.1f} ms, mean {1000 * statistics.mean(ts):.1f} ms "
              f"({len(ts)} queries)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
