"""Bulk resolution in child processes: each resolves one partition of the references.

After a bulk index every reference is resolved again (`nsccn.indexing.resolution.resolve_everything`). Done in the
process that writes the index, that holds the whole symbol table there (memory that grows with
the repository) and runs on one core. Here short-lived children do it instead:

* the references are cut into `n` rowid ranges on file boundaries (the per-file memo of
  `edges_of` keeps working), about the same number of references each;
* each child is a fresh interpreter (`python -m nsccn.indexing.resolve_partitions`; never a fork of the
  writer, which holds ZeroMQ sockets and threads), opens the index read-only (the parse
  results are committed: WAL readers see them), builds the Resolver, resolves every INHERITS
  reference (the bases, which every partition needs), then its own range, and writes the edges
  to its stdout as length-prefixed msgpack frames, a chunk of references per frame;
* the caller deletes the old edges and inserts the frames as they arrive, in one transaction
  (the edges' indexes dropped meanwhile and made once at the end: `Store.edges_replaced`);
  its memory holds a few frames, whatever the repository's size.

A child that fails or dies fails the whole resolution (`ResolveFailed`, one line saying which
child and how): the transaction is rolled back and the index keeps its old edges.
"""

from __future__ import annotations

import ctypes
import os
import queue
import signal
import struct
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import msgspec

from nsccn.errors import ResolveFailed  # noqa: F401  (raised here, caught by the index session's callers)
from nsccn.indexing.resolve import Resolver, add_bases, edges_of
from nsccn.store import Store

_HEADER = struct.Struct("<I")  # payload length; 0 ends the stream
# One frame: the edges of a chunk of references, column by column (what Store.add_edge_columns takes).
Columns = tuple[list[str], list[str], list[str], list[float], list[str], list[int], list[int]]
_decode = msgspec.msgpack.Decoder(Columns).decode
# The caller's memory bound: frames of about this many edges (~0.5 MB of msgpack), this many
# read from each child ahead of the insert.
FRAME_EDGES = 4096
FRAMES_AHEAD = 2
# A test hook: a child kills itself (SIGKILL) after writing this many frames, as a crash would.
DIE_AFTER_ENV = "NSCCN_RESOLVE_CHILD_DIE_AFTER"


# A child reads the references in rowid order: a small page cache does (64 MiB made it 119 MB
# on sympy, 8 MiB 78 MB, no slower).
CHILD_CACHE_MIB = 8
# Below this many references the caller resolves them: starting a child costs more than it saves
# (benchmarks/results/index-speed/resolve_children.md).
CHILDREN_FROM_REFS = 100_000
CHILDREN_ENV = "NSCCN_RESOLVE_CHILDREN"  # how many children a bulk resolution uses (0: none), to measure


def bulk_children(store: Store) -> int:
    """How many children should resolve a bulk index of this store (0: resolve in this process).
    One: inserting the edges costs the caller about as much as resolving them costs the child
    (sympy: 3.3 and 3.4 CPU-s), so one child on the other core overlaps all of the resolution
    with the insert; a second adds a process start, a symbol table and CPU, not wall."""
    wanted = os.environ.get(CHILDREN_ENV, "")
    if wanted.isdigit():
        return int(wanted)
    if (os.cpu_count() or 1) < 2 or store.ref_count() < CHILDREN_FROM_REFS:
        return 0
    return 1


def partitions(store: Store, n: int) -> list[tuple[int, int]]:
    """Up to `n` ranges (after, upto] of refs rowids, cut between files, of about equal size."""
    files = store.conn.execute(
        "SELECT refs_first, refs_last FROM files WHERE refs_last >= refs_first ORDER BY refs_first"
    ).fetchall()
    total = sum(last - first + 1 for first, last in files)
    out: list[tuple[int, int]] = []
    after, count = 0, 0
    for first, last in files:
        count += last - first + 1
        if count >= total * (len(out) + 1) / n and len(out) < n - 1:
            out.append((after, last))
            after = last
    if files:
        out.append((after, files[-1][1]))
    return [r for r in out if r[1] > r[0]]


def resolve_in_children(store: Store, n: int) -> int:
    """Recompute every edge, the references resolved by `n` children, in one transaction.
    Returns the number of edges; raises ResolveFailed (the index as it was) when a child fails."""
    ranges = partitions(store, n)
    arrivals: queue.Queue = queue.Queue(maxsize=FRAMES_AHEAD * max(1, len(ranges)))
    children: list[_Child] = []
    edges = 0
    try:
        for i, span in enumerate(ranges):
            children.append(_Child(store.path, i, len(ranges), span, arrivals))
        with store.conn, store.edges_replaced():
            store.ref_indexes()  # here, while the children resolve (after a first build: one sort each)
            running = len(children)
            while running:
                child, frame = arrivals.get()
                if frame is None:
                    running -= 1
                    child.check()
                    continue
                columns = _decode(frame)
                store.add_edge_columns(*columns)
                edges += len(columns[0])
    finally:
        for child in children:
            child.kill()
        while any(child.reader.is_alive() for child in children):
            try:  # a reader may wait for room in the queue to tell us its child ended
                arrivals.get(timeout=0.05)
            except queue.Empty:
                pass
        for child in children:
            child.close()
    return edges


