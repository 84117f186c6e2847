"""A module global bound to a name is that name: `s = attributes = attrs` and `Base = _impl.Base`
at a module's top level make a call of `s()`, `mod.s()` or `mod.attributes()` (and a class written
`class X(mod.Base)`) a call of what the global is bound to, not of the global.

The parser keeps each such binding as a raw `BINDS` reference from the module, target
`NAME=VALUE` (`nsccn.languages.python`: a plain name or dotted name on the right, chained
assignments included, the global assigned once in the module and never by a `global` statement);
never an edge. The resolver reads them all once, when a reference first resolves to a global,
and resolves the value where the global is written, as its own code would. A value outside the
repository (`open = io.open`), or one only a guess reaches, leaves the global as it was."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nsccn.model import split_entity_id

if TYPE_CHECKING:
    from nsccn.store import Store

BINDS = "BINDS"  # raw reference relation: module -> "NAME=VALUE"
FOLLOWED = ("CALLS", "INHERITS")  # what a use of the global does with what it holds
MIN_CONFIDENCE = 0.9  # the value must resolve as an import or a definition does, not as a guess
MAX_HOPS = 4  # `a = b`, `b = c`, ...: a chain of globals (and a cycle) ends here


def parse_binding(target: str) -> tuple[str, str]:
    name, _, value = target.partition("=")
    return name, value


class Aliases:
    """The module globals bound to a name, read once from the store's BINDS references."""

    def __init__(self, store: Store):
        self._store = store
        self._bound: dict[tuple[str, str], tuple[str, str]] | None = None  # (path, global) -> (module id, value)

    def table(self) -> dict[tuple[str, str], tuple[str, str]]:
        if self._bound is None:
            self._bound = {}
            for source, target in self._store.relation_pairs(BINDS):
                name, value = parse_binding(target)
                self._bound[(split_entity_id(source)[1], name)] = (source, value)
        return self._bound

    def follow(self, resolver, results: list[tuple[str, float, str]], relation: str,
               hops: int = 0) -> list[tuple[str, float, str]]:
        """`results` with each global bound to a name of ours replaced by what it is bound to
        (`resolver`: the `nsccn.indexing.resolve.Resolver` asking, whose `name` rule resolves the value)."""
        if relation not in FOLLOWED or hops >= MAX_HOPS or not any(t.startswith("var:") for t, _, _ in results):
            return results
        table = self.table()
        if not table:
            return results
        out = []
        for tid, conf, how in results:
            bound = table.get(tuple(tid[4:].rsplit(":", 1))) if tid.startswith("var:") else None
            if bound is not None:
                module_id, value = bound
                path = split_entity_id(module_id)[1]
                found = self.follow(resolver, resolver.name(path, module_id, value, "", relation), relation, hops + 1)
                if found and all(not t.startswith(("ext:", "var:")) and c >= MIN_CONFIDENCE for t, c, _ in found):
                    out += [(t, conf * c, f"{how}+alias") for t, c, _ in found]
                    continue
            out.append((tid, conf, how))
        return out

    def bound_to(self, names: set[str]) -> set[str]:
        """The globals bound to one of `names` (by its last part): their uses mean something else
        when those do (an incremental update re-resolves them)."""
        if not names:
            return set()
        return {g for (_path, g), (_m, value) in self.table().items() if value.rsplit(".", 1)[-1] in names}
