"""NSCCN's cold index against Aider's repo map build, side by side on the same tree.

    python benchmarks/aider_side_by_side.py --tree TREE --aider-python /tmp/aider-venv/bin/python
                                            [--rounds 3] [--out-dir benchmarks/results/aider-side-by-side]
                                            [--label NAME]

Aider is a benchmark peer, never a dependency: install it into a virtual environment of its own,
outside this repository (`python3 -m venv /tmp/aider-venv && /tmp/aider-venv/bin/pip install
aider-chat==0.86.2`), and pass its interpreter. TREE is a plain tree without `.git` (so NSCCN
reads no git history: both sides see only the files), e.g.
`git --git-dir=MIRROR archive 8fc63c2d | tar -x -C TREE`.

Three sides, each a fresh process from a cold start (a fresh index directory; a fresh, empty
tags cache), in interleaved rounds (pipeline, library, Aider; pipeline, library, Aider; ...):

* `nsccn index TREE` — the default pipeline (actors over ZeroMQ), no vectors (`nsccn index`
  embeds only with `--embed`);
* `nsccn index TREE --in-process` — the single-process library path (its own pool of one
  parser process per core), no vectors;
* Aider's repo map as Aider builds it when a chat starts with no files added:
  `RepoMap(...).get_repo_map([], every file of the tree)` — tree-sitter tags of every file,
  the PageRank over defines/references, and the token-budgeted map (the main model's budget,
  times `map_mul_no_files`), with its tags cache in a fresh directory (`TAGS_CACHE_DIR`,
  outside the tree). The model (`gpt-4o`) is only its token counter; no network is used (its
  price list is seeded from litellm's bundled copy in a private HOME).

Per side: wall, CPU (user + sys of the whole process tree, from getrusage of the waited-for
children), peak RSS summed over the process tree (psutil, sampled every 50 ms), and bytes on
disk (NSCCN's index directory, Aider's tags cache). For Aider, the map build alone is also
measured inside its process (wall and process CPU around `get_repo_map`: its imports —
litellm — take seconds that have nothing to do with the map). The CPU ratio NSCCN/Aider is
given against both, medians over the rounds.
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

from proctree import dir_bytes, run_tree  # noqa: E402

AIDER_DRIVER = r"""
import json, os, resource, sys, time
from aider.io import InputOutput
from aider.models import Model
from aider.repomap import RepoMap

root, cache = sys.argv[1], sys.argv[2]
RepoMap.TAGS_CACHE_DIR = cache  # absolute: Path(root) / cache is cache, outside the tree
files = sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs)
io = InputOutput(pretty=False, yes=True, fancy_input=False)
model = Model("gpt-4o")
rm = RepoMap(map_tokens=model.get_repo_map_tokens(), root=root, main_model=model, io=io,
             max_context_window=model.info.get("max_input_tokens"))
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t, c = time.perf_counter(), time.process_time()
text = rm.get_repo_map([], files) or ""
print(json.dumps({"map_wall_s": time.perf_counter() - t, "map_cpu_s": time.process_time() - c,
                  "files": len(files), "map_chars": len(text), "map_tokens_budget": rm.max_map_tokens * rm.map_mul_no_files,
                  "rss_before_map_mb": rss0}))
