"""The supervisor: starts and wires every actor, watches heartbeats, restarts what crashes or
hangs (exponential backoff, a limit), answers status on a control socket, and shuts everything
down cleanly on SIGTERM/SIGINT.

Modes:

* ``index``: watcher (scan once, no watching), parsers, writer, embedder when embedding;
  returns when the writer reports the index complete.
* ``serve``: the same with a live watcher; runs until a signal or `nsccn stop`. Started detached
  by `nsccn serve` (``linger_s`` set), it also tracks the MCP fronts attached to it (`Attach`
  on the control socket, every second) and ends when none has been attached for ``linger_s``.
  The MCP fronts are not its actors: each is its own `nsccn serve` process (supervisor/attach.py).
* ``monitor``: spawns nothing; takes the lock and answers status for actors started by
  `honcho start` (Procfile).

It knows processes and addresses, not code: every actor is `python -m workers.<kind>`.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
import zmq

from nsccn.config import BULK_KINDS, Config, ensure_index_dir, index_dir, load_config
from nsccn.vectors.static_file import model_problem, uses_static_model
from nsccn.messages import (
    ActorSpec,
    Attach,
    BadMessage,
    Heartbeat,
    Hello,
    IndexComplete,
    Ok,
    ShutdownRequest,
    StatusReply,
    StatusRequest,
    decode,
    encode,
    encode_spec,
)
from nsccn.private import PrivatePathError, open_private, private_dir
from supervisor.addresses import (
    PipelineLock,
    addresses,
    ipc_paths,
    prepare_run_dir,
    run_dir,
    stopped_path,
)
from supervisor.memory import peak_rss_kb

log = logging.getLogger("nsccn.supervisor")

MODULES = {"watcher": "workers.watcher", "parser": "workers.parser", "writer": "workers.writer",
           "embedder": "workers.embedder"}
# Bulk work yields the CPU to queries: `BULK_KINDS` run `bulk_nice` (a user setting, default 10)
# nicer. NSCCN_EMBEDDER_NICE sets the embedder's alone (benchmarks/pipeline_isolation.py compares with 0).
# Per-generation counters that add up across restarts (the rest are gauges).
COUNTERS = frozenset(
    "parsed unchanged removed files_written duplicates batches resolves vectors_written dispatched resent"
    " committed events jobs embedded queries dropped seconds lines".split()
)
STOP_ORDER = ("watcher", "parser", "embedder", "writer")  # the writer last: it commits on the way out


@dataclass
class Policy:
    heartbeat_s: float = 0.5
    # no heartbeat for this long: hung (or frozen) -> kill, restart
    heartbeat_timeout_s: float = float(os.environ.get("NSCCN_HEARTBEAT_TIMEOUT_S", "15"))
    loop_timeout_s: float = 60.0  # the loop has not gone round for this long outside a `busy` call
    startup_grace_s: float = 60.0  # before the first heartbeat
    backoff_first_s: float = 0.25
    backoff_max_s: float = 8.0
    max_restarts: int = 5  # within restart_window_s; one more and the pipeline gives up
    restart_window_s: float = 60.0
    stop_timeout_s: float = 8.0
    client_timeout_s: float = 10.0  # an MCP front not heard from for this long has gone
    first_client_grace_s: float = 15.0  # a detached pipeline waits at least this long for its first client


@dataclass
class Slot:
    name: str
    kind: str
    proc: subprocess.Popen | None = None
    pid: int | None = None
    generation: int = 0
    started: float = 0.0
    next_start: float | None = 0.0  # when to (re)start; None: not scheduled
    restarts: int = 0
    recent: deque = field(default_factory=deque)  # monotonic times of recent restarts
    last_hb: float = 0.0
    hb: Heartbeat | None = None
    state: str = "pending"
    last_error: str | None = None
    exits: list = field(default_factory=list)  # (pid, code) of processes that ended
    banked: dict = field(default_factory=dict)  # counters of earlier generations
    peak_rss_kb: int = 0
    log_path: Path | None = None
    external: bool = False  # started by someone else (honcho): watched, never restarted
    retiring: bool = False  # asked to end because its work is done: its exit is no crash


class PipelineBusy(RuntimeError):
    def __init__(self, info: dict):
        super().__init__(f"a pipeline already runs on this repository: {info}")
        self.info = info


class Supervisor:
    def __init__(
        self,
        root: str | Path,
        mode: str = "serve",
        *,
        parsers: int = 0,
        embed: bool = True,
        linger_s: float | None = None,
        policy: Policy | None = None,
        config: Config | None = None,
        on_progress=None,
    ):
        self.root = Path(root).resolve()
        self.mode = mode
        self.config = config or load_config(self.root)
        self.db_path = self.config.db_path(self.root)
        self.addrs = addresses(self.root, self.config)
        self.run_dir = run_dir(self.root, self.config)
        self.log_dir = index_dir(self.root, self.config) / "logs"
        self.policy = policy or Policy()
        self.embed = embed
        # A model that cannot load would only crash the embedder again and again: say it once and
        # index without vectors (search answers lexically and says why).
        self.embed_problem = model_problem(self.config) if embed else None
        if self.embed_problem:
            if mode != "index":  # an index run prints it among its summary's warnings
                log.warning("no vectors: %s", self.embed_problem)
            self.embed = False
        self.embed_in_writer = self.embed and uses_static_model(self.config)
        # None: run until stopped; else end once no MCP front has been attached for this long.
        self.linger_s = linger_s
        self.clients: dict[str, dict] = {}  # client id -> pid, attached (wall clock), last_seen (monotonic)
        self._alone_since = time.monotonic()
        self._ever_attached = False
        self.stop_reason: str | None = None  # a deliberate stop: fronts must not restart us
        n = parsers or self.config.parser_workers or os.cpu_count() or 1
        self.n_parsers = max(1, n)
        self.on_progress = on_progress
        self.lock = PipelineLock(self.root, self.config)
        self.slots: dict[str, Slot] = {}
        self.stopping = False
        self.exit_code = 0
        self.failure: str | None = None
        self.complete: IndexComplete | None = None
        self.parsers_due = mode != "index"  # an index run's parsers wait for the watcher's scan to find work
        self.started_at = time.time()
        self._signals: list[int] = []
        self.ctx = zmq.Context()

    # -- setup -------------------------------------------------------------------------------------

    def _slots(self) -> None:
        if self.mode == "monitor":
            return
        kinds = ["writer", "watcher"] + [f"parser-{i}" for i in range(self.n_parsers)]
        if self.embed and not self.embed_in_writer:
            kinds.append("embedder")
        for name in kinds:
            # An index run starts its parsers once the watcher's scan has found work (see
            # _drain_inbox): with nothing to parse, their start would be most of the run's cost.
            lazy = self.mode == "index" and name.startswith("parser-")
            self.slots[name] = Slot(name=name, kind=name.split("-")[0], next_start=None if lazy else 0.0)

    def _spec(self, slot: Slot) -> ActorSpec:
        return ActorSpec(
            name=slot.name,
            kind=slot.kind,
            root=str(self.root),
            db_path=str(self.db_path),
            addresses=self.addrs,
            generation=slot.generation,
            supervised=True,
            parent_pid=os.getpid(),
            heartbeat_s=self.policy.heartbeat_s,
            once=self.mode == "index",
            debounce_ms=self.config.watch_debounce_ms,
            embed=self.embed,
            embed_in_writer=self.embed_in_writer,
            embed_batch=self.config.embedding_batch_size,
            nice=self._nice(slot.kind),
        )

    def _nice(self, kind: str) -> int:
        if kind == "embedder" and os.environ.get("NSCCN_EMBEDDER_NICE"):
            return int(os.environ["NSCCN_EMBEDDER_NICE"])
        return self.config.bulk_nice if kind in BULK_KINDS else 0

    def _spawn(self, slot: Slot) -> None:
        spec = self._spec(slot)
        slot.log_path = self.log_dir / f"{slot.name}.log"
        try:
            # Checked again at every start: the index directory (or its logs/) can have been swapped
            # for a symlink by whoever owns the repository since, and an actor started then would
            # write and bind through it (root serving someone else's repository).
            private_dir(self.log_dir)
            if slot.log_path.exists() and slot.log_path.stat().st_size > 10 << 20:
                slot.log_path.replace(slot.log_path.with_suffix(".log.1"))
            logf = os.fdopen(open_private(slot.log_path, os.O_WRONLY | os.O_APPEND), "ab")
        except (PrivatePathError, OSError) as exc:
            if slot.last_error != f"not started: {exc}":
                log.error("%s not started: %s", slot.name, exc)
            slot.last_error = f"not started: {exc}"
            slot.state = "refused"
            slot.next_start = time.monotonic() + self.policy.backoff_max_s  # until the owner puts it back
            return
        # -P: the working directory (the repository) never joins sys.path, so a repository that
        # holds its own `workers/` package cannot have its code run as our actor.
        cmd = [sys.executable, "-P", "-m", MODULES[slot.kind], "--spec", encode_spec(spec)]
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=logf, stderr=logf, cwd=str(self.root))
        logf.close()
        slot.proc = proc
        slot.pid = proc.pid
        slot.started = time.monotonic()
        slot.last_hb = 0.0
        slot.hb = None
        slot.state = "starting"
        slot.next_start = None
        log.info("started %s (pid %d, generation %d)", slot.name, proc.pid, slot.generation)

    # -- the loop ----------------------------------------------------------------------------------

    def run(self) -> int:
        ensure_index_dir(self.root, self.config)  # one outside the repository: never another repository's
        if not self.lock.acquire():
            from supervisor.addresses import running_pipeline

            raise PipelineBusy(running_pipeline(self.root, self.config) or {})
        old_handlers = {}
        try:
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                old_handlers[sig] = signal.signal(sig, self._on_signal)
            self._prepare_run_dir()
            private_dir(self.log_dir)
            stopped_path(self.root, self.config).unlink(missing_ok=True)  # the last one's; we are the live one
            self.lock.write_info(self._info())
            self.control = self._bind(zmq.ROUTER, self.addrs.control)
            self.inbox = self._bind(zmq.PULL, self.addrs.supervisor)
            self._slots()
            self._loop()
        finally:
            self._shutdown()
            for sig, h in old_handlers.items():
                signal.signal(sig, h)
            self.ctx.destroy(linger=0)
            self._cleanup_run_dir()
            if self.stop_reason:  # before the lock goes: an attached front checks it when the lock is free
                self._write_stopped()
            self.lock.release()
        return self.exit_code

    def _bind(self, kind: int, address: str) -> zmq.Socket:
        s = self.ctx.socket(kind)
        s.setsockopt(zmq.LINGER, 0)
        s.bind(address)
        return s

    def _identity(self) -> dict:
        """Who this supervisor is: shared by pipeline.json and the status answer."""
        return {
            "pid": os.getpid(),
            "mode": self.mode,
            "root": str(self.root),
            "db": str(self.db_path),
            "run_dir": str(self.run_dir),
            "logs": str(self.log_dir),
            "started": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.started_at)),
        }

    def _info(self) -> dict:
        return {
            **self._identity(),
            "addresses": msgspec.to_builtins(self.addrs),
            "embed": self.embed,
            "linger_s": self.linger_s,
        }

    def _write_stopped(self) -> None:
        """Say that this pipeline was stopped on purpose (`nsccn stop`, a signal, lingering alone),
        so the fronts still attached mark their answers stale instead of starting another."""
        from nsccn.private import write_private

        try:
            write_private(stopped_path(self.root, self.config), json.dumps(
                {"pid": os.getpid(), "reason": self.stop_reason, "at": time.strftime("%Y-%m-%d %H:%M:%S")}).encode())
        except OSError as exc:
            log.warning("could not write %s: %s", stopped_path(self.root, self.config), exc)

    def _own_ipc_paths(self) -> list[Path]:
        """The socket files this supervisor may remove: all of them when it starts the actors;
        only its own in monitor mode (honcho's actors bind theirs, maybe before we start)."""
        if self.mode == "monitor":
            return ipc_paths(msgspec.structs.replace(self.addrs, watcher="", jobs="", writer="", embedder="", query=""))
        return ipc_paths(self.addrs)

    def _prepare_run_dir(self) -> None:
        prepare_run_dir(self.run_dir)  # refuses a foreign or open one: then we touch nothing in it
        self._run_dir_ours = True
        for p in self._own_ipc_paths():  # left by a pipeline that was killed: we hold the lock now
            p.unlink(missing_ok=True)

    def _cleanup_run_dir(self) -> None:
        if not getattr(self, "_run_dir_ours", False):
            return
        for p in self._own_ipc_paths():
            p.unlink(missing_ok=True)
        try:
            self.run_dir.rmdir()
            if self.run_dir.parent.name.startswith("nsccn-"):
                self.run_dir.parent.rmdir()  # the /tmp fallback's per-user directory, when empty
        except OSError:
            pass

    def _on_signal(self, signum, frame) -> None:
        self._signals.append(signum)

    def _loop(self) -> None:
        poller = zmq.Poller()
        poller.register(self.control, zmq.POLLIN)
        poller.register(self.inbox, zmq.POLLIN)
        last_progress = 0.0
        while not self.stopping:
            if self._signals:
                sig = self._signals.pop()
                log.info("got %s: shutting down", signal.Signals(sig).name)
                self.exit_code = 128 + sig if sig != signal.SIGTERM else 0
                self.stop_reason = f"signal {signal.Signals(sig).name}"
                break
            now = time.monotonic()
            for slot in self.slots.values():
                self._check(slot, now)
                if self.stopping:
                    break
            if self.stopping:
                break
            ready = dict(poller.poll(100))
            if self.inbox in ready:
                self._drain_inbox()
            if self.control in ready:
                self._drain_control()
            if self._linger_over(now):
                break
            if self.complete is not None and self.mode == "index":
                log.info("index complete: %s", self.complete)
                break
            if self.on_progress and now - last_progress > 0.25:
                last_progress = now
                self.on_progress(self)

    def _check(self, slot: Slot, now: float) -> None:
        p = self.policy
        if slot.proc is not None:
            code = slot.proc.poll()
            if code is not None:
                self._ended(slot, code, now)
                return
            hb_age = now - (slot.last_hb or slot.started)
            limit = p.heartbeat_timeout_s if slot.last_hb else p.startup_grace_s
            hung = hb_age > limit
            if slot.hb is not None and slot.hb.busy is None and slot.hb.loop_age > p.loop_timeout_s:
                hung = True
            if hung:
                why = f"no heartbeat for {hb_age:.1f} s" if hb_age > limit else f"loop stuck for {slot.hb.loop_age:.0f} s"
                slot.last_error = f"hung ({why}): killed"
                log.error("%s (pid %s) is hung (%s): killing it", slot.name, slot.pid, why)
                try:
                    slot.proc.kill()
                except ProcessLookupError:
                    pass
            return
        if slot.next_start is not None and now >= slot.next_start and not slot.external:
            self._spawn(slot)

    def _ended(self, slot: Slot, code: int, now: float) -> None:
        slot.exits.append((slot.pid, code))
        if slot.retiring:
            self._drain_inbox()  # its last heartbeat: the final counters
            self._bank(slot)
            slot.proc = None
            slot.retiring = False
            slot.state = "finished"
            if self.parsers_due:  # work came back while it was on its way out
                slot.next_start = 0.0
            return
        self._bank(slot)
        slot.proc = None
        slot.state = "exited"
        what = f"exit code {code}" if code >= 0 else f"signal {signal.Signals(-code).name}"
        slot.last_error = slot.last_error if (slot.last_error or "").startswith("hung") else f"{what}" + (
            f" (last error: {slot.hb.last_error})" if slot.hb and slot.hb.last_error else ""
        )
        while slot.recent and now - slot.recent[0] > self.policy.restart_window_s:
            slot.recent.popleft()
        if len(slot.recent) >= self.policy.max_restarts:
            self.failure = (
                f"{slot.name} died {len(slot.recent) + 1} times within {self.policy.restart_window_s:.0f} s"
                f" ({slot.last_error}); see {slot.log_path}"
            )
            log.error("%s: giving up", self.failure)
            self.exit_code = 1
            self.stopping = True
            return
        delay = min(self.policy.backoff_max_s, self.policy.backoff_first_s * (2 ** len(slot.recent)))
        slot.recent.append(now)
        slot.restarts += 1
        slot.generation += 1
        slot.next_start = now + delay
        slot.state = "restarting"
        log.warning("%s (pid %s) ended with %s: restart %d in %.2f s", slot.name, slot.pid, what, slot.restarts, delay)

    def _bank(self, slot: Slot) -> None:
        """Keep the counters of a generation that ended, for the summary."""
        if slot.hb is None:
            return
        for k, v in slot.hb.stats.items():
            if k in COUNTERS and isinstance(v, (int, float)):
                slot.banked[k] = slot.banked.get(k, 0) + v

    def _parsers_for(self, watcher_stats: dict) -> None:
        """An index run's parsers live while the watcher has files to parse: they start when its
        scan finds work and end once every job is committed, so what they hold (up to a large
        file's syntax tree each) is given back while the writer resolves and reads the history;
        jobs sent again (a restarted writer) start them again."""
        if watcher_stats.get("idle"):
            if self.parsers_due:
                self._retire_parsers()
        elif watcher_stats.get("bulk_total") and not self.parsers_due:
            self._start_parsers()

    def _start_parsers(self) -> None:
        self.parsers_due = True
        for slot in self.slots.values():
            if slot.kind == "parser" and slot.proc is None and slot.next_start is None:
                slot.next_start = 0.0

    def _retire_parsers(self) -> None:
        self.parsers_due = False
        for slot in self.slots.values():
            if slot.kind != "parser":
                continue
            slot.next_start = None
            if slot.proc is not None:
                slot.retiring = True
                log.info("%s (pid %s): every job is committed, stopping it", slot.name, slot.pid)
                try:
                    slot.proc.terminate()
                except ProcessLookupError:
                    pass

    def _slot_for(self, name: str, kind: str, pid: int) -> Slot | None:
        slot = self.slots.get(name)
        if slot is None and self.mode == "monitor":
            slot = self.slots[name] = Slot(name=name, kind=kind, external=True, next_start=None)
        if slot is None:
            return None
        if slot.external and slot.pid != pid:
            slot.pid = pid
            slot.started = time.monotonic()
        if slot.pid != pid:
            return None  # a late message of a process we already replaced
        return slot

    def _drain_inbox(self) -> None:
        for _ in range(1000):
            try:
                frame = self.inbox.recv(zmq.NOBLOCK)
            except zmq.Again:
                return
            try:
                msg = decode(frame)
            except BadMessage as exc:
                log.warning("dropped a message: %s", exc)
                continue
            if isinstance(msg, Heartbeat):
                slot = self._slot_for(msg.actor, msg.kind, msg.pid)
                if slot is not None:
                    slot.hb = msg
                    slot.last_hb = time.monotonic()
                    if msg.kind == "watcher" and self.mode == "index":
                        self._parsers_for(msg.stats)
                    if msg.kind == "writer" and self.mode == "index" and msg.stats.get("disk_full") and not self.failure:
                        # `nsccn serve` waits for room; a one-off index says so and ends (what was
                        # committed stays: the next run goes on from there).
                        self.failure = msg.stats["disk_full"].split(" (writes held")[0]
                        log.error("%s: stopping", self.failure)
                        self.exit_code = 1
                        self.stopping = True
                    slot.state = msg.state if msg.busy is None else f"busy: {msg.busy}"
                    slot.peak_rss_kb = max(slot.peak_rss_kb, msg.rss_kb)
                    if msg.last_error:
                        slot.last_error = msg.last_error
            elif isinstance(msg, Hello):
                slot = self._slot_for(msg.actor, msg.kind, msg.pid)
                if slot is not None and slot.last_hb == 0.0:
                    slot.state = "started"
            elif isinstance(msg, IndexComplete):
                watcher = self.slots.get("watcher")
                if watcher is None or msg.generation == watcher.generation:
                    self.complete = msg
            else:
                log.warning("dropped a message: %s is not for the supervisor", type(msg).__name__)

    def _drain_control(self) -> None:
        for _ in range(100):
            try:
                frames = self.control.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            if len(frames) < 2:
                continue
            route, body = frames[:-1], frames[-1]
            try:
                msg = decode(body)
            except BadMessage as exc:
                log.warning("dropped a control message: %s", exc)
                reply = None
            else:
                if isinstance(msg, StatusRequest):
                    reply = StatusReply(status=self.status())
                elif isinstance(msg, ShutdownRequest):
                    log.info("shutdown requested%s", f": {msg.reason}" if msg.reason else "")
                    self.stopping = True
                    self.stop_reason = msg.reason or "a shutdown request"
                    reply = Ok(detail="shutting down")
                elif isinstance(msg, Attach):
                    self._attach(msg)
                    reply = Ok(detail="attached" if not msg.leaving else "detached")
                else:
                    log.warning("dropped a control message: %s", type(msg).__name__)
                    reply = None
            if reply is not None:
                try:
                    self.control.send_multipart([*route, encode(reply)], zmq.NOBLOCK)
                except zmq.ZMQError:
                    pass

    # -- attached MCP fronts ----------------------------------------------------------------------------

    def _attach(self, msg: Attach) -> None:
        now = time.monotonic()
        if msg.leaving:
            if self.clients.pop(msg.client, None) is not None:
                log.info("client %s (pid %d) left", msg.client, msg.pid)
                if not self.clients:
                    self._alone_since = now
            return
        c = self.clients.get(msg.client)
        if c is None:
            log.info("client %s (pid %d) attached", msg.client, msg.pid)
            c = self.clients[msg.client] = {"pid": msg.pid, "attached": time.strftime("%Y-%m-%d %H:%M:%S")}
        c["last_seen"] = now
        self._ever_attached = True

    def _prune_clients(self, now: float) -> None:
        """Forget fronts that died without saying so (kill -9): their process is gone, or silent."""
        for cid, c in list(self.clients.items()):
            gone = now - c["last_seen"] > self.policy.client_timeout_s or not process_alive(c["pid"])
            if gone:
                log.info("client %s (pid %d) is gone", cid, c["pid"])
                del self.clients[cid]
                if not self.clients:
                    self._alone_since = now

    def _linger_over(self, now: float) -> bool:
        """A detached pipeline ends once it has been alone for its linger time (longer before its
        first client: the `nsccn serve` that started it attaches a moment later)."""
        self._prune_clients(now)
        if self.linger_s is None or self.clients:
            return False
        wait = self.linger_s if self._ever_attached else max(self.linger_s, self.policy.first_client_grace_s)
        if now - self._alone_since < wait:
            return False
        self.stop_reason = f"no MCP client for {wait:g} s (pipeline_linger_s)"
        log.info("%s: shutting down", self.stop_reason)
        return True

    def clients_status(self) -> dict:
        now = time.monotonic()
        out = {
            "attached": [{"client": cid, "pid": c["pid"], "since": c["attached"],
                          "last_seen_s": round(now - c["last_seen"], 1)} for cid, c in self.clients.items()],
            "linger_s": self.linger_s,
        }
        if self.linger_s is not None and not self.clients:
            wait = self.linger_s if self._ever_attached else max(self.linger_s, self.policy.first_client_grace_s)
            out["stops_in_s"] = round(max(0.0, wait - (now - self._alone_since)), 1)
        return out

    # -- status --------------------------------------------------------------------------------------

    def stats_of(self, kind: str) -> dict:
        """Live counters of one kind of actor, summed over its processes and past generations
        (other values, gauges, are the latest heartbeat's)."""
        out: dict = {}
        for slot in self.slots.values():
            if slot.kind != kind:
                continue
            merged = dict(slot.banked)
            alive = slot.proc is not None or slot.external
            for k, v in (slot.hb.stats if slot.hb else {}).items():
                if k in COUNTERS and isinstance(v, (int, float)):
                    if alive:  # a dead generation's counters are in `banked` already
                        merged[k] = merged.get(k, 0) + v
                else:
                    merged[k] = v
            for k, v in merged.items():
                if isinstance(v, (int, float)) and not isinstance(v, bool) and isinstance(out.get(k), (int, float)):
                    out[k] = out[k] + v
                elif k not in out:
                    out[k] = v
        return out

    def status(self) -> dict:
        now = time.monotonic()
        w = self.slots.get("watcher")
        ws = w.hb.stats if w and w.hb else {}
        wr = self.slots.get("writer")
        rs = wr.hb.stats if wr and wr.hb else {}
        files_pending = sum(int(ws.get(k, 0)) for k in ("pending", "inflight", "debouncing")) + int(rs.get("batch", 0))
        actors = {}
        last_error = self.failure
        for slot in self.slots.values():
            hb = slot.hb
            actors[slot.name] = {
                "kind": slot.kind,
                "pid": slot.pid if slot.proc is not None or slot.external else None,
                "state": slot.state,
                "generation": slot.generation,
                "restarts": slot.restarts,
                "last_heartbeat_s": round(now - slot.last_hb, 2) if slot.last_hb else None,
                "loop_age_s": hb.loop_age if hb else None,
                "busy": hb.busy if hb else None,
                "peak_rss_mb": round(slot.peak_rss_kb / 1024, 1),
                "stats": hb.stats if hb else {},
                "last_error": slot.last_error,
                "log": str(slot.log_path) if slot.log_path else None,
            }
            if slot.last_error and not last_error:
                last_error = f"{slot.name}: {slot.last_error}"
        if self.failure:
            state = "failed"
        elif self.stopping:
            state = "stopping"
        elif not ws or not ws.get("idle", False) and ws.get("bulk_done", 0) < ws.get("bulk_total", 1):
            state = "indexing"
        else:
            state = rs.get("phase", "starting") if rs else "starting"
            if state == "idle" and self.mode == "serve":
                state = "watching"
        if rs.get("disk_full") and not self.failure:
            state = "disk full"
        return {
            **self._identity(),
            "uptime_s": round(time.time() - self.started_at, 1),
            "state": state,
            "idle": bool(ws.get("idle")) and files_pending == 0 and rs.get("phase") in ("idle", "embedding"),
            "files_pending": files_pending,
            "vectors_pending": int(rs.get("vectors_pending", 0)) if self.embed else 0,
            "entities_without_vectors": rs.get("entities_without_vectors"),
            "queues": {
                "parse_pending": ws.get("pending", 0),
                "parse_in_flight": ws.get("inflight", 0),
                "parse_window": ws.get("window"),
                "debouncing": ws.get("debouncing", 0),
                "writer_batch": rs.get("batch", 0),
                "embed_queue": rs.get("embed_queue", 0),
                "embed_jobs_in_flight": rs.get("embed_outstanding", 0),
            },
            "bulk": {"done": ws.get("bulk_done", 0), "total": ws.get("bulk_total", 0)},
            "actors": actors,
            "clients": self.clients_status(),
            "last_error": last_error,
            "disk_full": rs.get("disk_full"),  # the writer holds what it has and tries again
        }

    # -- shutdown --------------------------------------------------------------------------------------

    def _shutdown(self) -> None:
        self.stopping = True
        live = [s for s in self.slots.values() if s.proc is not None]
        order = {k: i for i, k in enumerate(STOP_ORDER)}
        live.sort(key=lambda s: order.get(s.kind, 0))
        # Everyone but the writer first, then the writer (it commits what it holds on the way out).
        # A finished index run has nothing in flight: all at once, without waiting on the others.
        groups = [[s for s in live if s.kind != "writer"], [s for s in live if s.kind == "writer"]]
        if self.mode == "index" and self.complete is not None:
            groups = [live]
        for group in groups:
            for slot in group:
                try:
                    slot.proc.terminate()
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + self.policy.stop_timeout_s
            for slot in group:
                try:
                    slot.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    log.error("%s (pid %s) did not stop: killing it", slot.name, slot.pid)
                    slot.proc.kill()
                    slot.proc.wait()
        # Their last heartbeats carry the final counters.
        if live and hasattr(self, "inbox"):
            time.sleep(0.05)
            self._drain_inbox()
        for slot in live:
            self._bank(slot)
            slot.exits.append((slot.pid, slot.proc.returncode))
            slot.proc = None
            slot.state = "stopped"

    def summary(self) -> dict:
        return {
            "actors": {
                s.name: {"state": s.state, "restarts": s.restarts, "peak_rss_mb": round(s.peak_rss_kb / 1024, 1), "exits": s.exits,
                         "last_error": s.last_error}
                for s in self.slots.values()
            },
            "failure": self.failure,
            "supervisor_peak_rss_mb": round(peak_rss_kb() / 1024, 1),
        }



def process_alive(pid: int) -> bool:
    """A live process (a zombie, dead but not yet reaped by its parent, is not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True
