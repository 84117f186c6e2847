"""Where a repository's pipeline lives: its run directory, socket addresses, lock and info file.

Every process computes the same addresses from the repository root and its configuration, so
actors started by hand or by `honcho start` find each other without being told.

* ``ipc://`` (default): sockets in ``<index dir>/run/``, or, when that path would be too long
  for a Unix socket (107 bytes on Linux), in ``/tmp/nsccn-<uid>/<hash of the index dir>/``.
* ``tcp://``: ports ``base_port .. base_port+6`` on ``host``, set in the ``pipeline`` section of
  ``<root>/.nsccn/config.json`` (``{"pipeline": {"transport": "tcp", "host": "10.0.0.5",
  "base_port": 47100}}``) or with ``NSCCN_PIPELINE_TCP=host:base_port``. Parser and embedder
  workers on other hosts then connect to that host.

The lock (``<index dir>/pipeline.lock``, an flock the kernel releases when its holder dies,
even on kill -9) keeps two pipelines off one repository; ``pipeline.json`` beside it says who
holds it (pid, mode, start time, addresses) for a second `nsccn serve` to attach to and for
`nsccn index` / `nsccn status` to report.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import tempfile
import time
from pathlib import Path

import msgspec

from nsccn.config import CONFIG_FILE, INDEX_DIR, Config, index_dir
from nsccn.messages import Addresses

SOCKETS = ("control", "supervisor", "watcher", "jobs", "writer", "embedder", "query")
MAX_IPC_PATH = 100  # sun_path holds 108 bytes with the NUL; keep a margin
LOCK_FILE = "pipeline.lock"
INFO_FILE = "pipeline.json"


def pipeline_settings(root: Path) -> dict:
    """The optional ``pipeline`` section of the repository's config.json, then the environment."""
    settings: dict = {}
    path = Path(root) / INDEX_DIR / CONFIG_FILE
    if path.exists():
        try:
            settings = dict(json.loads(path.read_text()).get("pipeline") or {})
        except (ValueError, AttributeError):
            settings = {}
    tcp = os.environ.get("NSCCN_PIPELINE_TCP")
    if tcp:
        host, _, port = tcp.rpartition(":")
        settings.update(transport="tcp", host=host or "127.0.0.1", base_port=int(port))
    return settings


def run_dir(root: Path, config: Config) -> Path:
    """The directory for ipc sockets (created on demand by the supervisor)."""
    idx = index_dir(Path(root), config).resolve()
    preferred = idx / "run"
    if len(str(preferred / "supervisor.sock")) <= MAX_IPC_PATH:
        return preferred
    digest = hashlib.sha1(str(idx).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"nsccn-{os.getuid()}" / digest


def addresses(root: Path, config: Config) -> Addresses:
    settings = pipeline_settings(root)
    if settings.get("transport") == "tcp":
        host = settings.get("host", "127.0.0.1")
        base = int(settings.get("base_port", 47100))
        return Addresses(**{name: f"tcp://{host}:{base + i}" for i, name in enumerate(SOCKETS)})
    d = run_dir(root, config)
    return Addresses(**{name: f"ipc://{d / (name + '.sock')}" for name in SOCKETS})


def ipc_paths(addrs: Addresses) -> list[Path]:
    return [Path(a[len("ipc://"):]) for a in msgspec.structs.astuple(addrs) if a.startswith("ipc://")]


def bind_address(address: str) -> str:
    """What the binding side passes to bind(): tcp binds on every interface of the port."""
    if address.startswith("tcp://"):
        return "tcp://*:" + address.rsplit(":", 1)[1]
    return address


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
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
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
        tmp = self.info.with_suffix(".tmp")
        tmp.write_text(json.dumps(info, indent=2))
        os.replace(tmp, self.info)

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
        fd = os.open(path, os.O_RDONLY)
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
