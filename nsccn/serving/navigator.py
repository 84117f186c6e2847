"""The tools, as one class both front ends call: the CLI and the MCP server.

Every tool's method returns a typed answer (nsccn.serving.answers; `plain()` makes it JSON-able
data) or raises `NavigatorError` with a message an agent can act on (the valid range, the closest
ids). Nothing here prints.
"""

from __future__ import annotations

import difflib
import json
import time
from pathlib import Path

import msgspec

from nsccn.query import fusion

from nsccn.graph import trace as graph
from nsccn.config import Config, load_config, load_settings
from nsccn.serving.escape import one_line
from nsccn.model import split_entity_id
from nsccn.query import name_query
from nsccn.query.name_query import names_first
from nsccn.query.calibration import probabilities
from nsccn.query.query_analysis import analyze_query, capped_note
from nsccn.query.streams import bm25_stream
from nsccn.store import RESOLVE_PENDING, EntityRow, IndexMissing, IndexOutdated, Store
from nsccn.tokens import count_tokens, truncate_to_tokens
from nsccn.reading.repofile import PathOutsideRepository, UnreadableFile, repository_path, safe_path, stat_file
from nsccn.errors import ArgumentError, NavigatorError, NoIndex, said  # noqa: F401  (the Navigator's errors)
from nsccn.serving import params
from nsccn.serving.answers import (ContextAnswer, ImpactAnswer, LocalizeAnswer, LocalizedFunction, Reference,
                                   ReferencesAnswer, RepoMapAnswer, SearchAnswer, SkeletonAnswer, SymbolAnswer,
                                   TraceAnswer, WindowAnswer, entity, search_result)
from nsccn.vocab import MAX_LOCALIZE, MAX_SEARCH
from nsccn.serving.window import read_source, relocate, window_of_lines

# the note of an answer whose Python tests are the graph's alone (no `.coverage` at the root)
RECORD_COVERAGE = ("these tests are the graph's: with per-test coverage (`pytest --cov=PACKAGE --cov-context=test` leaves "
                   "`.coverage`) the next answer takes the tests that ran the changed lines (docs/impact.md)")


