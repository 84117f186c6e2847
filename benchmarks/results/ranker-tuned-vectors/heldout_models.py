#!/usr/bin/env python
"""Ranking models scored on the same feature records of repositories none of them was trained
on: each model's means, then each against the first query by query (better/worse, sign test).

    python heldout_models.py --records 'GLOB' [--records 'GLOB' ...] --model NAME=RANKER.npz [--model ...]

Records are `benchmarks/localize.py --features` output (the twelve held-out repositories:
`--configs default` on indexes without vectors, `--configs vector,default` on indexes with them).
Each model ranks as `localize` does (`Ranker.score`, then `order`), from the records alone.
"""

from __future__ import annotations

import argparse
import glob
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from localize import aggregate, instance_metrics  # noqa: E402
from paired_sign import KEYS, compare  # noqa: E402

from nsccn.ranking import load_ranker, order  # noqa: E402
from nsccn.ranking.features import Candidates  # noqa: E402
from nsccn.ranking.train import load_records  # noqa: E402


def ranked(model: Path, records: list[dict]) -> dict[str, dict]:
    """instance id -> {"metrics": ...} of `model`'s ranking of each record's candidates."""
    ranker = load_ranker(model)
    out = {}
    for r in records:
        fs, gs = ranker.score(Candidates(r["files"], r["file_rows"], r["functions"], r["function_rows"]))
        out[r["instance_id"]] = {"metrics": instance_metrics(
            r["gold_files"], r["gold_functions"], order(r["files"], fs, r["fusion_files"])[:50],
            order(r["functions"], gs, r["fusion_functions"])[:50])}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", action="append", required=True, help="a glob of feature record files")
    ap.add_argument("--model", action="append", required=True, metavar="NAME=PATH")
    args = ap.parse_args(argv)
    paths = sorted({Path(p) for g in args.records for p in glob.glob(g)})
    if not paths:
        ap.error(f"no feature records match {args.records}")
    records = load_records(paths)
    models = [m.split("=", 1) for m in args.model]
    scores = {name: ranked(Path(path), records) for name, path in models}
    ids = sorted(scores[models[0][0]])
    print(f"{len(records)} queries of {len({r['repo'] for r in records})} repositories\n")
    print("| model | " + " | ".join(KEYS) + " |\n|---|" + "---|" * len(KEYS))
    for name, _ in models:
        m = aggregate(list(scores[name].values()))
        print(f"| {name} | " + " | ".join(f"{m[k]:.1f}" for k in KEYS) + " |")
    first = models[0][0]
    for name, _ in models[1:]:
        print(f"\n{first} -> {name}: " + paired(scores[first], scores[name], ids))
    return 0


def paired(before: dict[str, dict], after: dict[str, dict], ids: list[str]) -> str:
    """Per metric, how many of `ids` `after` ranks better and worse than `before`, and the sign test's p."""
    cells = []
    for key in KEYS:
        _, _, better, worse, p = compare(before, after, ids, key)
        cells.append(f"{key} +{better}/-{worse} p {p:.2g}")
    return "; ".join(cells)


if __name__ == "__main__":
    sys.exit(main())
