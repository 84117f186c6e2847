"""bytes of one file -> a ParsedFile (entities, raw references, imports, skeleton)."""

from __future__ import annotations

import hashlib

from nsccn.reading.entity_bounds import bounded
from nsccn.model import ParsedFile
from nsccn.store.terms import file_terms


# The skip reason both index paths (library and pipeline) count a partly indexed file under.
TOO_DEEP = "nested too deeply (rest of the file indexed)"


def content_hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


TEXT_SKELETON_LINES = 40


def parse_text(path: str, data: bytes, mtime: float = 0.0) -> ParsedFile:
    """A file of no language we parse: no entities, its words for file-level search, its first
    lines as its skeleton."""
    from nsccn.model import FileTerms
    from nsccn.text import index_terms

    text = data.decode("utf-8", "replace")
    lines = text.splitlines()
    head = lines[:TEXT_SKELETON_LINES] + ([f"... ({len(lines) - TEXT_SKELETON_LINES} more lines)"]
                                          if len(lines) > TEXT_SKELETON_LINES else [])
    return ParsedFile(path=path, language="text", content_hash=content_hash(data), size=len(data), mtime=mtime,
                      line_count=len(lines), module=path, entities=[], refs=[], imports={},
                      skeleton="\n".join(head) + "\n" if head else "",
                      terms=FileTerms(path=index_terms(path.replace("/", " ").rsplit(".", 1)[0]),
                                      body=index_terms(text, unique=False), entities=[]))


def parse_file(path: str, data: bytes, mtime: float = 0.0) -> ParsedFile:
    """Parse one file. `path` is relative to the repository root with forward slashes.

    Never raises on bad source: tree-sitter recovers from syntax errors (their lines are in
    `error_lines`), regions nested too deeply to walk are left out (`deep_lines`) and undecodable
    bytes are replaced.
    """
    from nsccn import languages  # tree-sitter: not for a query that only hashes a file

    language = languages.language_for(path, data[:256]) or languages.TEXT
    if language == languages.TEXT:
        return parse_text(path, data, mtime)
    if language in languages.PROJECT_FILES.values():
        from nsccn.languages.project import parse_project_file

        return parse_project_file(path, language, data, content_hash(data), mtime)
    if language == "python":
        from nsccn.languages.python import PythonExtractor

        ex = PythonExtractor(path, data).extract()
    else:
        ex = languages.query_language(language).extract(path, data)
    pf = ParsedFile(
        path=path,
        language=language,
        content_hash=content_hash(data),
        size=len(data),
        mtime=mtime,
        line_count=len(ex.text_lines),
        module=ex.module,
        entities=bounded(ex.entities),
        refs=ex.refs,
        imports=ex.imports,
        skeleton=ex.skeleton,
        module_globals=sorted(set(ex.module_globals)),
        error_lines=sorted(set(ex.error_lines)),
        deep_lines=sorted(set(ex.deep_lines)),
    )
    pf.terms = file_terms(pf)  # tokenizing for FTS is parse work: in the parser, off the writer
    return pf


def parse_definitions(path: str, data: bytes, tree=None) -> list | None:
    """The entities `parse_file` gives a Python file, in its order (their body_terms not), made
    without walking every expression for references (sympy's 4,700-line `numbers.py`: ~10 ms
    where `parse_file` takes ~45). `tree`: `data` parsed already. None where they could differ
    (syntax errors, deep nesting): parse the file."""
    from nsccn.languages.python import PythonExtractor

    ex = PythonExtractor(path, data, definitions_only=True).extract(tree)
    return None if ex is None else bounded(ex.entities)
