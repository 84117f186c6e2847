"""Watcher actor: the initial scan against the index, then file-system events, debounced; and the
dispatcher that hands paths to the parser pool within a credit window.

* Initial scan: only new, changed (size or mtime) and deleted files become jobs; the job
  carries the indexed content hash, so a touched-but-unchanged file is not re-parsed.
* Events (watchdog): created, modified, closed and deleted files are debounced per path
  (trailing, default 100 ms; at most `max_wait_ms` for a file that never stops changing).
  A move is a deletion of the source and a change of the destination, so an editor's atomic
  save (write a temp file, rename it over) re-indexes the file. Directory creations, moves and
  deletions expand to the files under them. Ignore rules are the scanner's.
* Credits: at most `window` jobs are in flight (sent, not yet committed by the writer), one per
  path, so two results for one path never race; and a job goes only to a parser that asked for
  it (`Ready` credits on the ROUTER), so the pool stays balanced and a parser holds at most its
  prefetch. A restarted parser (`Hello` under the same name) gets its predecessor's jobs again;
  a restarted writer, everything in flight. The writer ignores what it already has.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections import deque
from pathlib import Path

import zmq

from nsccn.config import load_config
from nsccn.languages import enabled
from nsccn.messages import BulkDone, BulkStart, Committed, Hello, ParseJob, Ready, encode
from nsccn.reading.scan import IgnoreRules, bad_name, file_by_name, scan_repository, shown_name
from nsccn.store import Store
from workers.base import Actor, actor_main
from workers.debounce import Debouncer, Dispatcher

RESEND_AFTER_S = 120.0  # a job neither committed nor lost to a known restart: send it again


class _Events:
    """Watchdog handler: queues (kind, src, dest, is_dir) and wakes the actor's loop."""

    def __init__(self, ctx: zmq.Context, wake_addr: str):
        self.q: queue.SimpleQueue = queue.SimpleQueue()
        self.ctx = ctx
        self.wake_addr = wake_addr
        self.local = threading.local()

    def dispatch(self, event) -> None:
        kind = event.event_type
        if kind in ("opened", "closed_no_write"):
            return
        src = os.fsdecode(event.src_path)
        dest = os.fsdecode(getattr(event, "dest_path", "") or "")
        self.q.put((kind, src, dest, event.is_directory))
        sock = getattr(self.local, "sock", None)
        if sock is None:
            sock = self.local.sock = self.ctx.socket(zmq.PUSH)
            sock.setsockopt(zmq.LINGER, 0)
            sock.setsockopt(zmq.SNDHWM, 1)
            sock.connect(self.wake_addr)
        try:
            sock.send(b"", zmq.NOBLOCK)
        except zmq.Again:
            pass  # a wake-up is already queued

    def close(self) -> None:
        sock = getattr(self.local, "sock", None)
        if sock is not None:
            sock.close(0)


