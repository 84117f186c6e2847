"""What every actor shares: sockets that never take down the loop, heartbeats, signals, logging.

An actor is a thin loop: receive a message, call the library, send the result. This module
keeps the loop honest:

* every frame goes through `recv`, which logs and drops anything that is not a valid message
  (foreign, truncated, wrong protocol version) instead of raising;
* a heartbeat thread reports the loop's age, what long library call is running (`busy`), peak
  memory and the actor's counters to the supervisor, so a hung loop is told from a busy one;
* SIGTERM (and SIGINT when run by hand) asks the loop to finish; a supervised actor also exits
  when its supervisor disappears (parent-death signal and a parent-pid check), so no orphan
  outlives a kill -9 of the supervisor.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path

import zmq

from nsccn.config import BULK_KINDS, load_config
from nsccn.private import PrivatePathError
from supervisor.memory import peak_rss_kb
from nsccn.messages import (
    ActorSpec,
    BadMessage,
    Heartbeat,
    Hello,
    Message,
    decode,
    decode_spec,
    encode,
)

class ActorFailed(Exception):
    """The actor cannot go on and has said why in its log: it ends with status 1 (and the
    supervisor starts it again)."""


HWM = 10_000  # a safety net: credits keep every queue far below this


def setup_logging(name: str) -> None:
    level = os.environ.get("NSCCN_LOG_LEVEL", "INFO").upper()
    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(logging, level, logging.INFO),
        format=f"%(asctime)s {name}[%(process)d] %(levelname)s %(message)s",
        force=True,
    )




def _malloc_trim():
    try:
        return ctypes.CDLL(None).malloc_trim  # glibc; elsewhere there is nothing to call
    except (OSError, AttributeError):
        return None


_MALLOC_TRIM = _malloc_trim()


def release_free_memory(collect: bool = True) -> None:
    """Give the heap's free pages back to the system (after a garbage collection unless told
    not to). glibc's malloc keeps what a freed tree-sitter tree held, so a parser that parsed one
    huge file (67 MB of nodes for sympy's largest) would hold that much for the rest of its life."""
    if collect:
        import gc

        gc.collect()
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


def _set_parent_death_signal() -> None:
    """Linux: get SIGTERM when the parent dies (works even when it is SIGKILLed)."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def name_os_thread(name: str) -> None:
    """Linux: give the calling thread a name the system shows (`top -H`, /proc/PID/task/*/comm),
    so which thread runs at which priority can be seen. Elsewhere nothing."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(15, name.encode()[:15])  # PR_SET_NAME
    except (OSError, AttributeError):
        pass


class Actor:
    kind = "actor"

    def __init__(self, spec: ActorSpec):
        self.spec = spec
        self.name = spec.name
        self.root = Path(spec.root)
        self.addrs = spec.addresses
        self.log = logging.getLogger(f"nsccn.{self.kind}")
        self.ctx = zmq.Context()
        self.stop = threading.Event()
        self.stopped_by: str | None = None  # the signal that asked us to stop (logged by main)
        self.stats: dict = {"dropped": 0}
        self.state = "starting"
        self.busy_label: str | None = None
        self.last_error: str | None = None
        self._tick = time.monotonic()
        self._sockets: list[zmq.Socket] = []
        self._bound: list[tuple[str, tuple[int, int, int]]] = []  # ipc socket files we created (path, identity)
        self._sup: zmq.Socket | None = None
        self._hb_thread: threading.Thread | None = None
        self._dropped_logged = 0

    # -- sockets -----------------------------------------------------------------------------

    def socket(self, kind: int, *, bind: str | None = None, connect: str | None = None) -> zmq.Socket:
        s = self.ctx.socket(kind)
        s.setsockopt(zmq.LINGER, 0)
        s.setsockopt(zmq.SNDHWM, HWM)
        s.setsockopt(zmq.RCVHWM, HWM)
        if bind:
            if bind.startswith("ipc://"):
                from supervisor.addresses import prepare_run_dir

                prepare_run_dir(Path(bind[6:]).parent)
            s.bind(bind)
            if bind.startswith("ipc://"):
                with contextlib.suppress(OSError):
                    self._bound.append((bind[6:], _file_identity(os.stat(bind[6:]))))
        if connect:
            s.connect(connect)
        self._sockets.append(s)
        return s

    def poller(self, *socks: zmq.Socket) -> zmq.Poller:
        """A poller over `socks` that also wakes up on a signal (SIGTERM ends a wait at once)."""
        p = zmq.Poller()
        for s in socks:
            p.register(s, zmq.POLLIN)
        p.register(self._wake_r, zmq.POLLIN)
        return p

    def wait(self, poller: zmq.Poller, timeout_ms: int) -> dict:
        ready = dict(poller.poll(timeout_ms))
        if self._wake_r in ready:
            try:
                os.read(self._wake_r, 512)
            except BlockingIOError:
                pass
        return ready

    def send(self, sock: zmq.Socket, msg: Message, frames_before: list[bytes] | None = None) -> bool:
        """Send, waiting while the queue is full (credits make that rare) unless stopping."""
        data = encode(msg)
        parts = [*(frames_before or []), data]
        while True:
            try:
                sock.send_multipart(parts, zmq.NOBLOCK)
                return True
            except zmq.Again:
                if self.stop.is_set():
                    return False
                sock.poll(200, zmq.POLLOUT)

    def recv(self, sock: zmq.Socket) -> tuple[list[bytes], Message | None]:
        """(routing frames, message); the message is None when the frame was dropped."""
        frames = sock.recv_multipart(zmq.NOBLOCK)
        try:
            return frames[:-1], decode(frames[-1])
        except BadMessage as exc:
            self.drop(str(exc))
            return frames[:-1], None

    def drop(self, why: str) -> None:
        self.stats["dropped"] += 1
        if self._dropped_logged < 50:  # a flood of junk must not flood the log
            self._dropped_logged += 1
            self.log.warning("dropped a message: %s", why)

    def unexpected(self, msg: Message) -> None:
        self.drop(f"{type(msg).__name__} is not for a {self.kind}")

    # -- supervision -------------------------------------------------------------------------

    def hello(self) -> Hello:
        return Hello(actor=self.name, kind=self.kind, pid=os.getpid(), generation=self.spec.generation)

    def tick(self, state: str | None = None) -> None:
        self._tick = time.monotonic()
        if state:
            self.state = state

    @contextlib.contextmanager
    def busy(self, label: str):
        """A long library call: the heartbeat says so, and the supervisor will not call it hung."""
        self.busy_label = label
        try:
            yield
        finally:
            self.busy_label = None
            self.tick()

    def beat_now(self) -> None:
        """Send a heartbeat now rather than at the next interval: news the supervisor acts on."""
        self._hb_wake.set()

    def heartbeat_stats(self) -> dict:
        """Override to add live counters (called from the heartbeat thread)."""
        return dict(self.stats)

    def _heartbeat_loop(self) -> None:
        name_os_thread("nsccn-heartbeat")
        sock = self.ctx.socket(zmq.PUSH)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.SNDHWM, 100)
        sock.connect(self.addrs.supervisor)
        try:
            sock.send(encode(self.hello()), zmq.NOBLOCK)
        except zmq.Again:
            pass
        seq = 0
        parent = self.spec.parent_pid
        stop_seen = None
        final = False
        while True:
            seq += 1
            try:
                stats = self.heartbeat_stats()
            except RuntimeError:  # a dict changed size under us: next beat
                stats = {}
            hb = Heartbeat(
                actor=self.name,
                kind=self.kind,
                pid=os.getpid(),
                seq=seq,
                state=self.state,
                loop_age=round(time.monotonic() - self._tick, 3),
                busy=self.busy_label,
                rss_kb=peak_rss_kb(),
                stats=stats,
                last_error=self.last_error,
            )
            try:
                sock.send(encode(hb), zmq.NOBLOCK)
            except zmq.Again:
                pass
            except zmq.ZMQError:
                break
            if self.spec.supervised and parent and os.getppid() != parent:
                self.log.warning("supervisor (pid %s) is gone: stopping", parent)
                self.stop.set()
            if self.stop.is_set():
                stop_seen = stop_seen or time.monotonic()
                if time.monotonic() - stop_seen > 10:  # the loop is stuck in a call: do not linger
                    self.log.error("did not stop within 10 s of being asked: exiting hard")
                    os._exit(1)
            if final:
                break
            self._hb_wake.wait(self.spec.heartbeat_s)
            self._hb_wake.clear()
            final = self._hb_stop.is_set()  # on the way out: one last beat
        sock.close(linger=300)  # let the last beat (final counters) reach the supervisor

    def _on_signal(self, signum, frame) -> None:
        # No logging here: the handler runs between two bytecodes of the main thread, maybe inside
        # its own write of a log line to stderr, and a second write there is a reentrant call
        # (a "Logging error" traceback in the log). `main` logs the signal once `run` returns.
        self.stopped_by = signal.Signals(signum).name
        self.state = "stopping"
        self.stop.set()

    # -- priority ------------------------------------------------------------------------------

    # True: `run` calls `yield_cpu` itself, once the threads that keep the process's priority
    # have started (the embedder's query lane).
    yields_in_run = False

    def yield_cpu(self) -> None:
        """Lower the calling thread's CPU priority by `spec.nice` (bulk work yields to queries).
        On Linux a nice value belongs to a thread and the threads it starts later, so threads
        started before keep the process's priority; elsewhere the whole process yields."""
        if self.spec.nice:
            with contextlib.suppress(OSError):
                os.nice(self.spec.nice)

    # -- life ----------------------------------------------------------------------------------

    def run(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def main(self) -> int:
        # Signals write a byte here, so a loop waiting in a poll wakes up at once.
        self._wake_r, wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        signal.signal(signal.SIGTERM, self._on_signal)
        if self.spec.supervised:
            _set_parent_death_signal()
            # The terminal's Ctrl-C reaches the whole process group: the supervisor decides.
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            if self.spec.parent_pid and os.getppid() != self.spec.parent_pid:
                return 1  # the supervisor died while we were starting
        else:
            signal.signal(signal.SIGINT, self._on_signal)
        self._hb_stop = threading.Event()
        self._hb_wake = threading.Event()  # set to beat now (stop sets it too)
        self._hb_thread = threading.Thread(target=self._heartbeat_loop, name="heartbeat", daemon=True)
        self._hb_thread.start()  # before the work yields: the beats keep their priority (on Linux)
        if not self.yields_in_run:
            self.yield_cpu()
        code = 0
        try:
            self.run()
        except ActorFailed as exc:  # logged where it happened, in one line: no traceback
            self.last_error = self.last_error or str(exc)
            code = 1
        except Exception as exc:
            self.last_error = f"{type(exc).__name__}: {exc}"
            self.log.exception("crashed")
            code = 1
        finally:
            if self.stopped_by:
                self.log.info("got %s: stopping", self.stopped_by)
            self.state = "stopped"
            try:
                self.close()
            except Exception:
                self.log.exception("close failed")
            self._hb_stop.set()
            self._hb_wake.set()
            self._hb_thread.join(timeout=2)
            # Our socket files, unless a successor has bound the path since: checked while our
            # sockets still hold them open, so no later file can have been given their inodes.
            for path, identity in self._bound:
                with contextlib.suppress(OSError):
                    if _file_identity(os.stat(path)) == identity:
                        os.unlink(path)
            for s in self._sockets:
                s.close(0)
            self.ctx.term()
        return code


def _file_identity(st: os.stat_result) -> tuple[int, int, int]:
    """Which file a path is: the inode alone is not enough, a file made after ours was removed
    gets the freed inode at once (a successor's socket, which ours must not remove)."""
    return st.st_dev, st.st_ino, st.st_ctime_ns


def default_spec(kind: str, root: str, name: str | None = None) -> ActorSpec:
    """The spec of an actor started by hand or by honcho: addresses from the root alone."""
    from supervisor.addresses import addresses

    root_path = Path(root).resolve()
    config = load_config(root_path)
    return ActorSpec(
        name=name or (f"{kind}-{os.getpid()}" if kind == "parser" else kind),
        kind=kind,
        root=str(root_path),
        db_path=str(config.db_path(root_path)),
        addresses=addresses(root_path, config),
        debounce_ms=config.watch_debounce_ms,
        embed_batch=config.embedding_batch_size,
        nice=config.bulk_nice if kind in BULK_KINDS else 0,
    )


def actor_main(cls: type[Actor], argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog=f"python -m workers.{cls.kind}", description=cls.__doc__)
    p.add_argument("--root", default=".", help="repository root (addresses follow from it)")
    p.add_argument("--name", default=None, help="actor name (default: the kind; parser-<pid> for parsers)")
    p.add_argument("--spec", default=None, help="full actor spec as JSON (the supervisor passes this)")
    args = p.parse_args(argv)
    spec_text = args.spec or os.environ.get("NSCCN_ACTOR_SPEC")
    try:
        spec = decode_spec(spec_text) if spec_text else default_spec(cls.kind, args.root, args.name)
    except (PrivatePathError, ValueError) as exc:
        print(f"nsccn {cls.kind}: {exc}", file=sys.stderr)
        return 2
    setup_logging(spec.name)
    return cls(spec).main()
