"""The data that crosses module and process boundaries: what a parse of one file yields.

These are msgspec Structs so the parser workers can send them to the writer as they are.
"""

from __future__ import annotations

import msgspec

from nsccn.vocab import KINDS, RELATIONS  # noqa: F401  (entity kinds, in the id prefix; edge relations)

TEXT = "text"  # the language of a file of no language we parse: its words are searchable, it is listed in the map


class Entity(msgspec.Struct, frozen=True):
    id: str
    kind: str
    path: str
    qualname: str
    name: str
    start_line: int  # 1-based, decorators included
    end_line: int  # 1-based, inclusive
    signature: str
    docstring: str
    decorators: list[str]
    parent: str | None  # id of the enclosing entity (module for top level)
    body_terms: str  # identifiers used in the body, for lexical search
    body_head: str = ""  # the first lines of the body, for the embedding text


class Ref(msgspec.Struct, frozen=True):
    """A reference as written in source, resolved into edges against the whole repository later."""

    source: str  # entity id
    relation: str  # one of RELATIONS
    target: str  # the expression: "foo", "self.save", "os.path.join", "super().m", "os.environ:HOME"
    line: int
    scope: str = ""  # qualname of the innermost enclosing class ("" when none), for self/cls


class FileTerms(msgspec.Struct):
    """A file's full-text rows, made where it is parsed (a parser process), not by the writer."""

    path: str  # the file path's terms (both full-text indexes)
    body: str  # files_fts: every entity's terms, repetitions kept
    entities: list[tuple[str, str, str, str]]  # entities_fts per entity, in order: name, signature, docstring, body


class ParsedFile(msgspec.Struct):
    path: str  # relative to the repository root, forward slashes
    language: str
    content_hash: str
    size: int
    mtime: float
    line_count: int
    module: str  # dotted module name derived from the path
    entities: list[Entity]
    refs: list[Ref]
    imports: dict[str, str]  # local name -> absolute dotted target ("np" -> "numpy")
    skeleton: str
    module_globals: list[str] = []  # names assigned at module level (constants, globals)
    error_lines: list[int] = []  # lines of syntax errors (entities there may be missing)
    deep_lines: list[int] = []  # where syntax nested too deeply to walk begins (entities there are missing)
    terms: FileTerms | None = None  # full-text rows (nsccn.store.file_terms); None: the writer makes them


def entity_id(kind: str, path: str, qualname: str) -> str:
    return f"{kind}:{path}:{qualname}"


def split_entity_id(entity_id: str) -> tuple[str, str, str]:
    """(kind, path, qualname); raises ValueError on an id not of that shape."""
    parts = entity_id.split(":", 2)
    if len(parts) != 3 or not all(parts):
        raise ValueError(f"not an entity id (expected kind:path:qualname): {entity_id!r}")
    return parts[0], parts[1], parts[2]


class Message(msgspec.Struct, tag=True, tag_field="type", kw_only=True):
    """Base of every message between processes (nsccn.messages); the tag is the class name."""


# What looking at one file found (nsccn.indexing.index_session.look_at): in the library's indexer and, as
# messages from the parsers to the writer, in the pipeline. `seq` orders the pipeline's results.


class Parsed(Message):
    seq: int
    file: ParsedFile


class Unchanged(Message):
    seq: int
    path: str
    size: int
    mtime: float


class Skipped(Message):
    seq: int
    path: str
    reason: str


class Removed(Message):
    seq: int
    path: str
