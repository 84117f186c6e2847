"""TypeScript and TSX: the JavaScript queries and module rules, plus interfaces, type aliases,
enums, namespaces and `implements`. Path aliases (`tsconfig.json` `paths`, `baseUrl`) are
applied by the resolver (see nsccn/languages/project.py)."""

from __future__ import annotations

from nsccn.languages.javascript import JavaScript

_SHARED = ("javascript/definitions.scm", "javascript/references.scm", "javascript/imports.scm", "javascript/causal.scm",
           "javascript/receivers.scm")


class TypeScript(JavaScript):
    name = "typescript"
    extensions = (".ts", ".mts", ".cts")
    shebangs = ("ts-node", "tsx")
    query_dirs = ("typescript",)
    query_files = _SHARED
    return_type = r"\)\s*:\s*([\w$.<>\[\]| ]+?)\s*$"  # `function make(): Cart`

    def grammar(self):
        import tree_sitter_typescript

        return tree_sitter_typescript.language_typescript()


class Tsx(TypeScript):
    name = "tsx"
    extensions = (".tsx",)
    shebangs = ()

    def grammar(self):
        import tree_sitter_typescript

        return tree_sitter_typescript.language_tsx()


LANGUAGE = TypeScript()
TSX = Tsx()