class _Child:
    """One child process and the thread that reads its frames into `arrivals`."""

    def __init__(self, db_path: Path, index: int, count: int, span: tuple[int, int], arrivals: queue.Queue):
        self.name = f"partition {index + 1} of {count} (refs {span[0] + 1}-{span[1]})"
        self.stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "nsccn.indexing.resolve_partitions", str(db_path), str(span[0]), str(span[1]),
             str(os.getpid())],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self.stderr,
        )
        self.ended = False  # the end frame arrived: the child wrote everything
        self.arrivals = arrivals
        self.reader = threading.Thread(target=self._read, name=f"resolve-{index + 1}", daemon=True)
        self.reader.start()

    def _read(self) -> None:
        out = self.proc.stdout
        try:
            while True:
                head = out.read(_HEADER.size)
                if len(head) < _HEADER.size:
                    break
                (size,) = _HEADER.unpack(head)
                if size == 0:
                    self.ended = True
                    break
                frame = out.read(size)
                if len(frame) < size:
                    break
                self.arrivals.put((self, frame))
        finally:
            self.proc.wait()
            self.arrivals.put((self, None))

    def check(self) -> None:
        code = self.proc.returncode
        if self.ended and code == 0:
            return
        if code is not None and code < 0:
            how = f"was killed by {signal.Signals(-code).name}"
        elif code:
            how = f"exited with status {code}"
        else:
            how = "ended before writing all its edges"
        self.stderr.seek(0)
        said = [line for line in self.stderr.read().decode(errors="replace").splitlines() if line.strip()]
        raise ResolveFailed(f"resolving {self.name} failed: the child {how}" + (f" ({said[-1].strip()})" if said else ""))

    def kill(self) -> None:
        """Kill the child if it still runs (another child failed); its reader then reaps it."""
        if self.proc.poll() is None:
            self.proc.kill()

    def close(self) -> None:
        self.reader.join()
        self.proc.stdout.close()
        self.stderr.close()


# -- the child ---------------------------------------------------------------------------------------


def resolve_span(db_path: str, after: int, upto: int, out) -> int:
    """Resolve the refs with rowids in (after, upto] and write their edges to `out` as frames."""
    die_after = int(os.environ.get(DIE_AFTER_ENV, "-1"))
    encode = msgspec.msgpack.Encoder().encode
    frames = edges = 0
    with Store(db_path, readonly=True, cache_mib=CHILD_CACHE_MIB) as store:
        # The bases from the references, as resolve_all: the stored INHERITS edges are the ones
        # being replaced (the caller deletes them in a transaction this snapshot does not see).
        resolver = Resolver(store, stored_bases=False)
        add_bases(resolver, [r for chunk in store.ref_chunks(relation="INHERITS") for r in chunk])
        for chunk in store.ref_chunks(after=after, upto=upto):
            found = edges_of(resolver, chunk)
            for part in _frames(found):
                _die_here_if(frames == die_after, out)
                source, target, relation, confidence, resolution, line, _, ref = zip(*part)
                payload = encode((source, target, relation, confidence, resolution, line, ref))
                out.write(_HEADER.pack(len(payload)))
                out.write(payload)
                frames += 1
            edges += len(found)
    _die_here_if(frames == die_after, out)
    out.write(_HEADER.pack(0))
    out.flush()
    return edges


def _die_here_if(due: bool, out) -> None:
    """The test hook (DIE_AFTER_ENV): what was written so far reaches the caller, then a crash."""
    if due:
        out.flush()
        os.kill(os.getpid(), signal.SIGKILL)


def _die_with(parent: int) -> bool:
    """Linux: be killed when the process (thread) that started us dies, as the actors are; False
    when it is gone already."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    return os.getppid() == parent


def _frames(edges: list[tuple]) -> list[list[tuple]]:
    """The edges in runs of about FRAME_EDGES, a ref's edges never split (they are numbered
    within their ref as they are inserted)."""
    out, start = [], 0
    while start < len(edges):
        end = min(start + FRAME_EDGES, len(edges))
        while end < len(edges) and edges[end][7] == edges[end - 1][7]:
            end += 1
        out.append(edges[start:end])
        start = end
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 4:
        print("usage: python -m nsccn.indexing.resolve_partitions INDEX.db AFTER UPTO PARENT_PID", file=sys.stderr)
        return 2
    if not _die_with(int(args[3])):
        return 1
    try:
        resolve_span(args[0], int(args[1]), int(args[2]), sys.stdout.buffer)
    except Exception as exc:  # one line for the caller's log: it names the partition
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
