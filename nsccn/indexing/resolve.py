"""Raw references -> edges between entity ids, each with a confidence and how it was resolved.

Resolutions, strongest first:
  structural      CONTAINS from the syntax tree                                   1.0
  same_scope      a nested def visible from the caller                            1.0
  same_module     a top-level def or global of the same file                      1.0
  same_package    a top-level definition of another file of the package (Go, Java)  1.0
  import          through the file's imports (re-exports and relative imports)    1.0
  self+MRO        self./cls. through the enclosing class and its bases            1.0 own, 0.9 inherited
  self+literal    `this.m()` in an object literal's method: the literal's own m  0.9
  super+MRO       super().m through the bases (JS/TS super.m(), super(...))       1.0
  star_import     a name that only a `from m import *` can provide                0.9
  external        into a module outside the repository (stdlib, third party)      1.0, target `ext:dotted`
  builtin         a builtin exception or base class                               1.0, target `ext:builtins.X`
  environment     os.environ / os.getenv                                          1.0, target `env:NAME`
  config_access   settings.X / config["x"]                                        1.0, target `config:...`
  unique_name     the only definition with that name in the repository            0.7 (0.35 for obj.m();
                  also `Cls.m()` where a decorated class of ours lacks m: a decorator added it)
  ambiguous       one of k definitions with that name                             1/k (0.5/k for obj.m())
                  (no guess for a bare name in a language that binds names by import only, nor
                  for obj.m() with m a method of the language's own types: `res.json()`; obj.m()
                  guesses members only where the language tells them from declarations; library
                  code never guesses at a test)
  typed           `obj.m()` on a receiver of a type the source states, through the type's
                  bases: declared (a typed parameter, local or field)            1.0
                  inferred from a constructor (`x = new T()`)                    0.9
                  a typed call's result (`p = req.copy()`), a typed receiver's
                  field (`r.request.copy()`: HOLDS references)                   0.9
                  the type itself found by a unique name only                    0.75
  receiver_unknown  `obj.attr = v` on an object of unknown type                   0.5

A name guess never leaves the caller's language family, and `obj.m()` with an unknown receiver
counts interface and trait declarations only where nothing implements the name.
"""

from __future__ import annotations

import builtins
import json
import re
import sys
from collections import defaultdict

from nsccn.languages import query_language
from nsccn.languages.receivers import (CONSTRUCTED, DECLARED, FIELD, FIXTURE_DECORATOR, GETTER, HOLDS, IMPL_OF, PASSES,
                                      INJECTED, PREFIXES, PYTHON_RETURN_TYPE, SUBCLASSES, type_name)
from nsccn.languages.naming import Project, package_groups
from nsccn.languages.literals import LITERAL
from nsccn.languages.scopes import LOCAL, OUTER
from nsccn.indexing.resolve_aliases import BINDS, Aliases
from nsccn.model import split_entity_id
from nsccn.reading.testpaths import is_test_path
from nsccn.store import Store

MAX_AMBIGUOUS = 8  # a name defined more often than this says nothing about the target
MAX_AMBIGUOUS_METHOD = 4  # obj.m() with an unknown receiver: stricter
_BUILTINS = frozenset(dir(builtins))
PROJECT_LANGUAGES = frozenset(("go.mod", "tsconfig", "cargo"))  # files of facts, not code
# Languages whose files call each other's definitions by name (a guess stays inside its family).
FAMILIES = {"typescript": "javascript", "tsx": "javascript", "cpp": "c"}
PROPERTY_DECORATORS = frozenset(("property", "cached_property", "abstractproperty"))  # a read runs the method
TYPED_GUESSED_TYPE = 0.75  # the receiver's type named by a unique class name, not an import
LITERAL_MEMBER = 0.9  # `this.m()` in an object literal's method: the literal's m, unless called on another object
_THIS_MEMBER = re.compile(r"this\.(#?[\w$]+)\s*=")  # `this.use = (...) => ...` in a method: a member
_PARTS = re.compile(r"[./:]+")  # the names in an import's target (`pkg.mod.f`, `./lib/tool`, `crate::m`)
_ABSTRACT = re.compile(r"(?:^|\s)(?:interface|trait|protocol)\b")  # a type whose methods declare, not implement
# obj.items(), obj.append(): with an unknown receiver these are almost always builtin containers.
_BUILTIN_METHODS = frozenset(
    name for t in (dict, list, str, set, bytes, tuple, int, float, frozenset) for name in dir(t)
) | {"read", "write", "close", "open", "flush", "seek", "get", "put", "send", "recv", "join", "split"}


