"""The languages NSCCN reads: Python through its own walker, the others as folders of tree-sitter
queries run by one core (`nsccn.languages.queries`), the long tail as one tags query each over
the same core (`nsccn.languages.tail`), any other text file as text (file-level search and the
map, no definitions), and the project files that say how their
imports map to files (`go.mod`, `tsconfig.json`, `Cargo.toml`: `nsccn.languages.project`).

Detection is by extension, then by whole file name, then by the interpreter of a `#!` line.
Importing this module loads no grammar: each is loaded the first time a file needs it.
"""

from __future__ import annotations

import importlib
import re

from nsccn.languages.tags import EXTENSIONS as TAGS_EXTENSIONS
from nsccn.languages.tags import LANGUAGES as TAGS_LANGUAGES
from nsccn.model import TEXT  # a file of no language we parse

# language name -> (module, attribute) of its QueryLanguage; "python" has its own walker
_QUERY_LANGUAGES = {
    "javascript": ("nsccn.languages.javascript", "LANGUAGE"),
    "typescript": ("nsccn.languages.typescript", "LANGUAGE"),
    "tsx": ("nsccn.languages.typescript", "TSX"),
    "go": ("nsccn.languages.go", "LANGUAGE"),
    "rust": ("nsccn.languages.rust", "LANGUAGE"),
    "java": ("nsccn.languages.java", "LANGUAGE"),
}
EXTENSIONS = {
    ".py": "python", ".pyi": "python",
    ".js": "javascript", ".jsx": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    ".go": "go", ".rs": "rust", ".java": "java",
    **TAGS_EXTENSIONS,  # the long tail: extension -> grammar with a tags query
}
SHEBANGS = {"python": "python", "python3": "python", "node": "javascript", "nodejs": "javascript",
            "deno": "typescript", "bun": "typescript", "ts-node": "typescript",
            "sh": "bash", "bash": "bash", "ruby": "ruby", "php": "php", "lua": "lua", "Rscript": "r",
            "julia": "julia", "elixir": "elixir", "kotlin": "kotlin", "swift": "swift", "scala": "scala"}
# project files: what the resolver needs to map imports to files
PROJECT_FILES = {"go.mod": "go.mod", "tsconfig.json": "tsconfig", "jsconfig.json": "tsconfig", "Cargo.toml": "cargo"}
# the files a tsconfig.json `extends` (`tsconfig.base.json`, `tsconfig.test.json`): their `paths` name files too
_TSCONFIG_PART = re.compile(r"^[tj]sconfig\.[\w.-]+\.json$")
# what a `languages` entry in the configuration switches on
GROUPS = {
    "python": ("python",),
    "javascript": ("javascript", "tsconfig"),
    "typescript": ("typescript", "tsx", "tsconfig"),
    "tsx": ("tsx", "tsconfig"),
    "go": ("go", "go.mod"),
    "rust": ("rust", "cargo"),
    "java": ("java",),
    **{lang: (lang,) for lang in TAGS_LANGUAGES},
    TEXT: (TEXT,),
}
ALL = "all"
NAMES = tuple(GROUPS)
_SHEBANG = re.compile(rb"^#!\s*(?:\S*/)?(?:env\s+(?:-\S+\s+)*)?([A-Za-z0-9_.+-]+)")

def language_for(path: str, head: bytes | None = None) -> str | None:
    """The language of a file by its name, or (no known extension) by the `#!` line in `head`."""
    name = path.rsplit("/", 1)[-1]
    if name in PROJECT_FILES:
        return PROJECT_FILES[name]
    if _TSCONFIG_PART.match(name):
        return "tsconfig"
    dot = name.rfind(".")
    if dot > 0:
        lang = EXTENSIONS.get(name[dot:]) or EXTENSIONS.get(name[dot:].lower())
        if lang is not None:
            return lang
    if head:
        return shebang_language(head)
    return None


def shebang_language(head: bytes) -> str | None:
    m = _SHEBANG.match(head)
    if m is None:
        return None
    interp = m.group(1).decode("ascii", "replace")
    return SHEBANGS.get(interp) or SHEBANGS.get(re.sub(r"[0-9.]+$", "", interp))


def needs_head(path: str) -> bool:
    """Whether only the first line can tell this file's language (no extension we know)."""
    name = path.rsplit("/", 1)[-1]
    return name not in PROJECT_FILES and "." not in name.lstrip(".")


def enabled(configured: list[str]) -> frozenset[str]:
    """The language (and project-file) names a `languages` setting switches on; unknown names
    raise ValueError naming them."""
    out: set[str] = set()
    for name in configured:
        key = name.lower()
        if key == ALL:
            for g in GROUPS.values():
                out.update(g)
        elif key in GROUPS:
            out.update(GROUPS[key])
        else:
            raise ValueError(f"unknown language {name!r} in `languages` (known: {', '.join((ALL,) + NAMES)})")
    return frozenset(out)


def query_language(name: str):
    """The QueryLanguage of `name` (imports its module and, on first use, its grammar); KeyError
    for a language without queries (python, text)."""
    if name in TAGS_LANGUAGES:
        from nsccn.languages.tail import tags_language

        return tags_language(name)
    module, attr = _QUERY_LANGUAGES[name]
    return getattr(importlib.import_module(module), attr)
