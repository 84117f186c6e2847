"""What `this` is in an object literal's method: the literal itself.

    module.exports = {
      set (field, val) { ... },
      append (field, val) { return this.set(field, val) }   // the literal's own `set`
    }

An object literal makes no entity, so its methods are named as functions of the file (or of the
function around the literal), and `this.set()` in one of them had no class to go through: it was a
method guess at every `set` of the repository. A type checker gives `this` in such a method the
literal's type (TypeScript does); an object made from the literal (`Object.create(proto)`, a
spread) still finds the literal's method unless it overrides it. So a call `this.m()` whose
nearest enclosing function that binds `this` (not an arrow function) is a method of an object
literal, and whose literal defines `m` once, is rewritten by the extractor to that definition:

    this.set(...)  ->  literal:set      (the qualname of the literal's member, in the caller's file)

A name the literal does not define (or defines twice: a getter and a setter) keeps its reference.
Languages opt in with `QueryLanguage.object_literals` (the node types of an object literal) and
`QueryLanguage.this_functions` (the nodes that give `this` a value of their own).
"""

from __future__ import annotations

LITERAL = "literal:"  # the member of the object literal `this` is, by its qualname in the caller's file


class Literals:
    """The methods of one file's object literals, by literal and name."""

    def __init__(self, defs: list, literal_types: tuple[str, ...], this_functions: tuple[str, ...]):
        """`defs`: the extractor's definitions (qualnames given)."""
        self.this_functions = frozenset(this_functions)
        self.members: dict[tuple[int, int], dict[str, str | None]] = {}  # literal span -> name -> qualname (None: twice)
        if not literal_types:
            return
        for d in defs:
            parent = d.node.parent
            if d.is_scope or d.kind not in ("func", "method") or parent is None or parent.type not in literal_types:
                continue
            names = self.members.setdefault((parent.start_byte, parent.end_byte), {})
            names[d.name] = None if d.name in names else d.qualname

    def rewrite(self, path: str, node) -> str:
        """`self.m` (a call at `node`) as the literal's member `literal:qualname`, or unchanged."""
        if not self.members:
            return path
        head, _, name = path.partition(".")
        if head != "self" or not name or "." in name:
            return path
        scope = node.parent
        while scope is not None and scope.type not in self.this_functions:
            scope = scope.parent
        literal = scope.parent if scope is not None else None
        if literal is None:
            return path
        qualname = self.members.get((literal.start_byte, literal.end_byte), {}).get(name)
        return f"{LITERAL}{qualname}" if qualname else path
