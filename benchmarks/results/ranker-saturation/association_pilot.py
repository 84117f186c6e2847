"""Pilot (sixteenth stop, negative): a cross-repository term association (query word -> name/path part of what the fix
changed), learned from training repositories' mined pairs, as extra ranker features.

    python association_pilot.py 'HELD_OUT_FEATURES_GLOB' heldout.jsonl mined.jsonl repos|pooled

Models with and without the association features are trained in four grouped folds over the
held-out twelve's feature records (three repositories a fold) and score the fold left out; the
association table comes from the 18 mined repositories' pairs only. Output: association-*.txt.
"""
import collections
import glob
import json
import math
import sys
from pathlib import Path

import lightgbm as lgb
import numpy as np

_ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(_ROOT / "benchmarks")); sys.path.insert(0, str(_ROOT))
from nsccn.query_analysis import analyze_query
from nsccn.text import split_identifier
from localize import instance_metrics
from paired_sign import KEYS

from nsccn.model import split_entity_id
from nsccn.ranking import FUNCTION_EVIDENCE, order, with_function_evidence
from nsccn.ranking.features import FILE_FEATURES, FUNCTION_FEATURES
from nsccn.ranking.train import PARAMS, ROUNDS

STOP = set("the a an to of in on for and or is be with from by at as it this that not when use used using fix fixed fixes add added remove removed update make".split())

def qterms(text):
    return {t for t in analyze_query(text).terms if len(t) > 2 and t not in STOP and not t.isdigit()}

def name_tokens(qualname):
    return {t for t in split_identifier(qualname) if len(t) > 2 and not t.isdigit()}

def path_tokens(path):
    p = path[:-3] if path.endswith(".py") else path
    return {t for t in split_identifier(p) if len(t) > 2 and not t.isdigit()} - {"src", "lib"}

def build_table(pairs, min_pair=3):
    nq, nt, nqt = collections.Counter(), collections.Counter(), collections.Counter()
    N = 0
    for p in pairs:
        Q = qterms(p["problem_statement"])
        T = set()
        for g in p["gold_functions"]:
            path, qual = g.split(":", 1)
            T |= name_tokens(qual)
        for f in p["gold_files"]:
            T |= path_tokens(f)
        if not Q or not T:
            continue
        N += 1
        nq.update(Q); nt.update(T)
        nqt.update((q, t) for q in Q for t in T)
    table = collections.defaultdict(dict)
    for (q, t), c in nqt.items():
        if c < min_pair:
            continue
        pmi = math.log(c * N / (nq[q] * nt[t]))
        if pmi > 0:
            # shrink toward 0 with few pairs
            table[q][t] = pmi * c / (c + 5)
    return table, N

def assoc_features(Q, T, table):
    """max over (q, t); mean over t of max over q; the same without identical q == t."""
    if not T:
        return [0.0, 0.0, 0.0]
    best_t = []; mx = 0.0; mx_noid = 0.0
    for t in T:
        b = 0.0
        for q in Q:
            v = table.get(q, {}).get(t, 0.0)
            if v > b: b = v
            if q != t and v > mx_noid: mx_noid = v
        best_t.append(b); mx = max(mx, b)
    return [mx, sum(best_t) / len(best_t), mx_noid]

def add_features(rec, table):
    Q = qterms(rec.get("problem_statement") or rec["_query"])
    frows = [assoc_features(Q, path_tokens(p), table) for p in rec["files"]]
    grows = []
    for f in rec["functions"]:
        _, path, qual = split_entity_id(f)
        grows.append(assoc_features(Q, name_tokens(qual), table) + assoc_features(Q, path_tokens(path), table)[:2])
    return frows, grows

