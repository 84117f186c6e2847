"""Change impact: what a diff touches (`changed`), what depends on it (`impacted`), which tests
reach it (`tests`, with a command to run them), and a short risk summary.

`changed` maps each hunk's lines onto the entities of the side they belong to: removed lines onto
the file as it was, added lines onto the file as it is, both parsed on the spot (so an entity that
was deleted is found as it was, and the index need not be current). An entity found on both sides
changed its signature (signature or decorators differ), only its docstring (every touched line lies
in it: nothing is walked from it), or its body.

`impacted` walks the graph upstream from the changed entities: callers (CALLS), subclasses
(INHERITS) and methods of subclasses that override a changed method, the callers of the method a
changed override overrides (dynamic dispatch: `self.m()` written in the base runs the override), importers (IMPORTS, not
followed further: an import alone runs nothing), the readers of what a changed entity MUTATES
(state coupling), the global table that holds a changed function (`_rules = [("text", rules.text)]`) and
whoever reads it (`nsccn.languages.global_tables`), the class a changed method belongs to (those who construct or subclass it may
call it), the function a changed nested function or class is defined in, tests a pytest fixture is injected
into (`nsccn.graph.fixtures`), and test code whose strings spell a reached entity's dotted name
(`nsccn.graph.mentions`). Each entity keeps the
shortest path that reaches it (the most confident among the shortest), its distance and the
path's confidence (the product of its edges').
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from nsccn import languages
from nsccn.graph import fixtures, mentions
from nsccn.graph.inert import CodeLines, inert_lines
from nsccn.graph.recorded import Recorded, codes_then, fingerprints, line_codes, ran_by
from nsccn.reading.changes import Change
from nsccn.reading.coverage_file import CoverageFileError, lines_of_file
from nsccn.reading.diff import FileDiff
from nsccn.store import EdgeRow, EntityRow, Store
from nsccn.graph.testrun import (is_test, is_test_file_unit, is_test_path, js_runner, run_command, runner_of, runner_rule,
                                  tests_among)
from nsccn.indexing.resolve import MAX_AMBIGUOUS_METHOD
from nsccn.languages.receivers import PASSES, SUBCLASSES

DEFAULT_DEPTH = 3  # hops listed under `impacted` (as `trace`)
# hops a test may be from a changed entity (6 halves click's selection and loses an attrs commit; 9 over 8:
# docs/impact.md); the command line's and MCP's default (`serving.params`, kept equal by a test)
TEST_DEPTH = 9
MAX_NODES = 4_000  # entities one walk reaches at most
MAX_CHANGED = 2_000  # changed entities mapped at most
MEMBER_CONFIDENCE = 0.5  # a method's class: whoever builds or subclasses it may call the method
DISPATCH_CONFIDENCE = 0.8  # a caller of the overridden method runs this override when self is the subclass
GLOBAL_CONFIDENCE = 0.8  # a global its module's top-level code sets: not every one holds what that code built
NESTED_CONFIDENCE = 0.8  # a nested function's enclosing one: it defines it, and mostly calls or registers it
PASSES_CONFIDENCE = 0.8  # handed to a call as a value: mostly built or called there, not always
IMPORTER_TEST_CONFIDENCE = 0.3  # a test file importing the changed module: about it, not every test runs the change
UNKNOWN_TEST_CONFIDENCE = 0.3  # a test recorded per-test coverage knows nothing of: run, to be safe
# a test file of which the answer reaches at least this share of the tests is run whole: its other tests
# test the same code through paths no edge shows (fixtures, generated tests, dispatch by name; docs/impact.md)
WHOLE_FILE_SHARE = 0.1
WHOLE_FILE_CONFIDENCE = 0.3
# a runner's suite of which the answer reaches at least this share is run whole: past it, selecting saves
# little and what it leaves out reaches the change through what no edge shows (0.5 was as safe on every
# sample and ran more: docs/impact.md)
WHOLE_SUITE_SHARE = 0.7
WHOLE_SUITE_CONFIDENCE = 0.3
NAMED_BY_TESTS_MAX = 12  # `x.m()` in a test, x of unknown type: m defined more often than this names nothing
NAMED_BY_TEST_CONFIDENCE = 0.5  # shared among the classes that define the name
# a node reached last by these walks on only partly (an import runs nothing further; a method's class
# is not what creating a subclass of it runs): a later path of another relation walks on from it
PARTIAL = ("IMPORTS", "HAS_MEMBER")
STATE_RELATIONS = ("READS_CONFIG",)  # who reads what a changed entity MUTATES
DEPENDENT_RELATIONS = ("CALLS", "INHERITS", "IMPORTS", "READS_CONFIG")  # the edges into a node `of` follows
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# a docstring's or doc comment's delimiters around a line's text: r'''...''', /** ... */, /// ...
_DOC_MARKS = re.compile(r"^[rRuUbB]{0,2}(?=[\"\'])")
_DOC_EDGE = " \t\"'/*#!"


@dataclass
class Side:
    """The entities of one side of a file: parsed from its text, or, without it, the index's."""

    entities: list
    parsed: bool
    # () -> (the module's globals, line -> the global whose table holds a name there): read only for
    # a change's module-level lines, so a side whose entities came without them parses for them then
    facts: Callable[[], tuple[set[str], dict[int, str]]] = lambda: (set(), {})
    code: CodeLines | None = None  # the side's text parsed here: the inert check's too

    @cached_property
    def _module(self) -> tuple[set[str], dict[int, str]]:
        return self.facts()

    @property
    def globals_(self) -> set[str]:
        return self._module[0]

    @property
    def held_at(self) -> dict[int, str]:
        return self._module[1]


def _side(store: Store, path: str | None, data: bytes | None, lines: list[int] | None = None) -> Side:
    """`lines`: the lines of this side the change touches (None: all of them, a file added or deleted)."""
    if path is None:
        return Side([], True)
    if data is not None:
        indexed = _indexed_side(store, path, data, lines) if lines is not None else None
        return indexed if indexed is not None else _parsed_side(path, data)
    return Side(store.entities_in_file(path), False)


def _parsed_side(path: str, data: bytes) -> Side:
    """A side parsed from its text: a Python file's definitions alone (`parse_definitions`), the
    rest of the parse made only if its module-level lines changed."""
    from nsccn.reading.extract import parse_definitions, parse_file

    def facts(pf=None) -> tuple[set[str], dict[int, str]]:
        pf = pf or parse_file(path, data)
        return set(pf.module_globals), {r.line: r.source for r in pf.refs if r.source.startswith("var:")}

    code = CodeLines(path, data)
    entities = parse_definitions(path, data, code.tree) if code.python else None
    if entities is not None:
        return Side(entities, True, facts, code)
    pf = parse_file(path, data)
    return Side(list(pf.entities), True, lambda: facts(pf), code)


def _indexed_side(store: Store, path: str, data: bytes, lines: list[int]) -> Side | None:
    """The side as the index holds it, where that maps `lines` as parsing `data` would (a 4,000-line
    file parses in ~50 ms): a Python file the index holds with these very bytes (readers refuse an
    index other extraction code made). A name defined twice is one entity there, the last, where
    the parser gives each (a changed line of a property's getter is the getter's, not its class's):
    no line may lie in a definition of such a name, each found by its CONTAINS reference (the
    parser makes one a definition), up to the next definition beside it or the end of what holds
    it. Elsewhere the entities a line lies in are the same, and of two as long, identical spans,
    the index orders them as written."""
    from nsccn.reading.extract import content_hash

    held = store.file(path)
    if held is None or held["language"] != "python" or held["content_hash"] != content_hash(data):
        return None
    refs = store.refs(paths=[path])
    defined = [(source, target, line) for _rowid, _path, source, relation, target, line, _scope in refs
               if relation == "CONTAINS"]
    entities = store.entities_in_file(path)
    if len(entities) != len({target for _source, target, _line in defined}) + 1:  # + 1: the module
        return None
    seen: dict[str, int] = {}
    for _source, target, _line in defined:
        seen[target] = seen.get(target, 0) + 1
    spans = {e.id: e for e in entities}
    for source, target, start in defined:
        if seen[target] > 1:
            ends = [line for s, _t, line in defined if s == source and line > start]
            if seen.get(source, 0) <= 1 and source in spans:  # what holds it, as the parser saw it
                ends.append(spans[source].end_line + 1)
            end = min(ends, default=None)
            if any(start <= n and (end is None or n < end) for n in lines):
                return None
    held_at = {line: source for _rowid, _path, source, _relation, _target, line, _scope in refs if source.startswith("var:")}
    return Side(entities, True, lambda: (set(_module_globals(store, path)), held_at))


def _marked(fd: FileDiff, old: bool):
    """(line, text) of each line of one side a diff removes (`old`) or adds."""
    for h in fd.hunks:
        line = h.old_start if old else h.new_start
        mark, skip = ("-", "+") if old else ("+", "-")
        for body in h.lines:
            m = body[:1]
            if m == skip:
                continue
            if m == mark:
                yield line, body[1:]
            line += 1


def _lines_marked(fd: FileDiff, old: bool) -> list[int]:
    """The lines of one side a diff removes (`old`) or adds."""
    return [line for line, _ in _marked(fd, old)]


def _module_globals(store: Store, path: str) -> list[str]:
    row = store.conn.execute("SELECT module_globals FROM files WHERE path=?", (path,)).fetchone()
    return json.loads(row[0]) if row and row[0] else []


