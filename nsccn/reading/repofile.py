"""Reading a repository's files: only regular files inside the root, and never blocking.

A repository is untrusted input, and it changes under us: between a scan and a read a file can
become a symlink out of the repository, a FIFO (whose open or read waits forever for a writer)
or a device. Every read of a repository file (scan, watcher events, windows, skeletons) goes
through `read_bytes`, every size/mtime check (staleness) through `stat_file`.
"""

from __future__ import annotations

import errno
import os
import posixpath
import stat
from functools import lru_cache
from pathlib import Path

_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_HAVE_PROC_FD = os.path.isdir("/proc/self/fd")  # Linux: where an open descriptor really points


class UnreadableFile(ValueError):
    """A repository path that cannot be read as a source file. `reason` is the short form the
    index summaries count skips by: missing, directory, not a regular file, too large, unreadable,
    symlink outside repository."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


class PathOutsideRepository(UnreadableFile):
    """A path that is absolute, climbs with `..`, or leads out of the repository through a symlink."""

    def __init__(self, message: str):
        super().__init__("symlink outside repository", message)


def _inside(real: str, real_root: str) -> bool:
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


@lru_cache(maxsize=64)
def _real_root(root: str) -> str:
    return os.path.realpath(root)


def _parts(rel: str) -> tuple[str, ...]:
    """The components of a relative repository path, or PathOutsideRepository."""
    if not isinstance(rel, str) or not rel or "\0" in rel:
        raise PathOutsideRepository(f"not a repository path: {rel!r}")
    if rel.startswith("/") or os.path.isabs(rel):
        raise PathOutsideRepository(f"absolute paths are refused, give a path relative to the repository: {rel!r}")
    parts = tuple(p for p in rel.split("/") if p and p != ".")
    if ".." in parts:
        raise PathOutsideRepository(f"paths climbing with '..' are refused: {rel!r}")
    if not parts:
        raise PathOutsideRepository(f"not a repository path: {rel!r}")
    return parts


def repository_path(root: Path | str, typed: str) -> str:
    """A path as a user typed it, as a path relative to the repository root: an absolute path
    inside the root, or one whose `..` stay inside it, is made relative (lexically: `safe_path`
    then checks where it really leads); one that ends outside the root is PathOutsideRepository.
    Anything else is returned as typed."""
    if not isinstance(typed, str) or not typed or "\0" in typed:
        return typed
    if os.path.isabs(typed):
        norm = os.path.normpath(typed)
        for base in dict.fromkeys((os.path.normpath(str(root)), _real_root(str(root)))):
            if _inside(norm, base) and norm != base:
                return Path(os.path.relpath(norm, base)).as_posix()
        raise PathOutsideRepository(f"{typed!r} is outside the repository ({root}): give a path inside it")
    if ".." in typed.split("/"):
        norm = posixpath.normpath(typed)
        if norm == ".." or norm.startswith("../"):
            raise PathOutsideRepository(f"{typed!r} leads outside the repository ({root})")
        return norm
    return typed


def safe_path(root: Path | str, rel: str) -> Path:
    """The real path of `rel` inside `root`, or PathOutsideRepository. `rel` is taken literally:
    a backslash is part of a POSIX file name, not a separator."""
    parts = _parts(rel)
    real_root = _real_root(str(root))
    real = os.path.realpath(os.path.join(real_root, *parts))
    if not _inside(real, real_root):
        raise PathOutsideRepository(f"{rel!r} leads outside the repository (through a symlink)")
    return Path(real)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "not a regular file"


def _refuse(root: Path | str, rel: str, mode: int) -> UnreadableFile:
    safe_path(root, rel)  # a symlink out of the repository is refused as that, whatever it points to
    if stat.S_ISDIR(mode):
        return UnreadableFile("directory", f"{rel!r} is a directory")
    return UnreadableFile("not a regular file", f"{rel!r} is not a regular file ({_kind(mode)})")


def _os_error(rel: str, exc: OSError) -> UnreadableFile:
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return UnreadableFile("missing", f"{rel!r} is not on disk")
    if exc.errno == errno.ELOOP:
        return UnreadableFile("unreadable", f"{rel!r} is a symlink loop, or became a symlink while being read")
    return UnreadableFile("unreadable", f"{rel!r} cannot be read: {exc.strerror or exc}")


def stat_file(root: Path | str, rel: str) -> os.stat_result:
    """The stat of `rel`, a regular file inside `root` (symlinks followed within it), or
    UnreadableFile. Cheap enough for every indexed file (staleness): the last component is
    checked for a symlink out; a read (`read_bytes`) checks the whole path."""
    path = os.path.join(_real_root(str(root)), *_parts(rel))
    try:
        if stat.S_ISLNK(os.lstat(path).st_mode):
            path = str(safe_path(root, rel))
        st = os.stat(path)
    except OSError as exc:
        raise _os_error(rel, exc) from None
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(root, rel, st.st_mode)
    return st


def _open(root: Path | str, rel: str) -> int:
    real_root = _real_root(str(root))
    path = os.path.join(real_root, *_parts(rel))
    if not _HAVE_PROC_FD:  # no way to ask where a descriptor points: resolve the path first
        path = str(safe_path(root, rel))
    try:
        st = os.stat(path)  # before any open: opening a device can have effects
        if not stat.S_ISREG(st.st_mode):
            raise _refuse(root, rel, st.st_mode)
        try:
            return os.open(path, _OPEN_FLAGS)
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
        # The last component is a symlink: followed only while it stays inside the repository.
        return os.open(safe_path(root, rel), _OPEN_FLAGS)
    except OSError as exc:
        raise _os_error(rel, exc) from None


def read_bytes(root: Path | str, rel: str, max_size: int | None = None) -> tuple[bytes, os.stat_result]:
    """(content, stat taken before the read) of `rel`, or UnreadableFile. Refuses anything but a
    regular file inside `root`: before opening, and again on the opened descriptor (its type, and
    where it really points), so no swap between the check and the open can make us block or read
    outside the repository."""
    fd = _open(root, rel)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _refuse(root, rel, st.st_mode)
        if _HAVE_PROC_FD:  # where the descriptor really points (a parent directory may be a symlink)
            opened = os.readlink(f"/proc/self/fd/{fd}")
            if not _inside(opened, _real_root(str(root))):
                raise PathOutsideRepository(f"{rel!r} leads outside the repository (through a symlink)")
        if max_size is not None and st.st_size > max_size:
            raise UnreadableFile("too large", f"{rel!r} is larger than {max_size} bytes")
        chunks, got = [], 0
        while max_size is None or got <= max_size:
            chunk = os.read(fd, 1 << 20 if max_size is None else min(1 << 20, max_size + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
    except OSError as exc:
        raise _os_error(rel, exc) from None
    finally:
        os.close(fd)
    if max_size is not None and got > max_size:  # it grew after the fstat
        raise UnreadableFile("too large", f"{rel!r} is larger than {max_size} bytes")
    return b"".join(chunks), st
