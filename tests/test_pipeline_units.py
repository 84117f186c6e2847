"""The pipeline's pure parts, in one process: the codec, the debouncer, the credit window, the
addresses and the lock."""

from __future__ import annotations

import os
import time
from pathlib import Path

import msgspec
import pytest

from nsccn.config import Config
from nsccn.reading.extract import parse_file
from nsccn.messages import (
    HEADER,
    MESSAGES,
    BadMessage,
    Committed,
    EmbedItem,
    EmbedJob,
    Hello,
    Parsed,
    ProtocolMismatch,
    decode,
    encode,
)
from supervisor.addresses import MAX_IPC_PATH, PipelineLock, addresses, ipc_paths, lock_held, run_dir
from workers.debounce import Debouncer, Dispatcher


def test_every_message_round_trips_and_is_tagged():
    pf = parse_file("a/b.py", b"import os\n\nclass A:\n    def f(self):\n        return os.getcwd()\n")
    samples = [
        Parsed(seq=7, file=pf),
        Committed(items=[("a/b.py", 7)]),
        EmbedJob(job=1, items=[EmbedItem("func:a.py:f", "h", "def f")]),
        Hello(actor="parser-0", kind="parser", pid=1, generation=2),
    ]
    for msg in samples:
        assert decode(encode(msg)) == msg
    tags = [m.__struct_config__.tag for m in MESSAGES]
    assert len(set(tags)) == len(tags)  # one decoder tells every message apart


@pytest.mark.parametrize(
    "frame",
    [
        b"",
        b"GET / HTTP/1.1\r\n\r\n",
        b"NS",
        HEADER + b"\xc1",  # msgpack's never-used byte
        HEADER + msgspec.msgpack.encode({"type": "Nope", "x": 1}),
        HEADER + msgspec.msgpack.encode({"type": "Committed", "items": "not a list"}),
        HEADER + msgspec.msgpack.encode([1, 2, 3]),
        encode(Committed(items=[("a", 1)]))[:-3],  # truncated
    ],
)
def test_malformed_frames_raise_bad_message(frame):
    with pytest.raises(BadMessage):
        decode(frame)


def test_protocol_version_mismatch_is_named():
    frame = bytearray(encode(Hello(actor="x", kind="parser", pid=1)))
    frame[2] += 1
    with pytest.raises(ProtocolMismatch, match="protocol 2, this actor speaks 1"):
        decode(bytes(frame))


def test_debouncer_coalesces_a_burst_and_caps_the_wait():
    d = Debouncer(quiet=0.1, max_wait=2.0)
    t = 0.0
    for _ in range(50):  # 50 changes in 1 s, 20 ms apart
        d.add("a.py", t)
        assert d.pop_due(t) == []
        t += 0.02
    assert d.next_deadline() == pytest.approx(t - 0.02 + 0.1)
    assert d.pop_due(t + 0.05) == []
    assert d.pop_due(t + 0.1) == ["a.py"]
    assert len(d) == 0 and d.next_deadline() is None
    # A file that never stops changing still comes due after max_wait.
    t = 10.0
    while t < 12.5:
        d.add("log.py", t)
        due = d.pop_due(t)
        if due:
            break
        t += 0.05
    assert due == ["log.py"] and t == pytest.approx(12.0, abs=0.06)


def test_dispatcher_credits_one_job_per_path_and_seq_checked_acks():
    d = Dispatcher(window=3, first_seq=100)
    d.add(["a", "b", "c", "d"])
    out = d.take(0.0)
    assert [p for p, _ in out] == ["a", "b", "c"] and d.credits() == 0
    assert d.take(0.0) == []
    d.add(["a"])  # changed again while in flight: waits
    assert d.ack("b", out[1][1])
    nxt = d.take(1.0)
    assert [p for p, _ in nxt] == ["d"]  # "a" is still in flight, so "d" goes first
    assert not d.ack("a", 1)  # an acknowledgement of an older job releases nothing
    assert d.ack("a", out[0][1])
    assert [p for p, _ in d.take(2.0)] == ["a"]
    again = d.resend(3.0)
    assert {p for p, _ in again} == {"c", "d", "a"}
    assert d.resend(3.5, older_than=1.0) == []