def _innermost(entities: list, line: int):
    best = None
    for e in entities:
        # of two as long, a definition beats its module (a file that is one function and nothing else)
        if e.start_line <= line <= e.end_line and (best is None or (e.end_line - e.start_line, e.kind == "module")
                                                    < (best.end_line - best.start_line, best.kind == "module")):
            best = e
    return best


def _touched(fd: FileDiff, side: Side, old: bool) -> dict[str, tuple[object, list[int], list[str]]]:
    """Entity id -> (entity, the lines of this side the change touches in it, their text)."""
    out: dict[str, tuple[object, list[int], list[str]]] = {}
    for line, text in _marked(fd, old):
        if text.strip():  # a blank line changes nothing
            e = _innermost(side.entities, line)
            if e is not None:
                item = out.setdefault(e.id, (e, [], []))
                item[1].append(line)
                item[2].append(text)
    return out


def changed_entities(store: Store, change: Change, files: list[dict]) -> tuple[list[dict], list[str]]:
    """The entities the change touches, and the module globals whose defining lines it touches
    (`var:path:NAME`, whose readers are impacted)."""
    changed: list[dict] = []
    globals_touched: list[str] = []
    for fd, info in zip(change.diff.files, files):
        if fd.binary or len(changed) >= MAX_CHANGED:
            continue
        old_data = change.old(fd) if fd.old_path else None
        new_data = change.new(fd) if fd.new_path else None
        both = fd.old_path is not None and fd.new_path is not None  # (a whole file lists its entities in the parser's order)
        old_side = _side(store, fd.old_path, old_data, _lines_marked(fd, True) if both else None)
        new_side = _side(store, fd.new_path, new_data, _lines_marked(fd, False) if both else None)
        if not (old_side.parsed and new_side.parsed):
            info["mapped_on"] = "the index (the file's text on that side could not be read)"
        if fd.old_path is None:  # a new file: all of it is added
            old_t, new_t = {}, {e.id: (e, [e.start_line], []) for e in new_side.entities}
        elif fd.new_path is None:
            old_t, new_t = {e.id: (e, [e.start_line], []) for e in old_side.entities}, {}
        else:
            old_t, new_t = _touched(fd, old_side, True), _touched(fd, new_side, False)
        inert_old, inert_new, old_code = _inert_lines(fd, old_data, new_data, old_side.code, new_side.code)
        old_by_key = {(e.kind, e.qualname): e for e in old_side.entities}
        new_by_key = {(e.kind, e.qualname): e for e in new_side.entities}
        seen: set[tuple[str, str]] = set()
        for touched, other, is_old in ((new_t, old_by_key, False), (old_t, new_by_key, True)):
            for eid, (e, lines, texts) in touched.items():
                key = (e.kind, e.qualname)
                if key in seen:
                    continue
                seen.add(key)
                counterpart = other.get(key)
                if fd.old_path is None or (not is_old and counterpart is None):
                    what = "added"
                elif fd.new_path is None or (is_old and counterpart is None):
                    what = "deleted"
                else:
                    before, after = (e, counterpart) if is_old else (counterpart, e)
                    sig_changed = (" ".join(before.signature.split()) != " ".join(after.signature.split())
                                   or list(before.decorators) != list(after.decorators))
                    what = "signature" if sig_changed and e.kind != "module" else "body"
                    if what == "body" and _docstring_only(before, after, old_t, new_t):
                        what = "docstring"
                    elif _all_in(before, old_t, inert_old) and _all_in(after, new_t, inert_new):
                        what = "inert"  # comments, a signature's annotations: the code reads the same
                now = e if not is_old else (counterpart or e)
                was = e if is_old else (counterpart or e)
                item = {"id": now.id, "kind": e.kind, "change": what, "file": now.path, "line": now.start_line}
                if was.id != now.id:
                    item["was"] = was.id
                if what == "body" and e.kind in ("func", "method") and old_data is not None:
                    if old_code is None:
                        old_code = CodeLines(fd.old_path, old_data)
                    item[OLD_SIDE] = _old_side(fd, was, old_t, old_code)
                changed.append(item)
        for touched, side in ((old_t, old_side), (new_t, new_side)):  # module-level lines: the globals they set
            inert = inert_old if side is old_side else inert_new
            for e, lines, texts in touched.values():
                if e.kind == "module" and side.globals_:
                    texts = [t for n, t in zip(lines, texts) if n not in inert]
                    names = set().union(*(set(_IDENT.findall(t)) for t in texts)) & side.globals_
                    globals_touched += [f"var:{e.path}:{g}" for g in sorted(names)]
                    # a line inside a table's literal (`("t2", rules.text),`) names no global: the table's
                    globals_touched += sorted({side.held_at[n] for n in lines if n in side.held_at})
        if fd.status == "renamed" and not fd.hunks:
            rows = [e for e in old_side.entities if e.kind == "module"] or [e for e in new_side.entities if e.kind == "module"]
            for e in rows[:1]:
                changed.append({"id": f"module:{fd.new_path}:{e.qualname}", "kind": "module", "change": "moved",
                                "file": fd.new_path, "line": 1, "was": e.id})
    return changed, list(dict.fromkeys(globals_touched))


# a changed item's key for where its function stood on the old side (read by `RecordedTests`, not answered)
OLD_SIDE = "_old_side"


def _old_side(fd: FileDiff, was, old_t: dict, old_code: CodeLines) -> dict:
    """A function's span on the old side, the code of each of its lines there (`line_codes`), and the
    old-side lines the change touches in it: those it removes, and on each side of where it only adds (as
    a line-level truth counts)."""
    lines = set(old_t[was.id][1]) if was.id in old_t else set()
    for removed, _added, at in _blocks(fd):
        if not removed:
            lines |= {at - 1, at}
    return {"start": was.start_line, "end": was.end_line,
            "codes": line_codes(fd.old_path, old_code.data, was.start_line, was.end_line, old_code),
            "lines": sorted(n for n in lines if was.start_line <= n <= was.end_line)}


def _inert_lines(fd: FileDiff, old_data: bytes | None, new_data: bytes | None, old_code: CodeLines | None = None,
                 new_code: CodeLines | None = None) -> tuple[set[int], set[int], CodeLines | None]:
    """The lines of the change's blocks (a run of removed and added lines) whose code reads the
    same on both sides (`nsccn.graph.inert`), and the old side parsed; `old_code`, `new_code`: a side
    parsed already."""
    if old_data is None or new_data is None or not fd.hunks:
        return set(), set(), old_code
    old_code = old_code or CodeLines(fd.old_path, old_data, new_code)
    return (*inert_lines(old_code, new_code or CodeLines(fd.new_path, new_data, old_code),
                         [(removed, added) for removed, added, _at in _blocks(fd)]), old_code)


def _blocks(fd: FileDiff) -> list[tuple[list[int], list[int], int]]:
    """The change's blocks (a run of removed and added lines between context lines): the old lines it
    removes, the new lines it adds, and the old line it starts at (where a block that only adds goes)."""
    blocks: list[tuple[list[int], list[int], int]] = []
    for h in fd.hunks:
        old_line, new_line, block = h.old_start, h.new_start, None
        for body in h.lines:
            m = body[:1]
            if m == "-" or m == "+":
                if block is None:
                    block = ([], [], old_line)
                    blocks.append(block)
                if m == "-":
                    block[0].append(old_line)
                    old_line += 1
                else:
                    block[1].append(new_line)
                    new_line += 1
            elif m == " ":
                block = None
                old_line += 1
                new_line += 1
    return blocks


def _all_in(e, touched: dict, lines: set[int]) -> bool:
    hit = touched.get(e.id)
    return hit is None or all(n in lines for n in hit[1])


def _docstring_only(before, after, old_t: dict, new_t: dict) -> bool:
    """Whether every line the change touches in an entity lies in its docstring (on each side)."""
    sides = ((before, old_t.get(before.id)), (after, new_t.get(after.id)))
    texts = [(e, _DOC_MARKS.sub("", t.strip()).strip(_DOC_EDGE)) for e, hit in sides if hit for t in hit[2]]
    return bool(texts) and all(e.docstring and t in e.docstring for e, t in texts)


# -- the walk upstream -------------------------------------------------------------------------------


@dataclass
class Reach:
    distance: int
    confidence: float
    path: list  # [id, (relation, confidence, id), ...]: from the changed entity to this one


class _Reads:
    """One kind of read from the index, by key, each key read once per answer: `fill` reads many
    keys in one go (a walk's frontier), `get` one that nothing read ahead."""

    def __init__(self, read_many):
        self.read_many = read_many  # keys -> {key: value} for each of them
        self.got: dict = {}

    def fill(self, keys) -> None:
        missing = [k for k in dict.fromkeys(keys) if k not in self.got]
        if missing:
            self.got.update(self.read_many(missing))

    def get(self, key):
        if key not in self.got:
            self.fill([key])
        return self.got[key]