class Navigator:
    MAX_SEARCH = MAX_SEARCH  # results one search() lists at most
    MAX_LOCALIZE = MAX_LOCALIZE  # files and functions one localize() lists at most
    PROGRESS_STEPS = 10_000  # SQLite VM steps between two looks at the deadline (~0.1 ms of work)

    def __init__(self, root: str | Path, config: Config | None = None, db_path: str | Path | None = None):
        self.root = Path(root).resolve()
        self.config = config or load_config(self.root)
        self.db_path = Path(db_path) if db_path else self.config.db_path(self.root)
        self._store: Store | None = None
        self.embedder = None  # set by a front end that can embed queries
        # time.monotonic() after which SQLite work is interrupted (apsw.InterruptError): a front end
        # sets it around one call to give that call a time budget; None: no limit.
        self.deadline: float | None = None

    @property
    def store(self) -> Store:
        if self._store is None:
            try:
                self._store = Store(self.db_path, readonly=True)
            except (IndexMissing, IndexOutdated) as exc:  # none yet, not made by us, of another schema
                raise NoIndex(str(exc)) from exc
            except RuntimeError as exc:
                raise NavigatorError(str(exc)) from exc
            self._store.conn.set_progress_handler(self._past_deadline, self.PROGRESS_STEPS)
        return self._store

    def _past_deadline(self) -> bool:
        """SQLite's progress handler: True interrupts the running statement."""
        return self.deadline is not None and time.monotonic() > self.deadline

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    def _check(self, declared: tuple[params.Param, ...], **values) -> None:
        """The arguments against the tools' declarations (nsccn.serving.params): what the MCP
        server and the command line check, with the same messages."""
        params.check(declared, int(self.config.result_token_cap), **values)

    # -- lookups -----------------------------------------------------------------------------

    def entity(self, entity_id: str) -> EntityRow:
        if not isinstance(entity_id, str) or not entity_id.strip():
            raise NavigatorError("entity_id is empty; ids look like func:path/to/file.py:name")
        typed = entity_id.strip()
        found = name_query.resolve_entity(self.store, typed)  # the id, or any unambiguous name
        if len(found) > 1:
            raise NavigatorError(f"{said(typed)} names {len(found)} definitions: give one of their ids",
                                 [r.id for r in found[:10]])
        row = found[0] if found else None
        if row is None:
            building = ("; files are being written into the index now (or a run stopped before it was done: "
                        "`nsccn status`): it may not be indexed yet") if self.unresolved_note() else ""
            raise NavigatorError(f"unknown entity id {said(entity_id)}{building}", self.closest_ids(entity_id))
        return row

    def closest_ids(self, wrong: str, n: int = 5) -> list[str]:
        try:
            _, path, qualname = split_entity_id(wrong)
        except ValueError:
            path, qualname = "", wrong
        name = qualname.rsplit(".", 1)[-1].rsplit(":", 1)[-1]
        cands = {r.id for r in self.store.entities_named(name)}
        if path:
            cands |= {r.id for r in self.store.entities_in_file(path)}
        if not cands:
            terms = analyze_query(name).terms
            rows = self.store.entity_at_rowids(bm25_stream(self.store, terms, 20))
            cands = {r.id for r in rows.values()}
        starting = name_query.starting_with(self.store, wrong, n)  # what was typed, completed
        close = difflib.get_close_matches(wrong, sorted(cands - set(starting)), n=n, cutoff=0.0)
        return (starting + close)[:n]

    def _check_file(self, file_path: str) -> str:
        if not isinstance(file_path, str) or not file_path.strip():
            raise NavigatorError("file_path is empty; give a path relative to the repository")
        given = file_path.strip()
        try:  # absolute inside the repository, or climbing with `..` and staying inside it: as typed
            given = repository_path(self.root, given)
        except PathOutsideRepository as exc:
            raise NavigatorError(str(exc)) from exc
        # A backslash is part of a POSIX file name (`back\slash.py`); only when no such file is
        # indexed is it read as a Windows-style separator.
        candidates = [given] + ([given.replace("\\", "/")] if "\\" in given else [])
        first_error = None
        for cand in candidates:
            try:
                real = safe_path(self.root, cand)
            except PathOutsideRepository as exc:
                first_error = first_error or exc
                continue
            try:
                rel = real.relative_to(self.root).as_posix()
            except ValueError:
                continue
            if self.store.file(rel) is not None:
                return rel
            if self.store.file(cand) is not None:  # a symlink inside the repository: the indexed name
                return cand
        if first_error is not None and len(candidates) == 1:
            raise NavigatorError(str(first_error)) from first_error
        hits = difflib.get_close_matches(candidates[-1], self.store.file_paths(), n=5, cutoff=0.3)
        raise NavigatorError(f"{said(given)} is not an indexed file", hits)

    # -- the four tools of the specification ----------------------------------------------------

    def search(
        self, query: str, limit: int = 10, offset: int = 0, kinds: list[str] | None = None, diversity: float = 0.0
    ) -> SearchAnswer:
        self._check(params.SEARCH, query=query, limit=limit, offset=offset, kinds=kinds, diversity=diversity)
        from nsccn.query import search as search_mod  # numpy and the model: only for the queries that rank

        vectors, vectors_note = self.vectors()
        signals = self._signals(vectors)
        ranker, which = search_mod.ranking_for(self.db_path.parent, query)
        hits = search_mod.search(self.store, query, limit + offset, ranker, signals=signals,
                                 kinds=tuple(kinds) if kinds else None, embedder=self.embedder,
                                 rrf_k=self.config.rrf_k, diversity=float(diversity), use_vectors=vectors is not None)
        hits = probabilities(names_first(self.store, query, hits, limit + offset, tuple(kinds) if kinds else None))
        results = [search_result(h) for h in hits[offset : offset + limit]]
        more = f"call again with offset={offset + limit} for the next results" if len(hits) == limit + offset else None
        return SearchAnswer(query=query, results=results, signals=sorted(signals), ranking=which, vectors=vectors,
                            vectors_note=vectors_note, query_capped=capped_note(analyze_query(query)) or None,
                            more=more)

    def localize(self, report: str, limit: int = 10) -> LocalizeAnswer:
        """Where the fix for a bug report (or a task in words) most likely goes: files and
        functions, best first, by the ranking the localization benchmark measures as `default`:
        the learned ranker (`nsccn.ranking`) over every signal the index has, or the hand-tuned
        fusion (`fusion.localize`) when no usable model is there (the answer says which)."""
        self._check(params.LOCALIZE, report=report, limit=limit)
        from nsccn.query import search as search_mod  # numpy and the model: only for the queries that rank

        vectors, vectors_note = self.vectors()
        signals = self._signals(vectors)
        ranker, which = search_mod.ranking_for(self.db_path.parent)
        loc = search_mod.localize(self.store, report, limit, ranker, signals=signals, embedder=self.embedder,
                                  rrf_k=self.config.rrf_k, use_vectors=vectors is not None)
        rows = self.store.entities(loc.functions)
        scores = loc.function_scores  # the probability that the fix changes it, where the model scored it
        functions = [LocalizedFunction(id=r.id, kind=r.kind, file=r.path, line=r.start_line, end_line=r.end_line,
                                       signature=r.signature, score=round(scores[f], 4) if f in scores else None)
                     for f, r in ((f, rows[f]) for f in loc.functions if f in rows)]
        return LocalizeAnswer(files=loc.files, functions=functions,
                              signals=sorted(signals), ranking=which, vectors=vectors, seconds=round(loc.seconds, 3),
                              vectors_note=vectors_note, query_capped=capped_note(analyze_query(report)) or None)

    def train_ranker(self, commits: int = 300, rounds: int = 60, reset: bool = False, progress=None,
                     force: bool = False) -> dict:
        """Adapt the ranker to this repository: its own fix commits as training queries, boosted
        on top of the shipped model; written beside the index, used by localize and search from
        then on, when it ranks the newest fixes (held back) better than the shipped model does
        (`force`: written all the same). `reset` removes the repository's model (back to the shipped one)."""
        from nsccn import ranking
        from nsccn.reading import history
        from nsccn.ranking.adapt import adapt, own_history_records

        target = self.db_path.parent / ranking.USER_MODEL_NAME
        if reset:
            existed = target.exists()
            target.unlink(missing_ok=True)
            return {"model": None, "removed": str(target) if existed else None,
                    "ranking": ranking.active_ranker(self.db_path.parent)[1]}
        self._check(params.TRAIN_RANKER, commits=commits, rounds=rounds)
        if history.commit_count(self.store) == 0:
            raise NavigatorError("the index holds no git history: index a git work tree (`nsccn index`) first")
        try:
            base = ranking.load_ranker(ranking.SHIPPED_MODEL)
        except ranking.RankerError as exc:
            raise NavigatorError(f"no base model to adapt: {exc}") from exc
        records = own_history_records(self.store, commits, progress=progress)
        usable = [r for r in records if any(r["file_labels"]) and any(r["function_labels"])]
        if len(usable) < 10:
            raise NavigatorError(f"only {len(usable)} usable fix commits in the indexed history (10 needed): "
                                 "the shipped model stays in use")
        # Measured before it is used: adapted on the older fixes, both models ranked the newest ones.
        held = usable[: max(3, len(usable) // 5)]
        trial = adapt(base, usable[len(held):], rounds=rounds)
        measured = {"held_back_fixes": len(held), "trained_on": len(usable) - len(held),
                    "shipped": held_back_accuracy(base, held), "adapted": held_back_accuracy(trial, held)}
        out = {"queries": len(usable), "fix_commits_read": len(records), "rounds": rounds, "measured": measured}
        if sum(measured["adapted"].values()) <= sum(measured["shipped"].values()) and not force:
            return {"model": None, **out, "ranking": ranking.active_ranker(self.db_path.parent)[1],
                    "note": f"the adapted model ranks the {len(held)} newest fixes no better than the shipped one: "
                            "nothing written, the model in use stays"}
        ranking.save_ranker(adapt(base, usable, rounds=rounds), target)  # then on every fix
        return {"model": str(target), **out, "ranking": ranking.active_ranker(self.db_path.parent)[1],
                "note": "trained against the current code (after those fixes): held-back numbers are optimistic"}

    def _signals(self, vectors: str | None = "") -> frozenset[str]:
        """Every ranking signal, less the vectors while the index has none (or their model cannot
        embed a query here). `vectors`: what `vectors()` said, when the caller asked already."""
        if vectors == "":
            vectors = self.vectors()[0]
        return fusion.ALL_SIGNALS if vectors is not None else fusion.ALL_SIGNALS - {"vector"}

    def vectors(self) -> tuple[str | None, str | None]:
        """(the model whose vectors answer queries, None when none do; a note saying why not)."""
        if not self._has_vectors():
            return None, ("the index has no vectors (`nsccn index --no-embed`, or a build still running): "
                          "lexical and graph signals only")
        from nsccn.vectors.embed import STATIC_MODEL, ModelUnavailable, static_embedder
        from nsccn.vectors.static_file import retired_static_model
        from nsccn.vectors.table import VectorStore

        model_id = VectorStore(self.store.conn).model_id
        if retired_static_model(model_id):
            return None, (f"the index's vectors were made by {model_id}, which this version of nsccn replaced with "
                          f"{STATIC_MODEL}: run `nsccn index` to embed them again; lexical and graph signals only")
        if model_id == STATIC_MODEL and self.embedder is None:
            try:
                static_embedder()
            except ModelUnavailable as exc:
                return None, f"the index's vectors are not used: {exc}; lexical and graph signals only"
        return model_id, None

    def _has_vectors(self) -> bool:
        try:
            from nsccn.vectors import semantic

            return semantic.has_vectors(self.store)
        except ImportError:
            return False

    def skeleton(self, file_path: str, tokens: bool = True) -> SkeletonAnswer:
        """The file's skeleton; `tokens`: with its token count and the source's (loading the
        tokenizer costs about a second, which a CLI call that does not show them skips)."""
        rel = self._check_file(file_path)
        skel, indexed_hash = self.store.skeleton(rel)
        try:
            data, disk_hash = read_source(self.root, rel, self.config.max_file_size)
        except UnreadableFile as exc:
            if exc.reason != "missing":  # a FIFO, a device, a symlink out now: say so, read nothing
                raise NavigatorError(f"{exc}: it is indexed, but cannot be read now; re-index") from None
            data, disk_hash = b"", None
        stale = None
        if disk_hash is None:
            stale = f"{rel} is no longer on disk: this is the skeleton of the indexed version; re-index"
        elif disk_hash != indexed_hash:  # the file as it is now (re-parsed on the spot), not as it was
            from nsccn.reading.extract import parse_file  # tree-sitter: only for a file changed since indexed

            skel = parse_file(rel, data).skeleton
            stale = (f"{rel} changed since it was indexed: this skeleton is of the current file, re-parsed; "
                     "its entity ids are the indexed ones until it is re-indexed")
        out = SkeletonAnswer(file=rel, skeleton=skel, entities=[e.id for e in self.store.entities_in_file(rel)],
                             stale=stale)
        if tokens:
            out.source_tokens = count_tokens(data.decode("utf-8", "replace"))
            out.tokens = count_tokens(skel)
            out.reduction = round(1 - out.tokens / out.source_tokens, 3) if out.source_tokens else 0.0
        return out

    def trace(
        self,
        entity_id: str,
        direction: str = "downstream",
        depth: int = 3,
        relations: list[str] | None = None,
        min_confidence: float = 0.0,
    ) -> TraceAnswer:
        self._check(params.TRACE, direction=direction, depth=depth, relations=relations, min_confidence=min_confidence)
        row = self.entity(entity_id)
        try:
            traced = graph.trace(self.store, row.id, direction, depth, relations, min_confidence)
        except ValueError as exc:
            raise NavigatorError(str(exc)) from exc
        out = msgspec.convert(traced, TraceAnswer)  # (a shape the type does not declare: an error of ours)
        out.stale = self.stale_note(node.file for node in out.entities.values() if node.file is not None)
        return self._with_unresolved(out)

    def window(self, entity_id: str, context_lines: int = 5) -> WindowAnswer:
        self._check(params.WINDOW, context_lines=context_lines)
        row = self.entity(entity_id)
        data, digest = self._read_indexed(row.path)
        start, end = row.start_line, row.end_line
        stale = None
        indexed = self.store.file(row.path)
        if indexed is not None and indexed["content_hash"] != digest:
            # The lines moved (or the entity went): find it in the file as it is now.
            now = relocate(row.path, data, row.id, row.start_line)
            if now is None:
                raise NavigatorError(f"{row.path} changed since it was indexed and no longer defines {row.id}; "
                                     "re-index (`nsccn index`) or search again for its new name")
            start, end = now.start_line, now.end_line
            moved = "" if (start, end) == (row.start_line, row.end_line) else \
                f"; it is at lines {start}-{end} now (indexed at {row.start_line}-{row.end_line})"
            stale = (f"{row.path} changed since it was indexed: these are its current lines, found by re-parsing it"
                     f"{moved}; re-index for the graph to follow")
        lines = data.decode("utf-8", "replace").splitlines()
        return WindowAnswer(entity_id=row.id, **window_of_lines(lines, row.path, start, end, context_lines), stale=stale)

    def _read_indexed(self, rel: str) -> tuple[bytes, str]:
        """(bytes, hash) of an indexed file as it is on disk now, or a NavigatorError saying why not."""
        try:
            return read_source(self.root, rel, self.config.max_file_size)
        except UnreadableFile as exc:
            if exc.reason in ("missing", "directory"):
                raise NavigatorError(f"{rel} is indexed but no longer on disk; re-index") from None
            raise NavigatorError(f"{exc}: it is indexed, but cannot be read now; re-index") from None

    def changed_files(self, paths, limit: int = 200) -> list[str]:
        """Which of these indexed files (the first `limit`) differ on disk (size or mtime) from the
        index, or are gone or no longer a regular file inside the repository."""
        changed = []
        for p in list(dict.fromkeys(paths))[:limit]:
            row = self.store.file(p)
            if row is None:
                continue
            try:
                st = stat_file(self.root, p)
            except UnreadableFile:
                changed.append(p)
                continue
            if st.st_size != row["size"] or st.st_mtime != row["mtime"]:
                changed.append(p)
        return changed

    def unresolved_note(self) -> str | None:
        """A line saying the graph is behind the files, or None: files were written whose references
        are not resolved yet (a build or an edit being resolved now, or an index run that stopped
        before resolving). Answers built from edges carry it, so that no edge is not read as none."""
        store = self.store
        if store.get_meta(RESOLVE_PENDING) != "1":
            return None
        if store.conn.execute("SELECT 1 FROM edges LIMIT 1").fetchone() is None:
            return ("no reference of this index is resolved yet (its first build is resolving them, or stopped "
                    "before it could): there are no edges, so an empty answer means unknown, not none; "
                    "`nsccn status` says when the index is complete")
        return ("files were written since their references were last resolved (they are being resolved now, or an "
                "index run stopped first: the next `nsccn index` resolves them): edges may be missing or out of date")

    def _with_unresolved(self, out):
        """The answer, with its `unresolved` note when the graph is behind the files."""
        out.unresolved = self.unresolved_note()
        return out

    def stale_note(self, paths) -> str | None:
        """A line naming which of these indexed files changed on disk (size or mtime) since they
        were indexed, or None: for answers built from the index (search, trace)."""
        changed = self.changed_files(paths)
        if not changed:
            return None
        return (f"{len(changed)} file(s) in this answer changed on disk since they were indexed "
                f"({', '.join(changed[:5])}{', ...' if len(changed) > 5 else ''}); lines and edges may be off "
                "until they are re-indexed (`nsccn index`, or the watcher under `nsccn serve`)")

    # -- beyond the specification ---------------------------------------------------------------

    def find_symbol(self, name: str, limit: int = 20) -> SymbolAnswer:
        self._check(params.SYMBOL, name=name, limit=limit)
        name = name.strip()
        parts = name_query.name_parts(name)  # bare, qualified, dotted, `Foo::bar`, re-exported: best first
        rows = name_query.definitions(self.store, parts) if parts else self.store.entities_named(name)
        if not rows:
            names = [n for (n,) in self.store.conn.execute("SELECT DISTINCT name FROM entities")]
            close = difflib.get_close_matches(name.rsplit(".", 1)[-1], names, n=5, cutoff=0.6)
            raise NavigatorError(f"no definition named {said(name)}", close)
        return SymbolAnswer(name=name, definitions=[entity(r) for r in rows[:limit]], total=len(rows))

    def find_references(self, entity_id: str, limit: int = params.named(params.REFERENCES, "limit").default,
                        offset: int = 0) -> ReferencesAnswer:
        self._check(params.REFERENCES, limit=limit, offset=offset)
        row = self.entity(entity_id)
        edges = [e for e in self.store.edges_to(row.id) if e.relation != "CONTAINS"]
        edges.sort(key=lambda e: (-e.confidence, e.path, e.line))
        refs = [Reference(from_=e.source, relation=e.relation, file=e.path, line=e.line,
                          confidence=round(e.confidence, 3), resolution=e.resolution)
                for e in edges[offset : offset + limit]]
        out = ReferencesAnswer(entity_id=row.id, references=refs, total=len(edges))
        if len(edges) > offset + limit:
            out.more = f"{len(edges) - offset - limit} more; raise limit (at most {params.MAX_REFS_LIMIT}) or offset"
        return self._with_unresolved(out)

    def impact(self, staged: bool = False, base: str | None = None, commit: str | None = None,
               diff: str | None = None, depth: int = 3, min_confidence: float = 0.0,
               test_depth: int | None = None, wide: bool = False, coverage: str | None = None) -> ImpactAnswer:
        """What a change touches, what depends on it and which tests reach it (`nsccn.graph.impact`): the
        working tree against HEAD, or the staged changes, or since `base`, or one `commit`, or a diff."""
        from nsccn.reading import changes
        from nsccn.graph import impact

        given = [name for name, v in (("staged", staged), ("base", base), ("commit", commit), ("diff", diff))
                 if v not in (None, False)]
        if len(given) > 1:
            raise NavigatorError(f"give one change at a time, not {' and '.join(given)}")
        test_depth = impact.TEST_DEPTH if test_depth is None else test_depth
        self._check(params.IMPACT, depth=depth, test_depth=test_depth, min_confidence=min_confidence)
        store = self.store  # no index: say so before reading any change
        if diff is not None:
            change = changes.from_text(self.root, diff, self.config.max_file_size)
        else:
            skip = [".nsccn/"]
            try:
                skip.append(self.db_path.parent.resolve().relative_to(self.root).as_posix() + "/")
            except ValueError:
                pass  # an index outside the tree
            change = changes.from_git(self.root, staged=bool(staged), base=base, commit=commit,
                                      max_size=self.config.max_file_size, skip=tuple(skip))
        used, note = self._recorded_coverage(store, coverage)
        out = msgspec.convert(impact.analyze(store, self.root, change, depth, float(min_confidence), test_depth,
                                             bool(wide), used), ImpactAnswer)
        if note is None and used is None and coverage is None \
                and any(t.file.endswith(".py") for t in (*out.tests, *out.module_tests, *out.test_files)):
            note = RECORD_COVERAGE  # Python tests from the graph alone: say how to narrow them
        if note:
            out.notes = [*(out.notes or []), note]
        out.stale = self.stale_note([x.file for x in out.impacted if x.file is not None] + [t.file for t in out.tests])
        return self._with_unresolved(out)

    def _recorded_coverage(self, store, coverage: str | None):
        """(the per-test coverage to select with, or None; a note on why not, where one was asked for
        or is there but cannot be used)."""
        from nsccn.graph import recorded
        from nsccn.reading import changes

        if coverage is not None and coverage.strip().lower() == "off":
            return None, None
        path = None
        if coverage is not None:
            given = Path(coverage)
            path = (given if given.is_absolute() else self.root / given).resolve()
            if not path.is_relative_to(self.root):
                raise NavigatorError(f"coverage {said(coverage)} is outside the repository")
        rel = (path or self.root / recorded.DEFAULT_FILE).relative_to(self.root).as_posix()
        if (path or self.root / recorded.DEFAULT_FILE).is_file() and changes.tracked(self.root, rel):
            # a data file the repository carries: it describes code someone else ran, not this tree
            return None, f"{rel} is committed to the repository: per-test coverage not used (record your own)"
        return recorded.recorded(store, self.root, path,
                                 lambda p: changes.head_copy(self.root, p, self.config.max_file_size))

    def repo_map(self, max_tokens: int = 1024, focus: list[str] | None = None) -> RepoMapAnswer:
        self._check(params.REPO_MAP, max_tokens=max_tokens)
        try:
            from nsccn.indexing.repomap import repo_map  # numpy: loaded by the commands that need it

            mapped = repo_map(self.store, max_tokens, focus)
        except ValueError as exc:
            raise NavigatorError(str(exc)) from exc
        return self._with_unresolved(msgspec.convert(mapped, RepoMapAnswer))

    def assemble_context(self, query: str, max_tokens: int = 8000) -> ContextAnswer:
        """The best entities' code, their neighbours' signatures and a map slice, within max_tokens."""
        self._check(params.CONTEXT, query=query, max_tokens=max_tokens)
        found = self.search(query, limit=10).results
        parts: list[str] = []
        used = 0
        included: list[str] = []

        def add(text: str) -> bool:
            nonlocal used
            cost = count_tokens(text)
            if used + cost > max_tokens:
                return False
            parts.append(text)
            used += cost
            return True

        budget_code = int(max_tokens * 0.7)
        for hit in found:
            if used >= budget_code:
                break
            try:
                w = self.window(hit.id, context_lines=2)
            except NavigatorError:
                continue
            block = f"## {one_line(hit.id)}\n{w.code}"
            if used + count_tokens(block) > budget_code:
                block, _ = truncate_to_tokens(block, budget_code - used)
                if block.count("\n") < 4:
                    continue
            if add(block):
                included.append(hit.id)
        neighbours: list[str] = []
        for eid in included[:5]:
            for e in self.store.edges_from(eid, ("CALLS",)) + self.store.edges_to(eid, ("CALLS",)):
                other = e.target if e.source == eid else e.source
                if other not in included and other not in neighbours and not other.startswith("ext:"):
                    neighbours.append(other)
        rows = self.store.entities(neighbours[:40])
        sig_lines = [f"{one_line(rows[n].path)}:{rows[n].start_line}  {one_line(rows[n].signature)}" for n in neighbours[:40] if n in rows]
        if sig_lines:
            block, _ = truncate_to_tokens("## callers and callees\n" + "\n".join(sig_lines) + "\n", max(0, max_tokens - used - 10))
            if block:
                add(block)
        remaining = max_tokens - used
        if remaining > 150:
            files = list(dict.fromkeys(h.file for h in found))[:5]
            from nsccn.indexing.repomap import repo_map

            m = repo_map(self.store, max_tokens=max(64, remaining - 20), focus=files) if files else None
            if m and m["map"]:
                add("## repository map (focused)\n" + m["map"])
        text = "\n".join(parts)
        return self._with_unresolved(ContextAnswer(query=query, context=text, tokens=count_tokens(text),
                                                   max_tokens=max_tokens, entities=included))

    def disk_note(self) -> str | None:
        """'disk full' while the index's file system has no room: every answer carries it."""
        from nsccn.store import disk_note

        return disk_note(self.db_path.parent)

    def status(self) -> dict:
        try:
            store = self.store
        except NavigatorError as exc:
            return {"root": str(self.root), "index": str(self.db_path), "indexed": False, "why": exc.message,
                    "configuration": self.configuration()}
        counts = store.counts()
        last = store.get_meta("last_indexed")
        stale = self._staleness(store)
        out = {
            "root": str(self.root),
            "index": str(self.db_path),
            "indexed": True,
            **counts,
            "last_indexed": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(last))) if last else None,
            "stale_files": stale,
        }
        if counts.get("files_with_syntax_errors"):
            out["syntax_errors"] = self.syntax_errors(5)
        unresolved = self.unresolved_note()
        if unresolved:
            out["unresolved"] = unresolved
        try:
            from nsccn.vectors import semantic

            out["vectors"] = semantic.vector_status(store)
        except ImportError:
            pass
        from nsccn import ranking
        from nsccn.reading import history

        out["history_commits"] = history.commit_count(store)
        from nsccn.vectors.commit_vectors import commit_vector_count

        # messages with the static model's vectors: the ranker's semantic similar past fixes
        out["history_commit_vectors"] = commit_vector_count(store)
        out["ranking"] = ranking.active_ranker(self.db_path.parent)[1]
        out["configuration"] = self.configuration()
        return out

    def syntax_errors(self, limit: int | None = None) -> list[str]:
        """`path: line N, ...` of the indexed files whose parse found syntax errors (their other
        definitions are indexed all the same), in path order; `limit`: the first so many."""
        rows = self.store.conn.execute(
            "SELECT path, error_lines FROM files WHERE error_lines != '[]' ORDER BY path"
            + (f" LIMIT {int(limit)}" if limit else ""))
        out = []
        for path, lines in rows:
            lines = json.loads(lines)
            out.append(f"{path}: line{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines[:5]))}"
                       + (", ..." if len(lines) > 5 else ""))
        return out

    def configuration(self) -> dict:
        """Which file (or variable) each setting came from, and what the repository may not set."""
        try:
            return load_settings(self.root).describe()
        except ValueError as exc:
            return {"error": str(exc)}

    def staleness(self, limit: int = 20) -> dict:
        return self._staleness(self.store, limit)

    def _staleness(self, store: Store, limit: int = 20) -> dict:
        """Files whose size or mtime on disk differs from the index (cheap: no hashing)."""
        changed, missing = [], []
        for path, (_h, size, mtime) in store.file_states().items():
            try:
                st = stat_file(self.root, path)
            except UnreadableFile:  # gone, or no longer a regular file inside the repository
                missing.append(path)
                continue
            if st.st_size != size or st.st_mtime != mtime:
                changed.append(path)
        return {"changed": len(changed), "deleted": len(missing), "examples": (changed + missing)[:limit]}


def held_back_accuracy(model, records: list[dict]) -> dict[str, float]:
    """file@1, file@5, function@1 and function@5 (percent: a fix with any of its files or
    functions within the first k) of `model` on recorded fix commits (`nsccn.ranking.adapt`)."""
    from nsccn.ranking.train import rerank

    hits = {"file@1": 0, "file@5": 0, "function@1": 0, "function@5": 0}
    for rec in records:
        files, functions = rerank(model, rec)
        gold_files = {f for f, label in zip(rec["files"], rec["file_labels"]) if label}
        gold_fns = {f for f, label in zip(rec["functions"], rec["function_labels"]) if label}
        for k in (1, 5):
            hits[f"file@{k}"] += bool(gold_files & set(files[:k]))
            hits[f"function@{k}"] += bool(gold_fns & set(functions[:k]))
    return {key: round(100 * n / max(1, len(records)), 1) for key, n in hits.items()}
