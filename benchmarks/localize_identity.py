#!/usr/bin/env python
"""The localizer's answers to a sample of dev-set reports, as JSON: run it on two indexes (or two
versions of nsccn) and compare the files byte for byte (`cmp`): the guardrail that a change to the
store leaves localization as it was.

    python benchmarks/localize_identity.py TREE INDEX.db OWNER/REPO OUT.json [--n 15]

TREE is the checkout INDEX.db was built from; reports are the first N of that repository in
/work/shared/bench/swebench-dev.jsonl (or --dataset).
"""

from __future__ import annotations

import argparse
import json

from nsccn.serving.answers import plain
from nsccn.serving.navigator import Navigator


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("tree")
    ap.add_argument("db")
    ap.add_argument("repo")
    ap.add_argument("out")
    ap.add_argument("--n", type=int, default=15)
    ap.add_argument("--dataset", default="/work/shared/bench/swebench-dev.jsonl")
    args = ap.parse_args()
    rows = [json.loads(line) for line in open(args.dataset)]
    reports = [r["problem_statement"] for r in rows if r["repo"] == args.repo][: args.n]
    nav = Navigator(args.tree, db_path=args.db)
    answers = []
    for report in reports:
        a = plain(nav.localize(report, limit=10))  # the answer as its JSON
        a.pop("ranking", None)  # names the model file's path
        a.pop("seconds", None)
        answers.append(a)
    with open(args.out, "w") as f:
        json.dump(answers, f, sort_keys=True, default=str)
    print(f"{len(answers)} reports localized")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
