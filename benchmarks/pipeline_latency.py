"""File save -> change visible to a query, through the running pipeline.

    python benchmarks/pipeline_latency.py [--repo /tmp/sympy] [--edits 200] [--debounce-ms 100]
                                          [--atomic] [--gap-ms 300] [--out FILE]

The repository is copied to a temporary directory (the original is never touched), indexed and
watched by `python -m supervisor serve COPY --no-mcp --no-embed`. Each edit appends a new
function with a unique name to one of a few source files (rotating), either written in place or,
with --atomic, as an editor's atomic save (write a temp file, rename it over). The clock runs
from just before the write until the new function's entity is in the index, read through a
read-only connection as every query front reads it (the entity row and its BM25 row are
committed in one transaction: that is lexical visibility). Edits are spaced --gap-ms apart
after the previous one became visible, and the pipeline is let settle (edges resolved) first,
as an agent's edits are; each latency includes the debounce.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import apsw


def percentile(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    k = (len(xs) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def wait_status(root: Path, pred, timeout: float):
    from supervisor.control import query_status

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = query_status(root)
        if st and pred(st):
            return st
        time.sleep(0.05)
    raise SystemExit(f"timed out waiting for the pipeline (last status: {st})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", default="/tmp/sympy")
    ap.add_argument("--edits", type=int, default=200)
    ap.add_argument("--debounce-ms", type=int, default=None, help="watch_debounce_ms (default: the configuration's, 100)")
    ap.add_argument("--atomic", action="store_true", help="save by writing a temp file and renaming it over")
    ap.add_argument("--gap-ms", type=int, default=300, help="pause after the pipeline settled, before the next edit")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--files", default="", help="comma-separated files to edit (default: a few mid-size ones)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="nsccn-latency-"))
    root = tmp / "repo"
    shutil.copytree(args.repo, root, ignore=shutil.ignore_patterns(".nsccn", ".git", "__pycache__"))
    if args.debounce_ms is not None:
        (root / ".nsccn").mkdir(exist_ok=True)
        (root / ".nsccn" / "config.json").write_text(json.dumps({"watch_debounce_ms": args.debounce_ms}))
    from nsccn.config import load_config

    config = load_config(root)
    db = config.db_path(root)
    proc = subprocess.Popen(
        [sys.executable, "-m", "supervisor", "serve", str(root), "--no-mcp", "--no-embed", "--workers", str(args.workers)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        t = time.perf_counter()
        wait_status(root, lambda s: s.get("idle") and s["state"] == "watching", 1800)
        index_s = time.perf_counter() - t
        if args.files:
            files = args.files.split(",")
        else:
            sizes = sorted((p.stat().st_size, p.relative_to(root).as_posix()) for p in root.rglob("*.py")
                           if ".nsccn" not in p.parts)
            mid = [rel for size, rel in sizes if 8_000 <= size <= 30_000]
            files = mid[:: max(1, len(mid) // 5)][:5] or [sizes[-1][1]]
        conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
        lat: list[float] = []
        token = os.getpid()
        for i in range(args.edits):
            rel = files[i % len(files)]
            path = root / rel
            name = f"nsccn_probe_{token}_{i}"
            text = path.read_text() + f"\n\ndef {name}(x):\n    return x + {i}\n"
            t0 = time.perf_counter()
            if args.atomic:
                tmp_file = path.with_name(f".{path.name}.{i}.tmp")
                tmp_file.write_text(text)
                os.replace(tmp_file, path)
            else:
                path.write_text(text)
            while True:
                if conn.execute("SELECT 1 FROM entities WHERE name=?", (name,)).fetchall():
                    break
                if time.perf_counter() - t0 > 30:
                    raise SystemExit(f"edit {i} of {rel} not visible after 30 s")
                time.sleep(0.0005)
            lat.append((time.perf_counter() - t0) * 1000)
            since = time.time()
            wait_status(root, lambda s: s.get("idle") and s["actors"]["writer"]["stats"].get("phase") == "idle"
                        and time.time() - s["actors"]["writer"]["last_heartbeat_s"] > since, 120)
            time.sleep(args.gap_ms / 1000)
        conn.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    res = {
        "repo": args.repo, "edits": len(lat), "atomic": args.atomic, "debounce_ms": config.watch_debounce_ms,
        "workers": args.workers, "initial_index_s": round(index_s, 1), "files": files,
        "p50_ms": percentile(lat, 50), "p90_ms": percentile(lat, 90), "p99_ms": percentile(lat, 99),
        "max_ms": max(lat), "mean_ms": statistics.mean(lat), "load": os.getloadavg()[0],
    }
    print(f"save -> visible over {len(lat)} edits of {args.repo} ({'atomic saves' if args.atomic else 'in-place writes'},"
          f" debounce {config.watch_debounce_ms} ms, {args.workers} parsers; initial index {index_s:.1f} s):")
    print(f"  p50 {res['p50_ms']:.1f} ms   p90 {res['p90_ms']:.1f} ms   p99 {res['p99_ms']:.1f} ms   max {res['max_ms']:.1f} ms"
          f"   (load {res['load']:.1f})")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps({**res, "latencies_ms": lat}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
