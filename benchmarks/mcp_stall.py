#!/usr/bin/env python
"""No query stalls the server: good calls answered while a pathological one runs, over MCP stdio.

    python benchmarks/mcp_stall.py ROOT [--size 1048576] [--depth 550] [--good 20] [--json OUT.json]

ROOT must be indexed (`nsccn index ROOT`). The server is a real subprocess, `nsccn mcp --root ROOT`,
driven by fastmcp's stdio client. After warm-up it measures:

1. good calls alone (find_symbol of names sampled from the index, search_and_rank of a short query):
   the baseline latency;
2. the same good calls, one after another, while pathological calls run (`--bad` of them kept in
   flight, each sent again when answered): `search_and_rank` of a ~1 MB traceback whose frames have
   long paths (`tests/conftest.py: pathological_traceback`; before issue 12 such a query took 252 s
   in one search, and every other call waited behind it). Reported: the good calls' latency, how
   many were answered while a bad one was in flight, and the bad calls' own times and outcome (an
   answer that says what query analysis cut, or a time-budget error);
3. the other inputs of issue 12 item 5, each alone: a 60 kB path in a frame, a 60 kB path in prose,
   a 5,000-digit line number (each was an exception before).

The target: a good call answered within 1 s while the bad one runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import sys
import time
from pathlib import Path

from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from nsccn.config import load_config
from nsccn.store import Store

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from conftest import pathological_traceback  # noqa: E402  (one definition of the query, shared with the tests)


def nsccn_command() -> list[str]:
    exe = Path(sys.executable).parent / "nsccn"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("nsccn")
    return [found] if found else [sys.executable, "-m", "nsccn.cli"]


def good_calls(root: Path, n: int, seed: int = 7) -> list[tuple[str, dict]]:
    with Store(load_config(root).db_path(root), readonly=True) as store:
        names = sorted({n for (n,) in store.conn.execute("SELECT name FROM entities WHERE kind IN ('func', 'class')")})
    rng = random.Random(seed)
    out = []
    for i in range(n):
        if i % 2:
            out.append(("search_and_rank", {"query": f"where is {rng.choice(names)} used", "limit": 10}))
        else:
            out.append(("find_symbol", {"name": rng.choice(names)}))
    return out


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


async def timed(c: Client, tool: str, args: dict) -> tuple[float, bool, str]:
    t = time.perf_counter()
    r = await c.call_tool(tool, args, raise_on_error=False)
    return time.perf_counter() - t, r.is_error, r.content[0].text if r.content else ""


async def main_async(args) -> dict:
    root = Path(args.root).resolve()
    goods = good_calls(root, args.good)
    bad_query = pathological_traceback(args.size, depth=args.depth)
    cmd = args.command.split() if args.command else nsccn_command()
    transport = StdioTransport(cmd[0], cmd[1:] + ["mcp", "--root", str(root)], env=dict(os.environ), keep_alive=False)
    out: dict = {"root": str(root), "query_chars": len(bad_query), "depth": args.depth}
    async with Client(transport, timeout=600) as c:
        for tool, a in goods[:4]:  # warm-up: imports, caches, the PageRank prior
            await c.call_tool(tool, a)
        alone = [(await timed(c, tool, a))[0] for tool, a in goods]
        out["good_alone_ms"] = {"p50": statistics.median(alone) * 1e3, "max": max(alone) * 1e3}

        # `--bad` pathological calls kept in flight (one sent again as soon as it is answered)
        # for as long as the good calls run one after another.
        stop = asyncio.Event()
        bad_runs: list[tuple[float, bool, str]] = []
        in_flight = 0

        async def keep_bad():
            nonlocal in_flight
            while not stop.is_set():
                in_flight += 1
                try:
                    # a new first line each time: no cache of an earlier analysis helps
                    query = f"attempt {len(bad_runs)}-{in_flight}\n{bad_query}"
                    bad_runs.append(await timed(c, "search_and_rank", {"query": query}))
                finally:
                    in_flight -= 1

        bads = [asyncio.create_task(keep_bad()) for _ in range(args.bad)]
        await asyncio.sleep(0.5)  # the first 1 MB requests are on the pipe
        during, answered_while_running = [], 0
        for tool, a in goods:
            s, err, _ = await timed(c, tool, a)
            during.append(s)
            answered_while_running += in_flight > 0
        stop.set()
        await asyncio.gather(*bads)
        secs = [r[0] for r in bad_runs]
        out["bad_calls"] = {"n": len(bad_runs), "in_flight": args.bad, "p50_s": statistics.median(secs),
                            "max_s": max(secs), "errors": sum(r[1] for r in bad_runs),
                            "answer_head": bad_runs[0][2][:300]}
        out["good_during_ms"] = {"p50": statistics.median(during) * 1e3, "p90": pct(during, 0.9) * 1e3,
                                 "max": max(during) * 1e3, "answered_while_bad_ran": answered_while_running,
                                 "calls": len(during)}

        long_path = "/".join(["a"] * 30_000) + "/models.py"
        others = {
            "60 kB path in a frame": f'Traceback:\n  File "{long_path}", line 3, in save\n',
            "60 kB path in prose": f"see {long_path} for the bug",
            "5,000-digit line number": 'Traceback:\n  File "/srv/pkg/models.py", line ' + "9" * 5000 + ", in save\n",
        }
        out["other_inputs"] = {}
        for name, q in others.items():
            s, err, text = await timed(c, "search_and_rank", {"query": q})
            out["other_inputs"][name] = {"ms": s * 1e3, "error": err, "answer_head": text[:160]}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root")
    ap.add_argument("--size", type=int, default=1 << 20, help="characters of the pathological query")
    ap.add_argument("--depth", type=int, default=550, help="directories in each frame's path")
    ap.add_argument("--good", type=int, default=20, help="good calls, alone and while the bad ones run")
    ap.add_argument("--bad", type=int, default=2, help="pathological calls kept in flight meanwhile")
    ap.add_argument("--command", help="the server command before `mcp --root ROOT` (default: this nsccn); e.g. "
                    "to measure another checkout: PYTHONPATH=OLD:SITE_PACKAGES --command 'python -S -m nsccn.cli'")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    out = asyncio.run(main_async(args))
    g, d, b = out["good_alone_ms"], out["good_during_ms"], out["bad_calls"]
    print(f"good calls alone: p50 {g['p50']:.1f} ms, max {g['max']:.1f} ms")
    print(f"good calls while {b['in_flight']} {out['query_chars']:,}-character traceback queries run: p50 {d['p50']:.1f} ms, "
          f"p90 {d['p90']:.1f} ms, max {d['max']:.1f} ms; {d['answered_while_bad_ran']} of {d['calls']} answered "
          "while one was in flight")
    print(f"the pathological calls: {b['n']} of them, p50 {b['p50_s']:.2f} s, max {b['max_s']:.2f} s, "
          f"{b['errors']} time-budget errors; an answer: {b['answer_head'][:200]!r}")
    for name, r in out["other_inputs"].items():
        print(f"{name}: {r['ms']:.1f} ms, {'error' if r['error'] else 'answered'}: {r['answer_head'][:100]!r}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
