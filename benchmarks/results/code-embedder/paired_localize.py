#!/usr/bin/env python
"""Two runs of `benchmarks/localize.py` over the same queries (e.g. one per embedding model),
configuration by configuration: means and query-by-query better/worse with the sign test.

    python benchmarks/results/code-embedder/paired_localize.py --before OUT_DIR... --after OUT_DIR...
    python benchmarks/results/code-embedder/paired_localize.py --before OUT_DIR... --configs A B

(the second: configuration A against B within the same runs, e.g. `default` against `vector`)

Each OUT_DIR holds a `rankings.jsonl` (one per repository is how the held-out runs write them).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from paired_sign import KEYS, compare  # noqa: E402


def load(dirs: list[Path]) -> dict[str, dict[str, dict]]:
    """config -> instance id -> record."""
    out: dict[str, dict[str, dict]] = {}
    for d in dirs:
        for line in (d / "rankings.jsonl").read_text().splitlines():
            r = json.loads(line)
            out.setdefault(r["config"], {})[r["instance_id"]] = r
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", type=Path, nargs="+", required=True)
    ap.add_argument("--after", type=Path, nargs="+")
    ap.add_argument("--configs", nargs=2, metavar=("A", "B"), help="compare configuration A with B in --before")
    args = ap.parse_args(argv)
    if (args.after is None) == (args.configs is None):
        ap.error("give --after or --configs")
    before = load(args.before)
    if args.configs:
        a, b = args.configs
        before, after = {f"{a} -> {b}": before[a]}, {f"{a} -> {b}": before[b]}
    else:
        after = load(args.after)
    print("| config | queries | " + " | ".join(KEYS) + " |")
    print("|---|---|" + "---|" * len(KEYS))
    for config in [c for c in before if c in after]:
        ids = sorted(set(before[config]) & set(after[config]))
        cells = []
        for key in KEYS:
            b, a, better, worse, p = compare(before[config], after[config], ids, key)
            cells.append(f"{b:.1f} -> **{a:.1f}** (+{better}/-{worse}, p {p:.2g})")
        print(f"| {config} | {len(ids)} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
