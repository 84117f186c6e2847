#!/usr/bin/env python
"""Fuzz every MCP tool's arguments with hypothesis, many examples, against a real `nsccn mcp` over stdio.

    python benchmarks/mcp_fuzz.py [ROOT] [--examples 500] [--seed N] [--json OUT.json]

ROOT must be indexed; without it, the test suite's fixture repository (`tests/test_mcp_server.py:
make_repo`) is written to a temporary directory and indexed. The arguments come from each tool's
advertised schema (`tests/mcp_fuzzing.py`: valid values and the values around the bounds, wrong
types, 100 kB strings, a 60 kB path, a 5,000-digit line number, paths out of the repository,
unknown and missing parameters). Every call must give a result within the token cap or a clean
tool error; a failure is reported with hypothesis's smallest failing example. Also reported per
tool: calls, results, clean errors, and the slowest call (nothing may hang: each call has 60 s).
The CI test (`tests/test_mcp_fuzz.py`) runs the same properties with a few examples per tool.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings, seed as hyp_seed

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from mcp_fuzzing import StdioSession, arguments, check_result, index_samples  # noqa: E402

CALL_TIMEOUT_S = 60


def nsccn_command() -> list[str]:
    exe = Path(sys.executable).parent / "nsccn"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("nsccn")
    return [found] if found else [sys.executable, "-m", "nsccn.cli"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", nargs="?")
    ap.add_argument("--examples", type=int, default=500, help="examples per tool")
    ap.add_argument("--seed", type=int, default=None, help="hypothesis seed (default: random)")
    ap.add_argument("--tools", help="comma-separated tools (default: all)")
    ap.add_argument("--json")
    args = ap.parse_args()

    tmp = None
    if args.root:
        root = Path(args.root).resolve()
    else:
        from test_mcp_server import make_repo

        tmp = tempfile.TemporaryDirectory()
        root = make_repo(Path(tmp.name) / "acme_repo")
    log = Path(tempfile.mkdtemp()) / "server.log"
    session = StdioSession(root, nsccn_command(), log_file=log)
    samples = index_samples(root)
    schemas = {t.name: t.input_schema for t in session.tools()}
    wanted = args.tools.split(",") if args.tools else sorted(schemas)
    report: dict = {"root": str(root), "examples_per_tool": args.examples, "tools": {}}
    failures = 0
    try:
        for tool in wanted:
            stats = {"calls": 0, "results": 0, "errors": 0, "slowest_s": 0.0, "slowest_args": None, "failure": None}

            @settings(max_examples=args.examples, database=None, deadline=None, suppress_health_check=list(HealthCheck))
            @given(arguments(schemas[tool], samples))
            def one_call(a):
                t = time.perf_counter()
                res = session.call(tool, a, CALL_TIMEOUT_S)
                took = time.perf_counter() - t
                stats["calls"] += 1
                stats["errors" if res.is_error else "results"] += 1
                if took > stats["slowest_s"]:
                    stats["slowest_s"], stats["slowest_args"] = took, {k: repr(v)[:80] for k, v in a.items()}
                check_result(tool, a, res)

            if args.seed is not None:
                one_call = hyp_seed(args.seed)(one_call)
            started = time.perf_counter()
            try:
                one_call()
            except Exception as exc:  # the property failed: hypothesis's smallest example is in the message
                failures += 1
                stats["failure"] = f"{type(exc).__name__}: {exc}"[:2000]
            stats["seconds"] = round(time.perf_counter() - started, 1)
            stats["slowest_s"] = round(stats["slowest_s"], 3)
            report["tools"][tool] = stats
            print(f"{tool}: {stats['calls']} calls ({stats['results']} results, {stats['errors']} clean errors) in "
                  f"{stats['seconds']} s; slowest {stats['slowest_s']} s"
                  + (f"\n  FAILED: {stats['failure']}" if stats["failure"] else ""), flush=True)
    finally:
        session.close()
        if tmp:
            tmp.cleanup()
    server_log = log.read_text(errors="replace")
    report["server_log_tracebacks"] = server_log.count("Traceback")
    print(f"{sum(s['calls'] for s in report['tools'].values())} calls, {failures} tools with a failure, "
          f"{report['server_log_tracebacks']} tracebacks in the server log ({log})")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    raise SystemExit(1 if failures or report["server_log_tracebacks"] else 0)


if __name__ == "__main__":
    main()
