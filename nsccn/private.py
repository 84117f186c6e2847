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


_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
MAX_SYMLINKS = 40


def _open_parent(path: Path) -> tuple[int, str]:
    """(descriptor of `path`'s directory, `path`'s last component), reached one component at a
    time from `/` with O_NOFOLLOW: a path checked once and then opened by name again could be
    swapped in between (`.nsccn` or `.nsccn/logs` for a symlink into a directory only root may
    write). A symlink on the way is followed only if root or this user owns it: one that anybody
    else made (in a repository they own) is refused. The caller closes the descriptor."""
    parts = list(Path(os.path.abspath(path)).parts[1:])
    if not parts:
        raise PrivatePathError(f"{path}: not a place for private files")
    name = parts.pop()
    where = "/"  # the real path of `fd`: every component so far was a real directory
    fd = os.open("/", _DIR)
    hops = 0
    try:
        while parts:
            part = parts.pop(0)
            if part in ("", "."):
                continue
            if part == "..":
                where = os.path.dirname(where)
                nxt = os.open(where, _DIR)
                os.close(fd)
                fd = nxt
                continue
            try:
                nxt = os.open(part, _DIR, dir_fd=fd)
            except OSError as exc:
                st = _lstat_at(fd, part)
                if st is None or not stat.S_ISLNK(st.st_mode):
                    raise
                shown = os.path.join(where, part)
                if st.st_uid not in (0, os.getuid()):
                    raise PrivatePathError(
                        f"{shown} is a symlink owned by uid {st.st_uid} (not root, not this user) on the way to {path}:"
                        " refusing to follow it") from None
                hops += 1
                if hops > MAX_SYMLINKS:
                    raise PrivatePathError(f"{path}: too many symlinks on the way") from None
                target = os.readlink(part, dir_fd=fd)
                parts[:0] = [p for p in target.split("/") if p]
                if target.startswith("/"):
                    where = "/"
                    nxt = os.open("/", _DIR)
                    os.close(fd)
                    fd = nxt
                continue
            os.close(fd)
            fd = nxt
            where = os.path.join(where, part)
        return fd, name
    except BaseException:
        os.close(fd)
        raise


def _lstat_at(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return None


def _check_dir(path: Path, fd: int) -> None:
    """The directory a private file is made in must be ours, else whoever owns it can link or
    swap what we write."""
    st = os.fstat(fd)
    if st.st_uid != os.getuid():
        raise PrivatePathError(f"{path} belongs to uid {st.st_uid}, not to this user (uid {os.getuid()}): refusing to use it")


def private_dir(path: str | Path, *, strict: bool = False) -> Path:
    """`path` as a directory of ours, mode 0700: created so, or an existing one checked (a real
    directory, owned by us) and tightened. `strict` (a shared place such as /tmp, where someone
    else may have made it first): an existing one must already be 0700, else it is refused.
    No component on the way is a symlink someone else made (see _open_parent)."""
    path = Path(path)
    try:
        parent, name = _open_parent(path)
    except FileNotFoundError:
        if strict:
            raise PrivatePathError(f"{path.parent} does not exist") from None
        path.parent.mkdir(parents=True, exist_ok=True)  # the user's own choice of place: leave its modes alone
        parent, name = _open_parent(path)
    try:
        try:
            os.mkdir(name, 0o700, dir_fd=parent)
            created = True
        except FileExistsError:
            created = False
        try:
            fd = os.open(name, _DIR, dir_fd=parent)
        except OSError:
            st = _lstat_at(parent, name)
            if st is not None and stat.S_ISLNK(st.st_mode):
                raise PrivatePathError(f"{path} is a symlink (to {os.readlink(name, dir_fd=parent)}): "
                                       "refusing to write private files through it") from None
            if st is not None and not stat.S_ISDIR(st.st_mode):
                raise PrivatePathError(f"{path} is not a directory") from None
            raise
    finally:
        os.close(parent)
    try:
        st = os.fstat(fd)
        _check_owned(path, st)
        if created:
            os.fchmod(fd, 0o700)
        elif st.st_mode & 0o077:
            if strict:
                raise PrivatePathError(
                    f"{path} has mode {stat.S_IMODE(st.st_mode):04o} (other users can get into it): refusing to use it;"
                    f" remove it (rm -r {path}) and run again"
                )
            os.fchmod(fd, 0o700)
    finally:
        os.close(fd)
    return path


def open_private(path: str | Path, flags: int) -> int:
    """os.open with O_CREAT, mode 0600 whatever the umask, never through a symlink someone else
    made (at any component) nor a symlink at all as the file itself, only a regular file of ours
    in a directory of ours. Returns the descriptor."""
    path = Path(path)
    parent, name = _open_parent(path)
    try:
        _check_dir(path.parent, parent)
        try:
            fd = os.open(name, flags | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=parent)
        except OSError as exc:
            st = _lstat_at(parent, name)
            if st is not None and stat.S_ISLNK(st.st_mode):
                raise PrivatePathError(f"{path} is a symlink (to {os.readlink(name, dir_fd=parent)}): "
                                       "refusing to write through it") from None
            raise exc
    finally:
        os.close(parent)
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


def _fresh_private_file(parent: int, name: str, suffix: str, data: bytes) -> str:
    """A new file beside `name` in the directory `parent` (never an existing one, never through
    a symlink), mode 0600, holding `data`: what is then renamed or linked into place."""
    tmp = f".{name}.{os.getpid()}.{suffix}"
    try:
        os.unlink(tmp, dir_fd=parent)
    except FileNotFoundError:
        pass
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=parent)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, data)
    finally:
        os.close(fd)
    return tmp


def write_private(path: str | Path, data: bytes) -> None:
    """Replace `path` atomically with `data`, mode 0600 (a fresh temporary file, then rename),
    in a directory of ours reached without a symlink someone else made."""
    path = Path(path)
    parent, name = _open_parent(path)
    try:
        _check_dir(path.parent, parent)
        tmp = _fresh_private_file(parent, name, "tmp", data)
        os.replace(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
    finally:
        os.close(parent)


def create_private_once(path: str | Path, data: bytes) -> bool:
    """Write `path` with `data` (0600) unless it exists; True when this call made it. Safe when
    several processes try at once: exactly one wins, the others find the winner's file."""
    path = Path(path)
    parent, name = _open_parent(path)
    try:
        _check_dir(path.parent, parent)
        tmp = _fresh_private_file(parent, name, "new", data)
        try:
            os.link(tmp, name, src_dir_fd=parent, dst_dir_fd=parent, follow_symlinks=False)
            return True
        except FileExistsError:
            return False
        finally:
            try:
                os.unlink(tmp, dir_fd=parent)
            except FileNotFoundError:
                pass
    finally:
        os.close(parent)
