#!/usr/bin/env python
"""Indexing throughput and peak memory of the library path, a full index then a no-change re-run.

    python benchmarks/index_bench.py TREE [--workers N]

TREE is a checkout (e.g. sympy at a base commit: `git -C sympy+sympy/repo archive 8fc63c2d -- ':(glob)**/*.py' | tar -x -C TREE`).
Each measurement runs in a fresh child process so peak RSS (ru_maxrss of the child and its
parser processes) belongs to that run alone.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, resource, sys, time
from nsccn.indexing.indexer import index_repository
s = index_repository(sys.argv[1], sys.argv[2], workers=int(sys.argv[3]))
print(json.dumps({"seconds": s.seconds, "files": s.files_indexed, "unchanged": s.files_unchanged,
                  "lines": s.lines_indexed, "entities": s.entities, "edges": s.edges,
                  "self_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "children_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


def run(tree: str, db: str, workers: int) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, tree, db, str(workers)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("tree")
    ap.add_argument("--workers", type=int, default=0)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="nsccn-bench-"))
    try:
        db = str(tmp / "index.db")
        full = run(args.tree, db, args.workers)
        again = run(args.tree, db, args.workers)
        size_mb = Path(db).stat().st_size / 2**20
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("| run | wall s | files | files/s | lines/s | entities | edges | peak RSS MB (main / largest parser) |")
    print("|---|---|---|---|---|---|---|---|")
    for name, r in (("full index", full), ("re-run, nothing changed", again)):
        fps = r["files"] / r["seconds"] if r["files"] else 0
        lps = r["lines"] / r["seconds"] if r["lines"] else 0
        print(f"| {name} | {r['seconds']:.2f} | {r['files'] or r['unchanged']} | {fps:.0f} | {lps:,.0f} | {r['entities']} "
              f"| {r['edges']} | {r['self_rss_mb']:.0f} / {r['children_rss_mb']:.0f} |")
    print(f"\ndatabase size: {size_mb:.0f} MB; workers={args.workers or 'cores'}; cores={__import__('os').cpu_count()}")
    del resource
    return 0


if __name__ == "__main__":
    sys.exit(main())