def build_table_repos(pairs, min_repos=3, min_pair=2):
    """Associations that hold across repositories: PMI within each repository (repository-specific
    vocabulary cancels), kept where positive in at least `min_repos` repositories; the value is
    the sum of positive per-repository PMIs divided by the number of repositories."""
    by = collections.defaultdict(list)
    for p in pairs:
        by[p["repo"]].append(p)
    acc = collections.defaultdict(float); nrep = collections.Counter()
    R = len(by)
    for repo, ps in by.items():
        nq, nt, nqt = collections.Counter(), collections.Counter(), collections.Counter(); N = 0
        for p in ps:
            Q = qterms(p["problem_statement"]); T = set()
            for g in p["gold_functions"]:
                T |= name_tokens(g.split(":", 1)[1])
            for f in p["gold_files"]:
                T |= path_tokens(f)
            if not Q or not T: continue
            N += 1; nq.update(Q); nt.update(T); nqt.update((q, t) for q in Q for t in T)
        for (q, t), c in nqt.items():
            if c < min_pair: continue
            pmi = math.log(c * N / (nq[q] * nt[t]))
            if pmi > 0:
                acc[(q, t)] += pmi * c / (c + 3); nrep[(q, t)] += 1
    table = collections.defaultdict(dict)
    for k, v in acc.items():
        if nrep[k] >= min_repos:
            table[k[0]][k[1]] = v / R
    return table, R


# --- the pilot. LightGBM is called directly: `nsccn.ranking.train.fit` knows only the shipped
# feature columns, and the association columns are appended to them here.

def mats(rs, level, extra):
    xs, ys, gs = [], [], []
    for r in rs:
        rows = np.asarray(r[f"{level}_rows"], float).reshape(-1, len(FILE_FEATURES if level == "file" else FUNCTION_FEATURES))
        if extra:
            rows = np.hstack([rows, np.asarray(r["_fa" if level == "file" else "_ga"], float).reshape(len(rows), -1)])
        xs.append(rows); ys.append(np.asarray(r[f"{level}_labels"], float)); gs.append(len(rows))
    return xs, ys, gs


def train(rs, level, extra):
    xs, ys, gs = mats(rs, level, extra)
    keep = [i for i in range(len(xs)) if len(ys[i]) and ys[i].any()]
    d = lgb.Dataset(np.vstack([xs[i] for i in keep]), np.concatenate([ys[i] for i in keep]), group=[gs[i] for i in keep])
    return lgb.train(dict(PARAMS, seed=0), d, num_boost_round=ROUNDS)


def main():
    records_glob, held_out, mined, kind = sys.argv[1:5]
    recs = [json.loads(l) for f in sorted(glob.glob(records_glob)) for l in open(f)]
    q = {json.loads(l)["instance_id"]: json.loads(l)["problem_statement"] for l in open(held_out)}
    pairs = [json.loads(l) for l in open(mined)]
    table, _ = (build_table_repos(pairs) if kind == "repos" else build_table(pairs))
    for r in recs:
        r["_query"] = q[r["instance_id"]]
        r["_fa"], r["_ga"] = add_features(r, table)
    repos = sorted({r["repo"] for r in recs})
    folds = [repos[i::4] for i in range(4)]
    res = {False: [], True: []}
    for extra in (False, True):
        for fold in folds:
            tr = [r for r in recs if r["repo"] not in fold]; te = [r for r in recs if r["repo"] in fold]
            mf, mg = train(tr, "file", extra), train(tr, "function", extra)
            for r in te:
                fx, gx = mats([r], "file", extra)[0][0], mats([r], "function", extra)[0][0]
                gs = mg.predict(gx) if len(gx) else np.zeros(0)
                fs = mf.predict(fx) if len(fx) else np.zeros(0)
                fs = with_function_evidence(r["files"], fs, r["functions"], gs, FUNCTION_EVIDENCE)
                res[extra].append(instance_metrics(r["gold_files"], r["gold_functions"],
                    order(r["files"], fs, r["fusion_files"])[:50], order(r["functions"], gs, r["fusion_functions"])[:50]))
    for extra, ms in res.items():
        print("assoc" if extra else "base ", " ".join(f"{100*np.mean([m[k] for m in ms if m[k] is not None]):5.1f}" for k in KEYS))
    for k in KEYS:
        b = [m[k] for m in res[False]]; a = [m[k] for m in res[True]]
        print(k, "better", sum(1 for x, y in zip(b, a) if x is not None and y > x), "worse", sum(1 for x, y in zip(b, a) if x is not None and y < x))


if __name__ == "__main__":
    main()
