"""Per-path trailing debounce, and the dispatcher's bookkeeping: pending, in flight, credits.

Pure data structures (no sockets, no clock of their own), so they are tested in one process.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from itertools import islice


class Debouncer:
    """A path is due once it has been quiet for `quiet` seconds, or `max_wait` seconds after its
    first event even if events keep coming (a file rewritten forever is still indexed)."""

    def __init__(self, quiet: float, max_wait: float):
        self.quiet = quiet
        self.max_wait = max(max_wait, quiet)
        self.first: dict[str, float] = {}
        self.last: dict[str, float] = {}
        self._heap: list[tuple[float, str]] = []

    def __len__(self) -> int:
        return len(self.last)

    def add(self, path: str, now: float) -> None:
        if path not in self.first:
            self.first[path] = now
        self.last[path] = now
        heapq.heappush(self._heap, (self._deadline(path), path))

    def _deadline(self, path: str) -> float:
        return min(self.last[path] + self.quiet, self.first[path] + self.max_wait)

    def next_deadline(self) -> float | None:
        while self._heap:
            deadline, path = self._heap[0]
            if path in self.last and self._deadline(path) == deadline:
                return deadline
            heapq.heappop(self._heap)  # superseded by a later event on the same path
        return None

    def pop_due(self, now: float) -> list[str]:
        due = []
        while self._heap and self._heap[0][0] <= now:
            deadline, path = heapq.heappop(self._heap)
            if path in self.last and self._deadline(path) == deadline:
                due.append(path)
                del self.first[path], self.last[path]
        return due


class Dispatcher:
    """At most one job per path in flight, at most `window` jobs in flight in all.

    A job leaves flight when the writer acknowledges its commit (its seq must match: a late
    acknowledgement of an older job does not release a newer one). A path that changes while
    its job is in flight waits in `pending` and goes out after the acknowledgement, so results
    for one path can never overtake each other.
    """

    def __init__(self, window: int, first_seq: int):
        self.window = window
        self.seq = first_seq
        self.pending: dict[str, None] = {}  # insertion-ordered set
        self.inflight: dict[str, tuple[int, float]] = {}  # path -> (seq, sent at)

    def add(self, paths: Iterable[str]) -> None:
        for p in paths:
            self.pending[p] = None

    def credits(self) -> int:
        return self.window - len(self.inflight)

    def take(self, now: float) -> list[tuple[str, int]]:
        """Paths to send now, with fresh seqs."""
        out = []
        if self.credits() <= 0 or not self.pending:
            return out
        # Only the head of `pending` can go out now; never copy all of it (100k paths at start).
        for path in list(islice(self.pending, self.credits() + len(self.inflight))):
            if len(self.inflight) >= self.window:
                break
            if path in self.inflight:
                continue
            del self.pending[path]
            self.seq += 1
            self.inflight[path] = (self.seq, now)
            out.append((path, self.seq))
        return out

    def ack(self, path: str, seq: int) -> bool:
        cur = self.inflight.get(path)
        if cur is not None and cur[0] == seq:
            del self.inflight[path]
            return True
        return False

    def resend(self, now: float, older_than: float | None = None) -> list[tuple[str, int]]:
        """In-flight jobs to send again (all, or those sent more than `older_than` s ago)."""
        out = []
        for path, (seq, sent) in self.inflight.items():
            if older_than is None or now - sent > older_than:
                self.inflight[path] = (seq, now)
                out.append((path, seq))
        return out

    def idle(self) -> bool:
        return not self.pending and not self.inflight
