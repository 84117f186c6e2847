"""bytes of one file -> a ParsedFile (entities, raw references, imports, skeleton)."""

from __future__ import annotations

import hashlib

import msgspec

from nsccn.model import Entity, ParsedFile
from nsccn.store.terms import file_terms


# The skip reason both index paths (library and pipeline) count a partly indexed file under.
TOO_DEEP = "nested too deeply (rest of the file indexed)"


def content_hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


TEXT_SKELETON_LINES = 40

# What one entity stores, in characters, whatever its file looks like. Each was a number of lines
# (body_head: 12), and in a one-line minified file a line is the file: 200 kB of JavaScript stored
# 796 MB of body_head (every entity's "first 12 lines" were the rest of the file). These bounds
# keep the index linear in its input: the embedding text, the signature shown and the words
# searched are made of them.
MAX_SIGNATURE = 1_000
MAX_DOCSTRING = 8_000
MAX_BODY_HEAD = 2_000
MAX_BODY_TERMS = 16_000
MAX_DECORATOR = 400


def head_lines(lines: list[str], start: int, count: int) -> str:
    """Lines `start`.. `start + count` joined, at most MAX_BODY_HEAD characters: made cut, not cut
    after (a minified file's one line is the whole file, for each of its thousands of entities)."""
    out, room = [], MAX_BODY_HEAD
    for line in lines[start:start + count]:
        out.append(line[:room])
        room -= len(out[-1]) + 1
        if room <= 0:
            break
    return "\n".join(out)


def _cut_words(text: str, limit: int) -> str:
    """`text` cut at a space before `limit` characters (a word is never cut in two)."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit + 1)
    return text[:cut if cut > 0 else limit]


def bounded(entities: list[Entity]) -> list[Entity]:
    """The entities with each text field within its bound (most are already: returned as they are)."""
    out = []
    for e in entities:
        if (len(e.signature) > MAX_SIGNATURE or len(e.docstring) > MAX_DOCSTRING or len(e.body_head) > MAX_BODY_HEAD
                or len(e.body_terms) > MAX_BODY_TERMS or any(len(d) > MAX_DECORATOR for d in e.decorators)):
            e = msgspec.structs.replace(
                e, signature=e.signature[:MAX_SIGNATURE], docstring=e.docstring[:MAX_DOCSTRING],
                body_head=e.body_head[:MAX_BODY_HEAD], body_terms=_cut_words(e.body_terms, MAX_BODY_TERMS),
                decorators=[d[:MAX_DECORATOR] for d in e.decorators])
        out.append(e)
    return out


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
