"""Java: a file's module is its package (`package a.b;`), shared by the package's files, so a
class of the package is found without an import; imports name classes (`a.b.C`), members
(`import static a.b.C.m`) or whole packages (`a.b.*`)."""

from __future__ import annotations

import posixpath

import tree_sitter as ts

from nsccn.languages.queries import QueryExtractor, QueryLanguage, node_text

JAVA_LANG = frozenset(
    "Object String StringBuilder StringBuffer Integer Long Short Byte Double Float Boolean Character Number Math "
    "System Thread Runnable Iterable Comparable CharSequence Class Enum Record Void Override Deprecated "
    "SuppressWarnings FunctionalInterface SafeVarargs Throwable Exception Error RuntimeException "
    "IllegalArgumentException IllegalStateException NullPointerException IndexOutOfBoundsException "
    "ArrayIndexOutOfBoundsException UnsupportedOperationException ClassCastException ArithmeticException "
    "NumberFormatException InterruptedException CloneNotSupportedException ReflectiveOperationException "
    "ClassNotFoundException NoSuchFieldException NoSuchMethodException SecurityException AssertionError "
    "OutOfMemoryError StackOverflowError ConcurrentModificationException".split()
)


class Java(QueryLanguage):
    name = "java"
    extensions = (".java",)
    query_dirs = ("java",)
    self_names = ("this",)
    comment_types = ("line_comment", "block_comment")
    builtins = JAVA_LANG
    implicit_self = ("method_invocation",)

    def grammar(self):
        import tree_sitter_java

        return tree_sitter_java.language()

    def module_name(self, path: str, root: ts.Node) -> str:
        for child in root.named_children:
            if child.type == "package_declaration":
                name = next((c for c in child.named_children if c.type in ("scoped_identifier", "identifier")), None)
                if name is not None:
                    return node_text(name)
        return posixpath.dirname(path).replace("/", ".") or "default"

    def bindings(self, ex: QueryExtractor, node: ts.Node, caps: dict) -> list[tuple[str, str]]:
        name = next((c for c in node.named_children if c.type in ("scoped_identifier", "identifier")), None)
        if name is None:
            return []
        target = node_text(name).replace(" ", "")
        if any(c.type == "asterisk" for c in node.named_children):
            return [(f"*{target}", target)]
        return [(target.rsplit(".", 1)[-1], target)]


LANGUAGE = Java()
