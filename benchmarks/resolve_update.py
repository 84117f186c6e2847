#!/usr/bin/env python
"""CPU of an update's resolution (`nsccn.indexing.resolution.resolve_affected`): this checkout (A)
against another (B), interleaved A B A B, on copies of one index.

    python benchmarks/resolve_update.py INDEX.db --vs OTHER_PYTHON [--python A_PYTHON] [--rounds 5] [--path P]

Three updates of one file P (default: the file that defines the most entities), each resolved on
a fresh copy of the index in a fresh process of either side: `body` (an edit inside a body: P's
references only), `def` (P gains a function: P's and those naming it), `file` (P as if just added:
what a new file's names reach). CPU is the resolving process's own (time.process_time around the
call); the ratios A/B are taken round by round.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, sys, time
from nsccn.store import Store, _changed_names
from nsccn.indexing.resolution import resolve_affected
db, path, case = sys.argv[1:4]
with Store(db) as store:
    store.ref_indexes()
    names = {"body": set(), "def": {"a_name_no_file_defines"}}.get(case)
    if names is None:
        names = _changed_names(None, store._symbols(path))
    t = time.process_time()
    n = resolve_affected(store, {path}, names)
    print(json.dumps({"cpu_s": time.process_time() - t, "edges": n}))
"""
CASES = ("body", "def", "file")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("index")
    ap.add_argument("--vs", metavar="OTHER_PYTHON", required=True)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--path", help="the file updated (default: the one with the most entities)")
    args = ap.parse_args()
    path = args.path or _largest(args.index)
    sides = {"A": args.python, "B": args.vs}
    got: dict[tuple[str, str], list[float]] = {}
    work = Path(tempfile.mkdtemp(prefix="nsccn-resolve-update-"))
    try:
        for rnd in range(args.rounds):
            for case in CASES:
                for side, python in sides.items():
                    db = work / "index.db"
                    shutil.copyfile(args.index, db)
                    out = subprocess.run([python, "-P", "-c", CHILD, str(db), path, case], capture_output=True,
                                         text=True, check=True).stdout
                    r = json.loads(out)
                    got.setdefault((case, side), []).append(r["cpu_s"])
                    print(f"round {rnd} {case:5} {side}: cpu {r['cpu_s']:.3f} s, {r['edges']} edges", flush=True)
                    for extra in work.glob("index.db*"):
                        extra.unlink()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\n{args.index}, P = {path}, {args.rounds} rounds")
    print("| update | A CPU s (median) | B CPU s (median) | A/B, median (min-max) |\n|---|---:|---:|---:|")
    for case in CASES:
        a, b = got[(case, "A")], got[(case, "B")]
        ratios = [x / y for x, y in zip(a, b)]
        print(f"| {case} | {statistics.median(a):.3f} | {statistics.median(b):.3f} | "
              f"{statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f}) |")
    return 0


def _largest(index: str) -> str:
    import apsw

    conn = apsw.Connection(index, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return conn.execute("SELECT path FROM entities GROUP BY path ORDER BY COUNT(*) DESC, path LIMIT 1").fetchone()[0]
    finally:
        conn.close()


if __name__ == "__main__":
    raise SystemExit(main())
