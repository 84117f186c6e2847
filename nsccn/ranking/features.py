"""Candidates and their features for the learned ranker.

For a query, the candidates are what the hand-tuned fusion (`fusion.fusion_localize`) ranks near
the top, plus every file and function the query names exactly; each is described by features:
every stream's rank, how the query mentions it (named, called, backticked, in a traceback frame,
its path or dotted module), overlap of the query's terms with its name and path, per-column BM25
(name, path, signature, docstring, body), what each part of the query says (BM25 relative to the
best match, the share of the query's idf a candidate holds, the same for the title alone and for
the query's code alone: the terms of the identifiers it writes), size, depth, kind, test-ness,
graph degree, PageRank, closeness to what the query names, raise sites of the errors the query
names (PROPAGATES_ERROR edges), and the repository's history (`nsccn.reading.history`: past changes,
fixes, and past commit messages like the query and like its title).

No feature reads a language's syntax: they come from the index's tables and the query's text, so
one ranker serves every language the index holds. What differs between languages is data: how a
report writes a scoped name (`_SCOPE_SEPARATORS`, by extension), which files are tests
(`nsccn.reading.testpaths`). On Python every value is what the shipped model was trained on
(`benchmarks/features_identity.py` checks it bit for bit). Missing evidence is NaN (an index without
vectors or history), never a made-up zero.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from nsccn.reading import history
from nsccn.query.fusion import Fusion
from nsccn.model import split_entity_id
from nsccn.query.query_analysis import QueryAnalysis, analyze_query
from nsccn.store import Store
from nsccn.query.streams import (BM25_WEIGHTS, FILE_WEIGHTS, column_bm25, file_bm25_scores, indexed_suffix_matches,
                           outermost_functions)
from nsccn.reading.testpaths import is_test_path
from nsccn.text import split_identifier
from nsccn.vectors.commit_vectors import semantic_evidence

FEATURE_VERSION = 4  # bump with any change to what a feature means; models record it
FILE_CANDIDATES = 60  # the fusion's best files re-ranked
FUNCTION_CANDIDATES = 120  # the fusion's best functions re-ranked
STREAMS = ("bm25", "vector", "exact", "graph", "prior")
NAN = float("nan")
ABSENT = 1000.0  # the rank of a candidate a stream did not return
VECTOR_CANDIDATES = 30  # the vector stream's best functions join the candidates
# The functions of the best few files can join the candidates (`expand`): a function the query's
# words never reach (the fix's second function, a helper) is often in the file it points at.
# Off: with 3 files, 120 functions each, every gold function is a candidate for 80.7% of dev
# and 76.5% of mined queries instead of 75.1 and 68.1, but the model ranks almost none of the
# newly reached ones into the top 10 (0 of 10 dev queries, 10 of 240 mined) and function@10 does
# not move (docs/learned-ranking.md, `benchmarks/train_ranker.py --grouped --expansions ...`). Kept for evidence
# that could rank them (vectors).
EXPAND_FILES = 0  # the fusion's best this-many files and whole-file BM25's best this-many
EXPAND_PER_FILE = 120  # at most this many of a file's functions, highest PageRank first
MAX_NAMED_WORDS = 2000  # a report's distinct words looked up as raised errors
LEXICAL_SIGNALS = frozenset({"bm25", "query_analysis", "graph", "prior"})  # the fusion the features read
# How a report writes `Cart.total` in each language besides the dotted form every language's
# qualname uses (by file extension; the dotted form alone for Python and anything unlisted).
_SCOPE_SEPARATORS = {
    **dict.fromkeys(("rs", "cpp", "cc", "cxx", "hpp", "hh", "hxx", "h", "cu"), ("::",)),
    "php": ("::", "->"), "rb": ("::", "#"), "java": ("#",), "kt": ("#",), "scala": ("#",),
}
_TESTY_QUERY = re.compile(r"\b(tests?|testing|unittest|fixture|conftest)\b", re.IGNORECASE)

QUERY_FEATURES = ["q_terms", "q_identifiers", "q_paths", "q_frames", "q_chars_log", "q_about_tests"]
FILE_FEATURES = QUERY_FEATURES + [
    "fusion_rank", "fusion_score_rel", "entity_rank", "file_bm25_rank", "file_bm25_score",
    *(f"best_{s}_rank" for s in STREAMS), "n_hits", "best_hit_rank",
    "path_mentioned", "basename_mentioned", "module_mentioned", "stem_in_terms", "path_parts_overlap",
    "frames_in_file", "innermost_frame", "idents_defined", "idents_defined_weighted",
    "n_entities_log", "lines_log", "depth", "is_test",
    "pagerank_max", "pagerank_sum_log",
    "hist_commits", "hist_fixes", "hist_age_days_log", "hist_similar",
    "file_bm25_rel", "file_coverage", "title_file_bm25_rel", "title_file_coverage", "title_file_rank",
    "code_file_bm25_rel", "code_file_coverage", "code_file_rank", "hist_title_similar", "raises_named",
    "hist_sem_max", "hist_sem_top3", "hist_sem_similar",
]
FUNCTION_FEATURES = QUERY_FEATURES + [
    "fusion_rank", "fusion_score_rel", *(f"{s}_rank" for s in STREAMS), "in_file_rank", "n_hits",
    "bm25_name", "bm25_path", "bm25_signature", "bm25_docstring", "bm25_body",
    "name_identifier", "qualname_in_query", "parent_mentioned", "name_called", "name_backticked", "name_in_frame",
    "name_word", "name_parts_overlap", "name_parts_hits", "qual_parts_overlap",
    "kind_method", "kind_class", "qual_depth", "lines_log", "same_name_defs_log",
    "calls_in_log", "calls_out_log", "pagerank", "near_named",
    "file_fusion_rank", "file_bm25_rank", "file_path_mentioned", "file_frames", "file_is_test",
    "file_n_entities_log", "file_depth", "file_fn_rank",
    "hist_fn_commits", "hist_fn_fixes", "hist_fn_similar", "hist_file_commits", "hist_file_fixes",
    "hist_file_age_days_log", "hist_file_similar",
    "bm25_rel", "coverage", "title_bm25_rel", "title_coverage", "title_rank", "title_name_hits", "name_in_title",
    "file_coverage", "title_file_bm25_rel",
    "code_bm25_rel", "code_coverage", "code_rank", "code_file_bm25_rel",
    "hist_fn_title_similar", "hist_file_title_similar", "raises_named", "file_raises_named",
    "hist_file_sem_max", "hist_file_sem_top3", "hist_file_sem_similar",
]
# Groups for ablations: removing a group sets its features to NaN at training and at query time.
GROUPS = {
    "history": [f for f in FILE_FEATURES + FUNCTION_FEATURES if f.startswith("hist_")],
    "vectors": ["best_vector_rank", "vector_rank"],
    "graph": ["best_graph_rank", "graph_rank", "best_prior_rank", "prior_rank", "pagerank_max", "pagerank_sum_log",
              "calls_in_log", "calls_out_log", "pagerank", "near_named"],
    "mentions": ["path_mentioned", "basename_mentioned", "module_mentioned", "frames_in_file", "innermost_frame",
                 "idents_defined", "idents_defined_weighted", "name_identifier", "qualname_in_query",
                 "parent_mentioned", "name_called", "name_backticked", "name_in_frame", "name_word",
                 "file_path_mentioned", "file_frames", "best_exact_rank", "exact_rank"],
    "file-level": ["file_fusion_rank", "file_bm25_rank", "file_path_mentioned", "file_frames", "file_is_test",
                   "file_n_entities_log", "file_depth", "file_fn_rank", "hist_file_commits", "hist_file_fixes",
                   "hist_file_age_days_log", "hist_file_similar"],
    # What each part of the query says: the title alone (a report's first line, a commit's
    # subject), and breadth (the share of the query's idf a candidate holds) beside BM25.
    "query-parts": ["file_bm25_rel", "file_coverage", "title_file_bm25_rel", "title_file_coverage", "title_file_rank",
                    "bm25_rel", "coverage", "title_bm25_rel", "title_coverage", "title_rank", "title_name_hits",
                    "name_in_title"],  # (file_coverage and title_file_bm25_rel: in both lists)
    # The query's code alone: the terms of the identifiers it writes (`parse_expr`, `Poly.sqf`),
    # without the prose around them.
    "code-part": ["code_file_bm25_rel", "code_file_coverage", "code_file_rank", "code_bm25_rel", "code_coverage",
                  "code_rank", "code_file_bm25_rel"],
    # Raise sites of an error the query names (PROPAGATES_ERROR edges whose target is a query word).
    "errors": ["raises_named", "file_raises_named"],
    # Similar past fixes by the title alone (also part of "history").
    "title-history": ["hist_title_similar", "hist_fn_title_similar", "hist_file_title_similar"],
    # Past commits whose messages mean what the query says (the static model's vectors of both;
    # also part of "history"): the best, the best three's mean, BugLocator's sum, per file.
    "semantic-history": ["hist_sem_max", "hist_sem_top3", "hist_sem_similar", "hist_file_sem_max",
                         "hist_file_sem_top3", "hist_file_sem_similar"],
}


@dataclass
class Candidates:
    """A query's candidates and their feature rows: the model's matrix (columns in FILE_FEATURES /
    FUNCTION_FEATURES order, each value placed there by its name: `row_of`), as training records
    store it."""

    files: list[str]
    file_rows: list[list[float]]
    functions: list[str]  # entity ids
    function_rows: list[list[float]]
    # The functions that joined as their file's (`expand`): the last len(expanded) of `functions`,
    # each with its place in its file's PageRank order (so a smaller cap is a subset).
    expanded: list[int] = field(default_factory=list)


def _log(x: float | None) -> float:
    return NAN if x is None else math.log1p(max(0.0, x))


def _rank_of(items: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for i, x in enumerate(items, start=1):
        out.setdefault(x, i)
    return out


def _stream_rank(best: dict, key: tuple[str, str], vector: list[int] | None) -> float:
    """A stream's best rank for a candidate; beyond the stream's depth a large rank, except for a
    stream that did not run (vectors without an index that has them): missing."""
    if key in best:
        return best[key]
    if key[1] == "vector" and vector is None:
        return NAN
    return ABSENT


def _scoped_forms(path: str, qual: str) -> list[str]:
    """`Cart.total` as the file's language writes it in a report: [`Cart::total`] for Rust."""
    seps = _SCOPE_SEPARATORS.get(path.rpartition(".")[2], ())
    return [qual.replace(".", sep) for sep in seps]


