"""Go: a package is a directory, named in imports by the `go.mod` module path plus the directory
(the resolver's job: nsccn/languages/naming.py); here a file's module is its directory."""

from __future__ import annotations

import posixpath
import re

import tree_sitter as ts

from nsccn.languages.queries import QueryExtractor, QueryLanguage, node_text, unquote

BUILTINS = frozenset(
    "append cap clear close complex copy delete imag len make max min new panic print println real recover "
    "bool byte comparable complex64 complex128 error float32 float64 int int8 int16 int32 int64 rune string "
    "uint uint8 uint16 uint32 uint64 uintptr any iota nil true false".split()
)
_VERSION = re.compile(r"^v[0-9]+$")


def package_name(import_path: str) -> str:
    """The name an import binds by default: the last element, skipping a major version (`/v2`)
    and a `.vN` suffix (`gopkg.in/yaml.v3` -> `yaml`)."""
    parts = import_path.split("/")
    last = parts[-1]
    if _VERSION.match(last) and len(parts) > 1:
        last = parts[-2]
    last = re.sub(r"\.v[0-9]+$", "", last)
    return last.replace("-", "_").replace(".", "_")


class Go(QueryLanguage):
    name = "go"
    extensions = (".go",)
    query_dirs = ("go",)
    self_names = ()  # the receiver variable is named per method (@receiver.name)
    doc_parents = ("type_declaration",)
    signature_prefix = {"type_spec": "type "}
    builtins = BUILTINS
    return_type = r"\)\s*\(?\s*(\*?[\w.]+(?:\[[^\]]*\])?)\s*(?:,[^)]*\))?\s*$"  # `func NewCart() *Cart`, `(*Cart, error)`

    def grammar(self):
        import tree_sitter_go

        return tree_sitter_go.language()

    def module_name(self, path: str, root: ts.Node) -> str:
        directory = posixpath.dirname(path)
        if directory:
            return directory
        clause = next((c for c in root.named_children if c.type == "package_clause"), None)
        ident = clause.named_children[0] if clause is not None and clause.named_children else None
        return node_text(ident) if ident is not None else "main"

    def bindings(self, ex: QueryExtractor, node: ts.Node, caps: dict) -> list[tuple[str, str]]:
        source = caps.get("import.source")
        if source is None:
            return []
        target = unquote(node_text(source))
        alias = node.child_by_field_name("name")
        local = node_text(alias) if alias is not None else package_name(target)
        if local == ".":
            return [(f"*{target}", target)]
        if local == "_":
            return [(f"\0side:{target}", target)]
        return [(local, target)]


LANGUAGE = Go()
