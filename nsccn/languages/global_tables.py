"""Module globals whose value holds functions or classes: a table of rules, handlers or plugins.

    _rules = [("text", rules_inline.text), ("link", rules_inline.link)]   # names held as values
    _plugins = {"math": "mistune.plugins.math.math"}                         # dotted names, loaded by name

    class ParserInline:
        def __init__(self):
            for name, rule in _rules:        # reads the global: it runs what the table holds
                self.ruler.push(name, rule)

No call names `rules_inline.text`, so no edge reaches it: a change in it would reach no test. The
parser keeps (1) each name a global's literal holds as a raw `PASSES` reference from the global
(`var:path:NAME`, as a call's argument is one from its caller), and a dotted string it holds as a
`MENTIONS` one from the global (`nsccn.languages.mentions`); (2) each read of such a global inside
a definition of the file as a `READS_CONFIG` reference, as the reads of an upper-case constant
already are, which the resolver turns into an edge to the global. Change impact then walks from
the held function to the global (`Dependents._passers`) and on to whoever reads it.

Only names that are elements of a container literal count (a list, tuple, set or dict, at any
depth, a call's arguments inside one included, and the containers handed to a call that is the
value: `Ruler([...])`); a global set to a call alone (`T = TypeVar("T", bound=Base)`,
`log = getLogger(__name__)`) holds what the call returns, not its arguments. A global filled at the
module's top level holds what it is handed too (`lookups.append(builtin_lookup)`, `handlers["json"]
= load_json`); and a function that returns a function or class without calling it (`return
check_typed_dict`) hands it to its caller (a `PASSES` reference from the function).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import tree_sitter as ts

CONTAINERS = frozenset(("list", "tuple", "set", "dictionary"))
_INSIDE = frozenset(("parenthesized_expression", "expression_list", "pair"))  # elements as a container's own
MAX_HELD = 2_000  # names one global's literal holds at most (a generated table says little per name)


@dataclass(frozen=True)
class Span:
    """A module-level assignment of a holder global: its lines (the strings there are the global's)."""

    id: str  # `var:path:NAME`
    start_line: int
    end_line: int


def holds_values(value: ts.Node) -> bool:
    """Whether a global's value may hold names: a container literal, or a call handed one."""
    if value.type in CONTAINERS:
        return True
    if value.type == "call":
        args = value.child_by_field_name("arguments")
        return args is not None and any(_arg_value(a).type in CONTAINERS for a in args.named_children)
    return False


def held_names(value: ts.Node, src: bytes, name_of, inside: bool = False) -> list[tuple[str, int]]:
    """(dotted name, line) of each identifier or attribute the value's containers hold as an element
    (`inside`: the value is itself held, `f` of `table.append(f)`); `name_of(node, src)` spells a
    node's dotted name (None where it is no plain name)."""
    out: list[tuple[str, int]] = []
    stack: list[tuple[ts.Node, bool]] = [(value, inside)]  # (node, inside a container)
    if inside and value.type == "argument_list":  # `table.append(f)`, `table.update(json=load)`
        stack = [(_arg_value(a), True) for a in reversed(value.named_children)]
    while stack and len(out) < MAX_HELD:
        node, inside = stack.pop()
        kind = node.type
        if kind in CONTAINERS or (inside and kind in _INSIDE):
            stack += [(c, True) for c in reversed(node.named_children)]
        elif kind == "call":  # `Rule("text", text)` in a table, or `Ruler([...])` as the value
            args = node.child_by_field_name("arguments")
            if args is not None:
                stack += [(_arg_value(a), inside) for a in reversed(args.named_children)]
        elif inside and kind in ("identifier", "attribute"):
            held = name_of(node, src)
            if held and held.split(".", 1)[0] not in ("self", "cls"):
                out.append((held, node.start_point[0] + 1))
    return out


def _arg_value(arg: ts.Node) -> ts.Node:
    if arg.type == "keyword_argument":
        return arg.child_by_field_name("value") or arg
    return arg


def reads(names: set[str], text_lines: list[str], entities: list, skip_lines: set[int]) -> list[tuple[str, str, int]]:
    """(entity id, global, line) for each line of a definition (the innermost holding the line) that
    spells one of the globals as a name (not `obj.NAME`, not a longer word); lines of the module's own
    code (no definition holds them) and `skip_lines` (the assignments themselves) are left out."""
    if not names:
        return []
    pattern = re.compile(r"(?<![\w.])(" + "|".join(re.escape(n) for n in sorted(names)) + r")(?!\w)")
    spans = sorted(((e.start_line, e.end_line, e.id) for e in entities if e.kind != "module"),
                   key=lambda s: s[1] - s[0])
    out: list[tuple[str, str, int]] = []
    seen: set[tuple[str, str]] = set()
    for i, text in enumerate(text_lines, 1):
        if i in skip_lines:
            continue
        found = pattern.findall(text)
        if not found:
            continue
        source = next((eid for start, end, eid in spans if start <= i <= end), None)
        if source is None:
            continue
        for name in found:
            if (source, name) not in seen:
                seen.add((source, name))
                out.append((source, name, i))
    return out
