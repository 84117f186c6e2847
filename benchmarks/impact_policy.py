#!/usr/bin/env python
"""Replay test-selection policies offline on `impact_eval.py` results: safety against selection.

    python benchmarks/impact_policy.py [--set NAME=A.json,B.json ...] [--grid] [--policy KEY=VALUE ...]

Each result file must come from an `impact_eval.py` run that kept each commit's answer units by tier
(`answer_units`: the graph's tests, the module tests, the test files run whole), its suites, the
index's pytest suite (`index_suite`: the denominators the product's shares use), the truth and
the tests' times (the fields stripped from committed results). A policy says which units
`run` keeps:

- `floor`: the graph's tests below this confidence are left out (0: all);
- `module`: the module tier (tests of the files that import a changed module) `all` (`--wide`),
  `none`, or `fallback` (only where the graph reaches no test from the change: the product's
  default since stop 55; the answers are recorded with `wide`, so every choice replays);
- `file_share`: a test file of which at least this share of tests is reached runs whole (the
  product's WHOLE_FILE_SHARE: 0.1; 1.01: never);
- `suite_share`: the whole suite runs once the selection holds this share of it (the product's
  WHOLE_SUITE_SHARE: 0.7, of the test functions the index knows; here of the tests pytest collects,
  so generated tests count; 1.01: never).

Reported per set: commits (covered), safety (covered commits whose every covering test is
selected), median and mean recall, median selection rate and median time share over all commits
(what `impact_eval.py` reports). `--grid` lists every policy of a small grid, best first among those
that keep safety at or above `--min-safety` on the first set; the first set is where a policy is
chosen, the others are where it is measured.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from impact_eval import node  # noqa: E402

PRODUCT = {"floor": 0.0, "module": "fallback", "file_share": 0.1, "suite_share": 0.7}
GRID = {"floor": (0.0, 0.2, 0.4), "module": ("all", "fallback", "none"), "file_share": (0.1, 0.25, 0.5, 1.01),
        "suite_share": (0.5, 0.7, 0.9, 1.01)}


def load(spec: str) -> list[dict]:
    rows = []
    for path in spec.split(","):
        data = json.loads(Path(path).read_text())
        for c in data["commits"]:
            if "index_suite" not in c:
                raise SystemExit(f"{path}: commit {c['commit'][:10]} has no answer_units or index_suite (an older "
                                 "impact_eval.py run, or a committed result: those fields are stripped)")
            rows.append(c)
    return rows


def selected(c: dict, policy: dict) -> set[str]:
    """As the product decides: the shares of the index's tests (`index_suite`: file -> test names,
    what `run` counts), mapped to the tests pytest collected."""
    times = c["test_seconds"]
    collected = defaultdict(set)
    for t in times:
        collected[t.split("::", 1)[0]].add(t)
    suite = {f: set(names) for f, names in c["index_suite"].items()}
    graph = [u for u in c["answer_units"] if u[0] == "tests" and u[3] >= policy["floor"]]
    module = [u for u in c["answer_units"] if u[0] == "module_tests"]
    if policy["module"] == "none" or (policy["module"] == "fallback" and any(u[4] > 0 for u in graph)):
        module = []
    names = defaultdict(set)  # file -> the index's test names the units reach
    whole = set()
    for _tier, file, qual, _conf, _dist in graph + module:
        if qual is None:
            whole.add(file)
        else:
            names[file].add(qual)
    for file, reached in names.items():
        total = len(suite.get(file, ()))
        n = min(len(reached & suite.get(file, set())), total)
        if total and n < total and n >= policy["file_share"] * total:
            whole.add(file)
    keys = {(f, q) for f, qs in names.items() if f not in whole for q in qs & suite.get(f, set())}
    keys |= {(f, q) for f in whole for q in suite.get(f, ())}
    total = sum(len(v) for v in suite.values())
    if total and keys and len(keys) >= policy["suite_share"] * total:
        return set(times)
    got = {node(f, q) for f, qs in names.items() if f not in whole for q in qs} & set(times)
    for f in whole:
        got |= collected.get(f, set())
    return got


def measure(rows: list[dict], policy: dict) -> dict:
    sel, share, rec, safe = [], [], [], []
    for c in rows:
        times = c["test_seconds"]
        truth = set(c["truth_tests"]) & set(times)
        got = selected(c, policy) & set(times)
        total = sum(times.values()) or 1.0
        sel.append(len(got) / max(1, len(times)))
        share.append(sum(times[t] for t in got) / total)
        if truth:
            rec.append(len(got & truth) / len(truth))
            safe.append(truth <= got)
    return {"commits": len(rows), "covered": len(safe), "safety": sum(safe) / len(safe) if safe else None,
            "median_recall": statistics.median(rec) if rec else None, "mean_recall": statistics.fmean(rec) if rec else None,
            "median_selection": statistics.median(sel) if sel else None,
            "median_time_share": statistics.median(share) if share else None}


def fmt(m: dict) -> str:
    return (f"{m['commits']} ({m['covered']}) safety {m['safety']:.3f} recall {m['median_recall']:.2f}/{m['mean_recall']:.3f} "
            f"selection {m['median_selection']:.3f} time {m['median_time_share']:.3f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", action="append", required=True, help="NAME=A.json,B.json (the first: where a policy is chosen)")
    ap.add_argument("--policy", nargs="*", default=[], help="KEY=VALUE over the product's policy")
    ap.add_argument("--grid", action="store_true")
    ap.add_argument("--min-safety", type=float, default=0.9)
    args = ap.parse_args()
    sets = [(s.split("=", 1)[0], load(s.split("=", 1)[1])) for s in args.set]
    policy = dict(PRODUCT)
    for kv in args.policy:
        k, v = kv.split("=", 1)
        policy[k] = v if k == "module" else float(v)
    print("policy", policy)
    for name, rows in sets:
        print(f"  {name}: {fmt(measure(rows, policy))}")
    if args.grid:
        first = sets[0][1]
        results = []
        for values in itertools.product(*GRID.values()):
            p = dict(zip(GRID, values))
            results.append((measure(first, p), p))
        ok = sorted((r for r in results if r[0]["safety"] >= args.min_safety), key=lambda r: (r[0]["median_selection"], -r[0]["safety"]))
        print(f"\n{len(ok)} of {len(results)} policies keep safety >= {args.min_safety} on {sets[0][0]}; the ten that select least:")
        for m, p in ok[:10]:
            print(f"  {p}")
            for name, rows in sets:
                print(f"      {name}: {fmt(m if rows is first else measure(rows, p))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
