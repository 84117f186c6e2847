#!/usr/bin/env python
"""Quick A/B of query-side changes: every instance against the index a localize.py run left behind.

    python benchmarks/localize_ab.py --dataset FILE --workdir WORKDIR [--repo OWNER/NAME] [--configs a,b]

WORKDIR is the work directory of an earlier `benchmarks/localize.py` run (one index per
repository, WORKDIR/{owner}+{name}/index.db, at the base commit of that repository's last
instance). No tree is moved and nothing is indexed, so a pass over the 181 dev instances takes
about a minute instead of over an hour.

The numbers are NOT the benchmark's: each report is matched against a later state of its
repository than the one it was filed against. They are close to it (dev set, full: file@1 54.1
here vs 55.2 end to end, function@10 52.0 vs 52.0), and both versions of a query-side change
(query analysis, fusion, aggregation) meet the very same indexes, which is what this is for: run
it before and after a change, then confirm the change with localize.py. Never report these
numbers as results.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from localize import CONFIGS, _slug, aggregate, instance_metrics, load_instances, markdown_table  # noqa: E402

from nsccn.query.fusion import localize  # noqa: E402


def score(instances: Sequence[dict], workdir: Path, configs: Sequence[str]) -> dict:
    """Metrics per configuration and repository, in the shape `markdown_table` reads."""
    repos = list(dict.fromkeys(inst["repo"] for inst in instances))
    missing = [r for r in repos if not (workdir / _slug(r) / "index.db").exists()]
    if missing:
        raise SystemExit(f"no index for {missing} under {workdir}: run benchmarks/localize.py with --workdir first")
    records: dict[str, list[dict]] = {c: [] for c in configs}
    for i, inst in enumerate(instances, start=1):
        db = workdir / _slug(inst["repo"]) / "index.db"
        for cfg in configs:
            loc = localize(db, inst["problem_statement"], signals=CONFIGS[cfg])
            records[cfg].append({"repo": inst["repo"], "query_s": loc.seconds,
                                 "metrics": instance_metrics(inst["gold_files"], inst["gold_functions"],
                                                             loc.files, loc.functions)})
        print(f"\r{i}/{len(instances)}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    results = {c: {"overall": aggregate(recs), **{r: aggregate([x for x in recs if x["repo"] == r]) for r in repos}}
               for c, recs in records.items()}
    return {"instances": len(instances), "repos": repos, "configs": {c: sorted(CONFIGS[c]) for c in configs},
            "results": results, "index": {}}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", required=True, type=Path)
    p.add_argument("--workdir", required=True, type=Path, help="the --workdir of an earlier localize.py run")
    p.add_argument("--repo", help="only this repository (owner/name)")
    p.add_argument("--limit", type=int, help="only the first N instances (after --repo)")
    p.add_argument("--configs", default="full,lexical-full", help=f"comma-separated, of {', '.join(CONFIGS)}")
    args = p.parse_args(argv)
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        p.error(f"unknown configs {unknown}; known: {list(CONFIGS)}")
    metrics = score(load_instances(args.dataset, args.repo, args.limit), args.workdir, configs)
    print("A/B only: indexes at their repository's last instance, not at each base commit\n")
    print(markdown_table(metrics).split("\nIndex (")[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
