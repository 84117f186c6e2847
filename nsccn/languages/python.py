"""Python through tree-sitter: bytes -> entities, raw references, imports and a skeleton.

One recursive walk over the concrete syntax tree collects everything; references are kept as
written ("self.save", "os.path.join") and resolved against the whole repository later
(`nsccn.indexing.resolve`), because a single file cannot know what its names point to.
"""

from __future__ import annotations

import ast
import inspect
import posixpath
import re
import sys
from collections import Counter
from functools import lru_cache

import tree_sitter as ts
import tree_sitter_python

from nsccn.reading.entity_bounds import head_lines
from nsccn.reading.testpaths import is_test_path
from nsccn.languages import global_tables as tables
from nsccn.languages.mentions import WHOLE_DOTTED, mentions
from nsccn.languages.receivers import (CALLED_RANK, DECLARED_RANK, FIXTURE_DECORATOR, GETTER, HOLDS, INJECTED_RANK, PASSES, PREFIXES,
                                      SUBCLASSES, Bindings, type_name)
from nsccn.model import Entity, Ref, entity_id

EXTENSIONS = (".py", ".pyi")

_UPPER_CONST = re.compile(r"^_?[A-Z][A-Z0-9_]*[A-Z0-9]$")  # matches only where str.isupper(), a cheaper test first
_CONFIG_NAMES = re.compile(r"(^|_)(settings|config|conf|cfg|configuration|options)$", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Methods that change the object they are called on: `self.items.append(x)` mutates self.items.
MUTATING_METHODS = frozenset(
    "append extend insert remove pop popitem clear update add discard setdefault sort reverse "
    "appendleft extendleft rotate __setitem__ __delitem__ write".split()
)
_ENV_CALLS = frozenset(("os.getenv", "os.environ.get", "environ.get", "getenv", "os.environ.setdefault"))
_CONFIG_GETTERS = frozenset(("get", "getint", "getboolean"))
DOCSTRING_SKELETON_LINES = 6  # a skeleton keeps a docstring's summary, not its examples
# Syntax nested deeper than this (500 nested calls, 400 nested defs: generated or hostile code) is
# not walked: its region is named in `deep_lines`, everything around it is kept. The walk recurses
# (at most 4 Python frames a level), so the bound also follows the room left on the stack.
MAX_NESTING = 200
_FRAMES_PER_LEVEL = 4
_LANGUAGE = ts.Language(tree_sitter_python.language())


@lru_cache(maxsize=1)
def parser() -> ts.Parser:
    return ts.Parser(_LANGUAGE)


def _kinds(*types: str) -> frozenset[int]:
    """Every `Node.kind_id` whose `Node.type` is one of `types` (aliases share a name); a name
    this grammar does not have is an error, not a kind never seen."""
    names = {i: _LANGUAGE.node_kind_for_id(i) for i in range(_LANGUAGE.node_kind_count)}
    names[_ERROR_KIND] = "ERROR"
    unknown = set(types).difference(names.values())
    if unknown:
        raise ValueError(f"not node types of tree-sitter-python: {sorted(unknown)}")
    return frozenset(i for i, name in names.items() if name in types)


_ERROR_KIND = 0xFFFF  # tree-sitter's builtin error symbol, outside node_kind_count
_IDENTIFIER_KIND = _LANGUAGE.id_for_node_kind("identifier", True)
# What the walk's loop (`_visit_nodes`) does with a node, by its kind; any other kind is _PLAIN:
# its children are walked, nothing more.
_PLAIN, _INERT, _IDENTIFIER, _STATEMENT, _CALL, _CHAIN, _ATTRIBUTE, _STRING, _SUBSCRIPT = range(9)
_STATEMENT_KINDS = _kinds(
    "decorated_definition", "function_definition", "class_definition", "import_statement", "import_from_statement",
    "future_import_statement", "global_statement", "assignment", "augmented_assignment", "raise_statement",
    "except_clause", "ERROR", "return_statement", "yield",
)
# Left-nested chains (`'a' + 'b' + ... ` a thousand terms long, which CPython compiles) are walked
# in a loop, not recursively: they cost no nesting.
_CHAIN_KINDS = _kinds("binary_operator", "boolean_operator")
_STRING_KINDS, _STRING_CONTENT_KINDS, _INTERPOLATION_KINDS = _kinds("string"), _kinds("string_content"), _kinds("interpolation")
_WALK: dict[int, int] = {
    # Leaves (and a string's literal parts) from which the walk takes nothing. A string's
    # expressions are in its `interpolation` children, which are walked.
    **dict.fromkeys(_kinds("integer", "float", "true", "false", "none", "ellipsis", "comment", "string_start",
                           "string_content", "string_end", "escape_sequence", "escape_interpolation",
                           "type_conversion", "line_continuation"), _INERT),
    **dict.fromkeys(_kinds("identifier"), _IDENTIFIER),
    **dict.fromkeys(_STATEMENT_KINDS, _STATEMENT),
    **dict.fromkeys(_kinds("call"), _CALL),
    **dict.fromkeys(_CHAIN_KINDS, _CHAIN),
    **dict.fromkeys(_kinds("attribute"), _ATTRIBUTE),
    **dict.fromkeys(_STRING_KINDS, _STRING),
    **dict.fromkeys(_kinds("subscript"), _SUBSCRIPT),
}
# The same as a list indexed by kind id (every id up to _ERROR_KIND): cheaper than `dict.get`.
_WALK_OF_KIND = [_WALK.get(kind, _PLAIN) for kind in range(_ERROR_KIND + 1)]


def module_name(path: str) -> str:
    """Dotted module name of a repository path: `src/pkg/__init__.py` -> `src.pkg`."""
    stem = posixpath.splitext(path)[0]  # `.ci/tool` (a script by its `#!` line) stays whole
    parts = stem.split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def clean_docstring(raw: str) -> str:
    """The text of a string literal node as a docstring: prefixes and quotes gone, indentation cleaned."""
    s = raw.lstrip("rRbBuUfF")
    for quote in ('"""', "'''", '"', "'"):
        if s.startswith(quote) and s.endswith(quote) and len(s) >= 2 * len(quote):
            s = s[len(quote) : -len(quote)]
            break
    return inspect.cleandoc(s)


def _text(node: ts.Node) -> str:
    return node.text.decode("utf-8", "replace")


def _source_text(src: bytes, node: ts.Node) -> str:
    """`_text` for the walk's hot paths: slicing the parsed bytes costs half of `node.text`."""
    return src[node.start_byte : node.end_byte].decode("utf-8", "replace")


def absolute_module(path: str, module: str, node: ts.Node) -> str:
    """The module an import names, relative imports made absolute: `from ..x import y` in
    `pkg/sub/mod.py` (module `pkg.sub.mod`) -> `pkg.x`."""
    if node.type != "relative_import":
        return _text(node)
    prefix = next((c for c in node.children if c.type == "import_prefix"), None)
    dots = len(_text(prefix)) if prefix is not None else 0
    rest = next((c for c in node.named_children if c.type == "dotted_name"), None)
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    parts = package.split(".") if package else []
    if dots > 1:
        parts = parts[: max(0, len(parts) - (dots - 1))]
    if rest is not None:
        parts.append(_text(rest))
    return ".".join(parts)


def _expr_name(node: ts.Node | None, src: bytes) -> str | None:
    """`a.b.c` for identifier/attribute chains, `super().m` for super calls, else None (`src`:
    the bytes the tree was parsed from)."""
    if node is None:
        return None
    parts: list[str] = []
    while node.type == "attribute":  # a loop: a chain can be thousands of attributes long
        obj = node.child_by_field_name("object")
        attr = node.child_by_field_name("attribute")
        if obj is None or attr is None:
            return None
        parts.append(_source_text(src, attr))
        node = obj
    t = node.type
    if t == "identifier":
        head = _source_text(src, node)
        if not parts:
            return head
    elif parts and t == "call":
        fn = node.child_by_field_name("function")
        if fn is None or fn.type != "identifier" or fn.text != b"super":
            return None
        head = "super()"
    else:
        return None
    return ".".join([head, *reversed(parts)])


def _stack_room() -> int:
    """Frames left before the interpreter's recursion limit."""
    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth += 1
        frame = frame.f_back
    return sys.getrecursionlimit() - depth


def nesting_budget() -> int:
    """How many syntax levels the recursive walks may go down from here."""
    return max(8, min(MAX_NESTING, (_stack_room() - 100) // _FRAMES_PER_LEVEL))


_CLASS_ANNOTATION = re.compile(r"(?:typing\.)?[tT]ype\[")  # `type[Context]`: the attribute holds the class itself


def _string_value(node: ts.Node | None, src: bytes) -> str | None:
    """The text of a string literal, None for an f-string with expressions or any other node."""
    if node is None or node.kind_id not in _STRING_KINDS:
        return None
    parts = []
    for child in node.children:
        kind = child.kind_id
        if kind in _INTERPOLATION_KINDS:
            return None
        if kind in _STRING_CONTENT_KINDS:
            parts.append(src[child.start_byte : child.end_byte].decode("utf-8", "replace"))
    return "".join(parts)


def _param_names(params: ts.Node) -> frozenset[str]:
    """A parameter list's names (`self` and `cls` left out)."""
    names = set()
    for p in params.named_children:
        ident = p if p.type == "identifier" else p.child_by_field_name("name")
        if ident is None:
            ident = next((c for c in p.named_children if c.type == "identifier"), None)
        if ident is not None and ident.type == "identifier":
            names.add(_text(ident))
    return frozenset(names - {"self", "cls"})


class _Scope:
    __slots__ = ("eid", "kind", "qualname", "class_qualname", "terms", "globals", "except_types", "params")

    def __init__(self, eid: str, kind: str, qualname: str, class_qualname: str):
        self.eid = eid
        self.kind = kind
        self.qualname = qualname
        self.class_qualname = class_qualname  # innermost enclosing class, for self/cls
        self.terms: list[str] = []
        self.globals: set[str] = set()
        self.except_types: list[list[str]] = []  # stack of `except X` types, for bare re-raise
        self.params: frozenset[str] = frozenset()  # a function's parameter names (what it may register)


# statements that hold no block (so no definition): a definitions-only walk does not look inside
_SIMPLE_STATEMENTS = frozenset((
    "expression_statement", "return_statement", "delete_statement", "raise_statement", "pass_statement",
    "break_statement", "continue_statement", "global_statement", "nonlocal_statement", "import_statement",
    "import_from_statement", "future_import_statement", "print_statement", "exec_statement", "assert_statement",
    "type_alias_statement"))


class _TooDeep(Exception):
    """A definitions-only walk nested deeper than the full walk's budget surely allows."""


class PythonExtractor:
    """Walks one file's tree. Use `extract()`; the instance holds per-file state."""

    def __init__(self, path: str, data: bytes, definitions_only: bool = False):
        self.path = path
        # only the entities (their body_terms not whole), none of the references: what a change's lines
        # are mapped onto (`nsccn.graph.impact`), a few ms where the whole walk takes ~40 on a 4,000-line
        # file; `extract` gives None where the walks could differ (syntax errors, deep nesting)
        self._definitions_only = definitions_only
        self.data = data
        self.text_lines = data.decode("utf-8", "replace").splitlines()
        self.module = module_name(path)
        self.entities: list[Entity] = []
        self.refs: list[Ref] = []
        self.imports: dict[str, str] = {}
        self.star_imports: list[str] = []
        self.module_globals: list[str] = []
        self._module_values: list[tuple[str, str | None, int]] = []  # (global, the name it is set to or None, line)
        self._strings: list[tuple[int, str]] = []  # (line, text): a test file's strings with a dot, a library's dotted names
        self._test_file = is_test_path(path)
        self._typing = Bindings()  # receiver types the source states (nsccn/languages/receivers.py)
        self._returns: list[tuple[str, str, str, int]] = []  # (function, "call"/"name", what it returns, line)
        self._reads: dict[tuple[str, str], tuple[int, str]] = {}  # (function, `obj.attr` read) -> (line, class)
        self._passed: list[tuple[str, str, int, str, str]] = []  # (scope, name handed on as a value, line, class, relation)
        self._registries: list[tuple[str, int]] = []  # (global, line): a function hands it a parameter there
        self._tables: list[tables.Span] = []  # module globals whose literal value may hold functions (global_tables.py)
        self.error_lines: list[int] = []
        self.deep_lines: list[int] = []  # where a region nested too deeply to walk begins
        self._entity_fields: dict[str, dict] = {}
        self._depth = 0
        self._max_depth = MAX_NESTING
        self._source(data)

    # -- entry point -------------------------------------------------------------------------

    def extract(self, tree: ts.Tree | None = None):
        """`tree`: `data` parsed already (by `parser()`)."""
        self._max_depth = nesting_budget()
        tree = tree if tree is not None else parser().parse(self.data)
        if tree.root_node.has_error:
            if self._definitions_only:
                return None  # the full walk finds definitions inside what does not parse
            self._collect_errors(tree.root_node)
            self._source(blank_broken_definitions(self.data))
            tree = parser().parse(self._src)
        root = tree.root_node
        mod_id = entity_id("module", self.path, self.module or "__init__")
        doc = self._docstring(root)
        scope = _Scope(mod_id, "module", "", "")
        if self._definitions_only:
            try:
                self._walk_block(root, scope)
            except _TooDeep:
                return None
        else:
            self._walk_block(root, scope)
            self._typed_calls(mod_id)
            self._module_bindings(mod_id)
            self._passes()
        self.entities.insert(
            0,
            Entity(
                id=mod_id,
                kind="module",
                path=self.path,
                qualname=self.module or "__init__",
                name=self.module.rsplit(".", 1)[-1] if self.module else "__init__",
                start_line=1,
                end_line=max(1, len(self.text_lines)),
                signature=f"module {self.module}",
                docstring=doc,
                decorators=[],
                parent=None,
                body_terms=" ".join(dict.fromkeys(scope.terms)),
                body_head="",
            ),
        )
        if self._definitions_only:
            return self
        if self._strings:  # dotted names strings spell (`locate_app("pkg.app")`, `register("x", "pkg.fmt.X")`)
            # a library global's table of dotted names is the global's (`_plugins = {"m": "pkg.m.f"}`); a
            # test module's strings stay its own (its parametrized tests read them: `fixtures.parametrized`)
            spans = self.entities[1:] + ([] if self._test_file else self._tables)
            self.refs.extend(mentions(self._strings, spans, mod_id))
        self._table_reads()
        skeleton = SkeletonBuilder(self.data, self.text_lines, self._max_depth)
        self.skeleton = skeleton.build(root)
        self.deep_lines.extend(skeleton.deep_lines)
        for star in self.star_imports:
            self.imports[f"*{star}"] = star
        return self

    def _source(self, src: bytes) -> None:
        """The bytes the walked tree is parsed from, and the same one char a byte: a name sliced
        from that by byte offsets is, when ASCII, the name's UTF-8 text, at half the cost of
        slicing and decoding the bytes."""
        self._src = src
        self._latin = src.decode("latin-1")

    # -- walking -----------------------------------------------------------------------------

    def _walk_block(self, node: ts.Node, scope: _Scope) -> None:
        for child in node.named_children:
            self._visit(child, scope)

    def _visit(self, node: ts.Node, scope: _Scope) -> None:
        if self._depth >= self._max_depth:
            self._too_deep(node)
            return
        self._depth += 1
        try:
            self._visit_node(node, scope)
        finally:
            self._depth -= 1

    def _too_deep(self, node: ts.Node) -> None:
        self.deep_lines.append(node.start_point[0] + 1)

    def _visit_node(self, node: ts.Node, scope: _Scope) -> None:
        t = node.type
        if t == "decorated_definition":
            definition = node.child_by_field_name("definition")
            if definition is not None:
                decorators = [_text(d)[1:].strip() for d in node.named_children if d.type == "decorator"]
                for d in node.named_children:
                    if d.type == "decorator" and not self._definitions_only:
                        self._visit_expr(d, scope)
                        self._decorator_call(d, scope)
                self._visit_definition(definition, scope, node, decorators)
            return
        if t in ("function_definition", "class_definition"):
            self._visit_definition(node, scope, node, [])
            return
        if self._definitions_only:
            self._definitions_in(node, scope)
            return
        if t in ("import_statement", "import_from_statement", "future_import_statement"):
            self._visit_import(node, scope)
            return
        if t == "global_statement":
            scope.globals.update(_text(c) for c in node.named_children if c.type == "identifier")
            return
        if t == "ERROR":
            self.error_lines.append(node.start_point[0] + 1)
        if t in ("assignment", "augmented_assignment"):
            self._visit_assignment(node, scope)
            return
        if t == "raise_statement":
            self._visit_raise(node, scope)
            return
        if t == "except_clause":
            self._visit_except(node, scope)
            return
        if t in ("return_statement", "yield") and scope.kind in ("func", "method"):
            self._returned(node, scope)
        if t == "with_statement":
            self._with_bindings(node, scope)
        self._visit_expr(node, scope)

    def _definitions_in(self, node: ts.Node, scope: _Scope) -> None:
        """The definitions in a statement's blocks (`if`, `try`, `with`... its clauses), where
        the full walk finds them among every node. That walk spends at most two levels of its depth
        budget on a level here (an `if`, its block: three): half the budget here leaves it room to
        find the same ones."""
        if node.type in _SIMPLE_STATEMENTS:
            return
        if 2 * self._depth + 4 >= self._max_depth:
            raise _TooDeep
        for child in node.named_children:
            t = child.type
            if t in ("decorated_definition", "function_definition", "class_definition"):
                self._visit(child, scope)
            elif t == "block" or (t.endswith(("_statement", "_clause")) and t not in _SIMPLE_STATEMENTS):
                self._depth += 1
                try:
                    self._definitions_in(child, scope)
                finally:
                    self._depth -= 1

    def _with_bindings(self, node: ts.Node, scope: _Scope) -> None:
        """`with T() as x` binds x as `x = T()` would: what `__enter__` gives, the object itself
        for nearly every context manager (a function's result: the type it returns)."""
        clause = next((c for c in node.named_children if c.type == "with_clause"), None)
        for item in clause.named_children if clause is not None else ():
            pattern = item.named_children[0] if item.named_children else None
            if pattern is None or pattern.type != "as_pattern":
                continue
            value = pattern.named_children[0] if pattern.named_children else None
            target = pattern.child_by_field_name("alias")
            name = target.named_children[0] if target is not None and target.named_children else None
            if value is not None and value.type == "call" and name is not None and name.type == "identifier":
                self._bind_type(name, None, value, scope)

    def _visit_expr(self, node: ts.Node, scope: _Scope) -> None:
        """Calls, config reads and body terms inside any expression (a statement given here is
        walked as any other node: its children, nothing more)."""
        if node.kind_id not in _STATEMENT_KINDS:
            self._visit_nodes((node,), scope)
        elif self._depth >= self._max_depth:
            self._too_deep(node)
        else:
            self._depth += 1
            try:
                self._visit_nodes(node.named_children, scope)
            finally:
                self._depth -= 1

    def _visit_nodes(self, nodes, scope: _Scope) -> None:
        """Each node one level below the current depth, and everything under it. The hot loop of
        the walk (millions of nodes on a large repository): expressions are handled in it, and
        their children walked from a stack of nodes in this loop, not by a call a node (cheaper
        than recursion, or a stack of iterators); only statements (definitions, imports,
        assignments...) go through `_visit`. A node's kind is compared as `Node.kind_id` (an
        int), not as `Node.type` (a new str at each read)."""
        max_depth = self._max_depth
        terms, eid, class_qualname = scope.terms, scope.eid, scope.class_qualname
        refs = self.refs
        src = self._src
        latin = self._latin
        walks = _WALK_OF_KIND
        base = depth = self._depth
        stack = list(nodes)[::-1]  # the next node on top; None: the end of a node's children
        pop = stack.pop
        while stack:
            child = pop()
            if child is None:
                depth -= 1
                continue
            walk = walks[child.kind_id]
            if walk == _IDENTIFIER:
                if depth >= max_depth:
                    self._too_deep(child)
                    continue
                ident = latin[child.start_byte : child.end_byte]
                if not ident.isascii():
                    ident = src[child.start_byte : child.end_byte].decode("utf-8", "replace")
                terms.append(ident)
                if ident.isupper() and _UPPER_CONST.match(ident) and not _is_store_target(child):
                    self._ref(scope, "READS_CONFIG", ident, child)
                continue
            if walk == _INERT:
                if depth >= max_depth:
                    self._too_deep(child)
                continue
            if walk == _STATEMENT:
                self._depth = depth
                self._visit(child, scope)
                continue
            if depth >= max_depth:
                self._too_deep(child)
                continue
            if walk == _PLAIN:  # the most common after names: its children, nothing more
                pass
            elif walk == _CALL:
                fn = child.child_by_field_name("function")
                if fn is not None and fn.kind_id == _IDENTIFIER_KIND:  # most calls: no chain to follow
                    name = latin[fn.start_byte : fn.end_byte]
                    if not name.isascii():
                        name = src[fn.start_byte : fn.end_byte].decode("utf-8", "replace")
                    if name in _ENV_CALLS:
                        self._call(name, child, scope)
                    else:  # what `_call` does with a plain name, without its calls
                        terms.append(name)
                        refs.append(Ref(eid, "CALLS", name, child.start_point[0] + 1, class_qualname))
                        self._passed_args(child, scope, child.start_point[0] + 1)
                else:
                    if scope.params and fn.type == "attribute":
                        self._registers(fn, child, scope)
                    name = _expr_name(fn, src)
                    if name is not None:
                        self._call(name, child, scope)
                    else:  # a call on what a call returned (`MarkdownIt().use(plugin)`): no name, yet what it is handed
                        self._passed_args(child, scope, child.start_point[0] + 1)
            elif walk == _CHAIN:
                stack.append(None)
                stack += _chain_operands(child)
                depth += 1
                continue
            elif walk == _ATTRIBUTE:
                obj = self._visit_attribute(child, scope)
                if obj is not None:
                    stack.append(None)
                    stack.append(obj)
                    depth += 1
                continue
            elif walk == _STRING:
                value = _string_value(child, src)
                if value and len(value) < 300:
                    terms.extend(_WORD.findall(value))
                if value and "." in value and (self._test_file or WHOLE_DOTTED.match(value)):
                    # a test's strings may spell a module among other words; a library's string that is
                    # one dotted name and nothing else loads it by name (`register("xlsx", "pkg.fmt.Xlsx")`)
                    self._strings.append((child.start_point[0] + 1, value))
            elif walk == _SUBSCRIPT:
                self._config_subscript(child, scope)
            # Its named children, first on top. Most nodes have one or two: `named_child(i)`
            # makes only those, `named_children` a node of every child, punctuation too.
            stack.append(None)
            depth += 1
            count = child.named_child_count
            if count == 1:
                stack.append(child.named_child(0))
            elif count == 2:
                stack.append(child.named_child(1))
                stack.append(child.named_child(0))
            elif count:
                stack += child.named_children[::-1]
        self._depth = base

    def _visit_attribute(self, node: ts.Node, scope: _Scope) -> ts.Node | None:
        """An attribute's own name (its object's are the caller's to walk: the object is returned)."""
        self._config_attribute(node, scope)
        obj, attr = node.child_by_field_name("object"), node.child_by_field_name("attribute")
        if attr is not None:
            ident = _source_text(self._src, attr)
            scope.terms.append(ident)
            if obj is not None and scope.kind in ("func", "method"):
                self._attribute_read(node, obj, ident, scope)
            # `mod.CONST` may be a constant of another module of ours; the resolver decides.
            upper = ident.isupper() and _UPPER_CONST.match(ident)
            dotted = _expr_name(node, self._src) if upper else None  # O(chain): only when needed
            if dotted and not _is_store_target(node):
                parent = node.parent
                if not (parent is not None and parent.type == "call" and parent.child_by_field_name("function") == node):
                    self._ref(scope, "READS_CONFIG", dotted, node)
        return obj

    def _visit_definition(self, node: ts.Node, scope: _Scope, outer: ts.Node, decorators: list[str]) -> None:
        name_node = node.child_by_field_name("name")
        body = node.child_by_field_name("body")
        if name_node is None:
            return
        name = _text(name_node)
        qualname = f"{scope.qualname}.{name}" if scope.qualname else name
        is_class = node.type == "class_definition"
        if is_class:
            kind = "class"
        elif scope.kind == "class":
            kind = "method"
        else:
            kind = "func"
        eid = entity_id(kind, self.path, qualname)
        signature = self._signature(node, body)
        docstring = self._docstring(body) if body is not None else ""
        class_qualname = qualname if is_class else scope.class_qualname
        inner = _Scope(eid, kind, qualname, class_qualname)
        # Defaults, annotations and bases run in the enclosing scope, but belong to this entity's text.
        if is_class:
            supers = node.child_by_field_name("superclasses")
            if supers is not None:
                for base in supers.named_children:
                    base_name = _expr_name(base, self._src)
                    if base_name is not None:
                        self._ref(inner, "INHERITS", base_name, base)
                    inner.terms.extend(_WORD.findall(_text(base)))
        elif not self._definitions_only:
            params = node.child_by_field_name("parameters")
            if params is not None:
                inner.params = _param_names(params)
                self._visit_expr(params, inner)
                self._typed_params(params, inner, injected=name.startswith("test") or any(
                    FIXTURE_DECORATOR.match(d) for d in decorators))
        if body is not None:
            self._walk_block(body, inner)
        self.refs.append(Ref(scope.eid, "CONTAINS", eid, outer.start_point[0] + 1))
        self.entities.append(
            Entity(
                id=eid,
                kind=kind,
                path=self.path,
                qualname=qualname,
                name=name,
                start_line=outer.start_point[0] + 1,
                end_line=outer.end_point[0] + 1 - (1 if outer.end_point[1] == 0 else 0),
                signature=signature,
                docstring=docstring,
                decorators=decorators,
                parent=scope.eid,
                body_terms=" ".join(dict.fromkeys(inner.terms)),
                body_head=self._body_head(body),
            )
        )

    def _visit_import(self, node: ts.Node, scope: _Scope) -> None:
        line = node.start_point[0] + 1
        if node.type == "import_statement":
            for item in node.named_children:
                if item.type == "aliased_import":
                    dotted = _text(item.child_by_field_name("name"))
                    alias = _text(item.child_by_field_name("alias"))
                    self._bind(alias, dotted, scope)
                elif item.type == "dotted_name":
                    dotted = _text(item)
                    self._bind(dotted.split(".")[0], dotted.split(".")[0], scope)
                else:
                    continue
                self._ref(scope, "IMPORTS", dotted, None, line)
            return
        if node.type == "future_import_statement":
            return
        module_node = node.child_by_field_name("module_name")
        if module_node is None:
            return
        base = absolute_module(self.path, self.module, module_node)
        names = [c for c in node.named_children if c != module_node]
        for item in names:
            if item.type == "wildcard_import":
                self.star_imports.append(base)
                self._ref(scope, "IMPORTS", base, None, line)
                continue
            if item.type == "aliased_import":
                target = _text(item.child_by_field_name("name"))
                alias = _text(item.child_by_field_name("alias"))
            elif item.type == "dotted_name":
                target = alias = _text(item)
            else:
                continue
            dotted = f"{base}.{target}" if base else target
            self._bind(alias, dotted, scope)
            self._ref(scope, "IMPORTS", dotted, None, line)

    def _bind(self, local: str, dotted: str, scope: _Scope) -> None:
        # Module-level imports win over function-local ones of the same name.
        if scope.kind == "module" or local not in self.imports:
            self.imports[local] = dotted

    def _visit_assignment(self, node: ts.Node, scope: _Scope) -> None:
        left = node.child_by_field_name("left")
        right = node.child_by_field_name("right")
        annotation = node.child_by_field_name("type")
        for target in _assignment_targets(left):
            name = _expr_name(target, self._src)
            if target.type == "subscript":
                name = _expr_name(target.child_by_field_name("value"), self._src)
                self._visit_expr(target.child_by_field_name("subscript") or target, scope)
                if scope.kind == "module" and name in self.module_globals and right is not None:
                    self._fill_table(name, node, right)  # `handlers["json"] = load_json`
                elif right is not None and right.type == "identifier" and _text(right) in scope.params:
                    self._register(scope, name, target)  # `HANDLERS[name] = func`: a decorator's registry
            if name is None:
                if target is not None:
                    self._visit_expr(target, scope)
                continue
            scope.terms.extend(name.split("."))
            head = name.split(".")[0]
            if scope.kind == "module" and "." not in name:
                self.module_globals.append(name)
            elif head in ("self", "cls") and name.count(".") >= 1 and scope.class_qualname:
                self._ref(scope, "MUTATES", ".".join(name.split(".")[:2]), target)
            elif "." not in name and name in scope.globals:
                self._ref(scope, "MUTATES", name, target)
            elif "." in name and scope.kind != "module":
                self._ref(scope, "MUTATES", name, target)
        if scope.kind == "module" and left is not None and left.type == "identifier":
            value = right
            while value is not None and value.type == "assignment":  # `s = attributes = attrs`
                value = value.child_by_field_name("right")
            if value is not None and value.type == "call" and _partial_of(value, self._src):
                value = _partial_of(value, self._src)  # `dataclass = partial(attrs, auto_attribs=True)`
            held = _expr_name(value, self._src) if value is not None and value.type in ("identifier", "attribute") else None
            self._module_values.append((_text(left), held, node.start_point[0] + 1))
            if value is not None and tables.holds_values(value):  # `_rules = [("text", rules.text), ...]`
                self._fill_table(_text(left), node, value, inside=False)
        if annotation is not None:
            self._visit_expr(annotation, scope)
        self._bind_type(left, annotation, right, scope)
        if right is not None:
            self._visit(right, scope) if right.kind_id in _STATEMENT_KINDS else self._visit_expr(right, scope)

    # -- receiver types ----------------------------------------------------------------------

    def _bind_type(self, left: ts.Node | None, annotation: ts.Node | None, right: ts.Node | None, scope: _Scope) -> None:
        """`x: T`, `x = T()`, `self.x: T`, `self.x = T()`: the name's type, as written."""
        if left is None or left.type not in ("identifier", "attribute"):
            return
        name = _expr_name(left, self._src)
        if name is None:
            return
        if scope.kind in ("class", "func", "method") and right is not None and right.type == "call" and "." not in name \
                and annotation is None:
            # `DECORATOR = staticmethod(lru_cache)`, `factory = partial(Serializer, key=k)`: what it holds
            right = _partial_of(right, self._src, _WRAPS_ONE if scope.kind == "class" else ()) or right
        if scope.kind == "class" and "." not in name and annotation is None and right is not None and right.type in ("identifier", "attribute"):
            held = _expr_name(right, self._src)  # `session_class = SecureCookieSession`
            if held:
                self._typing.holds(scope.class_qualname, name, held)
                # held as a value: whoever builds or subclasses the class may build it (`klass.OPTIONS_CLASS(meta)`)
                self._passed.append((scope.eid, held, left.start_point[0] + 1, scope.class_qualname, PASSES))
            return
        if scope.kind in ("func", "method") and "." not in name and annotation is None and right is not None \
                and right.type in ("identifier", "attribute"):
            held = _expr_name(right, self._src)  # `cls = Option`: `cls(...)` here or in a nested def builds it
            # `extract = mi.extract` (a module's function, `mi` imported): `extract(...)` calls it
            of_module = held is not None and "." in held and held.split(".", 1)[0] in self.imports
            if held and (held.rsplit(".", 1)[-1][:1].isupper() or of_module):
                self._typing.holds(f"def {scope.qualname}", name, held)
        typ, rank = None, DECLARED_RANK if annotation is not None else CALLED_RANK
        if annotation is not None:
            typ = type_name(_text(annotation))
        elif right is not None and right.type == "call":  # `T()` or `f()`: the resolver tells which
            fn = right.child_by_field_name("function")
            typ = _expr_name(fn, self._src) if fn is not None else None
        if not typ:
            return
        parts = name.split(".")
        line = left.start_point[0] + 1
        if len(parts) == 1:
            self._typing.local(scope.eid, name, typ, rank, line)
        if len(parts) == 1 and scope.kind == "class" and scope.class_qualname:
            if annotation is not None and _CLASS_ANNOTATION.match(_text(annotation)):
                self._typing.holds(scope.class_qualname, name, typ)  # `context_class: type[Context] = Context`
            else:  # `to_html = create_markdown()`, `iface: SessionInterface = ...`: what `self.name` holds in its methods
                self._typing.field(scope.class_qualname, name, typ, rank, line)
        elif len(parts) == 2 and parts[0] == "self" and scope.class_qualname and scope.kind != "class":
            self._typing.field(scope.class_qualname, parts[1], typ, rank, line)

    def _typed_params(self, params: ts.Node, scope: _Scope, injected: bool = False) -> None:
        """Typed parameters; with `injected` (a pytest test or fixture) a plain parameter too, as
        what the fixture of its name returns (the resolver finds the fixture)."""
        for p in params.named_children:
            if injected and p.type == "identifier" and _text(p) not in ("self", "cls"):
                self._typing.local(scope.eid, _text(p), _text(p), INJECTED_RANK, 0)
            if p.type not in ("typed_parameter", "typed_default_parameter"):
                continue
            annotation = p.child_by_field_name("type")
            ident = p.child_by_field_name("name") or next((c for c in p.named_children if c.type == "identifier"), None)
            typ = type_name(_text(annotation)) if annotation is not None else None
            if ident is not None and ident.type == "identifier" and typ:
                self._typing.local(scope.eid, _text(ident), typ, DECLARED_RANK, 0)

    def _decorator_call(self, decorator: ts.Node, scope: _Scope) -> None:
        """`@stream_with_context` (a name, not a call) calls it with the function it decorates; the
        enclosing scope makes that call (`@f(...)` is a call written out, already a reference)."""
        expr = next(iter(decorator.named_children), None)
        if expr is not None and expr.type in ("identifier", "attribute"):
            name = _expr_name(expr, self._src)
            if name and not name.endswith((".setter", ".getter", ".deleter")):
                self._ref(scope, "CALLS", name, None, expr.start_point[0] + 1)

    def _attribute_read(self, node: ts.Node, obj: ts.Node, attr: str, scope: _Scope) -> None:
        """`x.attr` / `self.attr` / `self.f.attr` read, not called: it runs a getter when `attr` is a
        property of x's type; kept, once a function, for `_typed_calls` to type."""
        if obj.kind_id == _IDENTIFIER_KIND:
            receiver = _source_text(self._src, obj)
        elif obj.type == "attribute" and _source_text(self._src, obj).startswith("self."):
            receiver = _expr_name(obj, self._src)
            if receiver is None or receiver.count(".") != 1:
                return
        else:
            return
        parent = node.parent
        if parent is not None and parent.type == "call" and parent.child_by_field_name("function") == node:
            return  # a call: a CALLS reference already
        key = (scope.eid, f"{receiver}.{attr}")
        if key not in self._reads:
            self._reads[key] = (node.start_point[0] + 1, scope.class_qualname)

    def _returned(self, node: ts.Node, scope: _Scope) -> None:
        """`return T(...)` / `return x` (x bound in the function) / `yield ...`: what a function
        returns when no annotation says (the resolver tells a class from a function); `?` for
        anything else it returns, `yield:` for what a generator (a pytest fixture) yields."""
        value = next(iter(node.named_children), None)
        if value is None or value.type == "none":
            return
        line = node.start_point[0] + 1
        how, what = "", "?"
        if value.type == "call":
            what = _expr_name(value.child_by_field_name("function"), self._src) or "?"
        elif value.type == "identifier":
            how, what = "name", _text(value)
        if node.type != "yield" and value.type in ("identifier", "attribute") and scope.kind in ("func", "method"):
            # `return check_typed_dict` (not called): handed to the caller, who calls it (`_passes` keeps
            # names of the file's definitions and imports)
            held = _expr_name(value, self._src)
            if held and held.split(".", 1)[0] not in ("self", "cls"):
                self._passed.append((scope.eid, held, line, scope.class_qualname, PASSES))
        self._returns.append((scope.eid, how, ("yield:" if node.type == "yield" else "") + what, line))

    def _module_bindings(self, mod_id: str) -> None:
        """`s = attrs` at the top level, `s` set nowhere else in the module (nor by a `global`
        statement): a BINDS reference, read by the resolver (nsccn/indexing/resolve_aliases.py)."""
        counts = Counter(name for name, _, _ in self._module_values)
        counts.update(r.target for r in self.refs if r.relation == "MUTATES" and "." not in r.target)
        for name, value, line in self._module_values:
            if value and counts[name] == 1 and value != name and counts[name] == self.module_globals.count(name):
                self.refs.append(Ref(mod_id, "BINDS", f"{name}={value}", line))

    def _table_reads(self) -> None:
        """A definition that reads a module global holding functions or dotted names (a `PASSES` or
        `MENTIONS` reference from the global): a `READS_CONFIG` reference, as an upper-case constant's
        read is already (made by the walk: those are left to it), which resolves to the global."""
        held = {r.source.rsplit(":", 1)[1] for r in self.refs if r.source.startswith("var:")}
        held |= {name for name, _line in self._registries}  # filled at run time by a registering function
        names = {n for n in held if not (n.isupper() and _UPPER_CONST.match(n))}
        if not names:
            return
        own = {s.id.rsplit(":", 1)[1]: s for s in self._tables}
        skip = {i for n in names if n in own for i in range(own[n].start_line, own[n].end_line + 1)}
        skip |= {line for _name, line in self._registries}  # the registration is no read
        scopes = {e.id: e.qualname.rsplit(".", 1)[0] if e.kind == "method" else "" for e in self.entities}
        for eid, name, line in tables.reads(names, self.text_lines, self.entities, skip):
            self.refs.append(Ref(eid, "READS_CONFIG", name, line, scopes.get(eid, "")))

    def _held_calls(self) -> None:
        """`cls(...)` where the function (or one enclosing it) bound `cls = Option` (a class, by its
        spelling): a call of `Option`. Two different classes bound to one name (a nested class of
        that name among them) say nothing."""
        held = {q[4:]: names for q, names in self._typing.held.items() if q.startswith("def ")}
        if not held:
            return
        defined = {e.qualname for e in self.entities}
        for q, names in held.items():  # a def or class of that name in the function binds it too: no one class
            for name in names:
                if f"{q}.{name}" in defined:
                    names[name] = ""
        out = []
        for r in self.refs:
            if r.relation == "CALLS" and "." not in r.target and not r.target.startswith(PREFIXES):
                qualname = r.source.split(":", 2)[-1] if not r.source.startswith("module:") else ""
                while qualname:
                    value = held.get(qualname, {}).get(r.target)
                    if value is not None:
                        if value:
                            r = Ref(r.source, r.relation, value, r.line, r.scope)
                        break
                    qualname = qualname.rpartition(".")[0]
            out.append(r)
        self.refs = out
        for q in [q for q in self._typing.held if q.startswith("def ")]:
            del self._typing.held[q]

    def _typed_calls(self, mod_id: str) -> None:
        """Calls on a name whose type the source states, as typed references (after the whole
        file: `self.x = T()` in `__init__` may come after the method that calls `self.x.m()`);
        what each function returns, as RETURNS references (never edges: the resolver reads them)."""
        returned: set[tuple[str, str]] = set()
        for fid, how, what, line in self._returns:
            if how == "name":  # the type the name is bound to there, or `?`
                kind, _, name = what.rpartition(":")
                bound = self._typing.typed_local(fid, name, line)
                what = f"{kind}:{bound or '?'}" if kind else bound or "?"
            if (fid, what) not in returned:  # each thing a function returns once
                returned.add((fid, what))
                self.refs.append(Ref(fid, "RETURNS", what, line))
        methods = {e.qualname for e in self.entities if e.kind == "method"}
        for cls, held in self._typing.held.items():
            for name, value in list(held.items()):
                if f"{cls}.{value}" in methods or not value:
                    del held[name]  # `alias = other_method`: `self.alias()` stays a self call
        for (fid, read), (line, cls) in self._reads.items():
            if read.startswith(("self.", "cls.")) and read.count(".") == 1:
                target = read  # the class's own member, through its bases
            else:
                target = self._typing.rewrite(read, [fid, mod_id], cls, line - 1)
                if not target.startswith(PREFIXES):
                    continue  # a receiver of no known type: no getter to name
            self.refs.append(Ref(fid, "CALLS", GETTER + target, line, cls))
        self._held_calls()
        if not self._typing.locals and not self._typing.fields and not self._typing.held:
            return
        held_below = self._held_by_subclasses(methods)
        self._typing.type_results(mod_id)
        for e in self.entities:  # what each class's fields hold, for `x.f.m()` in any file
            if e.kind == "class":
                for name, typ, line in self._typing.held_types(e.qualname, e.id):
                    self.refs.append(Ref(e.id, HOLDS, f"{name}:{typ}", line or e.start_line))
        self.refs = [Ref(r.source, r.relation, self._typing.rewrite(r.target, [r.source, mod_id], r.scope, r.line - 1 if r.source != mod_id else None), r.line, r.scope)
                     if r.relation == "CALLS" and "." in r.target and not r.target.startswith(("super()", GETTER)) else r
                     for r in self.refs]
        if held_below:
            self.refs += [Ref(r.source, r.relation, value, r.line, r.scope)
                          for r in self.refs if r.relation == "CALLS" and r.target.startswith(("self.", "cls."))
                          for value in sorted(held_below.get(r.scope, {}).get(r.target.partition(".")[2], ()))]

    def _held_by_subclasses(self, methods: set[str]) -> dict[str, dict[str, set[str]]]:
        """A mixin's `self.DECORATOR(...)` where only its subclasses in this file hold `DECORATOR =
        staticmethod(f)` (the mixin neither defines nor holds it): a call of each subclass's f,
        as `self.m()` in a base runs each subclass's override. Class qualname -> name -> values."""
        by_name = {e.name: e.qualname for e in self.entities if e.kind == "class"}
        qualnames = {e.id: e.qualname for e in self.entities if e.kind == "class"}
        out: dict[str, dict[str, set[str]]] = {}
        for r in self.refs:
            if r.relation != "INHERITS" or r.source not in qualnames:
                continue
            base = by_name.get(r.target.rsplit(".", 1)[-1])
            held = self._typing.held.get(qualnames[r.source], {})
            if base is None or not held:
                continue
            own = self._typing.held.get(base, {})
            for name, value in held.items():
                if value and name not in own and f"{base}.{name}" not in methods:
                    out.setdefault(base, {}).setdefault(name, set()).add(value)
        return out

    def _visit_raise(self, node: ts.Node, scope: _Scope) -> None:
        exprs = [c for c in node.named_children]
        if not exprs:
            for types in scope.except_types[-1:]:
                for exc in _real_types(types):
                    self._ref(scope, "PROPAGATES_ERROR", exc, node)
            return
        raised = exprs[0]
        target = raised.child_by_field_name("function") if raised.type == "call" else raised
        name = _expr_name(target, self._src)
        if name is not None and scope.except_types and name in _alias_names(scope):
            for exc in _real_types(scope.except_types[-1]):
                self._ref(scope, "PROPAGATES_ERROR", exc, node)
        elif name is not None:
            self._ref(scope, "PROPAGATES_ERROR", name, node)
        for child in exprs:
            self._visit_expr(child, scope)

    def _visit_except(self, node: ts.Node, scope: _Scope) -> None:
        types: list[str] = []
        alias = None
        body = None
        for child in node.named_children:
            if child.type == "block":
                body = child
                continue
            inner = child
            if child.type == "as_pattern":
                alias_node = child.child_by_field_name("alias")
                if alias_node is not None:
                    alias = _text(alias_node).strip()
                inner = child.named_children[0] if child.named_children else child
            elems = inner.named_children if inner.type in ("tuple", "parenthesized_expression") else [inner]
            for e in elems:
                n = _expr_name(e, self._src)
                if n:
                    types.append(n)
                    scope.terms.extend(n.split("."))
        scope.except_types.append(types + ([f"\0as:{alias}"] if alias else []))
        try:
            if body is not None:
                self._walk_block(body, scope)
        finally:
            scope.except_types.pop()

    def _call(self, name: str, node: ts.Node, scope: _Scope) -> None:
        parts = name.split(".")
        scope.terms.extend(parts[1:] if parts[0] == "super()" else parts)  # only the head can be super()
        line = node.start_point[0] + 1
        if name in _ENV_CALLS:
            args = node.child_by_field_name("arguments")
            key = _string_value(args.named_children[0], self._src) if args is not None and args.named_children else None
            self._ref(scope, "READS_CONFIG", f"env:{key or '?'}", None, line)
        elif len(parts) >= 2 and parts[-1] in _CONFIG_GETTERS and _CONFIG_NAMES.search(parts[-2]):
            args = node.child_by_field_name("arguments")
            key = _string_value(args.named_children[0], self._src) if args is not None and args.named_children else None
            self._ref(scope, "READS_CONFIG", f"config:{'.'.join(parts[:-1])}[{key or '?'}]", None, line)
        if len(parts) >= 3 and parts[0] in ("self", "cls") and parts[-1] in MUTATING_METHODS and scope.class_qualname:
            self._ref(scope, "MUTATES", ".".join(parts[:2]), None, line)
        elif len(parts) == 2 and parts[1] in MUTATING_METHODS and parts[0] in scope.globals:
            self._ref(scope, "MUTATES", parts[0], None, line)
        if scope.kind == "module" and len(parts) == 2 and parts[1] in MUTATING_METHODS and parts[0] in self.module_globals:
            self._fill_table(parts[0], node, node.child_by_field_name("arguments"))  # `lookups.append(builtin_lookup)`
        self._ref(scope, "CALLS", name, None, line)
        self._passed_args(node, scope, line)

    def _registers(self, fn: ts.Node, call: ts.Node, scope: _Scope) -> None:
        """`FUNCS[tp].append(func)`, `_hooks.append(func)`, `REG.setdefault(k, []).append(func)` in a
        function: a module global handed one of the function's parameters. A decorator that does it
        registers what it decorates, and whoever reads the global runs it: a `MUTATES` reference to
        the global (change impact walks from a decorated function to it: `Dependents._registrars`)."""
        attr = fn.child_by_field_name("attribute")
        if attr is None or _text(attr) not in MUTATING_METHODS:
            return
        obj = fn.child_by_field_name("object")
        while obj is not None and obj.type in ("subscript", "call"):  # `G[k]`, `G.setdefault(k, [])`
            obj = obj.child_by_field_name("value" if obj.type == "subscript" else "function")
            if obj is not None and obj.type == "attribute" and obj.parent is not None and obj.parent.type == "call":
                obj = obj.child_by_field_name("object")
        if obj is None or obj.type != "identifier":
            return
        args = call.child_by_field_name("arguments")
        if args is not None and any(a.type == "identifier" and _text(a) in scope.params for a in args.named_children):
            self._register(scope, _text(obj), fn)

    def _register(self, scope: _Scope, name: str | None, node: ts.Node) -> None:
        """A parameter handed to `name`: a registry when `name` is a module global the function does not
        shadow (a `global` name is a MUTATES already: `_call`)."""
        if name in self.module_globals and name not in scope.params and name not in scope.globals:
            self._ref(scope, "MUTATES", name, node)
            self._registries.append((name, node.start_point[0] + 1))

    def _fill_table(self, name: str, statement: ts.Node, value: ts.Node | None, inside: bool = True) -> None:
        """A module global's table (`nsccn.languages.global_tables`): written as a literal (`inside`
        False: the value's containers hold the names) or filled at the top level (`lookups.append(f)`,
        `handlers[key] = f`: what it is handed)."""
        if value is None:
            return
        var_id = f"var:{self.path}:{name}"
        self._tables.append(tables.Span(var_id, statement.start_point[0] + 1, statement.end_point[0] + 1))
        for held_name, line in tables.held_names(value, self._src, _expr_name, inside=inside):
            self._passed.append((var_id, held_name, line, "", PASSES))

    def _passed_args(self, call: ts.Node, scope: _Scope, line: int) -> None:
        """The names a call hands on as values (`f(Handler, key=work)`), for `_passes`."""
        args = call.child_by_field_name("arguments")
        if args is None or args.type != "argument_list":
            return
        for arg in args.named_children:
            if arg.type == "keyword_argument":
                arg = arg.child_by_field_name("value")
                if arg is None:
                    continue
            if arg.kind_id == _IDENTIFIER_KIND or arg.type == "attribute":
                passed = _expr_name(arg, self._src)
                if passed and passed.split(".", 1)[0] not in ("self", "cls"):
                    self._passed.append((scope.eid, passed, line, scope.class_qualname, PASSES))
        fn = call.child_by_field_name("function")
        named = args.named_children
        if fn is not None and fn.type == "identifier" and fn.text == b"type" and len(named) == 3 and named[1].type == "tuple":
            # `type(name, (Base,), ns)` builds a subclass at run time: class creation (a metaclass,
            # `__init_subclass__`, what the class body holds) runs there; `cls` in a classmethod is its class
            for base in named[1].named_children:
                passed = _expr_name(base, self._src) if base.kind_id == _IDENTIFIER_KIND or base.type == "attribute" else None
                if passed == "cls" and scope.kind == "method" and scope.class_qualname:
                    passed = scope.class_qualname
                if passed and passed.split(".", 1)[0] not in ("self", "cls"):
                    self._passed.append((scope.eid, passed, line, scope.class_qualname, SUBCLASSES))

    def _passes(self) -> None:
        """`socket_server(Handler)`, `_get_object(d, PackageVcs, "vcs")`, `Thread(target=work)`: a class
        or function of the file, or one it imports, handed to a call as a value, which the callee
        builds or calls at run time, held by a class attribute (`OPTIONS_CLASS = SchemaOpts`) or by a
        module global's table (`_rules = [("text", rules.text)]`, from the global: `global_tables`): a
        raw `PASSES` reference; a base of `type(name, (Base,), ns)`: a raw `SUBCLASSES` one (never
        edges: no call names them here), read by change impact (`nsccn.graph.impact`)."""
        defined = {e.name for e in self.entities if e.kind in ("func", "class") and "." not in e.qualname}
        for source, name, line, cls, relation in dict.fromkeys(self._passed):
            head = name.split(".", 1)[0]
            if head in self.imports or ("." not in name and name in defined):
                self.refs.append(Ref(source, relation, name, line, cls))

    def _config_subscript(self, node: ts.Node, scope: _Scope) -> None:
        value = _expr_name(node.child_by_field_name("value"), self._src)
        key = _string_value(node.child_by_field_name("subscript"), self._src)
        if value is None or _is_store_target(node):
            return
        if value in ("os.environ", "environ"):
            self._ref(scope, "READS_CONFIG", f"env:{key or '?'}", node)
        elif key is not None and _CONFIG_NAMES.search(value.split(".")[-1]):
            self._ref(scope, "READS_CONFIG", f"config:{value}[{key}]", node)

    def _config_attribute(self, node: ts.Node, scope: _Scope) -> None:
        obj_node = node.child_by_field_name("object")
        if obj_node is None:
            return
        # The object's last name decides; the whole dotted name is built only then (a chain of n
        # attributes would otherwise cost n^2).
        last = obj_node.child_by_field_name("attribute") if obj_node.type == "attribute" else obj_node
        if last is None or last.kind_id != _IDENTIFIER_KIND or not _CONFIG_NAMES.search(_source_text(self._src, last)):
            return
        obj = _expr_name(obj_node, self._src)
        attr = node.child_by_field_name("attribute")
        if obj is None or attr is None or _is_store_target(node):
            return
        parent = node.parent
        if parent is not None and parent.type == "call" and parent.child_by_field_name("function") == node:
            return  # a method call on the config object, handled as a call
        if _CONFIG_NAMES.search(obj.split(".")[-1]) and obj.split(".")[0] not in ("self", "cls"):
            self._ref(scope, "READS_CONFIG", f"config:{obj}.{_text(attr)}", node)

    # -- helpers -----------------------------------------------------------------------------

    def _ref(self, scope: _Scope, relation: str, target: str, node: ts.Node | None, line: int | None = None):
        if line is None:
            line = node.start_point[0] + 1 if node is not None else 0
        self.refs.append(Ref(scope.eid, relation, target, line, scope.class_qualname))

    def _signature(self, node: ts.Node, body: ts.Node | None) -> str:
        """The header on one line, without the colon and without any comment (comments after the
        colon are the body's; one inside the parentheses would swallow what follows it)."""
        end = _header_end(node)
        text = code_text(self.data, node, end)
        if text.endswith(":"):
            text = text[:-1].rstrip()
        return one_line(text)

    def _docstring(self, body: ts.Node | None) -> str:
        if body is None:
            return ""
        for child in body.named_children:
            if child.type == "comment":
                continue
            if child.type == "expression_statement" and child.named_children and child.named_children[0].type == "string":
                return clean_docstring(_text(child.named_children[0]))
            return ""
        return ""

    def _body_head(self, body: ts.Node | None, max_lines: int = 12) -> str:
        if body is None:
            return ""
        return head_lines(self.text_lines, body.start_point[0], max_lines)

    def _collect_errors(self, node: ts.Node) -> None:
        stack = [node]  # a loop, not recursion: errors can sit thousands of levels down
        while stack:
            node = stack.pop()
            if node.type == "ERROR" or node.is_missing:
                self.error_lines.append(node.start_point[0] + 1)
            elif node.has_error:
                stack.extend(node.children)


# -- code text without comments -------------------------------------------------------------------


def _header_end(node: ts.Node) -> int:
    """End byte of a compound statement's header: its colon before the first block (the
    comments after that colon belong to the body)."""
    colon = None
    for child in node.children:
        if child.type == "block":
            break
        if child.type == ":":
            colon = child
    return colon.end_byte if colon is not None else node.end_byte


def _comments(node: ts.Node, end: int) -> list[tuple[int, int]]:
    """Byte ranges of the comments inside `node` before `end`, in order."""
    out: list[tuple[int, int]] = []
    stack = [node]  # a loop: headers can nest deeply (a default value of nested calls)
    while stack:
        n = stack.pop()
        if n.start_byte >= end:
            continue
        if n.type == "comment":
            out.append((n.start_byte, n.end_byte))
        elif n.type not in ("string", "block"):
            stack.extend(n.children)
    return sorted(out)


def code_lines(data: bytes, node: ts.Node, end: int | None = None) -> list[tuple[int, str]]:
    """(row, text) of each line of `node`'s source up to byte `end`, its comments cut out; a
    line that held only a comment is dropped."""
    end = node.end_byte if end is None else end
    pieces, at = [], node.start_byte
    # Every comment starts with `#`: without one in the bytes there is no comment to look for.
    for a, b in _comments(node, end) if b"#" in data[at:end] else ():
        pieces.append(data[at:a])
        at = b
    pieces.append(data[at:end])
    lines = b"".join(pieces).decode("utf-8", "replace").split("\n")
    original = data[node.start_byte : end].decode("utf-8", "replace").split("\n")  # no comment spans a line end
    row = node.start_point[0]
    return [(row + i, ln.rstrip()) for i, (ln, orig) in enumerate(zip(lines, original)) if ln.strip() or not orig.strip()]


def code_text(data: bytes, node: ts.Node, end: int | None = None) -> str:
    return "\n".join(text for _, text in code_lines(data, node, end)).rstrip()


def one_line(text: str) -> str:
    """Code on one line: backslash continuations joined, runs of white space made one space."""
    text = re.sub(r"\\\r?\n", " ", text)
    return re.sub(r"\s+", " ", text).replace("( ", "(").replace(" )", ")").replace("[ ", "[").replace(" ]", "]").strip()


_DEF_LINE = re.compile(rb"^\s*(?:async\s+def|def|class|@)\b|^\s*@")


def _first_error_row(node: ts.Node) -> int | None:
    stack = [node]  # depth first, in source order, without recursion
    while stack:
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            return node.start_point[0]
        if node.has_error:
            stack.extend(reversed(node.children))
    return None


def _indent(line: bytes) -> int:
    return len(line) - len(line.lstrip())


def blank_broken_definitions(data: bytes, rounds: int = 20) -> bytes:
    """Blank out (keeping line numbers and byte offsets) the innermost definition around each syntax error, so the
    rest of the file parses cleanly. Tree-sitter's own recovery can swallow what follows an error."""
    lines = data.split(b"\n")
    for _ in range(rounds):
        tree = parser().parse(b"\n".join(lines))
        row = _first_error_row(tree.root_node)
        if row is None:
            break
        row = min(row, len(lines) - 1)
        start = row
        while start > 0 and not (_DEF_LINE.match(lines[start]) and _indent(lines[start]) <= _indent(lines[row])):
            start -= 1
        while start > 0 and lines[start - 1].lstrip().startswith(b"@"):
            start -= 1  # the decorators go with their definition
        base = _indent(lines[start])
        end = row + 1
        while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > base or lines[end].lstrip()[:1] in (b")", b"]", b"}")):
            end += 1
        if all(not ln.strip() for ln in lines[start:end]):
            break  # nothing left to blank: give up, keep what tree-sitter recovered
        for i in range(start, end):
            lines[i] = b" " * len(lines[i])  # same length: byte offsets into the original stay valid
    return b"\n".join(lines)


def _chain_operands(node: ts.Node) -> list[ts.Node]:
    """`a + b + c ...`: the operands of a left-nested chain, last first (as a stack takes them),
    found down its left spine in a loop (each walked at the same depth); none when a link of it
    has no children."""
    operands: list[ts.Node] = []
    while node.kind_id in _CHAIN_KINDS:
        if node.named_child_count == 2:  # the common case, without a node for the operator
            operands.append(node.named_child(1))
            node = node.named_child(0)
            continue
        children = node.named_children
        if not children:
            return []
        operands += children[:0:-1]
        node = children[0]
    operands.append(node)
    return operands


_WRAPS_ONE = ("staticmethod", "classmethod", "builtins.staticmethod", "builtins.classmethod")


def _partial_of(call: ts.Node, src: bytes, wrappers: tuple[str, ...] = ()) -> ts.Node | None:
    """`partial(f, ...)` / `functools.partial(f, ...)` (and any of `wrappers`, e.g. `staticmethod(f)`):
    f, the function it calls."""
    name = _expr_name(call.child_by_field_name("function"), src)
    args = call.child_by_field_name("arguments")
    if name not in ("partial", "functools.partial", *wrappers) or args is None or not args.named_children:
        return None
    first = args.named_children[0]
    return first if first.type in ("identifier", "attribute") else None


def _assignment_targets(left: ts.Node | None) -> list[ts.Node]:
    if left is None:
        return []
    if left.type in ("pattern_list", "tuple_pattern", "list_pattern", "tuple", "list"):
        out: list[ts.Node] = []
        for c in left.named_children:
            out.extend(_assignment_targets(c))
        return out
    if left.type == "list_splat_pattern" and left.named_children:
        return _assignment_targets(left.named_children[0])
    return [left]


def _is_store_target(node: ts.Node) -> bool:
    parent = node.parent
    while parent is not None and parent.type in ("pattern_list", "tuple_pattern", "list_pattern", "tuple", "list"):
        node, parent = parent, parent.parent
    if parent is None:
        return False
    if parent.type in ("assignment", "augmented_assignment"):
        return parent.child_by_field_name("left") == node
    return parent.type in ("keyword_argument",) and parent.child_by_field_name("name") == node


def _alias_names(scope: _Scope) -> set[str]:
    return {t[4:] for types in scope.except_types for t in types if t.startswith("\0as:")}


def _real_types(types: list[str]) -> list[str]:
    return [t for t in types if not t.startswith("\0as:")]


# -- skeletons (Telegraphic Semantic Compression) -------------------------------------------------

_DEF_TYPES = ("decorated_definition", "function_definition", "class_definition")
_COMPOUND_TYPES = ("if_statement", "try_statement", "with_statement", "for_statement", "while_statement")
_CLAUSE_TYPES = ("elif_clause", "else_clause", "except_clause", "except_group_clause", "finally_clause")
MAX_SKELETON_VALUE = 60  # longer constant values are elided to `...`


def summarize_docstring(doc: str, max_lines: int = DOCSTRING_SKELETON_LINES) -> str:
    """The first paragraph of a docstring, at most `max_lines` lines; ` ...` marks a cut."""
    paragraph = doc.strip().split("\n\n", 1)[0].splitlines()
    cut = len(paragraph) > max_lines or len(paragraph) < len(doc.strip().splitlines())
    text = "\n".join(paragraph[:max_lines]).replace('"""', '\\"\\"\\"')
    return text + (" ..." if cut else "")


class SkeletonBuilder:
    """Signatures, type hints, docstring summaries, class structure and module constants; bodies -> `...`."""

    def __init__(self, data: bytes, lines: list[str], max_depth: int = MAX_NESTING):
        self.data = data
        self.lines = lines
        self.out: list[str] = []
        self.max_depth = max_depth
        self.deep_lines: list[int] = []
        self._depth = 0

    def build(self, root: ts.Node) -> str:
        doc = _first_docstring(root)
        if doc is not None:
            self._docstring(doc, "")
        self._block(root, "", in_class=False)
        return "\n".join(self.out).rstrip() + "\n"

    def _block(self, block: ts.Node, indent: str, in_class: bool) -> int:
        emitted = 0
        for child in block.named_children:
            emitted += self._statement(child, indent, in_class)
        return emitted

    def _statement(self, node: ts.Node, indent: str, in_class: bool) -> int:
        if self._depth >= self.max_depth:
            self.deep_lines.append(node.start_point[0] + 1)
            self.out.append(indent + "...  # nested too deeply")
            return 1
        self._depth += 1
        try:
            return self._statement_node(node, indent, in_class)
        finally:
            self._depth -= 1

    def _statement_node(self, node: ts.Node, indent: str, in_class: bool) -> int:
        t = node.type
        if t in _DEF_TYPES:
            self._definition(node, indent)
            return 1
        if t in ("import_statement", "import_from_statement", "future_import_statement") and not in_class:
            # Comments out: `from x import (  # noqa` on one line would comment the names away.
            self.out.append(indent + one_line(code_text(self.data, node)))
            return 1
        if t == "expression_statement" and node.named_children and node.named_children[0].type == "assignment":
            line = self._assignment(node.named_children[0], indent)
            if line:
                self.out.append(line)
                return 1
            return 0
        if t in _COMPOUND_TYPES and _binds_names(node):  # `if TYPE_CHECKING:` imports, `try: import x`
            self._header(node, indent)
            inner = indent + "    "
            for child in node.named_children:
                if child.type == "block":
                    if not self._block(child, inner, in_class):
                        self.out.append(inner + "...")
                elif child.type in _CLAUSE_TYPES:
                    self._header(child, indent)
                    body = next((c for c in child.named_children if c.type == "block"), None)
                    if body is None or not self._block(body, inner, in_class):
                        self.out.append(inner + "...")
            return 1
        return 0

    def _header(self, node: ts.Node, indent: str, starts: set[int] | None = None) -> None:
        """A statement's header up to its colon, comments out, at `indent`: the rows in `starts`
        (decorators, the `def` line) are re-indented, continuation lines (inside brackets, where
        indentation means nothing) kept as written."""
        starts = starts or {node.start_point[0]}
        for row, text in code_lines(self.data, node, _header_end(node)):
            self.out.append(indent + text.lstrip() if row in starts else text)

    def _definition(self, outer: ts.Node, indent: str) -> None:
        node = outer.child_by_field_name("definition") if outer.type == "decorated_definition" else outer
        if node is None:
            return
        body = node.child_by_field_name("body")
        starts = {c.start_point[0] for c in outer.named_children if c.type == "decorator"} | {node.start_point[0]}
        for row, text in code_lines(self.data, outer, _header_end(node)):
            self.out.append(indent + text.lstrip() if row in starts else text)
        inner = indent + "    "
        if body is None:
            return
        doc = _first_docstring(body)
        if doc is not None:
            self._docstring(doc, inner)
        if node.type == "class_definition":
            if not self._block(body, inner, in_class=True) and doc is None:
                self.out.append(inner + "...")
        else:
            self.out.append(inner + "...")

    def _assignment(self, node: ts.Node, indent: str) -> str | None:
        left = node.child_by_field_name("left")
        if left is None or left.type not in ("identifier", "pattern_list", "tuple_pattern", "list_pattern"):
            return None
        annotation = node.child_by_field_name("type")
        right = node.child_by_field_name("right")
        text = _text(left)
        if annotation is not None:
            text += f": {_text(annotation)}"
        while right is not None and right.type == "assignment":  # `A = B = value`: every name stays
            inner_left = right.child_by_field_name("left")
            if inner_left is not None:
                text += f" = {_text(inner_left)}"
            right = right.child_by_field_name("right")
        if right is not None:
            value = _text(right)
            text += " = " + (value if len(value) <= MAX_SKELETON_VALUE and "\n" not in value else "...")
        return indent + text

    def _docstring(self, doc: ts.Node, indent: str) -> None:
        raw = _text(doc)
        summary = summarize_docstring(clean_docstring(raw))
        prefix = "r" if "r" in raw[: len(raw) - len(raw.lstrip("rRbBuUfF"))].lower() else ""
        literal = _docstring_literal(summary, indent, prefix)
        if "\\" in summary:  # escapes written for a bytes or raw literal may not hold in ours
            try:
                ast.literal_eval(literal.strip())
            except (SyntaxError, ValueError):
                literal = _docstring_literal(summary.replace("\\", "\\\\"), indent, "")
        self.out.append(literal)

    def _first_line(self, node: ts.Node) -> str:
        return self.lines[node.start_point[0]][node.start_point[1] :].rstrip() if node.start_point[0] < len(self.lines) else ""


def _docstring_literal(summary: str, indent: str, prefix: str) -> str:
    lines = summary.splitlines() or [""]
    if len(lines) == 1:
        text = lines[0] + (" " if lines[0].endswith(('"', "\\")) else "")  # a quote or backslash would end it early
        return f'{indent}{prefix}"""{text}"""'
    body = [(indent + ln) if ln.strip() else "" for ln in lines[1:]]
    return "\n".join([f'{indent}{prefix}"""{lines[0]}', *body, f'{indent}"""'])


def _first_docstring(block: ts.Node) -> ts.Node | None:
    for child in block.named_children:
        if child.type == "comment":
            continue
        if child.type == "expression_statement" and child.named_children and child.named_children[0].type == "string":
            return child.named_children[0]
        return None
    return None


_IMPORT_TYPES = ("import_statement", "import_from_statement", "future_import_statement")


def _binds_names(node: ts.Node, depth: int = 0) -> bool:
    """Whether a compound statement defines, imports or assigns a name (what a skeleton keeps)."""
    if depth > 3:
        return False
    for child in node.named_children:
        if child.type in _DEF_TYPES or child.type in _IMPORT_TYPES:
            return True
        if child.type == "expression_statement" and child.named_children and child.named_children[0].type == "assignment":
            return True
        if child.type in ("block",) + _CLAUSE_TYPES + _COMPOUND_TYPES and _binds_names(child, depth + 1):
            return True
    return False
