"""Embedder actor: bulk embedding jobs from the writer, and a query lane for query embeddings.

Two sockets: a PULL inbox for `EmbedJob`s (at most `embed_window` of them are ever in flight,
the writer's credits) and a ROUTER for `QueryEmbed` requests from MCP fronts and CLI searches
(DEALER). The query lane is a thread of its own with its own copy of the model, started before
the bulk work lowers its CPU priority (`bulk_nice`): a query is embedded at once, at the
process's priority, while a bulk model call runs (on Linux, where a nice value is a thread's;
elsewhere the whole process yields). Before, queries were served between the bulk calls of
a process that yielded to everything else, and waited seconds behind them on a busy machine.
"""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import zmq

from nsccn.config import load_config
from nsccn.vectors.static_embed import ModelUnavailable
from nsccn.vectors.static_file import configured_model
from nsccn.messages import EmbedJob, Hello, ModelInfo, QueryEmbed, QueryVector, Vectors, encode
from workers.base import Actor, ActorFailed, actor_main, name_os_thread


class HashEmbedder:
    """A deterministic stand-in for tests of the pipeline's mechanics (NSCCN_EMBED_MODEL=test-hash):
    word hashes into 64 dimensions, no model to load, microseconds per text. Never a default."""

    model_id = "test-hash"
    dim = 64
    max_chars = 750

    def _vec(self, text: str) -> np.ndarray:
        import hashlib

        v = np.zeros(self.dim, np.float32)
        for w in text.lower().split():
            h = int.from_bytes(hashlib.blake2b(w.encode(), digest_size=4).digest(), "little")
            v[h % self.dim] += 1.0 if h & 1 << 31 else -1.0
        n = float(np.linalg.norm(v))
        return v / n if n else v

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return np.stack([self._vec(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self._vec(text)

    def info(self) -> dict:
        return {"model_id": self.model_id, "dim": self.dim, "source": "tests", "fallback": False}


def embed_in_calls(model, texts: list[str], step: int, between_calls=None) -> np.ndarray | None:
    """Vectors of `texts` (in their order), `step` texts per model call; `between_calls()` runs
    after each call (the actor's heartbeat tick) and stops the work by returning False
    (then None is returned). The texts are taken shortest first: a call pads its texts to the
    longest of them, so texts of like length go together."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out = np.zeros((len(texts), model.dim), np.float32)
    step = max(1, step)
    for i in range(0, len(order), step):
        rows = order[i : i + step]
        out[rows] = np.asarray(model.embed_documents([texts[j] for j in rows]), dtype=np.float32)
        if between_calls is not None and not between_calls():
            return None
    return out


def load_model(root):
    """The configured model (fastembed), or the bundled fallback when it is not cached."""
    from nsccn.vectors.embed import load_embedder

    config = load_config(root)
    model = configured_model(config)
    if model == "test-hash":
        return HashEmbedder()
    return load_embedder(
        model,
        config.embedding_dim or None,
        batch_size=config.embedding_batch_size,
        threads=config.embedding_threads or None,
    )


class Embedder(Actor):
    """Embed entity texts for the writer and queries for the MCP fronts and CLI searches."""

    kind = "embedder"
    yields_in_run = True  # after the query lane has started: it keeps the process's priority

    def run(self) -> None:
        self.model = None
        self.model_error = None
        self.stats.update(jobs=0, embedded=0, queries=0, seconds=0.0)
        self._lane_failed: str | None = None
        self._lane = threading.Thread(target=self._query_lane_thread, name="query-lane", daemon=True)
        self._lane.start()
        try:
            self._bulk()
        finally:
            self.stop.set()
            self._lane.join(timeout=5)
        if self._lane_failed:  # no query could be answered: the supervisor starts us again
            raise ActorFailed(f"the query lane failed: {self._lane_failed}")

    def _bulk(self) -> None:
        self.yield_cpu()  # this thread and those it starts (the model's) yield; the lane does not
        inbox = self.socket(zmq.PULL, bind=self.addrs.embedder)
        self.to_writer = self.socket(zmq.PUSH, connect=self.addrs.writer)
        with self.busy("loading model"):
            try:
                self.model = load_model(self.root)
            except ModelUnavailable as exc:  # (`nsccn serve` checks first; a Procfile run may not)
                self.log.error("no vectors: %s", exc)
                self.stats.update(model=None, error=str(exc))
                self.model_error = str(exc)
                self.tick(f"no model: {exc}")
                while not self.stop.wait(0.2):  # stay up (a crash loop would only say it again)
                    self.tick()
                return
        info = self.model.info()
        self.model_info = ModelInfo(
            model_id=self.model.model_id,
            dim=self.model.dim,
            max_chars=self.model.max_chars,
            pid=os.getpid(),
            info={k: v for k, v in info.items() if isinstance(v, (str, int, float, bool, type(None)))},
        )
        self.log.info("model %s (dim %d) from %s", self.model.model_id, self.model.dim, info.get("source"))
        self.send(self.to_writer, self.model_info)
        self.stats.update(model=self.model.model_id)
        poller = self.poller(inbox)
        self.tick("running")
        while not self.stop.is_set():
            self.tick()
            ready = self.wait(poller, 200)
            if inbox in ready:
                try:
                    _, msg = self.recv(inbox)
                except zmq.Again:
                    continue
                if msg is None:
                    continue
                if isinstance(msg, EmbedJob):
                    self._embed_job(msg)
                elif isinstance(msg, Hello):
                    if msg.kind == "writer":  # a (re)started writer needs to know the model
                        self.send(self.to_writer, self.model_info)
                else:
                    self.unexpected(msg)

    def _query_lane_thread(self) -> None:
        try:
            self._query_lane()
        except Exception as exc:
            self.log.exception("the query lane failed")
            self._lane_failed = f"{type(exc).__name__}: {exc}"
            self.stop.set()

    def _query_lane(self) -> None:
        """The query lane's thread: its own socket and its own model (one ONNX session serves one
        call at a time, and the bulk one is busy), loaded at the process's priority."""
        name_os_thread("nsccn-query")
        router = self.socket(zmq.ROUTER, bind=self.addrs.query)
        model, error = None, None

        def load() -> None:
            nonlocal model, error
            try:
                model = load_model(self.root)
            except ModelUnavailable as exc:
                error = str(exc)  # queries get the reason
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"
                self.log.exception("the query lane's model failed to load")

        # The copy costs memory (the bundled MiniLM: ~170 MB): a serving pipeline loads it at once,
        # an index run (`once`), which seldom gets a query, at its first query.
        loaded = not self.spec.once
        if loaded:
            load()
        while not self.stop.is_set():
            if not router.poll(200):
                continue
            if not loaded:
                loaded = True
                load()
            while True:
                try:
                    route, msg = self.recv(router)
                except zmq.Again:
                    break
                if not route:
                    continue  # a ROUTER always has the peer's identity; anything else is junk
                if not isinstance(msg, QueryEmbed):
                    if msg is not None:
                        self.unexpected(msg)
                    continue
                self._answer(router, route, msg, model, error)

    def _answer(self, router: zmq.Socket, route: list[bytes], msg: QueryEmbed, model, error: str | None) -> None:
        try:
            if model is None:  # no model could load: the reason
                raise ModelUnavailable(error)
            vec = np.asarray(model.embed_query(msg.text), dtype=np.float32)
            reply = QueryVector(req=msg.req, model_id=model.model_id, dim=int(vec.shape[0]), data=vec.tobytes())
        except Exception as exc:
            reply = QueryVector(req=msg.req, error=f"{type(exc).__name__}: {exc}")
        self.stats["queries"] += 1
        try:
            router.send_multipart([*route, encode(reply)], zmq.NOBLOCK)
        except zmq.ZMQError:
            pass  # the asker is gone

    def _embed_job(self, job: EmbedJob) -> None:
        t = time.perf_counter()
        texts = [it.text for it in job.items]
        error = None
        data = None

        def between_calls() -> bool:
            self.tick("running")
            return not self.stop.is_set()

        try:
            data = embed_in_calls(self.model, texts, self.spec.embed_sub_batch, between_calls)
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            self.last_error = error
            self.log.exception("embed job %d failed", job.job)
        if error is None and data is None:
            return  # stopping
        if data is None:
            data = np.zeros((0, self.model.dim), np.float32)
        self.send(
            self.to_writer,
            Vectors(
                job=job.job,
                model_id=self.model.model_id,
                dim=self.model.dim,
                ids=[it.entity_id for it in job.items] if error is None else [],
                hashes=[it.text_hash for it in job.items] if error is None else [],
                data=np.ascontiguousarray(data).tobytes(),
                error=error,
            ),
        )
        self.stats["jobs"] += 1
        self.stats["embedded"] += len(texts) if error is None else 0
        self.stats["seconds"] = round(self.stats["seconds"] + time.perf_counter() - t, 3)


def main(argv=None) -> int:
    return actor_main(Embedder, argv)


if __name__ == "__main__":
    raise SystemExit(main())
