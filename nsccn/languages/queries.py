"""The language-agnostic extractor: a language's tree-sitter queries -> entities, raw references,
imports and a skeleton.

A language is a folder of `.scm` files plus a `QueryLanguage` saying only what queries cannot
(extensions, how a module is named, how an import statement binds names). The queries run in C
through one `QueryCursor` pass; their matches come back grouped but not in source order, so they
are sorted here. The capture names are those of tree-sitter's tags queries, so a standard
`tags.scm` alone gives a language its modules, definitions and name-resolved references:

  @definition.function|method|class|interface|struct|enum|trait|type|union|record|object|module
      with @name, optional @body (what a skeleton elides), @receiver (the type a Go method
      attaches to) and @receiver.name (the receiver variable, read as `self`)
  @scope.impl with @scope.type and optional @scope.trait: definitions inside attach to that type
      (Rust impl blocks); the trait is a base of the type
  @reference.call|class with @name or @callee (the called expression, `a.b.c` or `A::b`), or
      @callee.object and @name (`obj` and `m` of `obj.m()`)
  @reference.inherits|implementation with @name     -> INHERITS
  @import (the statement; the language's `bindings` reads it), @import.source
  @mutates with @target                              -> MUTATES (`this.x = v`)
  @config with @key                                  -> READS_CONFIG `env:KEY`
  @error with @type                                  -> PROPAGATES_ERROR
  @elide                                             a body the skeleton elides (anonymous functions)
  @doc (with a definition)                           its doc comment, where no comment just before it is
  @global with @name                                 a package-level variable (resolves as `var:path:name`)
  @binding / @binding.field with @binding.name and @binding.type (declared), @binding.new
      (constructed) or @binding.call (a call's result): a local, parameter or field bound to a
      type (nsccn/languages/receivers.py)
"""

from __future__ import annotations

import posixpath
import re
from functools import cached_property
from pathlib import Path

import tree_sitter as ts

from nsccn.reading.entity_bounds import head_lines
from nsccn.languages.literals import LITERAL, Literals
from nsccn.languages.scopes import Scopes
from nsccn.languages.receivers import (CALLED_RANK, CONSTRUCTED, CONSTRUCTED_RANK, DECLARED_RANK, HOLDS, IMPL_OF, Bindings,
                                      type_name)
from nsccn.model import Entity, Ref, entity_id

HERE = Path(__file__).parent
CLASS_WORDS = frozenset("class interface struct enum trait type union record object".split())
NAMESPACE_WORDS = frozenset(("module", "namespace"))
FUNCTION_WORDS = frozenset(("function", "method", "macro", "constructor"))
_CHAIN = re.compile(r"^#?[A-Za-z_$][\w$]*(?:\s*(?:\?\.|\.|::|->)\s*#?[A-Za-z_$][\w$]*)*$")  # `#m`: JS private
_SEP = re.compile(r"\s*(?:\?\.|\.|::|->)\s*")
_IDENT = re.compile(r"[A-Za-z_$][\w$]*")
_COMMENT_MARKS = re.compile(r"^\s*(?:/\*\*?|\*/|\*(?!/)|///?!?|//!|#+|--)\s?")
BODY_HEAD_LINES = 12
DOC_MAX_CHARS = 2000


