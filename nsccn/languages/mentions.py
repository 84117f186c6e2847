"""Dotted names a Python test spells in a string: `locate_app("cliapp.app")`,
`import_module("pkg.mod")`, `"pkg.mod:create_app"`, the source of a module the test writes at run
time (`"app = flask.Flask(__name__)"`). No call in the source names what they run, so no edge is
made; each becomes a raw `MENTIONS` reference (never resolved into an edge: a string is a guess)
that change impact reads (`nsccn.graph.mentions`), and `refs` lists.

In test files (and their helpers: `conftest.py`, apps under a tests folder) every dotted name of
a string is kept: there a string that spells a module of the repository is nearly always one the
test imports or runs. In library code only a string that is one dotted name and nothing else
(`register("xlsx", "pkg.formats._xlsx.XLSXFormat")`, a lazy import table, an entry point): prose,
messages and docstrings that mention a name in passing load nothing."""

from __future__ import annotations

import re

from nsccn.model import Ref

RELATION = "MENTIONS"
# `a.b`, `a.b.c`, `a.b:attr`: at least one dot; not part of a longer word or path (`x/a.b`, `.a.b`)
# a library's string that is a dotted name and nothing else: `"pkg.formats.Xlsx"`, `"pkg.mod:attr"`
WHOLE_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?::[A-Za-z_]\w*)?\Z")
DOTTED = re.compile(r"(?<![\w./\\-])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?::[A-Za-z_]\w*)?)(?![\w/\\-])")
MAX_PER_FILE = 2_000  # a generated test file full of dotted strings says little per string
MAX_STRING = 4_000  # characters of one string read (a module's source written by a test is short)


def mentions(strings: list[tuple[int, str]], entities: list, module_id: str) -> list[Ref]:
    """MENTIONS references for the dotted names in a file's strings ((line, text), as the walk met
    them), each from the innermost entity holding the string's line (a `parametrize` decorator's
    strings belong to the test it decorates)."""
    spans = sorted(((e.start_line, e.end_line, e.id) for e in entities), key=lambda s: s[1] - s[0])
    out: list[Ref] = []
    seen: set[tuple[str, str]] = set()
    for line, text in strings:
        found = DOTTED.findall(text[:MAX_STRING])
        if not found:
            continue
        source = next((eid for start, end, eid in spans if start <= line <= end), module_id)
        for name in found:
            if (source, name) in seen:
                continue
            seen.add((source, name))
            out.append(Ref(source, RELATION, name, line))
            if len(out) >= MAX_PER_FILE:
                return out
    return out
