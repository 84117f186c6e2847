"""Surgical windows: exact numbered lines of the repository, never anything outside it."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from nsccn.extract import content_hash

MAX_CONTEXT_LINES = 200


class PathOutsideRepository(ValueError):
    """A path that is absolute, climbs with `..`, or leads out of the repository through a symlink."""


def safe_path(root: Path, rel: str) -> Path:
    """The real path of `rel` inside `root`, or PathOutsideRepository."""
    if not rel or "\0" in rel:
        raise PathOutsideRepository(f"not a repository path: {rel!r}")
    pure = PurePosixPath(rel.replace("\\", "/"))
    if pure.is_absolute() or os.path.isabs(rel):
        raise PathOutsideRepository(f"absolute paths are refused, give a path relative to the repository: {rel!r}")
    if ".." in pure.parts:
        raise PathOutsideRepository(f"paths climbing with '..' are refused: {rel!r}")
    real_root = Path(root).resolve()
    real = (real_root / pure).resolve()
    if real != real_root and real_root not in real.parents:
        raise PathOutsideRepository(f"{rel!r} leads outside the repository (through a symlink)")
    return real


def read_lines(root: Path, rel: str) -> tuple[list[str], str]:
    """(lines without line ends, content hash) of a repository file."""
    path = safe_path(root, rel)
    data = path.read_bytes()
    return data.decode("utf-8", "replace").splitlines(), content_hash(data)


def number_lines(lines: list[str], first: int) -> str:
    """`first` is the 1-based number of lines[0]."""
    width = len(str(first + len(lines) - 1))
    return "".join(f"{n:>{width}} | {text}\n" for n, text in enumerate(lines, start=first))


def window(root: Path, rel: str, start: int, end: int, context_lines: int = 5) -> dict:
    """Lines start..end (1-based, inclusive) plus context, numbered."""
    if not 0 <= context_lines <= MAX_CONTEXT_LINES:
        raise ValueError(f"context_lines must be between 0 and {MAX_CONTEXT_LINES}, not {context_lines}")
    lines, digest = read_lines(root, rel)
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
