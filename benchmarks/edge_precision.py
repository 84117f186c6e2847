"""Precision and recall of NSCCN's CALLS and INHERITS edges against a type-aware indexer's SCIP
index (scip-python, scip-typescript: each reference recorded with its precise definition).

    python benchmarks/edge_precision.py CHECKOUT=INDEX.scip [CHECKOUT=INDEX.scip ...] [--out FILE.json]

Make the SCIP index first, in the checkout (the indexers want a git work tree):

    npx @sourcegraph/scip-python index . --project-name NAME --project-version 0 --output NAME.scip
    npx @sourcegraph/scip-typescript index [--infer-tsconfig] --output NAME.scip   # JS: --infer-tsconfig

How an edge is judged. An edge records the line of its call site and its target entity. The SCIP
occurrences on that line whose source text is the target's name are the same reference as the
indexer saw it; each occurrence's symbol has a definition (a file and a line), mapped to the
innermost NSCCN entity of that name around it. The edge is right when one of them is its target,
wrong when they all point elsewhere (another entity, a local, a definition outside the
repository), and not judged when no occurrence of the name is on the line (`Foo()` also calls
`Foo.__init__`: that edge names a function the line does not spell) or the caller's file is not
in the SCIP index. Edges into `ext:`/`var:` targets are not judged.

Recall: every SCIP reference that is a call site (the name followed by `(`, or after `new`; not a
definition, `def f(` / `function f(` / an object literal's `then(x) {`, nor a type argument,
`new Set<Listener<S>>()`) and whose definition maps to a function, method or class of NSCCN's:
found when a CALLS edge from the same file and line reaches that entity, counted per confidence floor.

Results per language, per confidence band and per resolution kind; the same numbers for a
baseline come from running the same command against another checkout of NSCCN
(`PYTHONPATH=<that checkout>`), in the same session.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

from nsccn.indexing.indexer import index_repository
from nsccn.store import Store

BANDS = (("certain", 0.95, 1.01), ("high", 0.8, 0.95), ("guess", 0.5 + 1e-9, 0.8), ("low", 0.0, 0.5 + 1e-9))
_PY_SYMBOL = re.compile(r"^scip-python python \S+ \S+ `([^`]+)`/([\w#.()]+)$")
OVERLOAD_SPAN = 60  # lines from a first `@overload` stub to the body it declares
FLOORS = (0.0, 0.5 + 1e-9, 0.8)
_CALL_AFTER = re.compile(r"\s*(?:<[^()]*>)?\s*(?:\?\.)?\s*\(")
_NEW_BEFORE = re.compile(r"\bnew\s+(?:[\w$]+\.)*$")
# Not a call though a `(` follows: a definition (`def f(`, `function f(`, an overload the indexer
# records as a reference to the first), a method written in an object literal or class body
# (`then(onFulfilled) {`), a type argument (`new Set<Listener<S>>()`, `<S extends Api<T>>(`).
_DEFINED_BEFORE = re.compile(r"(?:\b(?:def|function|class|extends)\s+|<\s*)$")
_METHOD_HEAD = re.compile(r"^\s*(?:(?:async|static|get|set|public|private|protected)\s+)*\*?\s*$")


# -- a SCIP index, read with a minimal protobuf wire decoder (scip.proto field numbers) ----------

def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7


def _fields(buf: bytes):
    """(field number, wire type, value) of one message: varints as ints, length-delimited as bytes."""
    i, n = 0, len(buf)
    while i < n:
        key, i = _varint(buf, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(buf, i)
        elif wire == 2:
            size, i = _varint(buf, i)
            value, i = buf[i:i + size], i + size
        elif wire == 1:
            value, i = buf[i:i + 8], i + 8
        elif wire == 5:
            value, i = buf[i:i + 4], i + 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        yield field, wire, value


def _packed(value, wire: int) -> list[int]:
    if wire == 0:
        return [value]
    out, i = [], 0
    while i < len(value):
        v, i = _varint(value, i)
        out.append(v)
    return out


def read_scip(path: Path) -> dict[str, list[tuple[int, int, int, int, str, int]]]:
    """relative path -> occurrences (line, start char, end line, end char, symbol, roles), 0-based."""
    docs: dict[str, list] = {}
    for field, _, doc in _fields(path.read_bytes()):
        if field != 2:  # Index.documents
            continue
        rel, occs = "", []
        for f, w, v in _fields(doc):
            if f == 1:  # Document.relative_path
                rel = v.decode()
            elif f == 2:  # Document.occurrences
                rng, symbol, roles = [], "", 0
                for g, gw, gv in _fields(v):
                    if g == 1:
                        rng.extend(_packed(gv, gw))
                    elif g == 2:
                        symbol = gv.decode()
                    elif g == 3:
                        roles = gv
                if len(rng) == 3:
                    rng = [rng[0], rng[1], rng[0], rng[2]]
                if len(rng) == 4 and symbol:
                    occs.append((*rng, symbol, roles))
        docs[rel] = occs
    return docs


# -- the judgement -----------------------------------------------------------------------------

class Truth:
    """What the SCIP index says, mapped onto one NSCCN index's entities."""

    def __init__(self, root: Path, docs: dict[str, list], store: Store):
        self.root = root
        self.docs = docs
        self.lines: dict[str, list[str]] = {}
        self.entities: dict[str, list[tuple[int, int, str, str, str]]] = defaultdict(list)  # path -> (start, end, name, id, kind)
        for eid, kind, path, name, start, end in store.conn.execute(
                "SELECT id, kind, path, name, start_line, end_line FROM entities WHERE kind != 'module'"):
            self.entities[path].append((start, end, name, eid, kind))
        self.name_of = {e[3]: e[2] for ents in self.entities.values() for e in ents}
        self.by_qualname = {(path, q): eid for eid, path, q in store.conn.execute(
            "SELECT id, path, qualname FROM entities WHERE kind != 'module'")}
        self.module_files: dict[str, list[str]] = defaultdict(list)  # `pkg/mod.py` tail -> paths
        for (path,) in store.conn.execute("SELECT path FROM files WHERE language = 'python'"):
            stem = path[:-len("/__init__.py")] if path.endswith("/__init__.py") else path.rsplit(".", 1)[0]
            parts = stem.split("/")
            for i in range(len(parts)):
                self.module_files[".".join(parts[i:])].append(path)
        self.kind_of = {e[3]: e[4] for ents in self.entities.values() for e in ents}
        self.defs: dict[str, list[tuple[str, int, str]]] = defaultdict(list)  # symbol -> [(path, line, name)]
        self.at: dict[tuple[str, int], list[tuple[str, str, int]]] = defaultdict(list)  # (path, line) -> (text, symbol, start)
        for rel, occs in docs.items():
            text = self._lines(rel)
            for line, start, end_line, end, symbol, roles in occs:
                if end_line != line or line >= len(text):
                    continue
                if symbol.startswith("local "):  # numbered per document
                    symbol = f"{rel}#{symbol}"
                word = text[line][start:end]
                if roles & 1:
                    self.defs[symbol].append((rel, line + 1, word))  # overloads: several
                else:
                    self.at[(rel, line + 1)].append((word, symbol, start))
        self._entity_cache: dict[str, frozenset[str]] = {}

    def _lines(self, rel: str) -> list[str]:
        if rel not in self.lines:
            try:
                self.lines[rel] = (self.root / rel).read_text("utf-8", "replace").splitlines()
            except OSError:
                self.lines[rel] = []
        return self.lines[rel]

    def entity(self, symbol: str) -> frozenset[str]:
        """The NSCCN entities a SCIP symbol's definitions are: the innermost of its name around each."""
        found = self._entity_cache.get(symbol)
        if found is None:
            out = set()
            for path, line, name in self.defs.get(symbol, ()):
                best = None
                for start, end, ename, eid, _ in self.entities.get(path, ()):
                    if ename == name and start <= line <= end and (best is None or end - start < best[0]):
                        best = (end - start, eid)
                if best is None:  # `@overload` stubs: the indexer's definition is the first, ours the body
                    after = [(start, eid) for start, _, ename, eid, _ in self.entities.get(path, ())
                             if ename == name and line < start <= line + OVERLOAD_SPAN]
                    best = min(after) if after else None
                if best:
                    out.add(best[1])
            if not out and not self.defs.get(symbol):
                out |= self._installed_copy(symbol)
            if symbol.endswith("`<constructor>`()."):  # `new T()`: the indexer names the constructor, we the class too
                out |= self.entity(symbol[: -len("`<constructor>`().")])
            found = self._entity_cache[symbol] = frozenset(out)
        return found

    def _installed_copy(self, symbol: str) -> set[str]:
        """A symbol the indexer found in an installed copy of this very package (site-packages, a
        src/ layout not installed editable): the repository's definition of the same module and
        qualified name."""
        m = _PY_SYMBOL.match(symbol)
        if m is None:
            return set()
        module, desc = m.group(1), m.group(2)
        qualname = re.sub(r"\(\)\.$|[#.]$", "", desc).replace("().", ".").replace("#", ".")
        paths = self.module_files.get(module, ())
        if len(paths) != 1:
            return set()
        eid = self.by_qualname.get((paths[0], qualname))
        return {eid} if eid else set()

    def judge(self, path: str, line: int, target: str) -> bool | None:
        name = self.name_of.get(target)
        if name is None or path not in self.docs:
            return None
        hits = [sym for word, sym, _ in self.at.get((path, line), ()) if word == name]
        # A local that is none of our definitions is an alias (`var f = require('./m').f`): the
        # indexer stops there, so it says nothing about where the call lands.
        hits = [sym for sym in hits if self.entity(sym) or "#local " not in sym]
        if not hits:
            return None
        return any(target in self.entity(sym) for sym in hits)

    def call_sites(self):
        """(path, line, target entity) of every SCIP reference that is a call of one of ours."""
        for (path, line), occs in self.at.items():
            text = self._lines(path)[line - 1]
            for word, symbol, start in occs:
                end = start + len(word)
                if not (_CALL_AFTER.match(text, end) or _NEW_BEFORE.search(text[:start])):
                    continue
                if _DEFINED_BEFORE.search(text[:start]) or (
                        _METHOD_HEAD.match(text[:start]) and text.rstrip().endswith("{")):
                    continue
                ours = frozenset(e for e in self.entity(symbol) if self.kind_of.get(e) in ("func", "method", "class"))
                if ours:
                    yield path, line, ours


