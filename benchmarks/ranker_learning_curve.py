#!/usr/bin/env python
"""Does more training data still help the learned ranker? Models trained on growing samples of the
training records, each scored on queries of repositories that no sample holds.

    python benchmarks/ranker_learning_curve.py --train DEV_FEATURES --train MINED_FEATURES
        --test HELD_OUT_FEATURES [--test ...] [--sizes 500 1000 2000 ...] [--repos 3 6 12 ...]
        [--seeds 0 1] [--out OUTDIR]

Records are what `benchmarks/localize.py --features` writes. `--test` records must come from
repositories no `--train` record comes from (refused otherwise): `mine_history.py --held-out`'s
twelve are made for this. Two curves, each point one model per seed (the same seed draws the
same sample):
- `--sizes`: that many training queries drawn at random from all training repositories;
- `--repos`: every training query of that many repositories drawn at random (breadth: the same
  question asked of the number of repositories instead of queries).
The last row of each curve trains on everything. A curve that is flat from a few thousand queries
says the ranker has learned what its features can tell, and only new evidence will move it.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE))
sys.path.insert(0, str(_HERE.parent))
from localize import aggregate  # noqa: E402
from paired_sign import KEYS  # noqa: E402
from train_ranker import score_records  # noqa: E402

from nsccn.ranking.train import fit, load_records  # noqa: E402


def sample_queries(train: list[dict], n: int, seed: int) -> list[dict]:
    return train if n >= len(train) else random.Random(seed).sample(train, n)


def sample_repos(train: list[dict], n: int, seed: int) -> list[dict]:
    repos = sorted({r["repo"] for r in train})
    picked = set(repos if n >= len(repos) else random.Random(seed).sample(repos, n))
    return [r for r in train if r["repo"] in picked]


def curve(train: list[dict], test: list[dict], points: list[int], draw, seeds: list[int], label: str,
          log=print) -> list[dict]:
    """One row per point: the mean over seeds of each metric on `test`, and the spread."""
    rows = []
    for n in points:
        runs, sizes = [], []
        for seed in seeds:
            sample = draw(train, n, seed)
            sizes.append(len(sample))
            started = time.perf_counter()
            metrics = aggregate(score_records(test, fit(sample, seed=seed)))
            runs.append(metrics)
            log(f"  {label} {n}: seed {seed}, {len(sample)} queries, {time.perf_counter() - started:.0f} s: "
                + " / ".join(f"{metrics[k]:.1f}" for k in KEYS))
        # A repository sample's size differs between seeds: its range.
        queries = str(sizes[0]) if min(sizes) == max(sizes) else f"{min(sizes)}-{max(sizes)}"
        rows.append({"label": label, "point": n, "queries": queries,
                     **{k: statistics.fmean(m[k] for m in runs) for k in KEYS},
                     **{f"{k}_range": max(m[k] for m in runs) - min(m[k] for m in runs) for k in KEYS}})
    return rows


def table(rows: list[dict], n_test: int, test_repos: int) -> str:
    out = [f"Scored on {n_test} queries of {test_repos} repositories in no training sample "
           "(mean over seeds; ± the range between seeds)", "",
           "| training sample | queries | " + " | ".join(KEYS) + " |", "|---|---|" + "---|" * len(KEYS)]
    for r in rows:
        cells = [f"{r[k]:.1f}" + (f" ±{r[k + '_range']:.1f}" if r[k + "_range"] else "") for k in KEYS]
        what = f"{r['point']} queries" if r["label"] == "queries" else f"{r['point']} repositories"
        out.append(f"| {what} | {r['queries']} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--train", type=Path, action="append", required=True, help="training records (repeatable)")
    ap.add_argument("--test", type=Path, action="append", required=True, help="held-out records (repeatable)")
    ap.add_argument("--sizes", type=int, nargs="*", default=[500, 1000, 2000, 4000, 8000])
    ap.add_argument("--repos", type=int, nargs="*", default=[])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--out", type=Path, help="write metrics.md here")
    args = ap.parse_args(argv)

    train, test = load_records(args.train), load_records(args.test)
    shared = {r["repo"] for r in train} & {r["repo"] for r in test}
    if shared:
        ap.error(f"test repositories also in training: {', '.join(sorted(shared))}")
    log = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    log(f"{len(train)} training queries ({len({r['repo'] for r in train})} repositories), {len(test)} test queries")
    sizes = [n for n in sorted(set(args.sizes)) if n < len(train)] + [len(train)]  # the last: everything
    rows = curve(train, test, sizes, sample_queries, args.seeds, "queries", log)
    if args.repos:
        n_repos = len({r["repo"] for r in train})
        points = [n for n in sorted(set(args.repos)) if n < n_repos] + [n_repos]
        rows += curve(train, test, points, sample_repos, args.seeds, "repositories", log)
    text = table(rows, len(test), len({r["repo"] for r in test}))
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "metrics.md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