def _words(text: str) -> set[str]:
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))


def _query_features(query: str, fusion: Fusion) -> dict[str, float]:
    a = fusion.analysis
    return {"q_terms": len(a.terms), "q_identifiers": len(a.identifiers), "q_paths": len(a.paths),
            "q_frames": len(a.frames), "q_chars_log": math.log1p(len(query)),
            "q_about_tests": float(_TESTY_QUERY.search(query) is not None)}


def _raises_named(store: Store, words: set[str]) -> tuple[dict[str, float], dict[str, float]]:
    """Raise sites of the errors a query names: per entity id and per file, the sum over the query's
    words that some PROPAGATES_ERROR edge targets (an exception, an error value) of 1/sqrt(how many
    entities raise it), so `PolynomialError` weighs more than `ValueError`."""
    names = sorted(words)[:MAX_NAMED_WORDS]
    if not names:
        return {}, {}
    rows = store.conn.execute(
        "SELECT s.name, f.path, r.tail FROM refs r JOIN symbols s ON s.id = r.source JOIN files f ON f.id = r.file "
        f"WHERE r.tail IN (SELECT id FROM symbols WHERE name IN ({','.join('?' * len(names))})) "
        "AND r.relation = (SELECT id FROM symbols WHERE name = 'PROPAGATES_ERROR')", names).fetchall()
    raisers: dict[int, set[str]] = defaultdict(set)
    for source, _path, tail in rows:
        raisers[tail].add(source)
    by_entity: dict[str, float] = defaultdict(float)
    by_file: dict[str, float] = defaultdict(float)
    seen: set[tuple[str, int]] = set()
    for source, path, tail in rows:
        if (source, tail) in seen:
            continue
        seen.add((source, tail))
        w = 1.0 / math.sqrt(len(raisers[tail]))
        by_entity[source] += w
        by_file[path] += w
    return by_entity, by_file


