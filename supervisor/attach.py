"""A repository's shared pipeline, seen from an MCP front (`nsccn serve`): start it detached when
none runs, stay attached to it, notice when it dies and start or find the next one.

The pipeline outlives any one client (as gopls `-remote=auto` or watchman do): it runs in its own
session, logs to `<index dir>/logs/supervisor.log`, lives while any front is attached and lingers
`pipeline_linger_s` after the last one leaves. Starting is race-free: whoever holds
`<index dir>/start.lock` checks again and starts it; the others wait on that lock and find it.

A front pings the supervisor's control socket every second (`Attach`). When the pipeline's lock
is free again, the pipeline is gone: stopped on purpose (`pipeline.stopped` names its pid) -> the
front marks its answers stale and waits for someone to start another; died (kill -9, gave up) ->
it marks its answers stale and starts or finds a new one. Until it is attached again, every
answer says so in `stale`.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from nsccn.config import Config, ensure_index_dir, index_dir
from nsccn.messages import Attach, Ok
from nsccn.private import PrivatePathError, open_private, private_dir
from supervisor.addresses import running_pipeline, start_lock_path, stopped_path
from supervisor.control import control_address, query_status, request

log = logging.getLogger("nsccn.attach")

PING_S = 1.0
START_TIMEOUT_S = 60.0
PING_FAILURES_LOST = 5  # the lock is held but the supervisor has not answered this many pings


class PipelineStartError(RuntimeError):
    pass


def _spawn_detached(root: Path, config: Config, workers: int, embed: bool) -> subprocess.Popen:
    logs = private_dir(private_dir(index_dir(root, config)) / "logs")
    logf = os.fdopen(open_private(logs / "supervisor.log", os.O_WRONLY | os.O_APPEND), "ab")
    cmd = [sys.executable, "-P", "-m", "supervisor", "pipeline", str(root), "--workers", str(workers)]
    if not embed:
        cmd.append("--no-embed")
    try:
        # Its own session: no terminal signal or closing client reaches it. cwd "/": `-m` puts the
        # working directory first on sys.path, and a repository may carry a `supervisor/` package.
        return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=logf, stderr=logf, cwd="/",
                                start_new_session=True, close_fds=True)
    finally:
        logf.close()


def ensure_pipeline(root: Path, config: Config, workers: int = 0, embed: bool = True,
                    timeout_s: float = START_TIMEOUT_S) -> tuple[dict, subprocess.Popen | None]:
    """The info of the repository's running pipeline, started detached when none runs (and the
    process started, for the caller to reap). Several callers at once start exactly one."""
    ensure_index_dir(root, config)  # one outside the repository: never another repository's (nor its pipeline)
    info = running_pipeline(root, config)
    if info and info.get("pid"):
        return info, None
    fd = open_private(start_lock_path(root, config), os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # the starter holds it until its pipeline holds the pipeline lock
        info = running_pipeline(root, config)
        if info and info.get("pid"):
            return info, None
        proc = _spawn_detached(root, config, workers, embed)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            info = running_pipeline(root, config)
            if info and info.get("pid"):
                return info, proc
            if proc.poll() is not None:
                raise PipelineStartError(f"the pipeline exited with code {proc.returncode} as it started; see "
                                         f"{index_dir(root, config) / 'logs' / 'supervisor.log'}")
            time.sleep(0.05)
        raise PipelineStartError(f"the pipeline did not start within {timeout_s:g} s")
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def stopped_on_purpose(root: Path, config: Config, pid: int | None) -> dict | None:
    """What pipeline `pid` wrote when it was stopped on purpose, or None (it died)."""
    try:
        data = json.loads(stopped_path(root, config).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("pid") == pid else None


class Attachment:
    """One front's hold on the shared pipeline: pings it, follows it to the next one, and says
    (`stale_note`) when answers cannot be trusted to be fresh."""

    def __init__(self, root: Path, config: Config, workers: int = 0, embed: bool = True,
                 on_new_pipeline: Callable[[dict], None] | None = None):
        self.root = Path(root)
        self.config = config
        self.workers = workers
        self.embed = embed
        self.on_new_pipeline = on_new_pipeline
        self.client = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.info: dict | None = None
        self.stale_note: str | None = None
        self.attachments = 0  # pipelines attached to so far
        self._children: list[subprocess.Popen] = []
        self._failures = 0
        self._catching_up = False
        self._retry_at = 0.0
        self._backoff = 1.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- the pipeline ----------------------------------------------------------------------------

    def start(self) -> dict:
        """Attach (starting the pipeline when none runs), then keep attached on a thread."""
        self._attach_to(self._ensure())
        self._thread = threading.Thread(target=self._watch, name="nsccn-attach", daemon=True)
        self._thread.start()
        return self.info

    def _ensure(self) -> dict:
        info, proc = ensure_pipeline(self.root, self.config, self.workers, self.embed)
        if proc is not None:
            self._children.append(proc)
            log.info("started the pipeline (pid %s) for %s", info.get("pid"), self.root)
        return info

    def _attach_to(self, info: dict) -> None:
        first = self.info is None
        self.info = info
        self._failures = 0
        self._backoff = 1.0
        self._ping()
        self.attachments += 1
        self.stale_note = None
        if not first:
            # Its initial scan re-reads what changed while none ran: stale until that is done.
            log.info("attached to the new pipeline (pid %s)", info.get("pid"))
            self.stale_note = (f"a new pipeline (pid {info.get('pid')}) took over: until its first scan is done, "
                               "answers may miss edits made while none ran")
            self._catching_up = True
            if self.on_new_pipeline is not None:
                self.on_new_pipeline(info)

    def _ping(self, leaving: bool = False) -> bool:
        address = control_address(self.root, self.config, self.info)
        reply = request(address, Attach(client=self.client, pid=os.getpid(), leaving=leaving), 1.0)
        return isinstance(reply, Ok)

    def _watch(self) -> None:
        while not self._stop.wait(PING_S):
            for p in list(self._children):  # reap the pipelines we started once they end
                if p.poll() is not None:
                    self._children.remove(p)
            try:
                self._check()
            except Exception as exc:  # the watch must go on whatever one round hits
                log.warning("checking the pipeline failed: %s: %s", type(exc).__name__, exc)

    def _check(self) -> None:
        old = self.info or {}
        info = running_pipeline(self.root, self.config)
        if info and info.get("pid") and info.get("pid") != old.get("pid"):
            self._attach_to(info)  # someone else started the next one
            return
        if info:
            if self._ping():
                self._failures = 0
                if self._catching_up:
                    st = query_status(self.root, self.config, timeout_s=1.0) or {}
                    if st.get("state") in ("watching", "embedding", "idle"):
                        self._catching_up = False
                        self.stale_note = None
                elif self.stale_note and self.stale_note.startswith("the pipeline (pid"):
                    self.stale_note = None  # it answers again
                return
            self._failures += 1
            if self._failures >= PING_FAILURES_LOST and not self.stale_note:
                self.stale_note = (f"the pipeline (pid {old.get('pid')}) has not answered for {self._failures} s; "
                                   "answers may miss recent edits until it does")
                log.warning(self.stale_note)
            return
        # The lock is free: the pipeline is gone.
        stopped = stopped_on_purpose(self.root, self.config, old.get("pid"))
        if stopped:
            if not self.stale_note:
                self.stale_note = (f"the pipeline was stopped ({stopped.get('reason')}) at {stopped.get('at')}: answers "
                                   "come from the index as it was then and miss later edits; start a new session "
                                   "(`nsccn serve`) to resume watching")
                log.warning(self.stale_note)
            return
        if not self.stale_note or not self.stale_note.startswith("the pipeline died"):
            self.stale_note = (f"the pipeline died (pid {old.get('pid')}, noticed at {time.strftime('%H:%M:%S')}); "
                               "a new one is starting: answers may miss edits made since")
            log.warning(self.stale_note)
        if time.monotonic() < self._retry_at:
            return
        try:
            self._attach_to(self._ensure())
        except (PipelineStartError, PrivatePathError, OSError) as exc:
            self._retry_at = time.monotonic() + self._backoff
            self._backoff = min(30.0, self._backoff * 2)
            log.warning("could not start a new pipeline: %s (trying again in %g s)", exc, self._backoff)

    # -- for the MCP tools -------------------------------------------------------------------------

    def status(self) -> dict | None:
        """The live pipeline status for `index_status` and the answers' notes: while detached, a
        `stale` note every answer carries."""
        note = self.stale_note
        st = query_status(self.root, self.config, timeout_s=1.0)
        if st is not None:
            st = {**st, "this_client": self.client}
        if note:
            st = {**(st or {"state": "detached", "last_pid": (self.info or {}).get("pid")}), "stale": note}
        return st

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=3)
        if self.info and running_pipeline(self.root, self.config):
            self._ping(leaving=True)  # the linger starts now, not when the ping times out
