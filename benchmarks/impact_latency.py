"""How long `impact` takes on a warm index, beside the git diff it cannot do without, in one run.

    python benchmarks/impact_latency.py TREE [--n 15]

TREE: an indexed git work tree with an uncommitted change (e.g. one function edited in sympy).
Interleaved: each round times `git diff HEAD` (the same command impact runs, the floor), the
library call `Navigator.impact()` (the index warm: one process, the answer computed afresh each
time), and `nsccn impact --json` as a process (what an agent's shell pays, interpreter start
included). Medians and the ratio to the floor are printed; the load average beside them, since
on a shared machine every number moves with it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nsccn.reading.changes import DIFF_ARGS  # noqa: E402
from nsccn.reading.git import git_command  # noqa: E402
from nsccn.serving.navigator import Navigator  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tree")
    ap.add_argument("--n", type=int, default=15)
    args = ap.parse_args()
    tree = Path(args.tree).resolve()
    nav = Navigator(tree)
    first = nav.impact()
    print(f"changed: {[c.id for c in first.changed]}; impacted {len(first.impacted)}, tests {len(first.tests)}")
    cmd, env = git_command(tree, *DIFF_ARGS, "HEAD", "--")
    exe = Path(sys.executable).parent / "nsccn"
    times: dict[str, list[float]] = {"git diff HEAD": [], "Navigator.impact()": [], "nsccn impact (process)": []}
    for _ in range(args.n):
        t = time.perf_counter()
        subprocess.run(cmd, env=env, capture_output=True, check=True)
        times["git diff HEAD"].append(time.perf_counter() - t)
        t = time.perf_counter()
        nav.impact()
        times["Navigator.impact()"].append(time.perf_counter() - t)
        t = time.perf_counter()
        subprocess.run([str(exe), "impact", "--json"], cwd=tree, capture_output=True, check=True)
        times["nsccn impact (process)"].append(time.perf_counter() - t)
    floor = statistics.median(times["git diff HEAD"])
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {args.n} interleaved rounds")
    for what, ts in times.items():
        med = statistics.median(ts)
        print(f"  {what:<24} median {med * 1000:7.1f} ms  (x{med / floor:.1f} the git diff)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
