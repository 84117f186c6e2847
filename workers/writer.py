"""Writer actor: the only process that writes the index.

* Parse results in (from the parsers), `Committed` out (to the watcher: its credits return).
  During the initial scan (between `BulkStart` and `BulkDone`) many files go in one
  transaction; afterwards every result is committed as soon as the inbox is empty, so an edit
  is visible to lexical search within milliseconds of its parse.
* A result is written only when it is news: a duplicate (the watcher resends after a restart)
  or a late result older than the last one committed for its path is acknowledged and dropped.
* Edges are resolved after the bulk (all of them when much changed, the affected names
  otherwise) and after each live commit (targets that appear later are found through the
  names that changed). A crash between a commit and its resolution leaves a marker in the
  index, and the next resolution is a full one.
* Embedding: entities whose embedded text changed are queued; jobs go to the embedder within
  a credit window; vectors come back and are stored if the text they were made from is still
  current. The text-hash cache serves unchanged texts without the model.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import zmq

from nsccn.indexing.index_session import Changes, IndexSession, ResolveFailed, path_of, rank
from nsccn.messages import (
    BulkDone,
    BulkStart,
    Committed,
    EmbedItem,
    EmbedJob,
    Hello,
    IndexComplete,
    ModelInfo,
    Parsed,
    Removed,
    Skipped,
    Unchanged,
    Vectors,
)
from nsccn.store import EMBEDDABLE_SQL as _EMBEDDABLE, TEXT_COLUMNS, WRITER_CACHE_MIB, Store, is_disk_full
from workers.base import Actor, ActorFailed, actor_main

if TYPE_CHECKING:  # numpy and the vector table: imported once a model is known (an index run without
    from nsccn.vectors.table import VectorStore  # vectors, most of them, starts without them)

BULK_BATCH = 256  # files per transaction during the initial scan...
BULK_BATCH_LINES = 20_000  # ...or this many lines parsed: what a batch holds in memory, whatever the files' size
BULK_MAX_AGE_S = 0.5  # ...or this old, whichever first
# Until the watcher has told us where its bulk stands, ask again this often: a Hello or its answer
# can be lost when a pipeline replaces a dying one (a socket connected to the old process's end).
HELLO_RETRY_S = 1.0
DISK_RETRY_S = 2.0  # a full disk: how often held writes are tried again
# Tests hold the resolution of a bulk back to see what the pipeline does meanwhile (seconds).
_RESOLVE_DELAY = float(os.environ.get("NSCCN_TEST_RESOLVE_DELAY", "0") or 0)
LIVE_RANKS_DELAY_S = 2.0  # PageRank after live edits waits for a quiet moment
EMBED_JOB_TIMEOUT_S = 300.0


class Writer(Actor):
    """Commit parse results, resolve edges, schedule embeddings, store vectors."""

    kind = "writer"

    def run(self) -> None:
        spec = self.spec
        self.warmed = False  # PageRank's imports: see BulkStart
        self.history_read = None  # a bulk's history, being read by git (nsccn.reading.history.start_update)
        self.disk_full: str | None = None  # the error while the file system is full: writes held, retried
        self.disk_retry = 0.0
        while True:
            try:
                with self.busy("opening index"):
                    self.store = Store(spec.db_path, cache_mib=WRITER_CACHE_MIB)
                break
            except Exception as exc:  # a first build on a full disk cannot even write its schema
                if not is_disk_full(exc) or self.stop.is_set():
                    raise
                self._note_full(exc, "opening the index")
                self.tick("disk full")
                self.stop.wait(DISK_RETRY_S)
        self.disk_full = None
        self.stats.pop("disk_full", None)
        if self.store.replaced:  # a shipped index: `nsccn index` prints it with the summary
            self.log.warning("%s", self.store.replaced)
            self.stats["warnings"] = [self.store.replaced]
        inbox = self.socket(zmq.PULL, bind=self.addrs.writer)
        self.to_watcher = self.socket(zmq.PUSH, connect=self.addrs.watcher)
        remote = spec.embed and not spec.embed_in_writer
        self.to_embedder = self.socket(zmq.PUSH, connect=self.addrs.embedder) if remote else None
        self.local_model = None  # the static model, when this writer embeds itself
        self.to_super = self.socket(zmq.PUSH, connect=self.addrs.supervisor)
        self.batch: dict[str, object] = {}
        self.batch_lines = 0  # lines of the Parsed results in the batch
        self.batch_started = 0.0
        self.last_seq: dict[str, int] = {}
        # Until the watcher's BulkStart/BulkDone say otherwise, assume a bulk: a result that
        # overtakes the BulkStart (they come from different senders) must not trigger a live
        # resolution. Every writer start gets them: from the watcher's scan, or, for a writer
        # that starts later, from the watcher's answer to our Hello.
        self.bulk_active = True
        self.bulk_gen = -1
        self.bulk_files_seen = 0
        self.completed_gen = -2
        # Commits, resolution and PageRank, as `nsccn index --in-process` does them. A marker left
        # by a crash between a commit and its resolution makes the next resolution (at the end
        # of the watcher's scan, which every watcher start does) a full one.
        self.session = IndexSession(self.store, log=self.log)
        self.ranks_due: float | None = None
        self.ranks_job: threading.Thread | None = None  # live PageRank, computed off the loop
        self.ranks_out: tuple | Exception | None = None
        # embedding
        self.vs: VectorStore | None = None
        self.model: ModelInfo | None = None
        # Which entities may need a vector: a sweep over the entities table in rowid order (new
        # rows always get higher rowids, so one sweep also finds what is written while it runs;
        # memory stays flat however large the repository), plus ids of lost jobs to retry.
        self.sweep: int | None = None  # last rowid checked; None: no sweep running
        self.dirty: dict[str, None] = {}  # ids to check again (an embedder restarted, a job timed out)
        self.ready: list[EmbedItem] = []  # checked against the cache: these need the model
        self.sweep_left = (0, 0)  # (embeddable rows past the cursor, `swept` when counted)
        self.swept = 0
        self.outstanding: dict[int, tuple[float, list[str]]] = {}
        self.job_seq = 0
        self._counted = 0.0
        self.stats.update(
            files_written=0, lines=0, unchanged=0, removed=0, duplicates=0, batches=0, resolves=0, vectors_written=0,
            skipped={}, phase="starting",
        )
        self.send(self.to_watcher, self.hello())
        self.hello_again = time.monotonic() + HELLO_RETRY_S
        if self.to_embedder is not None:
            self.send(self.to_embedder, self.hello())
        if spec.embed_in_writer:
            self._guarded(self._load_local_model)  # a full disk cannot hold the vector tables yet: later
        self.tick("running")
        try:
            self._loop(inbox)
        finally:
            if self.batch:
                self._flush()
            self.store.close()

    # -- loop ------------------------------------------------------------------------------------

    def _loop(self, inbox: zmq.Socket) -> None:
        poller = self.poller(inbox)
        while not self.stop.is_set():
            self.tick()
            now = time.monotonic()
            timeout = 200
            held = self.disk_full is not None and now < self.disk_retry
            if held:  # nothing can be written: wait for the next try, taking in results meanwhile
                timeout = max(1, min(timeout, int((self.disk_retry - now) * 1000) + 1))
            elif self.batch:
                timeout = 0 if not self.bulk_active else max(0, int((self.batch_started + BULK_MAX_AGE_S - now) * 1000))
            elif self._has_idle_work(now):
                timeout = 0
            tried = self.disk_full is not None and not held
            got = 0
            if inbox in self.wait(poller, timeout):
                while got < 2000:
                    try:
                        _, msg = self.recv(inbox)
                    except zmq.Again:
                        break
                    got += 1
                    if msg is not None:
                        self._guarded(self._handle, msg)
                    if not self._held() and (len(self.batch) >= BULK_BATCH or self.batch_lines >= BULK_BATCH_LINES):
                        self._flush()
            now = time.monotonic()
            if self.bulk_gen < 0 and now >= self.hello_again:  # no BulkStart/BulkDone heard yet
                self.send(self.to_watcher, self.hello())
                self.hello_again = now + HELLO_RETRY_S
            if self._held():
                continue
            if self.batch and (not self.bulk_active or now - self.batch_started >= BULK_MAX_AGE_S):
                self._flush()
            if not self._held() and not (self.batch or got):  # more may be waiting: idle work when it is quiet
                self._guarded(self._idle_work, now)
            if tried and not self._held():  # a try since the last failure wrote: space is back
                self.log.warning("disk space is back: writing again")
                self.disk_full = None
                self.stats.pop("disk_full", None)

    # -- a full disk ---------------------------------------------------------------------------------

    def _held(self) -> bool:
        return self.disk_full is not None and time.monotonic() < self.disk_retry

    def _note_full(self, exc: Exception, doing: str) -> None:
        """Writes fail for want of space: keep everything, say so in status, try again later."""
        exc = is_disk_full(exc) or exc  # SQLite's own error, not the failed ROLLBACK it caused
        if self.disk_full is None:
            self.log.error("disk full while %s (%s): holding %d results and retrying every %.0f s",
                           doing, exc, len(self.batch) if hasattr(self, "batch") else 0, DISK_RETRY_S)
        self.disk_full = f"disk full while {doing}: {exc}"
        self.stats["disk_full"] = f"{self.disk_full} (writes held, retried every {DISK_RETRY_S:.0f} s)"
        self.disk_retry = time.monotonic() + DISK_RETRY_S
        self.stats["phase"] = "disk full"

    def _guarded(self, fn, *args) -> None:
        """`fn(*args)`; a full disk holds the writer instead of ending it (a restart would find the
        disk as full, and the supervisor gives up after a few)."""
        try:
            fn(*args)
        except Exception as exc:
            if not is_disk_full(exc):
                raise
            self._note_full(exc, getattr(fn, "__name__", "writing").strip("_").replace("_", " "))

    def _has_idle_work(self, now: float) -> bool:
        return (
            (self.session.needs_resolve and not self.bulk_active)
            or self._completion_due()  # not after a 200 ms wait: a no-change run waits on it
            or (self.ranks_due is not None and now >= self.ranks_due and self.ranks_job is None)
            or (self.ranks_job is not None and not self.ranks_job.is_alive())
            or bool(
                (self.dirty or self.ready or self.sweep is not None)
                and self.model
                and len(self.outstanding) < self.spec.embed_window
            )
        )

    def _idle_work(self, now: float) -> None:
        if self.local_model is not None and self.model is None:  # its tables did not fit on the disk before
            self._use_local_model()
        if self.session.needs_resolve and not self.bulk_active:
            self._resolve()
        if self.ranks_due is not None and now >= self.ranks_due and self.ranks_job is None:
            self.ranks_due = None
            self._start_ranks()
        if self.ranks_job is not None and not self.ranks_job.is_alive():
            self._store_ranks()
        if self.model is not None:
            self._dispatch_embeds()
            for job, (sent, ids) in list(self.outstanding.items()):
                if now - sent > EMBED_JOB_TIMEOUT_S:
                    self.log.warning("embed job %d unanswered for %.0f s: queueing it again", job, now - sent)
                    del self.outstanding[job]
                    self._mark_dirty(ids)
        self._maybe_complete()
        self.stats["phase"] = self._phase()
        if now - self._counted > 2.0:
            self._counted = now
            n = self._count(f"SELECT COUNT(*) FROM entities WHERE {_EMBEDDABLE}")
            self.stats["entities"] = n
            self.stats["entities_without_vectors"] = max(0, n - self.vs.count()) if self.vs is not None else n
            if self.sweep is not None:
                left = self._count(f"SELECT COUNT(*) FROM entities WHERE rowid > {int(self.sweep)} AND {_EMBEDDABLE}")
                self.sweep_left = (left, self.swept)

    def _handle(self, msg) -> None:
        if isinstance(msg, (Parsed, Unchanged, Skipped, Removed)):
            path = msg.file.path if isinstance(msg, Parsed) else msg.path
            prev = self.batch.get(path)
            if prev is None or prev.seq <= msg.seq:
                if not self.batch:
                    self.batch_started = time.monotonic()
                self.batch[path] = msg
                if isinstance(msg, Parsed):
                    self.batch_lines += msg.file.line_count
            else:
                self._ack([(path, msg.seq)])
        elif isinstance(msg, Vectors):
            self._store_vectors(msg)
        elif isinstance(msg, ModelInfo):
            self._set_model(msg)
        elif isinstance(msg, BulkStart):
            if self.batch:
                self._flush()
            self.bulk_active = True
            self.bulk_gen = msg.generation
            self.bulk_files_seen = msg.files_seen or self.bulk_files_seen
            self.log.info("bulk %d started: %d paths to check", msg.generation, msg.total)
            if msg.total and not self.warmed:
                # PageRank's module pulls in the tokenizer (a second of imports): warm it up while
                # the first files are being parsed, not when the bulk is done; a run with nothing
                # to parse (most `nsccn index` runs) never needs it.
                self.warmed = True
                threading.Thread(target=_warm_imports, daemon=True).start()
        elif isinstance(msg, BulkDone):
            if self.batch:
                self._flush()
            self.bulk_active = False
            self.bulk_gen = msg.generation
            self.log.info("bulk %d done: %d paths", msg.generation, msg.total)
            if self.session.needs_resolve and self.history_read is None:
                self._start_history()
        elif isinstance(msg, Hello):
            pass
        else:
            self.unexpected(msg)

    # -- committing --------------------------------------------------------------------------------

    def _ack(self, items: list[tuple[str, int]]) -> None:
        if items:
            self.send(self.to_watcher, Committed(items=items))

    def _flush(self) -> None:
        results = list(self.batch.values())
        self.batch = {}
        self.batch_lines = 0
        acks = []
        fresh = []
        for m in results:
            path = path_of(m)
            acks.append((path, m.seq))
            if m.seq < self.last_seq.get(path, 0):
                self.session.tally.duplicates += 1  # older than what we committed for this path
                continue
            fresh.append((path, m))
        changes = self.session.sort([m for _, m in fresh])
        to_write, to_delete = [], []
        if changes:
            to_write, to_delete = changes.write, changes.delete
            try:
                self._commit(changes)
            except Exception as exc:  # one bad file must not take the batch (or the actor) down
                if is_disk_full(exc):  # not the files' fault: keep them all, unacknowledged, and try again
                    for m in results:
                        key = path_of(m)
                        if key not in self.batch or self.batch[key].seq < m.seq:
                            self.batch[key] = m
                    self.batch_lines = sum(m.file.line_count for m in self.batch.values() if isinstance(m, Parsed))
                    self._note_full(exc, f"writing {len(to_write) + len(to_delete)} files")
                    return
                self.log.error("a batch of %d files failed (%s): committing them one by one", len(fresh), exc)
                ok_write, ok_delete = [], []
                for pf in to_write:
                    try:
                        self._commit(Changes(write=[pf]))
                        ok_write.append(pf)
                    except Exception as one:
                        if is_disk_full(one):
                            raise  # (the batch's results are acknowledged below: not for a full disk)
                        self._failed(pf.path, one)
                for path in to_delete:
                    try:
                        self._commit(Changes(delete=[path]))
                        ok_delete.append(path)
                    except Exception as one:
                        self._failed(path, one)
                try:
                    self._commit(Changes(touch=changes.touch))
                except Exception as one:
                    self.log.error("touching files failed: %s", one)
                to_write, to_delete = ok_write, ok_delete
            self.stats["batches"] += 1
            self.stats["last_commit"] = time.time()
        for path, m in fresh:
            self.last_seq[path] = m.seq
        self._ack(acks)
        if (to_write or to_delete) and self.ranks_due is not None:
            self.ranks_due = time.monotonic() + LIVE_RANKS_DELAY_S  # PageRank waits for a pause in the edits

    def _commit(self, changes: Changes) -> None:
        """One transaction (nsccn.indexing.index_session): the files, their deletions, the resolve marker,
        stale vectors; then the embedding sweep is to find the new rows."""
        max_rowid = self._count("SELECT COALESCE(MAX(rowid), 0) FROM entities")
        self.session.commit(changes, vectors=self.vs)
        if changes.write and self.spec.embed and self.sweep is None:
            # New rows get rowids above every existing one: the sweep from here finds them.
            self.sweep = max_rowid

    def _failed(self, path: str, exc: Exception) -> None:
        self.last_error = f"{path}: {type(exc).__name__}: {exc}"
        self.log.error("could not write %s: %s", path, exc)
        self.session.tally.skipped["write failed"] += 1

    def _resolve(self) -> None:
        """As the library indexer (nsccn.indexing.index_session): everything on a first build or after an
        interrupted one, the affected references otherwise; PageRank once enough changed, now
        for a bulk, off the loop once live edits pause."""
        full, paths = self.session.full, len(self.session.paths)
        with self.busy("resolving"):
            if _RESOLVE_DELAY:
                time.sleep(_RESOLVE_DELAY)
            try:  # a full pass in child processes (nsccn.indexing.resolve_partitions), a few files here
                self.session.resolve(parallel=True)
            except ResolveFailed as exc:
                if is_disk_full(exc):
                    raise  # rolled back, the marker kept: tried again when there is room (_guarded)
                # Rolled back: the old edges stay, and so does the marker. Ending here lets the
                # supervisor start a writer again, which resolves everything again.
                self.last_error = str(exc)
                self.log.error("%s; the index keeps its old edges and the next start resolves again", exc)
                raise ActorFailed(str(exc)) from None
            bulk = self.bulk_active or self.completed_gen != self.bulk_gen  # the bulk's ranks now
            if self.session.settle(self.bulk_files_seen, ranks_now=bulk):
                self.ranks_due = None if bulk else time.monotonic() + LIVE_RANKS_DELAY_S
        self.stats["resolves"] += 1
        if full:
            self.log.info("resolved everything")
        else:
            self.log.info("resolved affected refs (%d paths changed)", paths)

    def _start_ranks(self) -> None:
        """Live edits: read the graph and run PageRank in a thread on a read-only connection, so
        an edit that arrives meanwhile is committed at once; only the rows are written here."""

        def work() -> None:
            try:
                self.ranks_out = rank(self.spec.db_path)
            except Exception as exc:  # a failed refresh keeps the old ranks
                self.ranks_out = exc

        self.ranks_out = None
        self.ranks_job = threading.Thread(target=work, name="ranks", daemon=True)
        self.ranks_job.start()

    def _store_ranks(self) -> None:
        out, self.ranks_job, self.ranks_out = self.ranks_out, None, None
        if isinstance(out, Exception) or out is None:
            self.log.error("PageRank refresh failed: %r", out)
            return
        n = self.session.store_ranks(out)
        self.stats["ranks"] = self.stats.get("ranks", 0) + 1
        self.log.info("PageRank refreshed over %d entities", n)

    def _count(self, q: str) -> int:
        return int(self.store.conn.execute(q).fetchall()[0][0])

    # -- completion --------------------------------------------------------------------------------

    def _completion_due(self) -> bool:
        if self.bulk_active or self.bulk_gen < 0 or self.completed_gen == self.bulk_gen or self.session.needs_resolve:
            return False
        return not (self.spec.embed and (self.model is None or self._embedding()))

    def _maybe_complete(self) -> None:
        if not self._completion_due():
            return
        self.completed_gen = self.bulk_gen
        self._update_history()
        counts = self.store.counts()
        vectors = self.vs.count() if self.vs is not None else 0
        without = self._count(f"SELECT COUNT(*) FROM entities WHERE {_EMBEDDABLE}") - vectors if self.vs else 0
        self.send(
            self.to_super,
            IndexComplete(
                generation=self.bulk_gen,
                files=counts["files"],
                entities=counts["entities"],
                edges=counts["edges"],
                vectors=vectors,
                entities_without_vectors=max(0, without),
                counts=counts,
            ),
        )
        self.log.info("index complete: %s", counts)

    def _history_config(self):
        from nsccn.config import load_config

        try:
            config = load_config(Path(self.spec.root))
        except ValueError:
            return None
        return config if config.history else None

    def _start_history(self) -> None:
        """Let git read the history while this process resolves the bulk's references: resolution
        runs on one core, git (its own process) on the other."""
        from nsccn.reading.history import start_update

        config = self._history_config()
        if config is not None:
            self.history_read = start_update(self.store, Path(self.spec.root), max_commits=config.history_max_commits)

    def _update_history(self) -> None:
        """The repository's git history, as the library indexer keeps it (only new commits)."""
        from nsccn.reading.history import update_for_root

        finish, self.history_read = self.history_read, None
        config = self._history_config()
        if config is None:
            return
        with self.busy("reading git history"):
            if finish is not None:
                finish(self.store)
            else:
                update_for_root(self.store, Path(self.spec.root), max_commits=config.history_max_commits)
            if self.spec.embed:  # the messages' vectors: microseconds each, in this process
                from nsccn.vectors.commit_vectors import embed_commits

                embed_commits(self.store)

    def _phase(self) -> str:
        if self.disk_full is not None:
            return "disk full"
        if self.bulk_active:
            return "indexing"
        if self.session.needs_resolve:
            return "resolving"
        if self.spec.embed and self._embedding():
            return "embedding"
        return "idle"

    # -- embedding ---------------------------------------------------------------------------------

    def _set_model(self, info: ModelInfo) -> None:
        if self.model is not None and self.model.model_id == info.model_id and self.model.dim == info.dim:
            if info.pid != self.model.pid:  # a restarted embedder: what it held is lost
                for _, ids in self.outstanding.values():
                    self._mark_dirty(ids)
                self.outstanding.clear()
            self.model = info
            return
        from nsccn.vectors.table import VectorStore

        with self.busy("checking vectors"):
            self.vs = VectorStore(self.store.conn)
            remodeled = self.vs.ensure_model(info.model_id, info.dim)
            self.model = info
            with self.store.conn:
                self.store.set_meta("embedding_model", info.model_id)
                if info.info.get("fallback"):
                    self.store.set_meta("embedding_fallback", str(info.info.get("fallback_reason") or ""))
            # Vectors of entities that are gone; then a sweep over every entity.
            gone = [r[0] for r in self.store.conn.execute(
                "SELECT entity_id FROM vec_ids WHERE entity_id NOT IN (SELECT id FROM entities)").fetchall()]
            if gone:
                self.vs.delete(gone)
            self.dirty.clear()
            self.ready.clear()
            self.outstanding.clear()
            self.sweep = 0 if self.spec.embed else None
        self.log.info(
            "embedding model %s (dim %d)%s", info.model_id, info.dim, ", vectors of another model dropped" if remodeled else ""
        )

    def _load_local_model(self) -> None:
        """The static model, in this process: a job is embedded the moment it is made."""
        from nsccn.vectors.embed import ModelUnavailable, static_embedder

        with self.busy("loading model"):
            try:
                self.local_model = static_embedder()
            except ModelUnavailable as exc:  # (the supervisor checked the file; it changed since)
                self.last_error = f"no vectors: {exc}"
                self.log.error("no vectors: %s", exc)
                return
        self.stats["model"] = self.local_model.model_id
        self._use_local_model()

    def _use_local_model(self) -> None:
        m = self.local_model
        self._set_model(ModelInfo(model_id=m.model_id, dim=m.dim, max_chars=m.max_chars, pid=os.getpid(),
                                  info={"source": m.source}))

    def _embedding(self) -> bool:
        return bool(self.dirty or self.ready or self.outstanding or self.sweep is not None)

    def _mark_dirty(self, ids) -> None:
        if self.spec.embed:
            for eid in ids:
                self.dirty[eid] = None

    def _texts(self, ids: list[str]) -> dict[str, str]:
        """entity id -> the text to embed (as nsccn.vectors.semantic.wanted_texts), for existing ids."""
        from nsccn.vectors.semantic import texts_of_rows

        out = {}
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            q = f"SELECT {TEXT_COLUMNS} FROM entities WHERE id IN ({','.join('?' * len(chunk))}) AND {_EMBEDDABLE}"
            out.update(texts_of_rows(self.store.conn.execute(q, chunk).fetchall(), self.model.max_chars))
        return out

    def _sweep_texts(self, n: int) -> dict[str, str]:
        """Texts of the next `n` embeddable entities of the sweep; ends the sweep at the end."""
        rows = self.store.conn.execute(
            f"SELECT rowid, {TEXT_COLUMNS} FROM entities "
            f"WHERE rowid > ? AND {_EMBEDDABLE} ORDER BY rowid LIMIT ?",
            (self.sweep, n),
        ).fetchall()
        if not rows:
            self.sweep = None
            return {}
        self.sweep = rows[-1][0]
        self.swept += len(rows)
        from nsccn.vectors.semantic import texts_of_rows

        return texts_of_rows((r[1:] for r in rows), self.model.max_chars)

    def _dispatch_embeds(self) -> None:
        """Fill the embedder's window: check entities against the cache (which serves an
        unchanged text without the model), send the rest in jobs of `embed_batch`."""
        from nsccn.vectors.embed import text_hash

        batch = self.spec.embed_batch
        rounds = 0
        while len(self.outstanding) < self.spec.embed_window and rounds < 8:
            rounds += 1
            if len(self.ready) < batch:
                texts: dict[str, str] = {}
                if self.dirty:
                    ids = []
                    for eid in self.dirty:
                        ids.append(eid)
                        if len(ids) >= 512:
                            break
                    for eid in ids:
                        del self.dirty[eid]
                    texts = self._texts(ids)
                elif self.sweep is not None:
                    texts = self._sweep_texts(512)
                if texts:
                    wanted = {eid: text_hash(t) for eid, t in texts.items()}
                    todo = self.vs.fill_from_cache(wanted)
                    self.ready.extend(EmbedItem(eid, wanted[eid], texts[eid]) for eid in todo)
                if len(self.ready) < batch and (self.dirty or self.sweep is not None):
                    continue  # a job of `batch` is worth the wait of another look
            if not self.ready:
                break
            items, self.ready = self.ready[:batch], self.ready[batch:]
            self.job_seq += 1
            self.outstanding[self.job_seq] = (time.monotonic(), [it.entity_id for it in items])
            if self.local_model is not None:
                self._store_vectors(self._embed_here(self.job_seq, items))
            else:
                self.send(self.to_embedder, EmbedJob(job=self.job_seq, items=items))

    def _embed_here(self, job: int, items: list) -> Vectors:
        """A job embedded by the static model in this process, as the embedder would answer it."""
        import numpy as np

        m = self.local_model
        data = np.ascontiguousarray(m.embed_documents([it.text for it in items]), dtype=np.float32)
        self.stats["embedded"] = self.stats.get("embedded", 0) + len(items)
        return Vectors(job=job, model_id=m.model_id, dim=m.dim, ids=[it.entity_id for it in items],
                       hashes=[it.text_hash for it in items], data=data.tobytes())

    def _store_vectors(self, msg: Vectors) -> None:
        import numpy as np

        from nsccn.vectors.embed import text_hash

        entry = self.outstanding.pop(msg.job, None)
        if self.model is None or msg.model_id != self.model.model_id or msg.dim != self.model.dim:
            self.drop(f"vectors of model {msg.model_id}/{msg.dim}, the index holds {self.model and self.model.model_id}")
            return
        if msg.error:
            self.last_error = f"embedder: {msg.error}"
            self.log.error("embed job %d failed: %s", msg.job, msg.error)
            return  # not retried: the same texts would fail the same way
        try:
            data = np.frombuffer(msg.data, dtype=np.float32).reshape(len(msg.ids), msg.dim)
        except ValueError:
            self.drop(f"vectors of job {msg.job} have the wrong size")
            if entry:
                self._mark_dirty(entry[1])
            return
        current = {eid: text_hash(t) for eid, t in self._texts(list(msg.ids)).items()}
        keep = [(eid, h, data[i]) for i, (eid, h) in enumerate(zip(msg.ids, msg.hashes)) if current.get(eid) == h]
        if keep:
            self.vs.upsert(keep)
            self.stats["vectors_written"] += len(keep)

    # -- status ------------------------------------------------------------------------------------

    def _sweep_pending(self) -> int:
        """Entities the sweep has still to look at (counted every 2 s, less what it took since)."""
        if getattr(self, "sweep", None) is None:
            return 0
        left, at = self.sweep_left
        return max(1, left - (self.swept - at))

    def heartbeat_stats(self) -> dict:
        s = dict(self.stats)
        session = getattr(self, "session", None)  # (a heartbeat may come before the index is open)
        if session is not None:
            t = session.tally
            s.update(files_written=t.written, lines=t.lines, unchanged=t.unchanged, removed=t.removed,
                     duplicates=t.duplicates, skipped=dict(t.skipped), skipped_examples=dict(t.skipped_examples))
        else:
            s.update(skipped={}, skipped_examples={})
        s["batch"] = len(getattr(self, "batch", ()))
        s["embed_queue"] = len(getattr(self, "dirty", ())) + len(getattr(self, "ready", ()))
        s["sweep"] = getattr(self, "sweep", None)
        out = getattr(self, "outstanding", {})
        s["embed_outstanding"] = len(out)
        s["vectors_pending"] = (
            len(getattr(self, "dirty", ()))
            + len(getattr(self, "ready", ()))
            + sum(len(v[1]) for v in list(out.values()))
            + self._sweep_pending()
        )
        model = getattr(self, "model", None)
        s["model"] = model.model_id if model else None
        s["bulk_active"] = getattr(self, "bulk_active", False)
        return s


def _warm_imports() -> None:
    import nsccn.indexing.repomap  # noqa: F401


def main(argv=None) -> int:
    return actor_main(Writer, argv)


if __name__ == "__main__":
    raise SystemExit(main())
