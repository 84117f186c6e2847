"""PageRank over the reference graph: a structural prior for search and the ranked repository map."""

from __future__ import annotations

from array import array
from collections import defaultdict, deque
from itertools import islice
from typing import NamedTuple

import numpy as np

from nsccn.serving.escape import one_line
from nsccn.reading.testpaths import is_test_path
from nsccn.store import Store
from nsccn.tokens import count_tokens

# Edges that say "this matters to that", weighted: a definition many things call or extend ranks high.
RANK_RELATIONS = {"CALLS": 1.0, "INHERITS": 2.0, "IMPORTS": 0.5, "PROPAGATES_ERROR": 0.5}
DAMPING = 0.85
ITERATIONS = 40
BLOCK_ROWS = 65536  # rows of edges read, and of ranks written, at a time


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
    c = store.conn
    # Rows go straight into flat arrays of 8-byte numbers and are mapped with numpy: a dict or a
    # tuple per entity or edge made the writer's peak (~90 MB more for a 100k-file tree).
    rowids = _numbers(c.execute("SELECT rowid FROM entities ORDER BY rowid"), 1, "q")[:, 0]
    # Edges name their ends by symbols.id: each entity's mapped once here, not joined per edge.
    pairs = _numbers(c.execute("SELECT sy.id, e.rowid FROM entities e JOIN symbols sy ON sy.name = e.id"), 2, "q")
    node = np.full(int(pairs[:, 0].max()) + 2 if len(pairs) else 1, -1, dtype=np.int64)  # symbol id -> 0..n-1
    node[pairs[:, 0]] = np.searchsorted(rowids, pairs[:, 1])
    del pairs
    rels = ",".join(f"'{r}'" for r in RANK_RELATIONS)
    weight = {sid: RANK_RELATIONS[name] for sid, name in c.execute(f"SELECT id, name FROM symbols WHERE name IN ({rels})")}
    # In the order of the index edges_source (ties by the primary key): PageRank's float sums follow it.
    # The weight is the relation's times the confidence, multiplied by SQLite as Python would.
    scaled = " ".join(f"WHEN {sid} THEN {w!r}" for sid, w in weight.items())
    q = (f"SELECT source, target, confidence * CASE relation {scaled} END FROM edges"
         f" WHERE relation IN ({','.join(map(str, weight))}) ORDER BY source, relation, ref, n")
    rows = c.execute(q) if weight else iter(())
    last = len(node) - 1  # ids past every entity's symbol map to that last, empty slot
    kept: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    while len(block := _numbers(islice(rows, BLOCK_ROWS), 3, "d")):  # a block at a time: only kept edges stay
        src = node[np.minimum(block[:, 0].astype(np.int64), last)]
        dst = node[np.minimum(block[:, 1].astype(np.int64), last)]
        keep = (src >= 0) & (dst >= 0) & (src != dst)
        kept.append((src[keep], dst[keep], block[keep, 2]))
    if not kept:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), len(rowids), rowids
    src, dst, w = (np.concatenate(part) for part in zip(*kept))
    return src, dst, w, len(rowids), rowids


def _numbers(rows, width: int, code: str) -> np.ndarray:
    """Rows of `width` numbers -> an (n, width) array (`q` int64, `d` float64, exact for ids
    below 2**53), read into one flat buffer: no Python object kept per row."""
    flat = array(code)
    deque(map(flat.extend, rows), maxlen=0)
    return np.frombuffer(flat, dtype=np.int64 if code == "q" else np.float64).reshape(-1, width)


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
    return write_ranks(store, rowids, pagerank(src, dst, w, n) * n)


def ranks_of(store: Store) -> tuple[np.ndarray, np.ndarray]:
    """(entity rowids, their ranks) read and computed afresh (no cache): on a read connection of
    its own, a thread computes them while the writer goes on committing."""
    src, dst, w, n, rowids = _read_graph(store)
    return rowids, pagerank(src, dst, w, n) * n