def title_of(query: str) -> str:
    """A query's title: its first non-empty line (a report's title, a commit message's subject)."""
    for line in query.splitlines():
        if line.strip():
            return line
    return ""


def _lexical(found, weights: tuple[float, ...], rowids: list[int], ranked: bool = True) -> list[tuple[float, float, float]]:
    """Per rowid of a full-text table: (BM25 relative to the table's best match, the share of the
    query's idf the row holds, its rank among all matching rows). A row that does not match: 0, 0,
    ABSENT; all missing where there were no terms or FTS5 had to answer (`found` None).
    `ranked=False`: no rank (NaN), for a query whose ranking a stream feature has already."""
    if found is None:
        return [(NAN, NAN, NAN)] * len(rowids)
    if not len(found.rowids):
        return [(0.0, 0.0, ABSENT)] * len(rowids)
    scores = found.scores(weights)  # FTS5's sign: lower is better
    top = -float(scores.min()) or 1.0
    cover = found.idf_coverage()
    rank = np.full(len(scores), NAN)
    if ranked:  # sorting every matching row: only where the rank is a feature
        rank[found.order(scores)] = np.arange(1, len(scores) + 1)
    want = np.asarray(rowids, dtype=np.int64)
    at = np.minimum(np.searchsorted(found.rowids, want), len(found.rowids) - 1)
    hit = found.rowids[at] == want
    return [(-float(scores[i]) / top, float(cover[i]), float(rank[i])) if h else (0.0, 0.0, ABSENT)
            for i, h in zip(at.tolist(), hit.tolist())]


def _part_lexical(store: Store, table: str, terms: list[str], weights: tuple[float, ...],
                  rowids: list[int]) -> list[tuple[float, float, float]]:
    """`_lexical` for one part of the query (its title, its code): that part's own BM25 lookup."""
    if not rowids:
        return []
    found = store.bm25_matches(table, terms) if terms else None
    return _lexical(found, weights, rowids)


def file_functions(store: Store, paths: list[str], per_file: int) -> list[tuple[str, int]]:
    """What a function candidate can be (an outermost function or method, or a class) in each of
    `paths`, at most `per_file` each, highest PageRank first: (entity id, its place in that order)."""
    if not paths or per_file <= 0:
        return []
    rows = store.conn.execute(
        "SELECT e.id, e.path FROM entities e LEFT JOIN ranks r ON r.entity_rowid = e.rowid "
        f"WHERE e.path IN ({','.join('?' * len(paths))}) AND e.kind != 'module' "
        "ORDER BY e.path, coalesce(r.rank, 0) DESC, e.start_line, e.id", paths).fetchall()
    outer = outermost_functions(store, [eid for eid, _ in rows])
    out: list[tuple[str, int]] = []
    seen: set[str] = set()
    placed: dict[str, int] = defaultdict(int)
    for eid, path in rows:
        fid = outer[eid]
        if fid in seen or placed[path] >= per_file:
            continue
        seen.add(fid)
        out.append((fid, placed[path]))
        placed[path] += 1
    order_of = {p: i for i, p in enumerate(paths)}
    return sorted(out, key=lambda x: order_of[split_entity_id(x[0])[1]])  # stable: PageRank order within a file


