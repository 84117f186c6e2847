"""JavaScript (and the module rules TypeScript shares): ES modules and CommonJS.

A module is named by its path without the extension (`src/util`; `src/util/index.js` is `src/util`),
so an import specifier maps to a module by path arithmetic alone: `./util` from `src/app.js` is
`src/util`. A bare specifier (`react`, `@/util`) stays as written: the resolver maps it through
`tsconfig.json` `paths` / `baseUrl` when one says so, else it is a package outside the repository.
"""

from __future__ import annotations

import posixpath

import tree_sitter as ts

from nsccn.languages.queries import QueryExtractor, QueryLanguage, node_text, unquote

SOURCE_EXTENSIONS = (".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts", ".d.ts")
GLOBALS = frozenset(
    "require module console setTimeout setInterval clearTimeout clearInterval parseInt parseFloat isNaN isFinite "
    "encodeURIComponent decodeURIComponent encodeURI decodeURI JSON Math Object Array String Number Boolean "
    "Promise Symbol Map Set WeakMap WeakSet Date RegExp Error TypeError RangeError SyntaxError ReferenceError "
    "EvalError URIError AggregateError Buffer process fetch structuredClone queueMicrotask setImmediate "
    "Reflect Proxy BigInt globalThis window document alert describe it test expect beforeEach afterEach "
    "beforeAll afterAll jest".split()
) | frozenset(  # the web platform's globals (browsers, Deno, Bun, workers, Node 18+)
    "Response Request Headers URL URLSearchParams FormData Blob File ReadableStream WritableStream TransformStream "
    "TextEncoder TextDecoder AbortController AbortSignal Event EventTarget CustomEvent ErrorEvent MessageEvent "
    "WebSocket Worker crypto atob btoa navigator location performance ArrayBuffer SharedArrayBuffer DataView "
    "Uint8Array Uint16Array Uint32Array Int8Array Int16Array Int32Array Float32Array Float64Array BigInt64Array "
    "BigUint64Array Uint8ClampedArray Intl WeakRef FinalizationRegistry Iterator".split()
)

# The methods of ECMAScript's and the web platform's own types (Object, Array, String, Map, Set,
# Promise, RegExp, Date, Function; Response/Request bodies, Headers, URL, streams, events).
BUILTIN_METHODS = frozenset(
    "toString toLocaleString valueOf hasOwnProperty isPrototypeOf propertyIsEnumerable "
    "at concat copyWithin entries every fill filter find findIndex findLast findLastIndex flat flatMap forEach "
    "includes indexOf join keys lastIndexOf map pop push reduce reduceRight reverse shift slice some sort splice "
    "toReversed toSorted toSpliced unshift values with "
    "charAt charCodeAt codePointAt endsWith localeCompare match matchAll normalize padEnd padStart repeat replace "
    "replaceAll search split startsWith substring substr toLowerCase toUpperCase trim trimStart trimEnd "
    "get set has delete clear add "
    "then catch finally call apply bind exec test getTime toISOString toJSON "
    "text json blob arrayBuffer formData bytes clone append getSetCookie "
    "getReader getWriter read write close cancel abort releaseLock pipeTo pipeThrough tee enqueue "
    "addEventListener removeEventListener dispatchEvent preventDefault stopPropagation".split()
)


def strip_source_extension(path: str) -> str:
    for ext in sorted(SOURCE_EXTENSIONS, key=len, reverse=True):
        if path.endswith(ext):
            return path[: -len(ext)]
    return path


def module_of(path: str) -> str:
    """`src/util.ts` -> `src/util`; `src/util/index.js` -> `src/util`; `index.js` -> `index`."""
    stem = strip_source_extension(path)
    if stem.endswith("/index"):
        return stem[: -len("/index")]
    return stem


def resolve_specifier(importer: str, spec: str) -> str:
    """The module an import specifier names: relative ones by path, bare ones as written."""
    spec = unquote(spec)
    if spec.startswith("."):
        base = posixpath.dirname(importer)
        joined = posixpath.normpath(posixpath.join(base, spec))
        if joined.startswith(".."):
            return spec  # above the repository: leave it to the resolver as a package name
        return module_of(joined) if joined != "." else "index"
    return strip_source_extension(spec) if spec.startswith(("/", "@/", "~/")) else spec


