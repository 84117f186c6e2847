"""Directories and files only this user can touch, whatever the umask.

The index, its logs, the pipeline's lock, info file, key and sockets hold a repository's parsed
source and steer the pipeline: another local user who can write them can stop it or feed it
forged results. So they are created 0700/0600 explicitly (mkdir and open modes are masked by the
umask, never widened, but an existing file keeps whatever mode it had), never through a symlink
(a cloned repository may carry `.nsccn -> somewhere` or `.nsccn/logs/x.log -> ~/.bashrc`), and a
directory someone else owns is refused, not used.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


class PrivatePathError(RuntimeError):
    """A place for private files that is not safe to use; the message says why and what to do."""


def _check_owned(path: Path, st: os.stat_result) -> None:
    if stat.S_ISLNK(st.st_mode):
        raise PrivatePathError(f"{path} is a symlink (to {os.readlink(path)}): refusing to write private files through it")
    if st.st_uid != os.getuid():
        raise PrivatePathError(f"{path} belongs to uid {st.st_uid}, not to this user (uid {os.getuid()}): refusing to use it")


def private_dir(path: str | Path, *, strict: bool = False) -> Path:
    """`path` as a directory of ours, mode 0700: created so, or an existing one checked (a real
    directory, owned by us) and tightened. `strict` (a shared place such as /tmp, where someone
    else may have made it first): an existing one must already be 0700, else it is refused."""
    path = Path(path)
    try:
        os.mkdir(path, 0o700)
        os.chmod(path, 0o700)
        return path
    except FileExistsError:
        pass
    except FileNotFoundError:
        if strict:
            raise PrivatePathError(f"{path.parent} does not exist") from None
        path.parent.mkdir(parents=True, exist_ok=True)  # the user's own choice of place: leave its modes alone
        return private_dir(path)
    st = os.lstat(path)
    _check_owned(path, st)
    if not stat.S_ISDIR(st.st_mode):
        raise PrivatePathError(f"{path} is not a directory")
    if st.st_mode & 0o077:
        if strict:
            raise PrivatePathError(
                f"{path} has mode {stat.S_IMODE(st.st_mode):04o} (other users can get into it): refusing to use it;"
                f" remove it (rm -r {path}) and run again"
            )
        os.chmod(path, 0o700)
    return path


def open_private(path: str | Path, flags: int) -> int:
    """os.open with O_CREAT, mode 0600 whatever the umask, never through a symlink, only a regular
    file of ours. Returns the descriptor."""
    path = Path(path)
    try:
        fd = os.open(path, flags | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if os.path.islink(path):
            raise PrivatePathError(f"{path} is a symlink (to {os.readlink(path)}): refusing to write through it") from None
        raise exc
    try:
        st = os.fstat(fd)
        _check_owned(path, st)
        if not stat.S_ISREG(st.st_mode):
            raise PrivatePathError(f"{path} is not a regular file")
        if st.st_mode & 0o077:
            os.fchmod(fd, 0o600)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _fresh_private_file(path: Path, suffix: str, data: bytes) -> Path:
    """A new file beside `path` (never an existing one, never through a symlink), mode 0600,
    holding `data`: what is then renamed or linked into place."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{suffix}")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, data)
    finally:
        os.close(fd)
    return tmp


def write_private(path: str | Path, data: bytes) -> None:
    """Replace `path` atomically with `data`, mode 0600 (a fresh temporary file, then rename)."""
    path = Path(path)
    os.replace(_fresh_private_file(path, "tmp", data), path)


def create_private_once(path: str | Path, data: bytes) -> bool:
    """Write `path` with `data` (0600) unless it exists; True when this call made it. Safe when
    several processes try at once: exactly one wins, the others find the winner's file."""
    path = Path(path)
    tmp = _fresh_private_file(path, "new", data)
    try:
        os.link(tmp, path)
        return True
    except FileExistsError:
        return False
    finally:
        tmp.unlink(missing_ok=True)
