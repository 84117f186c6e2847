"""Who spells an entity's dotted name in a string (the parser's `MENTIONS` references, from test
files and from library strings that are one dotted name alone: `nsccn.languages.mentions`). A
test that writes `locate_app("cliapp.app")` or the source `"app = flask.Flask(__name__)"` imports
or runs what the string names, though no call says so; a library's `register("xlsx",
"pkg.formats._xlsx.XlsxFormat")` loads it by name (change impact: `Dependents.loaders`).

The names an entity goes by: its module's dotted name and every shorter tail of it (a test puts
its own folders on `sys.path`: `tests/apps/cliapp/app.py` is imported as `cliapp.app`), with
the entity's qualname after a `.` or a `:` (`pkg.mod:create_app`); for a top-level definition,
the same through every module that imports it (`flask.Flask`, re-exported by the package). A
module is named only with a dot in it (a bare word in a string is no module path).
"""

from __future__ import annotations

from nsccn.languages.mentions import RELATION
from nsccn.model import split_entity_id
from nsccn.store import EntityRow, Store

CONFIDENCE = 0.5  # a name in a string: a guess, not a call


def tails(dotted: str) -> list[str]:
    """`src.pkg.mod` -> `src.pkg.mod`, `pkg.mod`, `mod`."""
    parts = dotted.split(".")
    return [".".join(parts[i:]) for i in range(len(parts))]


class Mentions:
    """The repository's string mentions, read once per walk: the names they spell, so an entity
    no string could name (nearly every one) costs a set lookup, not a query."""

    def __init__(self, store: Store):
        self.store = store
        self.targets = {t for _source, t in store.relation_pairs(RELATION)}
        self.last = {t.replace(":", ".").rsplit(".", 1)[-1] for t in self.targets}  # `a.b:c` -> c
        self._modules: dict[str, str | None] = {}

    def names(self, row: EntityRow) -> list[str]:
        """The strings that would name `row`."""
        if row.kind == "module":
            return [t for t in tails(row.qualname) if "." in t]
        owners = [self._module_qualname(row.path)]
        if row.parent and row.parent.startswith("module:"):  # re-exported: `from .app import Flask` in a package
            owners += [split_entity_id(e.source)[2] for e in self.store.edges_to(row.id, ("IMPORTS",))
                       if e.source.startswith("module:")]
        out = []
        for owner in dict.fromkeys(o for o in owners if o):
            for t in tails(owner):
                out += [f"{t}.{row.qualname}", f"{t}:{row.qualname}"]
        return out

    def mentioners(self, row: EntityRow) -> list[str]:
        """The entities whose strings name `row` (their ids), each once."""
        last = row.qualname.rsplit(".", 1)[-1]  # what a string naming it ends with
        if last not in self.last:
            return []
        wanted = [n for n in self.names(row) if n in self.targets]
        found = self.store.refs_naming(wanted, RELATION) if wanted else []
        return list(dict.fromkeys(source for source, _target, _line in found if source != row.id))

    def _module_qualname(self, path: str) -> str | None:
        if path not in self._modules:
            got = self.store.conn.execute("SELECT qualname FROM entities WHERE path=? AND kind='module'",
                                          (path,)).fetchone()
            self._modules[path] = got[0] if got else None
        return self._modules[path]