class QueryLanguage:
    """What one language says about itself. Subclasses override the class attributes and hooks."""

    name = ""
    extensions: tuple[str, ...] = ()
    filenames: tuple[str, ...] = ()  # whole file names (`Makefile`)
    shebangs: tuple[str, ...] = ()  # interpreters in a `#!` line (`node`)
    query_dirs: tuple[str, ...] = ()  # folders under nsccn/languages holding this language's .scm files
    query_files: tuple[str, ...] = ()  # or single files there (`javascript/definitions.scm`)
    self_names: tuple[str, ...] = ("this", "self", "Self")  # receivers read as the enclosing type
    super_names: tuple[str, ...] = ()  # receivers read as the bases (`super.m()`, `super(...)`), as Python's `super()`
    wrapper_types: tuple[str, ...] = ()  # nodes around a definition that belong to it (`export`, `const`)
    attribute_types: tuple[str, ...] = ()  # nodes between a doc comment and its definition (`#[derive]`)
    comment_types: tuple[str, ...] = ("comment",)
    doc_parents: tuple[str, ...] = ()  # a definition first in one of these is documented before it (Go `type`)
    signature_prefix: dict[str, str] = {}  # node type -> words its signature starts with (`type ` for a type_spec)
    builtins: frozenset[str] = frozenset()  # names resolved to `ext:builtins.X` when nothing else defines them
    # methods of the standard library's own types (`arr.map()`, `res.json()`): with a receiver of
    # unknown type a call of one of these names is no guess at ours
    builtin_methods: frozenset[str] = frozenset()
    # a bare name reaches another file's definition only through an import (ES modules): a name
    # neither imported nor defined in the file is a parameter, a local or a global, never a guess
    names_by_import = False
    elide_unbodied = False  # a function without a body keeps its header line only in the skeleton (tags queries)
    implicit_self: tuple[str, ...] = ()  # call nodes whose bare name inside a class means `this.m()` (Java)
    return_type = ""  # regex over a function's signature, group 1 the type it declares it returns
    property_definition = ""  # regex over a signature: a definition that binds no name (`obj.f = function`, `{ m() {} }`)
    anonymous_functions: tuple[str, ...] = ()  # unnamed function nodes: a definition inside one is seen only there
    object_literals: tuple[str, ...] = ()  # object literal nodes: `this` in one's method is the literal (literals.py)
    this_functions: tuple[str, ...] = ()  # the nodes that give `this` a value of their own (not arrow functions)

    def grammar(self):  # the tree-sitter language capsule
        raise NotImplementedError

    def module_name(self, path: str, root: ts.Node) -> str:
        """How other files name this one: the path without its extension (`.ci/run` stays whole)."""
        return posixpath.splitext(path)[0] or path

    def bindings(self, extractor: "QueryExtractor", node: ts.Node, caps: dict) -> list[tuple[str, str]]:
        """(local name, absolute target) pairs an @import match binds; `*target` as the local
        name for a wildcard import."""
        return []

    def exports(self, extractor: "QueryExtractor", node: ts.Node, caps: dict) -> list[tuple[str, str]]:
        return []

    @cached_property
    def language(self) -> ts.Language:
        return ts.Language(self.grammar())

    @cached_property
    def parser(self) -> ts.Parser:
        return ts.Parser(self.language)

    @cached_property
    def query(self) -> ts.Query:
        sources = []
        for folder in self.query_dirs:
            sources.extend(p.read_text() for p in sorted((HERE / folder).glob("*.scm")))
        sources.extend((HERE / f).read_text() for f in self.query_files)
        sources.append("".join(f"({t}) @comment\n" for t in self.comment_types))
        return ts.Query(self.language, "\n".join(sources))

    def extract(self, path: str, data: bytes) -> "QueryExtractor":
        return QueryExtractor(self, path, data).extract()


def node_text(node: ts.Node) -> str:
    return node.text.decode("utf-8", "replace")


def clean_comment(text: str) -> str:
    lines = []
    for line in text.splitlines():
        line = _COMMENT_MARKS.sub("", line.rstrip())
        line = line[:-2].rstrip() if line.endswith("*/") else line
        lines.append(line.rstrip())
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines)[:DOC_MAX_CHARS]


def unquote(text: str) -> str:
    return text.strip().strip("\"'`")


class _Def:
    __slots__ = ("node", "outer", "word", "name", "body", "receiver", "receiver_name", "start", "end",
                 "eid", "kind", "qualname", "children", "is_scope", "trait", "entity_class", "doc", "name_node")

    def __init__(self, node, outer, word, name, body, receiver=None, receiver_name=None, is_scope=False, trait=None):
        self.node, self.outer, self.word, self.name, self.body = node, outer, word, name, body
        self.receiver, self.receiver_name, self.is_scope, self.trait = receiver, receiver_name, is_scope, trait
        self.start, self.end = outer.start_byte, outer.end_byte
        self.eid = self.kind = self.qualname = ""
        self.entity_class = ""  # qualname of the type `self` means inside
        self.children: list[tuple[int, int]] = []
        self.doc: list[ts.Node] = []  # @doc nodes of its match
        self.name_node: ts.Node | None = None