class Watcher(Actor):
    """Scan, watch, debounce and dispatch parse jobs."""

    kind = "watcher"

    def run(self) -> None:
        spec = self.spec
        self.config = load_config(self.root)
        self._languages = enabled(self.config.languages)
        self.rules = IgnoreRules(self.root, self.config)
        self._ignored_dirs: dict[str, bool] = {}
        self._rule_warnings = 0  # how many of self.rules.warnings were logged
        inbox = self.socket(zmq.PULL, bind=self.addrs.watcher)
        self.jobs = self.socket(zmq.ROUTER, bind=self.addrs.jobs)
        self.jobs.setsockopt(zmq.ROUTER_MANDATORY, 1)  # a parser that is gone: an error, not a silent drop
        self.credits: dict[bytes, int] = {}  # parser identity -> jobs it will take
        self.assigned: dict[str, bytes] = {}  # path in flight -> the parser it went to
        self.sendq: deque[tuple[str, int]] = deque()  # (path, seq) waiting for a parser's credit
        self.queued: set[str] = set()
        self.to_writer = self.socket(zmq.PUSH, connect=self.addrs.writer)
        wake_addr = f"inproc://wake-{id(self)}"
        wake = self.socket(zmq.PULL, bind=wake_addr)
        self.debouncer = Debouncer(spec.debounce_ms / 1000, spec.max_wait_ms / 1000)
        # seqs start at the clock (microseconds), so a restarted watcher's jobs are newer.
        self.dispatcher = Dispatcher(spec.window, time.time_ns() // 1000)
        self.known: set[str] = set()
        self.hashes: dict[str, str] = {}
        self.ro: Store | None = None
        self.generation = spec.generation
        self.stats.update(
            events=0, dispatched=0, resent=0, committed=0, bulk_total=0, bulk_done=0, files_seen=0, unchanged=0
        )
        self.events = None
        observer = None
        if not spec.once:
            self.events = _Events(self.ctx, wake_addr)
            observer = self._start_observer()
        try:
            self._initial_scan()
            self.tick("running")
            self._loop(inbox, wake)
        finally:
            if observer is not None:
                # Stopping races the emitter thread's last read; watchdog logs that as an error.
                logging.getLogger("watchdog.observers.inotify").setLevel(logging.CRITICAL)
                observer.stop()
                observer.join(timeout=5)
            if self.events is not None:
                self.events.close()
            if self.ro is not None:
                self.ro.close()

    def _start_observer(self):
        from watchdog.observers import Observer

        observer = Observer()
        with self.busy("adding watches"):
            observer.schedule(self.events, str(self.root), recursive=True)
            observer.start()
        return observer

    # -- the initial scan ----------------------------------------------------------------------

    def _initial_scan(self) -> None:
        with self.busy("scanning"):
            scan = scan_repository(self.root, self.config)
            states = self._file_states()
        to_check: list[str] = []
        unchanged = 0
        for f in scan.files:
            st = states.get(f.path)
            if st is not None and st[1] == f.size and st[2] == f.mtime:
                unchanged += 1
            else:
                to_check.append(f.path)
        present = {f.path for f in scan.files}
        to_check += [p for p in states if p not in present]
        self.hashes = {p: st[0] for p, st in states.items()}
        self.known = present | set(states)
        self.bulk_left = set(to_check)
        self.bulk_total = len(to_check)
        self.bulk_done_sent = False
        self.stats.update(bulk_total=len(to_check), files_seen=len(scan.files), unchanged=unchanged)
        self.stats["skipped"] = dict(scan.skipped)
        self.stats["skipped_examples"] = dict(scan.skipped_examples)  # `nsccn index` names one path per reason
        self._warn(scan.warnings)
        self.send(
            self.to_writer,
            BulkStart(
                generation=self.generation,
                total=len(to_check),
                files_seen=len(scan.files),
                unchanged=unchanged,
                skipped=dict(scan.skipped),
            ),
        )
        self.dispatcher.add(to_check)
        self.beat_now()  # bulk_total: an index run's supervisor starts the parsers only when there are jobs
        self.log.info(
            "initial scan: %d files, %d to check, %d unchanged, skipped %s",
            len(scan.files), len(to_check), unchanged, dict(scan.skipped),
        )

    def _file_states(self) -> dict:
        try:
            with Store(self.spec.db_path, readonly=True) as store:
                return store.file_states()
        except Exception:  # no index yet (the writer creates it), or one being migrated
            return {}

    def _known_hash(self, path: str) -> str | None:
        if path in self.hashes:
            return self.hashes.pop(path)  # good for the first job only: later ones ask the index
        if self.ro is None:
            try:
                self.ro = Store(self.spec.db_path, readonly=True)
            except Exception:
                return None
        rows = self.ro.conn.execute("SELECT content_hash FROM files WHERE path=?", (path,)).fetchall()
        return rows[0][0] if rows else None

    # -- the loop ------------------------------------------------------------------------------

    def _loop(self, inbox: zmq.Socket, wake: zmq.Socket) -> None:
        poller = self.poller(inbox, wake, self.jobs)
        last_resend_check = time.monotonic()
        while not self.stop.is_set():
            self.tick()
            now = time.monotonic()
            for path in self.debouncer.pop_due(now):
                self.dispatcher.add([path])
            self._dispatch(now)
            if not self.bulk_done_sent and not self.bulk_left:
                self._send_bulk_done()
            timeout = 200
            deadline = self.debouncer.next_deadline()
            if deadline is not None:
                timeout = max(0, min(timeout, int((deadline - now) * 1000) + 1))
            ready = self.wait(poller, timeout)
            if wake in ready:
                while True:
                    try:
                        wake.recv(zmq.NOBLOCK)
                    except zmq.Again:
                        break
            if self.events is not None:
                self._drain_events()
            if self.jobs in ready:
                self._drain_credits()
            if inbox in ready:
                for _ in range(1000):
                    try:
                        _, msg = self.recv(inbox)
                    except zmq.Again:
                        break
                    if msg is not None:
                        self._handle(msg)
            if now - last_resend_check > 5:
                last_resend_check = now
                again = self.dispatcher.resend(now, older_than=RESEND_AFTER_S)
                if again:
                    self.log.warning("%d jobs not committed after %.0f s: sending them again", len(again), RESEND_AFTER_S)
                    self._send_jobs(again, resent=True)

    def _dispatch(self, now: float) -> None:
        out = self.dispatcher.take(now)
        if out:
            self._send_jobs(out)
        self._deliver()

    def _send_jobs(self, items: list[tuple[str, int]], resent: bool = False) -> None:
        """Queue jobs for the parsers; they go out as parsers have credits."""
        for path, seq in items:
            if path not in self.queued:
                self.queued.add(path)
                self.sendq.append((path, seq))
        self.stats["resent" if resent else "dispatched"] += len(items)

    def _deliver(self) -> None:
        idents = [i for i, c in self.credits.items() if c > 0]
        while self.sendq and idents:
            for ident in list(idents):
                if not self.sendq:
                    break
                path, seq = self.sendq.popleft()
                self.queued.discard(path)
                cur = self.dispatcher.inflight.get(path)
                if cur is None or cur[0] != seq:
                    continue  # committed meanwhile, or superseded by a newer job
                frame = encode(ParseJob(seq=seq, path=path, known_hash=self._known_hash(path)))
                try:
                    self.jobs.send_multipart([ident, frame], zmq.NOBLOCK)
                except zmq.ZMQError:  # that parser is gone (or jammed): forget its credits
                    self.credits.pop(ident, None)
                    idents.remove(ident)
                    self.sendq.appendleft((path, seq))
                    self.queued.add(path)
                    continue
                self.assigned[path] = ident
                self.credits[ident] -= 1
                if self.credits[ident] <= 0:
                    idents.remove(ident)

    def _drain_credits(self) -> None:
        for _ in range(1000):
            try:
                route, msg = self.recv(self.jobs)
            except zmq.Again:
                return
            if not route or msg is None:
                continue
            if not isinstance(msg, Ready):
                self.unexpected(msg)
                continue
            ident = route[0]
            if msg.reset:
                self.credits[ident] = max(0, msg.free)
            else:
                self.credits[ident] = self.credits.get(ident, 0) + max(0, msg.free)

    def _forget_parser(self, name: str, pid: int) -> int:
        """A parser named `name` restarted as `pid`: its predecessor's jobs go out again."""
        prefix = f"{name}/".encode()
        current = f"{name}/{pid}".encode()
        old = {i for i in set(self.credits) | set(self.assigned.values()) if i.startswith(prefix) and i != current}
        for ident in old:
            self.credits.pop(ident, None)
        again = []
        for path, ident in list(self.assigned.items()):
            if ident in old:
                del self.assigned[path]
                cur = self.dispatcher.inflight.get(path)
                if cur is not None:
                    again.append((path, cur[0]))
        self._send_jobs(again, resent=True)
        return len(again)

    def _send_bulk_done(self) -> None:
        self.bulk_done_sent = True
        self.beat_now()  # idle: an index run's supervisor stops the parsers now
        self.send(self.to_writer, BulkDone(generation=self.generation, total=self.bulk_total))
        self.log.info("initial scan committed: %d paths", self.bulk_total)

    def _handle(self, msg) -> None:
        if isinstance(msg, Committed):
            for path, seq in msg.items:
                if self.dispatcher.ack(path, seq):
                    self.assigned.pop(path, None)
                    self.stats["committed"] += 1
                    if path in self.bulk_left:
                        self.bulk_left.discard(path)
                        self.stats["bulk_done"] += 1
        elif isinstance(msg, Hello):
            if msg.kind == "parser":
                n = self._forget_parser(msg.actor, msg.pid)
                if n:
                    self.log.info("%s restarted (pid %d): sending its %d jobs again", msg.actor, msg.pid, n)
            if msg.kind == "writer" and msg.generation > 0:
                # Results on their way to the dead writer are lost: everything in flight goes again.
                again = self.dispatcher.resend(time.monotonic())
                self.log.info("%s restarted (pid %d): sending %d jobs in flight again", msg.actor, msg.pid, len(again))
                self._send_jobs(again, resent=True)
            if msg.kind == "writer":
                # A writer that (re)starts knows nothing of the bulk: tell it where we are.
                self.send(self.to_writer, BulkStart(generation=self.generation, total=self.bulk_total))
                if self.bulk_done_sent:
                    self.send(self.to_writer, BulkDone(generation=self.generation, total=self.bulk_total))
        else:
            self.unexpected(msg)

    # -- events ----------------------------------------------------------------------------------

    def _drain_events(self) -> None:
        now = time.monotonic()
        n = 0
        while True:
            try:
                kind, src, dest, is_dir = self.events.q.get_nowait()
            except queue.Empty:
                break
            n += 1
            for rel in self._paths_of(kind, src, dest, is_dir):
                self.debouncer.add(rel, now)
                self.known.add(rel)
        self.stats["events"] += n

    def _rel(self, abs_path: str) -> str | None:
        try:
            rel = Path(abs_path).relative_to(self.root).as_posix()
        except ValueError:
            return None
        return rel if rel not in ("", ".") else None

    def _warn(self, warnings: list[str]) -> None:
        """Unusable ignore patterns (file and line): logged once each, kept in the stats for `nsccn index`."""
        seen = self.stats.setdefault("warnings", [])
        for w in warnings:
            if w not in seen:
                self.log.warning("%s", w)
                if len(seen) < 50:
                    seen.append(w)

    def _dir_ignored(self, rel_dir: str) -> bool:
        """The directory or one of its ancestors is ignored."""
        if not rel_dir:
            return False
        hit = self._ignored_dirs.get(rel_dir)
        if hit is None:
            parent = rel_dir.rsplit("/", 1)[0] if "/" in rel_dir else ""
            hit = self._dir_ignored(parent) or self.rules.ignored(rel_dir, True)
            if len(self._ignored_dirs) > 100_000:
                self._ignored_dirs.clear()
            self._ignored_dirs[rel_dir] = hit
        return hit

    def _wanted_file(self, rel: str) -> bool:
        if bad_name(rel):  # the scan's rule: skipped and named, never sent (msgpack cannot carry it)
            self._warn([f"{shown_name(rel)}: skipped, its name is not valid UTF-8"])
            return False
        if file_by_name(os.path.join(self.root, rel), rel, self._languages)[0] is None:
            return False  # the scan's own rule: a dotfile, a language not enabled, a binary by name
        parent = rel.rsplit("/", 1)[0] if "/" in rel else ""
        wanted = not self._dir_ignored(parent) and not self.rules.ignored(rel, False)
        if len(self.rules.warnings) != self._rule_warnings:  # a .gitignore read just now had a bad line
            self._rule_warnings = len(self.rules.warnings)
            self._warn(self.rules.warnings)
        return wanted

    def _paths_of(self, kind: str, src: str, dest: str, is_dir: bool) -> list[str]:
        out: list[str] = []
        srel = self._rel(src)
        drel = self._rel(dest) if dest else None
        if not is_dir:
            for rel in (srel, drel):
                if rel and self._wanted_file(rel):
                    out.append(rel)
            if srel and srel.endswith(".gitignore"):
                self.rules = IgnoreRules(self.root, self.config)  # rules changed: re-read them
                self._ignored_dirs.clear()
                self._rule_warnings = 0
            return out
        if kind in ("deleted", "moved") and srel:
            prefix = srel + "/"
            out += [p for p in self.known if p.startswith(prefix)]
        if kind in ("created", "moved"):
            top = drel if kind == "moved" else srel
            if top and not self._dir_ignored(top):
                out += self._walk(top)
        return out

    def _walk(self, rel_dir: str) -> list[str]:
        out = []
        for dirpath, dirnames, filenames in os.walk(self.root / rel_dir):
            base = Path(dirpath).relative_to(self.root).as_posix()
            dirnames[:] = [d for d in dirnames if not self._dir_ignored(f"{base}/{d}")]
            for f in filenames:
                rel = f"{base}/{f}"
                if self._wanted_file(rel):
                    out.append(rel)
        return out

    def heartbeat_stats(self) -> dict:
        s = dict(self.stats)
        d = getattr(self, "dispatcher", None)
        if d is not None:
            s.update(pending=len(d.pending), inflight=len(d.inflight), debouncing=len(self.debouncer),
                     window=d.window, to_send=len(self.sendq), parsers=len(self.credits))
            s["idle"] = d.idle() and not len(self.debouncer) and getattr(self, "bulk_done_sent", False)
        return s


def main(argv=None) -> int:
    return actor_main(Watcher, argv)


if __name__ == "__main__":
    raise SystemExit(main())