def band_of(conf: float) -> str:
    return next(name for name, lo, hi in BANDS if lo <= conf < hi)


def _ratio(good: int, n: int) -> float | None:
    return round(good / n, 4) if n else None


def measure(root: Path, scip: Path) -> dict:
    docs = read_scip(scip)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "index.db"
        t0 = time.perf_counter()
        index_repository(root, db_path=db, workers=1)
        wall = time.perf_counter() - t0
        with Store(db, readonly=True) as store:
            truth = Truth(root, docs, store)
            language = dict(store.conn.execute("SELECT path, language FROM files"))
            edges = [e for e in store.all_edges() if e.relation in ("CALLS", "INHERITS")]
    tally: dict[tuple, Counter] = defaultdict(Counter)  # (relation, language, key kind, key) -> judged/right
    wrong_samples: list[dict] = []
    found: dict[tuple[str, int, str], float] = {}
    for e in edges:
        if e.path not in docs:
            continue
        lang = language.get(e.path, "?")
        if e.relation == "CALLS":
            key = (e.path, e.line, e.target)
            found[key] = max(found.get(key, 0.0), e.confidence)
        verdict = truth.judge(e.path, e.line, e.target)
        kinds = (("band", band_of(e.confidence)), ("resolution", e.resolution.split(":")[0]), ("all", "all"))
        for kind, key in kinds:
            c = tally[(e.relation, lang, kind, key)]
            c["edges"] += 1
            if verdict is None:
                continue
            c["judged"] += 1
            c["right"] += verdict
        if verdict is False and len(wrong_samples) < 400:
            wrong_samples.append({"path": e.path, "line": e.line, "source": e.source, "target": e.target,
                                  "confidence": e.confidence, "resolution": e.resolution})
    recall: dict[str, Counter] = defaultdict(Counter)
    for path, line, ours in set(truth.call_sites()):
        lang = language.get(path, "?")
        c = recall[lang]
        c["sites"] += 1
        conf = max((found[(path, line, eid)] for eid in ours if (path, line, eid) in found), default=None)
        for floor in FLOORS:
            if conf is not None and conf >= floor:
                c[f"found>={floor:.1f}"] += 1
    out: dict = {"repository": root.name, "index_seconds": round(wall, 1), "scip_documents": len(docs),
                 "precision": {}, "recall": {}}
    for (relation, lang, kind, key), c in sorted(tally.items()):
        out["precision"].setdefault(relation, {}).setdefault(lang, {}).setdefault(kind, {})[key] = {
            "edges": c["edges"], "judged": c["judged"], "right": c["right"], "precision": _ratio(c["right"], c["judged"])}
    for lang, c in sorted(recall.items()):
        out["recall"][lang] = {"sites": c["sites"], **{
            f">={floor:.1f}": _ratio(c[f"found>={floor:.1f}"], c["sites"]) for floor in FLOORS}}
    out["wrong_samples"] = wrong_samples
    return out