class QueryExtractor:
    def __init__(self, lang: QueryLanguage, path: str, data: bytes):
        self.lang = lang
        self.path = path
        self.data = data
        self.text_lines = data.decode("utf-8", "replace").splitlines()
        self.module = ""
        self.entities: list[Entity] = []
        self.refs: list[Ref] = []
        self.imports: dict[str, str] = {}
        self.module_globals: list[str] = []
        self.error_lines: list[int] = []
        self.deep_lines: list[int] = []
        self.skeleton = ""
        self._bound: list[tuple[int, bool, str, str, int, int]] = []  # (start, field?, name, type, rank, end)

    def extract(self) -> "QueryExtractor":
        tree = self.lang.parser.parse(self.data)
        root = tree.root_node
        if root.has_error:
            self._collect_errors(root)
        self.module = self.lang.module_name(self.path, root)
        mod_id = entity_id("module", self.path, self.module)
        defs: list[_Def] = []
        refs: list[tuple] = []  # (start, end, relation, target, node, start of the called name or -1)
        elide: list[ts.Node] = []
        comments: list[ts.Node] = []
        for _, caps in ts.QueryCursor(self.lang.query).matches(root):
            self._match(caps, defs, refs, elide, comments)
        # A name being defined is no call of it (Elixir's `def f(x)`, Julia's `f(x) = ...` read as calls).
        named_at = {d.name_node.start_byte for d in defs if d.name_node is not None}
        refs = [r for r in refs if r[5] not in named_at]
        defs.sort(key=lambda d: (d.start, -d.end))
        self._nest(defs, mod_id)
        self._attach_refs(defs, refs, mod_id)
        self._entities(defs, mod_id, comments)
        self.skeleton = self._skeleton(defs, elide, comments)
        return self

    # -- matches -----------------------------------------------------------------------------

    def _match(self, caps: dict, defs: list, refs: list, elide: list, comments: list) -> None:
        one = {k: v[0] for k, v in caps.items()}
        for cap, node in one.items():
            if cap.startswith("definition."):
                word = cap.split(".", 1)[1]
                name = one.get("name")
                if name is None or not (word in CLASS_WORDS or word in FUNCTION_WORDS or word in NAMESPACE_WORDS):
                    return
                outer = node
                while outer.parent is not None and outer.parent.type in self.lang.wrapper_types:
                    outer = outer.parent
                body = one.get("body") or node.child_by_field_name("body")
                receiver = one.get("receiver")
                d = _Def(node, outer, word, node_text(name), body,
                         node_text(receiver) if receiver is not None else None,
                         node_text(one["receiver.name"]) if "receiver.name" in one else None)
                d.doc, d.name_node = caps.get("doc", []), name
                defs.append(d)
                return
            if cap == "scope.impl":
                typ = one.get("scope.type")
                if typ is not None:
                    trait = one.get("scope.trait")
                    defs.append(_Def(node, node, "impl", node_text(typ), None, is_scope=True,
                                     trait=node_text(trait) if trait is not None else None))
                return
            if cap == "reference.call" and "callee.new" in one:  # `new T().m()`: T's method, as built
                typ = type_name(node_text(one["callee.new"]))
                if typ:
                    method = one["callee.method"]
                    refs.append((node.start_byte, node.end_byte, "CALLS",
                                 f"{CONSTRUCTED}{typ.replace('.', '/')}:{typ}.{node_text(method)}", node, method.start_byte))
                return
            if cap in ("reference.call", "reference.class"):
                callee = one.get("callee") or one.get("name")
                if callee is not None:
                    target = node_text(callee)
                    if "callee.object" in one:  # Java: `obj.m()` has no node for `obj.m`
                        target = f"{node_text(one['callee.object'])}.{target}"
                    elif "callee" not in one:  # a tags query's @name alone: `obj.m()` is a method call
                        target = _with_receiver(callee, target)
                    refs.append((node.start_byte, node.end_byte, "CALLS", target, node, callee.start_byte))
                return
            if cap in ("reference.inherits", "reference.implementation"):
                name = one.get("name")
                if name is not None:
                    refs.append((node.start_byte, node.end_byte, "INHERITS", node_text(name), node, -1))
                return
            if cap == "mutates":
                target = one.get("target")
                if target is not None:
                    refs.append((node.start_byte, node.end_byte, "MUTATES", node_text(target), node, -1))
                return
            if cap == "config":
                key = one.get("key")
                if key is not None:
                    refs.append((node.start_byte, node.end_byte, "READS_CONFIG", "env:" + unquote(node_text(key)), node, -1))
                return
            if cap == "error":
                typ = one.get("type")
                if typ is not None:
                    refs.append((node.start_byte, node.end_byte, "PROPAGATES_ERROR", node_text(typ), node, -1))
                return
            if cap == "import":
                for local, target in self.lang.bindings(self, node, one):
                    if not local or not target:
                        continue
                    if not local.startswith("\0"):  # "\0..." binds no name: `import './polyfill'`
                        self.imports[local] = target
                    refs.append((node.start_byte, node.end_byte, "IMPORTS", target, node, -1))
                return
            if cap == "export":
                for local, target in self.lang.exports(self, node, one):
                    self.imports.setdefault(local, target)
                return
            if cap == "global":  # a package-level variable (`var ErrNotFound = errors.New(...)`)
                name = one.get("name")
                if name is not None:
                    self.module_globals.append(node_text(name))
                return
            if cap in ("binding", "binding.field"):
                name = one.get("binding.name")
                typ = one.get("binding.type") or one.get("binding.new") or one.get("binding.call")
                found = type_name(node_text(typ)) if typ is not None else None
                rank = DECLARED_RANK if "binding.type" in one else CONSTRUCTED_RANK if "binding.new" in one else CALLED_RANK
                if name is not None and found:
                    self._bound.append((node.start_byte, cap == "binding.field", node_text(name), found, rank,
                                        node.end_byte))
                return
            if cap == "elide":
                elide.append(node)
                return
            if cap == "comment":
                comments.append(node)
                return

    # -- structure ---------------------------------------------------------------------------

    def _nest(self, defs: list[_Def], mod_id: str) -> None:
        """Qualnames, kinds and ids from how definitions contain each other."""
        stack: list[_Def] = []
        seen: dict[str, int] = {}
        for d in defs:
            while stack and stack[-1].end <= d.start:
                stack.pop()
            parent = next((p for p in reversed(stack) if not p.is_scope), None)
            scope = stack[-1] if stack else None
            prefix = scope.qualname if scope is not None else ""
            if d.receiver:  # a Go method: attached to its type wherever it is written
                prefix = d.receiver
            d.qualname = f"{prefix}.{d.name}" if prefix else d.name
            in_type = d.receiver or (scope is not None and (scope.is_scope or scope.word in CLASS_WORDS))
            if d.is_scope:
                d.kind = ""
                d.entity_class = d.qualname
            elif d.word in CLASS_WORDS or d.word in NAMESPACE_WORDS:
                d.kind = "class"
                d.entity_class = d.qualname
            else:
                d.kind = "method" if in_type else "func"
                d.entity_class = (d.receiver or (scope.entity_class if scope is not None else "")) if in_type else (
                    scope.entity_class if scope is not None else "")
            if not d.is_scope:
                base = d.qualname
                n = seen.get(f"{d.kind}:{base}", 0)
                seen[f"{d.kind}:{base}"] = n + 1
                if n:  # overloads (Java, TS signatures): one id each, in source order
                    d.qualname = f"{base}#{n + 1}"
                d.eid = entity_id(d.kind, self.path, d.qualname)
                if parent is not None:
                    parent.children.append((d.start, d.end))
            stack.append(d)
        self._parents = {}
        parent_defs = {}
        stack = []
        for d in defs:
            while stack and stack[-1].end <= d.start:
                stack.pop()
            owner = next((p for p in reversed(stack) if not p.is_scope), None)
            self._parents[id(d)] = owner.eid if owner is not None else mod_id
            parent_defs[id(d)] = owner
            stack.append(d)
        self._scopes = Scopes(defs, self.lang.anonymous_functions, parent_defs)
        self._literals = Literals(defs, self.lang.object_literals, self.lang.this_functions)

    def _attach_refs(self, defs: list[_Def], refs: list, mod_id: str) -> None:
        """Each reference to its innermost enclosing definition, in source order."""
        refs.sort(key=lambda r: (r[0], -r[1]))
        typing = self._typing(defs)
        stack: list[_Def] = []
        di = 0
        selves: dict[str, str] = {}
        for start, end, relation, target, node, _ in refs:
            while di < len(defs) and defs[di].start <= start:
                while stack and stack[-1].end <= defs[di].start:
                    stack.pop()
                stack.append(defs[di])
                di += 1
            while stack and stack[-1].end <= start:
                stack.pop()
            owner = next((d for d in reversed(stack) if not d.is_scope), None)
            scope = stack[-1] if stack else None
            cls = scope.entity_class if scope is not None else ""
            line = node.start_point[0] + 1
            if relation == "INHERITS":
                src = owner
                if scope is not None and scope.is_scope:  # `impl Trait for Type`: the type's base
                    continue
                if src is None or src.kind != "class":
                    continue
                self.refs.append(Ref(src.eid, relation, self._path(target, None), line, src.qualname))
                continue
            source = owner.eid if owner is not None else mod_id
            receiver = next((d.receiver_name for d in reversed(stack) if d.receiver_name), None)
            if relation == "CALLS" and target.startswith(CONSTRUCTED):  # typed where it was written
                self.refs.append(Ref(source, relation, target, line, cls))
                continue
            if relation in ("CALLS", "MUTATES", "PROPAGATES_ERROR"):
                path = self._path(target, receiver)
                if path is None:
                    continue
                if (self.lang.implicit_self and relation == "CALLS" and cls and "." not in path
                        and node.type in self.lang.implicit_self and path not in self.imports):
                    path = f"self.{path}"
                if relation == "MUTATES" and not path.startswith("self."):
                    continue
                if relation == "CALLS" and "." not in path:
                    path = self._scopes.rewrite(path, start)
                elif relation == "CALLS" and path.startswith("self."):
                    path = self._literals.rewrite(path, node)
                if relation == "CALLS" and typing is not None and "." in path and not path.startswith(LITERAL):
                    owners = [d.eid for d in reversed(stack) if not d.is_scope]
                    # inside a function a binding counts after it (not in its own right-hand side); at
                    # module level (callbacks are scopes of their own: `(c) => c.json()`) anywhere
                    path = typing.rewrite(path, owners + [""], cls, start if owners else None)
                self.refs.append(Ref(source, relation, path, line, cls))
            else:
                self.refs.append(Ref(source, relation, target, line, cls))
        for d in defs if typing is not None else ():  # what each class's fields hold, for `x.f.m()` in any file
            if d.kind == "class":
                for name, typ, _ in typing.held_types(d.qualname, ""):
                    self.refs.append(Ref(d.eid, HOLDS, f"{name}:{typ}", d.node.start_point[0] + 1))
        for d in defs:  # `impl Trait for Type`: the type inherits the trait, if the type is here
            if d.is_scope and d.trait:
                own = next((e for e in defs if e.kind == "class" and e.qualname == d.name), None)
                if own is not None:
                    self.refs.append(Ref(own.eid, "INHERITS", self._path(d.trait, None) or d.trait,
                                         d.node.start_point[0] + 1, own.qualname))
                else:  # the type is defined in another file: the resolver finds it by its name
                    self.refs.append(Ref(mod_id, "INHERITS", self._path(d.trait, None) or d.trait,
                                         d.node.start_point[0] + 1, f"{IMPL_OF}{d.name}"))
        del selves

    def _typing(self, defs: list[_Def]) -> Bindings | None:
        """The file's @binding matches, each to the innermost definition around it: a local to
        that function, a field to the type it is in."""
        if not self._bound:
            return None
        typing = Bindings()
        stack: list[_Def] = []
        di = 0
        for start, is_field, name, typ, rank, end in sorted(self._bound):
            while di < len(defs) and defs[di].start <= start:
                stack.append(defs[di])
                di += 1
            while stack and stack[-1].end <= start:
                stack.pop()
            owner = next((d for d in reversed(stack) if not d.is_scope), None)
            if is_field:
                typing.field(owner.entity_class if owner is not None else "", name, typ, rank, end)
            else:
                typing.local(owner.eid if owner is not None else "", name, typ, rank, end)
        typing.type_results("")
        return typing

    def _path(self, expr: str, receiver: str | None) -> str | None:
        """`a.b.c` / `A::b` / `this.x` -> dotted, the receiver as `self`; None for anything else."""
        expr = re.sub(r"<[^<>]*>", "", expr).strip()  # generic arguments: `Vec::<T>::new`, `List<String>`
        if not _CHAIN.match(expr):
            return None
        parts = _SEP.split(expr)
        if parts[0] in self.lang.self_names or parts[0] == receiver:
            parts[0] = "self"
        elif parts[0] in self.lang.super_names:
            parts[0] = "super()"
        return ".".join(parts)

    def _entities(self, defs: list[_Def], mod_id: str, comments: list[ts.Node]) -> None:
        by_end = {}
        for c in comments:
            by_end.setdefault(c.end_point[0], c)
        for d in defs:
            if d.is_scope:
                continue
            start_row, doc = self._doc(d.outer, by_end)
            if not doc and d.doc:  # the query's @doc: a docstring inside, or a comment the grammar nests
                doc = clean_comment("\n".join(node_text(n) for n in d.doc)).strip().strip('"\'').strip()
                start_row = min(start_row, min(n.start_point[0] for n in d.doc))
            end = d.outer.end_point[0] + 1 - (1 if d.outer.end_point[1] == 0 and d.outer.end_point[0] > d.outer.start_point[0] else 0)
            body = d.body
            head_end = body.start_byte if body is not None and body.start_byte > d.outer.start_byte else None
            signature = self.lang.signature_prefix.get(d.outer.type, "") + self._signature(d.outer, head_end)
            if d.kind == "class" and d.word not in NAMESPACE_WORDS and not re.search(rf"\b{d.word}\b", signature):
                signature = f"{d.word} {signature}"
            self.refs.append(Ref(self._parents[id(d)], "CONTAINS", d.eid, d.outer.start_point[0] + 1))
            self.entities.append(Entity(
                id=d.eid, kind=d.kind, path=self.path, qualname=d.qualname, name=d.name,
                start_line=start_row + 1, end_line=end, signature=signature, docstring=doc, decorators=[],
                parent=self._parents[id(d)], body_terms=self._terms(d), body_head=self._body_head(body),
            ))
        last = max(1, len(self.text_lines))
        self.entities.insert(0, Entity(
            id=mod_id, kind="module", path=self.path, qualname=self.module,
            name=self.module.replace("/", ".").rsplit(".", 1)[-1] or self.module, start_line=1, end_line=last,
            signature=f"module {self.module}", docstring="", decorators=[], parent=None,
            body_terms=" ".join(dict.fromkeys(_IDENT.findall(self._outside(0, len(self.data), [(d.start, d.end) for d in defs if self._parents[id(d)] == mod_id])))),
            body_head="",
        ))

    def _doc(self, outer: ts.Node, by_end: dict) -> tuple[int, str]:
        """(first row of the definition with its doc comment and attributes, the doc's text)."""
        parent = outer.parent
        if parent is not None and parent.type in self.lang.doc_parents and parent.named_children[0] == outer:
            outer = parent
        row = outer.start_point[0]
        prev = _before(outer)
        while prev is not None and prev.type in self.lang.attribute_types and prev.end_point[0] >= row - 1:
            row = prev.start_point[0]
            prev = prev.prev_named_sibling
        docs = []
        while prev is not None and prev.type in self.lang.comment_types and prev.end_point[0] >= row - 1:
            docs.append(prev)
            row = prev.start_point[0]
            prev = prev.prev_named_sibling
        if not docs:
            return outer.start_point[0] if row == outer.start_point[0] else row, ""
        return row, clean_comment("\n".join(node_text(c) for c in reversed(docs)))

    def _signature(self, node: ts.Node, head_end: int | None) -> str:
        end = head_end if head_end is not None else node.end_byte
        text = self.data[node.start_byte:end].decode("utf-8", "replace")
        if head_end is None:
            text = text.split("\n", 1)[0]
        text = re.sub(r"//[^\n]*|/\*.*?\*/", " ", text, flags=re.S)
        text = re.sub(r"\s+", " ", text).strip()
        return re.sub(r"\s*(?:\{|=>|=|:)\s*$", "", text)[:400] or text[:400]

    def _outside(self, start: int, end: int, spans: list[tuple[int, int]]) -> str:
        pieces, at = [], start
        for a, b in sorted(spans):
            if a >= at:
                pieces.append(self.data[at:a])
                at = b
        pieces.append(self.data[at:end])
        return b" ".join(pieces).decode("utf-8", "replace")

    def _terms(self, d: _Def) -> str:
        return " ".join(dict.fromkeys(_IDENT.findall(self._outside(d.start, d.end, d.children))))

    def _body_head(self, body: ts.Node | None) -> str:
        if body is None:
            return ""
        return head_lines(self.text_lines, body.start_point[0], BODY_HEAD_LINES)

    def _collect_errors(self, node: ts.Node) -> None:
        stack = [node]
        while stack:
            node = stack.pop()
            if node.type == "ERROR" or node.is_missing:
                self.error_lines.append(node.start_point[0] + 1)
            elif node.has_error:
                stack.extend(node.children)

    # -- skeleton ----------------------------------------------------------------------------

    def _skeleton(self, defs: list[_Def], elide: list[ts.Node], comments: list[ts.Node]) -> str:
        """The file with function bodies elided (`{ ... }`) and comments other than doc comments
        cut: signatures, type declarations, imports and docs stay, in the language's own syntax."""
        spans: list[tuple[int, int, str]] = []
        for d in defs:
            if d.kind in ("func", "method") and d.body is not None:
                spans.append(_elision(d.body))
            elif d.kind in ("func", "method") and self.lang.elide_unbodied and d.name_node is not None:
                # no body known: the header through the end of the name's line, then `...`
                head_end = self.data.find(b"\n", d.name_node.end_byte, d.outer.end_byte)
                if head_end != -1:
                    spans.append((head_end, d.outer.end_byte, " ..."))
        spans.extend(_elision(n) for n in elide)
        doc_rows = {n.start_byte for d in defs for n in d.doc}  # the query's @doc
        for d in defs:
            outer = d.outer
            if outer.parent is not None and outer.parent.type in self.lang.doc_parents and outer.parent.named_children[0] == outer:
                outer = outer.parent
            prev = _before(outer)
            row = outer.start_point[0]
            while prev is not None and (prev.type in self.lang.comment_types or prev.type in self.lang.attribute_types) \
                    and prev.end_point[0] >= row - 1:
                doc_rows.add(prev.start_byte)
                row = prev.start_point[0]
                prev = prev.prev_named_sibling
        for c in comments:
            if c.start_byte not in doc_rows:
                spans.append((c.start_byte, c.end_byte, ""))
        spans.sort(key=lambda s: (s[0], -s[1]))
        out, at = [], 0
        for a, b, repl in spans:
            if a < at:
                continue  # inside an elided span
            out.append(self.data[at:a])
            out.append(repl.encode())
            at = b
        out.append(self.data[at:])
        text = b"".join(out).decode("utf-8", "replace")
        lines, blank = [], False
        for line in text.splitlines():
            line = line.rstrip()
            if not line:
                if not blank and lines:
                    lines.append("")
                blank = True
                continue
            blank = False
            lines.append(line)
        return "\n".join(lines).rstrip() + "\n"


