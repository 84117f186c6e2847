"""Adapting the ranker to one repository (`nsccn train-ranker`): its own fix commits as queries.

Each recent commit whose message reads like a fix and that changed 1-5 indexed non-test files
becomes a query (its message) with the files it changed and the functions its hunks name as the
answer. Features are computed against the current index, with only older commits as history
evidence. New trees are boosted on top of the base model (its scores are the starting point), so
the repository's data adds to what the shipped data taught instead of replacing it.

Caveat, said in the command's output: the index holds the code after these fixes, not before.
"""

from __future__ import annotations

import time

from nsccn.model import split_entity_id
from nsccn.ranking import Ranker, Trees, featurize
from nsccn.ranking.features import FILE_FEATURES, FUNCTION_FEATURES, candidates
from nsccn.ranking.train import PARAMS, training_matrix
from nsccn.reading.testpaths import is_test_path
from nsccn.store import Store

MAX_FILES = 5


def own_history_records(store: Store, commits: int = 300, before: int | None = None,
                        progress=None) -> list[dict]:
    """Training records from the index's own history: the newest `commits` usable fix commits
    (older than `before`, a commit time, when given)."""
    c = store.conn
    indexed = set(store.file_paths())
    cutoff = (1 << 62) if before is None else before
    rows = c.execute(
        "SELECT rowid, sha, time, message FROM commits WHERE is_fix = 1 AND time < ? ORDER BY time DESC, rowid DESC",
        (cutoff,)).fetchall()
    picked = []
    for rowid, sha, ctime, message in rows:
        if len(picked) >= commits:
            break
        changes: dict[str, set[str]] = {}
        for path, name in c.execute("SELECT path, name FROM commit_changes WHERE commit_id=?", (rowid,)):
            changes.setdefault(path, set())
            if name:
                changes[path].add(name)
        source = {p: n for p, n in changes.items() if p in indexed and not is_test_path(p)}
        if not 1 <= len(source) <= MAX_FILES or not any(source.values()):
            continue
        gold_fns = []
        for path, names in source.items():
            for eid, qual in c.execute(
                "SELECT id, qualname FROM entities WHERE path=? AND kind IN ('func','method','class')", (path,)
            ):
                if qual.split(".")[-1] in names and eid not in gold_fns:
                    gold_fns.append(eid)
        if gold_fns:
            picked.append((sha, ctime, message, sorted(source), gold_fns))
    records = []
    for i, (sha, ctime, message, files, gold_fns) in enumerate(picked, start=1):
        fusion, vector = featurize(store, message, use_vectors=False)
        cands = candidates(store, message, fusion, vector, history_before=ctime)
        gold = set(gold_fns)
        records.append({
            "instance_id": sha, "repo": "own", "gold_files": files,
            "gold_functions": [f"{split_entity_id(g)[1]}:{split_entity_id(g)[2]}" for g in gold_fns],
            "files": cands.files, "file_rows": cands.file_rows, "file_labels": [int(p in files) for p in cands.files],
            "functions": cands.functions, "function_rows": cands.function_rows,
            "function_labels": [int(f in gold) for f in cands.functions],
            "fusion_files": fusion.files[:50], "fusion_functions": fusion.functions[:50],
        })
        if progress:
            progress(i, len(picked))
    return records


def _boost(base: Trees, records: list[dict], level: str, names: list[str], rounds: int, seed: int) -> Trees:
    import lightgbm as lgb

    x, y, groups, _ = training_matrix(records, level, names, frozenset())
    data = lgb.Dataset(x, y, group=groups, init_score=base.predict(x), feature_name=names)
    params = dict(PARAMS, seed=seed, bagging_seed=seed, feature_fraction_seed=seed, data_random_seed=seed,
                  learning_rate=0.03)
    booster = lgb.train(params, data, num_boost_round=rounds)
    return base.beside(Trees.from_lightgbm_dump(booster.dump_model()))


def adapt(base: Ranker, records: list[dict], rounds: int = 60, seed: int = 0) -> Ranker:
    """`base` with trees boosted on the repository's own records."""
    files = _boost(base.files, records, "file", FILE_FEATURES, rounds, seed)
    functions = _boost(base.functions, records, "function", FUNCTION_FEATURES, rounds, seed)
    info = {"base": base.source or "given model", "base_info": base.info, "own_queries": len(records),
            "rounds": rounds, "trained_at": time.strftime("%Y-%m-%d %H:%M:%S")}
    return Ranker(files, functions, info)