class Resolver:
    """The repository's symbol table, loaded once from the store, and the rules that use it."""

    def __init__(self, store: Store, stored_bases: bool = True):
        """`stored_bases`: load the class hierarchy from the INHERITS edges (False: the caller
        resolves it from the references, `add_bases`).

        The table is a function of the files alone, never of the order they were written in
        (the actor pipeline writes parse results as they come, an update adds a file later):
        files are read in path order, and where two files claim one name the rule decides, not
        who came first (a file's own module name outranks another's canonical or alias name)."""
        c = store.conn
        self.modules: dict[str, str] = {}  # dotted name (full and canonical) -> path
        self.imports: dict[str, dict[str, str]] = {}
        self.globals: dict[str, set[str]] = {}
        self.module_entity: dict[str, str] = {}
        rows = c.execute("SELECT path, module, imports, module_globals, language FROM files ORDER BY path").fetchall()
        packages = {p.rsplit("/", 1)[0] if "/" in p else "" for p, *_ in rows if p.endswith("/__init__.py")}
        self.language: dict[str, str] = {}
        project_rows = []
        # The table's memory grows with the repository (a 100k-file tree: ~370 MB), so it holds
        # each path, kind and name once, one (id, kind) per entity, and no empty set or list:
        # every reader asks `.get(path, ())`.
        paths: dict[str, str] = {}
        canonical_names: list[tuple[str, str]] = []
        for path, module, imports, globals_, language in rows:
            paths[path] = path
            bound = json.loads(imports)
            if bound:
                self.imports[path] = bound
            names = json.loads(globals_)
            if names:
                self.globals[path] = set(names)
            self.language[path] = sys.intern(language)
            if language in PROJECT_LANGUAGES:
                project_rows.append((path, language, bound))
                continue
            self.modules.setdefault(module, path)
            canonical = _canonical_module(path, module, packages) if language == "python" else module
            if canonical != module:
                canonical_names.append((canonical, path))
        # `tool.py` is `tool`, though a script `bin/tool` (not in a package) is `tool` too
        for canonical, path in canonical_names:
            self.modules.setdefault(canonical, path)
        self.project = Project(project_rows)
        self._language_names(rows, self.project)
        self.by_key: dict[tuple[str, str], tuple[str, str]] = {}  # (path, qualname) -> (id, kind)
        self.by_name: dict[str, list[tuple[str, str]]] = defaultdict(list)  # name -> [(id, kind)]
        kinds: dict[str, str] = {}
        for eid, kind, path, qualname, name in c.execute("SELECT id, kind, path, qualname, name FROM entities"):
            path = paths.get(path, path)
            if kind == "module":
                self.module_entity[path] = eid
                continue
            entry = (eid, kinds.setdefault(kind, kind))
            self.by_key[(path, qualname)] = entry
            self.by_name[qualname if name == qualname else name].append(entry)
        if "this" in {n for lang in set(self.language.values()) for n in _self_names(lang)}:
            self._assigned_members(c)
        stars = ((p, [v for k, v in imp.items() if k.startswith("*")]) for p, imp in self.imports.items())
        self.stars = {p: found for p, found in stars if found}
        self._dotted_cache: dict[str, list[str] | None] = {}
        self.bases: dict[str, list[str]] = defaultdict(list)
        # class -> [(path, ref rowid, n, base)]: the bases in the order of the references that
        # name them, file by file in path order (`impl Trait for T` may sit in another file)
        self._base_refs: dict[str, list[tuple[str, int, int, str]]] = defaultdict(list)
        self._mro_cache: dict[str, list[str]] = {}  # cleared whenever bases change
        for source, target, path, ref, n in store.inherits() if stored_bases else ():
            self._base_refs[source].append((path, ref, n, target))
        self.order_bases(self._base_refs)
        self._store = store
        self.aliases = Aliases(store)  # module globals bound to a name (nsccn/indexing/resolve_aliases.py)
        self._conn = c  # signatures, read for the few functions whose return type a call needs
        self._returns: dict[str, str | None] = {}
        self._decorator_cache: dict[str, list[str]] = {}  # entity -> its decorators (`_decorators`)
        self._fixtures: dict[tuple[str, str], str | None] = {}  # (test file, parameter) -> fixture id
        self._local_imports: dict[tuple[str, str], set[str]] | None = None  # (path, function) -> what its body imports
        self._returned_names: dict[str, set[str]] | None = None  # function -> what its returns build (RETURNS refs)
        self._holds: dict[str, dict[str, str]] | None = None  # class -> field -> the type it holds (HOLDS refs)
        self._return_patterns: dict[str, re.Pattern | None] = {}
        self._property_patterns: dict[str, re.Pattern | None] = {}
        self._members: dict[str, bool] = {}
        self._test_paths: dict[str, bool] = {}
        # Methods declared by interfaces and traits: a name guess takes them only when nothing
        # else defines the name.
        # A signature ending in `;` is a declaration too (a C prototype, an abstract or trait method).
        abstract = {eid for eid, sig in c.execute("SELECT id, signature FROM entities WHERE kind='class'")
                    if _ABSTRACT.search(sig)}
        self.declared_only = frozenset(
            eid for eid, parent, sig in c.execute("SELECT id, parent, signature FROM entities WHERE kind IN ('method', 'func')")
            if parent in abstract or sig.endswith(";"))

    def _assigned_members(self, c) -> None:
        """`this.use = (...) => {...}` in a method of class C (a constructor, mostly) makes `use` a
        member of C: `C.use` names it, as a method written in the class body would be named."""
        for eid, path, qualname, sig in c.execute(
                "SELECT id, path, qualname, signature FROM entities WHERE kind = 'func' AND signature LIKE 'this.%'"
                " ORDER BY path, start_line, id"):  # two assignments of one name: the first written
            owner, _, name = qualname.rpartition(".")
            cls = owner.rpartition(".")[0]
            m = _THIS_MEMBER.match(sig)
            if not cls or not m or m.group(1) != name:
                continue
            hit = self.by_key.get((path, cls))
            if hit and hit[1] == "class":
                self.by_key.setdefault((path, f"{cls}.{name}"), (eid, "func"))

    def order_bases(self, sources) -> None:
        """`bases` of these classes again from `_base_refs`, in the references' order; every
        answer that went through a class hierarchy forgotten."""
        for source in sources:
            found = self.bases[source] = []
            for *_, base in sorted(self._base_refs[source]):
                if base not in found:
                    found.append(base)
        self._mro_cache.clear()
        self._dotted_cache.clear()  # `pkg.Class.member` lookups go through the MRO

    def forget_bases(self, refs: set[int]) -> None:
        """Drop the stored bases these references named (the caller resolves them again)."""
        touched = []
        for source, found in self._base_refs.items():
            kept = [b for b in found if b[1] not in refs]
            if len(kept) != len(found):
                self._base_refs[source] = kept
                touched.append(source)
        if touched:
            self.order_bases(touched)

    def stated_bases(self, refs: set[int]) -> set[tuple[int, str, str]]:
        """(ref, class, base) of the hierarchy these references named, as it stands."""
        return {(ref, source, base) for source, found in self._base_refs.items()
                for _, ref, _, base in found if ref in refs}

    def import_aliases(self, names: set[str]) -> set[str]:
        """Names imports bind to one of `names` under another name (`from tool import main as
        go`, `import pkg.tool as t`): their references mean something else when those do."""
        out: set[str] = set()
        if not names:
            return out
        for bound in self.imports.values():
            for key, value in bound.items():
                # bound under its own name (`from tool import main`): that name is among `names`
                # when what it binds changed
                if key in names or key == value or value.endswith(("." + key, "/" + key, ":" + key)):
                    continue
                if not names.isdisjoint(_PARTS.split(value)):
                    out.add(key)
        return out

    def _language_names(self, rows: list[tuple], project: Project) -> None:
        """The names other languages' imports give files (go.mod paths, tsconfig aliases, crate
        names) and the files that share a package (Go, Java)."""
        for path, module, _, _, language in rows:
            if language != "python" and language not in PROJECT_LANGUAGES:
                for name in project.names(path, language, module):
                    self.modules.setdefault(name, path)
        self.siblings = package_groups([(p, lang, m) for p, m, _, _, lang in rows])
        self._builtins: dict[str, frozenset[str]] = {"python": _BUILTINS}
        self._builtin_methods: dict[str, frozenset[str]] = {"python": _BUILTIN_METHODS}
        self._names_by_import: dict[str, bool] = {"python": True}  # `from m import *` is an import too

    def in_package(self, path: str, qualname: str) -> tuple[str, str] | None:
        """(id, kind) of `qualname` in the file, or in another file of its package (Go, Java)."""
        hit = self.by_key.get((path, qualname))
        if hit is None and path in self.siblings:
            for other in self.siblings[path]:
                hit = self.by_key.get((other, qualname))
                if hit is not None:
                    break
        return hit

    def _read_language(self, cache: dict, path: str, read, default):
        """`read(the path's QueryLanguage)` into `cache` (`default` for a language without one). The
        callers look the cache up themselves first: they run once or twice per reference."""
        language = self.language.get(path, "python")
        try:
            found = read(query_language(language))
        except KeyError:
            found = default
        cache[language] = found
        return found

    def builtins(self, path: str) -> frozenset[str]:
        found = self._builtins.get(self.language.get(path, "python"))
        return self._read_language(self._builtins, path, lambda q: q.builtins, frozenset()) if found is None else found

    def builtin_methods(self, path: str) -> frozenset[str]:
        """Method names of the language's own types: `obj.m()` on an unknown receiver is no guess."""
        found = self._builtin_methods.get(self.language.get(path, "python"))
        return self._read_language(self._builtin_methods, path, lambda q: _BUILTIN_METHODS | q.builtin_methods,
                                   _BUILTIN_METHODS) if found is None else found

    def names_by_import(self, path: str) -> bool:
        """Whether a bare name reaches another file only through an import (no name guess)."""
        found = self._names_by_import.get(self.language.get(path, "python"))
        return self._read_language(self._names_by_import, path, lambda q: q.names_by_import, False) \
            if found is None else found

    def _constructor(self, class_id: str) -> tuple[str, bool] | None:
        """What `new X()` runs in the other languages: `constructor` (JS/TS), or a method named as
        the class (Java)."""
        _, path, qualname = split_entity_id(class_id)
        if self.language.get(path, "python") == "python":
            return None
        return self.member(class_id, "constructor") or self.member(class_id, qualname.rsplit(".", 1)[-1])

    # -- lookups -----------------------------------------------------------------------------

    def mro(self, class_id: str) -> list[str]:
        cached = self._mro_cache.get(class_id)
        if cached is None:
            cached = self._mro_cache[class_id] = self._mro(class_id)
        return cached

    def _mro(self, class_id: str) -> list[str]:
        order: list[str] = []
        stack = [class_id]
        while stack and len(order) < 50:
            cid = stack.pop(0)
            if cid in order or not cid.startswith("class:"):
                continue
            order.append(cid)
            stack.extend(self.bases.get(cid, ()))
        return order

    def member(self, class_id: str, name: str, skip_own: bool = False) -> tuple[str, bool] | None:
        """(entity id, defined on the class itself) of `name` looked up through the MRO."""
        for i, cid in enumerate(self.mro(class_id)):
            if skip_own and i == 0:
                continue
            _, path, qualname = split_entity_id(cid)
            hit = self.in_package(path, f"{qualname}.{name}")
            if hit:
                return hit[0], i == 0
        return None

    def dotted(self, dotted: str, depth: int = 0) -> list[str] | None:
        """Entity ids a dotted name points to; None when it lies outside the repository."""
        if dotted in self._dotted_cache:
            return self._dotted_cache[dotted]
        found = self._dotted(dotted, depth)
        if depth == 0:  # deeper answers may be cut short by the depth limit
            self._dotted_cache[dotted] = found
        return found

    def _dotted(self, dotted: str, depth: int) -> list[str] | None:
        parts = dotted.split(".")
        for i in range(len(parts), 0, -1):
            path = self.modules.get(".".join(parts[:i]))
            if path is not None:
                rest = parts[i:]
                break
        else:
            return None
        if not rest and i > 1:
            # `from pkg import retry` where `pkg/__init__.py` defines `retry` and `pkg/retry.py` exists:
            # the package's own def, bound after its submodules are imported, is what the name holds
            package = self.modules.get(".".join(parts[: i - 1]))
            if package is not None and package.endswith("__init__.py"):
                own = self.by_key.get((package, parts[i - 1]))
                if own is not None and own[1] in ("func", "class"):
                    return [own[0]]
                # `from .url import url` in the package: the name is the function it imports, bound
                # after the submodule was (`from pkg import url` and `pkg.url(...)` call the function)
                bound = self.imports.get(package, {}).get(parts[i - 1])
                if bound and bound != dotted and depth < 6:
                    found = self.dotted(bound, depth + 1)
                    if found and all(t.startswith(("func:", "class:")) for t in found):
                        return found
        if not rest:  # a package of several files (Go, Java) is each of its files
            mods = (self.module_entity.get(p) for p in self.siblings.get(path, (path,)))
            return [m for m in mods if m]
        hit = self.in_package(path, ".".join(rest))
        if hit:
            return [hit[0]]
        cls = self.in_package(path, rest[0])
        if cls and cls[1] == "class" and len(rest) == 2:
            m = self.member(cls[0], rest[1])
            return [m[0]] if m else []
        if depth < 6:
            imports = self.imports.get(path, {})
            if rest[0] in imports and imports[rest[0]] != dotted:
                found = self.dotted(".".join([imports[rest[0]], *rest[1:]]), depth + 1)
                if found:
                    return found
            for star in self.stars.get(path, ()):
                found = self.dotted(".".join([star, *rest]), depth + 1)
                if found:
                    return found
        if len(rest) == 1 and rest[0] in self.globals.get(path, ()):
            return [f"var:{path}:{rest[0]}"]
        return []

    # -- rules -------------------------------------------------------------------------------

    def resolve(self, path: str, source: str, relation: str, target: str, scope: str) -> list[tuple[str, float, str]]:
        if relation == "CONTAINS":
            return [(target, 1.0, "structural")]
        if relation in ("RETURNS", "MENTIONS", HOLDS, BINDS, PASSES, SUBCLASSES):
            # what a function returns or a field holds (read by `typed`), a name in a string, a
            # global's value (read by `resolve_aliases`), a name handed on as a value or a base of a class built
            # at run time (read by change impact): no edge
            return []
        if relation == "IMPORTS":
            found = self.dotted(target)
            if found is None:
                return [(f"ext:{target}", 1.0, "external")]
            return [(t, 1.0, "import") for t in found]
        if relation == "READS_CONFIG":
            if target.startswith("env:"):
                return [(target, 1.0, "environment")]
            if target.startswith("config:"):
                return [(target, 1.0, "config_access")]
            # A constant of ours; constants of other packages (re.IGNORECASE) are no configuration.
            return [r for r in self.name(path, source, target, scope, relation) if not r[0].startswith("ext:")]
        if relation == "MUTATES":
            parts = target.split(".")
            if parts[0] in ("self", "cls") and scope:
                return [(f"attr:{path}:{scope}.{parts[1]}", 1.0, "self")]
            if len(parts) == 1:
                return [(f"var:{path}:{target}", 1.0, "global")]
            return [(f"attr:{path}:{target}", 0.5, "receiver_unknown")]
        if relation == "CALLS" and target.startswith(GETTER):
            return self.getter(path, source, target[len(GETTER):], scope)
        if relation == "CALLS" and target.startswith(PREFIXES):
            return self.typed(path, source, target, scope)
        if target.startswith(LOCAL):  # the file's definition the name reaches (a callback's own)
            qualname = target[len(LOCAL):]
            hit = self.by_key.get((path, qualname))
            name = qualname.rpartition(".")[2].partition("#")[0]
            if hit and not (name in self.imports.get(path, {}) and self._property(hit[0])):
                results = [(hit[0], 1.0, "same_scope" if "." in qualname else "same_module")]
            else:  # a property (`obj.f = function`) binds no name: the import is meant
                results = self._bare(path, source, name, relation, own=False)
        elif target.startswith(LITERAL):  # `this.m()` in an object literal's method: the literal's m
            hit = self.by_key.get((path, target[len(LITERAL):]))
            results = [(hit[0], LITERAL_MEMBER, "self+literal")] if hit else []
        elif target.startswith(OUTER):  # none of the file's definitions is in scope there
            results = self._bare(path, source, target[len(OUTER):], relation, own=False)
        else:
            results = self.name(path, source, target, scope, relation)
        results = self.aliases.follow(self, results, relation)  # `s = attrs`: a call of s calls attrs
        if relation == "CALLS":
            extra = []
            for tid, conf, how in results:
                if tid.startswith("class:"):
                    init = self.member(tid, "__init__") or self._constructor(tid)
                    if init:
                        extra.append((init[0], conf, how + "+constructor"))
            results += extra
        return results

    def typed(self, path: str, source: str, target: str, scope: str = "") -> list[tuple[str, float, str]]:
        """`typed:T.m` / `typednew:T.m`: the method m of the type T, through its bases; for
        `typednew:f.m` with f a function of ours (`x = f()`), the type f declares it returns. A
        type outside the repository gives no edge; a type not found leaves the call a name guess."""
        declared = target.startswith(DECLARED)
        prefix = next(p for p in PREFIXES if target.startswith(p))
        receiver, _, rest = target[len(prefix):].partition(":")
        typ, _, method = rest.rpartition(".")
        written = f"{receiver.replace('/', '.')}.{method}"  # the call as written: what a type not found leaves
        if prefix == INJECTED:  # a parameter pytest fills: the type its fixture returns
            fixture = self._fixture(path, typ)
            returned = self._function_returns(fixture, fixture=True) if fixture else None
            found = [(returned, 1.0, "fixture")] if returned else []
        elif typ.startswith(PREFIXES):  # `x = c.make()` with c typed: the type that method returns
            found = [(cid, 1.0, "returns") for cid in self._types_of(path, source, typ, scope)]
        elif FIELD in typ:  # `x.f.m()`: the type the field f of x's type holds (`f@T`)
            declared = False
            field, _, base = typ.partition(FIELD)
            held = {self._held(cid, field) for cid in self._types_of(path, source, base, scope)}
            found = [(held.pop(), 1.0, "holds")] if len(held) == 1 and None not in held else []
        else:
            found = self.name(path, source, typ, scope, "INHERITS")
        if any(t.startswith("ext:") for t, _, _ in found):
            # a type outside the repository: no edge, unless the call as written is certain (a
            # module bound by a call, `np = import_module("numpy")`, and imported as well)
            return [r for r in self.name(path, source, written, scope, "CALLS") if r[1] >= 1.0]
        classes = [(t, conf) for t, conf, _ in found if t.startswith("class:")]
        if not classes and prefix == CONSTRUCTED and not typ.startswith(PREFIXES):
            returned = self._returned(path, source, typ, scope)
            if returned is not None:
                classes = [(returned, 1.0)]
        if len(classes) > 1 and any(conf < 1.0 for _, conf in classes):
            classes = []  # several types of that name, none imported: no type known
        out = []
        for cid, conf in classes:
            m = self.member(cid, method)
            if m is not None:
                sure = (1.0 if declared else 0.9) if conf >= 1.0 else TYPED_GUESSED_TYPE
                out.append((m[0], sure, "typed"))
        if out:
            return out
        if any(b.startswith("ext:") for cid, _ in classes for c in self.mro(cid) for b in self.bases.get(c, ())):
            return []  # the method comes from a base outside the repository
        return self.name(path, source, written, scope, "CALLS")

    def _types_of(self, path: str, source: str, typ: str, scope: str) -> list[str]:
        """The one class a type written in a typed reference names: a typed call's result
        (`typed:c:Cart.make`: what Cart.make returns), or a type named in the caller's file."""
        if typ.startswith(PREFIXES):
            made = {self._function_returns(t) for t, _, how in self.typed(path, source, typ, scope) if how == "typed"}
            return [made.pop()] if len(made) == 1 and None not in made else []
        found = [t for t, conf, _ in self.name(path, source, typ, scope, "INHERITS") if conf >= 1.0 and t.startswith("class:")]
        return found if len(found) == 1 else []

    def _held(self, class_id: str, field: str) -> str | None:
        """The class a field of a class (through its bases) holds, as the class's own file names
        it: declared or built there (`HOLDS` references), or a property's return type."""
        if self._holds is None:  # one read of the HOLDS references, when a field's type first matters
            self._holds = defaultdict(dict)
            for cid, what in self._store.relation_pairs(HOLDS):
                name, _, typ = what.partition(":")
                self._holds[cid][name] = typ
        for cid in self.mro(class_id):
            typ = self._holds.get(cid, {}).get(field)
            if typ:
                _, cpath, qualname = split_entity_id(cid)
                found = [t for t, conf, _ in self.name(cpath, cid, typ, qualname, "INHERITS")
                         if conf >= 1.0 and t.startswith("class:")]
                return found[0] if len(found) == 1 else None
        getter = self.member(class_id, field)
        if getter and getter[0].startswith("method:") and self._is_getter(getter[0]):
            return self._function_returns(getter[0])
        return None

    def getter(self, path: str, source: str, read: str, scope: str) -> list[tuple[str, float, str]]:
        """`x.attr` read where x's type is known (typed, or `self`): the getter it runs when attr
        is a property of that type (through its bases); a plain attribute, or a guess, gives none."""
        found = self.typed(path, source, read, scope) if read.startswith(PREFIXES) else self.name(path, source, read, scope, "CALLS")
        return [(t, conf, how + "+property") for t, conf, how in found
                if how in ("typed", "self+MRO") and t.startswith("method:") and self._is_getter(t)]

    def _added_member(self, cls: str, name: str, relation: str, path: str, source: str) -> list[tuple[str, float, str]]:
        """`Model.from_dict(d)` where the class of ours neither defines nor inherits `from_dict` but is
        decorated (`@dataclass_json` adds it when the class is made): the method guessed by its name,
        as for a receiver of unknown type."""
        if relation != "CALLS" or not cls.startswith("class:") or name.startswith("__"):
            return []
        if not self._decorators(cls):
            return []
        return [(t, conf, how + "+decorated_class") for t, conf, how in
                self._by_name(name, relation, method=True, path=path, source=source)]

    def _decorators(self, eid: str) -> list[str]:
        """An entity's decorators as written (read once an entity, for the few the rules ask about)."""
        if eid not in self._decorator_cache:
            row = self._conn.execute("SELECT decorators FROM entities WHERE id=?", (eid,)).fetchone()
            self._decorator_cache[eid] = json.loads(row[0]) if row else []
        return self._decorator_cache[eid]

    def _is_getter(self, eid: str) -> bool:
        """Whether a method is a property's getter (`@property`, `@cached_property`): a read runs it."""
        names = [d.strip().split("(")[0].rsplit(".", 1)[-1] for d in self._decorators(eid)]
        return any(n in PROPERTY_DECORATORS for n in names)

    def _returned(self, path: str, source: str, callee: str, scope: str) -> str | None:
        """The class a function of ours declares it returns, one level deep: `x = make()` with
        `def make() -> Cart` (`fn new() -> Self`, `func NewCart() *Cart`, `make(): Cart`)."""
        found = [t for t, conf, _ in self.name(path, source, callee, scope, "CALLS")
                 if conf >= 1.0 and t.startswith(("func:", "method:"))]
        if len(found) != 1:
            return None
        return self._function_returns(found[0])

    def _function_returns(self, fid: str, fixture: bool = False) -> str | None:
        """The class a function returns (`fixture`: what a pytest fixture gives, its yield too)."""
        key = f"{fid} fixture" if fixture else fid
        if key not in self._returns:
            self._returns[key] = None  # a function that returns its own result (or a cycle of them) says nothing
            self._returns[key] = self._return_class(fid, fixture)
        return self._returns[key]

    def _fixture(self, path: str, name: str) -> str | None:
        """The pytest fixture a test or fixture of `path` gets for its parameter `name`: defined in
        its own file, else in the nearest `conftest.py` up its folders."""
        key = (path, name)
        if key not in self._fixtures:
            self._fixtures[key] = self._find_fixture(path, name)
        return self._fixtures[key]

    def _find_fixture(self, path: str, name: str) -> str | None:
        where, folder = [path], path
        while "/" in folder:
            folder = folder.rsplit("/", 1)[0]
            where.append(f"{folder}/conftest.py")
        where.append("conftest.py")
        for p in where:
            hit = self.by_key.get((p, name))
            if hit and hit[1] == "func":
                if any(FIXTURE_DECORATOR.match(d.strip().lstrip("@")) for d in self._decorators(hit[0])):
                    return hit[0]
        return None

    def _inferred_returns(self) -> dict[str, set[str]]:
        """function -> the names its `return`/`yield` statements build (`?`: something else), one
        read of the RETURNS references, when a call's type first needs it."""
        if self._returned_names is None:
            self._returned_names = defaultdict(set)
            for fid, what in self._store.relation_pairs("RETURNS"):
                self._returned_names[fid].add(what)
        return self._returned_names

    def _return_class(self, fid: str, fixture: bool = False) -> str | None:
        _, fpath, qualname = split_entity_id(fid)
        pattern = self.return_pattern(fpath)
        row = self._conn.execute("SELECT signature FROM entities WHERE id=?", (fid,)).fetchone() if pattern else None
        m = pattern.search(row[0]) if row else None
        typ = type_name(m.group(1)) if m else None
        if not typ and not (m and m.group(1).strip()):
            return self._built_class(fid, fpath, qualname, fixture)
        if not typ:
            return None
        owner = qualname.rsplit(".", 1)[0] if "." in qualname else ""
        if typ in ("Self", "self", "this") and owner:
            hit = self.in_package(fpath, owner)
            return hit[0] if hit and hit[1] == "class" else None
        # the type as the function's own file names it
        cands = [t for t, conf, _ in self.name(fpath, fid, typ, owner, "INHERITS") if conf >= 1.0 and t.startswith("class:")]
        return cands[0] if len(cands) == 1 else None

    def _built_class(self, fid: str, fpath: str, qualname: str, fixture: bool) -> str | None:
        """No return type written: the one class every `return`/`yield` of the function builds
        (`return Cart()`, `c = Cart(); ...; return c`), as its file names it; None when one returns
        anything else, or a function's result (one level deep only)."""
        built = self._inferred_returns().get(fid)
        if built and fixture:  # a yield fixture gives what it yields
            built = {b.removeprefix("yield:") for b in built}
        if not built or any(b == "?" or b.startswith("yield:") for b in built):
            return None  # something else, or a generator (what a call of it returns is no yield)
        owner = qualname.rsplit(".", 1)[0] if "." in qualname else ""
        classes = set()
        for name in built:
            found = [t for t, conf, _ in self.name(fpath, fid, name, owner, "CALLS") if conf >= 1.0]
            found = [t for t in found if not (t.startswith("method:") and t.rsplit(".", 1)[-1] == "__init__")]
            if len(found) != 1:
                return None
            # a class, or a function of ours whose own return type is known (`return make()`)
            cls = found[0] if found[0].startswith("class:") else (
                self._function_returns(found[0]) if found[0].startswith(("func:", "method:")) else None)
            if cls is None:
                return None
            classes.add(cls)
        return classes.pop() if len(classes) == 1 else None

    def return_pattern(self, path: str):
        language = self.language.get(path, "python")
        if language not in self._return_patterns:
            if language == "python":
                text = PYTHON_RETURN_TYPE
            else:
                try:
                    text = query_language(language).return_type
                except KeyError:
                    text = ""
            self._return_patterns[language] = re.compile(text) if text else None
        return self._return_patterns[language]

    def name(self, path: str, source: str, expr: str, scope: str, relation: str) -> list[tuple[str, float, str]]:
        parts = expr.split(".")
        head = parts[0]
        class_hit = self.in_package(path, scope) if scope else None
        if head == "super()":
            if class_hit and len(parts) == 2:
                m = self.member(class_hit[0], parts[1], skip_own=True)
                return [(m[0], 1.0, "super+MRO")] if m else []
            if class_hit and len(parts) == 1 and relation == "CALLS":  # JS `super(...)`: the base, built
                base = next((b for b in self.bases.get(class_hit[0], ()) if b.startswith("class:")), None)
                return [(base, 1.0, "super+MRO")] if base else []
            return []
        if head in ("self", "cls") and len(parts) == 2 and class_hit:
            m = self.member(class_hit[0], parts[1])
            if m:
                return [(m[0], 1.0 if m[1] else 0.9, "self+MRO")]
            return self._by_name(parts[1], relation, method=True, path=path, source=source)
        if len(parts) == 1:
            return self._bare(path, source, head, relation)
        imports = self.imports.get(path, {})
        if head in imports:
            dotted = ".".join([imports[head], *parts[1:]])
            found = self.dotted(dotted)
            if found is None:
                return [(f"ext:{dotted}", 1.0, "external")]
            if found:
                return [(t, 1.0, "import") for t in found]
            cls = self.dotted(dotted.rsplit(".", 1)[0]) if len(parts) >= 2 else None
            return self._added_member(cls[0], parts[-1], relation, path, source) if cls and len(cls) == 1 else []
        local = self.by_key.get((path, head))
        if local is None and head in self.builtins(path) and relation == "CALLS" and not self.in_package(path, head):
            return []  # `Object.create()`, `Math.max()`, `str.join()`: a method of a builtin, not ours
        if local and local[1] == "class" and len(parts) == 2:
            m = self.member(local[0], parts[1])
            return [(m[0], 1.0, "same_module+MRO")] if m else self._added_member(local[0], parts[1], relation, path, source)
        if head in self.modules and len(parts) >= 2:  # a fully qualified name without import
            found = self.dotted(expr)
            if found:
                return [(t, 0.9, "qualified_name") for t in found]
        # the language's own types' methods rule out a guess on a receiver of unknown type, not on
        # `this` outside a class (an object literal's methods: `this.set()` is one of them)
        own = head in ("self", "cls")
        if (own or relation == "CALLS") and parts[-1] not in (_BUILTIN_METHODS if own else self.builtin_methods(path)):
            return self._by_name(parts[-1], relation, method=True, path=path, source=source)
        return []

    def _bare(self, path: str, source: str, name: str, relation: str, own: bool = True) -> list[tuple[str, float, str]]:
        """A bare name; `own` False: no definition of the file is in scope (a callback's local
        elsewhere in the file), only its imports, globals and builtins."""
        _, _, qualname = split_entity_id(source)
        if own and not source.startswith("module:"):
            prefix = qualname
            while prefix:
                hit = self.by_key.get((path, f"{prefix}.{name}"))
                if hit and hit[1] != "method":
                    return [(hit[0], 1.0, "same_scope")]
                prefix = prefix.rpartition(".")[0]
        imports = self.imports.get(path, {})
        own_import = self._imported_here(source, imports[name]) if name in imports else None
        if name in imports and not own_import:
            # two functions of the file import the name from different modules: the file's table
            # keeps the first; a function (or one enclosing it) that imports its own binds it there
            own_import = self._imported_here(source, None, name)
        if own_import:
            # `def f(): from ._impl import f; return f()`: a function's own import binds the name
            # there, ahead of the module's definitions (a lazy import wrapper of the same name)
            found = self.dotted(own_import)
            if found is None:
                return [(f"ext:{imports[name]}", 1.0, "external")]
            if found:
                return [(t, 1.0, "import") for t in found]
        hit = self.by_key.get((path, name)) if own else None
        property_only = bool(hit and (name in imports or name in self.builtins(path)) and self._property(hit[0]))
        if property_only:
            hit = None  # `req.accepts = function`, `{ vary () {} }`: no local name; the import (or global) is meant
        if hit and hit[0] in self.declared_only and relation == "CALLS":
            hit = self._body_of(path, name) or hit
        if hit:
            return [(hit[0], 1.0, "same_module")]
        hit = None if property_only or not own else self.in_package(path, name)
        if hit:
            return [(hit[0], 1.0, "same_package")]
        if name in imports:
            found = self.dotted(imports[name])
            if found is None:
                return [(f"ext:{imports[name]}", 1.0, "external")]
            if found:
                return [(t, 1.0, "import") for t in found]
        if name in self.globals.get(path, ()):
            return [(f"var:{path}:{name}", 1.0, "same_module")]
        for other in self.siblings.get(path, ()) if relation == "PROPAGATES_ERROR" else ():
            if name in self.globals.get(other, ()):
                return [(f"var:{other}:{name}", 1.0, "same_package")]
        for star in self.stars.get(path, ()):
            found = self.dotted(f"{star}.{name}")
            if found:
                return [(t, 0.9, "star_import") for t in found]
        if name in self.builtins(path):
            if relation == "CALLS":
                return []  # len(), print(): every function calls them, no agent asks
            return [(f"ext:builtins.{name}", 1.0, "builtin")]
        if self.names_by_import(path):
            return []  # bound by nothing of the file, no import resolves it: a parameter, a local, a global
        return self._by_name(name, relation, method=False, path=path, source=source)

    def _imported_here(self, source: str, dotted: str | None, name: str = "") -> str | None:
        """`dotted` where a function (or one enclosing it) imports it in its own body; with `dotted`
        None, what the innermost one of them imports whose last part is `name`."""
        if source.startswith("module:"):
            return None
        if self._local_imports is None:  # one read of the imports made inside functions, when first asked
            self._local_imports = defaultdict(set)
            for fid, target in self._store.relation_pairs("IMPORTS"):
                if not fid.startswith("module:"):
                    _, fpath, fqual = split_entity_id(fid)
                    self._local_imports[(fpath, fqual)].add(target)
        _, path, qualname = split_entity_id(source)
        while qualname:
            here = self._local_imports.get((path, qualname), ())
            if dotted is not None and dotted in here:
                return dotted
            if dotted is None:
                named = sorted(t for t in here if t.rpartition(".")[2] == name)
                if len(named) == 1:
                    return named[0]
            qualname = qualname.rpartition(".")[0]
        return None

    def _property(self, eid: str) -> bool:
        """Whether a definition binds no name in its file (a property, an object literal's method:
        its language's `property_definition` pattern over its signature)."""
        pattern = self._property_pattern(split_entity_id(eid)[1])
        if pattern is None:
            return False
        row = self._conn.execute("SELECT signature FROM entities WHERE id=?", (eid,)).fetchone()
        return bool(row and pattern.search(row[0]))

    def _member(self, eid: str) -> bool:
        """Whether a function can be an object's member: a property or literal method where the
        language's `property_definition` tells one from a declaration, any function elsewhere."""
        found = self._members.get(eid)
        if found is None:
            found = self._members[eid] = self._property_pattern(split_entity_id(eid)[1]) is None or self._property(eid)
        return found

    def _property_pattern(self, path: str) -> re.Pattern | None:
        language = self.language.get(path, "python")
        if language not in self._property_patterns:
            try:
                text = query_language(language).property_definition
            except KeyError:
                text = ""
            self._property_patterns[language] = re.compile(text) if text else None
        return self._property_patterns[language]

    def _is_test(self, path: str) -> bool:
        found = self._test_paths.get(path)
        if found is None:
            found = self._test_paths[path] = is_test_path(path)
        return found

    def _body_of(self, path: str, qualname: str) -> tuple[str, str] | None:
        """The definition with a body of a name first declared without one in the same file
        (a C prototype, then the function: ids `f` and `f#2`)."""
        for n in range(2, 6):
            hit = self.by_key.get((path, f"{qualname}#{n}"))
            if hit is None:
                return None
            if hit[0] not in self.declared_only:
                return hit
        return None

    def impl_owner(self, path: str, source: str, scope: str) -> str | None:
        """The type an `impl Trait for Type` of another file's type attaches to (scope `impl Type`)."""
        found = self.name(path, source, scope[len(IMPL_OF):], "", "INHERITS")
        classes = [t for t, conf, _ in found if t.startswith("class:") and conf >= 1.0]
        return classes[0] if len(classes) == 1 else None

    def family(self, path: str) -> str:
        language = self.language.get(path, "python")
        return FAMILIES.get(language, language)

    def _by_name(self, name: str, relation: str, method: bool, path: str = "", source: str = "") -> list[tuple[str, float, str]]:
        if name.startswith("__") and name.endswith("__"):
            return []
        kinds = ("class",) if relation in ("INHERITS", "PROPAGATES_ERROR") else ("func", "class", "method")
        cands = [eid for eid, kind in self.by_name.get(name, ()) if kind in kinds]
        if path and cands:  # a guess never leaves the caller's language
            family = self.family(path)
            cands = [eid for eid in cands if self.family(split_entity_id(eid)[1]) == family]
        if path and cands and not self._is_test(path):  # library code calls no test, example or doc
            cands = [eid for eid in cands if not self._is_test(split_entity_id(eid)[1])]
        if method and relation == "CALLS":
            # `obj.m()` reaches a function only through an object that holds it: a member (a
            # property, an object literal's method), not a name a declaration binds (`function
            # f`, `const f = ...`), where the language tells them apart
            cands = [eid for eid in cands if eid.startswith("method:")] or [
                eid for eid in cands if self._member(eid)]
            cands = [eid for eid in cands if eid != source]  # `obj.m()` inside m: another object's m
        if relation == "CALLS":
            cands = [eid for eid in cands if eid not in self.declared_only] or cands
        k = len(cands)
        limit = MAX_AMBIGUOUS_METHOD if method else MAX_AMBIGUOUS
        if k == 0 or k > limit:
            return []
        scale = 0.5 if method else 1.0
        if k == 1:
            return [(cands[0], 0.7 * scale, "unique_name")]
        # sorted: a guess's edges in one order, whichever file was written first
        return [(c, round(scale / k, 4), f"ambiguous:{k}") for c in sorted(cands)]