_MEMBER_MARKS = frozenset((".", "->", "&.", "?.", ":"))


def _with_receiver(name: ts.Node, text: str) -> str:
    """`m` of `obj.m()` / `obj->m()` / `obj:m()` as `obj.m` (`_.m` for a receiver that is no plain
    name), so the resolver reads a method call, not a plain function's name."""
    prev = name.prev_sibling
    if prev is None or prev.type not in _MEMBER_MARKS:
        return text
    obj = prev.prev_sibling or (name.parent.prev_sibling if name.parent is not None else None)
    recv = node_text(obj).strip() if obj is not None else ""
    return f"{recv if _CHAIN.match(recv) and not recv.startswith('#') else '_'}.{text}"


def _before(node: ts.Node) -> ts.Node | None:
    """The node before `node`; for the first of a node that starts with it (Ruby's body_statement
    inside a class, whose comments belong to the class), the node before that."""
    prev = node.prev_named_sibling
    while prev is None and node.parent is not None and node.parent.start_byte == node.start_byte:
        node = node.parent
        prev = node.prev_named_sibling
    return prev


def _elision(body: ts.Node) -> tuple[int, int, str]:
    text = body.text
    if text.startswith(b"{") and text.endswith(b"}"):
        return body.start_byte, body.end_byte, "{ ... }"
    return body.start_byte, body.end_byte, "..."
