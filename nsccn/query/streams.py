"""Retrieval streams: each reads the index for a query and returns a ranked list (entity rowids,
or file paths), best first, deep enough for fusion (`STREAM_DEPTH`): BM25 over entities and over
whole files, the exact stream (traceback frames, identifiers, paths the query names), the vector
stream, the graph stream (neighbours of the best hits), the structural prior (PageRank), and BM25
within given files. The fusion (`nsccn.query.fusion`) and the learned ranker's features
(`nsccn.ranking.features`) read the index through these functions only.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from nsccn.model import split_entity_id
from nsccn.query.query_analysis import MAX_PATH_CHARS, QueryAnalysis
from nsccn.store import EntityRow, Store

# FTS5 column weights: name, path, signature, docstring, body.
BM25_WEIGHTS = (6.0, 3.0, 3.0, 1.0, 1.0)
FILE_WEIGHTS = (3.0, 1.0)  # whole files: path, body
FILE_BM25_WEIGHTS = ", ".join(map(str, FILE_WEIGHTS))
STREAM_DEPTH = 200  # how deep each stream is read before fusion


@dataclass
class Hit:
    entity: EntityRow
    score: float
    streams: dict[str, int] = field(default_factory=dict)  # stream -> 1-based rank
    # what gave `score`: "fusion" (the fused streams), "model" (the learned ranker's raw score), or
    # "probability" (either, calibrated: nsccn.query.calibration)
    scored_by: str = "fusion"

    def as_dict(self) -> dict:
        d = self.entity.brief()
        d["score"] = round(self.score, 4)  # as MCP shows it
        d["matched_by"] = self.streams
        return d


# -- streams ----------------------------------------------------------------------------------


def any_of(terms: list[str]) -> str:
    """An FTS5 query matching any of the terms (each quoted: terms are identifiers, never syntax)."""
    return " OR ".join(f'"{t}"' for t in terms)


def bm25_stream(store: Store, terms: list[str], limit: int = STREAM_DEPTH) -> list[int]:
    if not terms:
        return []
    found = store.bm25_matches("entities_fts", terms)
    if found is not None:  # FTS5's own scores and order, from the postings (nsccn.store.bm25)
        return found.rowids[found.order(found.scores(BM25_WEIGHTS))[:limit]].tolist()
    match = any_of(terms)
    q = (
        "SELECT rowid FROM entities_fts WHERE entities_fts MATCH ? "
        f"ORDER BY bm25(entities_fts, {', '.join(map(str, BM25_WEIGHTS))}) LIMIT ?"
    )
    return [r for (r,) in store.conn.execute(q, (match, limit))]


def file_bm25(store: Store, terms: list[str], limit: int = STREAM_DEPTH, code_only: bool = False) -> list[str]:
    """Files ranked by BM25 over their whole text (path weighted higher); `code_only` leaves out
    files read as text (docs, data: not where a fix goes). Text files have their own full-text
    table, so they never move the scores of code files; both lists merge by score."""
    if not terms:
        return []
    rows = _file_bm25_rows(store, "files_fts", terms, limit)
    if not code_only:
        rows += _file_bm25_rows(store, "text_fts", terms, limit)
        rows.sort(key=lambda r: r[1])
    return [p for p, _ in rows[:limit]]


def _file_bm25_rows(store: Store, table: str, terms: list[str], limit: int) -> list[tuple[str, float]]:
    """(path, bm25) of a whole-file table's best `limit` files, best first."""
    found = store.bm25_matches(table, terms)
    if found is None:
        q = (f"SELECT i.path, bm25({table}, {FILE_BM25_WEIGHTS}) FROM {table} f JOIN files i ON i.id = f.rowid "
             f"WHERE {table} MATCH ? ORDER BY bm25({table}, {FILE_BM25_WEIGHTS}) LIMIT ?")
        return store.conn.execute(q, (any_of(terms), limit)).fetchall()
    scores = found.scores(FILE_WEIGHTS)
    best = found.order(scores)[:limit]
    ids = found.rowids[best].tolist()
    paths = dict(store.conn.execute(f"SELECT id, path FROM files WHERE id IN ({','.join('?' * len(ids))})", ids))
    return [(paths[i], s) for i, s in zip(ids, scores[best].tolist()) if i in paths]


