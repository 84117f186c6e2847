"""Queries that name a definition: `Foo`, `Foo.bar`, `pkg.mod.Foo`, `Foo::bar`, `Foo#bar`,
`Foo->bar`, `foo_bar`, `foo()`.

A name typed as a query asks for the definition of exactly that name. Ranked search weighs a name
against everything else a query might mean (a test named after it, a class whose name contains
the word), and a short query gives it little else to go on; so the definitions of a typed name
are looked up directly and listed first (`names_first`), in this order:

- library code before tests, documentation and examples (`nsccn.reading.testpaths`);
- a definition of that very name before one a module re-exports under it;
- a class before the members named like it (a Java constructor, a Python `__init__`'s class),
  functions and methods next, a module (a file) last; a helper nested in a function after them;
- the qualified name as typed (`Session.send`) before one that only ends with it;
- then the most central first (PageRank over the reference graph, as the repository map ranks).

A qualified name matches on whole components of a definition's full name (its module's dotted
name plus its qualified name), so `sessions.Session.send` and `requests.sessions.Session.send`
both name `Session.send` in `src/requests/sessions.py`, and `RedirectSession.send` is not
`Session.send`. Two more ways a name reaches a definition: through a module that imports it
(`requests.get` -> `api.get`, re-exported by `requests/__init__.py`), and through an assignment
the definition's signature records (JavaScript's `res.send = function send(...)`, or
`Foo.prototype.bar = function ...`).

The same lookup resolves what a user types where an entity id is expected (`resolve_entity`).
"""

from __future__ import annotations

import re
from dataclasses import replace

from nsccn.query.query_analysis import analyze_query
from nsccn.query.streams import Hit
from nsccn.store import ENTITY_COLUMNS, EntityRow, Store
from nsccn.reading.testpaths import is_test_path

# A whole query that is one name: identifiers joined by `.`, `::`, `->` or `#`, maybe called `()`.
_NAME = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|::|->|#)[A-Za-z_$][\w$]*)*")
_SEPARATORS = re.compile(r"::|->|#|\.")
# A query that is more than a name keeps its named definitions near the top only while it is
# short (a phrase around a name); a bug report's many names are the learned ranker's evidence.
MIXED_MAX_WORDS = 12
MIXED_MAX_NAMES = 2
MIXED_MAX_DEFINITIONS = 3  # a name defined in more places says too little to move anything
MAX_DEFINITIONS = 5000  # definitions of one name looked at (sympy defines `__init__` 568 times)
_KIND_ORDER = {"class": 0, "func": 1, "method": 1, "module": 2}


def name_parts(text: str) -> tuple[str, ...] | None:
    """The components of `text` when all of it is one name (`Session.send`, `Foo::bar`,
    `` `foo()` ``), else None."""
    if not isinstance(text, str):
        return None
    t = text.strip().strip("`").strip()
    if t.endswith("()"):
        t = t[:-2]
    if not t or len(t) > 256 or not _NAME.fullmatch(t):
        return None
    return tuple(_SEPARATORS.split(t))


def _is_test(row: EntityRow) -> bool:
    return is_test_path(row.path) or "tests" in row.qualname.split(".")[:-1]  # Rust's `mod tests`


_OVERLOAD = re.compile(r"#\d+(?=\.|$)")  # `Gson.fromJson#2`: the index's mark on a second definition of a name


def _components(row: EntityRow, module: str) -> list[str]:
    """The full name of a definition, component by component: its module's dotted name, then its
    qualified name (a module's own qualified name is its module name). Overloads (`#2`) answer to
    the name they overload."""
    qualname = _OVERLOAD.sub("", row.qualname)
    dotted = qualname if row.kind == "module" else f"{module}.{qualname}" if module else qualname
    return [p for p in re.split(r"[./]", dotted) if p]


def _nested(row: EntityRow) -> bool:
    """A helper defined inside a function: after the definitions a caller can reach."""
    return bool(row.parent) and row.parent.startswith(("func:", "method:"))


def _ends_with(full: list[str], parts: tuple[str, ...]) -> bool:
    return len(full) >= len(parts) and tuple(full[len(full) - len(parts):]) == parts


