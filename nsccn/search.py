"""Search: lexical (FTS5 BM25), query analysis (identifiers, paths, tracebacks), semantic vectors,
fused by Reciprocal Rank Fusion, then graph expansion and a structural prior.

Each stream produces a ranked list of entity rowids; `fuse` combines ranks, never raw scores,
so streams with incomparable scales mix fairly.
"""

from __future__ import annotations

import builtins
import keyword
import re
import time
from collections import defaultdict
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

from nsccn.model import split_entity_id
from nsccn.stacktrace import PYTHON_FRAME, other_frames
from nsccn.store import EntityRow, Store
from nsccn.testpaths import is_test_path  # noqa: F401  (search's callers import it from here too)
from nsccn.text import split_identifier

ALL_SIGNALS = frozenset({"bm25", "vector", "query_analysis", "graph", "prior"})
DEFAULT_SIGNALS = ALL_SIGNALS
RRF_K = 60
# FTS5 column weights: name, path, signature, docstring, body.
BM25_WEIGHTS = (6.0, 3.0, 3.0, 1.0, 1.0)
FILE_WEIGHTS = (3.0, 1.0)  # whole files: path, body
FILE_BM25_WEIGHTS = ", ".join(map(str, FILE_WEIGHTS))
MAX_QUERY_TERMS = 64
# FTS5's bm25() sums over the phrases of a query, so a term listed twice weighs twice: a word the
# report repeats is what it is about. Capped so one word said ten times cannot drown the rest.
MAX_TERM_REPEATS = 3
STREAM_DEPTH = 200  # how deep each stream is read before fusion
# RRF weight per stream: exact identifier/path/traceback matches are strong evidence; graph
# neighbours and the structural prior only nudge. Vectors count half: with the bundled
# general-purpose model (MiniLM) the vector stream alone localizes far worse than BM25 alone
# (function@10 32.4 vs 46.2 over all 181 dev instances; README "Localization").
STREAM_WEIGHTS = {"bm25": 1.0, "vector": 0.5, "exact": 1.0, "graph": 0.5, "prior": 0.1}

_STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been before being
    below between both but by can could did do does doing don down during each either else even every few
    for from further get got had has have having he her here hers him his how however i if in into is it
    its itself just like make may me might more most much must my no nor not now of off on once only or
    other our ours out over own please same see seem seems should so some such than that the their them
    then there these they this those though through to too under until up upon us use used using very via
    want was way we well were what when where which while who whom why will with within without would
    yet you your yours bug issue error fix fixed problem expected actual actually instead work works
    working following example code case cases thing things one two new old true false none self def
    return class import print value values return returns result results python version line lines file
    files call called calls function functions method methods test tests run running""".split()
)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_PATH = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.py)\b")
# Source files of other languages. An extension of one letter (`x.c`, `self.m`) reads as an
# attribute as often as a file: those count only with a folder (`src/x.c`). Not followed by `(`:
# `engine.go()` is a call.
_SOURCE_EXTENSIONS = (
    "pyi|go|rs|java|kts|kt|scala|groovy|cs|fs|vb|swift|mm|cpp|cxx|cc|hpp|hxx|hh|cu|js|jsx|mjs|cjs|ts|tsx|mts|cts|"
    "vue|svelte|rb|php|lua|exs|ex|erl|hs|ml|clj|cljs|dart|jl|zig|nim|pl|pm|sh|bash|sql|sol|tf|proto"
)
_OTHER_PATH = re.compile(
    rf"(?<![\w/.-])((?:[\w.-]+/)+[\w.-]+\.(?:[chmrdv]|{_SOURCE_EXTENSIONS})|[\w.-]+\.(?:{_SOURCE_EXTENSIONS}))\b(?![(\w])"
)
# `Cart::total` (Rust, C++, PHP, Ruby), `cart->total` (PHP, C), `Cart#total` (Ruby, Javadoc: a
# class name before `#`): a scoped name, looked up as `Cart.total`. Not after `:` or `.`
# (`test_x.py::TestCart::test_total` is a pytest node id), nor inside a URL (`/wiki/Empty_set#History`,
# `?highlight=symbols#symbols`).
_SCOPED = re.compile(
    r"(?<![\w:.#>/=?&%-])(?:[A-Za-z_]\w*(?:(?:::|->)[A-Za-z_]\w*)+|[A-Z]\w*#[a-z_]\w*)(?![\w#/])"
)

# A query is untrusted input (a pasted 1 MB log, a path of 50 kB): what analysis reads and keeps
# is capped, so its cost is linear in the query and bounded, and an answer says what was cut
# (`QueryAnalysis.capped`). The caps sit far above what real reports hold: of the 181 bug reports
# of the localization benchmark the longest has 22,778 characters, 52 identifiers, 6 paths and
# 44 traceback frames; no name is longer than 48 characters, no path longer than 76.
MAX_ANALYZED_CHARS = 100_000  # words and identifiers are read from this much of the query
MAX_IDENTIFIERS = 200  # distinct identifiers looked up exactly (one indexed lookup each)
MAX_PATHS = 64  # distinct file paths looked up
MAX_FRAMES = 100  # distinct traceback frames looked up (the innermost ones: they are last)
MAX_TOKEN_CHARS = 256  # a longer "identifier" names nothing: it is skipped
MAX_PATH_CHARS = 4096  # PATH_MAX: a longer path names no file
MAX_LINE_DIGITS = 9  # a frame's longer line number is kept as 0 (unknown)
MAX_EMBED_CHARS = 20_000  # text given to the query embedder (models read a few hundred tokens)


@dataclass
class QueryAnalysis:
    terms: list[str]  # lexical terms, most telling first
    identifiers: list[str]  # code-like names: snake_case, CamelCase, dotted, called()
    paths: list[str]  # mentioned file paths
    frames: list[tuple[str, int, str]]  # traceback frames (file, line, function), innermost last
    counts: dict[str, int] = field(default_factory=dict)  # term -> how often the report says the word
    capped: list[str] = field(default_factory=list)  # what the caps left out, in words (for answers)

    def weighted_terms(self) -> list[str]:
        """The terms for a BM25 query, each as often as the report says it (MAX_TERM_REPEATS at most)."""
        return [t for t in self.terms for _ in range(min(self.counts.get(t, 1), MAX_TERM_REPEATS))]


def _frames(query: str, capped: list[str]) -> list[tuple[str, int, str]]:
    """Distinct stack-trace frames, innermost last, at most MAX_FRAMES (the innermost ones): other
    languages' traces (`nsccn.stacktrace`), then Python tracebacks'."""
    found: dict[tuple[str, str], tuple[str, int, str]] = {}
    too_long = 0
    python = ((f, int(n) if len(n) <= MAX_LINE_DIGITS else 0, fn) for f, n, fn in PYTHON_FRAME.findall(query))
    for f, n, fn in (*other_frames(query), *python):
        if len(f) > MAX_PATH_CHARS:
            too_long += 1
            continue
        key = (f, fn or f"line {n}")  # a frame without a function is told apart by its line
        found.pop(key, None)  # a repeated frame (recursion) counts where it was seen last
        found[key] = (f, n, fn)
    if too_long:
        capped.append(f"{too_long} traceback frame(s) with a path over {MAX_PATH_CHARS} characters skipped")
    frames = list(found.values())
    if len(frames) > MAX_FRAMES:
        capped.append(f"the innermost {MAX_FRAMES} of {len(frames)} distinct traceback frames looked up")
        frames = frames[-MAX_FRAMES:]
    return frames


def _paths(query: str, capped: list[str]) -> list[str]:
    """Distinct file paths a query mentions, in the order it mentions them, at most MAX_PATHS."""
    paths: dict[str, None] = {}
    too_long = 0
    found = [(m.start(1), m.group(1)) for m in _PATH.finditer(query)]
    other = [(m.start(1), m.group(1)) for m in _OTHER_PATH.finditer(query)]
    if other:  # (a Python report rarely names another file: its order stays the regex's)
        found = sorted(found + other)
    for _, m in found:
        if len(m) > MAX_PATH_CHARS:
            too_long += 1
        else:
            paths[m.replace("\\", "/")] = None
    if too_long:
        capped.append(f"{too_long} path(s) over {MAX_PATH_CHARS} characters skipped")
    if len(paths) > MAX_PATHS:
        capped.append(f"the first {MAX_PATHS} of {len(paths)} distinct file paths looked up")
    return list(paths)[:MAX_PATHS]


def analyze_query(query: str) -> QueryAnalysis:
    """Terms, identifiers, paths and traceback frames of a query (a fresh copy: callers may keep it)."""
    a = _analyze(query)
    return replace(a, terms=list(a.terms), identifiers=list(a.identifiers), paths=list(a.paths),
                   frames=list(a.frames), counts=dict(a.counts), capped=list(a.capped))


def capped_note(analysis: QueryAnalysis) -> str | None:
    """What the caps on query analysis left out, in one line for an answer; None when nothing."""
    return "query analysis capped: " + "; ".join(analysis.capped) if analysis.capped else None


@lru_cache(maxsize=8)  # search and localize analyze the same report more than once; it can be 1 MB
def _analyze(query: str) -> QueryAnalysis:
    capped: list[str] = []
    frames = _frames(query, capped)
    paths = _paths(query, capped)
    if len(query) > MAX_ANALYZED_CHARS:
        capped.append(f"words and identifiers read from the first {MAX_ANALYZED_CHARS:,} of {len(query):,} characters")
        query = query[:MAX_ANALYZED_CHARS]
    identifiers: list[str] = []
    counts: dict[str, int] = defaultdict(int)  # words and the parts of names: orders the terms
    said: dict[str, int] = defaultdict(int)  # whole words only: weighs them (`weighted_terms`)
    for m in _IDENT.finditer(query):
        tok = m.group(0)
        if len(tok) > MAX_TOKEN_CHARS:
            continue
        after = query[m.end() : m.end() + 1]
        before = query[m.start() - 1 : m.start()] if m.start() else ""
        codeish = (
            "_" in tok.strip("_")
            or "." in tok
            or re.search(r"[a-z][A-Z]", tok) is not None
            or after == "("
            or before == "`"
            or (tok[:1].isupper() and any(c.isupper() for c in tok[1:]))
        )
        if codeish and _specific_identifier(tok):
            identifiers.append(tok)
        for part in tok.split("."):
            low = part.lower()
            if len(low) > 1 and low not in _STOPWORDS and not low.isdigit():
                counts[low] += 1
                said[low] += 1
                one = singular(low)
                if one != low and one not in _STOPWORDS:
                    counts[one] += 1
                    said[one] += 1
            for sub in split_identifier(part):
                if len(sub) > 2 and sub not in _STOPWORDS and sub != low:
                    counts[sub] += 1
    for m in _SCOPED.finditer(query):
        tok = re.sub(r"::|->|#", ".", m.group(0))
        if len(tok) <= MAX_TOKEN_CHARS and _specific_identifier(tok):
            identifiers.append(tok)
    identifiers = list(dict.fromkeys(identifiers))
    if len(identifiers) > MAX_IDENTIFIERS:
        capped.append(f"the first {MAX_IDENTIFIERS} of {len(identifiers)} distinct identifiers looked up")
        identifiers = identifiers[:MAX_IDENTIFIERS]
    ident_terms = {p.lower() for i in identifiers for p in i.split(".")}
    # Code identifiers first, then by frequency in the report.
    terms = sorted(counts, key=lambda t: (t not in ident_terms, -counts[t]))
    terms = terms[:MAX_QUERY_TERMS]
    return QueryAnalysis(terms, identifiers, paths, frames, {t: said[t] for t in terms if said[t]}, capped)


_SAME_IN_PLURAL = frozenset({"series", "species", "physics", "mathematics"})  # ("news" -> "new" is a stopword anyway)


def singular(word: str) -> str:
    """The singular of an English plural, by the regular rules only (`skeletons` -> `skeleton`,
    `entries` -> `entry`, `matches` -> `match`); anything else unchanged. Queries add it beside the
    word: names are mostly singular, reports mostly plural. Full stemming (Porter) was measured and
    lost file accuracy: it merges too much (`collection`, `collected` -> `collect` in pytest)."""
    if (len(word) < 4 or not word.endswith("s") or word.endswith(("ss", "us", "is")) or not word.isalpha()
            or word in _SAME_IN_PLURAL):
        return word
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes", "zes")):
        return word[:-2]
    return word[:-1]


_NOT_SPECIFIC = frozenset(dir(builtins)) | frozenset(keyword.kwlist) | {"self", "cls", "args", "kwargs"}


def _specific_identifier(tok: str) -> bool:
    """Whether a code-looking token names something specific enough to look up exactly:
    not a builtin or keyword, not an acronym (`XML`, `SELECT`), not `e.g`-style abbreviations."""
    if tok.endswith(".py") or len(tok) < 3 or tok in _NOT_SPECIFIC:
        return False
    parts = tok.split(".")
    if any(len(p) < 2 for p in parts):
        return False
    last = parts[-1]
    if last.isupper() and "_" not in last:
        return False
    return last not in _NOT_SPECIFIC


@dataclass
class Hit:
    entity: EntityRow
    score: float
    streams: dict[str, int] = field(default_factory=dict)  # stream -> 1-based rank

    def as_dict(self) -> dict:
        d = self.entity.brief()
        d["score"] = round(self.score, 6)
        d["matched_by"] = self.streams
        return d


# -- streams ----------------------------------------------------------------------------------


def _any_of(terms: list[str]) -> str:
    """An FTS5 query matching any of the terms (each quoted: terms are identifiers, never syntax)."""
    return " OR ".join(f'"{t}"' for t in terms)


def bm25_stream(store: Store, terms: list[str], limit: int = STREAM_DEPTH) -> list[int]:
    if not terms:
        return []
    found = store.bm25_matches("entities_fts", terms)
    if found is not None:  # FTS5's own scores and order, from the postings (nsccn.store.bm25)
        return found.rowids[found.order(found.scores(BM25_WEIGHTS))[:limit]].tolist()
    match = _any_of(terms)
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
        return store.conn.execute(q, (_any_of(terms), limit)).fetchall()
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
        for cand in _indexed_suffix_matches(store, norm):
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
        cands = _indexed_suffix_matches(store, path)
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


def _indexed_suffix_matches(store: Store, path: str, limit: int = 5) -> list[str]:
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
                  skip_path=None) -> list[int]:
    """Nearest entities by embedding; empty when the index has no vectors yet (`skip_path`:
    `semantic.nearest_rowids`)."""
    from nsccn import semantic  # heavy imports (onnxruntime) only when vectors are asked for

    return semantic.nearest_rowids(store, query, limit, embedder=embedder, skip_path=skip_path)


# -- fusion -----------------------------------------------------------------------------------


def fuse(
    streams: dict[str, list[int]],
    k: int = RRF_K,
    weights: dict[str, float] | None = None,
    item_weights: dict[str, dict[int, float]] | None = None,
) -> dict[int, float]:
    """Reciprocal Rank Fusion: score(d) = sum over streams of w / (k + rank(d)), w the stream's
    weight times the item's own weight in that stream (default 1)."""
    scores: dict[int, float] = defaultdict(float)
    for name, ranked in streams.items():
        w = (weights or {}).get(name, 1.0)
        own = (item_weights or {}).get(name, {})
        for rank, rid in enumerate(ranked, start=1):
            scores[rid] += w * own.get(rid, 1.0) / (k + rank)
    return scores


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
    from nsccn.repomap import entity_ranks

    ranks = entity_ranks(store)
    if not ranks:
        return []
    return sorted(candidates, key=lambda r: -ranks.get(r, 0.0))


