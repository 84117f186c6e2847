#!/usr/bin/env python
"""Build the static code embedding (`nsccn/models/static-code-v2/model.npz`) from mined data.

    python benchmarks/mine_history.py --mirrors MIRRORS --per-repo 800 --out mined.jsonl
    python benchmarks/train_embedder.py pairs --dataset mined.jsonl --mirrors MIRRORS --max-chars 2000 --out pairs.jsonl
    python benchmarks/train_static_embedder.py corpus --pairs pairs.jsonl --mined mined.jsonl --mirrors MIRRORS \
        --extra-repos numpy/numpy ansible/ansible fastapi/fastapi buildbot/buildbot twisted/twisted \
        mitmproxy/mitmproxy spotify/luigi nltk/nltk --messages 3000 --max-texts 400000 --out texts.jsonl.gz
    python benchmarks/static_teacher.py --texts texts.jsonl.gz --out teacher/teacher.npz --shard-rows 50000 [--device cuda]
    python benchmarks/mine_history.py --mirrors MIRRORS --per-repo 800 --out mined_extra.jsonl \
        --repos numpy/numpy,ansible/ansible,fastapi/fastapi,buildbot/buildbot,twisted/twisted,mitmproxy/mitmproxy,spotify/luigi,nltk/nltk
    python benchmarks/train_embedder.py pairs --dataset mined_extra.jsonl --mirrors MIRRORS --max-chars 2000 --out pairs_extra.jsonl
    cat pairs.jsonl pairs_extra.jsonl > pairs_all.jsonl
    python benchmarks/train_static_embedder.py build --pairs pairs_all.jsonl --vocab-pairs pairs.jsonl \
        --texts texts.jsonl.gz --teacher teacher/teacher.npz --regress-epochs 10 --regress-lr 5e-3 --query-lr 1e-2 --work WORK \
        --out nsccn/models/static-code-v2/model.npz

Tried in stop 64 and not shipped (docs/semantic-search.md): the pairs of `mine_history.MORE_REPOSITORIES` too
(`mine_history.py --more`, their pairs appended to pairs_all.jsonl: "v3"), and their code in the corpus
(`corpus --extra-repos ... --exclude texts.jsonl.gz`, `static_teacher.py --basis teacher/teacher.npz`, `build
--texts A B --teacher TA TB`).

Every repository is read at the commit `benchmarks/pins.json` names (`mine_history.py` mines from it,
`corpus` reads the extra eight there; the 18 at their newest mined commit), so a newer fetch of a
mirror changes neither the pairs nor the corpus; `corpus` writes the commit of each repository beside
its texts (`TEXTS.sources.json`) and `build` copies them into the model's header (`sources`).

numpy and scipy (installed with NSCCN) for everything but the teacher's vectors: ONNX Runtime runs
the bundled transformer on the CPU (about an hour for 220,000 texts on 2 cores; `--parts DIR --stop-after S`
keeps its work in parts a later run resumes, across sessions), or PyTorch on a GPU where
there is one (`--device cuda`: under a minute; the same vectors, cosine 1.00000 on a check set).
Steps of `build`, each cached in WORK where it is slow:

1. **Vocabulary**: the tokens of `nsccn.vectors.static_embed.tokens` (identifier parts in lower case, and
   identifiers of several parts whole: `getattr`, `setdefault`) that occur in the pairs of at least
   `--min-repos` repositories, then those in at least `--min-count` texts of the teacher's corpus,
   `--max-tokens` in all. A token outside it still counts at run time, as a fixed random direction
   (the model's bank), so a code base's own names match each other.
2. **Distillation**: every vocabulary token embedded alone by the bundled transformer
   (`minilm-code-v1`), PCA to `--dim` dimensions, plus `--identity` times the token's own random
   direction, scaled by its SIF weight (1e-3 / (1e-3 + its frequency)): model2vec's recipe.
3. **Regression onto the teacher** (`regress_table`, tokenlearn's step): each corpus text's vector
   towards the direction of the transformer's vector of the same text (PCA-reduced), 1 - cosine.
4. **Contrastive training** (`train_table`): (commit message -> one changed function) pairs, batches
   of one repository (the other messages' functions are in-batch negatives) plus up to five other
   functions of the changed files (hard negatives), cross-entropy of the scaled cosines. Adam on the
   rows a batch touches in both steps; the bank never moves. Repositories named by `--valid-repos`
   are left out and scored after each epoch (MRR and recall@5 of their messages among their pairs'
   texts): the settings were chosen that way, with `Textualize/rich` and `python-attrs/attrs` out.
   With `--query-lr`, a weight per token for the query side is learned beside the rows (from 1,
   kept >= 0; `StaticModel.query_weight`): a report's words need not weigh what a function's do.
   v2's changes (the camelCase compounds, the pairs of eight more repositories, the query
   weights, 10 regression epochs at 5e-3) were chosen by the vector stream on the newest 500 commits of rich, attrs and httpx,
   built with `--hold-out` of the three (docs/semantic-search.md).
5. **Export**: int8 rows with a float scale per row (`StaticModel.save`).

Optional, not in the shipped recipe (`--rank-epochs N`, between steps 3 and 4): **the teacher's
rankings** (listwise distillation): each commit message of the corpus ranks its repository's entities
(the teacher's best 16 for each message of a batch, plus 512 drawn at random), and the student's
softmax over them is pulled to the teacher's (KL, both cosines scaled by 50), from the teacher's full
vectors (`--rank-parts`: static_teacher.py's parts) and the corpus's texts by repository
(`groups --texts texts.jsonl.gz --mined mined.jsonl --mirrors MIRRORS --extra-repos ... --out groups.json`,
then `--rank-groups groups.json`). On the validation set (docs/semantic-search.md, stop 57) 3 epochs
gave +0.6 / +0.7 / +0.5 / +0.2 (file@1 / file@5 / function@5 / function@10, mean of three seeds): not shipped.
The regression's table is kept in WORK (`regressed-*.npy`) for the next build with the same inputs.

Cross-fitting (vectors for the ranker's training records that did not train on them): `build
--vocab WORK/vocab-KEY.json --hold-out REPO ... --mined mined.jsonl --mirrors MIRRORS` leaves
those repositories' pairs and corpus messages out (their code stays), with the shipped vocabulary.

No dev-set repository (sympy, pytest, requests, flask) and none of the twelve held-out ones
(`mine_history.HELD_OUT_REPOSITORIES`) is in the pairs or the corpus: `corpus` and `build` refuse them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
from scipy import sparse

_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE))
sys.path.insert(0, str(_HERE.parent))
from mine_history import HELD_OUT_REPOSITORIES, PINS_FILE, _git, load_pins, pinned_ref  # noqa: E402

from nsccn.vectors.static_embed import STATIC_MODEL, StaticModel, tokens  # noqa: E402
from nsccn.text import split_identifier  # noqa: E402

DEV_REPOSITORIES = ("sympy/sympy", "pytest-dev/pytest", "psf/requests", "pallets/flask")
# SWE-bench's other repositories: a held-out set of bug reports may come from any of them, so none is trained on.
SWE_BENCH_REPOSITORIES = ("django/django", "astropy/astropy", "matplotlib/matplotlib", "scikit-learn/scikit-learn",
                          "pydata/xarray", "sphinx-doc/sphinx", "pylint-dev/pylint", "mwaskom/seaborn")
EVALUATION_REPOSITORIES = frozenset(DEV_REPOSITORIES) | frozenset(HELD_OUT_REPOSITORIES) | frozenset(SWE_BENCH_REPOSITORIES)
SIF = 1e-3


def read_pairs(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def check_no_evaluation_data(pairs: list[dict]) -> None:
    bad = sorted({p["repo"] for p in pairs} & EVALUATION_REPOSITORIES)
    if bad:
        raise SystemExit(f"the pairs hold evaluation repositories {bad}: leave them out of training")


def texts_of(pair: dict) -> list[str]:
    return [pair["query"], *pair["pos"], *pair["negs"]]


def build_vocab(pairs: list[dict], min_repos: int = 2, max_tokens: int = 60000, min_count: int = 3) -> tuple[list[str], np.ndarray]:
    """Tokens kept (most frequent first) and their frequencies (share of all token occurrences)."""
    count: Counter[str] = Counter()
    repos: dict[str, set[str]] = defaultdict(set)
    seen_texts: set[str] = set()
    for p in pairs:
        for text in texts_of(p):
            h = hashlib.blake2b(text.encode(), digest_size=8).digest()
            if h in seen_texts:  # a function text repeats across pairs: count it once
                continue
            seen_texts.add(h)
            # Every whole identifier is a candidate compound here; the vocabulary decides.
            toks = tokens(text, compounds=_AnyCompound())
            count.update(toks)
            for t in set(toks):
                repos[t].add(p["repo"])
    kept = [t for t, c in count.most_common() if c >= min_count and len(repos[t]) >= min_repos]
    kept = sorted(kept[:max_tokens], key=lambda t: (-count[t], t))
    total = sum(count.values())
    return kept, np.array([count[t] / total for t in kept], dtype=np.float64)


def vocab_of_texts(texts: list[str], min_count: int = 5, max_tokens: int = 60000,
                   base: list[str] | None = None) -> tuple[list[str], np.ndarray]:
    """`base` (the tokens shared by several repositories' pairs) plus the tokens of the teacher's
    corpus occurring in at least `min_count` texts, most frequent first, `max_tokens` in all; their
    frequencies (share of all token occurrences in the corpus)."""
    count: Counter[str] = Counter()
    docs: Counter[str] = Counter()
    for text in texts:
        toks = tokens(text, compounds=_AnyCompound())
        count.update(toks)
        docs.update(set(toks))
    kept = list(dict.fromkeys([*(base or []), *(t for t, _ in docs.most_common() if docs[t] >= min_count)]))
    kept = kept[:max_tokens]
    total = sum(count.values())
    return kept, np.array([max(count[t], 1) / total for t in kept], dtype=np.float64)


class _AnyCompound:
    """A `compounds` argument that holds every identifier (vocabulary building)."""

    def __contains__(self, item: str) -> bool:
        return True


def teacher_rows(vocab: list[str], threads: int = 2) -> np.ndarray:
    """Each token embedded alone by the bundled transformer (384 dims, normalized)."""
    from nsccn.vectors.embed import FALLBACK_MODEL, _BundledOnnx

    model = _BundledOnnx(threads, optimize=True, model_id=FALLBACK_MODEL)
    # A compound is embedded as its words (`getattr` as itself; `set_default` as "set default").
    texts = [" ".join(split_identifier(t)) if "_" in t else t for t in vocab]
    out = np.zeros((len(vocab), 384), dtype=np.float32)
    step = 4096
    for i in range(0, len(texts), step):
        out[i : i + step] = model.embed(texts[i : i + step], batch_size=256)
        print(f"teacher: {min(i + step, len(texts))}/{len(texts)} tokens", file=sys.stderr, flush=True)
    return out


def random_bank(rows: int, dim: int, seed: int = 0) -> np.ndarray:
    """Fixed random unit rows: the identities of tokens (`StaticModel`'s bank)."""
    bank = np.random.default_rng(seed).normal(size=(rows, dim))
    return (bank / np.linalg.norm(bank, axis=1, keepdims=True)).astype(np.float32)


def initial_model(vocab: list[str], teacher: np.ndarray, freq: np.ndarray, dim: int, identity: float,
                  oov_weight: float, bank_rows: int, tf: str = "log", seed: int = 0) -> StaticModel:
    """The distilled table plus `identity` times each token's own bank vector (at its SIF weight),
    and the bank for unknown tokens at `oov_weight`."""
    table = distilled_table(teacher, freq, dim)
    bank = random_bank(bank_rows, dim, seed) if bank_rows else None
    model = StaticModel(vocab, table, STATIC_MODEL, header={"tf": tf, "oov_weight": oov_weight}, bank=bank)
    if identity and bank is not None:
        weights = SIF / (SIF + freq)
        own = np.zeros_like(table)
        for i, t in enumerate(vocab):
            for row, sign in model._bank_rows(t):
                own[i] += sign * model.table[row]
        table = table + identity * own * weights[:, None].astype(np.float32)
        model = StaticModel(vocab, table, STATIC_MODEL, header={"tf": tf, "oov_weight": oov_weight}, bank=bank)
    return model


def distilled_table(teacher: np.ndarray, freq: np.ndarray, dim: int) -> np.ndarray:
    """PCA of the teacher's rows to `dim`, each row scaled by its SIF weight."""
    x = teacher.astype(np.float64) - teacher.mean(axis=0)
    _, _, vt = np.linalg.svd(x, full_matrices=False)
    rows = x @ vt[:dim].T
    # Signs of principal components are arbitrary: fix them so the table is deterministic.
    signs = np.sign(rows[np.abs(rows).argmax(axis=0), np.arange(dim)])
    rows *= signs
    rows /= np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
    return (rows * (SIF / (SIF + freq))[:, None]).astype(np.float32)


class Encoded:
    """Texts as (distinct token ids, tf weights) as the model embeds them, deduplicated by text."""

    def __init__(self, model: StaticModel):
        self.model = model
        self.ids: list[np.ndarray] = []
        self.weights: list[np.ndarray] = []
        self.key: dict[str, int] = {}

    def add(self, text: str) -> int:
        k = self.key.get(text)
        if k is None:
            ids, weights = self.model.bag(text)
            k = self.key[text] = len(self.ids)
            self.ids.append(ids)
            self.weights.append(weights)
        return k

    def matrix(self, texts: list[int], columns: dict[int, int]) -> sparse.csr_matrix:
        indptr = [0]
        cols: list[np.ndarray] = []
        vals: list[np.ndarray] = []
        for t in texts:
            cols.append(np.fromiter((columns[i] for i in self.ids[t]), dtype=np.int64, count=len(self.ids[t])))
            vals.append(self.weights[t])
            indptr.append(indptr[-1] + len(self.ids[t]))
        return sparse.csr_matrix((np.concatenate(vals) if vals else np.zeros(0, np.float32),
                                  np.concatenate(cols) if cols else np.zeros(0, np.int64), indptr),
                                 shape=(len(texts), len(columns)))


def _normalized(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    norms = np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-9)
    return x / norms, norms


class RowAdam:
    """Adam over the rows a batch touches (lazy: each row its own step count); the vocabulary's
    rows move, the bank's (unknown tokens' fixed random rows) never do."""

    def __init__(self, start: StaticModel, lr: float, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8):
        self.start = start
        self.table = start.table.copy()  # the vocabulary's rows, then the bank's
        self.m = np.zeros_like(self.table)
        self.v = np.zeros_like(self.table)
        self.steps = np.zeros(len(self.table), dtype=np.int64)
        self.lr, self.b1, self.b2, self.eps = lr, b1, b2, eps

    def step(self, rows: np.ndarray, grad: np.ndarray) -> None:
        keep = rows < len(self.start.vocab)
        rows, grad = rows[keep], grad[keep]
        b1, b2 = self.b1, self.b2
        self.steps[rows] += 1
        t = self.steps[rows][:, None].astype(np.float32)
        self.m[rows] = b1 * self.m[rows] + (1 - b1) * grad
        self.v[rows] = b2 * self.v[rows] + (1 - b2) * grad * grad
        mhat = self.m[rows] / (1 - b1 ** t)
        vhat = self.v[rows] / (1 - b2 ** t)
        self.table[rows] = self.table[rows] - self.lr * mhat / (np.sqrt(vhat) + self.eps)

    def model(self) -> StaticModel:
        s = self.start
        return StaticModel(s.vocab, self.table[: len(s.vocab)], s.model_id, header=s.header, bank=s.bank)


def train_table(pairs: list[dict], start: StaticModel, *, seed: int = 0, epochs: int = 4,
                batch: int = 64, lr: float = 3e-3, scale: float = 20.0, anchor: float = 0.0,
                hard_negatives: int = 5, valid: list[dict] | None = None, log=print,
                query_lr: float = 0.0) -> StaticModel:
    """`start` after contrastive training on `pairs` (deterministic for a seed): its vocabulary's
    rows move, the bank of unknown tokens stays as it is. `query_lr` > 0 also learns a weight per
    known token for the query side (`StaticModel.query_weight`, from 1), Adam at that rate."""
    rng = random.Random(seed)
    opt = RowAdam(start, lr)
    table, init = opt.table, start.table
    n_vocab = len(start.vocab)
    qopt = _WeightAdam(len(table), query_lr) if query_lr else None
    enc = Encoded(start)
    items = []
    for p in pairs:
        items.append((p["repo"], enc.add(p["query"]), [enc.add(t) for t in p["pos"]],
                      [enc.add(t) for t in p["negs"][:hard_negatives]]))
    for epoch in range(epochs):
        by_repo: dict[str, list] = defaultdict(list)
        for it in items:
            by_repo[it[0]].append(it)
        chunks = []
        for repo in sorted(by_repo):
            its = by_repo[repo]
            rng.shuffle(its)
            chunks.extend(its[i : i + batch] for i in range(0, len(its), batch) if len(its[i : i + batch]) >= 2)
        rng.shuffle(chunks)
        losses = []
        t0 = time.perf_counter()
        for chunk in chunks:
            queries = [it[1] for it in chunk]
            docs: list[int] = []
            target = []
            for it in chunk:
                target.append(len(docs))
                docs.append(rng.choice(it[2]))
            for it in chunk:
                docs.extend(it[3])
            positives = [set(it[2]) for it in chunk]
            batch_ = _Batch(enc, queries, docs, table, qopt)
            logits = scale * batch_.cosines
            # Another pair's changed function that is also one of this message's is no negative.
            mask = np.array([[j != target[i] and docs[j] in positives[i] for j in range(len(docs))]
                             for i in range(len(queries))])
            logits[mask] = -1e9
            prob = _softmax(logits)
            losses.append(float(-np.mean(np.log(prob[np.arange(len(queries)), target] + 1e-12))))
            g = prob
            g[np.arange(len(queries)), target] -= 1.0
            batch_.step(scale * g / len(queries), opt, qopt, n_vocab,
                        anchor=anchor * (batch_.e - init[batch_.rows]) if anchor else None)
        _log_epoch(f"epoch {epoch + 1}/{epochs}: loss {np.mean(losses):.3f} ({len(chunks)} batches, "
                   f"{time.perf_counter() - t0:.0f} s)", valid, opt, qopt, n_vocab, log)
    return _with_weights(opt.model(), qopt, n_vocab)


class _Batch:
    """Queries and documents of one step as the model embeds them (the query side weighed by the
    learned query weights), their cosines, and the step that takes a gradient of a loss in them."""

    def __init__(self, enc: Encoded, queries: list[int], docs: list[int], table: np.ndarray, qopt):
        self.rows = np.unique(np.concatenate([enc.ids[t] for t in queries + docs]))
        columns = {int(r): j for j, r in enumerate(self.rows)}
        self.xq = self.xq_raw = enc.matrix(queries, columns)
        if qopt is not None:
            self.xq = (self.xq_raw @ sparse.diags(qopt.w[self.rows])).tocsr()
        self.xd = enc.matrix(docs, columns)
        self.e = table[self.rows]
        self.q, self.qn = _normalized(self.xq @ self.e)
        self.d, self.dn = _normalized(self.xd @ self.e)
        self.cosines = self.q @ self.d.T

    def step(self, g: np.ndarray, opt: RowAdam, qopt, n_vocab: int, anchor: np.ndarray | None = None) -> None:
        """`g`: the loss's gradient in the cosines; back through the normalized sums to the rows."""
        q, d = self.q, self.d
        dq = g @ d
        dd = g.T @ q
        dq = (dq - q * np.sum(q * dq, axis=1, keepdims=True)) / self.qn
        dd = (dd - d * np.sum(d * dd, axis=1, keepdims=True)) / self.dn
        grad = np.asarray(self.xq.T @ dq + self.xd.T @ dd, dtype=np.float32)
        rows = self.rows
        if qopt is not None:
            gw = np.asarray(self.xq_raw.multiply(dq @ self.e.T).sum(axis=0)).ravel()
            qopt.step(rows[rows < n_vocab], gw[rows < n_vocab])
        if anchor is not None:
            grad += anchor
        opt.step(rows, grad)


def _softmax(logits: np.ndarray) -> np.ndarray:
    x = np.exp(logits - logits.max(axis=1, keepdims=True))
    return x / x.sum(axis=1, keepdims=True)


class _WeightAdam:
    """Adam over a weight per row (the query side's token weights), kept at or above zero."""

    def __init__(self, n: int, lr: float, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8):
        self.w = np.ones(n, np.float32)
        self.m = np.zeros(n, np.float32)
        self.v = np.zeros(n, np.float32)
        self.steps = np.zeros(n, np.int64)
        self.lr, self.b1, self.b2, self.eps = lr, b1, b2, eps

    def step(self, rows: np.ndarray, grad: np.ndarray) -> None:
        self.steps[rows] += 1
        t = self.steps[rows].astype(np.float32)
        self.m[rows] = self.b1 * self.m[rows] + (1 - self.b1) * grad
        self.v[rows] = self.b2 * self.v[rows] + (1 - self.b2) * grad * grad
        step = self.lr * (self.m[rows] / (1 - self.b1 ** t)) / (np.sqrt(self.v[rows] / (1 - self.b2 ** t)) + self.eps)
        self.w[rows] = np.maximum(self.w[rows] - step, 0.0)


def _log_epoch(msg: str, valid: list[dict] | None, opt: RowAdam, qopt, n_vocab: int, log) -> None:
    """An epoch's line, with the left-out repositories' scores where there are some."""
    if valid:
        msg += "  valid " + " ".join(f"{k} {x:.3f}" for k, x in score_pairs(_with_weights(opt.model(), qopt, n_vocab),
                                                                                valid).items())
    log(msg)


def _with_weights(model: StaticModel, qopt: _WeightAdam | None, n_vocab: int) -> StaticModel:
    if qopt is not None:
        model.query_weight = qopt.w[:n_vocab].copy()
    return model


def regress_table(texts: list[str], targets: np.ndarray, start: StaticModel, *, seed: int = 0, epochs: int = 3,
                  batch: int = 512, lr: float = 3e-3, valid: list[dict] | None = None, log=print) -> StaticModel:
    """`start` after regression onto the teacher (tokenlearn's step): each text's vector (the
    normalized sum of its rows) towards the direction of the teacher's (PCA-reduced) vector,
    1 - cosine, Adam on the rows a batch touches; the bank stays as it is."""
    rng = np.random.default_rng(seed)
    opt = RowAdam(start, lr)
    table = opt.table
    enc = Encoded(start)
    keys = np.asarray([enc.add(t) for t in texts])
    y = targets / np.maximum(np.linalg.norm(targets, axis=1, keepdims=True), 1e-9)

    for epoch in range(epochs):
        order = rng.permutation(len(texts))
        losses = []
        t0 = time.perf_counter()
        for start_i in range(0, len(order), batch):
            idx = order[start_i : start_i + batch]
            docs = [int(keys[i]) for i in idx]
            ids = [enc.ids[d] for d in docs]
            if not any(len(a) for a in ids):
                continue
            rows = np.unique(np.concatenate(ids))
            columns = {int(r): j for j, r in enumerate(rows)}
            x = enc.matrix(docs, columns)
            e = table[rows]
            s, sn = _normalized(x @ e)
            target = y[idx]
            losses.append(float(np.mean(1.0 - np.sum(s * target, axis=1))))
            ds = -target / len(idx)
            ds = (ds - s * np.sum(s * ds, axis=1, keepdims=True)) / sn
            opt.step(rows, np.asarray(x.T @ ds, dtype=np.float32))
        msg = f"regression epoch {epoch + 1}/{epochs}: 1 - cos {np.mean(losses):.4f} ({time.perf_counter() - t0:.0f} s)"
        if valid:
            msg += "  valid " + " ".join(f"{k} {x:.3f}" for k, x in score_pairs(opt.model(), valid).items())
        log(msg)
    return opt.model()


def teacher_rankings(groups: dict, teacher: np.ndarray, *, repos: set[str], top: int, log=print) -> list[tuple]:
    """For each commit message of `repos` (in `groups`: corpus indices of each repository's
    entities and messages), its repository's entities and the teacher's `top` best of them
    (cosine of the transformer's full vectors): what the ranking step imitates."""
    out = []
    for repo in sorted(repos):
        g = groups.get(repo)
        if not g or not g["entities"] or not g["messages"]:
            continue
        ents = np.asarray(g["entities"], dtype=np.int64)
        msgs = np.asarray(g["messages"], dtype=np.int64)
        te = teacher[ents].astype(np.float32)
        k = min(top, len(ents))
        for i in range(0, len(msgs), 256):
            sims = teacher[msgs[i : i + 256]].astype(np.float32) @ te.T
            best = np.argpartition(-sims, k - 1, axis=1)[:, :k]
            for m, b in zip(msgs[i : i + 256], best):
                out.append((repo, int(m), ents[b]))
        log(f"rankings: {repo}: {len(msgs)} messages over {len(ents)} entities")
    return out


def distill_rankings(texts: list[str], teacher: np.ndarray, rankings: list[tuple], groups: dict, start: StaticModel, *,
                     seed: int = 0, epochs: int = 1, batch: int = 32, pool: int = 512, lr: float = 1e-3,
                     scale: float = 20.0, teacher_scale: float = 20.0, valid: list[dict] | None = None, log=print,
                     query_lr: float = 0.0) -> StaticModel:
    """`start` after learning the teacher's rankings (listwise distillation): each commit message
    ranks its repository's entities (the teacher's best for each message of a batch, plus `pool`
    drawn at random) and the student's softmax over them is pulled to the teacher's (KL), so what
    moves is the order of the candidates a message ranks, not each text's vector on its own."""
    rng = np.random.default_rng(seed)
    opt = RowAdam(start, lr)
    table = opt.table
    n_vocab = len(start.vocab)
    qopt = _WeightAdam(len(table), query_lr) if query_lr else None
    enc = Encoded(start)
    key_of: dict[int, int] = {}

    def key(i: int) -> int:
        k = key_of.get(i)
        if k is None:
            k = key_of[i] = enc.add(texts[i])
        return k

    by_repo: dict[str, list[int]] = defaultdict(list)
    for n, (repo, _, _) in enumerate(rankings):
        by_repo[repo].append(n)
    for epoch in range(epochs):
        chunks = []
        for repo in sorted(by_repo):
            its = list(rng.permutation(by_repo[repo]))
            chunks.extend(its[i : i + batch] for i in range(0, len(its), batch) if len(its[i : i + batch]) >= 2)
        order = rng.permutation(len(chunks))
        losses = []
        t0 = time.perf_counter()
        for ci in order:
            chunk = chunks[ci]
            repo = rankings[chunk[0]][0]
            ents = groups[repo]["entities"]
            cand = np.unique(np.concatenate([*(rankings[n][2] for n in chunk),
                                             rng.choice(ents, size=min(pool, len(ents)), replace=False)]))
            msgs = [rankings[n][1] for n in chunk]
            tq = teacher[msgs].astype(np.float32)
            pt = _softmax(teacher_scale * (tq @ teacher[cand].astype(np.float32).T))
            queries = [key(m) for m in msgs]
            docs = [key(int(c)) for c in cand]
            if not any(len(enc.ids[t]) for t in queries + docs):
                continue
            batch_ = _Batch(enc, queries, docs, table, qopt)
            ps = _softmax(scale * batch_.cosines)
            losses.append(float(np.mean(np.sum(pt * (np.log(pt + 1e-12) - np.log(ps + 1e-12)), axis=1))))
            batch_.step(scale * (ps - pt) / len(queries), opt, qopt, n_vocab)
        _log_epoch(f"ranking epoch {epoch + 1}/{epochs}: KL {np.mean(losses):.4f} ({len(chunks)} batches, "
                   f"{time.perf_counter() - t0:.0f} s)", valid, opt, qopt, n_vocab, log)
    return _with_weights(opt.model(), qopt, n_vocab)


def score_pairs(model: StaticModel, pairs: list[dict]) -> dict[str, float]:
    """Per repository, every message ranks all texts of that repository's pairs: MRR of its
    first changed function, and recall@5 (one of them in the top 5), averaged over messages."""
    by_repo: dict[str, list[dict]] = defaultdict(list)
    for p in pairs:
        by_repo[p["repo"]].append(p)
    mrr, r5, n = 0.0, 0.0, 0
    for repo, ps in by_repo.items():
        texts = list(dict.fromkeys(t for p in ps for t in (*p["pos"], *p["negs"])))
        where = {t: i for i, t in enumerate(texts)}
        docs = model.embed(texts)
        qs = model.embed([p["query"] for p in ps], query=True)
        sims = qs @ docs.T
        for p, s in zip(ps, sims):
            order = np.argsort(-s, kind="stable")
            rank = np.empty(len(order), dtype=np.int64)
            rank[order] = np.arange(len(order))
            best = min(rank[where[t]] for t in p["pos"])
            mrr += 1.0 / (best + 1)
            r5 += best < 5
            n += 1
    return {"mrr": mrr / max(n, 1), "recall@5": r5 / max(n, 1)}


def commit_messages(gitdir: Path, head: str, limit: int) -> list[str]:
    """The newest `limit` commit messages (no merges) up to `head`, of 20 characters or more:
    prose as users write it, for the query side."""
    import subprocess

    if limit <= 0:
        return []
    out = subprocess.run(["git", "--git-dir", str(gitdir), "log", "--no-merges", f"-{limit}", "--format=%B%x00", head],
                         capture_output=True, check=True).stdout.decode("utf-8", "replace")
    return [m.strip() for m in out.split("\0") if len(m.strip()) >= 20]


def cmd_corpus(args) -> int:
    """The texts the teacher embeds for the regression step: every text of the pairs, and every
    non-test function, method and class of each training repository at its newest mined commit
    (as the index embeds them for the static model), gzip JSON lines."""
    import gzip

    from embedder_eval import corpus, mirror_of, text_of

    from nsccn.vectors.static_embed import STATIC_MAX_CHARS

    from static_teacher import read_texts

    if (args.pairs is None) != (args.mined is None):
        raise SystemExit("--pairs and --mined go together (neither: a corpus of --extra-repos alone)")
    pairs = read_pairs(args.pairs) if args.pairs else []
    check_no_evaluation_data(pairs)
    # `--exclude`: texts another corpus holds already (a corpus that extends it repeats none of them).
    known = {t for path in args.exclude for t in read_texts(path)}
    texts = dict.fromkeys(t for p in pairs for t in texts_of(p))
    print(f"{len(texts)} texts of {len(pairs)} pairs", file=sys.stderr)
    by_repo: dict[str, set[str]] = defaultdict(set)
    for r in (json.loads(line) for line in args.mined.read_text().splitlines() if line.strip()) if args.mined else ():
        by_repo[r["repo"]].add(r["base_commit"])
    bad = sorted(set(args.extra_repos) & EVALUATION_REPOSITORIES)
    if bad:
        raise SystemExit(f"--extra-repos names evaluation repositories {bad}")
    sources = {}
    for repo in [*sorted(by_repo), *args.extra_repos]:
        gitdir = mirror_of(args.mirrors, repo)
        head = corpus_commit(gitdir, repo, by_repo, args)
        parts = corpus(gitdir, head)
        messages = commit_messages(gitdir, head, args.messages)
        texts.update(dict.fromkeys(text_of(p, STATIC_MAX_CHARS) for p in parts.values()))
        texts.update(dict.fromkeys(messages))
        sources[repo] = {"commit": _git(gitdir, "rev-parse", head).strip(), "entities": len(parts), "messages": len(messages)}
        print(f"{repo}: {len(parts)} entities, {len(texts)} texts in all", file=sys.stderr, flush=True)
    ordered = [t for t in texts if t not in known]
    random.Random(args.seed).shuffle(ordered)
    ordered = ordered[: args.max_texts]
    with gzip.open(args.out, "wt", encoding="utf-8") as f:
        for t in ordered:
            f.write(json.dumps(t) + "\n")
    # Which commit of each repository the texts come from: `build` writes it into the model's header.
    sources_file(args.out).write_text(json.dumps(sources, indent=1) + "\n")
    print(f"wrote {len(ordered)} texts to {args.out} ({args.out.stat().st_size / 1e6:.1f} MB)", file=sys.stderr)
    return 0


def sources_file(texts: Path) -> Path:
    return texts.with_name(texts.name + ".sources.json")


def corpus_commit(gitdir: Path, repo: str, by_repo: dict[str, set[str]], args) -> str:
    """A mined repository's newest mined commit; an extra repository's pin (`benchmarks/pins.json`),
    or its mirror's HEAD with `--at-head`: a newer fetch must not change the corpus."""
    from embedder_eval import newest_commit

    if repo in by_repo:
        return newest_commit(gitdir, by_repo[repo])
    return pinned_ref(gitdir, repo, None if args.at_head else load_pins(args.pins))


def cmd_groups(args) -> int:
    """Which texts of the corpus (by position) are which repository's entities and commit messages,
    found as `corpus` found them: what the ranking step (`build --rank-epochs`) reads."""
    from embedder_eval import corpus, mirror_of, text_of
    from static_teacher import read_texts

    from nsccn.vectors.static_embed import STATIC_MAX_CHARS

    where = {t: i for i, t in enumerate(read_texts(args.texts))}
    by_repo: dict[str, set[str]] = defaultdict(set)
    for r in (json.loads(line) for line in args.mined.read_text().splitlines() if line.strip()):
        by_repo[r["repo"]].add(r["base_commit"])
    out = {}
    for repo in [*sorted(by_repo), *args.extra_repos]:
        gitdir = mirror_of(args.mirrors, repo)
        head = corpus_commit(gitdir, repo, by_repo, args)
        ents = sorted({where[t] for t in (text_of(p, STATIC_MAX_CHARS) for p in corpus(gitdir, head).values()) if t in where})
        msgs = sorted({where[m] for m in commit_messages(gitdir, head, args.messages) if m in where})
        out[repo] = {"entities": ents, "messages": msgs}
        print(f"{repo}: {len(ents)} entities, {len(msgs)} messages", file=sys.stderr, flush=True)
    args.out.write_text(json.dumps(out))
    return 0


def without_texts_of(texts: list[str], targets: np.ndarray, repos: set[str], pairs: list[dict],
                     args) -> tuple[list[str], np.ndarray]:
    """The corpus less what would tell the model about `repos`' commits: their pairs' texts (messages
    and changed functions) and their commit messages (as `corpus` added them). Their code stays (it
    carries no message -> function label) unless `--hold-out-code`: then the held-out repositories are
    code the model never saw, as a user's is. Used to cross-fit models whose vectors feature training
    records of repositories they never trained on."""
    from embedder_eval import corpus, mirror_of, newest_commit, text_of

    from nsccn.vectors.static_embed import STATIC_MAX_CHARS

    if not (args.mined and args.mirrors):
        raise SystemExit("--hold-out needs --mined and --mirrors (to find the held-out repositories' messages)")
    drop = {t for p in pairs if p["repo"] in repos for t in texts_of(p)}
    by_repo: dict[str, set[str]] = defaultdict(set)
    for r in (json.loads(line) for line in args.mined.read_text().splitlines() if line.strip()):
        by_repo[r["repo"]].add(r["base_commit"])
    for repo in sorted(repos):
        gitdir = mirror_of(args.mirrors, repo)
        head = newest_commit(gitdir, by_repo[repo])
        drop.update(commit_messages(gitdir, head, args.messages))
        if args.hold_out_code:  # their code too: the model meets it as it meets a user's, never seen
            drop.update(text_of(p, STATIC_MAX_CHARS) for p in corpus(gitdir, head).values())
    keep = [i for i, t in enumerate(texts) if t not in drop]
    print(f"held out {sorted(repos)}: {len(texts) - len(keep)} of {len(texts)} corpus texts dropped", file=sys.stderr)
    return [texts[i] for i in keep], targets[keep]


def load_raw_teacher(parts: Path, n: int) -> np.ndarray:
    """The teacher's full vectors (float16, normalized) from static_teacher.py's parts."""
    files = sorted(parts.glob("part-*.npy"))
    raw = np.concatenate([np.load(f) for f in files])
    if len(raw) != n:
        raise SystemExit(f"{parts} holds {len(raw)} vectors for {n} texts")
    return raw


def cmd_build(args) -> int:
    from static_teacher import load_teacher, read_texts

    pairs = read_pairs(args.pairs)
    check_no_evaluation_data(pairs)
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    valid_repos = set(args.valid_repos)
    held_out = set(args.hold_out)
    train = [p for p in pairs if p["repo"] not in valid_repos | held_out]
    valid = [p for p in pairs if p["repo"] in valid_repos]
    if len(args.texts) != len(args.teacher):
        raise SystemExit(f"{len(args.texts)} --texts but {len(args.teacher)} --teacher: one teacher file for each corpus")
    texts, targets = [], []
    for texts_path, teacher_path in zip(args.texts, args.teacher):
        part, vectors = read_texts(texts_path), load_teacher(teacher_path)
        if len(part) != len(vectors):
            raise SystemExit(f"{teacher_path} holds {len(vectors)} vectors for {len(part)} texts of {texts_path}")
        texts += part
        targets.append(vectors)
    targets = np.concatenate(targets)
    all_texts = texts
    if held_out:
        texts, targets = without_texts_of(texts, targets, held_out, pairs, args)
    key = hashlib.blake2b(json.dumps([sorted(valid_repos), args.min_repos, args.min_count, args.max_tokens,
                                      len(texts)]).encode(), digest_size=6).hexdigest()
    vocab_file = args.vocab or work / f"vocab-{key}.json"
    if vocab_file.exists():
        saved = json.loads(vocab_file.read_text())
        vocab, freq = saved["vocab"], np.array(saved["freq"])
    else:
        counted = train if args.vocab_pairs is None else [
            p for p in read_pairs(args.vocab_pairs) if p["repo"] not in valid_repos | held_out]
        base, _ = build_vocab(counted, args.min_repos, args.max_tokens)
        vocab, freq = vocab_of_texts(texts, args.min_count, args.max_tokens, base)
        vocab_file.write_text(json.dumps({"vocab": vocab, "freq": freq.tolist()}))
    print(f"vocabulary: {len(vocab)} tokens ({sum(len(split_identifier(t)) > 1 for t in vocab)} compounds)",
          file=sys.stderr)
    teacher_file = work / (vocab_file.stem + "-teacher.npy")
    if teacher_file.exists():
        teacher = np.load(teacher_file)
    else:
        teacher = teacher_rows(vocab, args.threads)
        np.save(teacher_file, teacher)
    log = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    start = initial_model(vocab, teacher, freq, args.dim, args.identity, args.oov_weight, args.bank_rows, args.tf,
                          args.seed)
    if valid:
        log("distilled, untrained: " + " ".join(f"{k} {x:.3f}" for k, x in score_pairs(start, valid).items()))
    # The regression's table depends on nothing later steps change: kept in WORK for the next build.
    regressed = work / ("regressed-" + hashlib.blake2b(json.dumps(
        [vocab_file.stem, len(texts), sorted(held_out), sorted(valid_repos), args.seed, args.regress_epochs,
         args.regress_lr, args.dim, args.identity, args.oov_weight, args.bank_rows, args.tf]).encode(),
        digest_size=6).hexdigest() + ".npy")
    if regressed.exists():
        model = StaticModel(start.vocab, np.load(regressed), start.model_id, header=start.header, bank=start.bank)
        log(f"regression: {regressed.name} of an earlier build")
    else:
        model = regress_table(texts, targets, start, seed=args.seed, epochs=args.regress_epochs, lr=args.regress_lr,
                              valid=valid, log=log)
        np.save(regressed, model.table[: len(model.vocab)])
    if args.rank_epochs:
        full_texts = all_texts  # the rankings' messages and entities by their place in the whole corpus
        raw = load_raw_teacher(args.rank_parts, len(full_texts))
        groups = json.loads(args.rank_groups.read_text())
        rankings = teacher_rankings(groups, raw, repos=set(groups) - valid_repos - held_out, top=args.rank_top, log=log)
        model = distill_rankings(full_texts, raw, rankings, groups, model, seed=args.seed, epochs=args.rank_epochs,
                                 batch=args.rank_batch, pool=args.rank_pool, lr=args.rank_lr, scale=args.rank_scale,
                                 teacher_scale=args.rank_teacher_scale, valid=valid, log=log,
                                 query_lr=args.rank_query_lr)
        del raw
    model = train_table(train, model, seed=args.seed, epochs=args.epochs, batch=args.batch, lr=args.lr,
                        scale=args.scale, anchor=args.anchor, valid=valid, log=log, query_lr=args.query_lr)
    header = {"trained_on": sorted({p["repo"] for p in train}), "pairs": len(train), "teacher_texts": len(texts),
              "seed": args.seed, "regress_epochs": args.regress_epochs, "regress_lr": args.regress_lr,
              "epochs": args.epochs, "lr": args.lr, "anchor": args.anchor, "scale": args.scale, "query_lr": args.query_lr,
              "identity": args.identity, "teacher": "nsccn/minilm-code-v1", "min_repos": args.min_repos,
              "min_count": args.min_count, "rank_epochs": args.rank_epochs, "rank_lr": args.rank_lr,
              "rank_scale": args.rank_scale, "rank_teacher_scale": args.rank_teacher_scale, "rank_pool": args.rank_pool,
              "rank_top": args.rank_top}
    for texts_path in args.texts:  # the commit each repository's texts came from (`corpus`)
        if sources_file(texts_path).exists():
            header.setdefault("sources", {}).update(
                {repo: src["commit"] for repo, src in json.loads(sources_file(texts_path).read_text()).items()})
    model.save(args.out, header)
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.1f} MB, {len(vocab)} x {args.dim})", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("corpus", help="pairs + training repositories' entities -> texts for the teacher")
    c.add_argument("--pairs", type=Path, help="the pairs whose texts open the corpus (with --mined; neither: "
                   "a corpus of --extra-repos alone)")
    c.add_argument("--mined", type=Path, help="mine_history.py's output (the commits of each repository)")
    c.add_argument("--exclude", type=Path, nargs="*", default=[],
                   help="corpora (texts.jsonl.gz) whose texts this one leaves out: a corpus that extends them")
    c.add_argument("--mirrors", type=Path, required=True)
    c.add_argument("--out", type=Path, required=True)
    c.add_argument("--pins", type=Path, default=PINS_FILE,
                   help="the commit each extra repository is read at (default: %(default)s)")
    c.add_argument("--at-head", action="store_true", help="read the extra repositories at their HEAD")
    c.add_argument("--max-texts", type=int, default=150000)
    c.add_argument("--extra-repos", nargs="*", default=[],
                   help="more repositories (in MIRRORS, at HEAD) whose code and messages the teacher embeds: "
                        "no pairs of theirs are used, and no evaluation repository is allowed")
    c.add_argument("--messages", type=int, default=0, help="commit messages of each repository to add")
    c.add_argument("--seed", type=int, default=0)
    c.set_defaults(run=cmd_corpus)
    g = sub.add_parser("groups", help="the corpus's texts by repository: entities and commit messages")
    g.add_argument("--texts", type=Path, required=True)
    g.add_argument("--mined", type=Path, required=True)
    g.add_argument("--mirrors", type=Path, required=True)
    g.add_argument("--extra-repos", nargs="*", default=[])
    g.add_argument("--messages", type=int, default=3000)
    g.add_argument("--out", type=Path, required=True)
    g.add_argument("--pins", type=Path, default=PINS_FILE,
                   help="the commit each extra repository is read at (default: %(default)s)")
    g.add_argument("--at-head", action="store_true", help="read the extra repositories at their HEAD")
    g.set_defaults(run=cmd_groups)
    b = sub.add_parser("build", help="pairs -> vocabulary -> distilled table -> trained table -> model file")
    b.add_argument("--pairs", type=Path, required=True, help="train_embedder.py pairs --max-chars 2000")
    b.add_argument("--texts", type=Path, nargs="+", required=True, help="the corpus command's texts (one or more corpora)")
    b.add_argument("--teacher", type=Path, nargs="+", required=True,
                   help="static_teacher.py's vectors of those texts, one file for each corpus, in their order "
                        "(a later corpus's reduced with the first's basis: static_teacher.py --basis)")
    b.add_argument("--min-count", type=int, default=5, help="texts a corpus token must occur in")
    b.add_argument("--regress-epochs", type=int, default=6)
    b.add_argument("--regress-lr", type=float, default=3e-3)
    b.add_argument("--work", type=Path, required=True, help="a directory for the cached vocabulary and teacher rows")
    b.add_argument("--out", type=Path, required=True)
    b.add_argument("--valid-repos", nargs="*", default=[], help="repositories left out of training and scored")
    b.add_argument("--hold-out", nargs="*", default=[],
                   help="repositories left out of training and of the corpus's messages (cross-fitted models)")
    b.add_argument("--hold-out-code", action="store_true",
                   help="with --hold-out: their code's texts out of the corpus too (by default it stays: it carries "
                        "no message -> function label), so the held-out repositories are unseen code")
    b.add_argument("--mined", type=Path, help="mine_history.py's output (for --hold-out)")
    b.add_argument("--mirrors", type=Path, help="bare clones (for --hold-out)")
    b.add_argument("--messages", type=int, default=3000, help="the corpus's --messages (for --hold-out)")
    b.add_argument("--vocab", type=Path, help="a vocabulary file of an earlier build (its teacher rows beside it)")
    b.add_argument("--vocab-pairs", type=Path,
                   help="the pairs whose tokens the vocabulary counts (default: --pairs; the shipped model: the 18 repositories')")
    b.add_argument("--min-repos", type=int, default=2)
    b.add_argument("--max-tokens", type=int, default=80000)
    b.add_argument("--dim", type=int, default=256)
    b.add_argument("--epochs", type=int, default=2)
    b.add_argument("--batch", type=int, default=64)
    b.add_argument("--lr", type=float, default=1e-3)
    b.add_argument("--scale", type=float, default=10.0)
    b.add_argument("--anchor", type=float, default=0.0)
    b.add_argument("--query-lr", type=float, default=0.0, help="learn the query side's token weights at this rate (0: none)")
    b.add_argument("--tf", choices=("log", "raw"), default="log")
    b.add_argument("--identity", type=float, default=1.0, help="weight of each token's own random row at the start")
    b.add_argument("--oov-weight", type=float, default=1.0, help="weight of an unknown token (its bank rows)")
    b.add_argument("--bank-rows", type=int, default=1 << 15, help="random rows for unknown tokens (0: none)")
    b.add_argument("--rank-epochs", type=int, default=0, help="epochs of learning the teacher's rankings (0: none)")
    b.add_argument("--rank-groups", type=Path, help="the groups command's output for --texts")
    b.add_argument("--rank-parts", type=Path, help="static_teacher.py --parts DIR: the teacher's full vectors")
    b.add_argument("--rank-lr", type=float, default=1e-3)
    b.add_argument("--rank-scale", type=float, default=50.0)
    b.add_argument("--rank-teacher-scale", type=float, default=50.0)
    b.add_argument("--rank-pool", type=int, default=512)
    b.add_argument("--rank-top", type=int, default=16)
    b.add_argument("--rank-batch", type=int, default=32)
    b.add_argument("--rank-query-lr", type=float, default=0.0)
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--threads", type=int, default=2)
    b.set_defaults(run=cmd_build)
    args = ap.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