class Dependents:
    """What depends on an entity, one step upstream, with the step's relation and confidence."""

    def __init__(self, store: Store):
        self.store = store
        self._rows = _Reads(self._read_rows)
        self._subs: dict[str, list[tuple[str, float]]] = {}
        self._hierarchy: dict[tuple[str, bool], tuple[list[tuple[str, float, str]], dict[str, int] | None]] = {}  # `_classes`
        self._owners: dict[str, dict[str, str]] = {}  # a method name -> class id -> its method of it (`_defined_in`)
        self._mentions: mentions.Mentions | None = None
        self._names_seen: dict[str, list[tuple[str, str, float]]] = {}
        self._importer_tests: dict[tuple[str, bool], list[EntityRow]] = {}
        self._file_rows = _Reads(store.entities_in_files)  # a file's entities
        # a test file's functions and methods that have decorators or defaults (evaluated by their scope)
        self._members = _Reads(lambda paths: store.entities_in_files(paths, parameterized=True))
        self._registries: dict[str, list[str]] = {}  # a decorator's function -> the globals it fills
        self._module_calls: dict[str, list] = {}  # a module -> its CALLS edges (its decorators among them)
        self._into = _Reads(lambda ids: store.edges_to_many(ids, DEPENDENT_RELATIONS))
        self._decorators: dict[str, list[EdgeRow]] = {}  # `_decorating`
        self._mutates = _Reads(lambda ids: store.edges_from_many(ids, ("MUTATES",)))
        self._state_readers = _Reads(lambda ids: store.edges_to_many(ids, STATE_RELATIONS))
        self._subclass_edges = _Reads(lambda ids: store.edges_to_many(ids, ("INHERITS",)))
        self._base_edges = _Reads(lambda ids: store.edges_from_many(ids, ("INHERITS",)))
        # a name -> the refs whose target ends in it: those that pass it as a value, those that call it
        self._passing = _Reads(lambda names: store.refs_by_tail(names, (PASSES, SUBCLASSES)))
        self._calling = _Reads(lambda names: store.refs_by_tail(names, ("CALLS",)))
        self._method_counts = _Reads(store.methods_named)  # a name -> how many methods have it
        self._calls_from = _Reads(lambda ids: store.edges_from_many(ids, ("CALLS",)))

    def _read_rows(self, ids: list[str]) -> dict[str, EntityRow | None]:
        found = self.store.entities(ids)
        return {i: found.get(i) for i in ids}

    def row(self, eid: str) -> EntityRow | None:
        got = self._rows.got  # (asked 50,000 times an answer: most read ahead)
        return got[eid] if eid in got else self._rows.get(eid)

    def rows(self, ids) -> dict[str, EntityRow]:
        """The rows of those of `ids` the index holds (what the walk read ahead is not read again)."""
        self._rows.fill(ids)
        got = self._rows.got
        return {i: got[i] for i in ids if got[i] is not None}

    def read_ahead(self, nodes: list[str]) -> None:
        """Read what `of` reads for each of a frontier's nodes, all of them at once: a query or two
        a kind of read, where one node at a time made ten or more each (a central sympy function's
        walk: 27,500 statements, now 540). `of` then finds each read done; its answers are the same."""
        self._into.fill(nodes)
        self._members.fill(e.path for n in nodes for e in self._decorating(n))
        own = [n for n in nodes if not n.startswith(("var:", "attr:"))]  # `of` reads no more for those
        self._mutates.fill(own)
        self._state_readers.fill(e.target for n in own for e in self._mutates.get(n))
        self._rows.fill(own)
        rows = [r for r in map(self.row, own) if r is not None]
        self._read_dispatch([r for r in rows if r.kind == "method" and r.parent and r.parent.startswith("class:")])
        names = [r.name for r in rows if r.kind == "method" and not r.name.startswith("__")]
        self._method_counts.fill(names)
        self._calling.fill(n for n in names if self._named_by_many(n))
        self._passing.fill(r.name for r in rows if r.kind in ("class", "func") and r.parent
                           and r.parent.startswith("module:"))

    def _read_dispatch(self, methods: list[EntityRow], depth: int = 4) -> None:
        """Read the class hierarchy `_bases` and `_subclasses` follow from these methods' classes, a
        level at a time, then the methods of each one's name there (dispatch, overrides)."""
        classes = up = down = list(dict.fromkeys(r.parent for r in methods))
        for _ in range(depth):
            self._base_edges.fill(up)
            self._subclass_edges.fill(down)
            up = list(dict.fromkeys(e.target for c in up for e in self._base_edges.get(c) if e.target.startswith("class:")))
            down = list(dict.fromkeys(e.source for c in down for e in self._subclass_edges.get(c)))
        self._rows.fill(c for cls in classes for c, _ in self._bases(cls) + self._subclasses(cls))
        # of the methods their classes might define (a central sympy change: 16,000, 13,500 of them not
        # there), those the index holds, by their names (3,000)
        names = [n for n in dict.fromkeys(r.name for r in methods) if n not in self._owners]
        self._owners.update(self.store.method_owners(names))

    def _classes(self, cls: str, up: bool) -> tuple[list[tuple[str, float, str]], dict[str, int] | None]:
        """(class id, the path's confidence, `method:PATH:QUALNAME.`) of each base (`up`) or subclass
        of `cls` the index holds, nearest first, and where each class id is in that list if every
        one is Python's, else None (the same for every method of `cls` the walk reaches)."""
        key = (cls, up)
        if key not in self._hierarchy:
            rows = [(c, conf, k) for c, conf in (self._bases(cls) if up else self._subclasses(cls))
                    if (k := self.row(c)) is not None]
            python = all(languages.language_for(k.path) == "python" for _c, _conf, k in rows)
            self._hierarchy[key] = ([(c, conf, f"method:{k.path}:{k.qualname}.") for c, conf, k in rows],
                                    {c: i for i, (c, _conf, _k) in enumerate(rows)} if python else None)
        return self._hierarchy[key]

    def _defined_in(self, cls: str, name: str, up: bool) -> list[tuple[str, float]]:
        """(method id, the path's confidence) of `name` in each base (`up`) or subclass of `cls` that
        defines it, nearest first. A Python method's id is its class's path and qualname and its name,
        and its parent its class: where `read_ahead` read the methods of that name, those are they
        (looked for among the fewer: sympy's `Expr` has 900 subclasses, a name a few methods)."""
        classes, where = self._classes(cls, up)
        owners = self._owners.get(name)  # class id -> its method of that name
        if where is not None and owners is not None:
            if len(owners) < len(classes):
                return [(owners[classes[i][0]], classes[i][1]) for i in sorted(where[c] for c in owners if c in where)]
            return [(owners[c], conf) for c, conf, _prefix in classes if c in owners]
        return [(prefix + name, conf) for _c, conf, prefix in classes if self.row(prefix + name) is not None]

    def test_count(self, path: str) -> int:
        """How many tests a runner collects from a file: `tests_in_file`'s, read without the rows."""
        return self.read_test_counts([path])[path]

    def read_test_counts(self, paths) -> dict[str, int]:
        """File -> its test count, read for those not counted yet; kept per index version: a server's
        next answer reaches the same test files (a central sympy change: 30 ms)."""
        kept = self.store.derived("impact.test_counts", dict)
        functions: dict[str, list[tuple[str, str, str]]] = {p: [] for p in paths if p not in kept}
        if functions:
            for path, kind, _qualname, name, decorators in self.store.functions_in_files(list(functions)):
                functions[path].append((kind, name, decorators))
            kept.update({p: tests_among(p, fs) for p, fs in functions.items()})
        return kept

    def _decorating(self, node: str) -> list[EdgeRow]:
        """The edges into `node` that `_decorates` keeps (looked at by `read_ahead`, then `of`)."""
        if node not in self._decorators:
            self._decorators[node] = [e for e in self._into.get(node) if self._decorates(e)]
        return self._decorators[node]

    @staticmethod
    def _decorates(e: EdgeRow) -> bool:
        """An edge from a test file's class or module body: it may be a test's decorator or default."""
        return e.relation in ("CALLS", "IMPORTS") and e.source.startswith(("class:", "module:")) and is_test_path(e.path)

    def of(self, node: str, changed: bool = False) -> list[tuple[str, str, float]]:
        """Who depends on `node`, one step (`changed`: node is what the change touched itself)."""
        store = self.store
        out: list[tuple[str, str, float]] = []
        edges = self._into.get(node)
        for e in edges:
            if e.source != node:
                out.append((e.source, e.relation, e.confidence))
        name = node.rsplit(":", 1)[-1].rsplit(".", 1)[-1]
        for e in self._decorating(node):  # what a test's decorator calls or names, evaluated by the class or module defining it
            for test in fixtures.decorated(self._members_of(e.path), e.source, e.line, name, e.relation == "IMPORTS"):
                out.append((test.id, "DECORATES", fixtures.DECORATOR_CONFIDENCE))
        if node.startswith(("var:", "attr:")):
            return out
        for e in self._mutates.get(node):  # state coupling: who reads what it writes
            for r in self._state_readers.get(e.target):
                if r.source != node:
                    out.append((r.source, f"READS({e.target})", e.confidence * r.confidence))
        row = self.row(node)
        if row is None:
            return out
        if row.parent and row.parent.startswith(("func:", "method:")):
            # a function or class defined inside a function (a view, a callback registered by a decorator,
            # a stand-in class): no call names it, but the enclosing function defines it each time it runs
            out.append((row.parent, "DEFINES", NESTED_CONFIDENCE))
        if row.kind == "method" and row.parent and row.parent.startswith("class:"):
            out.append((row.parent, "HAS_MEMBER", MEMBER_CONFIDENCE))
            # dynamic dispatch: `self.m()` written in a base runs this m; the nearest base that defines it
            # is the one whose callers dispatch
            for inherited, conf in self._defined_in(row.parent, row.name, up=True)[:1]:
                out.append((inherited, "DISPATCHES_TO", conf * DISPATCH_CONFIDENCE))
            for over, conf in self._defined_in(row.parent, row.name, up=False):
                out.append((over, "OVERRIDES", conf))
        if row.kind == "method":
            out += self._named_by_tests(row)
        elif row.kind in ("class", "func") and row.parent and row.parent.startswith("module:"):
            out += self._passers(row)
            if row.decorators:
                out += self._registrars(row)
        for r in fixtures.consumers(store, row):
            out.append((r.id, "USES_FIXTURE", fixtures.CONFIDENCE))
        for source in self._string_mentions().mentioners(row):  # a test's string names it: `locate_app("pkg.app")`
            out.append((source, "MENTIONS", mentions.CONFIDENCE))
        if row.kind == "module" and not changed:
            # its top-level code runs what the walk came from: the globals it sets may hold what that
            # built (`cli = Group(...)`), and whoever imports one gets it
            for name in self._globals(row.path):
                out.append((f"var:{row.path}:{name}", "ASSIGNS", GLOBAL_CONFIDENCE))
        if row.kind == "module" and is_test_path(row.path):
            for r in fixtures.parametrized(store, row):
                out.append((r.id, "PARAMETRIZES", fixtures.PARAMETRIZE_CONFIDENCE))
        return out

    def tests_of_importers(self, row: EntityRow, package: bool = False) -> list[EntityRow]:
        """The tests of every test file that imports the changed entity's module by the module's
        own dotted name (`from packaging.pylock import Pylock` for a change in `pylock.py`, not `import
        packaging`): such a file is about that module, and its tests reach the module's private code
        through paths no static edge shows (a registry, a descriptor, a class handed on as a value).
        A package's `__init__` is left out (importing the package is importing everything) unless
        `package`: the module is one that loads the change by name, and a subpackage's `__init__`
        holding a registry is what its importers use (`from pkg.formats import registry`)."""
        if is_test_path(row.path) or (not package and row.path.rsplit("/", 1)[-1].startswith("__init__.")):
            return []
        key = (row.path, package)
        if key not in self._importer_tests:
            self._importer_tests[key] = found = []
            entities = self._in_file(row.path)
            module = next((e.qualname for e in entities if e.kind == "module"), "")
            parts = module.split(".") if module else []
            names = {".".join(parts[i:]) for i in range(len(parts) - 1)} if len(parts) > 1 else set(parts)
            # an import's target ends in the module or in a top-level name of it: the refs' tail index finds them
            tails = set(parts[-1:]) | {e.name for e in entities if e.kind != "module" and "." not in e.qualname}
            if package:  # `from pkg.formats import registry`: the registry is a global the loader's module sets
                tails |= set(self._globals(row.path))
            files = sorted({path for _rowid, path, _source, relation, target, _line, _scope in self.store.refs(names=tails)
                            if relation == "IMPORTS" and is_test_path(path)
                            and any(target == n or target.startswith(n + ".") for n in names)})
            for path in files:
                found += self.tests_in_file(path)
        return self._importer_tests[key]

    def loaders(self, row: EntityRow) -> list[tuple[EntityRow, str]]:
        """The library entities whose strings name `row`, or the class of a method `row`, by its
        dotted path (`register("xlsx", "pkg.formats._xlsx.XLSXFormat")`): they load it by name at
        run time, and whoever uses what they fill (a registry) may run it."""
        named = [row] + ([self.row(row.parent)] if row.kind == "method" and row.parent else [])
        out = []
        for r in named:
            for source in self._string_mentions().mentioners(r) if r is not None else ():
                loader = self.row(source) or self._module_of(source)  # a global's table: its module loads it
                if loader is not None and not is_test_path(loader.path):
                    out.append((loader, r.id))
        return out

    def _module_of(self, eid: str) -> EntityRow | None:
        """The module a `var:path:NAME` global belongs to."""
        if not eid.startswith("var:"):
            return None
        return next((e for e in self._in_file(eid[4:].rsplit(":", 1)[0]) if e.kind == "module"), None)

    def _passers(self, row: EntityRow) -> list[tuple[str, str, float]]:
        """Who hands a top-level class or function to a call as a value (the parser's raw `PASSES`
        references: `socket_server(Handler)`, `_get_object(d, PackageVcs)`): the callee builds or
        calls it on their behalf; a class attribute that holds it (`OPTIONS_CLASS = SchemaOpts`: whoever
        builds or subclasses that class may build it); a module global's table that holds it (`_rules =
        [("text", rules.text)]`: whoever reads the global runs it; `nsccn.languages.global_tables`); a base of a
        class built at run time (`SUBCLASSES`: `type(name, (Schema,), ns)`). By name, where the name is
        the entity's: written in its own file, or in a file that imports it, its module, or a package
        that re-exports either (`from . import rules` where `rules/__init__.py` imports it)."""
        out = []
        importers: set[str] | None = None
        # (only a ref whose target ends in the name can pass: those `_passing` holds, in the same order)
        for _rowid, path, source, relation, target, _line, _scope in self._passing.get(row.name):
            if relation not in (PASSES, SUBCLASSES) or target.rsplit(".", 1)[-1] != row.name or source == row.id:
                continue
            if path != row.path:
                if importers is None:
                    importers = self._importers_of(row)
                if path not in importers:
                    continue
            out.append((source, relation, PASSES_CONFIDENCE))
        return out

    def _registrars(self, row: EntityRow) -> list[tuple[str, str, float]]:
        """The module globals a decorator of `row` fills with what it decorates (`@register(ast.Call)`
        where `register`'s inner function does `FUNCS[tp].append(func)`; the parser's `MUTATES` of a
        global handed a parameter): the decorated function sits in the registry, and whoever reads
        the global runs it. The decorators are the calls the enclosing module makes on the
        definition's own lines; the decorator's function and the functions it defines are looked at."""
        if row.parent not in self._module_calls:
            self._module_calls[row.parent] = self.store.edges_from(row.parent, ("CALLS",))
        out = []
        for e in self._module_calls[row.parent]:
            if row.start_line <= e.line <= row.end_line and e.target.startswith("func:"):
                out += [(g, "REGISTERS", e.confidence * PASSES_CONFIDENCE) for g in self._filled_by(e.target)]
        return out

    def _filled_by(self, decorator: str) -> list[str]:
        """The module globals a decorator's function, or a function it defines, hands a parameter to."""
        if decorator not in self._registries:
            makers = [decorator] + [c.target for c in self.store.edges_from(decorator, ("CONTAINS",))
                                    if c.target.startswith("func:")]
            self._registries[decorator] = [m.target for maker in makers for m in self.store.edges_from(maker, ("MUTATES",))
                                           if m.target.startswith("var:")]
        return self._registries[decorator]

    def _importers_of(self, row: EntityRow) -> set[str]:
        """The files that import `row` or its module, directly or through a package's `__init__` that
        imports it (one re-export)."""
        edges = [e for eid in (row.id, row.parent) if eid is not None for e in self._imports_of(eid)]
        out = {e.path for e in edges}
        for e in edges:
            if e.path.rsplit("/", 1)[-1].startswith("__init__.") and e.source.startswith("module:"):
                out |= {x.path for x in self._imports_of(e.source)}
        return out

    def _imports_of(self, eid: str) -> list[EdgeRow]:
        """The IMPORTS edges into `eid`: of its edges in, the walk's read (read ahead for a frontier's nodes)."""
        return [e for e in self._into.get(eid) if e.relation == "IMPORTS"]

    def _named_by_tests(self, row: EntityRow) -> list[tuple[str, str, float]]:
        """Tests that call `x.m()` on a receiver of unknown type, where too many classes define `m`
        for the resolver to guess (it guesses up to MAX_AMBIGUOUS_METHOD): `serializer.loads(s)`
        on a fixture's object. A test runner's answer would rather run a test too many than miss
        one; a name defined more often than NAMED_BY_TESTS_MAX says nothing."""
        name = row.name
        if name.startswith("__") or name in self._names_seen:
            return self._names_seen.get(name, [])
        self._names_seen[name] = out = []
        if not self._named_by_many(name):
            return out
        k = self._method_counts.get(name)
        found = []
        for _rowid, path, source, relation, target, line, _scope in self._calling.get(name):
            head, _, last = target.rpartition(".")
            if relation != "CALLS" or last != name or not head or head.split(".")[0] in ("self", "cls") \
                    or not is_test_path(path):
                continue
            found.append((source, line))
        self._calls_from.fill(source for source, _line in found)
        calls: dict[str, set[int]] = {}  # a test's lines where an edge already calls a method of that name
        for source, line in found:
            if source not in calls:
                calls[source] = {e.line for e in self._calls_from.get(source) if e.target.rsplit(".", 1)[-1] == name}
            if line not in calls[source]:  # resolved there (a typed receiver, or a guess): the graph's edge says it
                out.append((source, "NAMED_BY_TEST", round(NAMED_BY_TEST_CONFIDENCE / k, 4)))
        return out

    def _named_by_many(self, name: str) -> bool:
        """Whether more methods have the name than the resolver guesses among, and not too many to name any."""
        return MAX_AMBIGUOUS_METHOD < self._method_counts.get(name) <= NAMED_BY_TESTS_MAX

    def _string_mentions(self) -> mentions.Mentions:
        """The repository's string mentions, read when first needed, once per index version: a scan of
        every ref (sympy: 20 ms), which a server's next answer need not repeat."""
        if self._mentions is None:
            self._mentions = self.store.derived("impact.mentions", lambda: mentions.Mentions(self.store))
        return self._mentions

    def tests_in_file(self, path: str) -> list[EntityRow]:
        """The tests a runner collects from a file (its entities that are tests)."""
        return [t for t in self._in_file(path) if is_test(t.kind, t.path, t.name, t.decorators)]

    def _in_file(self, path: str) -> list[EntityRow]:
        """A file's entities (read once per walk)."""
        return self._file_rows.get(path)

    def _members_of(self, path: str) -> list[EntityRow]:
        return self._members.get(path)

    def _globals(self, path: str) -> list[str]:
        return _module_globals(self.store, path)

    def _bases(self, cls: str, depth: int = 4) -> list[tuple[str, float]]:
        """The classes `cls` inherits from, nearest first (breadth-first), with the path's confidence."""
        out, frontier, seen = [], [(cls, 1.0)], {cls}
        for _ in range(depth):
            nxt = []
            for c, conf in frontier:
                for e in self._base_edges.get(c):
                    if e.target not in seen and e.target.startswith("class:"):
                        seen.add(e.target)
                        nxt.append((e.target, conf * e.confidence))
            out += nxt
            frontier = nxt
        return out

    def _subclasses(self, cls: str, depth: int = 4) -> list[tuple[str, float]]:
        if cls in self._subs:
            return self._subs[cls]
        out, frontier, seen = [], [(cls, 1.0)], {cls}
        for _ in range(depth):
            nxt = []
            for c, conf in frontier:
                for e in self._subclass_edges.get(c):
                    if e.source not in seen:
                        seen.add(e.source)
                        nxt.append((e.source, conf * e.confidence))
            out += nxt
            frontier = nxt
        self._subs[cls] = out
        return out

    def by_name(self, name: str, path: str) -> list[tuple[str, str, float]]:
        """Who referred to an entity the index no longer holds (deleted, index updated since): the
        raw references whose last identifier is its name."""
        out = []
        for _rowid, _p, source, relation, target, _line, _scope in self.store.refs(names=[name]):
            if relation in ("CALLS", "INHERITS", "IMPORTS") and re.split(r"[.:]", target)[-1] == name:
                out.append((source, f"{relation}(by name)", 0.5 if _p != path else 0.8))
        return out