# -- entry points -----------------------------------------------------------------------------


def search(
    store: Store,
    query: str,
    limit: int = 10,
    signals: frozenset[str] | None = None,
    kinds: tuple[str, ...] | None = None,
    embedder=None,
    rrf_k: int = RRF_K,
    diversity: float = 0.0,
) -> list[Hit]:
    """Ranked entities for a query (a name, a phrase, or a whole bug report).

    `diversity` > 0 re-ranks by Maximal Marginal Relevance (`diversify`): near-duplicates of a hit
    already listed (sibling overloads, one file's many similar methods) give way to other places."""
    if not query or not query.strip():
        raise ValueError("the query is empty")
    if not 0.0 <= diversity <= 1.0:
        raise ValueError(f"diversity must be between 0 and 1, not {diversity}")
    signals = DEFAULT_SIGNALS if signals is None else signals
    unknown = set(signals) - ALL_SIGNALS
    if unknown:
        raise ValueError(f"unknown signals {sorted(unknown)}; known: {sorted(ALL_SIGNALS)}")
    analysis = analyze_query(query)
    streams: dict[str, list[int]] = {}
    if "bm25" in signals:
        streams["bm25"] = bm25_stream(store, analysis.weighted_terms())
    if "vector" in signals:
        streams["vector"] = vector_stream(store, query[:MAX_EMBED_CHARS], embedder=embedder)
    item_weights: dict[str, dict[int, float]] = {"exact": {}}
    if "query_analysis" in signals:
        streams["exact"] = exact_stream(store, analysis, item_weights["exact"])
    scores = fuse(streams, k=rrf_k, weights=STREAM_WEIGHTS, item_weights=item_weights)
    # Second-order streams read the first fusion, then everything is fused again.
    if "graph" in signals:
        streams["graph"] = graph_stream(store, scores)
    if "prior" in signals:
        streams["prior"] = prior_stream(store, [r for r, _ in sorted(scores.items(), key=lambda x: -x[1])[:100]])
    if "graph" in signals or "prior" in signals:
        scores = fuse(streams, k=rrf_k, weights=STREAM_WEIGHTS, item_weights=item_weights)
    ranked = sorted(scores.items(), key=lambda x: -x[1])
    ranks = {name: {rid: i for i, rid in enumerate(s, start=1)} for name, s in streams.items()}
    wanted = max(limit * 4, 100)
    rows = store.entity_at_rowids([rid for rid, _ in ranked[:wanted]])
    hits: list[Hit] = []
    for rid, score in ranked[:wanted]:
        row = rows.get(rid)
        if row is None or (kinds and row.kind not in kinds):
            continue
        hits.append(Hit(row, score, {n: r[rid] for n, r in ranks.items() if rid in r}))
        if len(hits) >= limit and not diversity:
            break
    if diversity:
        from nsccn.semantic import entity_vectors  # numpy and the vector tables: only when asked

        return diversify(hits, limit, diversity, entity_vectors(store, [h.entity.id for h in hits]))
    return hits


