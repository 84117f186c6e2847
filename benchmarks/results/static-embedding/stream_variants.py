#!/usr/bin/env python
"""Variants of the static vector stream, scored as `embedder_eval.py` scores it (stop 63: none kept).

    python benchmarks/results/static-embedding/stream_variants.py --dataset D.jsonl --mirrors MIRRORS
        (--model M.npz | --fold-models F0.npz F1.npz F2.npz) [--per-repo N] [--max-chars C]
        [--variants shipped prf bidi late3 filemix depth-all ...]

Each repository of the dataset at its newest base commit, every non-test Python entity (`embedder_eval.corpus`);
each query ranks them with every variant. `--fold-models`: a mined dataset's repository is scored by the fold model
that never saw it (fold k held out `mine_history.REPOSITORIES[k::3]`, `train_static_embedder.py build --hold-out`),
so the training repositories serve as validation. `--per-repo N` takes a repository's newest N queries of more than
300 characters and its newest N shorter ones (commit messages; the dev set's reports are nearly all long). Prints
file@1 / file@5 / function@5 / function@10 for all, long and short queries, and per variant the queries better /
worse than `shipped` (the stream as nsccn reads it: cosine, then its first `semantic.RERANK_DEPTH` ordered again by
`StaticModel.second_stage`).

Variants: `prf` (the query vector plus 0.5 x the mean of its 10 nearest entities, then the second stage: Rocchio
feedback), `bidi` (the second stage plus how well the query covers each entity's tokens, the late interaction the
other way), `late3` (late-interaction weight 3 instead of 2), `filemix` (each entity's vector plus 0.3 x its file's
mean vector), `depth-all` (the second stage over every entity, not the first 100).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import mine_history  # noqa: E402
from embedder_eval import KEYS, corpus, mirror_of, newest_commit, scores, text_of  # noqa: E402

from nsccn.vectors.semantic import RERANK_DEPTH  # noqa: E402
from nsccn.vectors.static_embed import LATE_WEIGHT, STATIC_MAX_CHARS, StaticModel, as_query  # noqa: E402

LONG = 300  # characters: a query longer than this is "long" (a message with a body, a report)


class Repo:
    """One repository's entities, their texts and vectors under one model."""

    def __init__(self, model: StaticModel, parts: dict, max_chars: int):
        self.m, self.ids = model, list(parts)
        self.texts = [text_of(parts[i], max_chars) for i in self.ids]
        self.docs = model.embed(self.texts)
        self._filemix = None
        self._bags = None

    def filemix(self, weight: float) -> np.ndarray:
        if self._filemix is None:
            files = [i.split(":", 1)[0] for i in self.ids]
            index = {f: k for k, f in enumerate(dict.fromkeys(files))}
            of = np.array([index[f] for f in files])
            means = np.zeros((len(index), self.docs.shape[1]), np.float32)
            np.add.at(means, of, self.docs)
            means /= np.maximum(np.linalg.norm(means, axis=1, keepdims=True), 1e-12)
            mixed = self.docs + weight * means[of]
            self._filemix = mixed / np.linalg.norm(mixed, axis=1, keepdims=True)
        return self._filemix

    def late_all(self, query: str) -> np.ndarray:
        """`StaticModel.late_interaction` of the query with every entity, in chunks."""
        m = self.m
        if self._bags is None:
            bags = [np.unique(m.bag(t)[0]) for t in self.texts]
            bags = [b if len(b) else np.zeros(1, np.intp) for b in bags]
            rows, where = np.unique(np.concatenate(bags), return_inverse=True)
            d = m.rows(rows)
            d /= np.maximum(np.linalg.norm(d, axis=1, keepdims=True), 1e-12)
            self._bags = (d, where, np.cumsum([0] + [len(b) for b in bags[:-1]]))
        d, where, starts = self._bags
        found, w = m.bag(as_query(query))
        if m.query_weight is not None:
            known = found < len(m.vocab)
            w[known] *= m.query_weight[found[known]]
        q = m.rows(found)
        norms = np.linalg.norm(q, axis=1)
        w = np.abs(w) * norms
        sims = (q / np.maximum(norms, 1e-12)[:, None]) @ d.T
        out = np.empty(len(starts), np.float32)
        for a in range(0, len(starts), 2000):
            b = min(a + 2000, len(starts))
            s0, s1 = starts[a], (starts[b] if b < len(starts) else len(where))
            out[a:b] = (w @ np.maximum.reduceat(sims[:, where[s0:s1]], starts[a:b] - s0, axis=1)) / max(w.sum(), 1e-12)
        return out


def two_stage(r: Repo, query: str, qv: np.ndarray, docs: np.ndarray | None = None, extra=None) -> np.ndarray:
    cos = (r.docs if docs is None else docs) @ qv
    top = np.argsort(-cos, kind="stable")[:RERANK_DEPTH]
    out = cos - 10.0  # below every second-stage score: the rest keep their order
    texts = [r.texts[j] for j in top]
    out[top] = r.m.second_stage(query, texts, cos[top]) + (0 if extra is None else extra(texts))
    return out


