#!/usr/bin/env python
"""Fit and measure the search score's calibration (nsccn/ranking/calibration.py): how likely a
result is one the query sought, from the ranking's raw score, on queries the shipped ranker
never trained on.

    python benchmarks/score_calibration.py --dataset HELDOUT.jsonl --workdir WORKDIR
        [--per-repo 40] [--out benchmarks/results/score-calibration] [--write]

HELDOUT.jsonl: commit messages of repositories the shipped model never saw, mined by
`benchmarks/mine_history.py --held-out` (gold: the functions each commit changed); WORKDIR: the
work directory of a `benchmarks/localize.py` run over it (one index per repository). Each query
(the commit message) is ranked by the learned ranker and by the hand-tuned fusion, as `search`
ranks them, and every result of the first 10 is labelled: is it one of the commit's functions?

Name lookups join them (`--names` per repository: a definition drawn at random, its name typed as a
user types it, answered as `search` answers a name: the fusion, the name's definitions first).
A logistic curve per scorer (the learned ranker, the fusion, a definition of the name typed; its
raw score and its distance below the query's best) is fitted and measured
two ways: cross-fitted by repository (two folds: each half's curve scored on the other half's
repositories) and, for the record, on all of them. Reported: Brier score (beside the base rate's),
expected calibration error, and the reliability table (predicted vs observed by bin). `--write`
stores the fit on all repositories, with the shipped model's digest, as the shipped calibration.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE))
sys.path.insert(0, str(_HERE.parent))
from localize import _slug, entity_to_loc, load_instances  # noqa: E402

from nsccn import ranking  # noqa: E402
from nsccn.query import fusion  # noqa: E402
from nsccn.query.calibration import CALIBRATION_FILE, SCORERS, Curve, model_digest  # noqa: E402
from nsccn.query.name_query import names_first  # noqa: E402
from nsccn.reading.testpaths import is_test_path  # noqa: E402
from nsccn.store import Store  # noqa: E402

TOP = 10
BINS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0001)


def rows_of(store: Store, inst: dict, ranker) -> list[tuple[str, int, float, float, int]]:
    """(scorer, rank, raw score, raw score - the query's best, label) of the first TOP results."""
    gold = set(inst["gold_functions"])
    out = []
    for scorer, hits in (("model", ranking.search(store, inst["problem_statement"], TOP, ranker)),
                         ("fusion", fusion.search(store, inst["problem_statement"], limit=TOP))):
        own = [h for h in hits if h.scored_by == scorer]
        if not own:
            continue
        best = max(h.score for h in own)
        for rank, h in enumerate(own, start=1):
            out.append((scorer, rank, h.score, h.score - best, int(entity_to_loc(h.entity.id) in gold)))
    return out


def name_rows(store: Store, n: int, seed: int) -> list[tuple[str, int, float, float, int]]:
    """The same for name lookups, as a user types them (a function's or a class's name, a method as
    `Class.method`), answered as `search` answers a name: the fusion, then the definitions of the
    name first (`names_first`). Labelled: is it the definition looked up?"""
    rng = random.Random(seed)
    defs = [(eid, kind, qual) for eid, kind, path, qual in store.conn.execute(
        "SELECT id, kind, path, qualname FROM entities WHERE kind IN ('class', 'func', 'method')")
        if not is_test_path(path) and "<" not in qual]
    out = []
    for eid, kind, qual in rng.sample(defs, min(n, len(defs))):
        query = ".".join(qual.split(".")[-2:]) if kind == "method" else qual.split(".")[-1]
        fused = fusion.search(store, query, limit=TOP)
        best = {"fusion": max((h.score for h in fused), default=0.0), "name": 1.0}  # as the query path has them
        for rank, h in enumerate(names_first(store, query, fused, TOP), start=1):
            out.append((h.scored_by, rank, h.score, h.score - best[h.scored_by], int(h.entity.id == eid)))
    return out


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1e-3, iters: int = 50) -> np.ndarray:
    """Newton's method on the log loss (a small ridge keeps it finite when classes separate)."""
    X = np.column_stack([np.ones(len(x)), x])
    w = np.zeros(X.shape[1])
    for _ in range(iters):
        p = 1 / (1 + np.exp(-np.clip(X @ w, -60, 60)))
        grad = X.T @ (p - y) + l2 * w
        hess = (X * (p * (1 - p))[:, None]).T @ X + l2 * np.eye(X.shape[1])
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-9:
            break
    return w


