"""The long tail of languages as data: one tree-sitter tags query per language (`<lang>.scm`,
the standard capture names) run over grammars that `tree-sitter-language-pack` 0.9.0 ships
compiled inside its wheel (no download at run time: it works offline).

    tags_for_path("src/cart.rb", source_bytes) -> Tags(definitions=[...], references=[...])

Definitions and references are plain tuples, sorted by position; lines are 1-based. The
extraction core turns them into entities and name-resolved references; this module only knows
which grammar a file needs and what its query captures.

Capture names (https://tree-sitter.github.io/tree-sitter/4-code-navigation.html):
`@definition.{function,method,class,interface,module,macro,type,constant}` on the whole
definition, `@reference.{call,class,implementation,type,module}` on the use, `@name` on the
name inside either, `@doc` on a doc comment of a definition. Each `.scm` file says where it
came from in its header.
"""

from __future__ import annotations

import importlib.resources
from functools import lru_cache
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:  # tree-sitter is imported where a grammar is loaded: the extension table is free
    from tree_sitter import Language, Query

# File extension -> grammar name in tree-sitter-language-pack. `.h` is read as C (a C++ header
# with classes still yields its functions: the grammar recovers).
EXTENSIONS = {
    ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".c++": "cpp", ".hh": "cpp", ".hpp": "cpp", ".hxx": "cpp", ".cu": "cpp",
    ".cs": "csharp",
    ".rb": "ruby", ".rake": "ruby", ".gemspec": "ruby",
    ".php": "php",
    ".kt": "kotlin", ".kts": "kotlin",
    ".swift": "swift",
    ".scala": "scala", ".sc": "scala",
    ".lua": "lua",
    ".ex": "elixir", ".exs": "elixir",
    ".hs": "haskell",
    ".elm": "elm",
    ".ml": "ocaml",
    ".r": "r", ".R": "r",
    ".sh": "bash", ".bash": "bash",
    ".sol": "solidity",
    ".zig": "zig",
    ".jl": "julia",
}
LANGUAGES = tuple(sorted(set(EXTENSIONS.values())))
DEFINITION_KINDS = frozenset({"function", "method", "class", "interface", "module", "macro", "type", "constant"})
REFERENCE_KINDS = frozenset({"call", "class", "implementation", "type", "module"})


class Definition(NamedTuple):
    kind: str  # one of DEFINITION_KINDS
    name: str
    start_line: int  # the whole definition, 1-based, inclusive
    end_line: int
    name_line: int  # where its name is
    doc: str  # its doc comment as written (comment markers kept), "" when none


class Reference(NamedTuple):
    kind: str  # one of REFERENCE_KINDS
    name: str
    line: int


class Tags(NamedTuple):
    definitions: list[Definition]
    references: list[Reference]


class TagsError(Exception):
    """A language without a tags query here, or whose grammar cannot be loaded."""


def language_of(path: str) -> str | None:
    """The grammar a file needs, by its extension; None for a language without a tags query."""
    name = path.rsplit("/", 1)[-1]
    if "." not in name:
        return None
    ext = "." + name.rsplit(".", 1)[1]
    return EXTENSIONS.get(ext) or EXTENSIONS.get(ext.lower())


def query_text(lang: str) -> str:
    if lang not in LANGUAGES:
        raise TagsError(f"no tags query for {lang!r}; known: {', '.join(LANGUAGES)}")
    return importlib.resources.files(__package__).joinpath(f"{lang}.scm").read_text(encoding="utf-8")


@lru_cache(maxsize=None)
def load(lang: str) -> tuple[Language, Query]:
    """The grammar and compiled tags query of a language (once per process)."""
    from tree_sitter import Query

    text = query_text(lang)
    return grammar(lang), Query(grammar(lang), text)


@lru_cache(maxsize=None)
def grammar(lang: str) -> Language:
    """The compiled grammar of a language with a tags query (once per process)."""
    query_text(lang)  # a language without a tags query is refused here too
    try:
        from tree_sitter_language_pack import get_language
    except ImportError as exc:
        raise TagsError("tree-sitter-language-pack is not installed (pip install tree-sitter-language-pack==0.9.0)") from exc
    try:
        language = get_language(lang)
    except LookupError as exc:
        raise TagsError(f"no grammar for {lang!r} in tree-sitter-language-pack") from exc
    return language


def tags(lang: str, source: bytes) -> Tags:
    """Definitions and references of `source` in language `lang`, sorted by position."""
    from tree_sitter import Parser, QueryCursor

    language, query = load(lang)
    tree = Parser(language).parse(source)
    defs: dict[tuple, Definition] = {}
    refs: dict[tuple, Reference] = {}
    defined_at: set[int] = set()  # where the names of definitions start (bytes)
    for _pattern, caps in QueryCursor(query).matches(tree.root_node):
        names = caps.get("name")
        if not names:
            continue
        name_node = names[0]
        name = name_node.text.decode("utf-8", "replace")
        for cap, nodes in caps.items():
            role, _, kind = cap.partition(".")
            if role == "definition" and kind in DEFINITION_KINDS:
                node = nodes[0]
                defined_at.add(name_node.start_byte)
                doc = "\n".join(n.text.decode("utf-8", "replace") for n in caps.get("doc", ()))
                key = (node.start_byte, node.end_byte, name)
                if key not in defs:  # two patterns for one definition (Ruby's method with and without doc)
                    defs[key] = Definition(kind, name, node.start_point[0] + 1, node.end_point[0] + 1,
                                           name_node.start_point[0] + 1, doc)
                elif doc and not defs[key].doc:
                    defs[key] = defs[key]._replace(doc=doc)
            elif role == "reference" and kind in REFERENCE_KINDS:
                key = (name_node.start_byte, name, kind)
                refs.setdefault(key, Reference(kind, name, name_node.start_point[0] + 1))
    # A name being defined is no reference to it (Julia's `f(x) = ...` reads as a call).
    return Tags([defs[k] for k in sorted(defs)], [refs[k] for k in sorted(refs) if k[0] not in defined_at])


def tags_for_path(path: str, source: bytes) -> Tags | None:
    """`tags` in the language of `path`'s extension; None for a file of no known language."""
    lang = language_of(path)
    return tags(lang, source) if lang else None