def _rows(store: Store, sql: str, args: tuple) -> list[tuple[int, EntityRow]]:
    return [(r[0], EntityRow.from_row(r[1:])) for r in store.conn.execute(
        f"SELECT rowid, {ENTITY_COLUMNS} FROM entities WHERE {sql} LIMIT {MAX_DEFINITIONS}", args)]


def _modules(store: Store, paths: set[str]) -> dict[str, str]:
    if not paths:
        return {}
    ps = sorted(paths)
    return dict(store.conn.execute(f"SELECT path, module FROM files WHERE path IN ({','.join('?' * len(ps))})", ps))


def _reexported(store: Store, parts: tuple[str, ...]) -> list[tuple[int, EntityRow]]:
    """Definitions named parts[-1] that a module named by parts[:-1] imports (`requests.get`)."""
    owner = parts[:-1]
    modules = [(rid, row) for rid, row in _rows(store, "name=? AND kind='module'", (owner[-1],))
               if _ends_with(_components(row, ""), owner)]
    out = []
    for _, module in modules:
        targets = [t for (t,) in store.conn.execute(
            "SELECT t.name FROM edges ed JOIN symbols s ON s.id = ed.source JOIN symbols t ON t.id = ed.target "
            "WHERE s.name = ? AND ed.relation = (SELECT id FROM symbols WHERE name = 'IMPORTS')", (module.id,))]
        wanted = [t for t in targets if t.rsplit(":", 1)[-1].rsplit(".", 1)[-1] == parts[-1]]
        if wanted:
            out += _rows(store, f"id IN ({','.join('?' * len(wanted))})", tuple(wanted))
    return out


def _assigned(row: EntityRow, parts: tuple[str, ...]) -> bool:
    """Whether the definition's signature assigns it to the dotted name (`res.send = function`)."""
    if len(parts) < 2 or row.kind == "module":
        return False
    sig = row.signature.lstrip()
    owner, name = ".".join(parts[:-1]), parts[-1]
    for target in (f"{owner}.{name}", f"{owner}.prototype.{name}"):
        if sig.startswith(target) and sig[len(target):].lstrip()[:1] in ("=", ":"):
            return True
    return False


def definitions(store: Store, parts: tuple[str, ...], ranks: dict[int, float] | None = None) -> list[EntityRow]:
    """The definitions of exactly the name `parts` (`name_parts`), best first (the module's order)."""
    if not parts:
        return []
    named = _rows(store, "name=?", (parts[-1],))
    modules = _modules(store, {row.path for _, row in named})
    found: dict[int, EntityRow] = {}
    for rid, row in named:
        if _ends_with(_components(row, modules.get(row.path) or ""), parts) or _assigned(row, parts):
            found[rid] = row
    direct = set(found)
    if len(parts) > 1:
        for rid, row in _reexported(store, parts):
            found.setdefault(rid, row)
    if not found:
        return []
    if ranks is None:
        ids, ranks = list(found), {}
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            ranks.update(store.conn.execute(
                f"SELECT entity_rowid, rank FROM ranks WHERE entity_rowid IN ({','.join('?' * len(chunk))})", chunk))
    typed = ".".join(parts)

    def key(item: tuple[int, EntityRow]):
        rid, row = item
        return (_is_test(row), rid not in direct, _KIND_ORDER.get(row.kind, 3), _nested(row),
                _OVERLOAD.sub("", row.qualname) != typed, -ranks.get(rid, 0.0), row.path, row.start_line)

    return [row for _, row in sorted(found.items(), key=key)]


def named_in(query: str) -> list[tuple[str, ...]]:
    """The names a query asks for: all of it when it is one name; else, for a short phrase, the
    code-like names in it (`Session.send` in "Session.send redirects"), at most MIXED_MAX_NAMES."""
    whole = name_parts(query)
    if whole:
        return [whole]
    if len(query.split()) > MIXED_MAX_WORDS:
        return []
    analysis = analyze_query(query)
    if analysis.frames:
        return []
    names = [tuple(i.split(".")) for i in analysis.identifiers]
    return names if len(names) <= MIXED_MAX_NAMES else []


