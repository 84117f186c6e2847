"""The full-text rows of a parsed file: what entities_fts and files_fts index of it."""

from __future__ import annotations

from itertools import chain

from nsccn.model import FileTerms, ParsedFile
from nsccn.text import index_terms, term_list


def file_terms(pf: ParsedFile) -> FileTerms:
    # Each field tokenized once: an entity's row takes its terms once each, the file's body every
    # occurrence of all of them (what index_terms(unique=False) of the fields joined gives).
    fields = [(term_list(e.qualname), term_list(e.signature), term_list(e.docstring), term_list(e.body_terms))
              for e in pf.entities]
    return FileTerms(
        path=index_terms(pf.path.replace("/", " ").rsplit(".", 1)[0]),
        body=" ".join(chain.from_iterable(chain.from_iterable(fields))),
        entities=[tuple(" ".join(dict.fromkeys(terms)) for terms in entity) for entity in fields],
    )
