"""A very large initial scan through the pipeline: time and the memory curve as the tree grows.

    python benchmarks/pipeline_scale.py [--files 10000,25000,50000,100000] [--workers 2]
                                        [--out-dir benchmarks/results/pipeline-scale] [--label NAME]

Writes a synthetic tree of small Python modules (1,000 per directory, each importing and calling
its neighbour) into a temporary directory, grown to each size in turn, and indexes it cold at
each size (a fresh index directory) with `python -m supervisor index --json` (no embedding).
Reported per size: wall time, files/s, CPU of the whole process tree, the peak of the summed
RSS of all pipeline processes (sampled), each process's own peak as it measures itself, and the
index's size on disk. The credits keep every queue bounded, so memory should not grow with the
number of files beyond the writer's (SQLite cache, PageRank) and the watcher's list of paths;
resolution runs in the writer's short-lived children (`resolve child`: the largest one's peak).

`--label` names the result files (`<out-dir>/<label>.json` and `.md`), e.g. the store a run
measured, so a later run on another store lands beside this one.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from proctree import dir_bytes, run_tree  # noqa: E402


def grow_tree(root: Path, start: int, stop: int) -> None:
    """Files start..stop-1 of the synthetic tree (a tree of `stop` files once earlier calls made the rest)."""
    for i in range(start, stop):
        d = root / f"d{i // 1000}"
        if i % 1000 == 0:
            d.mkdir(parents=True)
            (d / "__init__.py").write_text("")
        j = max(0, i - 1)
        (d / f"m{i}.py").write_text(
            f"from d{j // 1000}.m{j} import f{j}\n\n\ndef f{i}(x):\n    \"\"\"Step {i}.\"\"\"\n    return f{j}(x) + {i}\n\n\n"
            f"class C{i}:\n    def run(self):\n        return f{i}(1)\n"
        )


def index_once(root: Path, index_dir: Path, workers: int) -> dict:
    env = {**os.environ, "NSCCN_INDEX_DIR": str(index_dir)}
    run = run_tree([sys.executable, "-m", "supervisor", "index", str(root), "--workers", str(workers), "--json"], env=env)
    if run.returncode != 0:
        raise SystemExit(run.stderr[-3000:])
    s = json.loads(run.stdout)
    self_mem = {k: v["peak_rss_mb"] for k, v in s["pipeline"]["actors"].items()}
    self_mem["supervisor"] = s["pipeline"]["supervisor_peak_rss_mb"]
    # The writer's bulk resolution children (nsccn.indexing.resolve_partitions): not actors, sampled.
    self_mem["resolve child"] = run.peak_rss_by_process_mb.get("resolve_partitions", 0.0)
    return {
        "indexed": s["files_indexed"], "seen": s["files_seen"], "entities": s["entities"], "edges": s["edges"],
        "wall_s": run.wall_s, "cpu_s": run.cpu_s, "files_per_s": s["files_indexed"] / run.wall_s,
        "peak_rss_sum_mb": run.peak_rss_sum_mb, "peak_rss_mb": self_mem,
        "index_mb": dir_bytes(index_dir) / 2**20,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", default="10000,25000,50000,100000", help="comma-separated tree sizes, ascending")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out-dir", default=None, help="write <label>.json and <label>.md here")
    ap.add_argument("--label", default="scale")
    args = ap.parse_args()
    sizes = sorted(int(x) for x in args.files.split(","))
    tmp = Path(tempfile.mkdtemp(prefix="nsccn-scale-"))
    rows = []
    try:
        root = tmp / "repo"
        made = 0
        for n in sizes:
            grow_tree(root, made, n)
            made = n
            load = os.getloadavg()[0]
            r = index_once(root, tmp / f"index-{n}", args.workers)
            shutil.rmtree(tmp / f"index-{n}", ignore_errors=True)
            r.update(files=n, load_before=load)
            rows.append(r)
            mem = ", ".join(f"{k} {v:.0f}" for k, v in r["peak_rss_mb"].items())
            print(f"{n} files (+{r['seen'] - n} __init__.py): {r['indexed']} indexed in {r['wall_s']:.1f} s"
                  f" ({r['files_per_s']:.0f} files/s, CPU {r['cpu_s']:.1f} s, {args.workers} parsers, load {load:.1f} before),"
                  f" {r['entities']} entities, {r['edges']} edges, index {r['index_mb']:.0f} MB;"
                  f" peak RSS summed {r['peak_rss_sum_mb']:.0f} MB ({mem} MB)", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    actors = list(rows[0]["peak_rss_mb"]) if rows else []
    md = [f"`python benchmarks/pipeline_scale.py --files {args.files} --workers {args.workers}`, {os.cpu_count()} cores\n",
          "| files | wall s | files/s | CPU s | index MB | peak RSS, all processes summed (MB) | "
          + " | ".join(f"{a} MB" for a in actors) + " | load before |",
          "|" + "---|" * (7 + len(actors))]
    for r in rows:
        md.append(f"| {r['files']:,} | {r['wall_s']:.1f} | {r['files_per_s']:.0f} | {r['cpu_s']:.1f} | {r['index_mb']:.0f} "
                  f"| {r['peak_rss_sum_mb']:.0f} | " + " | ".join(f"{r['peak_rss_mb'].get(a, 0):.0f}" for a in actors)
                  + f" | {r['load_before']:.1f} |")
    print("\n".join(md))
    if args.out_dir:
        out = Path(args.out_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{args.label}.json").write_text(json.dumps({"workers": args.workers, "cpus": os.cpu_count(), "rows": rows}, indent=2))
        (out / f"{args.label}.md").write_text("\n".join(md) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