def row_of(values: dict[str, float], names: list[str]) -> list[float]:
    """A feature row in the model's column order (`names`), from its values given by name. A name
    missing or unknown is refused: a row matched to its columns by position alone would feed the
    model a value under another feature's name without failing anything."""
    if len(values) != len(names) or values.keys() != set(names):
        missing, unknown = sorted(set(names) - values.keys()), sorted(values.keys() - set(names))
        raise ValueError(f"a feature row's names differ from the model's: missing {missing}, unknown {unknown}")
    return [values[name] for name in names]


@dataclass
class QueryFacts:
    """What the query says, read once for all its candidates."""

    query: str
    analysis: QueryAnalysis
    features: dict[str, float]  # QUERY_FEATURES
    words: set[str]  # every word-like token of the query
    term_set: set[str]
    ident_names: set[str]  # the last part of each identifier it writes
    title_terms: list[str]
    title_term_set: set[str]
    title_words: set[str]
    code_terms: list[str]  # the terms of its identifiers alone
    # What it names exactly, as indexed files: paths, the files and functions of its traceback frames.
    mentioned_paths: set[str]
    frame_files: dict[str, int]
    frame_funcs: set[tuple[str, str]]
    innermost: str | None


def query_facts(store: Store, query: str, fusion: Fusion) -> QueryFacts:
    """The query's own features, words and parts, and what it names exactly (indexed files)."""
    a = fusion.analysis
    title = title_of(query)
    title_terms = list(dict.fromkeys(analyze_query(title).terms)) if title else []
    mentioned_paths: set[str] = set()
    for p in a.paths:
        cands = indexed_suffix_matches(store, p)
        if "/" in p or len(cands) == 1:
            mentioned_paths.update(cands)
    frame_files: dict[str, int] = defaultdict(int)
    frame_funcs: set[tuple[str, str]] = set()
    innermost: str | None = None
    for path, _line, func in a.frames:
        for cand in indexed_suffix_matches(store, path.replace("\\", "/"))[:1]:
            frame_files[cand] += 1
            frame_funcs.add((cand, func))
            innermost = cand
    return QueryFacts(
        query, a, _query_features(query, fusion), _words(query), set(a.terms), {i.split(".")[-1] for i in a.identifiers},
        title_terms, set(title_terms), _words(title),
        list(dict.fromkeys(analyze_query(" ".join(a.identifiers)).terms)) if a.identifiers else [],
        mentioned_paths, frame_files, frame_funcs, innermost,
    )


@dataclass
class VectorRanks:
    """The vector stream's best rank per outermost function and per file."""

    functions: dict[str, int] = field(default_factory=dict)
    files: dict[str, int] = field(default_factory=dict)
    ordered: list[tuple[str, str]] = field(default_factory=list)  # (entity id, its outermost function), best first


def vector_ranks_of(store: Store, vector: list[int] | None) -> VectorRanks:
    """The vector stream (entity rowids, best first) as ranks of outermost functions and files."""
    out = VectorRanks()
    if not vector:
        return out
    vrows = store.entity_at_rowids(vector)
    vec_ids = [vrows[r].id for r in vector if r in vrows]
    vec_outer = outermost_functions(store, vec_ids)
    for i, eid in enumerate(vec_ids, start=1):
        fid = vec_outer[eid]
        out.functions.setdefault(fid, i)
        out.files.setdefault(split_entity_id(eid)[1], i)
        out.ordered.append((eid, fid))
    return out


def candidate_functions(store: Store, fusion: Fusion, vec: VectorRanks, expand: int,
                        per_file: int) -> tuple[list[str], dict[str, int]]:
    """The function candidates, in order: the fusion's best, the outermost functions of what the
    exact stream found, the vector stream's best, then (`expand`) the best files' functions.
    Also {expanded candidate: its place in its file's PageRank order}."""
    fn_ids = list(dict.fromkeys(fusion.functions[:FUNCTION_CANDIDATES]))
    listed = set(fn_ids)

    def add(fid: str) -> None:
        fn_ids.append(fid)
        listed.add(fid)

    for h in exact_hits(fusion):
        fid = fusion.outer.get(h.entity.id)
        if fid and fid not in listed and h.entity.kind != "module":
            add(fid)
    for i, (eid, fid) in enumerate(vec.ordered, start=1):
        if i <= VECTOR_CANDIDATES and not eid.startswith("module:") and fid not in listed:
            add(fid)
    expand_files = list(dict.fromkeys(fusion.files[:expand] + fusion.file_bm25[:expand])) if expand else []
    expanded: dict[str, int] = {}
    for fid, place in file_functions(store, expand_files, per_file):
        if fid not in listed and not fid.startswith("module:"):
            expanded[fid] = place
            add(fid)
    return fn_ids, expanded