def exact_stream(store: Store, analysis: QueryAnalysis, weights: dict[int, float] | None = None) -> list[int]:
    """Traceback frames (innermost first), then definitions named exactly as an identifier of
    the query, rarest names first, then entities of files named in the query.

    A name defined in n places is weaker evidence for each of them: into `weights` (when given)
    goes 1/sqrt(n) per definition, so 15 same-named methods don't outrank everything else."""
    ranked: list[int] = []
    seen: set[int] = set()

    def add(rows, weight: float = 1.0):
        for (rid,) in rows:
            if rid not in seen:
                seen.add(rid)
                ranked.append(rid)
                if weights is not None:
                    weights[rid] = weight

    c = store.conn
    for path, line, func in reversed(analysis.frames):
        norm = path.replace("\\", "/")
        for cand in indexed_suffix_matches(store, norm):
            if func:
                add(c.execute("SELECT rowid FROM entities WHERE path=? AND name=?", (cand, func)))
            else:  # the trace names a line only (PHP, a Rust panic, an anonymous JS function)
                add(entity_at_line(store, cand, line))
    by_specificity = []
    for ident in analysis.identifiers:
        parts = ident.split(".")
        name = parts[-1]
        rows = c.execute(
            "SELECT rowid, qualname FROM entities WHERE name=? AND kind != 'module'", (name,)
        ).fetchall()
        if not rows and len(parts) > 1:
            continue
        if len(parts) > 1:  # `Class.method` or `module.func`: prefer qualname suffix matches
            tail = ".".join(parts[-2:])
            exact = [r for r in rows if r[1].endswith(tail)]
            rows = exact or rows
        if 0 < len(rows) <= 20:
            by_specificity.append((len(rows), [(r[0],) for r in rows]))
    for n, rows in sorted(by_specificity, key=lambda x: x[0]):
        add(rows, 1.0 / n**0.5)
    for path in analysis.paths:
        cands = indexed_suffix_matches(store, path)
        if "/" not in path and len(cands) > 1:
            continue  # "utils.py" alone could be any of them
        for cand in cands:
            add(c.execute("SELECT rowid FROM entities WHERE path=? AND kind='module'", (cand,)))
    return ranked


def entity_at_line(store: Store, path: str, line: int) -> list[tuple[int]]:
    """[(rowid,)] of the innermost definition of `path` around `line`, else of the file's module."""
    rows = store.conn.execute(
        "SELECT rowid FROM entities WHERE path=? AND kind != 'module' AND start_line <= ? AND end_line >= ? "
        "ORDER BY start_line DESC, end_line ASC LIMIT 1", (path, line, line)).fetchall()
    return rows or store.conn.execute("SELECT rowid FROM entities WHERE path=? AND kind='module'", (path,)).fetchall()


def indexed_suffix_matches(store: Store, path: str, limit: int = 5) -> list[str]:
    """Indexed files named by the longest suffix of `path` that names any (whole components, case
    ignored): "/usr/lib/.../requests/models.py" -> "requests/models.py". Linear in the path: only
    files of the same name are compared, component by component, from the end."""
    parts = path.lstrip("./").lower().split("/")
    if len(path) > MAX_PATH_CHARS or not parts[-1]:
        return []
    best, found = 0, []
    for cand in store.files_by_name().get(parts[-1], ()):
        cparts = cand.lower().split("/")
        common = 0
        for x, y in zip(reversed(parts), reversed(cparts)):
            if x != y:
                break
            common += 1
        if common > best:
            best, found = common, [cand]
        elif common == best:
            found.append(cand)
    return found[:limit]


def vector_stream(store: Store, query: str, limit: int = STREAM_DEPTH, embedder=None,
                  skip_path=None, names: bool = True) -> list[int]:
    """Nearest entities by embedding; empty when the index has no vectors yet (`skip_path`, `names`:
    `semantic.nearest_rowids`)."""
    from nsccn.vectors import semantic  # heavy imports (onnxruntime) only when vectors are asked for

    return semantic.nearest_rowids(store, query, limit, embedder=embedder, skip_path=skip_path, names=names)



