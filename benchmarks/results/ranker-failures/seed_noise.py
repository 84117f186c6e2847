#!/usr/bin/env python
"""How much the ranker's answers move when only its training seed changes (bagging and feature
sampling): the noise floor a ranking change must beat on the held-out queries.

    python seed_noise.py fit --dev DEV --mined 'GLOB' --vectors 'GLOB' --heldout 'GLOB' [--heldout ...]
        --seeds 0 1 --out SEEDS.pkl                   # one process per group of seeds
    python seed_noise.py report SEEDS_A.pkl [SEEDS_B.pkl ...]

Each seed's model is trained on the same records (dev + mined + vector records) and scores the
held-out records; the report gives each seed's means, and for each pair of seeds the queries
that one gets right and the other wrong.
"""

from __future__ import annotations

import argparse
import glob
import itertools
import pickle
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from localize import aggregate  # noqa: E402
from paired_sign import KEYS, compare  # noqa: E402
from train_ranker import score_records  # noqa: E402

from nsccn.ranking.train import fit, load_records  # noqa: E402


def records(pattern: str) -> list[dict]:
    paths = sorted(Path(p) for p in glob.glob(pattern))
    if not paths:
        sys.exit(f"no records match {pattern}")
    return load_records(paths)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fit")
    f.add_argument("--dev", required=True)
    f.add_argument("--mined", required=True)
    f.add_argument("--vectors", required=True)
    f.add_argument("--heldout", action="append", required=True)
    f.add_argument("--seeds", type=int, nargs="+", required=True)
    f.add_argument("--out", type=Path, required=True)
    r = sub.add_parser("report")
    r.add_argument("pickles", type=Path, nargs="+")
    args = ap.parse_args(argv)
    if args.cmd == "fit":
        train = records(args.dev) + records(args.mined) + records(args.vectors)
        heldout = {p: records(p) for p in args.heldout}
        out = {}
        for seed in args.seeds:
            ranker = fit(train, seed=seed)
            for p, recs in heldout.items():
                out[(seed, p)] = {r["instance_id"]: r for r in score_records(recs, ranker)}
            print(f"seed {seed} done", file=sys.stderr, flush=True)
        args.out.write_bytes(pickle.dumps(out))
        return 0
    scores: dict = {}
    for p in args.pickles:
        scores.update(pickle.loads(p.read_bytes()))
    for part in sorted({p for _, p in scores}):
        seeds = sorted(s for s, p in scores if p == part)
        print(f"\n{part}\n\n| seed | " + " | ".join(KEYS) + " |\n|---|" + "---|" * len(KEYS))
        for s in seeds:
            m = aggregate(list(scores[(s, part)].values()))
            print(f"| {s} | " + " | ".join(f"{m[k]:.1f}" for k in KEYS) + " |")
        print("\n| seeds | " + " | ".join(KEYS) + " |\n|---|" + "---|" * len(KEYS))
        for a, b in itertools.combinations(seeds, 2):
            ids = sorted(scores[(a, part)])
            cells = []
            for key in KEYS:
                _, _, better, worse, p = compare(scores[(a, part)], scores[(b, part)], ids, key)
                cells.append(f"+{better}/-{worse} (p {p:.2g})")
            print(f"| {a} -> {b} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
