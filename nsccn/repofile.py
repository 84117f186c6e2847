"""Reading a repository's files: only regular files inside the root, and never blocking.

A repository is untrusted input, and it changes under us: between a scan and a read a file can
become a symlink out of the repository, a FIFO (whose open or read waits forever for a writer)
or a device. Every read of a repository file (scan, watcher events, windows, skeletons) goes
through `read_bytes`, every size/mtime check (staleness) through `stat_file`.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path, PurePosixPath

_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_PROC_FD = Path("/proc/self/fd")


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


def safe_path(root: Path | str, rel: str) -> Path:
    """The real path of `rel` inside `root`, or PathOutsideRepository. `rel` is taken literally:
    a backslash is part of a POSIX file name, not a separator."""
    if not isinstance(rel, str) or not rel or "\0" in rel:
        raise PathOutsideRepository(f"not a repository path: {rel!r}")
    pure = PurePosixPath(rel)
    if pure.is_absolute() or os.path.isabs(rel):
        raise PathOutsideRepository(f"absolute paths are refused, give a path relative to the repository: {rel!r}")
    if ".." in pure.parts:
        raise PathOutsideRepository(f"paths climbing with '..' are refused: {rel!r}")
    real_root = os.path.realpath(root)
    real = os.path.realpath(os.path.join(real_root, *pure.parts))
    if not _inside(real, real_root):
        raise PathOutsideRepository(f"{rel!r} leads outside the repository (through a symlink)")
    return Path(real)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "not a regular file"


def _refuse(rel: str, mode: int) -> UnreadableFile:
    if stat.S_ISDIR(mode):
        return UnreadableFile("directory", f"{rel!r} is a directory")
    return UnreadableFile("not a regular file", f"{rel!r} is not a regular file ({_kind(mode)})")


def _os_error(rel: str, exc: OSError) -> UnreadableFile:
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return UnreadableFile("missing", f"{rel!r} is not on disk")
    if exc.errno == errno.ELOOP:  # swapped for a symlink between our check and the open
        return UnreadableFile("unreadable", f"{rel!r} changed into a symlink while being read")
    return UnreadableFile("unreadable", f"{rel!r} cannot be read: {exc.strerror or exc}")


def _checked(root: Path | str, rel: str) -> tuple[Path, os.stat_result]:
    real = safe_path(root, rel)
    try:
        st = os.stat(real)
    except OSError as exc:
        raise _os_error(rel, exc) from None
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(rel, st.st_mode)
    return real, st


def stat_file(root: Path | str, rel: str) -> os.stat_result:
    """The stat of `rel`, a regular file inside `root` (symlinks followed within it), or UnreadableFile."""
    return _checked(root, rel)[1]


def read_bytes(root: Path | str, rel: str, max_size: int | None = None) -> tuple[bytes, os.stat_result]:
    """(content, stat taken before the read) of `rel`, or UnreadableFile. Refuses anything but a
    regular file inside `root` before opening (an open of a device can have effects), and again on
    the opened descriptor, so a swap between the check and the open cannot make us block or read
    outside the repository."""
    path, _ = _checked(root, rel)
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        raise _os_error(rel, exc) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _refuse(rel, st.st_mode)
        if _PROC_FD.is_dir():  # where the descriptor really points (a parent directory may have been swapped)
            try:
                opened = os.readlink(_PROC_FD / str(fd))
            except OSError:
                opened = None
            if opened is not None and not _inside(opened, os.path.realpath(root)):
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