def _self_names(language: str) -> tuple[str, ...]:
    """The receivers a language reads as the enclosing type (`this` where a method can assign one)."""
    try:
        return query_language(language).self_names
    except KeyError:
        return ()


def _canonical_module(path: str, module: str, packages: set[str]) -> str:
    """The import name of a module: from the outermost package directory down, so
    `src/pkg/mod.py` (with `src/pkg/__init__.py`, no `src/__init__.py`) imports as `pkg.mod`."""
    parts = path.split("/")
    dirs = parts[:-1]
    start = len(dirs)
    while start > 0 and "/".join(dirs[:start]) in packages:
        start -= 1
    dotted = module.split(".")
    return ".".join(dotted[start:]) if start < len(dotted) else module


def resolve_edges(store: Store, refs: list[tuple], resolver: Resolver | None = None) -> list[tuple]:
    inherits = [r for r in refs if r[3] == "INHERITS"]
    resolver = resolver or Resolver(store)
    # Bases first: self.m() through the MRO needs them. The stored ones these references named
    # go: they are resolved again here.
    resolver.forget_bases({r[0] for r in inherits})
    add_bases(resolver, inherits)
    return edges_of(resolver, refs)


def add_bases(resolver: Resolver, inherits: list[tuple]) -> None:
    """The bases these INHERITS references name, added to the resolver's hierarchy. Each is
    resolved without the hierarchy (a base named through another class's bases would depend on
    which was resolved first: on the order the files were written in)."""
    touched = set()
    hierarchy, resolver.bases = resolver.bases, defaultdict(list)
    resolver._mro_cache.clear()
    resolver._dotted_cache.clear()
    try:
        for ref in inherits:
            rowid, path, source, relation, target, line, scope = ref
            if scope.startswith(IMPL_OF):
                source = resolver.impl_owner(path, source, scope)
                if source is None:
                    continue
            for n, (tid, conf, how) in enumerate(resolver.resolve(path, source, relation, target, scope)):
                resolver._base_refs[source].append((path, rowid, n, tid))
            touched.add(source)
    finally:
        resolver.bases = hierarchy
    resolver.order_bases(touched)


