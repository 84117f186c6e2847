#!/usr/bin/env python
"""Where the static stream falls short of its teacher on a dataset (stop 63's diagnostics), by cosine alone.

    python benchmarks/results/static-embedding/stream_gap.py --dataset D.jsonl --mirrors MIRRORS \
        --model M.npz --teacher-pca teacher/teacher.npz [--cache DIR] [--oov-words]

For each repository at its newest base commit (every non-test Python entity, `embedder_eval.corpus`), the queries
ranked by: the static model's query and entity vectors; the transformer's (`minilm-code-v1`, the teacher, 750
characters an entity as the index embeds them); the teacher's reduced to the PCA basis the static model's regression
fits (`static_teacher.py`'s `mean` and `basis`); and each side of one against the other. Prints file@1 / file@5 /
function@5 / function@10 per pairing and the mean cosine of the static model's vectors with the teacher's reduced
ones (queries, entities). `--cache DIR` keeps the teacher's entity vectors (minutes of CPU on a large repository).
`--oov-words`: the model again with every word of the dataset's queries and entities that its vocabulary lacks
(three letters or more, seen twice) given a row mapped from the teacher's vector of the word alone (a ridge map from
the teacher's token vectors to the model's rows, fitted on the vocabulary): an upper bound on what a larger
vocabulary could add, since the words come from the data scored.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from embedder_eval import KEYS, corpus, load_model, mirror_of, newest_commit, scores, text_of  # noqa: E402
from train_static_embedder import teacher_rows  # noqa: E402

from nsccn.vectors.static_embed import _TOKEN, STATIC_MAX_CHARS, StaticModel, tokens  # noqa: E402


def with_oov_words(model: StaticModel, words: list[str]) -> StaticModel:
    vocab_rows = teacher_rows(model.vocab)
    table = model.table[: len(model.vocab)]
    x = np.hstack([vocab_rows, np.ones((len(vocab_rows), 1), np.float32)])
    w = np.linalg.solve(x.T @ x + np.eye(x.shape[1]), x.T @ table)
    new = np.hstack([teacher_rows(words), np.ones((len(words), 1), np.float32)]) @ w
    qw = None if model.query_weight is None else np.concatenate(
        [model.query_weight.astype(np.float32), np.full(len(words), float(np.median(model.query_weight)), np.float32)])
    return StaticModel(model.vocab + words, np.vstack([table, new]).astype(np.float32), model.model_id,
                       header=model.header, bank=model.bank, query_weight=qw)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", type=Path, required=True)
    ap.add_argument("--mirrors", type=Path, required=True)
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--teacher-pca", type=Path, required=True, help="static_teacher.py's head file (mean, basis)")
    ap.add_argument("--cache", type=Path)
    ap.add_argument("--oov-words", action="store_true")
    args = ap.parse_args()
    model = StaticModel.load(args.model)
    teacher, teacher_chars = load_model("nsccn/minilm-code-v1", 2)
    with np.load(args.teacher_pca) as head:
        mean, basis = head["mean"], head["basis"]

    def reduced(x: np.ndarray) -> np.ndarray:
        y = (x - mean) @ basis.T
        return y / np.maximum(np.linalg.norm(y, axis=-1, keepdims=True), 1e-12)

    by: dict[str, list[dict]] = defaultdict(list)
    for line in args.dataset.read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            by[r["repo"]].append(r)
    repos = {}
    for repo, rs in by.items():
        gitdir = mirror_of(args.mirrors, repo)
        parts = corpus(gitdir, newest_commit(gitdir, {r["base_commit"] for r in rs}))
        queries = [r for r in rs if r["gold_functions"] and all(g in parts for g in r["gold_functions"])]
        repos[repo] = (parts, queries)
    models = {"static": model}
    if args.oov_words:
        seen: Counter[str] = Counter()
        for parts, queries in repos.values():
            for text in [r["problem_statement"] for r in queries] + [text_of(p, STATIC_MAX_CHARS) for p in parts.values()]:
                for ident in _TOKEN.findall(text):
                    seen.update(t for t in tokens(ident, model.index)
                                if t not in model.index and re.fullmatch(r"[a-z]{3,}", t))
        words = sorted(w for w, c in seen.items() if c >= 2)
        print(f"{len(words)} words the vocabulary lacks", file=sys.stderr)
        models["static+words"] = with_oov_words(model, words)
    hits: dict[str, list[dict]] = defaultdict(list)
    cosines: dict[str, list[np.ndarray]] = defaultdict(list)
    for repo, (parts, queries) in repos.items():
        ids = list(parts)
        cached = args.cache / f"{repo.replace('/', '+')}.npy" if args.cache else None
        if cached and cached.exists() and (cached.with_suffix(".ids").read_text().split("\n") == ids):
            t_docs = np.load(cached)
        else:
            t_docs = teacher.embed([text_of(parts[i], teacher_chars) for i in ids])
            if cached:
                args.cache.mkdir(parents=True, exist_ok=True)
                np.save(cached, t_docs)
                cached.with_suffix(".ids").write_text("\n".join(ids))
        texts = [r["problem_statement"] for r in queries]
        t_q = teacher.embed(texts)
        tr_docs, tr_q = reduced(t_docs), reduced(t_q)
        runs = {"teacher": (t_q, t_docs), "teacher, reduced": (tr_q, tr_docs)}
        for name, m in models.items():
            s_docs, s_q = m.embed([text_of(parts[i], STATIC_MAX_CHARS) for i in ids]), m.embed(texts, query=True)
            runs[name] = (s_q, s_docs)
            if name == "static":
                runs["static queries x teacher's entities (reduced)"] = (s_q, tr_docs)
                runs["teacher's queries (reduced) x static entities"] = (tr_q, s_docs)
                cosines["entities"].append(np.sum(s_docs * tr_docs, axis=1))
                cosines["queries"].append(np.sum(s_q * tr_q, axis=1))
        for j, r in enumerate(queries):
            gold = list(dict.fromkeys(r["gold_functions"]))
            for name, (q, d) in runs.items():
                hits[name].append(scores(ids, d @ q[j], gold))
        print(f"{repo}: {len(ids)} entities, {len(queries)} queries", file=sys.stderr, flush=True)
    for name, hs in hits.items():
        print(f"{name} ({len(hs)}): " + " / ".join(f"{100 * sum(h[k] for h in hs) / len(hs):.1f}" for k in KEYS))
    for side, cs in cosines.items():
        print(f"cosine of the static model's {side} with the teacher's (reduced): mean {np.concatenate(cs).mean():.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
