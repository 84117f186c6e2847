"""What embedding one query costs with the bundled model, by graph optimization level and threads.

For each setting: the session's load time, then wall and CPU time per query over the reports
(one `embed` call each, as a query is embedded), and the largest difference from the unoptimized
vectors; and the bulk rate over report chunks (batches of 32, as an index is embedded). Settings
run in interleaved rounds; the table gives each figure's median over the rounds.

    python benchmarks/query_embed.py --reports ../shared/bench/swebench-dev.jsonl --n 40 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import time
from pathlib import Path

import numpy as np


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reports", type=Path, required=True, help="JSONL with a problem_statement per line")
    ap.add_argument("--n", type=int, default=40, help="reports embedded one at a time per setting")
    ap.add_argument("--bulk", type=int, default=320, help="500-character chunks embedded in batches per setting")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()

    import onnxruntime as ort

    from nsccn.vectors.embed import _BundledOnnx, session_options

    statements = [json.loads(line)["problem_statement"] for line in args.reports.open()]
    reports = statements[: args.n]
    chunks = [s[i:i + 500] for s in statements for i in range(0, len(s), 500)][: args.bulk]
    levels = {"none": ort.GraphOptimizationLevel.ORT_DISABLE_ALL, "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
              "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
              "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL}
    backend = _BundledOnnx(1, optimize=False)  # the tokenizer and the reference session
    reference = backend.embed(reports)
    model = backend.source
    results: dict[tuple[str, int], list[tuple[float, ...]]] = {}
    for _ in range(args.rounds):
        for name, level in levels.items():
            for threads in (1, 2):
                so = session_options(threads, level)  # the product's options but these two
                started = time.perf_counter()
                backend.session = ort.InferenceSession(model, providers=["CPUExecutionProvider"], sess_options=so)
                load = time.perf_counter() - started
                backend.embed(reports[:2])  # first runs allocate
                started, cpu = time.perf_counter(), cpu_s()
                vectors = np.vstack([backend.embed([r]) for r in reports])
                wall_q, cpu_q = (time.perf_counter() - started) / len(reports), (cpu_s() - cpu) / len(reports)
                started, cpu = time.perf_counter(), cpu_s()
                backend.embed(chunks)
                bulk_rate, bulk_cpu = len(chunks) / (time.perf_counter() - started), (cpu_s() - cpu) / len(chunks)
                diff = float(np.abs(vectors - reference).max())
                results.setdefault((name, threads), []).append((load, wall_q, cpu_q, bulk_rate, bulk_cpu, diff))
    print(f"{len(reports)} reports one at a time, {len(chunks)} chunks in batches of 32; medians of {args.rounds} "
          "interleaved rounds\n")
    print("| level | threads | load ms | query wall ms | query CPU ms | bulk texts/s | bulk CPU ms/text "
          "| max diff from unoptimized |")
    print("|---|---|---|---|---|---|---|---|")
    for (name, threads), rows in results.items():
        m = [statistics.median(col) for col in zip(*rows)]
        print(f"| {name} | {threads} | {m[0] * 1000:.0f} | {m[1] * 1000:.1f} | {m[2] * 1000:.1f} | {m[3]:.0f} "
              f"| {m[4] * 1000:.1f} | {m[5]:.1e} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