def walk(deps: Dependents, seeds: dict[str, list[tuple[str, str, float]] | None], depth: int, min_confidence: float,
         max_nodes: int = MAX_NODES, starts: dict[str, Reach] | None = None, stop=None,
         skip: tuple[str, ...] = ()) -> tuple[dict[str, Reach], bool]:
    """Breadth-first upstream from the seeds (id -> None, or the steps to use instead of the
    graph's, for an entity the index lacks); each entity keeps its most confident shortest path.
    `starts`: a seed's path from the change, where the walk goes on from a node an earlier one reached;
    `stop(id)`: reached, not walked on from; `skip`: relations not followed."""
    best: dict[str, Reach] = {s: (starts or {}).get(s) or Reach(0, 1.0, [s]) for s in seeds}
    # an importer (a leaf), or a class reached only as a changed method's owner, reached later by
    # what its own code runs: it walks on along that path, while the shorter one stays the path it
    # is listed with
    onward: dict[str, Reach] = {}
    frontier = list(seeds)
    truncated = False
    for _level in range(depth):
        nxt: dict[str, Reach] = {}
        nxt_onward: dict[str, Reach] = {}
        deps.read_ahead(_walked_on(frontier, best, onward, seeds))
        for node in frontier:
            here = onward.get(node) or best[node]
            last = _last_relation(here)
            if last == "IMPORTS":
                continue  # an importer: the import alone runs nothing further
            # a changed module's own globals are seeds of their own (the lines that set them)
            first = here.distance == 0
            if here.distance + 1 > depth:
                continue
            steps = seeds.get(node) if first and seeds.get(node) is not None else deps.of(node, changed=first)
            for other, relation, conf in steps:
                if relation in skip:
                    continue
                if conf < min_confidence or (relation == SUBCLASSES and last == "HAS_MEMBER"):
                    continue  # a subclass built at run time runs class creation, not the methods of the class
                c = here.confidence * conf
                if other in best:
                    if relation not in PARTIAL and other not in onward and len(p := best[other].path) > 1 \
                            and p[-1][0] in PARTIAL and (other not in nxt_onward or c > nxt_onward[other].confidence):
                        nxt_onward[other] = Reach(here.distance + 1, c, here.path + [(relation, round(conf, 3), other)])
                    continue
                # of two paths as sure, one that calls beats one that imports (an import walks no further)
                if other not in nxt or c > nxt[other].confidence or (
                        c == nxt[other].confidence and relation != "IMPORTS" and _last_relation(nxt[other]) == "IMPORTS"):
                    nxt[other] = Reach(here.distance + 1, c, here.path + [(relation, round(conf, 3), other)])
        if len(best) + len(nxt) > max_nodes:
            keep = sorted(nxt.items(), key=lambda kv: -kv[1].confidence)[: max(0, max_nodes - len(best))]
            nxt = dict(keep)
            truncated = True
        best.update(nxt)
        onward.update(nxt_onward)
        frontier = [n for n in list(nxt) + list(nxt_onward) if stop is None or not stop(n)]
        if not frontier or truncated:
            break
    return best, truncated


