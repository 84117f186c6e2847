"""What the identifier caches' size costs the parse: CPU of `extract.parse_file` over every .py
file of a tree with `nsccn.text`'s two caches (`_split`, `_terms`) at several sizes, interleaved
over rounds in one process (each size starts from empty caches), with the caches' hits and misses.

    python benchmarks/identifier_cache.py TREE [--sizes 262144,16384,4096] [--rounds 3] [--out OUT.md]

A parser lives as long as its pipeline, so whatever its caches hold stays: this says how small
they can be before the parse pays for it (sympy: 44k distinct identifiers).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from functools import lru_cache
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from parse_floor import python_files  # noqa: E402

import nsccn.text as text  # noqa: E402
from nsccn.reading.extract import parse_file  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tree", type=Path)
    ap.add_argument("--sizes", default="262144,16384,4096")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    files = python_files(args.tree)
    split, terms = text._split.__wrapped__, text._terms.__wrapped__
    cpu: dict[int, list[float]] = {s: [] for s in sizes}
    info: dict[int, str] = {}
    for r in range(args.rounds):
        for size in sizes:
            text._split, text._terms = lru_cache(maxsize=size)(split), lru_cache(maxsize=size)(terms)
            gc.collect()
            t = time.process_time()
            for path, data in files:
                parse_file(path, data, 0.0)
            cpu[size].append(time.process_time() - t)
            s, m = text._split.cache_info(), text._terms.cache_info()
            info[size] = f"split {s.hits:,} hits / {s.misses:,} misses, terms {m.hits:,} / {m.misses:,}"
            print(f"round {r}: {size:>7} entries {cpu[size][-1]:.2f} CPU-s ({info[size]})", flush=True)
    lines = [f"`python benchmarks/identifier_cache.py {args.tree} --sizes {args.sizes} --rounds {args.rounds}`,"
             f" {len(files)} files", "", "| cache entries (each) | CPU s, median | per round | hits / misses |", "|---|---|---|---|"]
    for size in sizes:
        rounds = ", ".join(f"{c:.2f}" for c in cpu[size])
        lines.append(f"| {size:,} | {statistics.median(cpu[size]):.2f} | {rounds} | {info[size]} |")
    print("\n".join(lines))
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
