#!/usr/bin/env python
"""Query cost of the learned ranker: localize as `nsccn localize` runs it, split into its steps.

    python benchmarks/ranker_latency.py --db INDEX --reports ../shared/bench/swebench-dev.jsonl
        [--repo sympy/sympy] [--n 100] [--model PATH] [--cold] [--no-vectors]

Each report is localized once untimed (warm-up: model load, vector matrix, tokenizer), then each
of the first N is timed step by step: the lexical fusion, the vector stream (when the index has
vectors), candidates and features, the trees. Also the model file's load time (cold, in this
process) and size.

Queries keep what they read of the index (full-text postings, row lengths; `nsccn.store.bm25`)
until it changes, so a long-lived server's later queries read less. `--cold` drops those caches
before every report: each is timed as the first query of a fresh process (`nsccn localize`).
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
from nsccn.ranking.features import LEXICAL_SIGNALS, candidates  # noqa: E402
from nsccn.query.fusion import fusion_localize  # noqa: E402
from nsccn.store import Store  # noqa: E402


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--reports", type=Path, required=True)
    ap.add_argument("--repo", help="only reports of this repository")
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--model", type=Path, default=ranking.SHIPPED_MODEL)
    ap.add_argument("--cold", action="store_true", help="drop the query caches before every report")
    ap.add_argument("--no-vectors", action="store_true",
                    help="leave the index's vectors unread (the ranker without them: the cost the vectors add)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    ranker = ranking.load_ranker(args.model)
    load_ms = 1000 * (time.perf_counter() - t0)
    reports = [json.loads(line) for line in open(args.reports) if line.strip()]
    reports = [r["problem_statement"] for r in reports if not args.repo or r["repo"] == args.repo][: args.n]
    steps: dict[str, list[float]] = {"fusion": [], "vectors": [], "features": [], "trees": [], "total": []}
    with Store(args.db, readonly=True) as store:
        has_vectors = ranking._has_vectors(store) and not args.no_vectors
        ranking.localize(store, "warm-up: load the model and the vectors", ranker=ranker)
        for report in reports:
            if args.cold:
                store.drop_query_caches()
            t = time.perf_counter()
            fusion = fusion_localize(store, report, limit=ranking.CANDIDATE_DEPTH, signals=LEXICAL_SIGNALS)
            t1 = time.perf_counter()
            vector = ranking.vector_ranks(store, report) if has_vectors else None
            t2 = time.perf_counter()
            cands = candidates(store, report, fusion, vector)
            t3 = time.perf_counter()
            ranker.score(cands)
            t4 = time.perf_counter()
            for k, v in zip(steps, (t1 - t, t2 - t1, t3 - t2, t4 - t3, t4 - t)):
                steps[k].append(1000 * v)
    print(f"model {args.model} ({args.model.stat().st_size / 1e6:.2f} MB): load {load_ms:.1f} ms")
    print(f"{len(reports)} reports on {args.db} (vectors: {has_vectors}; query caches {'dropped before each' if args.cold else 'kept'})")
    print("| step | p50 ms | p90 ms | mean ms |\n|---|---|---|---|")
    for k, v in steps.items():
        print(f"| {k} | {statistics.median(v):.1f} | {pct(v, 0.9):.1f} | {statistics.fmean(v):.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