def _walked_on(frontier: list[str], best: dict[str, Reach], onward: dict[str, Reach], seeds: dict) -> list[str]:
    """The nodes of a frontier whose dependents the graph gives (`Dependents.of`): not an importer,
    not a seed given its own steps."""
    out = []
    for n in frontier:
        here = onward.get(n) or best[n]
        if _last_relation(here) != "IMPORTS" and not (here.distance == 0 and seeds.get(n) is not None):
            out.append(n)
    return out


def _last_relation(r: Reach) -> str | None:
    return r.path[-1][0] if len(r.path) > 1 else None


def render_path(r: Reach) -> str:
    """`test -CALLS(1.0)-> helper -CALLS(0.5)-> changed`: read from the dependent to the change."""
    parts = [r.path[0]]
    for relation, conf, other in r.path[1:]:
        parts.append(f"-{relation}({conf:g})->")
        parts.append(other)
    # written from the change outward; read it the other way: who depends on whom
    out = [parts[-1]]
    for i in range(len(parts) - 2, 0, -2):
        out += [parts[i], parts[i - 1]]
    return " ".join(out)


# -- the answer --------------------------------------------------------------------------------------


def analyze(store: Store, root: Path, change: Change, depth: int = DEFAULT_DEPTH, min_confidence: float = 0.0,
            test_depth: int = TEST_DEPTH, wide: bool = False, recorded: Recorded | None = None) -> dict:
    files = []
    outside = []
    for fd in change.diff.files:
        info = {"path": fd.path, "status": fd.status}
        if fd.old_path and fd.new_path and fd.old_path != fd.new_path:
            info["from"] = fd.old_path
        if fd.binary:
            info["binary"] = True
        indexed = any(store.file(p) is not None for p in (fd.new_path, fd.old_path) if p)
        if not indexed:
            outside.append(fd.path)
        files.append(info)
    changed, globals_touched = changed_entities(store, change, files)
    deps = Dependents(store)
    seeds: dict[str, list | None] = {}
    for c in changed:
        for eid in (c["id"], c.get("was")):
            if eid and deps.row(eid) is not None:
                c["in_index"] = eid
                if c["change"] not in ("docstring", "inert"):  # documentation, comments, annotations run nothing (doctests aside)
                    seeds.setdefault(eid, None)
                break
        else:
            c["in_index"] = None
            if c["change"] == "deleted":  # the index was updated since: its callers by name
                name = c["id"].rsplit(":", 1)[-1].rsplit(".", 1)[-1]
                seeds[c["id"]] = deps.by_name(name, c["file"])
    for g in globals_touched:
        seeds.setdefault(g, None)
    reached, truncated = walk(deps, seeds, max(depth, test_depth), min_confidence)  # one Dependents: its reads cached once
    changed_ids = {c["in_index"] or c["id"] for c in changed}
    rows = deps.rows(reached)
    impacted = []
    for eid, r in reached.items():
        if r.distance == 0 or r.distance > depth or eid in changed_ids:
            continue
        row = rows.get(eid)
        relation, prev = r.path[-1][0], r.path[-2]
        item = {"id": eid, "distance": r.distance, "confidence": round(r.confidence, 3),
                "via": f"{relation} {prev if isinstance(prev, str) else prev[2]}", "path": render_path(r)}
        if row is not None:
            item["file"], item["line"] = row.path, row.start_line
        impacted.append(item)
    impacted.sort(key=lambda x: (-x["confidence"], x["distance"], x["id"]))
    runner_hint = js_runner(_read(root, "package.json"))
    unknown_files: list[dict] = []
    unknown: set[tuple[str, str]] = set()
    if recorded is None:
        tests, tested = _tests(reached, rows, changed, deps)
        covered, used = [], None
        module_tests = _module_tier(deps, seeds, tests, wide, min_confidence)
    else:
        covered, tests, tested, module_tests, unknown_files, unknown, used = _with_recorded(
            store, root, deps, recorded, seeds, changed, reached, rows, test_depth, min_confidence, wide, runner_hint)
    for c in changed:
        c.pop(OLD_SIDE, None)
    # a file is run whole for what the graph reaches of it; tests listed only for being added since the run
    # are listed, not counted
    test_files = _whole_files(deps, [t for t in tests + module_tests if (t["file"], t["qualname"]) not in unknown]) \
        if WHOLE_FILE_CONFIDENCE >= min_confidence else []
    test_files += [f for f in unknown_files if f["file"] not in {t["file"] for t in test_files}]
    whole = {t["file"] for t in test_files}
    units = [t for t in covered + tests + module_tests if t["file"] not in whole] + test_files
    suites = _suites(store, units, runner_hint, WHOLE_SUITE_CONFIDENCE >= min_confidence) if units else []
    out = {
        "source": change.source,
        "files": files,
        "changed": changed,
        "impacted": impacted,
        "tests": tests,
        "covered_tests": covered,
        "module_tests": module_tests,
        "test_files": test_files,
        "suites": suites,
        "run": run_command([{"file": t["file"], "qualname": t.get("qualname")} for t in units], runner_hint,
                           frozenset(s["runner"] for s in suites if s["whole"])),
        "risk": _risk(changed, impacted, tested),
        "depth": depth,
        "test_depth": test_depth,
        "min_confidence": min_confidence,
        "wide": wide,
    }
    if used is not None:
        out["coverage"] = used
    if outside:
        out["outside_index"] = outside
    if change.diff.refused:
        out["refused"] = change.diff.refused
    notes = list(change.notes)
    if change.diff.capped:
        notes.append(change.diff.capped)
    if truncated:
        notes.append(f"the walk stopped at {MAX_NODES} entities: raise min_confidence or lower depth")
    if notes:
        out["notes"] = notes
    return out


