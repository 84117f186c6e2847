"""Every message that crosses a process boundary in the actor pipeline, and the one codec.

A frame on the wire is ``MAGIC + version byte + msgpack(tagged struct)``. The tag (the
``type`` field) names the struct, so one decoder reads any message; the version byte lets
two actors of different protocol versions refuse each other with a clear error instead of
misreading fields. Anything else that arrives on a socket (a foreign program, a truncated
frame, a message of the wrong shape) decodes to an exception the actor logs and drops.

Who sends what (``A -> B``):

* watcher (ROUTER) -> parsers (DEALER): `ParseJob` (one path to look at; the parser finds out
  whether it is new, changed, unchanged or gone), only to a parser that has sent `Ready`
  credits for it
* parsers -> writer: `Parsed`, `Unchanged`, `Skipped`, `Removed` (each carries the job's seq)
* writer -> watcher: `Committed` (the acknowledgement that returns the watcher's credits)
* watcher -> writer: `BulkStart`, `BulkDone` (the initial scan's boundaries)
* writer -> embedder: `EmbedJob`; embedder -> writer: `Vectors`, `ModelInfo`
* mcp front (DEALER) -> embedder (ROUTER): `QueryEmbed`; back: `QueryVector`
* every actor -> supervisor: `Hello` (also to the peers that resend on a restart), `Heartbeat`,
  `IndexComplete` (writer)
* anyone -> supervisor control socket: `StatusRequest`, `ShutdownRequest`; back:
  `StatusReply`, `Ok`
* an MCP front (`nsccn serve`) -> supervisor control socket: `Attach` every second while its
  session lasts (and once with `leaving` when it ends); back: `Ok`
"""

from __future__ import annotations

from typing import Any, Union

import msgspec

from nsccn.model import ParsedFile

PROTOCOL_VERSION = 1
MAGIC = b"NS"
HEADER = MAGIC + bytes([PROTOCOL_VERSION])


# The base of every message, and what a parser says of one file (a library result too:
# nsccn.indexing.index_session.look_at), live beside the parse's data.
from nsccn.model import Message, Parsed, Removed, Skipped, Unchanged  # noqa: E402,F401


# -- lifecycle and supervision ------------------------------------------------------------------


class Hello(Message):
    """An actor has started. `generation` is 0 at the first start and counts restarts, so a peer
    can tell a restart (resend what may be lost) from the first start."""

    actor: str  # name, e.g. "parser-1"
    kind: str  # watcher, parser, writer, embedder, mcp
    pid: int
    generation: int = 0
    protocol: int = PROTOCOL_VERSION


class Heartbeat(Message):
    actor: str
    kind: str
    pid: int
    seq: int
    state: str  # starting, busy:<what>, running, idle, stopping
    loop_age: float  # seconds since the actor's main loop last went round
    busy: str | None = None  # a long library call in progress (scan, resolve, model load)
    rss_kb: int = 0  # peak resident memory of the process
    stats: dict[str, Any] = {}
    last_error: str | None = None


class IndexComplete(Message):
    """The writer has committed, resolved and ranked everything of the bulk (and embedded it,
    when embedding is on). `nsccn index` exits on this."""

    generation: int  # the watcher generation whose bulk this completes
    files: int
    entities: int
    edges: int
    vectors: int
    entities_without_vectors: int
    counts: dict[str, Any] = {}  # Store.counts(): edges by relation, files with syntax errors


class StatusRequest(Message):
    pass


class StatusReply(Message):
    status: dict[str, Any]


class ShutdownRequest(Message):
    reason: str = ""


class Attach(Message):
    """An MCP front is (still) attached: the pipeline lives while any is, and lingers after."""

    client: str  # unique per front process
    pid: int
    leaving: bool = False


class Ok(Message):
    detail: str = ""


class Error(Message):
    error: str


# -- indexing -----------------------------------------------------------------------------------


class ParseJob(Message):
    """Look at one path. `seq` grows across watcher restarts (it starts at the clock), so the
    writer can tell a late duplicate from a newer job. `known_hash` is the content hash the
    index holds (None: not indexed), so an unchanged file is not parsed."""

    seq: int
    path: str
    known_hash: str | None = None


class Ready(Message):
    """Parser -> watcher (DEALER -> ROUTER): credits. `free` more jobs may be sent to this parser;
    with `reset`, its queue is empty and `free` replaces what the watcher counted (a parser
    repeats this while idle, so a restarted watcher learns its parsers)."""

    actor: str
    pid: int
    free: int
    reset: bool = False


class Committed(Message):
    """These (path, seq) results are in the database: the watcher's credits for them return."""

    items: list[tuple[str, int]]


