#!/usr/bin/env python
"""Arms of ranker models, each arm scored on its own feature records of the same queries: per seed,
the mean over seeds, and every arm against the first, query by query (better/worse, sign test).

    python benchmarks/results/static-embedding/arms_heldout.py 'ARM=RECORDS_GLOB:MODEL' ... [--seeds 0 1 2]

MODEL may hold `{s}` (one model per seed). Records are `localize.py --features` (or
`--features-one-stage`) output; each model ranks them as `localize` does (`heldout_models.ranked`).
"""
import argparse
import glob
import sys
from pathlib import Path

_HERE = Path(__file__).resolve()
sys.path.insert(0, str(_HERE.parents[2]))
sys.path.insert(0, str(_HERE.parents[1] / "ranker-tuned-vectors"))
sys.path.insert(0, str(_HERE.parents[3]))
from heldout_models import paired, ranked  # noqa: E402
from localize import aggregate  # noqa: E402
from paired_sign import KEYS  # noqa: E402
from nsccn.ranking.train import load_records  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("arms", nargs="+", metavar="ARM=RECORDS_GLOB:MODEL")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = ap.parse_args()
    scores: dict[tuple[str, int | None], dict] = {}
    for spec in args.arms:
        name, rest = spec.split("=", 1)
        pattern, model = rest.split(":", 1)
        records = load_records(sorted(Path(p) for p in glob.glob(pattern)))
        for seed in args.seeds if "{s}" in model else [None]:
            scores[name, seed] = ranked(Path(model.format(s=seed)), records)
        print(f"{name}: {len(records)} records", file=sys.stderr)
    names = list(dict.fromkeys(name for name, _ in scores))
    print("| arm | seed | " + " | ".join(KEYS) + " |\n|---|---|" + "---|" * len(KEYS))
    for name in names:
        seeds = [seed for arm, seed in scores if arm == name]
        means = [aggregate(list(scores[name, seed].values())) for seed in seeds]
        for seed, m in zip(seeds, means):
            print(f"| {name} | {seed} | " + " | ".join(f"{m[k]:.1f}" for k in KEYS) + " |")
        if len(means) > 1:
            print(f"| {name} | mean | " + " | ".join(f"{sum(m[k] for m in means) / len(means):.1f}" for k in KEYS) + " |")
    print()
    first = names[0]
    for name in names[1:]:
        for seed in args.seeds:
            a = (first, seed) if (first, seed) in scores else (first, None)
            b = (name, seed) if (name, seed) in scores else (name, None)
            ids = sorted(set(scores[a]) & set(scores[b]))
            print(f"{first} -> {name} (seed {seed}): " + paired(scores[a], scores[b], ids))
    return 0


if __name__ == "__main__":
    sys.exit(main())
