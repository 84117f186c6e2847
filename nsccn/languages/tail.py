"""The long tail: every language with a tags query (`nsccn/languages/tags/<lang>.scm`) read by the
same extraction core as the fully supported ones (`nsccn.languages.queries`).

Nothing here is per language: a `TagsLanguage` is made from the grammar's name alone. Its query
is the tags file, its comments are whichever comment node types the grammar has, and references
are resolved by name (the resolver's `same_module` / `unique_name` / `ambiguous` rules), since
a tags query says nothing about imports. Adding a language is adding its `.scm` file and its
extensions (`nsccn.languages.tags.EXTENSIONS`).
"""

from __future__ import annotations

from functools import cache, cached_property

from nsccn.languages import tags
from nsccn.languages.queries import QueryLanguage

# Node types grammars use for comments; a query may only name the ones its grammar has.
COMMENT_TYPES = ("comment", "line_comment", "block_comment", "doc_comment", "multiline_comment")


class TagsLanguage(QueryLanguage):
    self_names = ("this", "self", "Self", "@")
    elide_unbodied = True  # the definition line and its doc comment stay when the query gives no body

    def __init__(self, name: str):
        self.name = name
        self.extensions = tuple(e for e, lang in tags.EXTENSIONS.items() if lang == name)
        self.query_files = (f"tags/{name}.scm",)

    @cached_property
    def language(self):
        return tags.grammar(self.name)

    @cached_property
    def comment_types(self) -> tuple[str, ...]:
        return tuple(t for t in COMMENT_TYPES if self.language.id_for_node_kind(t, True))


@cache
def tags_language(name: str) -> TagsLanguage:
    return TagsLanguage(name)
