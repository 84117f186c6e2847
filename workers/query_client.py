"""The MCP front's query embedder: asks the embedder actor over a DEALER socket.

`embed_query` goes to the embedder's priority lane (ROUTER), which answers before its next bulk
model call. When the embedder does not answer (not running: `nsccn index` without `--embed`,
still loading its model, restarting), the client loads the same model in this process once and
carries on, so a search never fails for want of the embedder.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from pathlib import Path

import numpy as np
import zmq

from nsccn.messages import BadMessage, QueryEmbed, QueryVector, decode, encode

log = logging.getLogger("nsccn.query_client")


class QueryEmbedClient:
    def __init__(self, address: str, root: str | Path | None = None, timeout_s: float = 5.0, fallback: bool = True):
        self.address = address
        self.root = Path(root) if root else None
        self.timeout_s = timeout_s
        self.fallback = fallback
        self._ctx = zmq.Context.instance()
        self._sock: zmq.Socket | None = None
        self._lock = threading.Lock()
        self._req = itertools.count(1)
        self._local = None
        self._model_id: str | None = None
        self._dim: int | None = None
        self.remote_queries = 0
        self.local_queries = 0

    @property
    def model_id(self) -> str:
        if self._model_id is None:
            self.embed_query("model probe")
        return self._model_id

    @property
    def dim(self) -> int:
        if self._dim is None:
            self.embed_query("model probe")
        return self._dim

    def _socket(self) -> zmq.Socket:
        if self._sock is None:
            s = self._ctx.socket(zmq.DEALER)
            s.setsockopt(zmq.LINGER, 0)
            s.connect(self.address)
            self._sock = s
        return self._sock

    def _reset(self) -> None:
        if self._sock is not None:
            self._sock.close(0)  # a late answer to the old socket is dropped with it
            self._sock = None

    def _ask(self, text: str) -> np.ndarray | None:
        sock = self._socket()
        req = next(self._req)
        sock.send(encode(QueryEmbed(req=req, text=text)))
        deadline = time.monotonic() + self.timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not sock.poll(int(left * 1000) + 1):
                self._reset()
                return None
            try:
                msg = decode(sock.recv())
            except BadMessage as exc:
                log.warning("dropped a reply: %s", exc)
                continue
            if not isinstance(msg, QueryVector) or msg.req != req:
                continue  # an answer to an earlier, abandoned request
            if msg.error:
                raise RuntimeError(f"the embedder failed: {msg.error}")
            self._model_id, self._dim = msg.model_id, msg.dim
            return np.frombuffer(msg.data, dtype=np.float32).copy()

    def embed_query(self, text: str) -> np.ndarray:
        with self._lock:
            if self._local is None:
                vec = self._ask(text)
                if vec is not None:
                    self.remote_queries += 1
                    return vec
                if not self.fallback:
                    raise TimeoutError(f"the embedder at {self.address} did not answer within {self.timeout_s} s")
                log.warning("the embedder at %s did not answer: loading the model in this process", self.address)
                from workers.embedder import load_model

                self._local = load_model(self.root or Path("."))
                self._model_id, self._dim = self._local.model_id, self._local.dim
            self.local_queries += 1
            return self._local.embed_query(text)

    def close(self) -> None:
        with self._lock:
            self._reset()
