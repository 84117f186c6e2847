#!/usr/bin/env python
"""Train the learned ranker and validate it leave-one-repository-out.

    python benchmarks/train_ranker.py --dev DEV_FEATURES [--mined MINED_FEATURES] [--ablate]
        [--eval-mined] [--grouped [--mined-train MINED.jsonl]] [--ship nsccn/models/ranker/ranker.npz] [--out OUTDIR]

DEV_FEATURES / MINED_FEATURES are what `benchmarks/localize.py --features` wrote for the dev set
(../shared/bench/swebench-dev.jsonl) and for the pairs `benchmarks/mine_history.py` mined.

Leave one repository out: for each dev repository, a model is trained on the mined pairs and the
other dev repositories only, and scores that repository's instances; nothing of the repository
scored (its instances, its history beyond what the index of each instance holds) is seen in
training. The table puts the learned ranking beside the fusion it re-ranks (lexical-full) on the
same instances. `--ablate` repeats it with each feature group removed, and with dev-only and
mined-only training data. `--eval-mined` scores each mined repository with a model that never saw
it; `--grouped` scores dev and mined queries alike in grouped folds (with `--ablate`, each group
removed; with `--mined-train`, a row trained on a subset of the mined pairs and scored on all;
with `--expansions`, a row for each expansion of the candidates by their best files' functions).
`--ship` trains one model on everything and writes the package's model.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE))
sys.path.insert(0, str(_HERE.parent))
from localize import METRIC_NAMES, aggregate, instance_metrics  # noqa: E402

from nsccn.ranking import save_ranker  # noqa: E402
from nsccn.ranking.features import EXPAND_FILES, EXPAND_PER_FILE, GROUPS  # noqa: E402
from nsccn.ranking.train import fit, load_records, rerank, restrict_expansion  # noqa: E402

HEADLINE = ("file@1", "file@3", "file@5", "module@10", "function@5", "function@10")


def score_records(records: Sequence[dict], ranker=None) -> list[dict]:
    """Per-instance metrics: the ranker's order, or (None) the fusion's."""
    out = []
    for r in records:
        if ranker is None:
            files, functions = r["fusion_files"], r["fusion_functions"]
        else:
            files, functions = rerank(ranker, r)
        out.append({"repo": r["repo"], "instance_id": r["instance_id"],
                    "metrics": instance_metrics(r["gold_files"], r["gold_functions"], files[:50], functions[:50])})
    return out


def loro(dev: list[dict], mined: list[dict], disabled: frozenset[str] = frozenset(), use_dev: bool = True,
         use_mined: bool = True, seed: int = 0, vectors: Sequence[dict] = ()) -> list[dict]:
    """Every dev instance scored by a model that never saw its repository. `vectors`: queries
    featured on indexes with vectors (any repository's), trained on with the rest except the
    held-out repository's, which are scored too (rows marked `vectors`)."""
    scored = []
    for repo in sorted({r["repo"] for r in dev}):
        train = (mined if use_mined else []) + ([r for r in dev if r["repo"] != repo] if use_dev else []) + \
            [r for r in vectors if r["repo"] != repo]
        ranker = fit(train, disabled=disabled, seed=seed)
        scored += score_records([r for r in dev if r["repo"] == repo], ranker)
        scored += [dict(x, vectors=True) for x in score_records([r for r in vectors if r["repo"] == repo], ranker)]
    return scored


def baseline_rows(paths: Sequence[Path], configs: Sequence[str], ids: set[str]) -> dict[str, list[dict]]:
    """Per-instance metrics of other configurations from localize.py rankings (.jsonl or .gz),
    restricted to the dev instances scored here: the same instances, side by side."""
    import gzip

    out: dict[str, dict[str, dict]] = {c: {} for c in configs}
    for path in paths:
        with (gzip.open(path, "rt") if path.suffix == ".gz" else open(path)) as fh:
            for line in fh:
                rec = json.loads(line)
                if rec["config"] in out and rec["instance_id"] in ids:
                    out[rec["config"]][rec["instance_id"]] = {"repo": rec["repo"], "instance_id": rec["instance_id"],
                                                              "metrics": rec["metrics"]}
    return {c: list(v.values()) for c, v in out.items() if v}


def loro_mined(dev: list[dict], mined: list[dict], seed: int = 0) -> list[dict]:
    """Every mined query scored by a model trained on the dev set and the other mined repositories:
    a second, larger held-out test on repositories outside the dev set (commit messages, not bug
    reports, as queries)."""
    scored = []
    for repo in sorted({r["repo"] for r in mined}):
        ranker = fit(dev + [r for r in mined if r["repo"] != repo], seed=seed)
        scored += score_records([r for r in mined if r["repo"] == repo], ranker)
    return scored


def grouped_folds(dev: list[dict], mined: list[dict], disabled: frozenset[str] = frozenset(),
                  train_ids: set[str] | None = None, seed: int = 0, groups: int = 6,
                  evidence: Sequence[float] = (), vectors: Sequence[dict] = ()) -> list[dict]:
    """Every query, dev and mined, scored by a model that saw none of its repository: each dev
    repository is one fold, the mined repositories form `groups` folds (every `groups`-th
    repository by name). `train_ids`: only these mined pairs train (all are scored), to compare
    training sets on the same test queries. `evidence`: also score each query with these weights of
    a file's best function score (`Ranker.function_evidence`), the same models; rows carry the weight.
    `vectors`: queries featured on indexes with vectors, trained on except in their repository's
    fold, where they are scored (rows marked `vectors`)."""
    repos = sorted({r["repo"] for r in mined})
    folds = [[r for r in dev if r["repo"] == repo] for repo in sorted({r["repo"] for r in dev})]
    n_dev = len(folds)
    folds += [[r for r in mined if r["repo"] in set(repos[g::groups])] for g in range(groups)]
    scored = []
    for i, test in enumerate(folds):
        if not test:
            continue
        train = [r for j, fold in enumerate(folds) if j != i for r in fold
                 if train_ids is None or j < n_dev or r["instance_id"] in train_ids]
        test_repos = {r["repo"] for r in test}
        ranker = fit(train + [r for r in vectors if r["repo"] not in test_repos], disabled=disabled, seed=seed)
        part = "dev" if i < n_dev else "mined"
        scored += [dict(x, held_out=part) for x in score_records(test, ranker)]
        scored += [dict(x, held_out=part, vectors=True)
                   for x in score_records([r for r in vectors if r["repo"] in test_repos], ranker)]
        for w in evidence:
            ranker.function_evidence = w
            scored += [dict(x, held_out=part, evidence=w) for x in score_records(test, ranker)]
    return scored


def folds_table(results: dict[str, list[dict]]) -> str:
    keys = ("file@1", "file@3", "file@5", "function@5", "function@10")
    out = ["| ranking | dev n | dev " + " / ".join(keys) + " | mined n | mined " + " / ".join(keys) + " |",
           "|---|---|---|---|---|"]
    for label, recs in results.items():
        cells = []
        for part in ("dev", "mined"):
            m = aggregate([r for r in recs if r["held_out"] == part])
            cells += [str(m["n"]), " / ".join(f"{m[k]:.1f}" if m[k] is not None else "–" for k in keys)]
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def row(label: str, recs: list[dict]) -> str:
    m = aggregate(recs)
    return f"| {label} | {m['n']} | " + " | ".join(f"{m[k]:.1f}" if m[k] is not None else "–" for k in HEADLINE) + " |"


def table(results: dict[str, list[dict]]) -> str:
    head = "| ranking | n | " + " | ".join(HEADLINE) + " |\n|---|---|" + "---|" * len(HEADLINE)
    lines = ["Overall", "", head] + [row(k, v) for k, v in results.items()]
    repos = sorted({r["repo"] for v in results.values() for r in v})
    for repo in repos:
        lines += ["", repo, "", head] + [row(k, [r for r in v if r["repo"] == repo]) for k, v in results.items()]
    return "\n".join(lines) + "\n"


def split_vector_rows(scored: list[dict], label: str, noun: str) -> dict[str, list[dict]]:
    """Table rows of a scoring run: the queries as featured without vectors under `label`, and,
    where some were also featured with vectors, those same queries without and with them."""
    plain = [r for r in scored if not r.get("vectors")]
    with_vectors = [r for r in scored if r.get("vectors")]
    if not with_vectors:
        return {label: plain}
    same = {r["instance_id"] for r in with_vectors}
    return {label: plain,
            f"  the {noun} featured with vectors, without them": [r for r in plain if r["instance_id"] in same],
            f"  the same {noun} with vectors": with_vectors}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dev", type=Path, required=True, help="features of the dev set (localize.py --features)")
    ap.add_argument("--mined", type=Path, action="append", default=[], help="features of mined pairs")
    ap.add_argument("--vectors", type=Path, action="append", default=[],
                    help="features of dev or mined queries on indexes with vectors (localize.py --configs vector "
                         "--features): trained on beside the rest, never in their own repository's fold, and "
                         "scored there against the same queries without vectors")
    ap.add_argument("--ablate", action="store_true", help="also each feature group removed, dev-only, mined-only")
    ap.add_argument("--ablate-groups", nargs="+", metavar="GROUP[+GROUP]", default=None,
                    help="with --ablate: only these groups removed (default: each group of features.GROUPS); "
                         "a+b removes both at once")
    ap.add_argument("--eval-mined", action="store_true",
                    help="also score each mined repository with a model that never saw it (18 more held-out repositories)")
    ap.add_argument("--baselines", type=Path, action="append", default=[],
                    help="localize.py rankings (.jsonl/.gz) whose bm25 / lexical-full / full rows join the table")
    ap.add_argument("--grouped", action="store_true",
                    help="also grouped folds: each dev repository a fold, the mined ones six folds of three; "
                         "every dev and mined query scored by a model that saw none of its repository (with --ablate: each group removed)")
    ap.add_argument("--mined-train", type=Path,
                    help="with --grouped: also a row trained only on the mined pairs of this dataset (mine_history.py output; all are still scored)")
    ap.add_argument("--evidence-weights", type=float, nargs="+", default=[],
                    help="with --grouped: also each of these weights of a file's best function score "
                         "(FUNCTION_EVIDENCE is chosen from this table's mined columns)")
    ap.add_argument("--expand", type=int, default=EXPAND_FILES,
                    help="the functions of the best this-many files join the candidates (default: what localization "
                         "does; records featured with localize.py --features-expand at least this wide)")
    ap.add_argument("--per-file", type=int, default=EXPAND_PER_FILE, help="at most this many of a file's functions join")
    ap.add_argument("--expansions", metavar="FILES:PER_FILE", nargs="+", default=[],
                    help="with --grouped: also a row for each of these expansions of the candidates")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--bag", type=int, default=1, help="average this many models of consecutive seeds (default 1)")
    ap.add_argument("--monotone", action="store_true",
                    help="constrain each feature whose direction is known (a better rank, more matched) to that direction")
    ap.add_argument("--dev-weight", type=float, default=1.0,
                    help="each dev query weighs this much in training, a mined one 1")
    ap.add_argument("--ship", type=Path, help="train on everything and write the model here")
    ap.add_argument("--ship-without", metavar="GROUP[+GROUP]",
                    help="with --ship: the model trained without these feature groups (a same-data control)")
    ap.add_argument("--ship-only", action="store_true",
                    help="with --ship: no evaluation first (a model per seed for a held-out comparison)")
    ap.add_argument("--out", type=Path, help="write the table (metrics.md) and per-instance results here")
    args = ap.parse_args(argv)
    # Checked before any record is read or model trained: a mistyped group fails at once.
    ablations = [frozenset(g.split("+")) for g in args.ablate_groups] if args.ablate_groups else \
        [frozenset({g}) for g in GROUPS]
    unknown = sorted({g for a in ablations for g in a} - set(GROUPS))
    if unknown:
        ap.error(f"unknown feature groups {unknown}: choose from {sorted(GROUPS)}")
    missing = [str(p) for p in [args.dev, *args.mined, *args.vectors] if not p.is_file()]
    if missing:
        ap.error(f"no such feature file: {', '.join(missing)}")
    dev = list({r["instance_id"]: r for r in load_records([args.dev])}.values())  # one per instance
    if args.dev_weight != 1.0:  # bug reports are what localize answers; mined commit messages a proxy
        dev = [dict(r, weight=args.dev_weight) for r in dev]
    global fit
    if args.bag > 1 or args.monotone:  # every model of this run
        fit = functools.partial(fit, bag=args.bag, monotone=args.monotone)
    mined = load_records(args.mined)
    vectors = load_records(args.vectors)
    featured = dev, mined  # as featured (with --features-expand: every expanded function, marked)
    dev, mined = ([restrict_expansion(r, args.expand, args.per_file) for r in recs] for recs in featured)
    print(f"{len(dev)} dev queries ({', '.join(sorted({r['repo'] for r in dev}))}), {len(mined)} mined"
          + (f", {len(vectors)} featured with vectors" if vectors else ""), file=sys.stderr)
    if args.ship_only:
        if not args.ship:
            ap.error("--ship-only needs --ship")
        return ship(args, dev, mined, vectors)
    t0 = time.perf_counter()
    results: dict[str, list[dict]] = {}
    ids = {r["instance_id"] for r in dev}
    for cfg, rows in baseline_rows(args.baselines, ("bm25", "full"), ids).items():
        results[f"{cfg} (localize.py rankings)"] = rows
    results["fusion (lexical-full)"] = score_records(dev)
    results |= split_vector_rows(loro(dev, mined, seed=args.seed, vectors=vectors), "learned, leave-one-repo-out",
                                 "instances")
    if args.ablate:
        for groups in ablations:
            results[f"  without {'+'.join(sorted(groups))}"] = loro(dev, mined, disabled=groups, seed=args.seed)
        if mined:
            results["  dev only (no mined pairs)"] = loro(dev, mined, use_mined=False, seed=args.seed)
            results["  mined only (no dev instances)"] = loro(dev, mined, use_dev=False, seed=args.seed)
    text = table(results)
    if args.eval_mined and mined:
        text += "\nMined pairs, each repository scored by a model that never saw it\n\n" + table({
            "fusion (lexical-full)": score_records(mined),
            "learned, leave-one-repo-out": loro_mined(dev, mined, seed=args.seed)}).split("\n\n", 1)[1]
    grouped: dict[str, list[dict]] = {}
    if args.grouped and mined:
        rows = grouped_folds(dev, mined, seed=args.seed, evidence=args.evidence_weights, vectors=vectors)
        grouped |= split_vector_rows([r for r in rows if "evidence" not in r], "learned, grouped folds", "queries")
        for w in args.evidence_weights:
            grouped[f"  a file's best function score x {w:g}"] = [r for r in rows if r.get("evidence") == w]
        if args.mined_train:
            with open(args.mined_train) as fh:
                ids = {json.loads(line)["instance_id"] for line in fh if line.strip()}
            grouped[f"  trained on the {len(ids & {r['instance_id'] for r in mined})} mined pairs of {args.mined_train.name}"] = \
                grouped_folds(dev, mined, train_ids=ids, seed=args.seed)
        for setting in args.expansions:
            files, per_file = (int(x) for x in setting.split(":", 1))
            grouped[f"  the functions of the best {files} files join ({per_file} each)"] = grouped_folds(
                *([restrict_expansion(r, files, per_file) for r in recs] for recs in featured), seed=args.seed)
        if args.ablate:
            for groups in ablations:
                grouped[f"  without {'+'.join(sorted(groups))}"] = grouped_folds(dev, mined, disabled=groups,
                                                                                 seed=args.seed)
        text += "\nGrouped folds (dev and mined queries, each scored by a model that saw none of its repository)\n\n" + \
            folds_table(grouped)
    print(text)
    print(f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "metrics.md").write_text(text)
        (args.out / "results.json").write_text(json.dumps(
            {k: {"overall": aggregate(v), "instances": v} for k, v in (results | grouped).items()}, indent=1))
    return ship(args, dev, mined, vectors) if args.ship else 0


def ship(args, dev: list[dict], mined: list[dict], vectors: list[dict]) -> int:
    disabled = frozenset(args.ship_without.split("+")) if args.ship_without else frozenset()
    ranker = fit(dev + mined + vectors, disabled=disabled, seed=args.seed, info={
        "trained_on": "dev set + mined pairs" + (" + queries featured with vectors" if vectors else ""),
        "dev_queries": len(dev), "mined_queries": len(mined), "vector_queries": len(vectors)})
    save_ranker(ranker, args.ship)
    print(f"model -> {args.ship} ({args.ship.stat().st_size / 1e6:.2f} MB)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