"""


def nsccn_bin() -> str:
    exe = Path(sys.executable).with_name("nsccn")
    return str(exe) if exe.exists() else "nsccn"


def run_nsccn(tree: Path, work: Path, in_process: bool) -> dict:
    index_dir = work / ("lib" if in_process else "pipe")
    env = {**os.environ, "NSCCN_INDEX_DIR": str(index_dir)}
    cmd = [nsccn_bin(), "index", str(tree), "--json"] + (["--in-process"] if in_process else [])
    r = run_tree(cmd, env=env)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{r.stderr[-3000:]}")
    s = json.loads(r.stdout)
    out = {"wall_s": r.wall_s, "cpu_s": r.cpu_s, "sampled_cpu_s": r.sampled_cpu_s, "peak_rss_sum_mb": r.peak_rss_sum_mb,
           "peak_rss_by_process_mb": r.peak_rss_by_process_mb, "disk_bytes": dir_bytes(index_dir),
           "db_bytes": (index_dir / "index.db").stat().st_size, "files": s["files_indexed"], "entities": s["entities"],
           "edges": s["edges"]}
    shutil.rmtree(index_dir, ignore_errors=True)
    return out


def aider_home(aider_python: str, work: Path) -> Path:
    """A HOME whose ~/.aider/caches holds litellm's bundled price list, so Aider never goes to
    the network for it (it refetches an empty or missing one on every start)."""
    home = work / "aider-home"
    caches = home / ".aider" / "caches"
    caches.mkdir(parents=True, exist_ok=True)
    src = subprocess.run([aider_python, "-c", "import litellm, os; print(os.path.dirname(litellm.__file__))"],
                         capture_output=True, text=True, check=True, env={**os.environ, "HOME": str(home)}).stdout.strip()
    shutil.copy(Path(src) / "model_prices_and_context_window_backup.json", caches / "model_prices_and_context_window.json")
    return home


def run_aider(tree: Path, work: Path, aider_python: str, home: Path) -> dict:
    cache = work / "aider-tags-cache"
    shutil.rmtree(cache, ignore_errors=True)
    env = {**os.environ, "HOME": str(home), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    r = run_tree([aider_python, "-c", AIDER_DRIVER, str(tree), str(cache)], env=env, cwd=str(tree))
    if r.returncode != 0:
        raise SystemExit(f"aider failed:\n{r.stderr[-3000:]}")
    inner = json.loads(r.stdout.strip().splitlines()[-1])
    out = {"wall_s": r.wall_s, "cpu_s": r.cpu_s, "sampled_cpu_s": r.sampled_cpu_s, "peak_rss_sum_mb": r.peak_rss_sum_mb,
           "disk_bytes": dir_bytes(cache), **inner}
    shutil.rmtree(cache, ignore_errors=True)
    return out


def med(rows: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", required=True)
    ap.add_argument("--aider-python", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1, help="untimed passes of every side first (page cache, bytecode)")
    ap.add_argument("--out-dir", default=None)
    ap.add_argument("--label", default=None, help="result file name (default: the tree's directory name)")
    args = ap.parse_args()
    tree = Path(args.tree).resolve()
    if (tree / ".git").exists():
        raise SystemExit(f"{tree} has a .git: give a plain tree (git archive), so NSCCN reads no history")
    work = Path(tempfile.mkdtemp(prefix="nsccn-vs-aider-"))
    sides = {"nsccn pipeline": [], "nsccn library": [], "aider repo map": []}
    loads = []
    try:
        home = aider_home(args.aider_python, work)
        for _ in range(args.warmup):  # warms the page cache and the interpreters' bytecode alike
            run_nsccn(tree, work, False), run_nsccn(tree, work, True), run_aider(tree, work, args.aider_python, home)
        for rnd in range(args.rounds):
            loads.append(os.getloadavg()[0])
            sides["nsccn pipeline"].append(run_nsccn(tree, work, False))
            sides["nsccn library"].append(run_nsccn(tree, work, True))
            sides["aider repo map"].append(run_aider(tree, work, args.aider_python, home))
            print(f"round {rnd}: " + "; ".join(f"{k} {v[-1]['wall_s']:.1f} s wall, {v[-1]['cpu_s']:.1f} s CPU"
                                              for k, v in sides.items()) + f" (load {loads[-1]:.1f} before)", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    aider = sides["aider repo map"]
    a_cpu, a_map_cpu = med(aider, "cpu_s"), med(aider, "map_cpu_s")
    lines = [f"`python benchmarks/aider_side_by_side.py --tree {tree.name} --rounds {args.rounds}` "
             f"({os.cpu_count()} cores; load average before each round: {', '.join(f'{x:.1f}' for x in loads)}; "
             f"medians of {args.rounds} interleaved rounds)\n",
             "| side | wall s | CPU s (user+sys, all processes) | CPU / Aider's process | CPU / Aider's map build "
             "| peak RSS summed MB | on disk MB | |",
             "|---|---|---|---|---|---|---|---|"]
    for name, rows in sides.items():
        if name.startswith("nsccn"):
            note = f"{rows[0]['files']} files, {rows[0]['entities']} entities, {rows[0]['edges']} edges"
            procs = rows[-1]["peak_rss_by_process_mb"]
            if len(procs) > 1:
                note += "; peak per process: " + ", ".join(f"{k} {v:.0f}" for k, v in sorted(procs.items(), key=lambda kv: -kv[1]))
        else:
            note = (f"{rows[0]['files']} files given; map build alone {med(rows, 'map_wall_s'):.1f} s wall, "
                    f"{a_map_cpu:.1f} s CPU; {med(rows, 'rss_before_map_mb'):.0f} MB before the map (imports)")
        lines.append(f"| {name} | {med(rows, 'wall_s'):.1f} | {med(rows, 'cpu_s'):.1f} | {med(rows, 'cpu_s') / a_cpu:.2f}x "
                     f"| {med(rows, 'cpu_s') / a_map_cpu:.2f}x | {med(rows, 'peak_rss_sum_mb'):.0f} "
                     f"| {med(rows, 'disk_bytes') / 2**20:.1f} | {note} |")
    print("\n".join(lines))
    if args.out_dir:
        out = Path(args.out_dir)
        out.mkdir(parents=True, exist_ok=True)
        label = args.label or tree.name
        (out / f"{label}.json").write_text(json.dumps({"tree": str(tree), "cpus": os.cpu_count(), "loads": loads,
                                                       "rounds": sides}, indent=2))
        (out / f"{label}.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
