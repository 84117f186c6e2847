#!/usr/bin/env python
"""Wall time of one `nsccn` CLI query, process start to exit, as a user or a script pays it.

    python benchmarks/cli_latency.py ROOT [--n 10] [--pipeline] [--json OUT.json]

ROOT must be indexed (`nsccn index ROOT [--embed]`; with vectors, search and localize embed their
query). Each command runs N times as a fresh `nsccn` process (the installed executable beside this
interpreter), one at a time, output discarded; the table gives the median, min and max wall time
per command. The file is the indexed file with most entities, the entity its longest function,
the symbol that function's name.

`--pipeline` first starts `nsccn serve ROOT --no-mcp` and waits until its embedder has loaded its
model: the CLI then embeds queries through the pipeline's embedder (issue 14, item 6). Without
it, a query is embedded with the bundled model loaded in the CLI process itself.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

from nsccn.config import load_config
from nsccn.store import Store

QUERY = "where is the cache invalidated when a file changes"
REPORT = ("Calling the function with an empty list raises IndexError instead of returning an empty result.\n"
          "Traceback (most recent call last):\n  File \"example.py\", line 3, in <module>\n    run([])\n"
          "IndexError: list index out of range\n")


# As an installed package runs: with its bytecode cached (a PYTHONDONTWRITEBYTECODE environment
# would compile every module of nsccn on every call, ~60 ms).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def nsccn_exe() -> list[str]:
    exe = Path(sys.executable).parent / "nsccn"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "nsccn.cli"]


def targets(root: Path) -> tuple[str, str, str]:
    store = Store(load_config(root).db_path(root), readonly=True)
    try:
        (path,) = store.conn.execute(
            "SELECT path FROM entities GROUP BY path ORDER BY COUNT(*) DESC, path LIMIT 1").fetchone()
        eid, qualname = store.conn.execute(
            "SELECT id, qualname FROM entities WHERE path=? AND kind IN ('func','method') "
            "ORDER BY end_line - start_line DESC LIMIT 1", (path,)).fetchone()
        vectors = store.conn.execute("SELECT 1 FROM sqlite_master WHERE name='vec_ids'").fetchone() is not None
    finally:
        store.close()
    print(f"file {path}, entity {eid}; vectors: {'yes' if vectors else 'no'}", file=sys.stderr)
    return path, eid, qualname.split(".")[-1]


def start_pipeline(root: Path) -> subprocess.Popen:
    proc = subprocess.Popen([*nsccn_exe(), "serve", str(root), "--no-mcp"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, env=ENV)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        r = subprocess.run([*nsccn_exe(), "status", "--json", "--root", str(root)], capture_output=True, text=True)
        st = json.loads(r.stdout) if r.stdout.startswith("{") else {}
        live = st.get("pipeline") or {}
        embedder = ((live.get("actors") or {}).get("embedder") or {}).get("state")
        if live.get("state") == "watching" and live.get("idle") and embedder == "running":
            time.sleep(5)  # the initial scan's last work settles: measure the CLI, not the catch-up
            return proc
        if proc.poll() is not None:
            raise SystemExit("nsccn serve exited before it was ready")
        time.sleep(1)
    raise SystemExit("the pipeline was not ready within 600 s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", type=Path)
    ap.add_argument("--n", type=int, default=10, help="runs per command")
    ap.add_argument("--pipeline", action="store_true", help="run the commands while `nsccn serve` runs")
    ap.add_argument("--json", type=Path, help="write the timings here")
    args = ap.parse_args()
    root = args.root.resolve()
    path, eid, name = targets(root)
    commands = {
        "search": ["search", QUERY],
        "localize": ["localize", REPORT],
        "skeleton": ["skeleton", path],
        "skeleton --tokens": ["skeleton", path, "--tokens"],
        "window": ["window", eid],
        "trace (depth 2)": ["trace", eid, "--depth", "2"],
        "symbol": ["symbol", name],
        "refs": ["refs", eid],
    }
    proc = start_pipeline(root) if args.pipeline else None
    results = {}
    try:
        for label, cmd in commands.items():
            times = []
            for _ in range(args.n):
                t = time.perf_counter()
                r = subprocess.run([*nsccn_exe(), *cmd, "--root", str(root)], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True, env=ENV)
                times.append(time.perf_counter() - t)
                if r.returncode != 0:
                    raise SystemExit(f"{label} failed ({r.returncode}): {r.stderr.strip()[-500:]}")
            results[label] = {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times)}
    finally:
        if proc is not None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=60)
    load = os.getloadavg()[0]
    print(f"| command ({'pipeline running' if args.pipeline else 'no pipeline'}, n={args.n}, load {load:.1f}) "
          "| median s | min s | max s |\n|---|---:|---:|---:|")
    for label, r in results.items():
        print(f"| {label} | {r['median_s']:.2f} | {r['min_s']:.2f} | {r['max_s']:.2f} |")
    if args.json:
        args.json.write_text(json.dumps({"root": str(root), "pipeline": args.pipeline, "n": args.n,
                                         "load": load, "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