def at_least(report: dict, relation: str, lang: str, floor: float) -> dict:
    """Precision of the edges at or above a confidence floor, from the band tallies."""
    bands = report["precision"].get(relation, {}).get(lang, {}).get("band", {})
    judged = sum(v["judged"] for k, v in bands.items() if dict((b[0], b[1]) for b in BANDS)[k] >= floor - 1e-9)
    right = sum(v["right"] for k, v in bands.items() if dict((b[0], b[1]) for b in BANDS)[k] >= floor - 1e-9)
    return {"judged": judged, "right": right, "precision": _ratio(right, judged)}


def summary(reports: list[dict]) -> str:
    lines = ["| repository | language | CALLS judged | precision all | precision >=0.8 | judged >=0.8 | "
             "recall sites | recall any | recall >0.5 | recall >=0.8 | INHERITS precision |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in reports:
        for lang in sorted(set(r["precision"].get("CALLS", {})) | set(r["recall"])):
            calls = r["precision"].get("CALLS", {}).get(lang, {}).get("all", {}).get("all", {})
            hi = at_least(r, "CALLS", lang, 0.8)
            inh = r["precision"].get("INHERITS", {}).get(lang, {}).get("all", {}).get("all", {})
            rec = r["recall"].get(lang, {})
            lines.append(f"| {r['repository']} | {lang} | {calls.get('judged', 0)} | {calls.get('precision')} | "
                         f"{hi['precision']} | {hi['judged']} | {rec.get('sites', 0)} | {rec.get('>=0.0')} | "
                         f"{rec.get('>=0.5')} | {rec.get('>=0.8')} | {inh.get('precision')} ({inh.get('judged', 0)}) |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pairs", nargs="+", help="CHECKOUT=INDEX.scip")
    ap.add_argument("--out", help="write the reports (with samples of wrong edges) as JSON here")
    args = ap.parse_args(argv)
    reports = []
    for pair in args.pairs:
        checkout, sep, scip = pair.partition("=")
        if not sep:
            ap.error(f"expected CHECKOUT=INDEX.scip, got {pair!r}")
        root, index = Path(checkout).resolve(), Path(scip)
        if not root.is_dir() or not index.is_file():
            ap.error(f"no checkout {root} or no SCIP index {index}")
        reports.append(measure(root, index))
        print(f"{root.name}: indexed in {reports[-1]['index_seconds']} s", file=sys.stderr)
    print(summary(reports))
    if args.out:
        Path(args.out).write_text(json.dumps(reports, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
