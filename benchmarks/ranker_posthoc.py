#!/usr/bin/env python
"""The shipped model's two hand-set couplings between its file and function models, swept on
feature records of repositories it never saw.

    python benchmarks/ranker_posthoc.py --records HELD_OUT_FEATURES [--records ...] [--model M]

- `function_evidence` (`nsccn.ranking.FUNCTION_EVIDENCE`): a file's score adds this share of its
  best candidate function's score. Chosen on mined queries; this checks it where it was not chosen.
- the reverse, not shipped: a function's score adds a share of its file's score (the file model's,
  with function evidence), or subtracts a share of log(its file's rank): would the function ranking
  gain from what the file model knows?

Records are `benchmarks/localize.py --features` output (`mine_history.py --held-out`'s twelve are
made for this: no model is trained on them). Nothing is retrained: the trees are the model's.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np

_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE))
sys.path.insert(0, str(_HERE.parent))
from localize import aggregate, instance_metrics  # noqa: E402
from paired_sign import KEYS  # noqa: E402

from nsccn.model import split_entity_id  # noqa: E402
from nsccn.ranking import SHIPPED_MODEL, load_ranker, order, with_function_evidence  # noqa: E402
from nsccn.ranking.features import Candidates  # noqa: E402
from nsccn.ranking.train import load_records  # noqa: E402

EVIDENCE = (0.0, 0.15, 0.3, 0.45, 0.6, 0.9)
FILE_SHARES = (0.1, 0.2, 0.3, 0.5, 0.8)
LOG_RANK_SHARES = (0.1, 0.3, 0.5)


def raw_scores(ranker, records: list[dict]) -> list[tuple[dict, np.ndarray, np.ndarray]]:
    """(record, file model scores without function evidence, function model scores): the
    model's own scoring (`Ranker.score`) with the evidence weight at 0, so each weight swept is
    added here and nothing is predicted twice."""
    plain = replace(ranker, function_evidence=0.0)
    return [(r, *plain.score(Candidates(r["files"], r["file_rows"], r["functions"], r["function_rows"])))
            for r in records]


def evaluate(scored, rank: Callable) -> dict:
    """Metrics of `rank(record, file_scores, fn_scores) -> (files, functions)` over all records."""
    rows = []
    for r, fs, gs in scored:
        files, functions = rank(r, fs, gs)
        rows.append({"metrics": instance_metrics(r["gold_files"], r["gold_functions"], files[:50], functions[:50])})
    return aggregate(rows)


def ranked_files(r: dict, fs: np.ndarray, gs: np.ndarray, evidence: float) -> tuple[list[str], np.ndarray]:
    final = with_function_evidence(r["files"], fs, r["functions"], gs, evidence)
    return order(r["files"], final, r["fusion_files"]), final


def with_evidence(evidence: float) -> Callable:
    def rank(r, fs, gs):
        return ranked_files(r, fs, gs, evidence)[0], order(r["functions"], gs, r["fusion_functions"])
    return rank


def functions_hear_files(share: float, evidence: float, log_rank: bool) -> Callable:
    def rank(r, fs, gs):
        files, final = ranked_files(r, fs, gs, evidence)
        paths = [split_entity_id(f)[1] for f in r["functions"]]
        if log_rank:
            where = {p: i + 1 for i, p in enumerate(files)}
            extra = -np.log([where.get(p, len(files) + 1) for p in paths])
        else:
            score = dict(zip(r["files"], final))
            low = float(final.min()) if len(final) else 0.0
            extra = np.array([score.get(p, low) for p in paths])
        return files, order(r["functions"], gs + share * extra, r["fusion_functions"])
    return rank


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=Path, action="append", required=True)
    ap.add_argument("--model", type=Path, default=SHIPPED_MODEL)
    args = ap.parse_args(argv)
    ranker = load_ranker(args.model)
    records = load_records(args.records)
    scored = raw_scores(ranker, records)
    shipped = ranker.function_evidence
    rows = [(f"function_evidence {w}" + (" (shipped)" if w == shipped else ""), with_evidence(w)) for w in EVIDENCE]
    rows += [(f"functions + {s} x file score", functions_hear_files(s, shipped, False)) for s in FILE_SHARES]
    rows += [(f"functions - {s} x log(file rank)", functions_hear_files(s, shipped, True)) for s in LOG_RANK_SHARES]
    print(f"{len(records)} queries of {len({r['repo'] for r in records})} repositories, model {args.model}\n")
    print("| ranking | " + " | ".join(KEYS) + " |\n|---|" + "---|" * len(KEYS))
    for label, rank in rows:
        m = evaluate(scored, rank)
        print(f"| {label} | " + " | ".join(f"{m[k]:.1f}" for k in KEYS) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
