#!/usr/bin/env python
"""Per-tool latency over MCP stdio, and tokens per answer against reading the whole files involved.

    python benchmarks/mcp_latency.py ROOT [--n 100] [--n-slow 20] [--json OUT.json]

ROOT must be indexed (`nsccn index ROOT`). The server is a real subprocess, `nsccn mcp --root ROOT`,
driven by fastmcp's stdio client (what Claude Code or Cursor do); each latency is one `tools/call`
round trip measured in the client, so it includes JSON-RPC framing, the pipe and the client's parsing.
Calls run one at a time after two warm-up calls per tool. Entities, files and names are sampled from
the index with a fixed seed (functions and methods of at least 3 lines); search and context queries
are a fixed list of plain-English tasks plus sampled identifiers.

Tokens (o200k_base, `nsccn.tokens.count_tokens`) are counted on the text content of each answer,
i.e. what the model reads. "Whole files" is what an agent without NSCCN would read to get the same
answer: the full text of every distinct repository file the answer points into (skeleton and window:
the file itself; search: the files of the results; trace: the files of the entities reached;
find_symbol / find_references: the files of the definitions / referencing sites; assemble_context:
the files of the included entities). repo_map and index_status have no file equivalent.

A navigation step ("skeleton + window", the specification's ~5,000 -> ~800 tokens claim) is one
read_skeleton of a file plus one open_surgical_window on an entity in it, against that file.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from nsccn.store import Store
from nsccn.config import load_config
from nsccn.tokens import count_tokens

QUERIES = [
    "simplify trigonometric expressions",
    "solve a system of linear equations",
    "derivative of a function with respect to a symbol",
    "integrate a rational function",
    "print an expression as LaTeX",
    "matrix determinant",
    "expand a polynomial product",
    "series expansion around a point",
    "limit of an expression at infinity",
    "factor a polynomial over the integers",
    "convert an expression to a string with the str printer",
    "substitute a value for a symbol in an expression",
    "greatest common divisor of polynomials",
    "evaluate an expression numerically with evalf precision",
    "check whether an expression is zero",
    "parse a string into a sympy expression",
    "assumptions: is the symbol positive",
    "rewrite an expression in terms of exponentials",
    "lambdify an expression into a numpy function",
    "piecewise function conditions",
]


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def nsccn_command() -> tuple[str, list[str]]:
    exe = Path(sys.executable).parent / "nsccn"
    if exe.exists():
        return str(exe), []
    found = shutil.which("nsccn")
    return (found, []) if found else (sys.executable, ["-m", "nsccn.cli"])


def sample_inputs(root: Path, n: int, n_slow: int, seed: int = 11) -> dict[str, list[dict]]:
    db = load_config(root).db_path(root)
    with Store(db, readonly=True) as store:
        rows = store.conn.execute(
            "SELECT id, name, path FROM entities WHERE kind IN ('func','method') AND end_line - start_line >= 2 ORDER BY id"
        ).fetchall()
    rng = random.Random(seed)
    picks = rng.sample(rows, min(n, len(rows)))
    ids = [r[0] for r in picks]
    files = [r[2] for r in picks]
    names = [r[1] for r in picks]
    queries = (QUERIES + names)[:n]
    return {
        "search_and_rank": [{"query": q, "limit": 10} for q in queries],
        "read_skeleton": [{"file_path": f} for f in files],
        "trace_causal_path": [{"entity_id": i, "direction": "downstream", "depth": 3} for i in ids],
        "open_surgical_window": [{"entity_id": i, "context_lines": 5} for i in ids],
        "find_symbol": [{"name": nm} for nm in names],
        "find_references": [{"entity_id": i} for i in ids],
        "repo_map": [{"max_tokens": 1024} for _ in range(n_slow)],
        "repo_map (focus)": [{"max_tokens": 1024, "focus": [f]} for f in files[:n_slow]],
        "assemble_context": [{"query": q, "max_tokens": 8000} for q in QUERIES[:n_slow]],
        "index_status": [{} for _ in range(n_slow)],
    }


def files_involved(tool: str, args: dict, data: dict) -> list[str]:
    if tool == "read_skeleton":
        return [data["file"]]
    if tool == "open_surgical_window":
        return [data["file"]]
    if tool == "search_and_rank":
        return [r["file"] for r in data["results"]]
    if tool == "trace_causal_path":
        return [e.split(":", 2)[1] for e in data["entities"] if e.split(":", 1)[0] in ("module", "class", "func", "method")]
    if tool == "find_symbol":
        return [d["file"] for d in data["definitions"]]
    if tool == "find_references":
        return [r["file"] for r in data["references"]]
    if tool == "assemble_context":
        return [e.split(":", 2)[1] for e in data["entities"]]
    return []


_file_tokens: dict[str, int] = {}


def whole_file_tokens(root: Path, files: list[str]) -> int:
    total = 0
    for f in dict.fromkeys(files):
        if f not in _file_tokens:
            try:
                _file_tokens[f] = count_tokens((root / f).read_text(errors="replace"))
            except OSError:
                _file_tokens[f] = 0
        total += _file_tokens[f]
    return total


async def bench(root: Path, inputs: dict[str, list[dict]]) -> dict:
    cmd, pre = nsccn_command()
    t0 = time.perf_counter()
    transport = StdioTransport(cmd, pre + ["mcp", "--root", str(root)], keep_alive=False)
    results: dict[str, dict] = {}
    async with Client(transport, timeout=120) as c:
        await c.list_tools()
        startup_s = time.perf_counter() - t0
        for label, calls in inputs.items():
            tool = label.split(" ")[0]
            for args in calls[:2]:  # warm-up: first-touch caches (ranks, tokenizer, pages)
                await c.call_tool(tool, args, raise_on_error=False)
            lat, toks, files_toks, cut, errors = [], [], [], 0, 0
            for args in calls:
                t = time.perf_counter()
                r = await c.call_tool(tool, args, raise_on_error=False)
                lat.append((time.perf_counter() - t) * 1000)
                if r.is_error:
                    errors += 1
                    continue
                text = r.content[0].text
                data = r.structured_content or {}
                toks.append(count_tokens(text))
                files_toks.append(whole_file_tokens(root, files_involved(tool, args, data)))
                cut += bool(data.get("truncated"))
            results[label] = {
                "calls": len(calls), "errors": errors,
                "p50_ms": round(pct(lat, 50), 2), "p99_ms": round(pct(lat, 99), 2), "mean_ms": round(statistics.mean(lat), 2),
                "tokens_median": int(statistics.median(toks)) if toks else 0,
                "tokens_mean": round(statistics.mean(toks)) if toks else 0,
                "tokens_max": max(toks) if toks else 0,
                "whole_files_tokens_mean": round(statistics.mean(files_toks)) if any(files_toks) else None,
                "cut": cut,
            }
            print(f"  {label}: done", file=sys.stderr)
        # one navigation step: skeleton of a file + the window of an entity in it, vs the file
        step, whole = [], []
        for sk, win in zip(inputs["read_skeleton"], inputs["open_surgical_window"]):
            a = await c.call_tool("read_skeleton", sk)
            b = await c.call_tool("open_surgical_window", win)
            step.append(count_tokens(a.content[0].text) + count_tokens(b.content[0].text))
            whole.append(whole_file_tokens(root, [sk["file_path"]]))
        win_only = [results["open_surgical_window"]["tokens_mean"]]
    return {
        "root": str(root), "startup_s": round(startup_s, 2), "tools": results,
        "navigation_step": {
            "skeleton_plus_window_tokens_mean": round(statistics.mean(step)),
            "skeleton_plus_window_tokens_median": int(statistics.median(step)),
            "whole_file_tokens_mean": round(statistics.mean(whole)),
            "whole_file_tokens_median": int(statistics.median(whole)),
            "window_only_tokens_mean": win_only[0],
            "samples": len(step),
        },
    }


def table(out: dict) -> str:
    lines = [
        "| tool | calls | p50 ms | p99 ms | tokens/answer (median / mean / max) | whole files involved (mean tokens) | cut (cap or budget) |",
        "|---|---:|---:|---:|---|---:|---:|",
    ]
    for tool, r in out["tools"].items():
        wf = r["whole_files_tokens_mean"]
        lines.append(
            f"| {tool} | {r['calls']} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} | {r['tokens_median']} / {r['tokens_mean']} / {r['tokens_max']} "
            f"| {wf if wf is not None else '-'} | {r['cut']} |"
        )
    s = out["navigation_step"]
    lines.append("")
    lines.append(
        f"navigation step (read_skeleton + open_surgical_window, {s['samples']} files): "
        f"{s['skeleton_plus_window_tokens_median']} tokens median ({s['skeleton_plus_window_tokens_mean']} mean) "
        f"vs the whole file {s['whole_file_tokens_median']} median ({s['whole_file_tokens_mean']} mean); "
        f"the window alone {s['window_only_tokens_mean']} mean"
    )
    lines.append(f"server start (spawn + initialize + tools/list): {out['startup_s']} s")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root")
    ap.add_argument("--n", type=int, default=100, help="calls per fast tool")
    ap.add_argument("--n-slow", type=int, default=20, help="calls for repo_map, assemble_context, index_status")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    root = Path(args.root).resolve()
    inputs = sample_inputs(root, args.n, args.n_slow)
    out = asyncio.run(bench(root, inputs))
    print(table(out))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
