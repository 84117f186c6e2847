"""Initial index of a repository: the actor pipeline vs the single-process library path, same run.

    python benchmarks/pipeline_index.py [--repo /tmp/sympy] [--workers 2] [--rounds 1] [--out FILE]

Each path indexes the tree from scratch into its own temporary index directory, in a fresh
process: the library (`nsccn.indexing.indexer.index_repository`, with workers=1 and with the library's
own process pool when --workers > 1), then the pipeline (`python -m supervisor index`, no
embedding: the library path does not embed either). Reported: wall time (process start to exit),
files/s, the ratio to the single-process library, peak resident memory of every process (the
library process; each actor and the supervisor, as each measures itself), and whether the two indexes hold the same
entities, edges and skeletons.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LIB = """
import json, resource, sys, time
from nsccn.indexing.indexer import index_repository
from supervisor.memory import peak_rss_kb
t = time.perf_counter()
s = index_repository(sys.argv[1], sys.argv[2], workers=int(sys.argv[3]))
print(json.dumps({"seconds": time.perf_counter() - t, "files": s.files_indexed, "entities": s.entities,
                  "edges": s.edges, "peak_rss_mb": peak_rss_kb() / 1024,
                  "children_peak_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


def digest(db: Path) -> dict:
    """Per section of benchmarks/index_identity.py (entities, edges, skeletons, FTS terms, ...):
    (facts, hash), independent of the symbol ids each index happened to give."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from index_identity import digest as hash_of, dump

    return {section: (len(lines), hash_of(lines)) for section, lines in dump(str(db)).items()}


def run_library(repo: Path, workers: int, tmp: Path) -> dict:
    db = tmp / f"lib{workers}" / "index.db"
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", LIB, str(repo), str(db), str(workers)], capture_output=True, text=True)
    wall = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(f"library index failed:\n{r.stderr[-3000:]}")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    out.update(wall=wall, db=str(db))
    return out


def run_pipeline(repo: Path, workers: int, tmp: Path) -> dict:
    idx = tmp / "pipe"
    env = {**os.environ, "NSCCN_INDEX_DIR": str(idx)}
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "supervisor", "index", str(repo), "--workers", str(workers), "--json"],
                       capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(f"pipeline index failed:\n{r.stderr[-3000:]}")
    s = json.loads(r.stdout)
    return {
        "wall": wall,
        "seconds": s["seconds"],
        "files": s["files_indexed"],
        "entities": s["entities"],
        "edges": s["edges"],
        "actors": {n: a["peak_rss_mb"] for n, a in s["pipeline"]["actors"].items()},
        "supervisor_peak_rss_mb": s["pipeline"]["supervisor_peak_rss_mb"],
        "restarts": sum(a["restarts"] for a in s["pipeline"]["actors"].values()),
        "db": str(idx / "index.db"),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", default="/tmp/sympy")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--out", default=None, help="write the results as JSON here")
    ap.add_argument("--no-pool", action="store_true", help="leave out the library's own process pool")
    args = ap.parse_args()
    repo = Path(args.repo).resolve()
    results = []
    for rnd in range(args.rounds):
        tmp = Path(tempfile.mkdtemp(prefix="nsccn-bench-"))
        try:
            load = os.getloadavg()[0]
            lib1 = run_library(repo, 1, tmp)
            libn = run_library(repo, args.workers, tmp) if args.workers > 1 and not args.no_pool else None
            pipe = run_pipeline(repo, args.workers, tmp)
            # Only now: reading the indexes grows this process, and a child's peak memory
            # (ru_maxrss) starts from its parent's at fork.
            for r in (lib1, libn, pipe):
                if r is not None:
                    r["digest"] = digest(Path(r.pop("db")))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        res = {"round": rnd, "repo": str(repo), "workers": args.workers, "cpus": os.cpu_count(), "load_before": load,
               "library_1": lib1, "library_pool": libn, "pipeline": pipe,
               "same_index": pipe["digest"] == lib1["digest"]}
        results.append(res)
        n = lib1["files"]
        print(f"round {rnd}: {repo} ({n} files parsed; {os.cpu_count()} cpus, load {load:.1f} before)")
        rows = [("library, 1 process", lib1), (f"library, pool of {args.workers}", libn), (f"pipeline, {args.workers} parsers", pipe)]
        print(f"  {'path':28} {'wall s':>8} {'files/s':>8} {'vs lib-1':>9}  peak memory")
        for name, r in rows:
            if r is None:
                continue
            if "actors" in r:
                mem = ", ".join(f"{k} {v:.0f}" for k, v in r["actors"].items())
                mem += f", supervisor {r['supervisor_peak_rss_mb']:.0f} MB"
            else:
                mem = f"{r['peak_rss_mb']:.0f} MB" + (f" (pool workers up to {r['children_peak_rss_mb']:.0f} MB)" if r.get("children_peak_rss_mb") else "")
            print(f"  {name:28} {r['wall']:8.1f} {n / r['wall']:8.1f} {lib1['wall'] / r['wall']:8.2f}x  {mem}")
        print(f"  same entities/edges/skeletons as the library: {res['same_index']}"
              f" ({pipe['digest']['entities'][0]} entities, {pipe['digest']['edges'][0]} edges); pipeline restarts: {pipe['restarts']}")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