def test_ipc_paths_stay_short_with_a_fallback(tmp_path):
    short = addresses(tmp_path, Config())
    assert all(len(str(p)) <= MAX_IPC_PATH for p in ipc_paths(short))
    assert run_dir(tmp_path, Config()) == (tmp_path / ".nsccn" / "run").resolve()
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    d = run_dir(deep, Config())
    assert str(d).startswith("/tmp/nsccn-") and d == run_dir(deep, Config())  # stable per index dir
    assert all(len(str(p)) <= MAX_IPC_PATH for p in ipc_paths(addresses(deep, Config())))


def test_one_pipeline_per_repository(tmp_path):
    first, second = PipelineLock(tmp_path, Config()), PipelineLock(tmp_path, Config())
    assert first.acquire()
    first.write_info({"pid": os.getpid(), "mode": "serve"})
    try:
        assert lock_held(tmp_path, Config())
        assert not second.acquire(tries=2)
    finally:
        first.release()
    assert not lock_held(tmp_path, Config())
    assert not Path(first.info).exists()
    assert second.acquire()
    second.release()


def test_a_socket_file_made_where_an_actors_was_removed_is_not_taken_for_its_own(tmp_path):
    """An actor removes the ipc socket files it bound when it exits, unless a successor has bound
    the path since. The inode alone cannot tell: a file made after ours was removed gets the
    freed inode at once, and a stopping actor removed its successor's socket (a replacement
    pipeline's writer then never heard from its watcher)."""
    from workers.base import _file_identity

    path = tmp_path / "writer.sock"
    path.write_bytes(b"")
    ours = os.stat(path)
    path.unlink()
    time.sleep(0.05)  # a successor binds later than we did
    path.write_bytes(b"")
    theirs = os.stat(path)
    assert _file_identity(theirs) != _file_identity(ours)
    assert _file_identity(os.stat(path)) == _file_identity(theirs)


_SIGNAL_DURING_A_LOG_LINE = r'''
import logging, os, signal, sys
from msgspec.structs import replace
from workers.base import Actor, default_spec, setup_logging


class Guard(logging.Handler):
    """Fails on a log line written while another is being written; the first line's write is
    where the SIGTERM lands (sent from inside it), as it can land inside any write."""
    busy = False
    sent = False

    def emit(self, record):
        if Guard.busy:
            print("REENTRANT: " + record.getMessage(), file=sys.stderr, flush=True)
            return
        Guard.busy = True
        try:
            if not Guard.sent:
                Guard.sent = True
                os.kill(os.getpid(), signal.SIGTERM)  # its Python handler runs before this returns
            sys.stderr.write(self.format(record) + "\n")
        finally:
            Guard.busy = False


class Chatty(Actor):
    kind = "parser"

    def run(self):
        while not self.stop.is_set():
            self.log.info("working")


spec = replace(default_spec("parser", sys.argv[1]), supervised=False)
setup_logging("chatty")
logging.getLogger().handlers = [Guard()]
sys.exit(Chatty(spec).main())
'''


def test_a_stop_signal_during_a_log_line_writes_no_second_line_inside_it(tmp_path):
    """An actor's SIGTERM handler runs between two bytecodes of the main thread, maybe inside its
    write of a log line; logging there too was a reentrant write to stderr (a "Logging error"
    traceback in a writer's log, seen in CI). The handler only records the signal; the actor says
    so in its log once its loop has ended."""
    import subprocess
    import sys

    (tmp_path / "repo").mkdir()
    r = subprocess.run([sys.executable, "-c", _SIGNAL_DURING_A_LOG_LINE, str(tmp_path / "repo")],
                       capture_output=True, text=True, timeout=60, cwd=Path(__file__).resolve().parent.parent)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "REENTRANT" not in r.stderr
    assert "got SIGTERM: stopping" in r.stderr
