"""Where a repository's pipeline lives: its run directory, socket addresses, lock and info file.

Every process computes the same addresses from the repository root and its configuration, so
actors started by hand or by `honcho start` find each other without being told.

* ``ipc://`` sockets in ``<index dir>/run/`` (0700), or, when that path would be too long for a
  Unix socket (107 bytes on Linux), in ``$TMPDIR/nsccn-<uid>/<hash of the index dir>/``, which
  must be ours and 0700 (one made by someone else is refused, never used). The pipeline never
  listens on a network port: other machines are used through Ray (`nsccn index --ray`).

The lock (``<index dir>/pipeline.lock``, an flock the kernel releases when its holder dies,
even on kill -9) keeps two pipelines off one repository; ``pipeline.json`` beside it says who
holds it (pid, mode, start time, addresses) for a second `nsccn serve` to attach to and for
`nsccn index` / `nsccn status` to report. Both are 0600, the directories 0700, whatever the umask.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from nsccn.config import Config, index_dir
from nsccn.private import open_private, private_dir, write_private

if TYPE_CHECKING:  # the messages are imported where sockets are made, not by `nsccn index`'s check
    from nsccn.messages import Addresses

SOCKETS = ("control", "supervisor", "watcher", "jobs", "writer", "embedder", "query")
MAX_IPC_PATH = 100  # sun_path holds 108 bytes with the NUL; keep a margin
LOCK_FILE = "pipeline.lock"
INFO_FILE = "pipeline.json"
STOPPED_FILE = "pipeline.stopped"  # written by a pipeline stopped on purpose: fronts do not restart it
START_LOCK_FILE = "start.lock"  # held by the one `nsccn serve` starting a pipeline


def run_dir(root: Path, config: Config) -> Path:
    """The directory for ipc sockets (created on demand by the supervisor)."""
    idx = index_dir(Path(root), config).resolve()
    preferred = idx / "run"
    if len(str(preferred / "supervisor.sock")) <= MAX_IPC_PATH:
        return preferred
    digest = hashlib.sha1(str(idx).encode()).hexdigest()[:12]
    return shared_base() / digest


def shared_base() -> Path:
    """The per-user directory under the temporary directory for run directories too deep to use."""
    return Path(tempfile.gettempdir()) / f"nsccn-{os.getuid()}"


def prepare_run_dir(d: Path) -> Path:
    """Create the run directory 0700. Under the shared temporary directory, both levels must be
    ours and 0700 already when they exist: anyone can create them there first, and whoever owns
    them would get the sockets' traffic (parsed source) and could stop the pipeline."""
    d = Path(d)
    if d.parent == shared_base():
        private_dir(d.parent, strict=True)
        return private_dir(d, strict=True)
    return private_dir(d)


def addresses(root: Path, config: Config) -> Addresses:
    from nsccn.messages import Addresses

    d = run_dir(root, config)
    return Addresses(**{name: f"ipc://{d / (name + '.sock')}" for name in SOCKETS})


def ipc_paths(addrs: Addresses) -> list[Path]:
    return [Path(a[len("ipc://"):]) for a in msgspec.structs.astuple(addrs) if a.startswith("ipc://")]


def stopped_path(root: Path, config: Config) -> Path:
    return index_dir(Path(root), config) / STOPPED_FILE


def start_lock_path(root: Path, config: Config) -> Path:
    return index_dir(Path(root), config) / START_LOCK_FILE


def lock_path(root: Path, config: Config) -> Path:
    return index_dir(Path(root), config) / LOCK_FILE


def info_path(root: Path, config: Config) -> Path:
    return index_dir(Path(root), config) / INFO_FILE


class PipelineLock:
    """Exclusive per repository. `acquire()` is False when another live process holds it."""

    def __init__(self, root: Path, config: Config):
        self.path = lock_path(root, config)
        self.info = info_path(root, config)
        self.fd: int | None = None

    def acquire(self, tries: int = 20) -> bool:
        private_dir(self.path.parent)
        fd = open_private(self.path, os.O_RDWR)
        for i in range(tries):
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self.fd = fd
                return True
            except BlockingIOError:
                # A `status` probe holds a shared lock for microseconds: try again a little.
                if i + 1 < tries:
                    time.sleep(0.05)
        os.close(fd)
        return False

    def write_info(self, info: dict) -> None:
        write_private(self.info, json.dumps(info, indent=2).encode())

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            self.info.unlink(missing_ok=True)
        finally:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


def lock_held(root: Path, config: Config) -> bool:
    """True when a live process holds the repository's pipeline lock."""
    path = lock_path(root, config)
    if not path.exists():
        return False
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def running_pipeline(root: Path, config: Config) -> dict | None:
    """The info of the pipeline running on this repository, or None."""
    if not lock_held(root, config):
        return None
    for _ in range(20):  # the holder writes the file right after taking the lock
        try:
            return json.loads(info_path(root, config).read_text())
        except (OSError, ValueError):
            time.sleep(0.05)
    return {"pid": None, "mode": "unknown"}
