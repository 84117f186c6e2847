#!/usr/bin/env python
"""Variants of the static vector stream, scored as `embedder_eval.py` scores it (stop 63: none kept).

    python benchmarks/results/static-embedding/stream_variants.py --dataset D.jsonl --mirrors MIRRORS
        (--model M.npz | --fold-models F0.npz F1.npz F2.npz) [--per-repo N] [--max-chars C]
        [--variants shipped prf one-way late3 filemix depth-all ...]

Each repository of the dataset at its newest base commit, every non-test Python entity (`embedder_eval.corpus`);
each query ranks them with every variant. `--fold-models`: a mined dataset's repository is scored by the fold model
that never saw it (fold k held out `mine_history.REPOSITORIES[k::3]`, `train_static_embedder.py build --hold-out`),
so the training repositories serve as validation. `--per-repo N` takes a repository's newest N queries of more than
300 characters and its newest N shorter ones (commit messages; the dev set's reports are nearly all long). Prints
file@1 / file@5 / function@5 / function@10 for all, long and short queries, and per variant the queries better /
worse than `shipped` (the stream as nsccn reads it: cosine, then its first `semantic.RERANK_DEPTH` ordered again by
`StaticModel.second_stage`).

Variants: `prf` (the query vector plus 0.5 x the mean of its 10 nearest entities, then the second stage: Rocchio
feedback), `one-way` (the second stage without the late interaction the other way: cosine + 2 x how well each entity
covers the query), `late3` (that interaction at weight 3 instead of 2), `filemix[W]` (each entity's vector plus W (0.3) x its
file's mean vector), `depth-all` (the second stage over every entity, not the first 100; slow: every text is read
again for every query). The results of stop 63 (`s63/variants-*.txt`) were made at efe0980, whose second stage was
one-way: there `shipped` is today's `one-way` and `bidi` today's `shipped`.

Stop 65's (`s65/`; the code lines' weight and the files' context kept, so `shipped` has both since; the files
made before have neither or only the first, as each says): `stop64` (neither), `no-file-context` (each entity's own
vector), `one-bag` (the query read whole, its code lines and prose
alike: the stream before stop 65), `codewX` (its code lines weighed X: `static_embed.prose_and_code`; `codewAX` /
`codewBX` in the first stage / the second stage only), `ridfP` (the query's tokens also weighed by their BM25 idf
among the repository's entities, to the power P), `abttK` (all-but-the-top: the repository's mean vector and its
first K principal directions taken out of entities and query), `classmixW` (each method's vector plus W x its
class's), `bigramG` (adjacent token pairs as rare names, two bank rows each, mixed in at G), `titleN` (the title read N more
times, `static_embed.TITLE_REPEAT`), `dirmixW` (the shipped file context plus W x the directory's mean vector), `fileclassW` (the shipped file
context plus W x a method's class's vector), `stageW,C` (the second stage's weights: `LATE_WEIGHT` W, `COVER_WEIGHT` C).

Stop 66's (`s66/`; `shipped` since reads the second stage 200 deep and adds the files' best, `semantic.file_stage`;
`stop65` is the stream before, 100 deep without it, and `stop64` is 100 deep too): `depthN` (the second stage over the
first N), `filestageW@D` (each candidate + W x the best second-stage score of its file's candidates, over the first D),
`filemeanW` (+ W x their mean instead; measured 100 deep), `filesumW,K` (+ W x the sum of the file's best K), `filecoverW`
(the shipped stream + W x how well the file's candidates' texts, as one, cover the query), `segW` (+ W x the best cosine of any of the query's paragraphs, a
multi-vector query, before the second stage).

Stop 67's (`s67/`; `shipped` since also reads the other entities of the first `semantic.EXPAND_FILES` files the stage
ranks, the `EXPAND_LIMIT` nearest;
`stop66` is the stream before, without): `capK` (in the shipped order, a file's (K+1)th candidate and later after every
other file's first K), `fpenL` (each candidate - L x the number of its file's candidates above it), `expandK[,L]` (the
first K files read, at most L more entities, nearest first; no L: all), `qmaxC` (the query's first C characters only), `filerecallF` (the entities of the F files
whose mean vectors are nearest the query join the stage's candidates), `firstfileW,C` (the first file's candidates
ordered among themselves by cosine + W x covers + C x covered, within the file's old range of scores).

Stop 68's (`s68/`; `shipped` since also reads each candidate's qualified name, `StaticModel.second_stage` at
`NAME_WEIGHT`; `stop67` is the stream before, without; variants with a stage of their own read no names): on stop
67's stage, `nameW` (+ W x how well the query covers the candidate's own name, the last part of its qualified name),
`qnameW` (the same of the whole qualified name: the shipped term at W), `saidW` (+ W if the query says the own name
whole, any case), `nsW,S` (name at W and said at S), `nqW,Q` (name at W and qname at Q).

Report-like queries of a mined dataset (`--report-like`): each commit that added three lines or more to test files
becomes the message, then those lines in a fenced block (up to 1,500 characters), as
`report_pairs.py` makes its training twins: a report's snippet is much like the test that reproduces it.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import mine_history  # noqa: E402
from embedder_eval import KEYS, corpus, mirror_of, newest_commit, scores, text_of  # noqa: E402

from nsccn.text import split_identifier  # noqa: E402
from nsccn.vectors.semantic import EXPAND_FILES, FILE_CONTEXT, FILE_STAGE, RERANK_DEPTH, FileContext, file_stage, staged  # noqa: E402
from nsccn.vectors.static_embed import COVER_WEIGHT, LATE_WEIGHT, STATIC_MAX_CHARS, StaticModel, as_query, prose_and_code  # noqa: E402

LONG = 300  # characters: a query longer than this is "long" (a message with a body, a report)


class Repo:
    """One repository's entities, their texts and vectors under one model."""

    def __init__(self, model: StaticModel, parts: dict, max_chars: int):
        self.m, self.ids = model, list(parts)
        self.texts = [text_of(parts[i], max_chars) for i in self.ids]
        self.docs = model.embed(self.texts)
        self.context = FileContext([i.split(":", 1)[0] for i in self.ids], self.docs)
        self._cache: dict = {}

    def cached(self, key, make):
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def mix(self, *terms: tuple[float, np.ndarray]) -> np.ndarray:
        """The entities' vectors plus each (weight, per-entity vectors) of `terms`, normalized."""
        mixed = self.docs + sum(w * v for w, v in terms)
        return mixed / np.maximum(np.linalg.norm(mixed, axis=1, keepdims=True), 1e-12)

    def group_means(self, group_of) -> np.ndarray:
        """Each entity's group's mean vector, normalized (`group_of`: entity id -> its group)."""
        groups = [group_of(i) for i in self.ids]
        index = {g: k for k, g in enumerate(dict.fromkeys(groups))}
        of = np.array([index[g] for g in groups])
        means = np.zeros((len(index), self.docs.shape[1]), np.float32)
        np.add.at(means, of, self.docs)
        means /= np.maximum(np.linalg.norm(means, axis=1, keepdims=True), 1e-12)
        return means[of]

    def file_means(self) -> np.ndarray:
        return self.cached("files", lambda: self.group_means(lambda i: i.split(":", 1)[0]))

    def dir_means(self) -> np.ndarray:
        return self.cached("dirs", lambda: self.group_means(lambda i: i.split(":", 1)[0].rpartition("/")[0]))

    def class_vectors(self) -> np.ndarray:
        """Each method's class's own vector (zero for the rest)."""
        def make():
            at = {i: k for k, i in enumerate(self.ids)}
            cls = np.zeros_like(self.docs)
            for k, i in enumerate(self.ids):
                path, _, qual = i.partition(":")
                c = at.get(path + ":" + qual.rsplit(".", 1)[0]) if "." in qual else None
                if c is not None:
                    cls[k] = self.docs[c]
            return cls
        return self.cached("classes", make)

    def idf(self) -> np.ndarray:
        """Each row's BM25 idf among this repository's entities (a row no entity has: the largest)."""
        def make():
            df = np.zeros(self.m.n_vocab + self.m.bank_rows, np.float32)
            for t in self.texts:
                df[self.m._weighed_rows(t)[0]] += 1
            n = len(self.texts)
            return np.log((n - df + 0.5) / (df + 0.5) + 1.0).astype(np.float32)
        return self.cached("idf", make)

    def centered(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The entities' vectors less their mean and their first `k` principal directions (all-but-the-top),
        and the projection that removes those directions from a query."""
        def make():
            d = self.docs - self.docs.mean(0)
            top = (np.linalg.svd(d[:: max(1, len(d) // 20000)], full_matrices=False)[2][:k] if k
                   else np.zeros((0, d.shape[1]), np.float32))
            d = d - (d @ top.T) @ top
            return d / np.maximum(np.linalg.norm(d, axis=1, keepdims=True), 1e-12), top
        return self.cached(("centered", k), make)


def two_stage(r: Repo, query: str, qv: np.ndarray, docs: np.ndarray | None = None, stage=None,
              cos: np.ndarray | None = None, depth: int = RERANK_DEPTH, file_weight: float = FILE_STAGE,
              expand: int = EXPAND_FILES, expand_limit: int | None = None, names: bool = True) -> np.ndarray:
    """Cosine, then the first `depth` and every entity of the first `expand` files they rank ordered again by
    `stage(texts, cosines)` (default: the model's second stage, with the candidates' names unless not `names`)
    and `semantic.file_stage` at `file_weight` (`semantic.staged`)."""
    if cos is None:
        cos = r.context.cosines(r.docs, qv) if docs is None else docs @ qv  # as nsccn reads it: with the files' context

    def score(at):
        texts = [r.texts[j] for j in at]
        if stage is not None:
            return stage(texts, cos[at])
        return r.m.second_stage(query, texts, cos[at], [r.ids[j].split(":", 1)[1] for j in at] if names else None)
    cand, scores = staged(cos, r.context.of, score,
                          depth=depth, expand=expand, expand_limit=expand_limit, file_weight=file_weight)
    out = cos - 10.0  # below every second-stage score: the rest keep their order
    out[cand] = scores
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
    if name in ("one-way", "late3"):
        weight = LATE_WEIGHT if name == "one-way" else 3.0
        return two_stage(r, query, qv, stage=lambda texts, cos: cos + weight * m.late_interaction(query, texts))
    if name.startswith("depth") and name != "depth-all":  # the second stage over the first N, not RERANK_DEPTH
        return two_stage(r, query, qv, depth=int(name[5:]))
    if name.startswith("seg"):  # segW: + W x the best cosine of any of the query's paragraphs (a multi-vector query)
        segs = segments(query)
        cos = r.context.cosines(r.docs, qv)
        if len(segs) > 1:
            sv = m.embed(segs, query=True)
            cos = cos + float(name[3:]) * np.max([r.context.cosines(r.docs, v) for v in sv], axis=0)
        return two_stage(r, query, qv, cos=cos)
    if name.startswith("filestage"):  # filestageW@D: the files' best at W, over the first D (RERANK_DEPTH)
        w, _, depth = name[9:].partition("@")
        return two_stage(r, query, qv, depth=int(depth or RERANK_DEPTH), file_weight=float(w))
    if name.startswith("filemean"):  # filemeanW: + W x the mean score of the same file's candidates instead
        return with_file_term(r, query, qv, lambda scores, texts: float(name[8:]) * float(np.mean(scores)))
    if name.startswith("filesum"):  # filesumW,K: + W x the sum of the file's best K candidates' scores instead
        w, k = name[7:].split(",")
        return with_file_term(r, query, qv, lambda scores, texts: float(w) * sum(sorted(scores)[-int(k):]))
    if name.startswith("filecover"):  # filecoverW: the shipped stream + W x how well the file's candidates together
        # cover the query (their texts as one, `StaticModel.interactions`' first)
        return with_file_term(r, query, qv, lambda scores, texts: float(name[9:]) * float(
            m.interactions(query, ["\n".join(texts)])[0][0]), shipped=True)
    if name.startswith("cap") or name.startswith("fpen"):
        # capK: in the shipped order, a file's (K+1)th candidate and later go after every other file's first K;
        # fpenL: each candidate - L x the number of its file's candidates ranked above it (a soft cap)
        s = two_stage(r, query, qv)
        order = np.argsort(-s, kind="stable")
        seen: dict[str, int] = defaultdict(int)
        occ = np.zeros(len(s), np.float32)
        for j in order[:RERANK_DEPTH]:
            f = r.ids[j].split(":", 1)[0]
            occ[j], seen[f] = seen[f], seen[f] + 1
        if name.startswith("fpen"):
            return s - float(name[4:]) * occ
        out = s.copy()
        rank = np.empty(len(s), np.float32)
        rank[order] = np.arange(len(s), dtype=np.float32)
        top = order[:RERANK_DEPTH]
        key = np.where(occ[top] >= int(name[3:]), 1.0, 0.0) * len(s) + rank[top]
        out[top] = float(s[top].max()) + 2.0 * len(s) - key  # above the rest, in the capped order
        return out
    if name.startswith("expand"):  # expandK[,L]: the first K files read (`semantic.EXPAND_FILES`), at most L more
        k, _, limit = name[6:].partition(",")
        return two_stage(r, query, qv, expand=int(k), expand_limit=int(limit) if limit else 10 ** 9)
    if name.startswith("filerecall"):  # filerecallF: the entities of the F files whose mean vectors are nearest
        # the query join the stage's candidates (beside the first RERANK_DEPTH by cosine)
        cos = r.context.cosines(r.docs, qv)
        near = set(np.argsort(-(r.context.means @ qv))[: int(name[10:])].tolist())
        top = set(np.argsort(-cos, kind="stable")[:RERANK_DEPTH].tolist())
        extra = [j for j in range(len(cos)) if r.context.of[j] in near and j not in top]
        ranking = cos.copy()
        ranking[extra] += 10.0  # first among the candidates; the stage reads their own cosines
        cand, scores = staged(ranking, r.context.of, lambda at: m.second_stage(query, [r.texts[j] for j in at], cos[at]),
                              depth=RERANK_DEPTH + len(extra))
        out = cos - 10.0
        out[cand] = scores
        return out
    if name.startswith("firstfile"):  # firstfileW,C: the first file's candidates ordered among themselves by
        # cosine + W x covers + C x covered (the rest, and the files' order, as shipped)
        w, c = (float(x) for x in name[9:].split(","))
        cos = r.context.cosines(r.docs, qv)
        cand, scores = staged(cos, r.context.of, lambda at: m.second_stage(query, [r.texts[j] for j in at], cos[at]))
        out = cos - 10.0
        out[cand] = scores
        if not len(cand):
            return out
        first = r.context.of[cand[int(np.argmax(scores))]]
        mine = cand[r.context.of[cand] == first]
        covers, covered = m.interactions(query, [r.texts[j] for j in mine])
        own = cos[mine] + w * covers + c * covered
        # the file's scores moved to the new order, kept within the file's old range: files keep their order
        lo, hi = float(out[mine].min()), float(out[mine].max())
        span = float(own.max() - own.min()) or 1.0
        out[mine] = lo + (own - own.min()) / span * (hi - lo)
        return out
    if name.startswith(("name", "said", "ns", "nq", "qname")):
        # nameW: the second stage + W x how well the query covers each candidate's own name (the last part of its
        # qualified name, read as the model reads a text: `StaticModel.interactions`' second);
        # saidW: + W x whether the query says that name whole (an identifier of the query, any case);
        # nsW,S: both, name at W and said at S; qnameW: nameW over the whole qualified name (a method's class too)
        qw = 0.0  # nqW,Q: nameW plus Q x the same of the whole qualified name
        if name.startswith("nq"):
            (w, qw), s = (float(x) for x in name[2:].split(",")), 0.0
        elif name.startswith("ns"):
            w, s = (float(x) for x in name[2:].split(","))
        elif name.startswith("qname"):
            w, s = float(name[5:]), 0.0
        else:
            w, s = (float(name[4:]), 0.0) if name.startswith("name") else (0.0, float(name[4:]))
        cos = r.context.cosines(r.docs, qv)
        said = {t.lower() for t in _IDENT.findall(query)}

        def stage(at):
            quals = [r.ids[j].split(":", 1)[1] for j in at]
            names = [q.rsplit(".", 1)[-1] for q in quals]
            out = m.second_stage(query, [r.texts[j] for j in at], cos[at])
            if w:
                out = out + w * m.interactions(query, quals if name.startswith("qname") else names)[1]
            if qw:
                out = out + qw * m.interactions(query, quals)[1]
            if s:
                out = out + s * np.array([n.lower() in said for n in names], np.float32)
            return out
        cand, scores = staged(cos, r.context.of, stage)
        out = cos - 10.0
        out[cand] = scores
        return out
    if name == "stop67":  # the second stage without the candidates' names (the stream before stop 68)
        return two_stage(r, query, qv, names=False)
    if name == "stop66":  # the first files not read whole (the stream before stop 67)
        return two_stage(r, query, qv, expand=0, names=False)
    if name.startswith("qmax"):  # qmaxC: the query's first C characters only (a transformer reads ~256 tokens)
        q = query[: int(name[4:])]
        return two_stage(r, q, m.embed([q], query=True)[0])
    if name == "stop65":  # the second stage over the first 100, without the files' best (the stream before stop 66)
        return two_stage(r, query, qv, depth=100, file_weight=0.0, expand=0, names=False)
    if name == "no-file-context":  # each entity's own vector (the stream before stop 65)
        return two_stage(r, query, qv, docs=r.docs)
    if name.startswith("stage"):  # stageW,C: the second stage as cosine + W x covers + C x covered
        w, c = (float(x) for x in name[5:].split(","))

        def weighed(texts, cos):
            covers, covered = m.interactions(query, texts)
            return cos + w * covers + c * covered
        return two_stage(r, query, qv, stage=weighed)
    if name.startswith("fileclass"):  # the shipped file context, plus W x a method's class's own vector
        return two_stage(r, query, qv, docs=r.cached(name, lambda: r.mix(
            (FILE_CONTEXT, r.file_means()), (float(name[9:]), r.class_vectors()))))
    if name.startswith("dirmix"):  # the shipped file context, plus W x the entity's directory's mean vector
        return two_stage(r, query, qv, docs=r.cached(name, lambda: r.mix(
            (FILE_CONTEXT, r.file_means()), (float(name[6:]), r.dir_means()))))
    if name.startswith("filemix"):
        return two_stage(r, query, qv, docs=r.cached(name, lambda: r.mix((float(name[7:] or 0.3), r.file_means()))))
    if name.startswith("classmix"):
        return two_stage(r, query, qv, docs=r.cached(name, lambda: r.mix((float(name[8:]), r.class_vectors()))))
    if name == "depth-all":
        return file_stage([i.split(":", 1)[0] for i in r.ids], m.second_stage(query, r.texts, r.context.cosines(r.docs, qv)))
    if name.startswith("title"):  # the title read N more times (TITLE_REPEAT), the rest as shipped
        from nsccn.vectors import static_embed

        kept, static_embed.TITLE_REPEAT = static_embed.TITLE_REPEAT, int(name[5:])
        try:
            return two_stage(r, query, m.embed([query], query=True)[0])
        finally:
            static_embed.TITLE_REPEAT = kept
    if name.startswith("ridf"):  # the query's tokens weighed by their idf in this repository, to the power given
        found, w = m.query_bag(query)
        w = w * r.idf()[found] ** float(name[4:])
        return two_stage(r, query, rows_vector(m, found, w), stage=stage_of(m, query, found, w))
    if name.startswith("codew") or name in ("one-bag", "stop64"):
        # codewX: the query's code lines weighed X (`static_embed.prose_and_code`; the shipped X is CODE_WEIGHT);
        # codewAX / codewBX: so in the first stage / the second only; one-bag: the query read whole, code and
        # prose alike in one bag (the stream before stop 65)
        where = name[5] if name.startswith("codew") and name[5] in "AB" else ""
        if name in ("one-bag", "stop64"):
            found, w = m.bag(as_query(query))
        else:
            prose, code = prose_and_code(as_query(query))
            fp, wp = m.bag(prose)
            fc, wc = m.bag(code)
            found = np.concatenate([fp, fc])
            w = np.concatenate([wp, float(name[5 + len(where):]) * wc])
        w = m.weigh_query(found, w)
        q2, stage2 = rows_vector(m, found, w), stage_of(m, query, found, w)
        if name == "stop64":  # the query in one bag, each entity's own vector: the stream before stop 65
            return two_stage(r, query, q2, docs=r.docs, stage=stage2, depth=100, file_weight=0.0, expand=0)
        if where == "A":
            return two_stage(r, query, q2)
        if where == "B":
            return two_stage(r, query, qv, stage=stage2)
        return two_stage(r, query, q2, stage=stage2)
    if name.startswith("bigram"):  # adjacent tokens' pairs as rare names (two bank rows each), weight g
        g = float(name[6:])
        d = r.cached(name, lambda: r.mix((g, r.cached("bigrams", lambda: bigram_vectors(m, r.texts)))))
        q2 = qv + g * bigram_vectors(m, [as_query(query)])[0]
        return two_stage(r, query, q2 / max(float(np.linalg.norm(q2)), 1e-12), docs=d)
    if name.startswith("abtt"):  # all-but-the-top: the repository's mean and first k directions out
        d, top = r.centered(int(name[4:]))
        q2 = qv - (qv @ top.T) @ top if len(top) else qv
        return two_stage(r, query, q2 / max(float(np.linalg.norm(q2)), 1e-12), docs=d)
    raise SystemExit(f"unknown variant {name}")


def segments(query: str) -> list[str]:
    """The query's paragraphs (split at blank lines; a fenced block is one), those of three tokens or more."""
    out, fence, cur = [], False, []
    for line in as_query(query).splitlines():
        if line.strip().startswith("```"):
            fence = not fence
        if not line.strip() and not fence:
            if cur:
                out.append("\n".join(cur))
            cur = []
        else:
            cur.append(line)
    if cur:
        out.append("\n".join(cur))
    return [p for p in out if len(_IDENT.findall(p)) >= 3]


def with_file_term(r: Repo, query: str, qv: np.ndarray, term, shipped: bool = False) -> np.ndarray:
    """The second stage over the first `RERANK_DEPTH` (after `file_stage` if `shipped`, else without it), each
    candidate + `term(its file's candidates' scores, their texts)`."""
    cos = r.context.cosines(r.docs, qv)
    top = np.argsort(-cos, kind="stable")[:RERANK_DEPTH]
    files = [r.ids[j].split(":", 1)[0] for j in top]
    stage = r.m.second_stage(query, [r.texts[j] for j in top], cos[top])
    s = file_stage(files, stage) if shipped else stage
    of: dict[str, list[int]] = defaultdict(list)
    for k, f in enumerate(files):
        of[f].append(k)
    value = {f: term([float(stage[k]) for k in ks], [r.texts[top[k]] for k in ks]) for f, ks in of.items()}
    out = cos - 10.0
    out[top] = s + np.array([value[f] for f in files], np.float32)
    return out


def rows_vector(m: StaticModel, found: np.ndarray, w: np.ndarray) -> np.ndarray:
    """A query's vector from its rows and their weights (as `StaticModel.embed` sums them), normalized."""
    v = (m.rows(found) * w[:, None]).sum(0) if len(found) else np.zeros(m.dim, np.float32)
    return v / max(float(np.linalg.norm(v)), 1e-12)


def stage_of(m: StaticModel, query: str, found: np.ndarray, w: np.ndarray):
    """The shipped second stage for a query read as these rows and weights."""
    def stage(texts, cos):
        covers, covered = m.interactions(query, texts, query_rows=(found, w))
        return cos + LATE_WEIGHT * covers + COVER_WEIGHT * covered
    return stage


def bigram_vectors(m: StaticModel, texts: list[str]) -> np.ndarray:
    """Each text's adjacent token pairs, each as two signed rows of the model's bank, 1 + log(count), normalized."""
    out = np.zeros((len(texts), m.dim), np.float32)
    for k, text in enumerate(texts):
        toks = [t for ident in _IDENT.findall(text) for t in split_identifier(ident) if not t.isdigit()]
        counts: dict[str, int] = {}
        for a, b in zip(toks, toks[1:]):
            counts[a + " " + b] = counts.get(a + " " + b, 0) + 1
        ids, ws = [], []
        for t, c in counts.items():
            for row, sign in m._bank_rows(t):
                ids.append(row)
                ws.append(sign * (1.0 + np.log(c)))
        if ids:
            v = (m.rows(np.asarray(ids, np.intp)) * np.asarray(ws, np.float32)[:, None]).sum(0)
            out[k] = v / max(float(np.linalg.norm(v)), 1e-12)
    return out


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def report_like(records: list[dict], mirrors: Path) -> list[dict]:
    """The records whose commit added three lines or more of test code, each as its message then that code
    fenced (`report_pairs.added_test_code`), in their order."""
    from report_pairs import added_test_code

    def twin(rec: dict) -> dict | None:
        code = added_test_code(mirror_of(mirrors, rec["repo"]), rec["commit"])
        if code.count("\n") < 2:
            return None
        return dict(rec, instance_id=rec["instance_id"] + "-report",
                    problem_statement=rec["problem_statement"].rstrip() + "\n\n```python\n" + code + "\n```")

    with ThreadPoolExecutor(4) as pool:
        return [t for t in pool.map(twin, records) if t]


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
    ap.add_argument("--report-like", action="store_true",
                    help="each mined commit that added test code as a report-like query: the message and that code")
    ap.add_argument("--max-chars", type=int, default=STATIC_MAX_CHARS)
    ap.add_argument("--variants", nargs="+", default=["shipped", "prf", "one-way", "late3", "filemix", "depth-all"])
    args = ap.parse_args()
    if bool(args.model) == bool(args.fold_models):
        ap.error("one of --model and --fold-models")
    records = [json.loads(x) for x in args.dataset.read_text().splitlines() if x.strip()]
    if args.report_like:
        records = report_like(records, args.mirrors)
    records = select(records, args.per_repo)
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