def _module_tier(deps: Dependents, seeds: dict, tests: list[dict], wide: bool, min_confidence: float) -> list[dict]:
    """The module tier stands in for the graph where it proves nothing: only when no test is reached from
    the change (a test the change edits aside); `wide`: always (docs/impact.md, stop 55: per changed
    entity, it selected as much as always)."""
    proven = any(t["distance"] > 0 for t in tests)
    return _module_tests(deps, seeds, tests) if (wide or not proven) and IMPORTER_TEST_CONFIDENCE >= min_confidence else []


def _with_recorded(store: Store, root: Path, deps: Dependents, recorded: Recorded, seeds: dict, changed: list[dict],
                   reached: dict[str, Reach], rows: dict, test_depth: int, min_confidence: float, wide: bool,
                   runner_hint: str | None):
    """(covered tests, the graph's tests, the changed entities some test reaches, module tests, test files
    to run whole, the tests listed only for being added since, what was used): the tests that ran a changed function when the suite ran, and the graph
    only where it may know more: from what is new since, through what changed since, and for tests the run
    recorded nothing of (not collected then, skipped, added since), which are answered as without it."""
    by_run = RecordedTests(store, deps, recorded, reached)
    graph_seeds, starts, used = by_run.split(root, seeds, changed)
    # walked on until a function the run measured: whoever runs it now ran it then, through code as it
    # was; not to the callers of a method a new one overrides: a method runs on an instance of its own
    # class, and the walk reaches whoever makes one (HAS_MEMBER)
    again, _ = walk(deps, graph_seeds, test_depth, min_confidence, starts=starts, stop=by_run.answers,
                    skip=("DISPATCHES_TO",)) if graph_seeds else ({}, False)
    for eid, r in again.items():
        if eid not in graph_seeds and by_run.answers(eid):
            by_run.ran(eid, f", and reaches the change where the run cannot tell: {render_path(r)}")
    tests, tested = _tests(again, store.entities(again), changed, deps)
    # tests the run does not know (their file recorded no test: skipped, not collected; or added since) are
    # answered by the graph alone, with its tiers: its tests, module tests and whole files, those tests of them
    alone, _ = _tests(reached, rows, changed, deps)
    alone_module = _module_tier(deps, seeds, alone, wide, min_confidence)
    alone_files = _whole_files(deps, alone + alone_module) if WHOLE_FILE_CONFIDENCE >= min_confidence else []
    known = {(f, n.replace("::", ".")) for f, _, n in (t.partition("::") for t in recorded.tests)}
    known_files = {f for f, _ in known}

    def unknown(t: dict) -> bool:
        return t["file"] not in known_files or (t["qualname"] is not None and (t["file"], t["qualname"]) not in known)

    listed = {(t["file"], t["qualname"]) for t in tests}
    extra = [t for t in alone if unknown(t) and (t["file"], t["qualname"]) not in listed]
    known_classes = {(f, q.rsplit(".", 1)[0]) for f, q in known if "." in q}

    def collectable(path: str, qualname: str) -> bool:
        """At top level or in a class the run collected tests of: a node id of ours in another could name
        what the runner does not collect (a base class's method, classes made at run time)."""
        return "." not in qualname or (path, qualname.rsplit(".", 1)[0]) in known_classes

    def added_since(path: str, qualname: str) -> bool:  # a test the run's files did not hold
        return path in recorded.files and collectable(path, qualname) and all(
            f"{kind}:{path}:{qualname}" not in recorded.fingerprints for kind in ("func", "method"))

    for f in alone_files:
        if f["file"] in known_files:
            extra += [{"id": r.id, "file": r.path, "qualname": r.qualname, "distance": f["distance"],
                       "confidence": f["confidence"], "reason": "added since the run; " + f["reason"]}
                      for r in deps.tests_in_file(f["file"]) if (r.path, r.qualname) not in known
                      and collectable(r.path, r.qualname)]
    # and every test added since the run to a file it knows: run, as pytest-testmon runs a test it has no data
    # for. A test that was there and recorded no line (skipped, a base class's method the runner collects under
    # its subclasses, code run only in a subprocess) is left to the graph: listing every such test took half of
    # some suites (docs/impact.md)
    suite = store.derived(f"impact.suite:{runner_hint}", lambda: _suite(store, runner_hint))
    by_graph = {(t["file"], t["qualname"]) for t in extra}  # the graph alone's: counted as the graph's
    added: list[tuple[str, str]] = []  # listed, not counted toward a file run whole
    for in_runner in suite.values():
        for path, names in sorted(in_runner.items()):
            if path not in known_files:
                continue
            for q in sorted(n for n in names if n is not None and (path, n) not in known and added_since(path, n)):
                if (path, q) not in by_graph:
                    added.append((path, q))
                    extra.append({"id": f"test:{path}:{q}", "file": path, "qualname": q, "distance": 1,
                                  "confidence": UNKNOWN_TEST_CONFIDENCE,
                                  "reason": "added since the run: it recorded nothing of it"})
    extra = list({(t["file"], t["qualname"]): t for t in extra if (t["file"], t["qualname"]) not in listed}.values())
    if extra:
        tests = sorted(tests + extra, key=lambda t: (-t["confidence"], t["distance"], t["id"]))
        used["unknown_tests"] = len(extra)
    listed |= {(t["file"], t["qualname"]) for t in extra}
    covered = [t for t in by_run.tests() if (t["file"], t["qualname"]) not in listed]
    tested |= {c["in_index"] for c in changed if c.get("in_index") and recorded.ran.get(c["in_index"])}
    module_tests = _module_tier(deps, seeds if wide else {s: v for s, v in seeds.items() if s in graph_seeds},
                                tests + covered, wide, min_confidence)
    taken = {(t["file"], t["qualname"]) for t in module_tests} | listed
    module_tests += [t for t in alone_module if unknown(t) and (t["file"], t["qualname"]) not in taken]
    # where the graph alone runs a runner's whole suite, the files of it the run knows nothing of run whole
    whole_files = []
    alone_units = alone + alone_module + alone_files
    for share in _suites(store, alone_units, runner_hint, WHOLE_SUITE_CONFIDENCE >= min_confidence) if alone_units else []:
        if share["whole"]:
            # its test files, those whose tests are made at run time too (no test function of ours in them): a
            # file named as a test (`test_x.py`, `x_test.go`, `x.spec.ts`), not a package's `__init__` or a helper
            paths = set(suite.get(share["runner"], {})) | {
                p for p in store.file_paths() if is_test_path(p) and runner_of(p, runner_hint) == share["runner"]
                and _stem(p) != p.rsplit("/", 1)[-1].split(".", 1)[0]}
            whole_files += [{"id": f"file:{path}", "file": path, "qualname": None, "distance": 1,
                             "confidence": WHOLE_SUITE_CONFIDENCE,
                             "reason": "the run recorded no test of it, and the graph alone would run the whole suite"}
                            for path in sorted(paths - known_files)]
    if whole_files:
        used["unknown_tests"] = used.get("unknown_tests", 0) + len(whole_files)
    return covered, tests, tested, module_tests, whole_files, set(added), used


# changes whose tests the recorded coverage names alone: a function's body runs when a test calls it (a
# class's or module's own lines, a signature's defaults and decorators run at import, which coverage gives no
# test: a changed signature brings the tests that ran the function and the graph's walk from it)
RECORDED_CHANGES = ("body", "deleted")


