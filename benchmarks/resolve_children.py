#!/usr/bin/env python
"""A bulk resolution (`resolve_all`) in the indexing process or in 1, 2, ... child processes,
interleaved round by round: wall, CPU, the caller's peak memory and the children's.

    python benchmarks/resolve_children.py TREE [TREE ...] [--children 0 1 2] [--rounds 3]
        [--out DIR --label NAME]

Each tree is indexed once (`nsccn index TREE --in-process`, into a temporary index directory);
then every round resolves it again with each number of children, each run a fresh process
(`resolve_all(store, children=K)` on the index, as the writer calls it after a cold bulk:
the edges are deleted beforehand, outside the measurement). CPU is user + sys of the process
and its children; memory the peak RSS of each process (sampled, `benchmarks/proctree.py`):
`resolve_children.py` is the caller (the writer's share), `resolve_partitions` a child.
What it decides: `nsccn.indexing.resolve_partitions.CHILDREN_FROM_REFS` and the default number of children.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from proctree import run_tree  # noqa: E402


def _resolve(db: str, children: int) -> None:
    from nsccn.indexing.resolution import resolve_everything
    from nsccn.store import WRITER_CACHE_MIB, Store

    with Store(db, cache_mib=WRITER_CACHE_MIB) as store:
        resolve_everything(store, children=children)


def _clear_edges(db: str) -> int:
    from nsccn.store import Store

    with Store(db) as store:
        refs = store.ref_count()
        with store.conn:
            store.delete_edges(None)
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return refs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trees", nargs="*")
    ap.add_argument("--children", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out")
    ap.add_argument("--label", default="resolve_children")
    ap.add_argument("--run", nargs=2, metavar=("DB", "CHILDREN"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.run:
        _resolve(args.run[0], int(args.run[1]))
        return 0
    work = Path(tempfile.mkdtemp(prefix="nsccn-resolve-children-"))
    runs: list[dict] = []
    try:
        dbs = {}
        for tree in args.trees:
            ix = work / Path(tree).name
            subprocess.run([sys.executable, "-m", "nsccn.cli", "index", tree, "--in-process", "--workers", "1", "--json"],
                           env={**os.environ, "NSCCN_INDEX_DIR": str(ix)}, check=True, capture_output=True)
            dbs[tree] = str(next(ix.rglob("index.db")))
        for rnd in range(args.rounds):
            for tree, db in dbs.items():
                for k in args.children:
                    refs = _clear_edges(db)
                    load = os.getloadavg()[0]
                    r = run_tree([sys.executable, __file__, "--run", db, str(k)])
                    if r.returncode != 0:
                        raise SystemExit(r.stderr[-2000:])
                    peaks = r.peak_rss_by_process_mb
                    runs.append({"tree": tree, "refs": refs, "children": k, "round": rnd, "wall_s": round(r.wall_s, 2),
                                 "cpu_s": round(r.cpu_s, 2), "caller_mb": round(peaks.get("resolve_children.py", 0), 1),
                                 "child_mb": round(peaks.get("resolve_partitions", 0), 1),
                                 "sum_mb": round(r.peak_rss_sum_mb, 1), "load": round(load, 2)})
                    print(json.dumps(runs[-1]), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    med = statistics.median
    lines = [f"# Bulk resolution in the caller or in children, interleaved ({args.rounds} rounds)", "",
             f"load average {min(r['load'] for r in runs)}-{max(r['load'] for r in runs)} before the runs; "
             "wall ratio against 0 children taken round by round", "",
             "| tree | refs | children | wall s | wall / 0 children, median (min-max) | CPU s | caller peak MB |"
             " child peak MB | summed peak MB |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for tree in args.trees:
        base = {r["round"]: r for r in runs if r["tree"] == tree and r["children"] == args.children[0]}
        for k in args.children:
            rs = [r for r in runs if r["tree"] == tree and r["children"] == k]
            ratios = [r["wall_s"] / base[r["round"]]["wall_s"] for r in rs]
            lines.append(f"| {Path(tree).name} | {rs[0]['refs']} | {k} | {med(r['wall_s'] for r in rs):.2f} | "
                         f"{med(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f}) | {med(r['cpu_s'] for r in rs):.2f} | "
                         f"{med(r['caller_mb'] for r in rs):.0f} | {med(r['child_mb'] for r in rs):.0f} | "
                         f"{med(r['sum_mb'] for r in rs):.0f} |")
    print("\n".join(lines))
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{args.label}.json").write_text(json.dumps(runs, indent=1))
        (out / f"{args.label}.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
