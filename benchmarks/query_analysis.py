#!/usr/bin/env python
"""Query analysis time: real bug reports, megabyte stack traces of every language, hostile lines.

    python benchmarks/query_analysis.py [--code CHECKOUT] [--dataset FILE] [--sizes 262144,1048576] [--repeat 3]

Prints, per input, its size, the frames found and the best of `--repeat` timings of
`nsccn.query.query_analysis.analyze_query` (the cache bypassed), and per trace language the time per MB at
each size: equal per-MB times across sizes mean linear. `--code` imports nsccn from another
checkout, to compare two versions (run both in turn on an idle machine, or as whole processes
side by side).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def _repeat_to(block: str, size: int) -> str:
    return (block * (size // len(block) + 1))[:size]


def traces(size: int) -> dict[str, str]:
    """~`size` characters of each language's trace: distinct frames, so nothing deduplicates away."""
    def many(fmt: str) -> str:
        out, n, i = [], 0, 0
        while n < size:
            s = fmt.format(i=i)
            out.append(s)
            n += len(s)
            i += 1
        return "".join(out)

    deep = "/".join(f"dir{i}" for i in range(40))
    return {
        "python": many(f'  File "/usr/lib/{deep}/module_{{i}}.py", line {{i}}, in handler_{{i}}\n    do_thing(x)\n'),
        "go": "goroutine 1 [running]:\n" + many(f"github.com/acme/shop/pkg{{i}}.(*T).Method{{i}}(0xc0)\n\t/src/{deep}/f{{i}}.go:{{i}} +0x1d\n"),
        "java": many("\tat com.acme.shop.pkg{i}.Cart$Line.total{i}(Cart{i}.java:{i})\n"),
        "node": many(f"    at Object.total{{i}} (/app/{deep}/cart{{i}}.js:{{i}}:5)\n"),
        "rust": many(f"  {{i}}: shop::cart{{i}}::Cart::total::h0123456789abcdef\n             at ./src/{deep}/cart{{i}}.rs:{{i}}:5\n"),
        "csharp": many("   at Shop.Cart{i}.Total(Decimal x) in C:\\src\\Shop\\Cart{i}.cs:line {i}\n"),
        "ruby": many("\tfrom app/models/cart{i}.rb:{i}:in 'Cart#total{i}'\n"),
        "php": many("#{i} /app/src/Cart{i}.php({i}): Cart->total()\n"),
        "hostile-parens": _repeat_to("    at " + "f (" * 2000 + "\n", size),
        "hostile-php-in": _repeat_to("x" + " in a.php" * 5000 + "\n", size),
        "hostile-no-newline": _repeat_to("a(b:1:", size),
    }


def timed(analyze, text: str, repeat: int) -> tuple[float, int]:
    best, frames = float("inf"), 0
    for _ in range(repeat):
        started = time.perf_counter()
        a = analyze(text)
        best = min(best, time.perf_counter() - started)
        frames = len(a.frames)
    return best, frames


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--code", help="checkout whose nsccn to time (default: this one)")
    ap.add_argument("--dataset", default=str(Path(__file__).resolve().parents[2] / "shared/bench/swebench-dev.jsonl"))
    ap.add_argument("--sizes", default="262144,1048576")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    sys.path.insert(0, str(Path(args.code or Path(__file__).resolve().parents[1]).resolve()))
    from nsccn.query import query_analysis

    analyze = query_analysis._analyze.__wrapped__  # no cache: every call analyzes
    print(f"nsccn from {Path(query_analysis.__file__).parent}")
    if Path(args.dataset).exists():
        reports = [json.loads(line)["problem_statement"] for line in open(args.dataset)]
        started = time.perf_counter()
        for _ in range(args.repeat):
            for r in reports:
                analyze(r)
        per = (time.perf_counter() - started) / args.repeat / len(reports)
        print(f"{len(reports)} dev bug reports: {per * 1e3:.3f} ms per report (mean of {args.repeat} passes)")
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"{'input':20} " + " ".join(f"{s // 1024:>7} kB ms/MB (frames)" for s in sizes))
    rows: dict[str, list[str]] = {}
    for size in sizes:
        for name, text in traces(size).items():
            t, frames = timed(analyze, text, args.repeat)
            rows.setdefault(name, []).append(f"{t / (len(text) / 2**20) * 1e3:>13.1f} ({frames:>4})")
    for name, cells in rows.items():
        print(f"{name:20} " + " ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
