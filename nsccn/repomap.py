"""PageRank over the reference graph: a structural prior for search and the ranked repository map."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from nsccn.store import Store
from nsccn.tokens import count_tokens

# Edges that say "this matters to that", weighted: a definition many things call or extend ranks high.
RANK_RELATIONS = {"CALLS": 1.0, "INHERITS": 2.0, "IMPORTS": 0.5, "PROPAGATES_ERROR": 0.5}
DAMPING = 0.85
ITERATIONS = 40


_graph_cache: dict[tuple[str, str], tuple] = {}


def _graph(store: Store) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, np.ndarray]:
    """(sources, targets, weights, n, rowids) with entity rowids mapped to 0..n-1; cached per
    database and index run (readers see one index run at a time)."""
    key = (str(store.path), store.get_meta("last_indexed", "") or "")
    graph = _graph_cache.get(key)  # read once: another thread's clear() must not lose it
    if graph is None or store.readonly is False:
        graph = _read_graph(store)
        _graph_cache.clear()
        _graph_cache[key] = graph
    return graph


def _read_graph(store: Store) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, np.ndarray]:
    rowids = np.array([r for (r,) in store.conn.execute("SELECT rowid FROM entities ORDER BY rowid")], dtype=np.int64)
    index = {int(r): i for i, r in enumerate(rowids)}
    src, dst, w = [], [], []
    rels = ",".join(f"'{r}'" for r in RANK_RELATIONS)
    q = (
        "SELECT s.rowid, t.rowid, ed.relation, ed.confidence FROM edges ed "
        "JOIN entities s ON s.id = ed.source JOIN entities t ON t.id = ed.target "
        f"WHERE ed.relation IN ({rels})"
    )
    for s, t, rel, conf in store.conn.execute(q):
        if s != t:
            src.append(index[s])
            dst.append(index[t])
            w.append(RANK_RELATIONS[rel] * conf)
    return np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64), np.array(w), len(rowids), rowids


def pagerank(src, dst, w, n: int, personalization: np.ndarray | None = None) -> np.ndarray:
    if n == 0:
        return np.zeros(0)
    p = personalization if personalization is not None else np.full(n, 1.0 / n)
    p = p / p.sum()
    out_w = np.bincount(src, weights=w, minlength=n)
    norm = np.where(out_w[src] > 0, w / np.maximum(out_w[src], 1e-12), 0.0)
    r = p.copy()
    dangling = out_w == 0
    for _ in range(ITERATIONS):
        spread = np.bincount(dst, weights=r[src] * norm, minlength=n)
        r = (1 - DAMPING) * p + DAMPING * (spread + r[dangling].sum() * p)
    return r


def compute_ranks(store: Store) -> int:
    """Recompute and store every entity's rank; returns the number of entities ranked."""
    src, dst, w, n, rowids = _graph(store)
    r = pagerank(src, dst, w, n)
    with store.conn:
        store.conn.execute("DELETE FROM ranks")
        store.conn.executemany("INSERT INTO ranks VALUES(?, ?)", zip(rowids.tolist(), (r * n).tolist()))
    return n


_rank_cache: dict[tuple[str, str], dict[int, float]] = {}


def entity_ranks(store: Store) -> dict[int, float]:
    """rowid -> rank (1.0 = average), cached per database and index run."""
    key = (str(store.path), store.get_meta("last_indexed", "") or "")
    ranks = _rank_cache.get(key)  # read once: concurrent MCP calls share the cache
    if ranks is None:
        ranks = dict(store.conn.execute("SELECT entity_rowid, rank FROM ranks"))
        _rank_cache.clear()
        _rank_cache[key] = ranks
    return ranks


def repo_map(store: Store, max_tokens: int = 1024, focus: list[str] | None = None) -> dict:
    """Files and their most important definitions' signatures, best first, within `max_tokens`.

    `focus` (entity ids or file paths) personalizes the ranking toward those parts of the graph.
    """
    if max_tokens < 64:
        raise ValueError("max_tokens must be at least 64")
    focus = focus or []
    if focus:
        src, dst, w, n, rowids = _graph(store)
        index = {int(r): i for i, r in enumerate(rowids)}
        p = np.full(n, 1e-6)
        matched = 0
        for item in focus:
            rows = store.conn.execute("SELECT rowid FROM entities WHERE id=? OR path=?", (item, item)).fetchall()
            for (rid,) in rows:
                p[index[rid]] += 1.0
                matched += 1
        if not matched:
            raise ValueError(f"none of the focus items is an indexed entity id or file path: {focus}")
        r = pagerank(src, dst, w, n, p) * n
        ranks = {int(rowids[i]): float(r[i]) for i in range(n)}
    else:
        ranks = entity_ranks(store)
    rows = store.conn.execute(
        "SELECT rowid, id, kind, path, signature, start_line FROM entities WHERE kind != 'module'"
    ).fetchall()
    per_file: dict[str, list[tuple[float, int, str]]] = defaultdict(list)
    file_score: dict[str, float] = defaultdict(float)
    for rid, eid, kind, path, sig, line in rows:
        rank = ranks.get(rid, 0.0)
        per_file[path].append((rank, line, sig if kind != "method" else "    " + sig))
        file_score[path] += rank
    lines: list[str] = []
    used = 0
    files_shown = 0
    truncated = False
    for path in sorted(file_score, key=lambda p: -file_score[p]):
        best = sorted(per_file[path], key=lambda x: -x[0])[:8]
        block = [f"{path}:"] + [f"  {sig}" for _, _, sig in sorted(best, key=lambda x: x[1])]
        cost = count_tokens("\n".join(block) + "\n")
        if used + cost > max_tokens:
            truncated = True
            if files_shown:
                break
            continue
        lines.extend(block)
        used += cost
        files_shown += 1
    return {
        "map": "\n".join(lines) + ("\n" if lines else ""),
        "tokens": used,
        "files_shown": files_shown,
        "files_total": len(file_score),
        "truncated": truncated,
        "hint": "raise max_tokens or pass focus=[ids or paths] to see other parts" if truncated else "",
    }