def exact_hits(fusion: Fusion) -> list:
    """The fusion's hits the exact stream found (what the query names), best first."""
    return [h for h in fusion.hits if "exact" in h.streams]


def candidate_files(fusion: Fusion, q: QueryFacts, fn_ids: list[str]) -> list[str]:
    """The file candidates, in order: the fusion's best, whole-file BM25's best, the files the
    query names (paths, frames, exact hits), then the files of the function candidates."""
    file_list = list(dict.fromkeys(
        fusion.files[:FILE_CANDIDATES] + fusion.file_bm25[:20] + sorted(q.mentioned_paths) + sorted(q.frame_files)
        + [h.entity.path for h in exact_hits(fusion)]
    ))
    file_set = set(file_list)
    for fid in fn_ids:
        path = split_entity_id(fid)[1]
        if path not in file_set:
            file_set.add(path)
            file_list.append(path)
    return file_list


@dataclass
class Evidence:
    """Evidence both levels read: the repository's history and the raise sites of named errors."""

    history: history.HistoryEvidence
    title_similar: tuple[dict, dict]  # (per file, per (path, name)): past fixes like the title
    raises_fn: dict[str, float]
    raises_file: dict[str, float]
    semantic: dict[str, tuple[float, float, float]] | None = None  # per file: `history.semantic_fixes`

    def sem(self, path: str, i: int) -> float:
        """A semantic history value of a file: missing without commit vectors, or for a file no
        commit of the history changed."""
        if self.semantic is None or path not in self.semantic:
            return NAN
        return self.semantic[path][i]

    def hist(self, d: dict, key, log: bool = False) -> float:
        """A history count (log1p'd with `log`); missing without history."""
        if not self.history.present:
            return NAN
        v = d.get(key, 0)
        return math.log1p(v) if log else float(v)


def evidence_of(store: Store, query: str, fusion: Fusion, q: QueryFacts, file_list: list[str],
                history_before: int | None) -> Evidence:
    ev = history.evidence(store, fusion.terms, file_list, before=history_before)
    title_similar = history.similar_fixes(store, q.title_terms, file_list, history_before) if ev.present else ({}, {})
    semantic = semantic_evidence(store, query, file_list, history_before) if ev.present else None
    return Evidence(ev, title_similar, *_raises_named(store, q.words), semantic=semantic)