def diversify(hits: list[Hit], limit: int, diversity: float, vectors: dict) -> list[Hit]:
    """Maximal Marginal Relevance: take, one at a time, the hit with the best
    (1 - diversity) * relevance - diversity * (its greatest similarity to a hit already taken).

    Relevance is the fused score scaled to [0, 1]. Similarity is the cosine of the two entities'
    vectors; for an entity without a vector (a lexical-only index) it is 1 within one file and 0
    across files, so diversity still spreads the results over files."""
    import numpy as np

    if not hits:
        return []
    top = max(h.score for h in hits) or 1.0
    unit = {}
    for eid, vec in vectors.items():
        norm = float(np.linalg.norm(vec))
        if norm:
            unit[eid] = vec / norm

    def similarity(a: Hit, b: Hit) -> float:
        va, vb = unit.get(a.entity.id), unit.get(b.entity.id)
        if va is not None and vb is not None:
            return float(va @ vb)
        return 1.0 if a.entity.path == b.entity.path else 0.0

    taken: list[Hit] = []
    closest = [0.0] * len(hits)  # each candidate's greatest similarity to the hits taken so far
    left = set(range(len(hits)))
    while left and len(taken) < limit:
        best = max(left, key=lambda i: ((1 - diversity) * hits[i].score / top - diversity * closest[i], -i))
        left.remove(best)
        taken.append(hits[best])
        for i in left:
            closest[i] = max(closest[i], similarity(hits[i], hits[best]))
    return taken