def graph_stream(store: Store, scores: dict[int, float], top: int = 20, keep: int = 10) -> list[int]:
    """Neighbours of the best hits (callers, callees, container, members), ranked by the
    scores of the hits that reach them; a hub's neighbours each get a thinner share.
    The first `keep` hits are left out: the graph finds what the query does not name, it does
    not reorder what the query matched well."""
    best = sorted(scores.items(), key=lambda x: -x[1])[:top]
    settled = {rid for rid, _ in best[:keep]}
    if not best:
        return []
    rows = store.entity_at_rowids([rid for rid, _ in best])
    gathered: dict[int, float] = defaultdict(float)
    c = store.conn
    for rid, score in best:
        row = rows.get(rid)
        if row is None:
            continue
        neigh = c.execute(
            "SELECT e.rowid, ed.confidence FROM edges ed JOIN symbols t ON t.id = ed.target "
            "JOIN entities e ON e.id = t.name WHERE ed.source=(SELECT id FROM symbols WHERE name=?) "
            "AND ed.relation IN (SELECT id FROM symbols WHERE name IN ('CALLS', 'CONTAINS', 'INHERITS')) "
            "UNION ALL SELECT e.rowid, ed.confidence FROM edges ed JOIN symbols s ON s.id = ed.source "
            "JOIN entities e ON e.id = s.name WHERE ed.target=(SELECT id FROM symbols WHERE name=?) "
            "AND ed.relation IN (SELECT id FROM symbols WHERE name IN ('CALLS', 'CONTAINS'))",
            (row.id, row.id),
        ).fetchall()
        share = score / max(3, len(neigh)) ** 0.5
        for nrid, conf in neigh:
            gathered[nrid] += share * conf
    return sorted((r for r in gathered if r not in settled), key=lambda r: -gathered[r])[:STREAM_DEPTH]


def prior_stream(store: Store, candidates: list[int]) -> list[int]:
    """The candidates ordered by PageRank over the reference graph: central code first."""
    from nsccn.indexing.repomap import entity_ranks

    ranks = entity_ranks(store)
    if not ranks:
        return []
    return sorted(candidates, key=lambda r: -ranks.get(r, 0.0))


def outermost_functions(store: Store, entity_ids: list[str]) -> dict[str, str]:
    """entity id -> the outermost function or method that encloses it, itself when none does.

    A helper nested in a function is part of that function: an edit there is an edit of the
    enclosing function (and that is what a fix "touches"). Methods stay methods: a class is
    not a function."""
    wanted: dict[tuple[str, str], None] = {}
    parsed = {}
    for eid in entity_ids:
        _kind, path, qual = split_entity_id(eid)
        parts = qual.split(".")
        parsed[eid] = (path, parts)
        for n in range(1, len(parts)):
            wanted[(path, ".".join(parts[:n]))] = None
    ids: dict[tuple[str, str], str] = {}  # (path, qualname) of a function or method -> its id
    keys = list(wanted)
    for i in range(0, len(keys), 400):
        chunk = keys[i : i + 400]
        cond = " OR ".join("(path=? AND qualname=?)" for _ in chunk)
        rows = store.conn.execute(
            f"SELECT id, path, qualname FROM entities WHERE kind IN ('func', 'method') AND ({cond})",
            [x for key in chunk for x in key],
        )
        for eid, path, qual in rows:
            ids[(path, qual)] = eid
    out = {}
    for eid, (path, parts) in parsed.items():
        out[eid] = eid
        for n in range(1, len(parts)):
            key = (path, ".".join(parts[:n]))
            if key in ids:
                out[eid] = ids[key]
                break
    return out


