"""Trace and skeleton latency while the embedder runs a bulk embedding, vs idle.

    python benchmarks/pipeline_isolation.py [--repo /tmp/sympy] [--queries 300] [--index-dir DIR]
                                            [--embedder-nice 10] [--out FILE]

The index lives in --index-dir (default: a temporary directory; the repository is not written
to). Steps: index the repository without vectors (`python -m supervisor index`); pick entities
with outgoing calls and files with skeletons; time `trace` (downstream, depth 3) and `skeleton`
through `nsccn.serving.navigator.Navigator` on a read-only connection, as the MCP front serves them,
with nothing else running (idle); start `python -m supervisor serve --no-mcp`, whose embedder
then embeds every entity (the bulk); time the same queries again while it runs; stop it.
The ratio of the two p50s shows how well the embedder's process (at a lower CPU priority,
NSCCN_EMBEDDER_NICE) is isolated from the readers.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def percentile(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    k = (len(xs) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def measure(nav, ids: list[str], files: list[str], n: int) -> dict[str, list[float]]:
    out = {"trace": [], "skeleton": []}
    for i in range(n):
        t = time.perf_counter()
        nav.trace(ids[i % len(ids)], "downstream", 3, None, 0.0)
        out["trace"].append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        nav.skeleton(files[i % len(files)])
        out["skeleton"].append((time.perf_counter() - t) * 1000)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", default="/tmp/sympy")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--index-dir", default=None)
    ap.add_argument("--embedder-nice", type=int, default=None, help="override NSCCN_EMBEDDER_NICE (default 10)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    root = Path(args.repo).resolve()
    tmp = Path(tempfile.mkdtemp(prefix="nsccn-iso-"))
    idx = Path(args.index_dir) if args.index_dir else tmp / "index"
    env = {**os.environ, "NSCCN_INDEX_DIR": str(idx)}
    if args.embedder_nice is not None:
        env["NSCCN_EMBEDDER_NICE"] = str(args.embedder_nice)
    os.environ["NSCCN_INDEX_DIR"] = str(idx)
    from nsccn.serving.navigator import Navigator
    from supervisor.control import query_status

    proc = None
    try:
        r = subprocess.run([sys.executable, "-m", "supervisor", "index", str(root), "--json"], env=env,
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(r.stderr[-3000:])
        nav = Navigator(root, db_path=idx / "index.db")
        c = nav.store.conn
        rng = random.Random(7)
        ids = [r[0] for r in c.execute(
            "SELECT s.name FROM edges ed JOIN symbols s ON s.id = ed.source "
            "WHERE ed.relation=(SELECT id FROM symbols WHERE name='CALLS') AND s.name LIKE 'method:%' "
            "GROUP BY s.name HAVING COUNT(*) BETWEEN 3 AND 30").fetchall()]
        ids = rng.sample(ids, min(50, len(ids)))
        files = rng.sample([r[0] for r in c.execute("SELECT path FROM skeletons").fetchall()], 50)
        measure(nav, ids, files, 50)  # warm the caches both runs share
        idle = measure(nav, ids, files, args.queries)

        proc = subprocess.Popen([sys.executable, "-m", "supervisor", "serve", str(root), "--no-mcp", "--workers", "1"],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 300
        while True:
            st = query_status(root)
            emb = (st or {}).get("actors", {}).get("embedder", {})
            if emb.get("stats", {}).get("jobs", 0) >= 2 and st.get("vectors_pending", 0) > 0:
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"the embedder did not start embedding: {st}")
            time.sleep(0.2)
        t = time.perf_counter()
        busy = measure(nav, ids, files, args.queries)
        busy_s = time.perf_counter() - t
        st = query_status(root)
        emb = st["actors"]["embedder"]
        still = st.get("vectors_pending", 0) > 0
        model = st["actors"]["writer"]["stats"].get("model")
        embedded = emb["stats"].get("embedded", 0)
        nav.close()
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)  # (an --index-dir of one's own is kept)
    res = {"repo": str(root), "queries": args.queries, "model": model, "embedder_nice": int(env.get("NSCCN_EMBEDDER_NICE", 10)),
           "embedding_still_running_at_end": still, "entities_embedded_so_far": embedded, "busy_window_s": busy_s,
           "cpus": os.cpu_count(), "load": os.getloadavg()[0]}
    print(f"trace (downstream, depth 3) and skeleton latency on {root}, {args.queries} queries each; "
          f"bulk embedding with {model} (embedder nice {res['embedder_nice']}), {os.cpu_count()} cpus:")
    print(f"  {'':10} {'idle p50':>9} {'p99':>8} {'embedding p50':>14} {'p99':>8} {'ratio p50':>10} {'ratio p99':>10}")
    for k in ("trace", "skeleton"):
        a, b = idle[k], busy[k]
        row = {"idle_p50_ms": percentile(a, 50), "idle_p99_ms": percentile(a, 99),
               "busy_p50_ms": percentile(b, 50), "busy_p99_ms": percentile(b, 99)}
        row["ratio_p50"] = row["busy_p50_ms"] / row["idle_p50_ms"]
        row["ratio_p99"] = row["busy_p99_ms"] / row["idle_p99_ms"]
        res[k] = row
        print(f"  {k:10} {row['idle_p50_ms']:8.2f}ms {row['idle_p99_ms']:6.2f}ms {row['busy_p50_ms']:12.2f}ms "
              f"{row['busy_p99_ms']:6.2f}ms {row['ratio_p50']:9.2f}x {row['ratio_p99']:9.2f}x")
    print(f"  embedding ran throughout the measurement: {still} ({embedded} entities embedded by then;"
          f" load {res['load']:.1f})")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