FILE_SHARE = 1.0  # weight of a function's file rank in its own score (hierarchical localization)
TEST_PENALTY = 0.3  # a bug is fixed in the code under test; tests mention the bug's words too
# Second stage: the functions of the best files are ranked by BM25 within their file, so a
# function the repository-wide streams cut off (a big file's 150th method) can still come up.
# (Vector similarity within the file was tried as a second such stream and added nothing.)
IN_FILE_FILES = 5
IN_FILE_DEPTH = 10  # functions taken from each of those files
FUNCTION_KINDS = ("func", "method", "class")


@dataclass
class Localization:
    files: list[str]
    functions: list[str]  # entity ids of functions, methods and classes (outermost functions)
    seconds: float


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


def _in_file_bm25(store: Store, terms: list[str], paths: list[str]) -> dict[str, list[str]]:
    """path -> its functions, methods and classes matching the query, best BM25 first."""
    if not terms or not paths:
        return {}
    found = store.bm25_matches("entities_fts", terms)
    if found is not None:
        return _in_file_from(store, found, paths)
    match = _any_of(terms)
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
    """`_in_file_bm25` from rows already matched: the files' entities, scored, best first."""
    listed = store.conn.execute(
        f"SELECT rowid, id, path FROM entities WHERE path IN ({','.join('?' * len(paths))}) "
        "AND kind IN ('func', 'method', 'class')", paths).fetchall()
    scores = found.scores_of([r[0] for r in listed], BM25_WEIGHTS)
    rows = sorted((scores[rowid], rowid, eid, path) for rowid, eid, path in listed if rowid in scores)
    out: dict[str, list[str]] = defaultdict(list)
    for _, _, eid, path in rows:
        out[path].append(eid)
    return out


