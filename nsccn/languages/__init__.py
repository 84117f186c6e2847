"""One module per language: its grammar, its walk and its naming rules."""

from __future__ import annotations

from nsccn.languages import python

# extension -> (language name, module exposing EXTENSIONS and an extractor)
LANGUAGES = {ext: ("python", python) for ext in python.EXTENSIONS}


def language_for(path: str) -> str | None:
    dot = path.rfind(".")
    entry = LANGUAGES.get(path[dot:]) if dot >= 0 else None
    return entry[0] if entry else None
