#!/usr/bin/env python
"""Does the ranker learn from the static vectors? Several seeds of train_ranker.py, each with the
vector features and without them (`--ablate-groups vectors`), on the same records.

    python benchmarks/results/static-embedding/ranker_seeds.py --dev DEV_FEATURES --mined MINED_FEATURES
        --seeds 0 1 2 --out OUTDIR

Each seed runs `benchmarks/train_ranker.py --grouped --ablate --ablate-groups vectors --seed S --out
OUTDIR/seed-S` (grouped folds: every dev and mined query scored by models that saw none of its
repository). The table gives, per metric, the mean over seeds with and without the vector
features (and the range), then query by query on the per-query mean over seeds: how many queries
are better / worse with vectors and the sign test's p (`benchmarks/paired_sign.py`).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCH = HERE.parent.parent
sys.path.insert(0, str(BENCH))
from paired_sign import KEYS, sign_p  # noqa: E402

WITH, WITHOUT = "learned, grouped folds", "  without vectors"


def per_query(results: dict, row: str, part: str) -> dict[str, dict]:
    return {r["instance_id"]: r["metrics"] for r in results[row]["instances"] if r.get("held_out") == part}


def compare(runs: list[dict], part: str) -> list[str]:
    """Rows of the table for the dev or the mined queries."""
    lines = []
    for key in KEYS:
        per_seed = {row: [per_query(r, row, part) for r in runs] for row in (WITH, WITHOUT)}
        ids = [i for i, m in per_seed[WITH][0].items() if m.get(key) is not None]
        if not ids:
            continue
        means = {row: [100 * sum(q[i][key] for i in ids) / len(ids) for q in per_seed[row]] for row in (WITH, WITHOUT)}
        avg = {row: {i: sum(q[i][key] for q in per_seed[row]) / len(runs) for i in ids} for row in (WITH, WITHOUT)}
        better = sum(1 for i in ids if avg[WITH][i] > avg[WITHOUT][i])
        worse = sum(1 for i in ids if avg[WITH][i] < avg[WITHOUT][i])
        cell = {row: f"{sum(v) / len(v):.1f} ({min(v):.1f}-{max(v):.1f})" for row, v in means.items()}
        lines.append(f"| {part} ({len(ids)}) | {key} | {cell[WITH]} | {cell[WITHOUT]} | {better} / {worse} | "
                     f"{sign_p(better, worse):.3g} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dev", type=Path, required=True)
    ap.add_argument("--mined", type=Path, action="append", required=True)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--reuse", action="store_true", help="read seeds already run in OUTDIR instead of training again")
    args = ap.parse_args(argv)
    runs = []
    for seed in args.seeds:
        out = args.out / f"seed-{seed}"
        if not (args.reuse and (out / "results.json").is_file()):
            cmd = [sys.executable, str(BENCH / "train_ranker.py"), "--dev", str(args.dev),
                   *[a for m in args.mined for a in ("--mined", str(m))], "--grouped", "--ablate",
                   "--ablate-groups", "vectors", "--seed", str(seed), "--out", str(out)]
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        runs.append(json.loads((out / "results.json").read_text()))
    lines = [f"Seeds {args.seeds}; grouped folds (each query scored by models that saw none of its repository); "
             "mean over seeds (min-max); better / worse: query by query on the mean over seeds\n",
             "| queries | metric | with vectors | without | better / worse with vectors | p |",
             "|---|---|---|---|---|---|"]
    lines += compare(runs, "dev") + compare(runs, "mined")
    text = "\n".join(lines) + "\n"
    print(text)
    (args.out / "seeds.md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