class BulkStart(Message):
    generation: int
    total: int  # paths the initial scan dispatches
    files_seen: int = 0
    unchanged: int = 0
    skipped: dict[str, int] = {}


class BulkDone(Message):
    generation: int
    total: int


# -- embedding ----------------------------------------------------------------------------------


class EmbedItem(msgspec.Struct, array_like=True):
    entity_id: str
    text_hash: str
    text: str


class EmbedJob(Message):
    job: int
    items: list[EmbedItem]


class Vectors(Message):
    """Answer to an EmbedJob: row i of `data` (float32, row-major, `dim` columns) is the vector
    of (ids[i], hashes[i])."""

    job: int
    model_id: str
    dim: int
    ids: list[str]
    hashes: list[str]
    data: bytes
    error: str | None = None


class ModelInfo(Message):
    """The embedder's model: the writer records it and computes texts with its `max_chars`."""

    model_id: str
    dim: int
    max_chars: int
    pid: int
    info: dict[str, Any] = {}


class QueryEmbed(Message):
    req: int
    text: str


class QueryVector(Message):
    req: int
    model_id: str = ""
    dim: int = 0
    data: bytes = b""
    error: str | None = None


# -- process wiring -----------------------------------------------------------------------------


class Addresses(msgspec.Struct, kw_only=True):
    """Where each socket lives. Binders: the supervisor (control, supervisor), the watcher
    (watcher, jobs: a ROUTER), the writer (writer), the embedder (embedder, query: a ROUTER)."""

    control: str
    supervisor: str
    watcher: str
    jobs: str
    writer: str
    embedder: str
    query: str


class ActorSpec(msgspec.Struct, kw_only=True):
    """What an actor process is told at start (JSON on its command line)."""

    name: str
    kind: str
    root: str
    db_path: str
    addresses: Addresses
    generation: int = 0
    supervised: bool = False  # started by the supervisor: exit when it goes away
    parent_pid: int = 0
    heartbeat_s: float = 0.5
    # watcher
    once: bool = False  # scan and dispatch, no file watching (nsccn index)
    debounce_ms: int = 100
    max_wait_ms: int = 2000
    window: int = 256  # parse jobs in flight (sent, not yet committed by the writer)
    # parser
    prefetch: int = 2  # jobs a parser holds (working on one, the next one waiting)
    # writer
    embed: bool = True
    # The static model costs ~0.2 ms an entity: the writer embeds with it itself, no embedder actor
    # (its process, its messages and its ~90 MB are not worth it: docs/semantic-search.md).
    embed_in_writer: bool = False
    embed_window: int = 2  # embed jobs in flight
    embed_batch: int = 32  # entities per embed job
    # embedder
    embed_sub_batch: int = 8  # texts per model call
    nice: int = 0  # how much nicer the actor's work runs (bulk work yields to queries: `bulk_nice`)


MESSAGES = (
    Hello,
    Heartbeat,
    IndexComplete,
    StatusRequest,
    StatusReply,
    ShutdownRequest,
    Attach,
    Ok,
    Error,
    ParseJob,
    Ready,
    Parsed,
    Unchanged,
    Skipped,
    Removed,
    Committed,
    BulkStart,
    BulkDone,
    EmbedJob,
    Vectors,
    ModelInfo,
    QueryEmbed,
    QueryVector,
)
AnyMessage = Union[MESSAGES]  # noqa: UP007 - a runtime Union of the tuple


class BadMessage(ValueError):
    """A frame that is not an NSCCN message (foreign, truncated, malformed)."""


class ProtocolMismatch(BadMessage):
    """An NSCCN message of another protocol version."""


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(AnyMessage)


def encode(msg: Message) -> bytes:
    return HEADER + _encoder.encode(msg)


def decode(frame: bytes | memoryview) -> Message:
    """A message, or BadMessage / ProtocolMismatch with a reason fit for a log line."""
    frame = bytes(frame)
    if len(frame) < 3 or frame[:2] != MAGIC:
        raise BadMessage(f"not an NSCCN message ({len(frame)} bytes, starts {frame[:8]!r})")
    if frame[2] != PROTOCOL_VERSION:
        raise ProtocolMismatch(
            f"peer speaks NSCCN pipeline protocol {frame[2]}, this actor speaks {PROTOCOL_VERSION}:"
            " run the same nsccn version everywhere"
        )
    try:
        return _decoder.decode(frame[3:])
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise BadMessage(f"malformed NSCCN message: {exc}") from None


def encode_spec(spec: ActorSpec) -> str:
    return msgspec.json.encode(spec).decode()


def decode_spec(text: str) -> ActorSpec:
    return msgspec.json.decode(text, type=ActorSpec)
