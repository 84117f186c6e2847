#!/usr/bin/env python
"""Do queries wait behind bulk work? search and localize latency through `nsccn serve` while its
pipeline builds a large repository's index from nothing (parsing, writing, embedding in the
writer), then the same queries once it is idle.

    python benchmarks/query_during_index.py --repo DIR [--idle 30] [--gap 0.2] [--out FILE.json]
        [--cli] [--model NAME] [--setting KEY=VALUE ...] [--nsccn PATH] [--name Q --phrase Q --report Q]

DIR is a checkout (e.g. the sympy tree: `git --git-dir=/work/.mirror/sympy+sympy/repo archive HEAD
| tar -x -C DIR`); its index (DIR/.nsccn) is removed first, so the build is cold. The client is a
real MCP client (fastmcp) over stdio, as an agent is: `nsccn serve DIR`. While the pipeline
builds, it asks one query after another (`--gap` seconds apart), cycling through a name search
(the fusion), a phrase search (the learned ranker) and a bug report (localize_issue), and asks
`index_status` between them to know the phase; once the index is complete (no files or vectors
pending), `--idle` more rounds of the same queries. Beside each call's wall time, the CPU time
the server process spent on it (/proc: 10 ms ticks, so read the means): on a busy machine the
wall time also counts waiting for a core, the CPU time only the call's own work. The first call of the session is reported
apart (it pays for loading what a query needs). Reported per tool: p50 / p90 / max while
building and idle, and their ratio. A query answered while the index is partial is faster or
slower for having less to rank, so a ratio near 1 is the aim, not an exact measure of waiting.

`--cli`: the queries are `nsccn search` / `nsccn localize` commands instead (one process per call,
run from DIR, as a user in a terminal beside the agent's session), timed start to exit; the MCP
session only keeps the pipeline running and reports its phase. `--model` and `--setting` write a
user configuration for the run (`NSCCN_CONFIG`: e.g. `--model minilm-code`, the bundled
transformer, whose bulk embedding is the heavy case; `--setting bulk_nice=0` to compare).
`--embed-probe` also times, each round, one new query's embedding through the running pipeline's query
lane (a transformer's: what a CLI search waits for before it ranks). `--nsccn` runs another checkout's command (its code before a change), so two codes can be run
alternately in one session. `--name`, `--phrase`, `--report` replace the sympy queries.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from fastmcp import Client
from fastmcp.client.transports import StdioTransport

NSCCN = Path(sys.executable).parent / "nsccn"
CLI = {"search_and_rank": ("search", "query"), "localize_issue": ("localize", "report")}
QUERIES = [
    ("search_and_rank", {"query": "Matrix", "limit": 10}),
    ("search_and_rank", {"query": "simplify a trigonometric expression with square roots", "limit": 10}),
    ("localize_issue", {"report": "integrate(exp(-x**2), (x, -oo, oo)) returns an unevaluated Integral instead "
                                  "of sqrt(pi) when x is declared real", "limit": 10}),
]


def percentile(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def server_pid() -> int | None:
    """The `nsccn serve` process this client started (it answers the MCP calls)."""
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
                if ppid == os.getpid() and b"serve" in (d / "cmdline").read_bytes():
                    return int(d.name)
            except (OSError, ValueError, IndexError):
                continue
    return None


def cpu_s(pid: int | None) -> float:
    """CPU seconds (user + system) the process has used: what a call cost it, whatever else ran."""
    if pid is None:
        return float("nan")
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def building(status: dict) -> bool:
    live = status.get("pipeline") or {}
    return (live.get("state") == "indexing" or (live.get("files_pending") or 0) > 0
            or (live.get("vectors_pending") or 0) > 0 or not status.get("indexed"))


async def cli_call(tool: str, args: dict, repo: Path, env: dict, timeout_s: float) -> tuple[bool, float]:
    """One `nsccn search`/`localize` process, run from the repository: (failed, its CPU seconds)."""
    cmd, key = CLI[tool]
    proc = await asyncio.create_subprocess_exec(
        str(NSCCN), cmd, args[key], "--limit", str(args.get("limit", 10)), cwd=str(repo), env=env,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    before = os.times()
    code = await asyncio.wait_for(proc.wait(), timeout_s)
    after = os.times()  # children's CPU: the command's own work, whatever else ran
    return code != 0, (after.children_user - before.children_user) + (after.children_system - before.children_system)


def embed_probe(repo: Path, env: dict, i: int) -> float | None:
    """Seconds for the running pipeline's embedder to embed one new query (its query lane, as a
    CLI search asks it): None when no pipeline with an embedder runs."""
    from nsccn.config import load_config
    from supervisor.addresses import running_pipeline
    from workers.query_client import QueryEmbedClient

    old = os.environ.get("NSCCN_CONFIG")
    os.environ["NSCCN_CONFIG"] = env.get("NSCCN_CONFIG", old or "")
    try:
        info = running_pipeline(repo, load_config(repo)) or {}
    finally:
        if old is None:
            os.environ.pop("NSCCN_CONFIG", None)
        else:
            os.environ["NSCCN_CONFIG"] = old
    address = (info.get("addresses") or {}).get("query")
    if not info.get("embed") or not address:
        return None
    client = QueryEmbedClient(address, fallback=False, timeout_s=60)
    t0 = time.perf_counter()
    try:
        client.embed_query(f"probe {i}: where is the request body prepared for round {i}")
    except (TimeoutError, RuntimeError):
        return None
    finally:
        client.close()
    return time.perf_counter() - t0


async def run(repo: Path, idle_rounds: int, gap: float, timeout_s: float, cli: bool = False, env: dict | None = None,
              probe: bool = False) -> dict:
    env = {**(env or os.environ), "NSCCN_LOG_LEVEL": "WARNING"}
    transport = StdioTransport(command=str(NSCCN), args=["serve", str(repo)], cwd=str(repo), env=env)
    samples: list[dict] = []
    started = time.monotonic()
    async with Client(transport, timeout=timeout_s) as c:
        pid = server_pid()
        phase, i, idle_left, last_status = "building", 0, None, {}
        while True:
            t0 = time.perf_counter()
            st = (await c.call_tool_mcp("index_status", {})).structured_content or {}
            status_s = time.perf_counter() - t0
            last_status = st
            phase = "building" if building(st) else "idle"
            if phase == "idle" and idle_left is None:
                idle_left = idle_rounds * len(QUERIES)
            tool, args = QUERIES[i % len(QUERIES)]
            if cli:
                t0 = time.perf_counter()
                failed, cpu = await cli_call(tool, args, repo, env, timeout_s)
                took, data = time.perf_counter() - t0, {}
            else:
                t0, c0 = time.perf_counter(), cpu_s(pid)
                r = await c.call_tool_mcp(tool, args)
                took, cpu = time.perf_counter() - t0, cpu_s(pid) - c0
                failed, data = bool(r.is_error), r.structured_content or {}
            live = st.get("pipeline") or {}
            embed_s = await asyncio.to_thread(embed_probe, repo, env, i) if probe else None
            samples.append({"i": i, "tool": tool, "query": i % len(QUERIES), "phase": phase, "s": took, "cpu_s": cpu,
                            "embed_s": embed_s,
                            "status_s": status_s, "error": failed, "partial": bool(data.get("partial")),
                            "t": time.monotonic() - started, "files": st.get("files"),
                            "files_pending": live.get("files_pending"), "vectors_pending": live.get("vectors_pending")})
            i += 1
            if idle_left is not None:
                idle_left -= 1
                if idle_left <= 0:
                    break
            await asyncio.sleep(gap)
    return {"samples": samples, "final_status": {k: last_status.get(k) for k in ("files", "entities", "vectors")}}


def summarize(samples: list[dict]) -> dict:
    first = samples[0]
    out = {"first_call": {"tool": first["tool"], "s": round(first["s"], 3), "phase": first["phase"]}, "tools": {}}
    rest = samples[1:]
    for q, (tool, args) in enumerate(QUERIES):
        row = {"tool": tool, "arguments": args}
        for phase in ("building", "idle"):
            xs = [s["s"] for s in rest if s["query"] == q and s["phase"] == phase and not s["error"]]
            cpu = [s["cpu_s"] for s in rest if s["query"] == q and s["phase"] == phase and not s["error"]]
            row[phase] = {"n": len(xs), "p50_ms": round(percentile(xs, 50) * 1000, 1),
                          "cpu_mean_ms": round(sum(cpu) / max(1, len(cpu)) * 1000, 1),
                          "p90_ms": round(percentile(xs, 90) * 1000, 1), "max_ms": round(max(xs, default=float("nan")) * 1000, 1)}
        b, d = row["building"], row["idle"]
        for phase in ("building", "idle"):
            es = [s["embed_s"] for s in rest if s["query"] == q and s["phase"] == phase and s.get("embed_s") is not None]
            if es:
                row[phase]["embed_p50_ms"] = round(percentile(es, 50) * 1000, 1)
                row[phase]["embed_p90_ms"] = round(percentile(es, 90) * 1000, 1)
        row["ratio_p50"] = round(b["p50_ms"] / d["p50_ms"], 2) if d["n"] and b["n"] else None
        row["ratio_p90"] = round(b["p90_ms"] / d["p90_ms"], 2) if d["n"] and b["n"] else None
        out["tools"][f"{q}:{tool}"] = row
    out["errors"] = sum(s["error"] for s in samples)
    out["building_s"] = round(max((s["t"] for s in samples if s["phase"] == "building"), default=0.0), 1)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", type=Path, required=True)
    ap.add_argument("--idle", type=int, default=30, help="rounds of the queries once the index is complete")
    ap.add_argument("--gap", type=float, default=0.2, help="seconds between two queries")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds one call may take")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--cli", action="store_true", help="queries as `nsccn search`/`localize` commands, not MCP calls")
    ap.add_argument("--model", help="the embedding model for this run (a user setting), e.g. minilm-code")
    ap.add_argument("--setting", action="append", default=[], metavar="KEY=VALUE",
                    help="another user setting for this run (JSON value), e.g. bulk_nice=0")
    ap.add_argument("--embed-probe", action="store_true",
                    help="also time one query embedding through the pipeline's query lane each round (transformer models)")
    ap.add_argument("--nsccn", type=Path, help="the nsccn command to run (default: this environment's)")
    ap.add_argument("--name", help="the name query (default: sympy's)")
    ap.add_argument("--phrase", help="the phrase query")
    ap.add_argument("--report", help="the bug report")
    args = ap.parse_args(argv)
    global NSCCN
    if args.nsccn:
        NSCCN = args.nsccn.resolve()
    for i, text in enumerate((args.name, args.phrase, args.report)):
        if text:
            tool, old = QUERIES[i]
            QUERIES[i] = (tool, {**old, "query" if tool == "search_and_rank" else "report": text})
    repo = args.repo.resolve()
    env = dict(os.environ)
    settings = {k: json.loads(v) for k, v in (s.split("=", 1) for s in args.setting)}
    if args.model:
        settings["embedding_model"] = args.model
    if settings:
        cfg = Path(tempfile.mkdtemp(prefix="nsccn-bench-")) / "config.json"
        cfg.write_text(json.dumps(settings))
        env["NSCCN_CONFIG"] = str(cfg)
    subprocess_stop(repo, env)
    shutil.rmtree(repo / ".nsccn", ignore_errors=True)  # cold: the whole build happens under the queries
    load = os.getloadavg()
    res = asyncio.run(run(repo, args.idle, args.gap, args.timeout, cli=args.cli, env=env, probe=args.embed_probe))
    subprocess_stop(repo, env)  # the pipeline lingers after the session: end it
    summary = summarize(res["samples"])
    summary["final_status"] = res["final_status"]
    summary["run"] = {"nsccn": str(NSCCN), "cli": args.cli, "settings": settings,
                      "load_before": [round(x, 2) for x in load], "load_after": [round(x, 2) for x in os.getloadavg()]}
    print(json.dumps(summary, indent=1))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"summary": summary, **res}, indent=1) + "\n")
    return 0


def subprocess_stop(repo: Path, env: dict) -> None:
    import subprocess

    subprocess.run([str(NSCCN), "stop", str(repo)], capture_output=True, timeout=60, env=env)


if __name__ == "__main__":
    sys.exit(main())
