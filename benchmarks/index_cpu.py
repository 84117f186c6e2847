#!/usr/bin/env python
"""CPU of a cold `nsccn index`: this checkout (A) against another (B), interleaved A B A B.

    python benchmarks/index_cpu.py TREE --vs OTHER_PYTHON [--python A_PYTHON] [--rounds 3]
        [--mode in-process|in-process-pool|pipeline ...] [--a-args=ARGS] [--b-args=ARGS] [--out DIR --label NAME]

The cost of vectors: `--vs .venv/bin/python --b-args=--no-embed` (one checkout, its default index
against one without vectors).

Each run is a fresh process on a fresh, empty index directory (`NSCCN_INDEX_DIR`), so both sides
parse, resolve and rank the whole tree. `in-process` is `nsccn index TREE --in-process --workers
1` (the library in one process: its CPU is the work itself); `in-process-pool` the library with
a pool of 2 parser processes (`--workers 2`); `pipeline` is `nsccn index TREE --pipeline` (the
actors, two parsers). CPU is user + sys of the whole process tree (getrusage of
the waited-for children, `benchmarks/proctree.py`); the ratios A/B are taken round by round, so a
shared machine's drift cancels out, and the load average is reported with them.

--vs: the interpreter of another checkout's virtual environment (its nsccn, e.g. main's).
Both sides write the same schema; compare their indexes with `benchmarks/index_identity.py`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from proctree import run_tree  # noqa: E402

MODES = {"in-process": ["--in-process", "--workers", "1"], "in-process-pool": ["--in-process", "--workers", "2"],
         "pipeline": ["--pipeline"]}


def command(python: str, tree: Path, mode: str, extra: str = "") -> list[str]:
    # -P: the working directory (maybe another checkout) never shadows the interpreter's own nsccn
    return [python, "-P", "-m", "nsccn.cli", "index", str(tree), *MODES[mode], *extra.split()]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("tree")
    ap.add_argument("--vs", metavar="OTHER_PYTHON", required=True, help="another checkout's interpreter (side B)")
    ap.add_argument("--python", default=sys.executable, help="side A's interpreter (default: this one)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--mode", nargs="+", default=["in-process"], choices=tuple(MODES))
    ap.add_argument("--out", help="a directory for LABEL.json and LABEL.md")
    ap.add_argument("--label", default="index_cpu")
    ap.add_argument("--a-args", default="", help="more arguments of side A's `nsccn index` (e.g. --no-embed)")
    ap.add_argument("--b-args", default="", help="more arguments of side B's `nsccn index`")
    args = ap.parse_args()
    extra = {"A": args.a_args, "B": args.b_args}
    tree = Path(args.tree).resolve()
    sides = {"A": args.python, "B": args.vs}
    runs: list[dict] = []
    work = Path(tempfile.mkdtemp(prefix="nsccn-index-cpu-"))
    try:
        for rnd in range(args.rounds):
            for mode in args.mode:
                for side, python in sides.items():
                    ix = work / f"{side}-{mode}-{rnd}"
                    load = os.getloadavg()[0]
                    r = run_tree(command(python, tree, mode, extra[side]), env={**os.environ, "NSCCN_INDEX_DIR": str(ix)})
                    if r.returncode != 0:
                        raise SystemExit(f"side {side} failed: {r.stderr.strip().splitlines()[-1:]}")
                    runs.append({"round": rnd, "mode": mode, "side": side, "cpu_s": round(r.cpu_s, 2),
                                 "wall_s": round(r.wall_s, 2), "load_before": round(load, 1),
                                 "peak_rss_sum_mb": round(r.peak_rss_sum_mb, 1),
                                 "peak_rss_mb": {k: round(v, 1) for k, v in r.peak_rss_by_process_mb.items()},
                                 "peak_sum_parts_mb": {k: round(v, 1) for k, v in r.peak_rss_parts_mb.items()}})
                    print(f"round {rnd} {mode:10} {side}: cpu {r.cpu_s:6.2f} s  wall {r.wall_s:6.2f} s  load {load:.1f}"
                          f"  peak sum {r.peak_rss_sum_mb:.0f} MB  {_peaks(r.peak_rss_by_process_mb)}"
                          f"  (at the peak: {_peaks(r.peak_rss_parts_mb, 8)})", flush=True)
                    shutil.rmtree(ix, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    lines = [f"# Cold `nsccn index` CPU, A ({sides['A']} {extra['A']}) vs B ({sides['B']} {extra['B']}), interleaved", "",
             f"{tree}, {args.rounds} rounds; load average {min(r['load_before'] for r in runs)}"
             f"-{max(r['load_before'] for r in runs)} before the runs", "",
             "| mode | A CPU s (median) | B CPU s (median) | A/B CPU, median (min-max) | A wall s | B wall s |"
             " A/B wall, median (min-max) | A peak sum MB | B peak sum MB | A largest MB | B largest MB |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for mode in args.mode:
        a = [r for r in runs if r["mode"] == mode and r["side"] == "A"]
        b = [r for r in runs if r["mode"] == mode and r["side"] == "B"]
        ratios = [x["cpu_s"] / y["cpu_s"] for x, y in zip(a, b)]
        walls = [x["wall_s"] / y["wall_s"] for x, y in zip(a, b)]
        med = statistics.median
        lines.append(f"| {mode} | {med(r['cpu_s'] for r in a):.2f} | {med(r['cpu_s'] for r in b):.2f} | "
                     f"{med(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f}) | "
                     f"{med(r['wall_s'] for r in a):.2f} | {med(r['wall_s'] for r in b):.2f} | "
                     f"{med(walls):.3f} ({min(walls):.3f}-{max(walls):.3f}) | "
                     f"{med(r['peak_rss_sum_mb'] for r in a):.0f} | {med(r['peak_rss_sum_mb'] for r in b):.0f} | "
                     f"{_peaks(_max_peaks(a))} | {_peaks(_max_peaks(b))} |")
    print("\n".join(lines))
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{args.label}.json").write_text(json.dumps({"tree": str(tree), "sides": sides, "runs": runs}, indent=1))
        (out / f"{args.label}.md").write_text("\n".join(lines) + "\n")
    return 0


def _max_peaks(runs: list[dict]) -> dict[str, float]:
    """Each process's peak RSS (by label: writer, parser, resolve_partitions, cli...), the largest over the runs."""
    out: dict[str, float] = {}
    for r in runs:
        for k, v in r["peak_rss_mb"].items():
            out[k] = max(out.get(k, 0.0), v)
    return out


def _peaks(peaks: dict[str, float], n: int = 4) -> str:
    top = sorted(peaks.items(), key=lambda kv: -kv[1])[:n]
    return ", ".join(f"{k} {v:.0f}" for k, v in top)


if __name__ == "__main__":
    raise SystemExit(main())