class RecordedTests:
    """The tests recorded per-test coverage names for a change (`nsccn.graph.recorded`)."""

    def __init__(self, store: Store, deps: Dependents, recorded: Recorded, reached: dict[str, Reach]):
        self.store, self.deps, self.recorded, self.reached = store, deps, recorded, reached
        self.measured = set(recorded.measured)
        self.covered: dict[tuple[str, str], dict] = {}
        self._indexed: dict[str, bool] = {}  # test file -> the index holds it (asked once a file)
        self._per_file: dict[str, dict[str, set[int]] | None] = {}
        self._prints_now: dict[str, dict[str, int] | None] = {}  # file -> its entities' fingerprints now (None: unknown)

    def answers(self, eid: str) -> bool:
        """A function the run measured, as it was then or since: the tests that ran it are known."""
        row = self.deps.row(eid)
        return row is not None and row.kind in ("func", "method") and row.path in self.measured \
            and eid in self.recorded.fingerprints

    def _ran_at_import(self, eid: str) -> bool:
        """A module's or class's own lines some test ran (they run when the module is imported)."""
        row = self.deps.row(eid)
        return row is not None and row.path in self.measured and bool(self.recorded.ran.get(eid))

    def ran(self, eid: str, why: str, only: set[str] | None = None, what: str = "") -> None:
        """The tests that ran `eid` in the run (of them, those named in `only`), listed with `why`."""
        rec = self.recorded
        for t in ran_by(rec, eid):
            if only is not None and rec.tests[t] not in only:
                continue
            file, _, name = rec.tests[t].partition("::")
            qualname = name.replace("::", ".")
            if file not in self._indexed:
                self._indexed[file] = self.store.file(file) is not None
            if (file, qualname) in self.covered or not self._indexed[file]:
                continue  # listed, or its file is gone since
            tid = next((i for i in (f"func:{file}:{qualname}", f"method:{file}:{qualname}") if i in self.reached), None)
            self.covered[(file, qualname)] = {
                "id": tid or f"test:{file}:{qualname}", "file": file, "qualname": qualname,
                "distance": self.reached[tid].distance if tid else 1, "confidence": 1.0,
                "reason": f"ran {what}{eid} when the suite ran with coverage ({rec.source}){why}"}

    def ran_lines(self, root: Path, eid: str, old_side: dict | None) -> bool:
        """The tests that ran the lines a change touches in a function (`_old_side`), where the old side
        holds its code line for line as it ran (comments, blank lines, annotations aside): a test that ran
        none of them runs the function as before (the truth's granularity). A touched line no test ran
        counts as the nearest lines before and after it that one did. False where it cannot tell: the
        function's tests stand."""
        rec = self.recorded
        span, row = rec.spans.get(eid), self.deps.row(eid)
        if old_side is None or span is None or row is None or row.path not in rec.paths or not old_side["lines"]:
            return False
        then = codes_then(rec, row.path, span[0], span[1])
        at = _aligned(then, span[0], old_side["codes"], old_side["start"]) if then is not None else None
        if at is None or not self._callees_as_they_ran(root, eid):
            return False
        per_test = self._lines_run(root, row.path)
        if per_test is None:
            return False
        by_line: dict[int, set[str]] = {}
        for test, lines in per_test.items():
            for n in lines:
                if span[0] <= n <= span[1]:
                    by_line.setdefault(n, set()).add(test)
        mapped = sorted(at)
        chosen: set[str] = set()
        for n in old_side["lines"]:
            if n in at and at[n] in by_line:
                chosen |= by_line[at[n]]
                continue
            # a line no test ran (a comment, an `else:`, a statement's later line, code where lines were added):
            # the tests that ran the nearest line before it, and after it (a branch added to a chain is passed
            # by whoever went on to a later one); a line of no code sits between the code lines around it
            i = bisect.bisect_left(mapped, n)
            lo = at[n] if n in at else (at[mapped[i - 1]] if i > 0 else None)
            hi = at[n] if n in at else (at[mapped[i]] if i < len(mapped) else None)
            around = [None if lo is None else max((m for m in by_line if m <= lo), default=None),
                      None if hi is None else min((m for m in by_line if m >= hi), default=None)]
            if None in around:
                return False  # before or after every line a test ran
            for m in around:
                chosen |= by_line[m]
        self.ran(eid, "", only=chosen, what=f"the changed lines ({_ranges(old_side['lines'])} before the change) of ")
        return True

    def _callees_as_they_ran(self, root: Path, eid: str) -> bool:
        """Whether every function `eid` calls is as it was when the suite ran: what a callee returns may
        decide which of its lines a test reaches (`if check(x):`), so one changed since leaves the line's
        tests unknown."""
        callees = {e.target for e in self.store.edges_from(eid, ("CALLS",)) if e.target != eid}
        callees = [c for c in callees if self.deps.row(c) is not None]
        if not callees:
            return True
        now = self._fingerprints_now(root, callees)
        return all(c in self.recorded.fingerprints and now.get(c) == self.recorded.fingerprints[c] for c in callees)

    def _fingerprints_now(self, root: Path, eids: list[str]) -> dict[str, int]:
        """The fingerprints of these entities as the index holds them: the recorded ones where the file
        is as it was, hashed afresh where the file on disk is what the index holds (each file read and
        parsed once an answer); absent otherwise."""
        from nsccn.reading.extract import content_hash

        store, rec = self.store, self.recorded
        by_file: dict[str, list[str]] = {}
        for eid, row in store.entities(eids).items():
            by_file.setdefault(row.path, []).append(eid)
        out: dict[str, int] = {}
        for path, ids in by_file.items():
            if path not in self._prints_now:
                info = store.file(path)
                prints = None
                if info is not None and rec.files.get(path) == info["content_hash"]:
                    prints = rec.fingerprints
                elif info is not None:
                    data = _read(root, path)
                    if data is not None and content_hash(data) == info["content_hash"]:
                        prints = fingerprints(path, data, store.entities_in_file(path))
                    # else the index is not what the file holds: not known, so changed
                self._prints_now[path] = prints
            prints = self._prints_now[path]
            if prints is not None:
                out.update({eid: prints[eid] for eid in ids if eid in prints})
        return out

    def _lines_run(self, root: Path, path: str) -> dict[str, set[int]] | None:
        """test -> the lines of `path` it ran, read from the data file the map was made of (None: gone or changed)."""
        if path not in self._per_file:
            rec = self.recorded
            data_file = Path(rec.source) if Path(rec.source).is_absolute() else root / rec.source
            try:
                st = data_file.stat()
                self._per_file[path] = lines_of_file(data_file, rec.paths[path]) \
                    if (st.st_size, st.st_mtime) == (rec.size, rec.mtime) else None
            except (OSError, CoverageFileError):
                self._per_file[path] = None
        return self._per_file[path]

    def tests(self) -> list[dict]:
        return sorted(self.covered.values(), key=lambda t: (t["distance"], t["file"], t["qualname"]))

    def split(self, root: Path, seeds: dict, changed: list[dict]) -> tuple[dict, dict[str, Reach], dict]:
        """The tests of the changed functions the run measured; (the seeds of the graph's walk: the
        changed entities the run cannot answer for and, among what the change reaches, what changed
        since the run that it did not measure; their paths from the change; what was used)."""
        rec, reached = self.recorded, self.reached
        by_id = {c["in_index"]: c for c in changed if c.get("in_index")}
        graph_seeds: dict = {}
        answered = 0
        for s, steps in seeds.items():
            c = by_id.get(s)
            if c is not None and c["kind"] in ("func", "method") and self.answers(s):
                answered += 1
                # whoever ran its lines runs them, or its call sites, now
                if not (c["change"] == "body" and self.ran_lines(root, s, c.get(OLD_SIDE))):
                    self.ran(s, "")
                if c["change"] in RECORDED_CHANGES:
                    continue
            elif c is not None and c["kind"] in ("module", "class") and self._ran_at_import(s):
                # its own lines ran inside tests: a module imported while a test ran (a plugin loaded by name,
                # an import inside a function); those tests run them again. Code run at import reaches more
                # than coverage tells (whoever imports it first runs it), so the graph walks on from it too
                self.ran(s, ", its own lines: imported while the test ran")
            graph_seeds[s] = steps  # new since, never measured, or code that runs at import (a signature's too)
        # what the change reaches that changed since the run may reach it anew: a function the run measured
        # through the tests that ran it then (whoever runs it now through code as it was ran it then); the rest
        # (new since, test code, a class's or module's own lines) through the graph, walking on from it
        later = [eid for eid, r in reached.items() if r.distance > 0]
        now = self._fingerprints_now(root, later)
        since = [eid for eid in later if self.deps.row(eid) is not None
                 and (now.get(eid) is None or now[eid] != rec.fingerprints.get(eid))]
        for eid in since:
            if self.answers(eid):
                self.ran(eid, f", and changed since: {render_path(reached[eid])}")
        starts = {eid: reached[eid] for eid in since if not self.answers(eid)}
        graph_seeds.update({eid: None for eid in starts if eid not in graph_seeds})
        used = {"file": rec.source, "when": rec.when, "tests": len(rec.tests), "answered": answered,
                "walked": sum(1 for s in seeds if s in graph_seeds), "changed_since": len(since)}
        if rec.unmapped:
            used["unmapped"] = rec.unmapped[:20]
        return graph_seeds, starts, used


def _aligned(then: list[int], then_start: int, now: list[int], now_start: int) -> dict[int, int] | None:
    """Line now -> the line it was when the suite ran, for each line of code of a function whose code
    (`line_codes`) reads line for line as it did then; None where it does not."""
    was = [(then_start + i, h) for i, h in enumerate(then) if h]
    is_ = [(now_start + i, h) for i, h in enumerate(now) if h]
    if [h for _, h in was] != [h for _, h in is_]:
        return None
    return {n: m for (n, _), (m, _) in zip(is_, was)}


def _ranges(lines: list[int]) -> str:
    """`3-5, 9`: lines as runs."""
    runs: list[list[int]] = []
    for n in lines:
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ", ".join(f"line {a}" if a == b else f"lines {a}-{b}" for a, b in runs)


def _read(root: Path, rel: str) -> bytes | None:
    from nsccn.reading.repofile import UnreadableFile, read_bytes

    try:
        return read_bytes(root, rel, 1 << 20)[0]
    except UnreadableFile:
        return None


