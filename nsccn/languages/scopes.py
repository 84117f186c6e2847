"""Which of a file's definitions a bare name reaches, where a definition sits inside an anonymous
function (a callback: `describe('x', () => { const make = () => ...; make() })`).

An anonymous function makes no entity, so a definition inside one is named as if it were written
around it (`make`, or `outer.make` inside a named `outer`), and a call anywhere in the file found it
by that name: a test file's local `const createStore = () => ...` inside one callback took the
calls of the imported `createStore` everywhere else, and a second local of that name in another
callback (`createStore#2`) got none of its own calls. A definition is visible only inside the
innermost function that holds it, named or not (JS/TS `const`, `function`, `class`); when a file
has such hidden definitions, a bare call of their name is rewritten to the one it reaches:

    make()  ->  local:make#2   the definition with that qualname in the caller's file
    make()  ->  outer:make     none of the file's definitions: an import, a global

Languages opt in with `QueryLanguage.anonymous_functions`, the node types of their unnamed
functions; a file with no hidden definition keeps its references as written.
"""

from __future__ import annotations

LOCAL = "local:"  # the caller's file's definition of this qualname
OUTER = "outer:"  # no definition of the caller's file is in scope: resolve through imports, globals


class Scopes:
    """The definitions of one file with the span they are visible in."""

    def __init__(self, defs: list, anonymous: tuple[str, ...], parents: dict[int, object]):
        """`defs`: the extractor's definitions (nested, qualnames given); `parents`: id(def) ->
        the def around it (None at module level)."""
        self.visible: dict[str, list[tuple[int, int, int, str]]] = {}  # name -> [(span size, start, end, qualname)]
        self.hidden_names: set[str] = set()
        if not anonymous:
            return
        def_spans = {(d.outer.start_byte, d.outer.end_byte) for d in defs}
        for d in defs:
            if d.is_scope or d.kind not in ("func", "class"):
                continue
            region, hidden = None, False
            node = d.outer.parent
            while node is not None and (node.start_byte, node.end_byte) not in def_spans:
                if node.type in anonymous:
                    region, hidden = (node.start_byte, node.end_byte), True
                    break
                node = node.parent
            if region is None:
                parent = parents.get(id(d))
                region = (parent.start, parent.end) if parent is not None else (0, 1 << 62)
            self.visible.setdefault(d.name, []).append((region[1] - region[0], region[0], region[1], d.qualname))
            if hidden:
                self.hidden_names.add(d.name)

    def rewrite(self, name: str, at: int) -> str:
        """The reference for a bare call of `name` at byte `at`: unchanged unless the file hides a
        definition of that name in an anonymous function."""
        if name not in self.hidden_names:
            return name
        around = [v for v in self.visible[name] if v[1] <= at < v[2]]
        if not around:
            return f"{OUTER}{name}"
        return f"{LOCAL}{min(around)[3]}"  # the innermost; of two in one scope, the first written
