#!/usr/bin/env python
"""The static stream's second stage over a grid of its two settings, scored as `embedder_eval.py` scores.

    python benchmarks/results/static-embedding/second_stage_grid.py --dataset D.jsonl --mirrors MIRRORS --model M.npz
        [--depths 30 100 200] [--weights 0 0.5 1 1.5 2 3]

For each repository of the dataset (its newest base commit, every non-test Python entity), each query
ranks the entities by cosine; the first DEPTH are ordered again by cosine + WEIGHT x the model's late
interaction (`StaticModel.late_interaction`); weight 0 is cosine alone. Prints file@1 / file@5 /
function@5 / function@10 per setting. The shipped setting (`semantic.RERANK_DEPTH`,
`static_embed.LATE_WEIGHT`) was chosen with this on the validation set (docs/semantic-search.md).
"""

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from embedder_eval import KEYS, corpus, mirror_of, newest_commit, scores, text_of  # noqa: E402

from nsccn.vectors.static_embed import STATIC_MAX_CHARS, StaticModel  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", type=Path, required=True)
    ap.add_argument("--mirrors", type=Path, required=True)
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--depths", type=int, nargs="+", default=[30, 100, 200])
    ap.add_argument("--weights", type=float, nargs="+", default=[0, 0.5, 1, 1.5, 2, 3])
    args = ap.parse_args()
    records = [json.loads(line) for line in args.dataset.read_text().splitlines() if line.strip()]
    by_repo: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        by_repo[r["repo"]].append(r)
    model = StaticModel.load(args.model)
    hits: dict[tuple[int, float], list[dict]] = defaultdict(list)
    for repo, rs in by_repo.items():
        gitdir = mirror_of(args.mirrors, repo)
        parts = corpus(gitdir, newest_commit(gitdir, {r["base_commit"] for r in rs}))
        ids = list(parts)
        texts = [text_of(parts[i], STATIC_MAX_CHARS) for i in ids]
        docs = model.embed(texts)
        for r in rs:
            gold = list(dict.fromkeys(r["gold_functions"]))
            if not gold or not all(g in parts for g in gold):
                continue
            query = r["problem_statement"]
            sims = docs @ model.embed([query], query=True)[0]
            top = np.argsort(-sims, kind="stable")[:max(args.depths)]
            late = model.late_interaction(query, [texts[j] for j in top])
            for depth in args.depths:
                for weight in args.weights:
                    s = sims - 10.0
                    s[top[:depth]] = sims[top[:depth]] + weight * late[:depth]
                    hits[depth, weight].append(scores(ids, s, gold))
        print(f"{repo}: {len(ids)} entities", file=sys.stderr, flush=True)
    print("| depth | weight | n | " + " | ".join(KEYS) + " |\n|---|---|---|" + "---|" * len(KEYS))
    for (depth, weight), hs in sorted(hits.items()):
        print(f"| {depth} | {weight:g} | {len(hs)} | " + " | ".join(
            f"{100 * sum(h[k] for h in hs) / len(hs):.1f}" for k in KEYS) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