def _inherited(deps: Dependents, row: EntityRow, r: Reach) -> list[tuple[tuple[str, str], dict]]:
    """A test method as the test classes that inherit it collect it (`class TestLRU(CacheTests)`:
    pytest runs `TestLRU::test_get`, written once in the base, for each subclass)."""
    out = []
    for sub, conf in deps._subclasses(row.parent):
        sub_row = deps.row(sub)
        if sub_row is None or not is_test_path(sub_row.path) \
                or deps.row(f"method:{sub_row.path}:{sub_row.qualname}.{row.name}") is not None:
            continue  # overridden there: its own entity, reached or not on its own
        qualname = f"{sub_row.qualname}.{row.name}"
        out.append(((sub_row.path, qualname), {
            "id": f"method:{sub_row.path}:{qualname}", "file": sub_row.path, "qualname": qualname,
            "distance": r.distance, "confidence": round(r.confidence * conf, 3),
            "reason": f"{sub} inherits {row.id}: " + ("changed itself" if r.distance == 0 else render_path(r))}))
    return out


def _module_tests(deps: Dependents, seeds: dict, tests: list[dict]) -> list[dict]:
    """The second tier: tests no edge reaches, in test files that import a changed module by its
    own dotted name (`Dependents.tests_of_importers`). Held apart from `tests`, which the graph
    proves; run with them (`run`), dropped by a `min_confidence` above theirs."""
    listed = {(t["file"], t.get("qualname")) for t in tests}  # (file, None): the whole file is the test unit
    out: dict[tuple[str, str], dict] = {}
    for eid in seeds:
        row = deps.row(eid)
        if row is None:
            continue
        found = [(t, f"{t.path} imports {row.path}'s module, which the change touches ({eid})")
                 for t in deps.tests_of_importers(row)]
        for loader, named in deps.loaders(row):  # a module whose string names the change: it loads it by name
            found += [(t, f"{t.path} imports {loader.path}'s module, whose {loader.id} names {named} in a string")
                      for t in deps.tests_of_importers(loader, package=True)]
        for t, why in found:
            key = (t.path, t.qualname)
            if key in listed or (t.path, None) in listed or key in out:
                continue
            out[key] = {"id": t.id, "file": t.path, "qualname": t.qualname, "distance": 1,
                        "confidence": IMPORTER_TEST_CONFIDENCE, "reason": f"{why}; no edge reaches this test"}
    return sorted(out.values(), key=lambda t: (t["file"], t["qualname"] or ""))


def _whole_files(deps: Dependents, listed: list[dict]) -> list[dict]:
    """The test files to run whole: those of which the answer reaches at least WHOLE_FILE_SHARE of
    the tests (and not all of them already). A file's tests are about the same code; the ones no
    edge reaches there mostly reach it through what the graph cannot see: a fixture's object of
    unknown type, tests a loop or a decorator generates, a method chosen by name at run time."""
    reached: dict[str, set[str]] = {}
    for t in listed:
        if t.get("qualname"):
            reached.setdefault(t["file"], set()).add(t["qualname"])
    out = []
    deps.read_test_counts(reached)
    for path, names in sorted(reached.items()):
        total = deps.test_count(path)
        n = min(len(names), total)
        if total and n < total and n >= WHOLE_FILE_SHARE * total:
            out.append({"id": f"file:{path}", "file": path, "qualname": None, "distance": 1,
                        "confidence": WHOLE_FILE_CONFIDENCE,
                        "reason": f"the answer reaches {n} of its {total} tests: the rest test the same code "
                                  "through paths no edge shows (fixtures, generated tests, dispatch by name)"})
    return out


def _suites(store: Store, units: list[dict], runner_hint: str | None, may_run_whole: bool) -> list[dict]:
    """Per runner the answer's tests and files run: how many of the suite's tests (the index's, as
    the runner collects them; a file where the file is the unit) they are, and whether `run` runs
    the whole suite (WHOLE_SUITE_SHARE)."""
    suite = store.derived(f"impact.suite:{runner_hint}", lambda: _suite(store, runner_hint))
    reached: dict[str, set[tuple[str, str | None]]] = {}
    for t in units:
        runner = runner_of(t["file"], runner_hint) or ""
        in_file = suite.get(runner, {}).get(t["file"], set())
        names = in_file if t.get("qualname") is None else {t["qualname"]} & in_file  # None: the file, whole
        reached.setdefault(runner, set()).update((t["file"], n) for n in names)
    out = []
    for runner, keys in sorted(reached.items()):
        total = sum(len(tests) for tests in suite.get(runner, {}).values())
        if runner and total:
            out.append({"runner": runner, "tests": total, "reached": len(keys),
                        "whole": may_run_whole and len(keys) >= WHOLE_SUITE_SHARE * total})
    return out


def _suite(store: Store, runner_hint: str | None) -> dict[str, dict[str, set[str | None]]]:
    """Runner -> test file -> the tests the runner collects there (None: the file is the test);
    sympy's 13,036 tests take ~33 ms to read, once per index version (`Store.derived`)."""
    suite: dict[str, dict[str, set[str | None]]] = {}
    paths = {p: runner_of(p, runner_hint) or "" for p in store.file_paths() if is_test_path(p)}
    for p, runner in paths.items():
        if is_test_file_unit(p):
            suite.setdefault(runner, {})[p] = {None}
    rules = {p: runner_rule(p) for p in paths}  # once a file, not once a function
    for path, _kind, qualname, name, decorators in store.functions_in_files(list(paths)):
        rule = rules[path]
        # decorators are read only where the runner knows tests by an attribute (`#[test]`, `@Test`)
        if rule is not None and rule.collects(name, json.loads(decorators) if rule.by_name is None and decorators else []):
            suite.setdefault(paths[path], {}).setdefault(path, set()).add(qualname)
    return suite


def _tests(reached: dict[str, Reach], rows: dict[str, EntityRow], changed: list[dict],
           deps: Dependents) -> tuple[list[dict], set[str]]:
    """The tests to run, best first, and the changed entities (index ids) some test reaches."""
    out: dict[tuple[str, str | None], dict] = {}
    tested: set[str] = set()
    for eid, r in reached.items():
        row = rows.get(eid)
        if row is None:
            continue
        if is_test(row.kind, row.path, row.name, row.decorators):
            key = (row.path, row.qualname)
        elif is_test_file_unit(row.path):
            key = (row.path, None)
        else:
            continue
        item = {"id": eid if key[1] else f"file:{row.path}", "file": row.path, "qualname": key[1],
                "distance": r.distance, "confidence": round(r.confidence, 3),
                "reason": "changed itself" if r.distance == 0 else render_path(r)}
        tested.add(r.path[0])
        found = [(key, item)]
        if key[1] and row.kind == "method" and row.parent and row.parent.startswith("class:"):
            found += _inherited(deps, row, r)
        for key, item in found:
            kept = out.get(key)
            if kept is None or (item["confidence"], -item["distance"]) > (kept["confidence"], -kept["distance"]):
                out[key] = item
    for c in changed:  # a test added or edited by the change is one to run (new ones are not in the index yet)
        if c["kind"] in ("func", "method") and c["change"] != "deleted":
            name = c["id"].rsplit(":", 1)[-1]
            if is_test(c["kind"], c["file"], name.rsplit(".", 1)[-1], []) and (c["file"], name) not in out:
                out[(c["file"], name)] = {"id": c["id"], "file": c["file"], "qualname": name, "distance": 0,
                                          "confidence": 1.0, "reason": "changed itself"}
    # of tests as near and as sure, those in a file named after a changed module first (`test_url.py`,
    # `url_test.py`, `url.test.ts` for `url.py`): what one reads first when the list is long
    modules = {_stem(c["file"]) for c in changed if not is_test_path(c["file"])}
    tests = sorted(out.values(), key=lambda t: (-t["confidence"], t["distance"], _stem(t["file"]) not in modules, t["id"]))
    return tests, tested


def _stem(path: str) -> str:
    """A file's name without its extensions and a test prefix or suffix: `tests/test_url.py` -> `url`."""
    name = path.rsplit("/", 1)[-1].split(".", 1)[0]
    for affix in ("test_", "tests_"):
        name = name.removeprefix(affix)
    for affix in ("_test", "_tests", "_spec"):
        name = name.removesuffix(affix)
    return name


def _risk(changed: list[dict], impacted: list[dict], tested: set[str]) -> dict:
    by_distance: dict[int, int] = {}
    for i in impacted:
        by_distance[i["distance"]] = by_distance.get(i["distance"], 0) + 1
    code = [c for c in changed if not is_test_path(c["file"]) and c["kind"] != "module"]
    public = [c["id"] for c in code if not c["id"].rsplit(":", 1)[-1].rsplit(".", 1)[-1].startswith("_")]
    untested = [c["id"] for c in code if c["change"] not in ("added", "docstring", "inert")
                and (c["in_index"] or c["id"]) not in tested]
    signature = [c["id"] for c in code if c["change"] in ("signature", "deleted")]
    level = "low"
    if signature and by_distance.get(1, 0) or len(impacted) > 50 or (untested and by_distance.get(1, 0) > 5):
        level = "high"
    elif impacted or untested:
        level = "medium"
    return {"level": level, "impacted_by_distance": {str(k): v for k, v in sorted(by_distance.items())},
            "public_api_changed": public[:20], "signature_or_removal": signature[:20],
            "untested_changes": untested[:20]}
