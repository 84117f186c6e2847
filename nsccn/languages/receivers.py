"""Receiver types from what the source states, for the query languages' calls `obj.m()`.

A language's queries say where a name is bound to a type (`@binding` with `@binding.name` and
`@binding.type` for a declared type: a typed parameter, local or field; `@binding.new` for a
constructor: `new T()`, `T{...}`, `T::new()`), and `@binding.field` for a field or property of
the enclosing type (`private store: Store`, `this.x = new T()`, a struct field). This module
keeps those bindings per function and per type, and rewrites a call on a bound name into a
typed reference the resolver reads:

    c.add()          with `c: Cart`          ->  typed:Cart.add
    this.store.get() with `store = new Store()` (field)  ->  typednew:Store.get

`typed:` says the type was declared (the resolver's `typed` edge is certain), `typednew:` that
it was inferred from a constructor (high). No type checker: a name bound to two different types
in one function says nothing and keeps its plain reference.
"""

from __future__ import annotations

import re

DECLARED = "typed:"
CONSTRUCTED = "typednew:"
INJECTED = "typedfixture:"  # a test's or fixture's parameter: what the pytest fixture of that name returns
PREFIXES = (DECLARED, CONSTRUCTED, INJECTED)
FIELD = "@"  # in a typed reference's type: `f@T` is what the field f of type T holds
HOLDS = "HOLDS"  # a class's reference `field:Type` (never an edge: the resolver reads it for `x.f.m()`)
PASSES = "PASSES"  # a name handed to a call as a value, or held by a class attribute (never an edge: change impact reads it)
SUBCLASSES = "SUBCLASSES"  # a base of a class built at run time, `type(name, (Base,), ns)` (never an edge: impact reads it)
GETTER = "getter:"  # `x.attr` read, not called: an edge only when attr is a property of x's known type
FIXTURE_DECORATOR = re.compile(r"(?:pytest\.)?fixture\b(?P<args>\(.*)?", re.S)  # a decorator's text, `@` left off
PYTHON_RETURN_TYPE = r"\)\s*->\s*(.+)$"  # `def make() -> Cart` (query languages: QueryLanguage.return_type)
IMPL_OF = "impl "  # an INHERITS ref's scope for `impl Trait for Type` of a type of another file
_CONFLICT = ("", "")
# no type written (Java `var x = ...`), or one that says nothing (`Any`)
_INFERRED = frozenset(("var", "auto", "let", "dynamic", "Any", "typing.Any", "object", "unknown", "any"))
_WRAPPER = re.compile(r"^(?:typing\.)?(?:Optional|type|Type|ClassVar|Final)\[(.+)\]$")
_TYPE_CHAIN = re.compile(r"^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*$")
# what a type's text carries that is no part of its name: references, pointers, nullability, generics
_DECOR = re.compile(r"^(?:&\s*(?:'\w+\s+)?(?:mut\s+)?|\*+|mut\s+|dyn\s+|impl\s+)+")


def type_name(text: str) -> str | None:
    """`*pkg.Cart` / `&mut Cart<T>` / `Cart[]` / `Cart?` / `Optional[Cart]` / `Cart | None` ->
    the dotted name, or None when the text is no plain named type (a union, a function type, a
    tuple, `Any`)."""
    text = _DECOR.sub("", text.strip()).strip("\"'")
    m = _WRAPPER.match(text)
    if m:  # `Optional[Cart]`, `type[Cart]` (the class itself: its methods all the same)
        text = m.group(1)
    alternatives = [t.strip() for t in text.split("|")]
    if len(alternatives) > 1:
        alternatives = [t for t in alternatives if t not in ("None", "null", "undefined")]
        if len(alternatives) != 1:
            return None
        text = alternatives[0]
    while True:  # generic arguments, innermost first: `Map<K, List<V>>`, Go `Set[T]`
        stripped = re.sub(r"<[^<>]*>|\[[^\[\]]*\]", "", text)
        if stripped == text:
            break
        text = stripped
    text = text.strip().rstrip("?!").replace("::", ".").replace(" ", "")
    return text if _TYPE_CHAIN.match(text) and text not in _INFERRED else None


# How strongly a binding states its type: a declaration, then a constructor (`new T()`, `T{}`),
# then a call's result (`x = f()`: a class or a function's return type, the resolver decides).
# A parameter pytest injects by name ranks below all: any binding in the body outranks it.
DECLARED_RANK, CONSTRUCTED_RANK, CALLED_RANK, INJECTED_RANK = 2, 1, 0, -1