@dataclass
class Fusion:
    """What the hand-tuned fusion ranking of a bug report saw and decided: the learned ranker's
    candidates and many of its features come from here."""

    analysis: QueryAnalysis
    terms: list[str]  # weighted BM25 terms
    hits: list[Hit]  # entity hits, test files demoted, best first
    files: list[str]  # files, best first (entity hits fused with whole-file BM25)
    file_scores: dict[str, float]
    entity_files: list[str]  # files by their entity hits alone
    file_bm25: list[str]  # whole-file BM25 ranking (test files left out)
    top_files: list[str]  # the files whose functions were ranked again within their file
    in_file: list[str]  # those functions: the best files in order, each file's best functions in order
    functions: list[str]  # outermost functions, best first
    fn_scores: dict[str, float]
    outer: dict[str, str]  # entity id -> its outermost function


def fusion_localize(
    store: Store, query: str, limit: int = 50, signals: frozenset[str] | None = None, embedder=None,
    rrf_k: int = RRF_K,
) -> Fusion:
    """The hand-tuned fusion: files from entity hits aggregated per file (best hit plus damped
    further hits) fused with a whole-file BM25 ranking; functions from entity hits rolled up to
    their outermost function, plus the share of their file's rank, plus the BM25 ranking of the
    best files' functions within their file."""
    signals_used = DEFAULT_SIGNALS if signals is None else signals
    analysis = analyze_query(query)
    terms = analysis.weighted_terms()
    hits = search(store, query, limit=limit * 6, signals=signals, embedder=embedder, rrf_k=rrf_k)
    for hit in hits:
        if is_test_path(hit.entity.path):
            hit.score *= TEST_PENALTY
    hits.sort(key=lambda h: -h.score)
    files: dict[str, float] = defaultdict(float)
    seen: dict[str, int] = defaultdict(int)
    for hit in hits:
        # A file (or a function, below) scores by its best hit plus a little for each further one.
        seen[hit.entity.path] += 1
        files[hit.entity.path] += hit.score / seen[hit.entity.path] ** 2
    entity_files = sorted(files, key=lambda p: -files[p])
    ranked_files, file_scores, by_file_bm25 = entity_files, dict(files), []
    if "bm25" in signals_used:  # whole-file BM25: a second opinion on files
        by_file_bm25 = [p for p in file_bm25(store, terms, code_only=True) if not is_test_path(p)]
        file_scores = fuse({"entities": entity_files, "files": by_file_bm25}, k=rrf_k)
        ranked_files = sorted(file_scores, key=lambda p: -file_scores[p])

    fn_hits = [h for h in hits if h.entity.kind in FUNCTION_KINDS]
    top_files = [p for p in ranked_files if not is_test_path(p)][:IN_FILE_FILES]
    in_file = _in_file_bm25(store, terms, top_files) if "bm25" in signals_used else {}
    everything = [h.entity.id for h in fn_hits] + [e for ids in in_file.values() for e in ids]
    outer = outermost_functions(store, list(dict.fromkeys(everything)))

    fn_scores: dict[str, float] = defaultdict(float)
    seen = defaultdict(int)
    for hit in fn_hits:
        fid = outer[hit.entity.id]
        seen[fid] += 1
        fn_scores[fid] += hit.score / seen[fid] ** 2
    # One more ranked list: the best files in order, each file's best functions in order.
    in_file_ranked: list[str] = []
    for path in top_files:
        in_file_ranked.extend(list(dict.fromkeys(outer[e] for e in in_file.get(path, [])))[:IN_FILE_DEPTH])
    for rank, fid in enumerate(in_file_ranked, start=1):
        fn_scores[fid] += 1.0 / (rrf_k + rank)
    file_rank = {p: i for i, p in enumerate(ranked_files, start=1)}
    for fid in fn_scores:
        fn_scores[fid] += FILE_SHARE / (rrf_k + file_rank.get(split_entity_id(fid)[1], 1000))
    functions = sorted(fn_scores, key=lambda f: -fn_scores[f])
    return Fusion(analysis, terms, hits, ranked_files, file_scores, entity_files, by_file_bm25, top_files,
                  in_file_ranked, functions, dict(fn_scores), outer)


def localize(
    index: Store | str | Path, query: str, limit: int = 50, signals: frozenset[str] | None = None, embedder=None,
    rrf_k: int = RRF_K,
) -> Localization:
    """Rank files and functions for a bug report: where its fix most likely goes (the benchmark's
    entry point, and `Navigator.localize`). `index`: an open Store, or the path of an index file.
    This is the hand-tuned fusion (`fusion_localize`); `nsccn.ranking.localize` re-ranks its
    candidates with the learned model.
    """
    started = time.perf_counter()
    opened = nullcontext(index) if isinstance(index, Store) else Store(index, readonly=True)
    with opened as store:
        fusion = fusion_localize(store, query, limit=limit, signals=signals, embedder=embedder, rrf_k=rrf_k)
    return Localization(fusion.files[:limit], fusion.functions[:limit], time.perf_counter() - started)