def in_file_bm25(store: Store, terms: list[str], paths: list[str]) -> dict[str, list[str]]:
    """path -> its functions, methods and classes matching the query, best BM25 first."""
    if not terms or not paths:
        return {}
    found = store.bm25_matches("entities_fts", terms)
    if found is not None:
        return _in_file_from(store, found, paths)
    match = any_of(terms)
    q = (
        "SELECT e.id, e.path FROM entities_fts JOIN entities e ON e.rowid = entities_fts.rowid "
        f"WHERE entities_fts MATCH ? AND e.path IN ({','.join('?' * len(paths))}) "
        f"AND e.kind IN ('func', 'method', 'class') "
        f"ORDER BY bm25(entities_fts, {', '.join(map(str, BM25_WEIGHTS))})"
    )
    out: dict[str, list[str]] = defaultdict(list)
    for eid, path in store.conn.execute(q, (match, *paths)):
        out[path].append(eid)
    return out


def _in_file_from(store: Store, found, paths: list[str]) -> dict[str, list[str]]:
    """`in_file_bm25` from rows already matched: the files' entities, scored, best first."""
    listed = store.conn.execute(
        f"SELECT rowid, id, path FROM entities WHERE path IN ({','.join('?' * len(paths))}) "
        "AND kind IN ('func', 'method', 'class')", paths).fetchall()
    scores = found.scores_of([r[0] for r in listed], BM25_WEIGHTS)
    rows = sorted((scores[rowid], rowid, eid, path) for rowid, eid, path in listed if rowid in scores)
    out: dict[str, list[str]] = defaultdict(list)
    for _, _, eid, path in rows:
        out[path].append(eid)
    return out



# -- per-candidate scores (what the learned ranker's features read) ---------------------------


def one_hot(weights: tuple[float, ...]) -> list[tuple[float, ...]]:
    """One weight vector per column: that column's weight, 0 elsewhere (BM25 of one column)."""
    return [tuple(w if i == j else 0.0 for i, w in enumerate(weights)) for j in range(len(weights))]


def file_bm25_scores(store: Store, terms: list[str], path_of: dict[int, str], found) -> dict[str, float]:
    """path -> whole-file BM25 (higher is better) of those files (`path_of`: file id -> path) that
    match any of `terms`. `found`: the terms' matches already read (`Store.bm25_matches`), None
    where FTS5 must answer."""
    if found is not None:  # FTS5's scores from the postings (nsccn.store.bm25): the same numbers
        return {path_of[fid]: -s for fid, s in found.scores_of(list(path_of), FILE_WEIGHTS).items()}
    if not terms:
        return {}
    paths = list(path_of.values())
    return dict(store.conn.execute(
        f"SELECT i.path, -bm25(files_fts, {FILE_BM25_WEIGHTS}) FROM files_fts f JOIN files i ON i.id = f.rowid "
        f"WHERE files_fts MATCH ? AND i.path IN ({','.join('?' * len(paths))})", (any_of(terms), *paths)))


def column_bm25(store: Store, terms: list[str], rowids: list[int], found) -> dict[int, tuple[float, ...]]:
    """entity rowid -> its BM25 (higher is better) in each column alone (name, path, signature,
    docstring, body), for those of `rowids` that match any of `terms`. `found`: as in
    `file_bm25_scores`."""
    out: dict[int, tuple[float, ...]] = {}
    if found is not None:
        per_column = [found.scores_of(rowids, w) for w in one_hot(BM25_WEIGHTS)]
        for rid in per_column[0]:
            out[rid] = tuple(-s[rid] for s in per_column)
    elif terms and rowids:
        cols = [f"-bm25(entities_fts, {', '.join(map(str, w))})" for w in one_hot(BM25_WEIGHTS)]
        for rid, *vals in store.conn.execute(
            f"SELECT rowid, {', '.join(cols)} FROM entities_fts WHERE entities_fts MATCH ? "
            # `+rowid`: filter the one full-text scan; a bare `rowid IN` makes FTS5 run the whole
            # query once per rowid (9.4 s instead of 0.09 s for a sympy report, same values).
            f"AND +rowid IN ({','.join('?' * len(rowids))})", (any_of(terms), *rowids)
        ):
            out[rid] = tuple(vals)
    return out
