"""`nsccn index PATH --ray ADDRESS`: the files to parse looked at by Ray tasks, the results
written here by the one writer.

    driver (this process)                           Ray tasks (any node)
    scan, plan (nsccn.indexing.indexer)
    read a batch's bytes (repofile.read_bytes) ──ray.put──► look_at_batch: look_at_bytes per file
    IndexSession: sort, commit ◄──── results as they come ─┘ (msgpack frames, nsccn.messages)
    resolve, PageRank, history, vectors (as `nsccn index --in-process`,
    the static model's made on the nodes beside the parse: only stored here)

The bytes travel through Ray's object store, so a node needs no checkout and no shared disk, only
nsccn installed (the same version: a result from another is refused). Files are batched by size
(runs of the scan's order of about equal bytes), at most `WINDOW_PER_CPU` batches per CPU ahead of
the writer: the driver's memory stays bounded and no worker waits. Results are written in the
scan's order, as `nsccn index --in-process` writes them: the same input makes the same index
whichever task ends first. A task whose worker process or node dies
is sent again by this driver (`MAX_RETRIES`, counted here: Ray tells a task's attempts only
through a private call, or its state API, which needs the dashboard's HTTP server); the writer
commits whole batches in transactions, so a killed driver leaves committed files that the next run
counts as done.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from nsccn.indexing.ray_cluster import RayTaskFailed, Runtime, ray_runtime

if TYPE_CHECKING:
    from nsccn.config import Config
    from nsccn.indexing.index_session import FileResult
    from nsccn.indexing.indexer import IndexSummary
    from nsccn.reading.scan import FileInfo, ScanResult

BATCH_BYTES = 2 << 20  # a task's bytes at most (a single larger file goes alone)...
BATCH_FILES = 128  # ...and files: a task's overhead (~1 ms) stays small beside its parse
BATCHES_PER_CPU = 4  # at least this many batches per CPU, so the last ones end close together
WINDOW_PER_CPU = 2  # batches in flight per CPU of the cluster
MAX_RETRIES = 3  # a task lost with its worker or node is sent again this many times


@dataclass
class RayStats:
    """What ran where: the `ray` section of `nsccn index --json`."""

    address: str = ""
    nodes: int = 0
    cpus: int = 0
    tasks: int = 0
    retries: int = 0  # tasks sent again (their worker or node lost)
    files_shipped: int = 0
    bytes_shipped: int = 0
    vectors_from_nodes: int = 0  # static-model vectors made beside the parse
    vectors_refused: int = 0  # ...by a node whose model is not this process's (made here again)
    embed_actors: int = 0  # a transformer's actors (nsccn.indexing.ray_embed), one model load each
    vectors_from_actors: int = 0  # ...the vectors they made
    embed_refused_because: str = ""  # why no actor could make them (this process made them)
    actors_by_node: Counter = field(default_factory=Counter)  # 'address node-id' -> actors
    tasks_by_node: Counter = field(default_factory=Counter)  # 'address node-id' -> tasks
    seconds: dict = field(default_factory=dict)  # stage -> seconds

    def as_dict(self) -> dict:
        d = dict(self.__dict__)
        d["tasks_by_node"] = dict(self.tasks_by_node)
        d["actors_by_node"] = dict(self.actors_by_node)
        d["seconds"] = {k: round(v, 3) for k, v in self.seconds.items()}
        return d


def balanced_batches(sizes: list[int], cpus: int) -> list[list[int]]:
    """Indexes into `sizes`, cut in order into runs of about equal bytes: as many batches as the
    bytes (`BATCH_BYTES`), the file count (`BATCH_FILES`) and the CPUs (`BATCHES_PER_CPU`) ask
    for. Runs in order, not a bin packing: the results are written in the scan's order, as
    `nsccn index --in-process` writes them (the index must not depend on which task ended first)."""
    if not sizes:
        return []
    total = sum(sizes)
    n = max(-(-total // BATCH_BYTES), -(-len(sizes) // BATCH_FILES), min(len(sizes), cpus * BATCHES_PER_CPU), 1)
    target, cap = total / n, -(-len(sizes) // n)
    batches: list[list[int]] = [[]]
    load = 0
    for i, size in enumerate(sizes):
        if batches[-1] and (load + size / 2 > target or len(batches[-1]) >= cap):
            batches.append([])
            load = 0
        batches[-1].append(i)
        load += size
    return batches


def look_at_batch(items: list[tuple[str, bytes, int, float, str | None]],
                  embed: tuple[int, bool] | None = None) -> tuple[str, dict, list[bytes], dict]:
    """A Ray task: each (path, bytes, size, mtime, indexed hash) looked at as a local parser looks
    at it (nsccn.indexing.index_session.look_at_bytes). `embed` (max characters, tests too?): the
    parsed entities embedded here by the static model, as the driver would embed them once written.
    Returns nsccn's version, where it ran, each result as a message frame, and the vectors
    ({"model": the model file's digest, "vectors": {text hash: float32 bytes}}, or {})."""
    import os

    from nsccn import __version__
    from nsccn.indexing.index_session import look_at_bytes
    from nsccn.messages import encode

    started = time.perf_counter()
    results = [look_at_bytes(path, data, size, mtime, known) for path, data, size, mtime, known in items]
    frames = [encode(r) for r in results]
    parsed = time.perf_counter()
    vectors = _embed_results(results, *embed) if embed else {}
    where = {"node": _node_address(), "pid": os.getpid(), "seconds": time.perf_counter() - started,
             "embed_seconds": time.perf_counter() - parsed}
    return __version__, where, frames, vectors


def _embed_results(results: list, max_chars: int, include_tests: bool) -> dict:
    """The static model's vectors of the parsed files' entities, by text hash (a text shared by
    several entities is embedded once)."""
    from nsccn.model import Parsed
    from nsccn.vectors.embed import static_embedder, text_hash
    from nsccn.vectors.semantic import texts_of_entities
    from nsccn.vectors.static_file import model_digest

    texts: dict[str, str] = {}
    for r in results:
        if isinstance(r, Parsed):
            for text in texts_of_entities(r.file.entities, max_chars, include_tests).values():
                texts.setdefault(text_hash(text), text)
    if not texts:
        return {}
    embedder = static_embedder()
    vecs = embedder.embed_documents(list(texts.values()))
    return {"model": model_digest(), "vectors": {h: v.astype("float32").tobytes() for h, v in zip(texts, vecs)}}


def _node_address() -> str:
    """This node: its address and the head of its id (nodes on one host share the address)."""
    import ray

    return f"{ray.util.get_node_ip_address()} {ray.get_runtime_context().get_node_id()[:8]}"


def _static_max_chars() -> int:
    """What the driver's static embedder cuts an entity's text to (a node's texts must be the same)."""
    from nsccn.vectors.embed import KNOWN_MODELS, STATIC_MODEL

    return KNOWN_MODELS[STATIC_MODEL].max_chars


_remote = None


def _task():
    global _remote
    if _remote is None:
        import ray

        # No retries by Ray: this driver sends a lost task again itself, and so counts it.
        _remote = ray.remote(max_retries=0, num_cpus=1)(look_at_batch)
    return _remote


def parse_on_ray(root: Path, todo: list[FileInfo], config: Config, known: dict, stats: RayStats,
                 node_vectors: dict | None = None) -> Iterator[FileResult]:
    """Every file of `todo` looked at on the cluster, yielded in `todo`'s order (a batch that ends
    early waits, at most `WINDOW_PER_CPU` batches per CPU ahead). A file this process cannot read
    is answered here (Removed or Skipped), never shipped. `node_vectors` (a dict): the tasks embed
    the entities they parse with the static model too, and their vectors land there (text hash ->
    bytes), those of a node whose model file differs from this process's left out."""
    import ray

    from nsccn import __version__
    from nsccn.indexing.index_session import unreadable
    from nsccn.messages import decode
    from nsccn.reading.repofile import UnreadableFile, read_bytes
    from nsccn.vectors.static_file import model_digest

    task = _task()
    embed = (_static_max_chars(), config.embed_test_files) if node_vectors is not None and todo else None
    ours = model_digest() if embed else None  # the model file read once a process, only when there is work
    batches = balanced_batches([f.size for f in todo], stats.cpus or 1)
    window = max(2, (stats.cpus or 1) * WINDOW_PER_CPU)
    pending: dict = {}  # ObjectRef -> (batch number, its items' ObjectRef, attempt)
    local: dict[int, dict[int, FileResult]] = {}  # batch -> {file: result answered here}
    ready: dict[int, list[bytes]] = {}  # batch -> frames, back before an earlier batch
    started = time.perf_counter()
    waiting = 0.0
    nxt = 0  # the next batch to send
    out = 0  # the next batch to yield

    def send(b: int) -> None:
        items, here = [], {}
        for i in batches[b]:
            f = todo[i]
            try:
                data, st = read_bytes(root, f.path, config.max_file_size)
            except UnreadableFile as exc:
                here[i] = unreadable(f.path, exc.reason)
                continue
            items.append((f.path, data, st.st_size, st.st_mtime, known.get(f.path, (None,))[0]))
            stats.bytes_shipped += len(data)
        local[b] = here
        if items:
            stats.files_shipped += len(items)
            shipped = ray.put(items)
            pending[task.remote(shipped, embed)] = (b, shipped, 0)
        else:
            ready[b] = []

    while out < len(batches):
        while nxt < len(batches) and nxt - out < window:
            send(nxt)
            nxt += 1
        if out in ready:
            frames = iter(ready.pop(out))
            here = local.pop(out)
            for i in batches[out]:
                yield here[i] if i in here else decode(next(frames))
            out += 1
            continue
        t = time.perf_counter()
        done, _ = ray.wait(list(pending), num_returns=1)
        waiting += time.perf_counter() - t
        b, shipped, attempt = pending.pop(done[0])
        try:
            version, where, frames, vectors = ray.get(done[0])
        except ray.exceptions.RayError as exc:
            # Lost with its worker or node (not an error of the parse itself): sent again.
            if not isinstance(exc, ray.exceptions.RayTaskError) and attempt < MAX_RETRIES:
                pending[task.remote(shipped, embed)] = (b, shipped, attempt + 1)
                stats.retries += 1
                continue
            raise RayTaskFailed(f"a parse task failed on the Ray cluster ({attempt} retries): "
                                f"{' '.join(str(exc).split())[:300]}") from None
        if version != __version__:
            raise RayTaskFailed(f"a Ray node runs nsccn {version}, this one {__version__}: install the same nsccn on"
                                " every node (the index must not mix two extractors)")
        stats.tasks += 1
        stats.tasks_by_node[where["node"]] += 1
        if vectors:
            if vectors["model"] == ours:
                node_vectors.update(vectors["vectors"])
                stats.vectors_from_nodes += len(vectors["vectors"])
                stats.seconds["embed_on_nodes"] = stats.seconds.get("embed_on_nodes", 0.0) + where["embed_seconds"]
            else:
                stats.vectors_refused += len(vectors["vectors"])
        ready[b] = frames
    stats.seconds["parse"] = time.perf_counter() - started
    stats.seconds["waiting_for_results"] = waiting


def index_with_ray(
    root: str | Path,
    runtime: Runtime,
    config: Config | None = None,
    progress: Callable[[int, int], None] | None = None,
    embed: bool = True,
    embed_progress: Callable[[int, int], None] | None = None,
    scan: ScanResult | None = None,
) -> IndexSummary:
    """`nsccn.indexing.indexer.index_repository` with the files parsed on the Ray runtime `runtime`
    (joined by `ray_runtime`); the summary's `ray` says what ran where."""
    from nsccn.indexing.indexer import index_repository

    from nsccn.config import load_config
    from nsccn.vectors.static_file import file_problem, is_static_model

    stats = RayStats(runtime.address, len(runtime.nodes), runtime.cpus)
    stats.seconds["ray_start"] = runtime.started_s
    config = config or load_config(Path(root).resolve())
    # The static model embeds beside the parse, on the nodes: its vectors cost the writer nothing
    # but their storing. A transformer (a user setting) embeds after the parse, as locally, on a
    # pool of Ray actors (one model load each) when the nodes can load it as this process would.
    node_vectors = {} if embed and is_static_model(config.embedding_model) and not file_problem() else None
    pool: list = []

    def make_pool():
        from nsccn.indexing.ray_embed import RayPoolEmbedder, planned_model
        from nsccn.vectors.semantic import default_embedder

        planned = planned_model(config.embedding_model, config.embedding_dim or None)
        if planned is None:  # a model this process would not load as named: embedded here
            return default_embedder(config.embedding_model, config.embedding_dim or None)
        pool.append(RayPoolEmbedder(config.embedding_model, config.embedding_dim or None, planned, runtime.cpus, stats))
        return pool[0]

    def parse(root_: Path, todo: list, config_: Config, known: dict) -> Iterator[FileResult]:
        return parse_on_ray(root_, todo, config_, known, stats, node_vectors)

    started = time.perf_counter()
    try:
        summary = index_repository(root, config=config, workers=0, progress=progress, embed=embed,
                                   embed_progress=embed_progress, scan=scan, parse=parse,
                                   precomputed_vectors=node_vectors,
                                   make_embedder=None if node_vectors is not None or not embed else make_pool)
    finally:
        for p in pool:
            p.close()
    total = time.perf_counter() - started
    stats.seconds["index"] = total
    stats.seconds["after_parse"] = max(0.0, total - stats.seconds.get("parse", 0.0))  # scan, resolve, ranks, vectors
    summary.ray = stats.as_dict()
    return summary


def index_on_ray(root: str | Path, address: str, **kwargs) -> IndexSummary:
    """One repository on the Ray runtime at `address` (nsccn.indexing.ray_cluster.ray_runtime)."""
    with ray_runtime(address) as runtime:
        return index_with_ray(root, runtime, **kwargs)