class Bindings:
    """Names bound to types: per function (id of its definition) and per type (its qualname).
    A name keeps the types of its strongest bindings; two different types there say nothing. In
    a function only its bindings before the call count (`arg` may be rebound further down, and
    `re = re.expand()` is no binding of its own call); a field's, an enclosing function's or the
    module's count wherever they are. Positions are the caller's (lines, or bytes)."""

    def __init__(self) -> None:
        self.locals: dict[str, dict[str, list[tuple[int, int, str]]]] = {}  # owner -> name -> [(position, rank, type)]
        self.fields: dict[str, dict[str, list[tuple[int, int, str]]]] = {}
        self.held: dict[str, dict[str, str]] = {}  # type -> class attribute -> the name it holds

    def holds(self, cls: str, name: str, value: str) -> None:
        """`name = Other` in the body of class `cls`: `self.name()` calls `Other` (a class held in a
        class attribute, a function stored as one). Bound twice to different names: says nothing."""
        held = self.held.setdefault(cls, {})
        held[name] = value if held.get(name, value) == value else ""

    def local(self, owner: str, name: str, typ: str, rank: int, at: int = 0) -> None:
        self.locals.setdefault(owner, {}).setdefault(name, []).append((at, rank, typ))

    def field(self, cls: str, name: str, typ: str, rank: int, at: int = 0) -> None:
        if cls:
            self.fields.setdefault(cls, {}).setdefault(name, []).append((at, rank, typ))

    @staticmethod
    def _typed(bound: list[tuple[int, int, str]] | None, before: int | None) -> tuple[str, str] | None:
        if bound and before is not None:
            bound = [b for b in bound if b[0] <= before]
        if not bound:
            return None
        rank = max(r for _, r, _ in bound)
        types = {t for _, r, t in bound if r == rank}
        if len(types) != 1:
            return _CONFLICT
        prefix = DECLARED if rank == DECLARED_RANK else INJECTED if rank == INJECTED_RANK else CONSTRUCTED
        return prefix, next(iter(types))

    def type_results(self, outer: str) -> None:
        """`x = c.make()` with `c` bound: x's type is what the typed call `c.make()` returns, written
        as that typed reference (`typed:c:Cart.make`); the resolver reads the method's return type.
        A binding sees the bindings before it, as a call does (`outer`: the module's owner id)."""
        for owner, names in self.locals.items():
            for name, bound in names.items():
                names[name] = [(at, rank, self.rewrite(typ, [owner, outer], "", at - 1)
                                if rank == CALLED_RANK and "." in typ and ":" not in typ else typ)
                               for at, rank, typ in bound]

    def typed_local(self, owner: str, name: str, before: int) -> str | None:
        """The type `name` is bound to in `owner` on or before line `before` (None: none, or two)."""
        bound = self._typed(self.locals.get(owner, {}).get(name), before)
        return bound[1] or None if bound and bound[0] != INJECTED else None

    def rewrite(self, path: str, owners: list[str], cls: str, before: int | None = None) -> str:
        """The typed reference for the dotted call `path` at `before` inside the functions `owners`
        (innermost first) of type `cls`, or `path` as it was: `typed:c:Cart.add` for `c.add`
        (the receiver as written, `.` as `/`, for the resolver to fall back on)."""
        parts = path.split(".")
        bound = None
        if len(parts) == 2 and parts[0] in ("self", "cls") and cls:
            held = self.held.get(cls, {}).get(parts[1])
            if held:
                return held
            bound = self._typed(self.fields.get(cls, {}).get(parts[1]), None)
            if not bound or bound is _CONFLICT or not bound[1] or bound[0] == INJECTED:
                return path
            # `self.to_html(text)`, the field holding an instance: its type's `__call__` (the receiver as
            # written, `self/to_html`, never `self`: a type without `__call__` must not fall back on self's)
            return f"{bound[0]}{parts[0]}/{parts[1]}:{bound[1]}.__call__"
        if len(parts) == 3 and parts[0] == "self" and cls:
            bound = self._typed(self.fields.get(cls, {}).get(parts[1]), None)
        elif len(parts) == 2 and parts[0] != "self" or len(parts) == 3 and parts[0] not in ("self", "cls"):
            for i, owner in enumerate(owners):
                bound = self._typed(self.locals.get(owner, {}).get(parts[0]), before if i == 0 else None)
                if bound is not None:
                    break
            if bound and bound is not _CONFLICT and bound[1] and len(parts) == 3:
                # `x.f.m()`: the method of what the field f of x's type holds (the resolver reads it)
                bound = (bound[0], f"{parts[1]}{FIELD}{bound[1]}")
        if not bound or bound is _CONFLICT or not bound[1]:
            return path
        receiver = "/".join(parts[:-1])
        return f"{bound[0]}{receiver}:{bound[1]}.{parts[-1]}"

    def held_types(self, cls: str, owner: str) -> list[tuple[str, str, int]]:
        """(field, type, position) of each field of class `cls` bound to one type: an annotation
        in the class body (`owner`, its id: `request: PreparedRequest`) or a field of its methods
        (`self.conn: Conn`, `self.conn = Conn()`)."""
        out, seen = [], set()
        for bound in (self.fields.get(cls, {}), self.locals.get(owner, {})):
            for name, found in bound.items():
                typed = self._typed(found, None)
                if typed and typed is not _CONFLICT and typed[1] and ":" not in typed[1] and name not in seen:
                    seen.add(name)  # a class body's binding is both a local of its scope and a field
                    out.append((name, typed[1], min(at for at, _, _ in found)))
        return out
