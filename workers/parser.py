"""Parser actor: ParseJob in (from the watcher), one result per job out (to the writer).

It asks for work: `Ready` credits go to the watcher's ROUTER (`prefetch` at start, one more per
job done), so a parser never holds more than `prefetch` jobs, the pool is balanced however long
each file takes, and a crashed parser loses at most `prefetch` jobs (the watcher resends them).

It looks at the file as it is *now*, as every parser does (nsccn.indexing.index_session.look_at): gone ->
Removed, unreadable/binary/too large/not a regular file/a symlink out of the repository -> Skipped,
same content as the index -> Unchanged, else Parsed.
"""

from __future__ import annotations

import os
import time

import zmq

from nsccn.config import load_config
from nsccn.indexing.index_session import EXTRACTION_FAILED, look_at
from nsccn.messages import Hello, ParseJob, Parsed, Ready, Removed, Skipped, Unchanged, encode
from workers.base import Actor, actor_main, release_free_memory

# A file this large made a big syntax tree (sympy's largest, 0.9 MB, 67 MB of nodes): its memory
# goes back to the system right after it (and everything freed when the parser falls idle), not
# at the parser's exit.
_BIG_FILE_BYTES = 256 << 10

# Tests slow parsing down to kill actors in the middle of a bulk index (seconds per file).
_DELAY = float(os.environ.get("NSCCN_TEST_PARSE_DELAY", "0") or 0)


class Parser(Actor):
    """Parse files the watcher names and push the results to the writer."""

    kind = "parser"

    def run(self) -> None:
        config = load_config(self.root)
        max_size = config.max_file_size
        jobs = self.ctx.socket(zmq.DEALER)
        jobs.setsockopt(zmq.IDENTITY, f"{self.name}/{os.getpid()}".encode())
        jobs.setsockopt(zmq.LINGER, 0)
        jobs.setsockopt(zmq.SNDHWM, 64)
        jobs.connect(self.addrs.jobs)
        self._sockets.append(jobs)
        results = self.socket(zmq.PUSH, connect=self.addrs.writer)
        to_watcher = self.socket(zmq.PUSH, connect=self.addrs.watcher)
        # A restarted parser tells the watcher, which resends what the dead one held.
        self.send(to_watcher, self.hello())
        self.stats.update(parsed=0, unchanged=0, skipped=0, removed=0, seconds=0.0)
        root = str(self.root)
        prefetch = max(1, self.spec.prefetch)
        pid = os.getpid()
        self._ready(jobs, Ready(actor=self.name, pid=pid, free=prefetch, reset=True))
        last = time.monotonic()
        trimmed = True  # nothing parsed since the memory was last given back
        poller = self.poller(jobs)
        self.tick("running")
        while not self.stop.is_set():
            self.tick()
            if jobs not in self.wait(poller, 200):
                if not trimmed:
                    release_free_memory()
                    trimmed = True
                if time.monotonic() - last > 1.0:
                    # Idle: say so again (a watcher that restarted has never heard of us).
                    self._ready(jobs, Ready(actor=self.name, pid=pid, free=prefetch, reset=True))
                    last = time.monotonic()
                continue
            last = time.monotonic()
            _, msg = self.recv(jobs)
            if msg is None:
                continue
            if isinstance(msg, Hello):
                continue
            if not isinstance(msg, ParseJob):
                self.unexpected(msg)
                continue
            t = time.perf_counter()
            if _DELAY:
                time.sleep(_DELAY)
            out = look_at(root, msg.path, max_size, msg.known_hash, msg.seq)
            self.stats["seconds"] = round(self.stats["seconds"] + time.perf_counter() - t, 3)
            trimmed = False
            key = {Parsed: "parsed", Unchanged: "unchanged", Skipped: "skipped", Removed: "removed"}[type(out)]
            self.stats[key] += 1
            if isinstance(out, Skipped) and out.reason.startswith(EXTRACTION_FAILED):
                self.last_error = f"{out.path}: {out.reason}"
                self.log.error("%s: %s", out.path, out.reason)
            self.send(results, out)
            self._ready(jobs, Ready(actor=self.name, pid=pid, free=1))
            if isinstance(out, Parsed) and out.file.size >= _BIG_FILE_BYTES:
                del out
                release_free_memory(collect=False)


    def _ready(self, jobs: zmq.Socket, msg: Ready) -> None:
        """Credits never block the loop: with no watcher to take them (it is restarting) they
        queue up to a small limit and the rest are dropped; the idle repeat makes up for them."""
        try:
            jobs.send(encode(msg), zmq.NOBLOCK)
        except zmq.Again:
            pass


def main(argv=None) -> int:
    return actor_main(Parser, argv)


if __name__ == "__main__":
    raise SystemExit(main())