def edges_of(resolver: Resolver, refs: list[tuple]) -> list[tuple]:
    edges: list[tuple] = []
    # A function names the same thing many times (sympy: 668k references, 169k distinct within
    # their file). With the bases fixed, resolving is a pure function of the reference, so each
    # distinct one is resolved once; the memo holds one file's (refs come ordered by file).
    memo: dict[tuple, list[tuple[str, float, str]]] = {}
    memo_path = None
    for ref in refs:
        rowid, path, source, relation, target, line, scope = ref
        if path != memo_path:
            memo.clear()
            memo_path = path
        if relation == "INHERITS" and scope.startswith(IMPL_OF):
            source = resolver.impl_owner(path, source, scope)
            if source is None:
                continue
        key = (source, relation, target, scope)
        targets = memo.get(key)
        if targets is None:
            targets = memo[key] = _targets(resolver, path, source, relation, target, scope)
        for tid, conf, how in targets:
            edges.append((source, tid, relation, conf, how, line, path, rowid))
    return edges


def _targets(resolver: Resolver, path: str, source: str, relation: str, target: str, scope: str) -> list[tuple]:
    """(target id, confidence, resolution) of one reference's edges: no self-edge but a call, no repeat."""
    out, seen = [], set()
    for tid, conf, how in resolver.resolve(path, source, relation, target, scope):
        if tid == source and relation != "CALLS" or tid in seen:
            continue
        seen.add(tid)
        out.append((tid, conf, how))
    return out


def resolve_all(store: Store) -> int:
    """Recompute every edge in this process, in one transaction. Used after a bulk index.
    References are read and resolved a chunk at a time: memory holds the symbol table, never
    every reference. (`nsccn.indexing.resolution` chooses between this and child processes.)"""
    n = 0
    with store.conn:
        store.ref_indexes()
        store.delete_edges(relation="INHERITS")
        resolver = Resolver(store)
        add_bases(resolver, [r for chunk in store.ref_chunks(relation="INHERITS") for r in chunk])
        with store.edges_replaced():
            for chunk in store.ref_chunks():
                edges = edges_of(resolver, chunk)
                store.add_edges(edges)
                n += len(edges)
    return n