def coverage_of_entity(m: StaticModel, query: str, texts: list[str]) -> np.ndarray:
    """Each text's rows' best cosine with any query row, averaged by the text's own weights."""
    found, _ = m.bag(as_query(query))
    q = m.rows(found)
    q /= np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-12)
    out = np.zeros(len(texts), np.float32)
    for j, t in enumerate(texts):
        ids, tw = m.bag(t)
        if len(ids) and len(found):
            d = m.rows(ids)
            dn = np.linalg.norm(d, axis=1)
            tw = np.abs(tw) * dn
            out[j] = float(tw @ ((d / np.maximum(dn, 1e-12)[:, None]) @ q.T).max(1)) / max(float(tw.sum()), 1e-12)
    return out


def variant(name: str, r: Repo, query: str) -> np.ndarray:
    m = r.m
    qv = m.embed([query], query=True)[0]
    if name == "shipped":
        return two_stage(r, query, qv)
    if name == "prf":
        near = np.argsort(-(r.docs @ qv))[:10]
        q2 = qv + 0.5 * r.docs[near].mean(0)
        return two_stage(r, query, q2 / np.linalg.norm(q2))
    if name == "bidi":
        return two_stage(r, query, qv, extra=lambda texts: 0.5 * coverage_of_entity(m, query, texts))
    if name == "late3":
        return two_stage(r, query, qv, extra=lambda texts: (3.0 - LATE_WEIGHT) * m.late_interaction(query, texts))
    if name == "filemix":
        return two_stage(r, query, qv, docs=r.filemix(0.3))
    if name == "depth-all":
        return r.docs @ qv + LATE_WEIGHT * r.late_all(query)
    raise SystemExit(f"unknown variant {name}")


def select(records: list[dict], per_repo: int) -> list[dict]:
    if not per_repo:
        return records
    by: dict[str, list[dict]] = defaultdict(list)
    for rec in records:
        by[rec["repo"]].append(rec)
    out = []
    for rs in by.values():  # mined records come newest first
        out += [x for x in rs if len(x["problem_statement"]) > LONG][:per_repo]
        out += [x for x in rs if len(x["problem_statement"]) <= LONG][:per_repo]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", type=Path, required=True)
    ap.add_argument("--mirrors", type=Path, required=True)
    ap.add_argument("--model", type=Path)
    ap.add_argument("--fold-models", type=Path, nargs=3)
    ap.add_argument("--per-repo", type=int, default=0)
    ap.add_argument("--max-chars", type=int, default=STATIC_MAX_CHARS)
    ap.add_argument("--variants", nargs="+", default=["shipped", "prf", "bidi", "late3", "filemix", "depth-all"])
    args = ap.parse_args()
    if bool(args.model) == bool(args.fold_models):
        ap.error("one of --model and --fold-models")
    records = select([json.loads(x) for x in args.dataset.read_text().splitlines() if x.strip()], args.per_repo)
    if args.model:
        one = StaticModel.load(args.model)
        model_of = lambda repo: one  # noqa: E731
    else:
        folds = [StaticModel.load(f) for f in args.fold_models]
        fold_of = {repo: k for k in range(3) for repo in mine_history.REPOSITORIES[k::3]}
        model_of = lambda repo: folds[fold_of[repo]]  # noqa: E731
    by: dict[str, list[dict]] = defaultdict(list)
    for rec in records:
        by[rec["repo"]].append(rec)
    hits: dict[str, dict[str, dict]] = {v: {} for v in args.variants}
    for repo, rs in by.items():
        gitdir = mirror_of(args.mirrors, repo)
        parts = corpus(gitdir, newest_commit(gitdir, {x["base_commit"] for x in rs}))
        r = Repo(model_of(repo), parts, args.max_chars)
        for rec in rs:
            gold = list(dict.fromkeys(rec["gold_functions"]))
            if not gold or not all(g in parts for g in gold):
                continue
            for v in args.variants:
                hits[v][rec["instance_id"]] = dict(scores(r.ids, variant(v, r, rec["problem_statement"]), gold),
                                                   long=len(rec["problem_statement"]) > LONG)
        print(f"{repo}: {len(r.ids)} entities", file=sys.stderr, flush=True)
    base = hits[args.variants[0]]
    for v, hs in hits.items():
        cells = []
        for kind, keep in (("all", lambda h: True), ("long", lambda h: h["long"]), ("short", lambda h: not h["long"])):
            sel = [h for h in hs.values() if keep(h)]
            if sel:
                cells.append(f"{kind} ({len(sel)}) " + " / ".join(f"{100 * sum(h[k] for h in sel) / len(sel):.1f}"
                                                                 for k in KEYS))
        print(f"{v}: " + "; ".join(cells))
        if v != args.variants[0]:
            print("    against " + args.variants[0] + ": " + ", ".join(
                f"{k} +{sum(hs[q][k] > base[q][k] for q in hs)}/-{sum(hs[q][k] < base[q][k] for q in hs)}" for k in KEYS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