def write_ranks(store: Store, rowids: np.ndarray, scaled: np.ndarray) -> int:
    """Replace the ranks table with these (1.0 = average) in one transaction."""
    n = len(rowids)
    with store.conn:
        store.conn.execute("DELETE FROM ranks")
        for i in range(0, n, BLOCK_ROWS):  # a slice at a time: not two Python lists of every entity
            rows = zip(rowids[i : i + BLOCK_ROWS].tolist(), scaled[i : i + BLOCK_ROWS].tolist())
            store.conn.executemany("INSERT INTO ranks VALUES(?, ?)", rows)
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
    focus_paths = {r[0] for item in focus for r in store.conn.execute(
        "SELECT path FROM entities WHERE id=? OR path=? LIMIT 1", (item, item))}
    rows = store.conn.execute(
        "SELECT rowid, id, kind, path, signature, start_line, parent FROM entities WHERE kind != 'module'"
    ).fetchall()
    per_file: dict[str, list[_Def]] = defaultdict(list)
    file_score: dict[str, float] = defaultdict(float)
    for rid, eid, kind, path, sig, line, parent in rows:
        rank = ranks.get(rid, 0.0)
        per_file[path].append(_Def(eid, rank, line, sig, parent))
        file_score[path] += rank
    # Focused files first, then library code, then tests, docs and examples; each by rank.
    order = sorted(file_score, key=lambda p: (p not in focus_paths, is_test_path(p), -file_score[p], p))
    # Files read as text (no language we parse: AUTHORS.rst, .github/*.md) are listed by name after
    # all the code, and only when all of it was shown in full: they never take a code file's room.
    text_files = sorted(p for (p,) in store.conn.execute("SELECT path FROM files WHERE language = 'text'")
                        if p not in file_score)
    best = None
    for cap in PER_FILE_CAPS:  # more definitions per file while every file fits and room is left
        blocks, omitted = _fill(order, per_file, max_tokens, cap)
        best = blocks
        if len(blocks) < len(order) or not omitted:
            break
    if text_files and len(best) == len(order) and not omitted:
        room = max_tokens - count_tokens("".join(block for _, block, _ in best))
        best = best + _fill(sorted(text_files, key=lambda p: (p not in focus_paths, is_test_path(p), p)),
                            per_file, room, 1)[0]
    order = order + text_files
    text = "".join(block for _, block, _ in best)
    while best and count_tokens(text) > max_tokens:  # blocks counted apart can merge a token or two
        best.pop()
        text = "".join(block for _, block, _ in best)
    shown = len(best)
    truncated = shown < len(order) or any(n_shown < len(per_file[p]) for p, _, n_shown in best)
    return {
        "map": text,
        "tokens": count_tokens(text),
        "files_shown": shown,
        "files_total": len(order),
        "truncated": truncated,
        "hint": "raise max_tokens or pass focus=[ids or paths] to see other parts" if truncated else "",
    }


PER_FILE_CAPS = (8, 16, 32, 10**9)  # definitions shown per file, tried in turn
MAX_MISSES = 40  # files in a row that do not fit even with one definition: the budget is spent


class _Def(NamedTuple):
    eid: str
    rank: float
    line: int
    sig: str
    parent: str | None


def _block(path: str, defs: list[_Def], k: int) -> tuple[str, int]:
    """A file's block with its `k` best definitions, each under the classes (and functions) that
    contain it, indented by nesting: a method never appears without its class. (text, definitions shown)"""
    by_id = {d.eid: d for d in defs}
    chosen: dict[str, _Def] = {}
    for d in sorted(defs, key=lambda d: (-d.rank, d.line))[:k]:
        while d is not None and d.eid not in chosen:
            chosen[d.eid] = d
            d = by_id.get(d.parent)
    lines = [f"{one_line(path)}:"]  # a file name with a newline must not print a line of its own
    for d in sorted(chosen.values(), key=lambda d: d.line):
        depth, up = 0, by_id.get(d.parent)
        while up is not None and depth < 20:
            depth, up = depth + 1, by_id.get(up.parent)
        lines.append("  " + "    " * depth + one_line(d.sig))
    return "\n".join(lines) + "\n", len(chosen)


def _fill(order: list[str], per_file: dict[str, list[_Def]], max_tokens: int, cap: int):
    """Blocks (path, text, definitions shown), best files first, as many as `max_tokens` holds:
    a file whose full block does not fit is shown with fewer definitions, and files after one
    that does not fit at all still get their turn. Also whether any definition was left out."""
    blocks, used, misses, omitted = [], 0, 0, False
    for path in order:
        defs = per_file[path]
        room = max_tokens - used
        text, n = _block(path, defs, 1)
        cost = count_tokens(text)
        if cost > room:
            misses += 1
            if misses >= MAX_MISSES:
                break
            continue
        misses = 0
        lo, hi = 1, min(cap, len(defs))  # the most definitions that fit: a binary search
        while lo < hi:
            mid = (lo + hi + 1) // 2
            t, m = _block(path, defs, mid)
            c = count_tokens(t)
            if c <= room:
                lo, text, n, cost = mid, t, m, c
            else:
                hi = mid - 1
        blocks.append((path, text, n))
        used += cost
        omitted = omitted or n < len(defs)
    return blocks, omitted
