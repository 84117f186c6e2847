"""A very large initial scan through the pipeline: no deadlock, flat memory.

    python benchmarks/pipeline_scale.py [--files 100000] [--workers 2] [--out FILE]

Writes a synthetic tree of small Python modules (1,000 per directory, each importing and calling
its neighbour) into a temporary directory, indexes it with `python -m supervisor index --json`
(no embedding), and reports the wall time, files/s and every process's peak memory. The
credits keep every queue bounded, so memory should not grow with the number of files beyond
the writer's (SQLite cache, resolution) and the watcher's list of paths.
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="nsccn-scale-"))
    try:
        root = tmp / "repo"
        t = time.perf_counter()
        for i in range(args.files):
            d = root / f"d{i // 1000}"
            if i % 1000 == 0:
                d.mkdir(parents=True)
                (d / "__init__.py").write_text("")
            j = max(0, i - 1)
            (d / f"m{i}.py").write_text(
                f"from d{j // 1000}.m{j} import f{j}\n\n\ndef f{i}(x):\n    \"\"\"Step {i}.\"\"\"\n    return f{j}(x) + {i}\n\n\n"
                f"class C{i}:\n    def run(self):\n        return f{i}(1)\n"
            )
        gen_s = time.perf_counter() - t
        env = {**os.environ, "NSCCN_INDEX_DIR": str(tmp / "index")}
        t = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "supervisor", "index", str(root), "--workers", str(args.workers), "--json"],
                           capture_output=True, text=True, env=env)
        wall = time.perf_counter() - t
        if r.returncode != 0:
            raise SystemExit(r.stderr[-3000:])
        s = json.loads(r.stdout)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    n = s["files_indexed"]
    mem = {k: v["peak_rss_mb"] for k, v in s["pipeline"]["actors"].items()}
    mem["supervisor"] = s["pipeline"]["supervisor_peak_rss_mb"]
    res = {"files": args.files, "indexed": n, "seen": s["files_seen"], "entities": s["entities"], "edges": s["edges"],
           "wall_s": wall, "files_per_s": n / wall, "peak_rss_mb": mem, "generate_s": gen_s, "load": os.getloadavg()[0]}
    print(f"{args.files} synthetic files (+{s['files_seen'] - args.files} __init__.py): {n} indexed in {wall:.1f} s"
          f" ({n / wall:.0f} files/s, {args.workers} parsers), {s['entities']} entities, {s['edges']} edges")
    print("  peak memory: " + ", ".join(f"{k} {v:.0f} MB" for k, v in mem.items()))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