def file_features(store: Store, q: QueryFacts, fusion: Fusion, vector: list[int] | None, vec: VectorRanks,
                  file_list: list[str], evidence: Evidence) -> dict[str, dict[str, float]]:
    """path -> its FILE_FEATURES (less the query's own), by name."""
    c = store.conn
    ev = evidence.history
    hist = evidence.hist
    fusion_file_rank = _rank_of(fusion.files)
    entity_file_rank = _rank_of(fusion.entity_files)
    bm25_file_rank = _rank_of(fusion.file_bm25)
    top_file_score = max(fusion.file_scores.values(), default=0.0) or 1.0
    marks = ",".join("?" * len(file_list))
    file_info: dict[str, tuple[int, str]] = {
        p: (lines, module) for p, lines, module in
        c.execute(f"SELECT path, line_count, module FROM files WHERE path IN ({marks})", file_list)
    }
    n_entities: dict[str, int] = dict(c.execute(
        f"SELECT path, count(*) FROM entities WHERE path IN ({marks}) GROUP BY path", file_list))
    pr: dict[str, tuple[float, float]] = {
        p: (mx, sm) for p, mx, sm in c.execute(
            f"SELECT e.path, max(r.rank), sum(r.rank) FROM entities e JOIN ranks r ON r.entity_rowid = e.rowid "
            f"WHERE e.path IN ({marks}) GROUP BY e.path", file_list)
    }
    path_of = dict(c.execute(f"SELECT id, path FROM files WHERE path IN ({marks})", file_list))
    file_ids = {p: i for i, p in path_of.items()}
    file_rowids = [file_ids.get(p, -1) for p in file_list]
    found = store.bm25_matches("files_fts", fusion.terms) if fusion.terms else None
    file_lexical = dict(zip(file_list, _lexical(found, FILE_WEIGHTS, file_rowids, ranked=False)))
    file_bm25_score = file_bm25_scores(store, fusion.terms, path_of, found)
    # Identifiers of the query defined in each file, each weighted 1/sqrt(number of its definitions).
    idents_in: dict[str, int] = defaultdict(int)
    idents_w: dict[str, float] = defaultdict(float)
    if q.ident_names:
        names = sorted(q.ident_names)
        nm = ",".join("?" * len(names))
        per_name: dict[str, list[str]] = defaultdict(list)
        for name, path in c.execute(
            f"SELECT name, path FROM entities WHERE name IN ({nm}) AND kind != 'module'", names
        ):
            per_name[name].append(path)
        for name, paths in per_name.items():
            for path in set(paths):
                idents_in[path] += 1
                idents_w[path] += 1.0 / math.sqrt(len(paths))
    hits_per_file: dict[str, int] = defaultdict(int)
    best_hit: dict[str, int] = {}
    best_stream_file: dict[tuple[str, str], int] = {}
    for i, h in enumerate(fusion.hits, start=1):
        p = h.entity.path
        hits_per_file[p] += 1
        best_hit.setdefault(p, i)
        for s, r in h.streams.items():
            key = (p, s)
            if r < best_stream_file.get(key, 1 << 30):
                best_stream_file[key] = r

    if vector is not None:
        best_stream_file.update(((p, "vector"), r) for p, r in vec.files.items())
    title_file_lexical = dict(zip(file_list, _part_lexical(store, "files_fts", q.title_terms, FILE_WEIGHTS, file_rowids)))
    code_file_lexical = dict(zip(file_list, _part_lexical(store, "files_fts", q.code_terms, FILE_WEIGHTS, file_rowids)))

    out: dict[str, dict[str, float]] = {}
    for p in file_list:
        lines, module = file_info.get(p, (0, ""))
        base = p.rsplit("/", 1)[-1]
        stem = base.rsplit(".", 1)[0]
        parts = [*p.split("/")[:-1], stem]  # the extension cut from the file name only
        path_terms = {t for part in parts for t in (part.lower(), *split_identifier(part))}
        overlap = len(path_terms & q.term_set) / max(1, len(path_terms))
        # A qualified module name (`pkg.sub.mod`, `github.com/x/pkg`, `crate::cart`), not a bare word.
        module_mentioned = float(bool(module) and any(sep in module for sep in (".", "/", "::")) and module in q.query)
        age = ev.file_age_days.get(p) if ev.present else None
        out[p] = {
            "fusion_rank": fusion_file_rank.get(p, NAN),
            "fusion_score_rel": fusion.file_scores.get(p, 0.0) / top_file_score,
            "entity_rank": entity_file_rank.get(p, NAN),
            "file_bm25_rank": bm25_file_rank.get(p, NAN),
            "file_bm25_score": file_bm25_score.get(p, 0.0),
            **{f"best_{s}_rank": _stream_rank(best_stream_file, (p, s), vector) for s in STREAMS},
            "n_hits": hits_per_file.get(p, 0),
            "best_hit_rank": best_hit.get(p, NAN),
            "path_mentioned": float(p in q.mentioned_paths),
            "basename_mentioned": float(base in q.query),
            "module_mentioned": module_mentioned,
            "stem_in_terms": float(stem.lower() in q.term_set),
            "path_parts_overlap": overlap,
            "frames_in_file": q.frame_files.get(p, 0),
            "innermost_frame": float(q.innermost == p),
            "idents_defined": idents_in.get(p, 0),
            "idents_defined_weighted": idents_w.get(p, 0.0),
            "n_entities_log": math.log1p(n_entities.get(p, 0)),
            "lines_log": math.log1p(lines),
            "depth": len(parts) - 1,
            "is_test": float(is_test_path(p)),
            "pagerank_max": pr.get(p, (0.0, 0.0))[0],
            "pagerank_sum_log": math.log1p(pr.get(p, (0.0, 0.0))[1]),
            "hist_commits": hist(ev.file_commits, p, log=True),
            "hist_fixes": hist(ev.file_fixes, p, log=True),
            "hist_age_days_log": NAN if not ev.present else (_log(age) if age is not None else NAN),
            "hist_similar": hist(ev.file_similar, p),
            "file_bm25_rel": file_lexical[p][0],
            "file_coverage": file_lexical[p][1],
            "title_file_bm25_rel": title_file_lexical[p][0],
            "title_file_coverage": title_file_lexical[p][1],
            "title_file_rank": title_file_lexical[p][2],
            "code_file_bm25_rel": code_file_lexical[p][0],
            "code_file_coverage": code_file_lexical[p][1],
            "code_file_rank": code_file_lexical[p][2],
            "hist_title_similar": hist(evidence.title_similar[0], p),
            "raises_named": evidence.raises_file.get(p, 0.0),
            "hist_sem_max": evidence.sem(p, 0),
            "hist_sem_top3": evidence.sem(p, 1),
            "hist_sem_similar": evidence.sem(p, 2),
        }
    return out


