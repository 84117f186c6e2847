"""The full-text rows of a parsed file: what entities_fts and files_fts index of it."""

from __future__ import annotations

from nsccn.model import FileTerms, ParsedFile
from nsccn.text import index_terms


def file_terms(pf: ParsedFile) -> FileTerms:
    return FileTerms(
        path=index_terms(pf.path.replace("/", " ").rsplit(".", 1)[0]),
        body=index_terms(
            " ".join(f"{e.qualname} {e.signature} {e.docstring} {e.body_terms}" for e in pf.entities), unique=False
        ),
        entities=[
            (index_terms(e.qualname), index_terms(e.signature), index_terms(e.docstring), index_terms(e.body_terms))
            for e in pf.entities
        ],
    )
