"""Dependencies a test runner makes by name, not by a call: a pytest fixture reaches every test
(and fixture) that names it as a parameter, in its file or, for a `conftest.py`, under its
directory; an `autouse` fixture reaches every test there; `@pytest.mark.usefixtures("x")` names
one too; a test module's top-level code reaches its `@pytest.mark.parametrize`d tests. No call in the source says so, so the resolver finds no edge; impact analysis asks here.
"""

from __future__ import annotations

import re

from nsccn.languages.receivers import FIXTURE_DECORATOR
from nsccn.store import EntityRow, Store

NAME_ARG = re.compile(r"\bname\s*=\s*['\"]([^'\"]+)['\"]")
USES = re.compile(r"(?:pytest\.)?mark\.usefixtures\((?P<names>.*)\)", re.S)
PARAMETRIZE = re.compile(r"(?:pytest\.)?mark\.parametrize\(")
PARAMETRIZE_CONFIDENCE = 0.8  # the module's top-level values are the usual arguments; not every one is
CONFIDENCE = 0.9  # the name matches; a fixture of the same name nearer the test would win (not modelled)
MAX_CONSUMERS = 2_000


def fixture_name(row: EntityRow) -> tuple[str, bool] | None:
    """(the name tests ask for, autouse) of a fixture, None when the entity is not one."""
    if row.kind not in ("func", "method"):
        return None
    for d in row.decorators:
        m = FIXTURE_DECORATOR.match(d.strip().lstrip("@"))
        if m:
            args = m.group("args") or ""
            named = NAME_ARG.search(args)
            return (named.group(1) if named else row.name), bool(re.search(r"\bautouse\s*=\s*True", args))
    return None


def parameters(signature: str) -> set[str]:
    """The parameter names of a Python signature (`def f(a, b: int = 1, *c, **d)`)."""
    start = signature.find("(")
    if start < 0:
        return set()
    depth, names, token, seen_colon = 0, set(), "", False
    for ch in signature[start + 1:]:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                break
            depth -= 1
        if depth > 0:
            continue
        if ch == ",":
            if token.strip("* "):
                names.add(token.strip("* "))
            token, seen_colon = "", False
        elif ch in ":=":
            if not seen_colon and token.strip("* "):
                names.add(token.strip("* "))
            seen_colon = True
        elif not seen_colon:
            token += ch
    if not seen_colon and token.strip("* "):
        names.add(token.strip("* "))
    return {n for n in names if n.isidentifier()}


def consumers(store: Store, row: EntityRow) -> list[EntityRow]:
    """The tests and fixtures a fixture is injected into."""
    found = fixture_name(row)
    if found is None:
        return []
    name, autouse = found
    folder = row.path.rsplit("/", 1)[0] + "/" if "/" in row.path else ""
    if row.path.rsplit("/", 1)[-1] == "conftest.py":
        where, args = "path LIKE ? ESCAPE '\\'", [_like_prefix(folder) + "%"]
    else:
        where, args = "path = ?", [row.path]
    if autouse:
        q = f"SELECT id FROM entities WHERE {where} AND kind IN ('func','method') AND name LIKE 'test%' LIMIT ?"
        ids = [i for (i,) in store.conn.execute(q, (*args, MAX_CONSUMERS))]
    else:
        q = (f"SELECT id FROM entities WHERE {where} AND kind IN ('func','method') "
             "AND (signature LIKE ? ESCAPE '\\' OR decorators LIKE ? ESCAPE '\\') LIMIT ?")
        pattern = "%" + _like_prefix(name) + "%"
        ids = [i for (i,) in store.conn.execute(q, (*args, pattern, pattern, MAX_CONSUMERS))]
    rows = store.entities(ids)
    out = []
    for eid in ids:
        r = rows.get(eid)
        if r is None or r.id == row.id:
            continue
        if autouse or name in parameters(r.signature) or any(_uses(d, name) for d in r.decorators):
            out.append(r)
    return out


def parametrized(store: Store, row: EntityRow) -> list[EntityRow]:
    """The parametrized tests of a test module whose top-level code a walk reached: what that code
    builds (`OPTION = Option(...)`, a table of cases) is what `@pytest.mark.parametrize` hands the
    tests as arguments, which no call in them names."""
    if row.kind != "module":
        return []
    return [r for r in store.entities_in_file(row.path)
            if r.kind in ("func", "method") and any(PARAMETRIZE.match(d.strip().lstrip("@")) for d in r.decorators)]


def _uses(decorator: str, name: str) -> bool:
    m = USES.match(decorator.strip().lstrip("@"))
    return bool(m) and re.search(r"['\"]" + re.escape(name) + r"['\"]", m.group("names")) is not None


def _like_prefix(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


DECORATOR_CONFIDENCE = 0.9  # the callee is named in the decorator; a statement just before the def would read the same


def decorated(members: list[EntityRow], scope: str, line: int, name: str, imported: bool = False) -> list[EntityRow]:
    """The functions and methods among `members` (a test file's, with decorators or defaults) whose
    decorators or defaults name `name`, where `scope` (a class or module) calls it on `line`, or
    (`imported`) anywhere in the file that imports it: `@given(simple_classes())`, `@given(nested)`,
    `@pytest.mark.parametrize("x", [make()])`, `def test(x=make())` are evaluated where the test is
    defined and hand the test what they hold, so the test runs it."""
    pattern = re.compile(rf"\b{re.escape(name)}\b")
    out = []
    for r in members:
        if imported or (r.parent == scope and r.start_line <= line <= r.end_line):
            if any(pattern.search(d) for d in r.decorators) or pattern.search(r.signature.partition("=")[2]):
                out.append(r)
            if not imported:
                break
    return out
