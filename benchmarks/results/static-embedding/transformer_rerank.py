#!/usr/bin/env python
"""The bundled transformer ordering the static stream's first K entities again, scored as `embedder_eval.py` scores.

    python benchmarks/results/static-embedding/transformer_rerank.py --dataset D.jsonl --mirrors MIRRORS
        [--ks 10 20 30] [--weights 0.5 1 2 4] [--threads 2]

For each repository of the dataset (its newest base commit, every non-test Python entity), each query
ranks the entities by the shipped static stream (cosine, then its second stage over the first
`semantic.RERANK_DEPTH`); its first K are ordered again by minilm-code-v1's cosine of the query and
their texts alone (`transformer`), or by their second-stage score + WEIGHT x that cosine (`mixed`).
The transformer embeds only those K entities' texts (each once per repository). Prints file@1 /
file@5 / function@5 / function@10 per setting (docs/semantic-search.md, stop 60).
"""

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from embedder_eval import KEYS, corpus, load_model, mirror_of, newest_commit, scores, text_of  # noqa: E402

from nsccn.vectors.semantic import RERANK_DEPTH  # noqa: E402
from nsccn.vectors.static_embed import STATIC_MAX_CHARS, STATIC_MODEL_FILE, StaticModel  # noqa: E402

TRANSFORMER = "nsccn/minilm-code-v1"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", type=Path, required=True)
    ap.add_argument("--mirrors", type=Path, required=True)
    ap.add_argument("--ks", type=int, nargs="+", default=[10, 20, 30])
    ap.add_argument("--weights", type=float, nargs="+", default=[0.5, 1, 2, 4])
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    records = [json.loads(line) for line in args.dataset.read_text().splitlines() if line.strip()]
    by_repo: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        by_repo[r["repo"]].append(r)
    static = StaticModel.load(STATIC_MODEL_FILE)
    transformer, transformer_chars = load_model(TRANSFORMER, args.threads)
    settings = ["static stream"] + [f"transformer, top {k}" for k in args.ks] + [
        f"mixed, top {k}, weight {w:g}" for k in args.ks for w in args.weights]
    hits: dict[str, list[dict]] = {s: [] for s in settings}
    deepest = max(args.ks)
    for repo, rs in by_repo.items():
        t0 = time.perf_counter()
        gitdir = mirror_of(args.mirrors, repo)
        parts = corpus(gitdir, newest_commit(gitdir, {r["base_commit"] for r in rs}))
        ids = list(parts)
        texts = [text_of(parts[i], STATIC_MAX_CHARS) for i in ids]
        docs = static.embed(texts)
        queries = [r for r in rs if r["gold_functions"] and all(g in parts for g in dict.fromkeys(r["gold_functions"]))]
        statements = [r["problem_statement"] for r in queries]
        query_vectors = static.embed(statements, query=True)
        transformer_queries = np.asarray(transformer.embed(statements), dtype=np.float32)
        embedded: dict[int, np.ndarray] = {}  # entity -> the transformer's vector, once per repository
        for r, q, tq in zip(queries, query_vectors, transformer_queries):
            gold = list(dict.fromkeys(r["gold_functions"]))
            sims = docs @ q
            top = np.argsort(-sims, kind="stable")[:RERANK_DEPTH]
            stream = sims - 10.0  # below every second-stage score: the rest keep their order after
            stream[top] = static.second_stage(r["problem_statement"], [texts[j] for j in top], sims[top])
            hits["static stream"].append(scores(ids, stream, gold))
            head = np.argsort(-stream, kind="stable")[:deepest]
            new = [j for j in head if j not in embedded]
            if new:
                vectors = transformer.embed([text_of(parts[ids[j]], transformer_chars) for j in new])
                embedded.update(zip(new, np.asarray(vectors, dtype=np.float32)))
            cosines = np.array([float(embedded[j] @ tq) for j in head], dtype=np.float32)
            for k in args.ks:
                h = head[:k]
                reordered = stream - 20.0
                reordered[h] = cosines[:k]
                hits[f"transformer, top {k}"].append(scores(ids, reordered, gold))
                for w in args.weights:
                    reordered = stream - 20.0
                    reordered[h] = stream[h] + 20.0 + w * cosines[:k]
                    hits[f"mixed, top {k}, weight {w:g}"].append(scores(ids, reordered, gold))
        print(f"{repo}: {len(queries)} queries, {len(embedded)} entities embedded by the transformer, "
              f"{time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    print("| setting | n | " + " | ".join(KEYS) + " |")
    print("|---|---|" + "---|" * len(KEYS))
    for s in settings:
        hs = hits[s]
        print(f"| {s} | {len(hs)} | " + " | ".join(f"{100 * sum(h[k] for h in hs) / max(len(hs), 1):.1f}" for k in KEYS) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