def function_features(store: Store, q: QueryFacts, fusion: Fusion, vector: list[int] | None, vec: VectorRanks,
                      fn_ids: list[str], files: dict[str, dict[str, float]],
                      evidence: Evidence) -> dict[str, dict[str, float]]:
    """entity id -> its FUNCTION_FEATURES (less the query's own), by name, for those of `fn_ids`
    still in the index, in their order."""
    c = store.conn
    hist = evidence.hist
    query = q.query
    fn_rank = _rank_of(fusion.functions)
    in_file_rank = _rank_of(fusion.in_file)
    top_fn_score = max(fusion.fn_scores.values(), default=0.0) or 1.0
    stream_best: dict[tuple[str, str], int] = {}
    n_hits: dict[str, int] = defaultdict(int)
    for h in fusion.hits:
        fid = fusion.outer.get(h.entity.id)
        if fid is None:
            continue
        n_hits[fid] += 1
        for s, r in h.streams.items():
            if r < stream_best.get((fid, s), 1 << 30):
                stream_best[(fid, s)] = r
    rows: dict[str, tuple] = {}
    for i in range(0, len(fn_ids), 400):
        chunk = fn_ids[i:i + 400]
        for row in c.execute(
            f"SELECT id, rowid, kind, path, qualname, name, start_line, end_line, parent FROM entities "
            f"WHERE id IN ({','.join('?' * len(chunk))})", chunk
        ):
            rows[row[0]] = row[1:]
    fn_ids = [f for f in fn_ids if f in rows]
    rowids = [rows[f][0] for f in fn_ids]
    found = store.bm25_matches("entities_fts", fusion.terms) if fusion.terms and rowids else None
    fn_lexical = dict(zip(rowids, _lexical(found, BM25_WEIGHTS, rowids, ranked=False)))
    col_bm25 = column_bm25(store, fusion.terms, rowids, found)
    names = sorted({rows[f][4] for f in fn_ids})
    same_name: dict[str, int] = {}
    if names:
        same_name = dict(c.execute(
            f"SELECT name, count(*) FROM entities WHERE name IN ({','.join('?' * len(names))}) GROUP BY name", names))
    fid_marks = ",".join("?" * len(fn_ids))
    calls_in: dict[str, int] = dict(c.execute(
        f"SELECT t.name, count(*) FROM edges ed JOIN symbols t ON t.id = ed.target WHERE t.name IN ({fid_marks}) "
        "AND ed.relation=(SELECT id FROM symbols WHERE name='CALLS') GROUP BY t.name",
        fn_ids)) if fn_ids else {}
    calls_out: dict[str, int] = dict(c.execute(
        f"SELECT s.name, count(*) FROM edges ed JOIN symbols s ON s.id = ed.source WHERE s.name IN ({fid_marks}) "
        "AND ed.relation=(SELECT id FROM symbols WHERE name='CALLS') GROUP BY s.name",
        fn_ids)) if fn_ids else {}
    ranks = dict(c.execute(
        f"SELECT entity_rowid, rank FROM ranks WHERE entity_rowid IN ({','.join('?' * len(rowids))})", rowids
    )) if rowids else {}
    # Closeness to what the query names: neighbours (calls, containment, inheritance) of the
    # entities the exact stream found.
    named = list(dict.fromkeys(h.entity.id for h in exact_hits(fusion)[:10]))
    near: set[str] = set(named)
    if named:
        nm = ",".join("?" * len(named))
        for a_, b_ in c.execute(
            f"SELECT s.name, t.name FROM edges ed JOIN symbols s ON s.id = ed.source JOIN symbols t ON t.id = ed.target "
            "WHERE ed.relation IN (SELECT id FROM symbols WHERE name IN ('CALLS','CONTAINS','INHERITS')) "
            f"AND (ed.source IN (SELECT id FROM symbols WHERE name IN ({nm})) "
            f"OR ed.target IN (SELECT id FROM symbols WHERE name IN ({nm})))", (*named, *named)
        ):
            near.add(a_)
            near.add(b_)
    if vector is not None:
        stream_best.update(((f, "vector"), r) for f, r in vec.functions.items())
    title_fn_lexical = dict(zip(rowids, _part_lexical(store, "entities_fts", q.title_terms, BM25_WEIGHTS, rowids)))
    code_fn_lexical = dict(zip(rowids, _part_lexical(store, "entities_fts", q.code_terms, BM25_WEIGHTS, rowids)))
    fn_rank_in_file: dict[str, int] = {}
    per_file_count: dict[str, int] = defaultdict(int)
    for fid in fusion.functions:
        p = split_entity_id(fid)[1]
        per_file_count[p] += 1
        fn_rank_in_file.setdefault(fid, per_file_count[p])

    out: dict[str, dict[str, float]] = {}
    for fid in fn_ids:
        rowid, kind, path, qual, name, start, end, parent = rows[fid]
        ff = files.get(path) or {}
        parent_name = qual.rsplit(".", 1)[0].split(".")[-1] if "." in qual else ""
        nparts = split_identifier(name)
        qparts = {t for q_ in qual.split(".") for t in split_identifier(q_)}
        seps = _SCOPE_SEPARATORS.get(path.rpartition(".")[2], ())
        out[fid] = {
            "fusion_rank": fn_rank.get(fid, NAN),
            "fusion_score_rel": fusion.fn_scores.get(fid, 0.0) / top_fn_score,
            **{f"{s}_rank": _stream_rank(stream_best, (fid, s), vector) for s in STREAMS},
            "in_file_rank": in_file_rank.get(fid, NAN),
            "n_hits": n_hits.get(fid, 0),
            **dict(zip(("bm25_name", "bm25_path", "bm25_signature", "bm25_docstring", "bm25_body"),
                       col_bm25.get(rowid, (0.0,) * 5))),
            "name_identifier": float(name in q.ident_names),
            "qualname_in_query": float(len(qual.split(".")) > 1 and (
                qual in query or any(form in query for form in _scoped_forms(path, qual)))),
            "parent_mentioned": float(bool(parent_name) and parent_name in q.words),
            "name_called": float(f"{name}(" in query),
            "name_backticked": float(f"`{name}" in query or f".{name}`" in query
                                     or any(f"{sep}{name}`" in query for sep in seps)),
            "name_in_frame": float((path, name) in q.frame_funcs),
            "name_word": float(name in q.words),
            "name_parts_overlap": len(set(nparts) & q.term_set) / max(1, len(nparts)),
            "name_parts_hits": len(set(nparts) & q.term_set),
            "qual_parts_overlap": len(qparts & q.term_set) / max(1, len(qparts)),
            "kind_method": float(kind == "method"),
            "kind_class": float(kind == "class"),
            "qual_depth": len(qual.split(".")),
            "lines_log": math.log1p(max(1, end - start + 1)),
            "same_name_defs_log": math.log1p(same_name.get(name, 1)),
            "calls_in_log": math.log1p(calls_in.get(fid, 0)),
            "calls_out_log": math.log1p(calls_out.get(fid, 0)),
            "pagerank": ranks.get(rowid, 0.0),
            "near_named": float(fid in near),
            "file_fusion_rank": ff.get("fusion_rank", NAN),
            "file_bm25_rank": ff.get("file_bm25_rank", NAN),
            "file_path_mentioned": ff.get("path_mentioned", 0.0),
            "file_frames": ff.get("frames_in_file", 0.0),
            "file_is_test": float(is_test_path(path)),
            "file_n_entities_log": ff.get("n_entities_log", NAN),
            "file_depth": ff.get("depth", NAN),
            "file_fn_rank": fn_rank_in_file.get(fid, NAN),
            "hist_fn_commits": hist(evidence.history.fn_commits, (path, name), log=True),
            "hist_fn_fixes": hist(evidence.history.fn_fixes, (path, name), log=True),
            "hist_fn_similar": hist(evidence.history.fn_similar, (path, name)),
            "hist_file_commits": ff.get("hist_commits", NAN),
            "hist_file_fixes": ff.get("hist_fixes", NAN),
            "hist_file_age_days_log": ff.get("hist_age_days_log", NAN),
            "hist_file_similar": ff.get("hist_similar", NAN),
            "bm25_rel": fn_lexical[rowid][0],
            "coverage": fn_lexical[rowid][1],
            "title_bm25_rel": title_fn_lexical[rowid][0],
            "title_coverage": title_fn_lexical[rowid][1],
            "title_rank": title_fn_lexical[rowid][2],
            # (a share of the name's parts, as trained, despite the name)
            "title_name_hits": len(set(nparts) & q.title_term_set) / max(1, len(nparts)),
            "name_in_title": float(name in q.title_words),
            "file_coverage": ff.get("file_coverage", NAN),
            "title_file_bm25_rel": ff.get("title_file_bm25_rel", NAN),
            **dict(zip(("code_bm25_rel", "code_coverage", "code_rank"), code_fn_lexical[rowid])),
            "code_file_bm25_rel": ff.get("code_file_bm25_rel", NAN),
            "hist_fn_title_similar": hist(evidence.title_similar[1], (path, name)),
            "hist_file_title_similar": ff.get("hist_title_similar", NAN),
            "raises_named": evidence.raises_fn.get(fid, 0.0),
            "file_raises_named": ff.get("raises_named", 0.0),
            "hist_file_sem_max": ff.get("hist_sem_max", NAN),
            "hist_file_sem_top3": ff.get("hist_sem_top3", NAN),
            "hist_file_sem_similar": ff.get("hist_sem_similar", NAN),
        }
    return out