def names_first(store: Store, query: str, hits: list[Hit], limit: int,
                kinds: tuple[str, ...] | None = None) -> list[Hit]:
    """`hits` (a ranked search's, best first) with the definitions the query names moved to the
    top (`definitions`'s order), at most `limit` hits. A name that is the whole query brings all its
    definitions; a name inside a short phrase only when it has at most MIXED_MAX_DEFINITIONS
    outside tests. Everything else keeps its order. A definition moved up is scored 1/its place
    among them (`scored_by` "name"): the caller makes that a probability with the others."""
    names = named_in(query)
    if not names:
        return hits
    whole = len(names) == 1 and name_parts(query) is not None
    first: list[EntityRow] = []
    for parts in names:
        defs = definitions(store, parts)
        if not whole:
            defs = [d for d in defs if not _is_test(d)]
            if len(defs) > MIXED_MAX_DEFINITIONS:
                continue
        first += [d for d in defs if not kinds or d.kind in kinds]
    if not first:
        return hits
    by_id = {h.entity.id: h for h in hits}
    out: list[Hit] = []
    seen: set[str] = set()
    for row in first:
        if row.id in seen:
            continue
        seen.add(row.id)
        had = by_id.get(row.id)
        streams = dict(had.streams) if had else {}
        streams["name"] = len(out) + 1
        # scored by its place among the name's definitions (nsccn.query.calibration reads it)
        score = 1.0 / streams["name"]
        out.append(replace(had, score=score, streams=streams, scored_by="name") if had
                   else Hit(row, score, streams, "name"))
    out += [h for h in hits if h.entity.id not in seen]
    return out[:limit]


# -- what a user types where an entity id is expected -------------------------------------------

ENTITY_KINDS = ("module", "class", "func", "method")


def _in_file(store: Store, typed: str) -> list[EntityRow]:
    """`path:qualname` (`kind:` before it optional): the definitions of that file so named."""
    for kind in ENTITY_KINDS:
        if typed.startswith(kind + ":"):
            typed = typed[len(kind) + 1:]
            break
    out: list[EntityRow] = []
    for m in re.finditer(r"(?<!:):(?!:)", typed):  # a `::` is a scope (`Foo::bar`), not the separator
        path, name = typed[: m.start()], typed[m.end():]
        parts = name_parts(name)
        if not path or parts is None:
            continue
        if store.file(path) is None:  # a path as seen from a subdirectory (`sessions.py`): when one file ends so
            ends = [p for p in store.files_by_name().get(path.rsplit("/", 1)[-1].lower(), ()) if p.endswith("/" + path)]
            if len(ends) != 1:
                continue
            path = ends[0]
        exact = [r for _, r in _rows(store, "path=? AND qualname=?", (path, ".".join(parts)))]
        out += exact or [d for d in definitions(store, parts) if d.path == path]
    return out


def resolve_entity(store: Store, typed: str) -> list[EntityRow]:
    """The definitions what was typed for an entity id names, best first: the id itself; a
    `path:qualname` (with or without its kind); or any name `definitions` reads (`Session.send`,
    `send`, `requests.sessions.Session.send`, `Foo::bar`). One item: it is unambiguous."""
    row = store.entity(typed)
    if row is not None:
        return [row]
    if ":" in typed.replace("::", ""):
        return _in_file(store, typed)
    parts = name_parts(typed)
    return definitions(store, parts) if parts else []


def starting_with(store: Store, typed: str, n: int = 5) -> list[str]:
    """Ids of the definitions whose name starts with what was typed (`Session.merge_env` ->
    `...:Session.merge_environment_settings`), library code and central ones first."""
    parts = name_parts(typed.rsplit(":", 1)[-1] if ":" in typed.replace("::", "") else typed)
    if not parts or not parts[-1]:
        return []
    stem = parts[-1]
    rows = _rows(store, "name >= ? AND name < ? AND kind != 'module'", (stem, stem + "\U0010ffff"))
    owner = parts[:-1]
    modules = _modules(store, {r.path for _, r in rows})
    keep = []
    for rid, row in rows:
        full = _components(row, modules.get(row.path) or "")
        if not owner or _ends_with(full[:-1], owner):
            keep.append((rid, row))
    ids = [rid for rid, _ in keep]
    ranks = dict(store.conn.execute(
        f"SELECT entity_rowid, rank FROM ranks WHERE entity_rowid IN ({','.join('?' * len(ids))})", ids)) if ids else {}
    keep.sort(key=lambda x: (_is_test(x[1]), len(x[1].name), -ranks.get(x[0], 0.0), x[1].id))
    return [row.id for _, row in keep[:n]]
