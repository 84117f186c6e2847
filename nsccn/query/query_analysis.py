"""Query analysis: what a query (a name, a phrase, a whole bug report) says, read once: its terms
(most telling first, with how often the report says each), the code identifiers it writes, the
file paths it names and the stack-trace frames it pastes. Every search stream reads this, never
the raw text; a query is untrusted input, so what is read and kept is capped and an answer says
what was cut (`QueryAnalysis.capped`).
"""

from __future__ import annotations

import builtins
import keyword
import re
from collections import defaultdict
from dataclasses import dataclass, field, replace
from functools import lru_cache

from nsccn.query.stacktrace import PYTHON_FRAME, other_frames
from nsccn.text import split_identifier

MAX_QUERY_TERMS = 64
# FTS5's bm25() sums over the phrases of a query, so a term listed twice weighs twice: a word the
# report repeats is what it is about. Capped so one word said ten times cannot drown the rest.
MAX_TERM_REPEATS = 3

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
    languages' traces (`nsccn.query.stacktrace`), then Python tracebacks'."""
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
