#!/usr/bin/env python
"""What vectors add to the learned ranker, on dev instances recorded twice: once from indexes
without vectors and once with (`benchmarks/localize.py --configs vector,default --features`).

    python benchmarks/vector_ablation.py --dev DEV_FEATURES --vec VEC_FEATURES [--mined MINED_FEATURES ...]

For each repository of VEC_FEATURES, models that never saw it (trained on the mined pairs and the
other dev repositories) score its instances three ways: the records without vectors; the records
with vectors (vector candidates join, vector ranks filled in) by a model trained where vectors were
always missing (what a model that does not read vectors would meet); and the records with vectors
by a model trained with the other vector repositories' records.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE))
sys.path.insert(0, str(_HERE.parent))
from train_ranker import aggregate, score_records  # noqa: E402

from nsccn.ranking.train import fit, load_records  # noqa: E402

COLUMNS = ("file@1", "file@3", "file@5", "function@5", "function@10")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dev", type=Path, required=True, help="dev features recorded without vectors")
    ap.add_argument("--vec", type=Path, required=True, help="the same instances (or some) recorded with vectors")
    ap.add_argument("--mined", type=Path, action="append", default=[])
    args = ap.parse_args()
    dev = list({r["instance_id"]: r for r in load_records([args.dev])}.values())
    vec = list({r["instance_id"]: r for r in load_records([args.vec]) if r.get("vectors")}.values())
    mined = load_records(args.mined)
    vids = {r["instance_id"] for r in vec}
    rows: dict[str, list[dict]] = {"no vectors": [], "vectors, model trained without them": [],
                                   "vectors, model trained with the other repositories' vectors": []}
    for repo in sorted({r["repo"] for r in vec}):
        others = [r for r in dev if r["repo"] != repo and r["instance_id"] not in vids]
        blind = fit(mined + others + [r for r in dev if r["repo"] != repo and r["instance_id"] in vids])
        seeing = fit(mined + others + [r for r in vec if r["repo"] != repo])
        rows["no vectors"] += score_records([r for r in dev if r["repo"] == repo and r["instance_id"] in vids], blind)
        rows["vectors, model trained without them"] += score_records([r for r in vec if r["repo"] == repo], blind)
        rows["vectors, model trained with the other repositories' vectors"] += score_records(
            [r for r in vec if r["repo"] == repo], seeing)
    print("| ranking | n | " + " | ".join(COLUMNS) + " |\n|---|---|" + "---|" * len(COLUMNS))
    for label, recs in rows.items():
        m = aggregate(recs)
        print(f"| {label} | {m['n']} | " + " | ".join(f"{m[k]:.1f}" for k in COLUMNS) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
