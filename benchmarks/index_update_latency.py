#!/usr/bin/env python
"""How soon `nsccn index` makes an edit visible, and what a run with nothing to do costs: wall
times of real `nsccn index` processes on an indexed tree, ROUNDS rounds, interleaved.

    python benchmarks/index_update_latency.py TREE [--rounds 5] [--mode auto|pipeline|in-process]
        [--vs OTHER_PYTHON]

TREE must be indexed already (`nsccn index TREE`). Per round: (a) `nsccn index TREE` with nothing
changed, process start to exit; (b) one file gets a new function, then `nsccn index TREE` is
started and a read-only connection polls the index (every 2 ms) until the function's entity is
there: process start to visible. The file is restored (and re-indexed) after each round.

--vs: the interpreter of another checkout's virtual environment (its nsccn, e.g. main's), run in
turn with this one (A B A B ...) on the same tree; the ratios A/B are taken round by round, so a
shared machine's drift cancels out. Both must read the same index schema.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import apsw


def nsccn_index(tree: Path, mode: str, python: str = sys.executable) -> list[str]:
    extra = {"auto": [], "pipeline": ["--pipeline"], "in-process": ["--in-process"]}[mode]
    # -P: the working directory (maybe another checkout) never shadows the interpreter's own nsccn
    return [python, "-P", "-m", "nsccn.cli", "index", str(tree), "--workers", "2", *extra]


def visible(db: Path, name: str) -> bool:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return conn.execute("SELECT 1 FROM entities WHERE name=?", (name,)).fetchone() is not None
    finally:
        conn.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("tree")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--mode", default="auto", choices=("auto", "pipeline", "in-process"))
    ap.add_argument("--vs", metavar="OTHER_PYTHON", help="a second interpreter (another checkout's venv), run in turn")
    args = ap.parse_args()
    tree = Path(args.tree).resolve()
    db = tree / ".nsccn" / "index.db"
    if not db.exists():
        raise SystemExit(f"index {tree} first: nsccn index {tree}")
    target = sorted(p for p in tree.rglob("*.py") if ".nsccn" not in p.parts)[len(list(tree.rglob("*.py"))) // 2]
    original = target.read_text(encoding="utf-8", errors="replace")
    sides = {"A": nsccn_index(tree, args.mode)}
    if args.vs:
        sides["B"] = nsccn_index(tree, args.mode, args.vs)
    nothing: dict[str, list[float]] = {k: [] for k in sides}
    change: dict[str, list[float]] = {k: [] for k in sides}
    try:
        for i in range(args.rounds):
            for side, cmd in sides.items():
                t = time.perf_counter()
                subprocess.run(cmd, capture_output=True, check=True)
                nothing[side].append(time.perf_counter() - t)
                name = f"nsccn_latency_probe_{os.getpid()}_{side}{i}"
                target.write_text(original + f"\n\ndef {name}():\n    return {i}\n", encoding="utf-8")
                t = time.perf_counter()
                proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                while not visible(db, name):
                    if proc.poll() is not None and not visible(db, name):
                        raise SystemExit(f"{name} never became visible")
                    time.sleep(0.002)
                change[side].append(time.perf_counter() - t)
                proc.wait()
                target.write_text(original, encoding="utf-8")
                subprocess.run(cmd, capture_output=True, check=True)
    finally:
        target.write_text(original, encoding="utf-8")
    load = os.getloadavg()[0]
    print(f"{tree} ({args.mode}; load {load:.1f} at the end): {args.rounds} rounds" + (", A B in turn" if args.vs else ""))
    for side, cmd in sides.items():
        if args.vs:
            print(f"{side}: {cmd[0]}")
        print(f"  nothing changed, process start to exit: median {statistics.median(nothing[side]):.3f} s"
              f" (min {min(nothing[side]):.3f})")
        print(f"  one file changed, process start to visible: median {statistics.median(change[side]):.3f} s"
              f" (min {min(change[side]):.3f})")
    if args.vs:
        for what, times in (("nothing changed", nothing), ("one file changed", change)):
            ratios = [a / b for a, b in zip(times["A"], times["B"])]
            print(f"  A/B {what}: median {statistics.median(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
