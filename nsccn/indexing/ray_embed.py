"""A transformer model (a user setting, `embedding_model`) on a pool of Ray actors: each actor
loads the model once and embeds chunk after chunk; the driver only stores the vectors.

The static model (the default) needs no actor: its vectors are made beside the parse
(nsccn.indexing.ray_index). A transformer is worth an actor: its load costs a second or more and
a few hundred MB, and its texts take milliseconds each. The vectors are asked for where
`nsccn index --in-process` asks for them — after the parse and resolution, by
`nsccn.vectors.semantic.embed_index`, chunk by chunk (EMBED_CHUNK texts) — so which entities get
a vector, the cache by text hash, and each chunk's texts are the local run's; each chunk is
embedded by one actor with the same call (`Embedder.embed_documents`): the same vectors.

The pool is used only for a model this process names exactly as it would load it (a bundled
model, or a fastembed model in this machine's cache): a node loads it with no fallback, and
reports what it loaded; a node that cannot load it, or loads another model or another nsccn,
leaves the vectors to this process (`vectors_refused`): no vector is ever another model's.
The actors are made when there is something to embed (not on a run that changed nothing), as
many as there are chunks up to the cluster's CPUs, spread over the nodes, and ended with the run.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np

ACTOR_CPUS = 1  # each actor's CPU (the ONNX session's threads): the parse is over, the CPUs are free
READY_WAIT_S = 5.0  # after the first actor is up, how long the others get to come up (those later are let go)
MAX_RESTARTS = 3  # an actor lost with its node is made again, its call sent again


class EmbedActor:
    """One model load; `embed` as `Embedder.embed_documents`. (A Ray actor class: `_actor_class`.)"""

    def __init__(self, model: str, dim: int | None):
        from nsccn import __version__
        from nsccn.vectors.embed import load_embedder

        started = time.perf_counter()
        self.embedder = load_embedder(model, dim, threads=ACTOR_CPUS, allow_fallback=False)
        self.about = {"model_id": self.embedder.model_id, "dim": self.embedder.dim, "version": __version__,
                      "node": _node_address(), "load_s": time.perf_counter() - started}

    def describe(self) -> dict:
        return self.about

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.embedder.embed_documents(texts)

    def cpu_seconds(self) -> float:
        """This actor's CPU so far, its model's load included (the run's `embed_actors_cpu`)."""
        return time.process_time()


def _node_address() -> str:
    import ray

    return f"{ray.util.get_node_ip_address()} {ray.get_runtime_context().get_node_id()[:8]}"


_actor = None


def _actor_class():
    global _actor
    if _actor is None:
        import ray

        _actor = ray.remote(num_cpus=ACTOR_CPUS, max_restarts=MAX_RESTARTS, max_task_retries=MAX_RESTARTS)(EmbedActor)
    return _actor


def planned_model(model: str, dim: int | None):
    """The embedder this process would make with `model` at `dim`, without its weights (its
    `model_id`, `dim`, `max_chars`): for a transformer it would load as named — a bundled one, or
    a fastembed model in this machine's cache —; None for the static model, or a model this
    process would not load as named (it embeds those itself, as `nsccn index` does)."""
    from nsccn.vectors.embed import (
        DEFAULT_MODEL,
        FALLBACK_ALIASES,
        FALLBACK_MODEL,
        KNOWN_MODELS,
        PLAIN_MINILM,
        PLAIN_MINILM_ALIASES,
        Embedder,
        ModelUnavailable,
        _resolve_dim,
        _spec_for,
        find_cached_model,
        model_cache_dirs,
    )
    from nsccn.vectors.static_file import is_static_model

    requested = model or DEFAULT_MODEL
    if is_static_model(requested):
        return None
    for aliases, bundled in ((FALLBACK_ALIASES, FALLBACK_MODEL), (PLAIN_MINILM_ALIASES, PLAIN_MINILM)):
        if requested.lower() in aliases:
            spec = KNOWN_MODELS[bundled]
            if dim not in (None, spec.native_dim):
                return None
            return Embedder(model_name=bundled, dim=spec.native_dim, spec=spec, backend=None)
    try:
        spec = _spec_for(requested)
        vec_dim = _resolve_dim(spec, dim)
        if find_cached_model(spec.name, model_cache_dirs()) is None:
            return None
    except (ModelUnavailable, ValueError, ImportError):
        return None
    return Embedder(model_name=spec.name, dim=vec_dim, spec=spec, backend=None,
                    query_prefix=spec.query_prefix, document_prefix=spec.document_prefix)


class RayPoolEmbedder:
    """What `embed_index` needs of an embedder (`model_id`, `dim`, `max_chars`, `info`,
    `embed_documents`, `embed_chunks`), the texts embedded by a pool of Ray actors. `stats`: the
    run's RayStats (actors, their nodes, the vectors they made or the ones refused)."""

    def __init__(self, model: str, dim: int | None, planned, cpus: int, stats):
        """`planned`: `planned_model(model, dim)`, what the vectors must be."""
        self.model, self.requested_dim = model, dim
        self.model_id, self.dim, self.max_chars = planned.model_id, planned.dim, planned.max_chars
        self.cpus, self.stats = max(1, cpus), stats
        self.actors: list = []
        self._pool = None
        self._here = None  # this process's embedder, when the nodes cannot make these vectors

    def info(self) -> dict:
        return {"model_id": self.model_id, "fallback": False}

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return next(iter(self.embed_chunks([texts])))

    def embed_chunks(self, chunks: list[list[str]]) -> Iterator[np.ndarray]:
        """Each chunk's vectors, in order: the chunks spread over the actors (ray.util.ActorPool)."""
        import ray

        if not chunks:
            return
        if self._pool is None and self._here is None:
            self._pool = self._start(min(self.cpus, len(chunks)))
        pool = self._pool
        if pool is None:
            yield from (self._local().embed_documents(c) for c in chunks)
            self.stats.vectors_refused += sum(map(len, chunks))
            return
        started = time.perf_counter()
        try:
            for vectors in pool.map(lambda actor, texts: actor.embed.remote(texts), chunks):
                self.stats.vectors_from_actors += len(vectors)
                yield vectors
        except ray.exceptions.RayError as exc:
            from nsccn.indexing.ray_cluster import RayTaskFailed

            raise RayTaskFailed(f"embedding on the Ray actors failed: {' '.join(str(exc).split())[:300]}") from None
        finally:
            self.stats.seconds["embed_on_actors"] = self.stats.seconds.get("embed_on_actors", 0.0) + (
                time.perf_counter() - started)

    def _start(self, n: int):
        """`n` actors, of which those up in time (the first, and those up `READY_WAIT_S` after it)
        make the pool; None when none loads this model (the vectors are then made here)."""
        import ray
        from ray.util import ActorPool

        from nsccn import __version__

        started = time.perf_counter()
        cls = _actor_class()
        actors = [cls.options(scheduling_strategy="SPREAD").remote(self.model, self.requested_dim) for _ in range(n)]
        waiting = {a.describe.remote(): a for a in actors}
        ready: list = []
        why = ""
        deadline = None
        while waiting:
            timeout = None if deadline is None else max(0.0, deadline - time.perf_counter())
            done, _ = ray.wait(list(waiting), num_returns=1, timeout=timeout)
            if not done:
                break  # the rest wait for CPUs others hold: not waited for
            actor = waiting.pop(done[0])
            try:
                about = ray.get(done[0])
            except ray.exceptions.RayError as exc:
                why = why or " ".join(str(exc).split())[:300]
                ray.kill(actor)
                continue
            if about["model_id"] != self.model_id or about["version"] != __version__:
                why = why or f"a node loaded {about['model_id']} with nsccn {about['version']}"
                ray.kill(actor)
                continue
            ready.append(actor)
            self.stats.actors_by_node[about["node"]] += 1
            deadline = deadline or time.perf_counter() + READY_WAIT_S
        for actor in waiting.values():
            ray.kill(actor)
        self.actors = ready
        self.stats.embed_actors += len(ready)
        self.stats.seconds["embed_actors_start"] = time.perf_counter() - started
        if not ready:
            self.stats.embed_refused_because = why
            return None
        return ActorPool(ready)

    def _local(self):
        if self._here is None:
            from nsccn.vectors.semantic import default_embedder

            here = default_embedder(self.model, self.requested_dim)
            if here.model_id != self.model_id:  # never: planned_model follows load_embedder
                from nsccn.indexing.ray_cluster import RayTaskFailed

                raise RayTaskFailed(f"this process loaded {here.model_id}, not {self.model_id}")
            self._here = here
        return self._here

    def close(self) -> None:
        import ray

        if self.actors:
            try:
                cpu = ray.get([a.cpu_seconds.remote() for a in self.actors], timeout=30)
                self.stats.seconds["embed_actors_cpu"] = sum(cpu)
            except (ray.exceptions.RayError, TimeoutError):  # a figure lost, nothing else
                pass
        for actor in self.actors:
            ray.kill(actor)
        self.actors, self._pool = [], None
