"""Rust: a module is a file of a crate (`src/a/b.rs` and `src/a/b/mod.rs` are `crate::a::b`;
`src/lib.rs` and `src/main.rs` the crate itself). A crate below the repository root is named by
its directory (`crates/core/crate::a`) and, through its `Cargo.toml`, by its crate name
(nsccn/languages/naming.py). `use` trees bind names; `crate::`, `super::` and `self::` are
imports of this file's crate and parent module, so paths written with them resolve too."""

from __future__ import annotations

import tree_sitter as ts

from nsccn.languages.queries import QueryExtractor, QueryLanguage, node_text

BUILTINS = frozenset(
    "Some None Ok Err Box Vec String Option Result Default Clone Copy Debug Display Drop Fn FnMut FnOnce From Into "
    "Iterator IntoIterator PartialEq Eq PartialOrd Ord Hash Send Sync Sized ToString AsRef AsMut Deref "
    "println print eprintln eprint format write writeln vec assert assert_eq assert_ne debug_assert panic "
    "unimplemented todo unreachable bail anyhow matches dbg include_str concat env cfg".split()
)


def module_of(path: str) -> str:
    """`src/a/b.rs` -> `crate.a.b`; `crates/x/src/lib.rs` -> `crates/x/crate`."""
    parts = path[: -len(".rs")].split("/") if path.endswith(".rs") else path.split("/")
    if "src" not in parts[:-1]:
        return "/".join(parts)  # tests/, benches/, build.rs: crates of their own
    i = len(parts) - 1 - parts[::-1].index("src", 1)
    crate_dir, rest = "/".join(parts[:i]), parts[i + 1 :]
    if rest in (["lib"], ["main"]):
        rest = []
    elif rest and rest[-1] == "mod":
        rest = rest[:-1]
    return ".".join(["crate" if not crate_dir else f"{crate_dir}/crate", *rest])


class Rust(QueryLanguage):
    name = "rust"
    extensions = (".rs",)
    query_dirs = ("rust",)
    self_names = ("self", "Self")
    comment_types = ("line_comment", "block_comment")
    attribute_types = ("attribute_item",)
    builtins = BUILTINS
    return_type = r"->\s*(.+?)\s*(?:where\b.*)?$"  # `fn new() -> Self`

    def grammar(self):
        import tree_sitter_rust

        return tree_sitter_rust.language()

    def module_name(self, path: str, root: ts.Node) -> str:
        return module_of(path)

    def extract(self, path: str, data: bytes) -> QueryExtractor:
        ex = super().extract(path, data)
        crate = ex.module.split(".", 1)[0]
        if crate == "crate" or crate.endswith("/crate"):
            ex.imports.setdefault("crate", crate)
            if "." in ex.module:
                ex.imports.setdefault("super", ex.module.rsplit(".", 1)[0])
        return ex

    def bindings(self, ex: QueryExtractor, node: ts.Node, caps: dict) -> list[tuple[str, str]]:
        if node.type == "mod_item":  # `mod foo;`: the child module
            name = node_text(caps["import.source"])
            return [(name, f"{ex.module}.{name}")]
        arg = node.child_by_field_name("argument")
        out: list[tuple[str, str]] = []
        if arg is not None:
            self._use_tree(ex, arg, [], out)
        return out

    def _use_tree(self, ex: QueryExtractor, node: ts.Node, prefix: list[str], out: list) -> None:
        t = node.type
        if t in ("scoped_identifier", "identifier", "crate", "self", "super"):
            parts = prefix + node_text(node).replace(" ", "").split("::")
            if parts == prefix + ["self"]:  # `a::{self}`
                parts = prefix
            if parts:
                out.append((parts[-1], self._absolute(ex, parts)))
        elif t == "use_as_clause":
            path, alias = node.child_by_field_name("path"), node.child_by_field_name("alias")
            if path is not None and alias is not None:
                parts = prefix + node_text(path).replace(" ", "").split("::")
                out.append((node_text(alias), self._absolute(ex, parts)))
        elif t == "scoped_use_list":
            path, items = node.child_by_field_name("path"), node.child_by_field_name("list")
            inner = prefix + (node_text(path).replace(" ", "").split("::") if path is not None else [])
            if items is not None:
                for item in items.named_children:
                    self._use_tree(ex, item, inner, out)
        elif t == "use_list":
            for item in node.named_children:
                self._use_tree(ex, item, prefix, out)
        elif t == "use_wildcard":
            inner = next((c for c in node.named_children), None)
            parts = prefix + (node_text(inner).replace(" ", "").split("::") if inner is not None else [])
            if parts:
                target = self._absolute(ex, parts)
                out.append((f"*{target}", target))

    def _absolute(self, ex: QueryExtractor, parts: list[str]) -> str:
        module = ex.module.split(".")
        head = parts[0]
        if head == "crate":
            parts = [module[0], *parts[1:]]
        elif head == "self":
            parts = [*module, *parts[1:]]
        elif head == "super":
            ups = 0
            while ups < len(parts) and parts[ups] == "super":
                ups += 1
            parts = [*module[: max(1, len(module) - ups)], *parts[ups:]]
        return ".".join(parts)


LANGUAGE = Rust()
