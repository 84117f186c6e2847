"""Surgical windows: exact numbered lines of the repository, never anything outside it.

A file that changed since it was indexed is re-parsed on the spot (tree-sitter takes
milliseconds) to find where the entity is now: a window shows the current lines of the entity
or refuses, never the lines where it used to be."""

from __future__ import annotations

from pathlib import Path

from nsccn.reading.extract import content_hash
from nsccn.model import Entity
from nsccn.reading.repofile import PathOutsideRepository, UnreadableFile, read_bytes, safe_path
from nsccn.vocab import MAX_CONTEXT_LINES

__all__ = ["PathOutsideRepository", "UnreadableFile", "safe_path", "read_lines", "read_source", "window",
           "window_of_lines", "number_lines", "relocate", "MAX_CONTEXT_LINES"]


def read_source(root: Path, rel: str, max_size: int | None = None) -> tuple[bytes, str]:
    """(content, content hash) of a repository file; UnreadableFile when it is not a regular file
    inside the repository (a FIFO, a symlink out, gone) or over `max_size`."""
    data, _ = read_bytes(root, rel, max_size)
    return data, content_hash(data)


def read_lines(root: Path, rel: str, max_size: int | None = None) -> tuple[list[str], str]:
    """(lines without line ends, content hash) of a repository file (see `read_source`)."""
    data, digest = read_source(root, rel, max_size)
    return data.decode("utf-8", "replace").splitlines(), digest


def number_lines(lines: list[str], first: int) -> str:
    """`first` is the 1-based number of lines[0]."""
    width = len(str(first + len(lines) - 1))
    return "".join(f"{n:>{width}} | {text}\n" for n, text in enumerate(lines, start=first))


def relocate(rel: str, data: bytes, entity_id: str, near_line: int) -> Entity | None:
    """The entity `entity_id` as it is in `data` (the file's current bytes), or None when the
    file no longer defines it. Of two definitions with one id (`if`/`else` variants), the one
    nearest the line it was indexed at."""
    from nsccn.reading.extract import parse_file  # tree-sitter: only queries about a changed file pay its import

    found = [e for e in parse_file(rel, data).entities if e.id == entity_id]
    return min(found, key=lambda e: abs(e.start_line - near_line)) if found else None


def window_of_lines(lines: list[str], rel: str, start: int, end: int, context_lines: int = 5) -> dict:
    """Lines start..end (1-based, inclusive) of `lines` plus context, numbered."""
    if not 0 <= context_lines <= MAX_CONTEXT_LINES:
        raise ValueError(f"context_lines must be between 0 and {MAX_CONTEXT_LINES}, not {context_lines}")
    lo = max(1, start - context_lines)
    hi = min(len(lines), end + context_lines)
    return {"file": rel, "start": start, "end": end, "shown": [lo, hi], "code": number_lines(lines[lo - 1 : hi], lo)}


def window(root: Path, rel: str, start: int, end: int, context_lines: int = 5, max_size: int | None = None) -> dict:
    """Lines start..end (1-based, inclusive) of a repository file plus context, numbered."""
    if not 0 <= context_lines <= MAX_CONTEXT_LINES:  # before reading anything
        raise ValueError(f"context_lines must be between 0 and {MAX_CONTEXT_LINES}, not {context_lines}")
    lines, digest = read_lines(root, rel, max_size)
    return {**window_of_lines(lines, rel, start, end, context_lines), "content_hash": digest}
