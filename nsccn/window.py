"""Surgical windows: exact numbered lines of the repository, never anything outside it."""

from __future__ import annotations

from pathlib import Path

from nsccn.extract import content_hash
from nsccn.repofile import PathOutsideRepository, UnreadableFile, read_bytes, safe_path

__all__ = ["PathOutsideRepository", "UnreadableFile", "safe_path", "read_lines", "window", "number_lines"]

MAX_CONTEXT_LINES = 200


def read_lines(root: Path, rel: str, max_size: int | None = None) -> tuple[list[str], str]:
    """(lines without line ends, content hash) of a repository file; UnreadableFile when it is
    not a regular file inside the repository (a FIFO, a symlink out, gone) or over `max_size`."""
    data, _ = read_bytes(root, rel, max_size)
    return data.decode("utf-8", "replace").splitlines(), content_hash(data)


def number_lines(lines: list[str], first: int) -> str:
    """`first` is the 1-based number of lines[0]."""
    width = len(str(first + len(lines) - 1))
    return "".join(f"{n:>{width}} | {text}\n" for n, text in enumerate(lines, start=first))


def window(root: Path, rel: str, start: int, end: int, context_lines: int = 5, max_size: int | None = None) -> dict:
    """Lines start..end (1-based, inclusive) plus context, numbered."""
    if not 0 <= context_lines <= MAX_CONTEXT_LINES:
        raise ValueError(f"context_lines must be between 0 and {MAX_CONTEXT_LINES}, not {context_lines}")
    lines, digest = read_lines(root, rel, max_size)
    lo = max(1, start - context_lines)
    hi = min(len(lines), end + context_lines)
    return {
        "file": rel,
        "start": start,
        "end": end,
        "shown": [lo, hi],
        "code": number_lines(lines[lo - 1 : hi], lo),
        "content_hash": digest,
    }
