#!/usr/bin/env python
"""Short-query search: commit subjects -> the functions the commit changed, today's fusion search
beside the learned ranking, each repository scored by a model that never saw it.

    python benchmarks/search_bench.py --dataset MINED.jsonl --workdir WORKDIR
        --features MINED_FEATURES [--dev DEV_FEATURES] [--out OUTDIR]

MINED.jsonl is what `benchmarks/mine_history.py` wrote; WORKDIR the work directory of the
`benchmarks/localize.py` run over it (one index per repository, at its last instance's parent);
MINED_FEATURES that run's `--features` (the training data of the leave-one-repository-out models,
with DEV_FEATURES when given). The query is the commit's subject line alone (an agent's short
query, not a report); the gold functions are the commit's, as far as they still exist in the
index. Both rankings meet the same index, so the comparison is fair; the index is at a later
state than each commit's parent, so the absolute numbers are approximate.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE))
sys.path.insert(0, str(_HERE.parent))
from localize import _slug, entity_to_loc, load_instances  # noqa: E402

from nsccn import ranking  # noqa: E402
from nsccn.ranking.train import fit, load_records  # noqa: E402
from nsccn.ranking.features import LEXICAL_SIGNALS  # noqa: E402
from nsccn.query.fusion import search  # noqa: E402
from nsccn.store import Store  # noqa: E402

KS = (1, 5, 10)


def acc(gold: list[str], ranked: list[str]) -> dict[int, int]:
    """1 when any gold function is within the top k (a search answers one question: where to look)."""
    return {k: int(any(g in ranked[:k] for g in gold)) for k in KS}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", type=Path, required=True)
    ap.add_argument("--workdir", type=Path, required=True)
    ap.add_argument("--features", type=Path, required=True)
    ap.add_argument("--dev", type=Path)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    instances = load_instances(args.dataset)
    mined = load_records([args.features])
    dev = load_records([args.dev]) if args.dev else []
    results = {"fusion search": [], "learned search": []}
    for repo in sorted({i["repo"] for i in instances}):
        db = args.workdir / _slug(repo) / "index.db"
        if not db.exists():
            continue
        model = fit(dev + [r for r in mined if r["repo"] != repo])
        with Store(db, readonly=True) as store:
            known = {e for (e,) in store.conn.execute("SELECT path || ':' || qualname FROM entities")}
            for inst in (i for i in instances if i["repo"] == repo):
                gold = [g for g in inst["gold_functions"] if g in known]
                subject = inst["problem_statement"].strip().splitlines()[0]
                if not gold or not subject.strip():
                    continue
                fused = [entity_to_loc(h.entity.id) for h in
                         search(store, subject, limit=10, signals=LEXICAL_SIGNALS)]
                learned = [entity_to_loc(h.entity.id) for h in ranking.search(store, subject, 10, model)]
                results["fusion search"].append({"repo": repo, **acc(gold, fused)})
                results["learned search"].append({"repo": repo, **acc(gold, learned)})
        print(f"{repo}: {sum(1 for r in results['fusion search'] if r['repo'] == repo)} queries", file=sys.stderr)
    lines = ["| search | n | Acc@1 | Acc@5 | Acc@10 |", "|---|---|---|---|---|"]
    for name, rows in results.items():
        n = len(rows)
        lines.append(f"| {name} | {n} | " + " | ".join(f"{100 * sum(r[k] for r in rows) / max(1, n):.1f}" for k in KS)
                     + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "search.md").write_text(text)
        (args.out / "search.json").write_text(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