def candidates(store: Store, query: str, fusion: Fusion, vector: list[int] | None = None,
               history_before: int | None = None, expand: int = EXPAND_FILES,
               per_file: int = EXPAND_PER_FILE) -> Candidates:
    """The candidate files and functions of a query with one feature row each (FILE_FEATURES,
    FUNCTION_FEATURES order, every value placed by its name). `fusion` is the lexical fusion
    (`LEXICAL_SIGNALS`); `vector` the vector stream's rowids, best first, or None when the index
    has no vectors (its features are then missing). `history_before`: only commits older than
    this time are evidence. The functions of the fusion's and whole-file BM25's best `expand`
    files join (`per_file` each)."""
    q = query_facts(store, query, fusion)
    vec = vector_ranks_of(store, vector)
    fn_ids, expanded = candidate_functions(store, fusion, vec, expand, per_file)
    file_list = candidate_files(fusion, q, fn_ids)
    evidence = evidence_of(store, query, fusion, q, file_list, history_before)
    files = file_features(store, q, fusion, vector, vec, file_list, evidence)
    functions = function_features(store, q, fusion, vector, vec, fn_ids, files, evidence)
    return Candidates(
        file_list, [row_of(q.features | files[p], FILE_FEATURES) for p in file_list],
        list(functions), [row_of(q.features | f, FUNCTION_FEATURES) for f in functions.values()],
        [expanded[f] for f in functions if f in expanded],
    )