def predict(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-np.clip(w[0] + x @ w[1:], -60, 60)))


def measure(p: np.ndarray, y: np.ndarray) -> dict:
    base = y.mean()
    table, ece = [], 0.0
    for lo, hi in zip(BINS, BINS[1:]):
        m = (p >= lo) & (p < hi)
        if m.any():
            table.append({"bin": f"{lo:.2f}-{min(hi, 1):.2f}", "n": int(m.sum()), "predicted": round(float(p[m].mean()), 3),
                          "observed": round(float(y[m].mean()), 3)})
            ece += m.sum() / len(p) * abs(p[m].mean() - y[m].mean())
    return {"n": int(len(y)), "base_rate": round(float(base), 4), "brier": round(float(np.mean((p - y) ** 2)), 4),
            "brier_base_rate": round(float(np.mean((base - y) ** 2)), 4), "ece": round(float(ece), 4),
            "reliability": table}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", type=Path, required=True)
    ap.add_argument("--workdir", type=Path, required=True)
    ap.add_argument("--per-repo", type=int, default=40, help="queries per repository (the first N)")
    ap.add_argument("--names", type=int, default=40, help="name lookups per repository (definitions drawn at random)")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--write", action="store_true", help="store the fit as the shipped calibration")
    args = ap.parse_args(argv)
    ranker = ranking.load_ranker(ranking.SHIPPED_MODEL)
    instances = load_instances(args.dataset)
    repos = sorted({i["repo"] for i in instances})
    rows: list[tuple[str, str, int, float, float, int]] = []
    started = time.perf_counter()
    for repo in repos:
        db = args.workdir / _slug(repo) / "index.db"
        if not db.exists():
            print(f"{repo}: no index at {db}, skipped", file=sys.stderr)
            continue
        store = Store(db, readonly=True)
        try:
            for inst in [i for i in instances if i["repo"] == repo][: args.per_repo]:
                rows += [(repo, *r) for r in rows_of(store, inst, ranker)]
            rows += [(repo, *r) for r in name_rows(store, args.names, seed=len(rows))]
        finally:
            store.close()
        print(f"{repo}: {len(rows)} rows so far ({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
    seen = sorted({r[0] for r in rows})
    folds = [set(seen[0::2]), set(seen[1::2])]
    report: dict = {"queries_per_repo": args.per_repo, "repositories": seen, "model_digest": model_digest(ranking.SHIPPED_MODEL)}
    curves = {}
    for scorer in SCORERS:
        sel = [r for r in rows if r[1] == scorer]
        x = np.array([[r[3], r[4]] for r in sel])
        y = np.array([r[5] for r in sel], dtype=float)
        in_fold = [np.array([r[0] in f for r in sel]) for f in folds]
        crossed = np.zeros(len(y))
        for k in (0, 1):  # fitted on one half of the repositories, scored on the other
            w = fit_logistic(x[in_fold[k]], y[in_fold[k]])
            crossed[in_fold[1 - k]] = predict(w, x[in_fold[1 - k]])
        w_all = fit_logistic(x, y)
        top = np.array([r[2] == 1 for r in sel])
        report[scorer] = {"cross_fitted": measure(crossed, y), "fitted_on_all": measure(predict(w_all, x), y),
                          "first_result_cross_fitted": measure(crossed[top], y[top]),
                          "curve": [round(float(v), 6) for v in w_all]}
        curves[scorer] = [float(v) for v in w_all]
        Curve(*curves[scorer])  # three numbers: bias, score, gap
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "calibration-report.json").write_text(text + "\n")
    if args.write:
        CALIBRATION_FILE.write_text(json.dumps({
            "model_digest": report["model_digest"], "fitted_on": f"{len(seen)} held-out repositories, {args.per_repo} commit messages each "
            f"(benchmarks/score_calibration.py)", "inputs": ["bias", "raw score", "raw score - the query's best"],
            "curves": curves}, indent=1) + "\n")
        print(f"wrote {CALIBRATION_FILE}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