class JavaScript(QueryLanguage):
    name = "javascript"
    extensions = (".js", ".jsx", ".mjs", ".cjs")
    shebangs = ("node", "nodejs", "deno", "bun")
    query_dirs = ("javascript",)
    self_names = ("this",)
    super_names = ("super",)
    wrapper_types = ("export_statement", "lexical_declaration", "variable_declaration", "expression_statement")
    builtins = GLOBALS
    builtin_methods = BUILTIN_METHODS
    names_by_import = True
    anonymous_functions = ("arrow_function", "function_expression", "generator_function", "function")
    object_literals = ("object",)
    this_functions = ("function_declaration", "function_expression", "function", "generator_function",
                      "generator_function_declaration", "method_definition", "class_body", "class_declaration",
                      "class", "program")
    # a definition that binds no name in its file: a property (`req.accepts = function`), an object
    # literal's method (`{ vary (field) {...} }`, `get URL () {...}`): any but a declaration
    property_definition = (r"^(?!(?:export\s+)?(?:default\s+)?(?:declare\s+)?(?:async\s+)?"
                           r"(?:function|class|abstract|const|let|var|interface|type|enum|namespace|module)\b)")

    def grammar(self):
        import tree_sitter_javascript

        return tree_sitter_javascript.language()

    def module_name(self, path: str, root: ts.Node) -> str:
        return module_of(path)

    def bindings(self, ex: QueryExtractor, node: ts.Node, caps: dict) -> list[tuple[str, str]]:
        source = caps.get("import.source")
        if source is None:
            return []
        target = resolve_specifier(ex.path, node_text(source))
        out: list[tuple[str, str]] = []
        if node.type == "import_statement":
            clause = next((c for c in node.named_children if c.type == "import_clause"), None)
            if clause is None:  # import './side-effect'
                return [(f"\0side:{target}", target)]
            for c in clause.named_children:
                if c.type == "identifier":  # import X from 'm': the default export
                    out.append((node_text(c), f"{target}.default"))
                elif c.type == "namespace_import":
                    ident = next((i for i in c.named_children if i.type == "identifier"), None)
                    if ident is not None:
                        out.append((node_text(ident), target))
                elif c.type == "named_imports":
                    out.extend(_specifiers(c, "import_specifier", target))
            return out
        if node.type == "export_statement":  # re-exports
            clause = next((c for c in node.named_children if c.type == "export_clause"), None)
            if clause is None:
                ns = next((c for c in node.named_children if c.type == "namespace_export"), None)
                if ns is not None:
                    ident = next((i for i in ns.named_children if i.type in ("identifier", "string")), None)
                    return [(node_text(ident), target)] if ident is not None else []
                return [(f"*{target}", target)]  # export * from 'm'
            return _specifiers(clause, "export_specifier", target)
        # require('m'): what it is assigned to
        parent = node.parent
        while parent is not None and parent.type in ("await_expression", "parenthesized_expression"):
            parent = parent.parent
        if parent is not None and parent.type == "member_expression":  # require('m').x
            prop = parent.child_by_field_name("property")
            holder = parent.parent
            if prop is not None and holder is not None and holder.type == "variable_declarator":
                name = holder.child_by_field_name("name")
                if name is not None and name.type == "identifier":
                    return [(node_text(name), f"{target}.{node_text(prop)}")]
            return [(f"\0side:{target}", target)]
        if parent is not None and parent.type == "variable_declarator":
            name = parent.child_by_field_name("name")
            if name is not None and name.type == "identifier":
                return [(node_text(name), target)]
            if name is not None and name.type == "object_pattern":
                for p in name.named_children:
                    if p.type == "shorthand_property_identifier_pattern":
                        out.append((node_text(p), f"{target}.{node_text(p)}"))
                    elif p.type == "pair_pattern":
                        key, value = p.child_by_field_name("key"), p.child_by_field_name("value")
                        if key is not None and value is not None and value.type == "identifier":
                            out.append((node_text(value), f"{target}.{node_text(key)}"))
                return out
        return [(f"\0side:{target}", target)]

    def exports(self, ex: QueryExtractor, node: ts.Node, caps: dict) -> list[tuple[str, str]]:
        name = caps.get("name")
        if name is None:
            return []
        if name.type == "export_clause":  # export { X as Y }
            out = []
            for spec in name.named_children:
                local, alias = spec.child_by_field_name("name"), spec.child_by_field_name("alias")
                if spec.type == "export_specifier" and local is not None and alias is not None:
                    local_name = unquote(node_text(local))
                    out.append((unquote(node_text(alias)), ex.imports.get(local_name, f"{ex.module}.{local_name}")))
            return out
        if name.type in ("function_declaration", "class_declaration", "class"):
            ident = name.child_by_field_name("name")
            if ident is None:
                return []
            local = node_text(ident)
        else:
            local = node_text(name)
        return [("default", ex.imports.get(local, f"{ex.module}.{local}"))]


def _specifiers(clause: ts.Node, kind: str, target: str) -> list[tuple[str, str]]:
    out = []
    for spec in clause.named_children:
        if spec.type != kind:
            continue
        name, alias = spec.child_by_field_name("name"), spec.child_by_field_name("alias")
        if name is None:
            continue
        local = node_text(alias if alias is not None else name)
        out.append((unquote(local), f"{target}.{unquote(node_text(name))}"))
    return out


LANGUAGE = JavaScript()
