#!/usr/bin/env python
"""Localization benchmark: rank files and functions for real bug reports, score against the fix.

    python benchmarks/localize.py --dataset FILE --mirrors DIR [--repo OWNER/NAME] [--limit N]
        [--configs a,b,...] --out OUTDIR [--workdir DIR]

FILE has the format of ../shared/bench/swebench-dev.jsonl (see its README). DIR holds one bare
clone with full history per repository, `DIR/{owner}+{name}/repo`.

For each repository, the instances are taken in order of their base commit's committer date
(ties in dataset order). The dataset's own order is arbitrary, so following it would jump back
and forth over years of history and every step would rewrite hundreds of files; walking history
forward makes each step a small diff, which is both the realistic case (a checkout moving forward)
and a test of incremental indexing. For each instance:

1. the source tree at `base_commit` is materialized in WORKDIR/{owner}+{name}/tree (only *.py),
   the first time from `git archive`, afterwards by applying `git diff --name-status` from the
   previous instance's commit (see `materialize_tree`);
2. the index WORKDIR/{owner}+{name}/index.db is updated by `nsccn.indexing.indexer.index_repository`
   (incremental: unchanged files are skipped) and the update is timed;
3. `nsccn.query.fusion.localize` is queried with `problem_statement` once per configuration
   (a set of retrieval signals) and each query is timed;
4. the rankings are scored against `gold_files` / `gold_functions`.

Metrics (../shared/bench/README.md; LocAgent / SweRank): Acc@k = share of instances whose gold
locations all appear in the top k.
- file Acc@1/3/5 over all instances;
- module Acc@5/10: a module is `path:` + the first component of the qualname (the class, or the
  file-level function); ranked functions are deduplicated into modules in rank order;
- function Acc@5/10: when an instance has more than k gold functions, the first k (in the
  dataset's order) must all be in the top k.
Module and function levels are averaged over the instances that have at least one gold function
(a fix that touches only module-level code has none); the denominators are reported.

Outputs: OUTDIR/rankings.jsonl (one line per instance and configuration), OUTDIR/metrics.json,
OUTDIR/metrics.png (if matplotlib is installed) and a markdown table on stdout. Progress goes to
stderr, one line per instance.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from contextlib import contextmanager, nullcontext
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, is_dataclass
from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parent.parent
if str(_ROOT) not in sys.path:  # `python benchmarks/localize.py` from a checkout: find `nsccn`
    sys.path.insert(0, str(_ROOT))

# --------------------------------------------------------------------------------------------
# Configurations

SIGNALS = ("bm25", "vector", "query_analysis", "graph", "prior")

CONFIGS: dict[str, frozenset[str]] = {
    "bm25": frozenset({"bm25"}),
    "vector": frozenset({"vector"}),
    "rrf": frozenset({"bm25", "vector"}),
    "rrf+qa": frozenset({"bm25", "vector", "query_analysis"}),
    "rrf+qa+graph": frozenset({"bm25", "vector", "query_analysis", "graph"}),
    "full": frozenset({"bm25", "vector", "query_analysis", "graph", "prior"}),
    # The vector stream alone and the fusion `nsccn search` runs, each reading the static stream
    # without the candidates' names (`static_embed.NAME_WEIGHT` 0: the stream of stop 67).
    "vector-no-names": frozenset({"vector", "no-names"}),
    "full-no-names": frozenset({"bm25", "vector", "query_analysis", "graph", "prior", "no-names"}),
    # Lexical-only ablations: no vectors needed in the index.
    "bm25+qa": frozenset({"bm25", "query_analysis"}),
    "bm25+qa+graph": frozenset({"bm25", "query_analysis", "graph"}),
    "lexical-full": frozenset({"bm25", "query_analysis", "graph", "prior"}),
    # What `nsccn localize` runs: the learned ranker over every signal the index has (the index is
    # built as `nsccn index` builds it by default: with the static model's vectors).
    "default": frozenset({"bm25", "query_analysis", "graph", "prior", "learned"}),
    # The same ranker told not to read the index's vectors: what the vectors add, in one run.
    "default-lexical": frozenset({"bm25", "query_analysis", "graph", "prior", "learned", "no-vectors"}),
    # The same ranker reading the static stream without its second stage (`semantic.RERANK_DEPTH`
    # 0): what the late interaction adds, in one run.
    "default-one-stage": frozenset({"bm25", "query_analysis", "graph", "prior", "learned", "one-stage"}),
    # The same ranker reading the static stream whose second stage does not read its first files
    # whole (`semantic.EXPAND_FILES` 0: the stream of stop 66): what that adds, in one run.
    "default-no-expand": frozenset({"bm25", "query_analysis", "graph", "prior", "learned", "no-expand"}),
    # The same ranker reading the static stream whose second stage reads the candidates' names too
    # (`ranking.STREAM_NAMES`: the shipped ranker learned the stream without them), in one run.
    "default-names": frozenset({"bm25", "query_analysis", "graph", "prior", "learned", "names"}),
    # The same ranker reading the static stream with a report's first line counted once, as the rest
    # (`static_embed.TITLE_REPEAT` 0): what the title's weight adds, in one run.
    "default-no-title": frozenset({"bm25", "query_analysis", "graph", "prior", "learned", "no-title"}),
    # The same ranker reading the static stream whose first TRANSFORMER_RERANK entities (after its
    # second stage) the bundled transformer orders again (`transformer_rerank`): what a transformer
    # re-ranker of the stream's top would give users, in one run.
    "default-transformer-rerank": frozenset({"bm25", "query_analysis", "graph", "prior", "learned",
                                             "transformer-rerank"}),
    # The same two with --candidate-model's ranker instead of the shipped one: a new model beside
    # the shipped one on the same indexes, in one run.
    "candidate": frozenset({"bm25", "query_analysis", "graph", "prior", "learned", "candidate"}),
    "candidate-lexical": frozenset({"bm25", "query_analysis", "graph", "prior", "learned", "no-vectors",
                                    "candidate"}),
}

FILE_KS = (1, 3, 5)
MODULE_KS = (5, 10)
FUNCTION_KS = (5, 10)
METRIC_NAMES = (
    [f"file@{k}" for k in FILE_KS]
    + [f"module@{k}" for k in MODULE_KS]
    + [f"function@{k}" for k in FUNCTION_KS]
)
TOP_N = 50  # how many files / functions are asked for and kept in rankings.jsonl
# Published reference points on the full SWE-bench Lite (SweRank, Table 1), drawn on the plot.
REFERENCES = {
    "BM25": {"file@1": 38.7, "file@3": 51.8, "file@5": 61.7, "function@5": 31.8, "function@10": 36.9},
    "CodeRankEmbed": {"file@1": 52.6, "file@3": 77.7, "file@5": 84.7, "function@5": 51.8, "function@10": 58.8},
    "SweRankEmbed-Small": {"file@1": 66.4, "file@3": 86.5, "file@5": 90.9, "function@5": 63.1,
                           "function@10": 74.5},
}
SOURCE_PATHSPEC = ":(glob)**/*.py"  # what is materialized and indexed
WARMUP_QUERY = "warm-up query: load the models and open the index before timing"

# --------------------------------------------------------------------------------------------
# Metrics


def _split_loc(loc: str) -> tuple[str, str]:
    """`path:qualname` -> (path, qualname). The qualname never holds ':'; a path might."""
    path, sep, qual = loc.rpartition(":")
    if not sep or not path or not qual:
        raise ValueError(f"not a location (expected path:qualname): {loc!r}")
    return path, qual


def entity_to_loc(entity_id: str) -> str | None:
    """`kind:path:qualname` -> `path:qualname`, the form of gold_functions.

    Module entities are not locations at function level and give None.
    """
    kind, sep, rest = entity_id.partition(":")
    if not sep:
        raise ValueError(f"not an entity id (expected kind:path:qualname): {entity_id!r}")
    if kind == "module":
        return None
    path, qual = _split_loc(rest)
    return f"{path}:{qual}"


def module_of(loc: str) -> str:
    """`path:Class.method` -> `path:Class`; `path:func` -> `path:func`."""
    path, qual = _split_loc(loc)
    return f"{path}:{qual.split('.', 1)[0]}"


def dedup(items: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for item in items:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out


def ranked_locs(function_ids: Iterable[str]) -> list[str]:
    """Entity ids in rank order -> `path:qualname` in rank order (modules dropped, deduplicated)."""
    return dedup(loc for loc in map(entity_to_loc, function_ids) if loc is not None)


def ranked_modules(locs: Iterable[str]) -> list[str]:
    """Ranked functions -> ranked modules: each module at the rank of its best function."""
    return dedup(module_of(loc) for loc in locs)


def all_in_top_k(gold: Sequence[str], ranked: Sequence[str], k: int) -> bool:
    """Every gold item is among the first k ranked ones."""
    top = set(ranked[:k])
    return all(g in top for g in gold)


def function_hit(gold: Sequence[str], ranked: Sequence[str], k: int) -> bool:
    """Function-level Acc@k for one instance: with more than k gold functions, the first k count."""
    gold = dedup(gold)
    return all_in_top_k(gold[:k], ranked, k)


def instance_metrics(gold_files: Sequence[str], gold_functions: Sequence[str],
                     files: Sequence[str], function_ids: Sequence[str]) -> dict[str, int | None]:
    """1/0 per metric for one instance; None for module/function metrics without gold functions."""
    out: dict[str, int | None] = {}
    files = dedup(files)
    gold_files = dedup(gold_files)
    for k in FILE_KS:
        out[f"file@{k}"] = int(all_in_top_k(gold_files, files, k))
    locs = ranked_locs(function_ids)
    mods = ranked_modules(locs)
    gold_functions = dedup(gold_functions)
    gold_modules = ranked_modules(gold_functions)
    for k in MODULE_KS:
        out[f"module@{k}"] = int(all_in_top_k(gold_modules, mods, k)) if gold_modules else None
    for k in FUNCTION_KS:
        out[f"function@{k}"] = int(function_hit(gold_functions, locs, k)) if gold_functions else None
    return out


def aggregate(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per-instance records (with "metrics", "query_s", "index_s") -> percentages and means.

    A metric is averaged over the records where it is not None; its denominator is `n_<level>`.
    `index_s` of a repository's first instance (a full build) is left out of `index_update_s_*`
    (records mark it with `index_full`) and reported as `index_build_s_mean`.
    """
    out: dict[str, Any] = {"n": len(records)}
    for name in METRIC_NAMES:
        vals = [r["metrics"][name] for r in records if r["metrics"].get(name) is not None]
        out[name] = round(100.0 * sum(vals) / len(vals), 1) if vals else None
    out["n_file"] = sum(1 for r in records if r["metrics"].get("file@1") is not None)
    out["n_module"] = sum(1 for r in records if r["metrics"].get(f"module@{MODULE_KS[0]}") is not None)
    out["n_function"] = sum(1 for r in records if r["metrics"].get(f"function@{FUNCTION_KS[0]}") is not None)
    qs = [r["query_s"] for r in records if r.get("query_s") is not None]
    out["query_ms_mean"] = round(1000 * statistics.fmean(qs), 1) if qs else None
    out["query_ms_p50"] = round(1000 * statistics.median(qs), 1) if qs else None
    ups = [r["index_s"] for r in records if r.get("index_s") is not None and not r.get("index_full")]
    builds = [r["index_s"] for r in records if r.get("index_s") is not None and r.get("index_full")]
    out["index_update_s_mean"] = round(statistics.fmean(ups), 3) if ups else None
    out["index_update_s_p50"] = round(statistics.median(ups), 3) if ups else None
    out["n_index_updates"] = len(ups)
    out["index_build_s_mean"] = round(statistics.fmean(builds), 2) if builds else None
    out["errors"] = sum(1 for r in records if r.get("error"))
    return out


# --------------------------------------------------------------------------------------------
# Trees at a commit


@dataclass
class TreeUpdate:
    commit: str
    full: bool  # materialized from scratch
    added: int = 0
    modified: int = 0
    deleted: int = 0
    seconds: float = 0.0


def _git(gitdir: Path, *args: str) -> bytes:
    proc = subprocess.run(["git", "-C", str(gitdir), *args], capture_output=True)
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout


def _archive_into(gitdir: Path, commit: str, dest: Path, pathspecs: Sequence[str]) -> None:
    """`git archive commit -- pathspecs | tar -x -C dest`; when that fails (a blob missing from
    the clone's object store), the files are written one by one and the missing ones skipped."""
    try:
        _archive_tar(gitdir, commit, dest, pathspecs)
    except RuntimeError as exc:
        _progress(f"git archive failed ({exc}); writing files one by one")
        _checkout_files(gitdir, commit, dest, pathspecs)


def _checkout_files(gitdir: Path, commit: str, dest: Path, pathspecs: Sequence[str]) -> None:
    wanted = _pathspec_matcher(pathspecs)  # ls-tree takes no :(glob) magic: filter here
    names = _git(gitdir, "ls-tree", "-r", "-z", "--name-only", commit).split(b"\0")
    missing = []
    for path in filter(wanted, map(os.fsdecode, filter(None, names))):
        proc = subprocess.run(["git", "-C", str(gitdir), "cat-file", "blob", f"{commit}:{path}"], capture_output=True)
        if proc.returncode != 0:
            missing.append(path)
            continue
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(proc.stdout)
    if missing:
        _progress(f"{len(missing)} file(s) missing from the object store at {commit[:10]}, skipped: "
                  + ", ".join(missing[:5]))


def _pathspec_matcher(pathspecs: Sequence[str]) -> Callable[[str], bool]:
    """The paths `:(literal)P` and `:(glob)PATTERN` pathspecs (the two forms used here) select."""
    literal: set[str] = set()
    patterns = []
    for spec in pathspecs:
        if spec.startswith(":(literal)"):
            literal.add(spec[len(":(literal)"):])
            continue
        glob = spec[len(":(glob)"):] if spec.startswith(":(glob)") else spec
        rx = re.escape(glob).replace(r"\*\*/", "(?:.*/)?").replace(r"\*", "[^/]*").replace(r"\?", "[^/]")
        patterns.append(re.compile(rx + r"\Z"))
    return lambda path: path in literal or any(p.match(path) for p in patterns)


def _archive_tar(gitdir: Path, commit: str, dest: Path, pathspecs: Sequence[str]) -> None:
    archive = subprocess.Popen(["git", "-C", str(gitdir), "archive", "--format=tar", commit, "--", *pathspecs],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    tar = subprocess.run(["tar", "-x", "-C", str(dest)], stdin=archive.stdout, capture_output=True)
    assert archive.stdout is not None
    archive.stdout.close()
    err = archive.stderr.read() if archive.stderr else b""
    if archive.wait() != 0:
        raise RuntimeError(f"git archive {commit} failed: {err.decode(errors='replace').strip()}")
    if tar.returncode != 0:
        raise RuntimeError(f"tar -x failed: {tar.stderr.decode(errors='replace').strip()}")


def _state_file(dest: Path) -> Path:
    return dest.parent / f"{dest.name}.commit"


def tree_commit(dest: Path) -> str | None:
    """The commit `dest` was last materialized at by `materialize_tree`, if it is still there."""
    state = _state_file(dest)
    if dest.is_dir() and state.is_file():
        return state.read_text().strip() or None
    return None


def materialize_tree(gitdir: Path, commit: str, dest: Path, prev: str | None = None,
                     pathspec: str = SOURCE_PATHSPEC, batch: int = 400) -> TreeUpdate:
    """Make `dest` hold exactly the files of `commit` that match `pathspec`.

    With `prev` (the commit `dest` holds now) only the difference is applied: removed files are
    deleted (and directories left empty pruned), added and modified ones written from
    `git archive` of just those paths. Without it, `dest` is rebuilt from scratch. The commit is
    recorded next to `dest` (`tree_commit`). Files in `dest` that git does not track are left alone
    on the incremental path.
    """
    t0 = time.perf_counter()
    gitdir, dest = Path(gitdir), Path(dest)
    if prev is None or not dest.is_dir():
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        _archive_into(gitdir, commit, dest, [pathspec])
        n = sum(len(files) for _, _, files in os.walk(dest))
        upd = TreeUpdate(commit=commit, full=True, added=n)
    else:
        upd = TreeUpdate(commit=commit, full=False)
        if prev != commit:
            raw = _git(gitdir, "diff", "--name-status", "--no-renames", "-z", prev, commit, "--", pathspec)
            fields = raw.split(b"\0")
            write: list[str] = []
            for status, name in zip(fields[0::2], fields[1::2]):
                st = status.decode()[:1]
                path = os.fsdecode(name)
                target = dest / path
                if st == "D":
                    if target.is_file() or target.is_symlink():
                        target.unlink()
                    parent = target.parent
                    while parent != dest and parent.is_dir() and not any(parent.iterdir()):
                        parent.rmdir()
                        parent = parent.parent
                    upd.deleted += 1
                else:  # A, M, T (type change)
                    if target.is_symlink() or target.is_file():
                        target.unlink()
                    write.append(path)
                    if st == "A":
                        upd.added += 1
                    else:
                        upd.modified += 1
            for i in range(0, len(write), batch):
                _archive_into(gitdir, commit, dest, [f":(literal){p}" for p in write[i:i + batch]])
    _state_file(dest).write_text(commit + "\n")
    upd.seconds = time.perf_counter() - t0
    return upd


def commit_time(gitdir: Path, commit: str) -> int:
    return int(_git(gitdir, "show", "-s", "--format=%ct", commit).strip())


# --------------------------------------------------------------------------------------------
# The run


def load_instances(dataset: Path, repo: str | None = None, limit: int | None = None) -> list[dict]:
    """Instances of the dataset in file order, filtered by repo (comma-separated for several),
    the first `limit` of them."""
    repos = None if repo is None else {r.strip() for r in repo.split(",") if r.strip()}
    rows = []
    with open(dataset) as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                if repos is None or row["repo"] in repos:
                    rows.append(row)
    return rows[:limit] if limit is not None else rows


def order_instances(instances: Sequence[dict], gitdir_of: Callable[[str], Path]) -> dict[str, list[dict]]:
    """Group by repository (in order of first appearance); within one, by base commit date."""
    groups: dict[str, list[tuple[int, int, dict]]] = {}
    cache: dict[tuple[str, str], int] = {}
    for pos, inst in enumerate(instances):
        key = (inst["repo"], inst["base_commit"])
        if key not in cache:
            try:
                cache[key] = commit_time(gitdir_of(inst["repo"]), inst["base_commit"])
            except RuntimeError as exc:  # not in the mirror: its instance fails alone, later
                _progress(f"{inst['instance_id']}: {exc}")
                cache[key] = 0
        groups.setdefault(inst["repo"], []).append((cache[key], pos, inst))
    return {repo: [inst for _, _, inst in sorted(items, key=lambda t: (t[0], t[1]))]
            for repo, items in groups.items()}


def _jsonable(obj: Any) -> Any:
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if is_dataclass(obj) and not isinstance(obj, type):
        return _jsonable(asdict(obj))
    try:
        import msgspec

        return _jsonable(msgspec.to_builtins(obj))
    except Exception:
        pass
    if hasattr(obj, "__dict__"):
        return _jsonable({k: v for k, v in vars(obj).items() if not k.startswith("_")})
    return str(obj)


def _mean(xs: Sequence[float], nd: int) -> float | None:
    return round(statistics.fmean(xs), nd) if xs else None


def _median(xs: Sequence[float], nd: int) -> float | None:
    return round(statistics.median(xs), nd) if xs else None


def code_version() -> dict[str, Any]:
    """The commit of the code that ran, and whether nsccn/ had uncommitted changes."""
    try:
        head = _git(_ROOT, "rev-parse", "HEAD").decode().strip()
        dirty = bool(_git(_ROOT, "status", "--porcelain", "--", "nsccn", "benchmarks").strip())
        return {"commit": head, "dirty": dirty}
    except Exception as exc:  # not a checkout
        return {"commit": None, "error": str(exc)}


def _slug(repo: str) -> str:
    return repo.replace("/", "+")


def _progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


class ProgressLine:
    """A `progress(done, total)` callback that reports long work on stderr: a line every `every`
    seconds and a last one when it ends, nothing for work that ends sooner (an incremental update).
    A repository's first build and embedding take minutes; silence that long reads as a hang."""

    def __init__(self, label: str, unit: str, every: float = 15.0, clock: Callable[[], float] = time.monotonic):
        self.label, self.unit, self.every, self.clock = label, unit, every, clock
        self.started = self.last = clock()
        self.spoke = False

    def __call__(self, done: int, total: int) -> None:
        now = self.clock()
        finished = done >= total
        if now - self.last < self.every and not (finished and self.spoke):
            return
        self.last, self.spoke = now, True
        rate = done / max(now - self.started, 1e-9)
        eta = "" if finished or not rate else f", about {(total - done) / rate:.0f} s left"
        _progress(f"  {self.label}: {self.unit} {done}/{total} ({now - self.started:.0f} s{eta})")


MODEL: Path | None = None  # --model: the `default` configuration's model instead of the shipped one
CANDIDATE_MODEL: Path | None = None  # --candidate-model: the `candidate` configurations' model


@contextmanager
def stream_setting(name: str, value, module=None):
    """A setting of the vector stream (`name` of `module`, default `nsccn.vectors.semantic`) at `value`, for a while."""
    from nsccn.vectors import semantic

    module = module or semantic
    kept = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, kept)


def one_stage():
    """The static vector stream without its second stage (`semantic.RERANK_DEPTH` 0), for a while."""
    return stream_setting("RERANK_DEPTH", 0)


@contextmanager
def no_title():
    """The static vector stream reading a query's first line once, as the rest (`TITLE_REPEAT` 0),
    for a while; query vectors remembered across the switch are forgotten."""
    from nsccn.vectors import embed, static_embed

    repeat = static_embed.TITLE_REPEAT
    static_embed.TITLE_REPEAT = 0
    embed._QUERY_VECTORS.clear()
    try:
        yield
    finally:
        static_embed.TITLE_REPEAT = repeat
        embed._QUERY_VECTORS.clear()


TRANSFORMER_RERANK = (10, 0.5)  # (entities, weight of the transformer's cosine): chosen on the dev set
_TRANSFORMER = None  # the transformer, loaded once a process


@contextmanager
def transformer_rerank():
    """The static stream's first `TRANSFORMER_RERANK[0]` entities (after its second stage) ordered
    again by their second-stage score + `TRANSFORMER_RERANK[1]` x the cosine of minilm-code-v1's
    vectors of the query and of their texts (embedded at query time), for a while."""
    from nsccn.model import split_entity_id
    from nsccn.vectors import semantic
    from nsccn.vectors.embed import FALLBACK_MODEL, KNOWN_MODELS, load_bundled_query_embedder

    global _TRANSFORMER
    if _TRANSFORMER is None:
        _TRANSFORMER = load_bundled_query_embedder(optimize=True, model_id=FALLBACK_MODEL)
    transformer, (depth, weight) = _TRANSFORMER, TRANSFORMER_RERANK
    max_chars = KNOWN_MODELS[FALLBACK_MODEL].max_chars
    stream = semantic._static_stream

    def reranked(store, vs, model, query, q, limit, skip_path, names=True):
        hits = stream(store, vs, model, query, q, limit, skip_path, names)
        head = [e for e, _ in hits[:depth]]
        if not head:
            return hits
        cos = dict(hits)
        # The stage's scores of these ten again (the library orders by them and keeps none): ~1 ms
        # beside the transformer's ~370.
        static_texts = semantic.texts_of_ids(store, head, semantic.STATIC_MAX_CHARS)
        texts = semantic.texts_of_ids(store, head, max_chars)
        # (the files' best over these ten only: the stage's order of them, close to the library's over 200)
        scores = semantic.file_stage([split_entity_id(e)[1] for e in head], model.second_stage(
            query, [static_texts.get(e, "") for e in head], [cos[e] for e in head],
            [split_entity_id(e)[2] for e in head] if names else None))
        tq = transformer.embed_query(query)
        tv = transformer.embed_documents([texts.get(e, "") for e in head])
        scores = scores + weight * (tv @ tq)
        order = sorted(range(len(head)), key=lambda j: -scores[j])
        return [hits[j] for j in order] + hits[depth:]

    semantic._static_stream = reranked
    try:
        yield
    finally:
        semantic._static_stream = stream


def default_localize(db: Path, query: str, limit: int = TOP_N, signals: frozenset[str] | None = None) -> Any:
    """Localize as `nsccn localize` does (`signals` "learned": the active ranker; else the fusion)."""
    from nsccn import ranking
    from nsccn.query import search
    from nsccn.query.fusion import localize
    from nsccn.store import Store
    from nsccn.vectors import static_embed

    if signals is not None and "learned" not in signals:
        with stream_setting("NAME_WEIGHT", 0.0, static_embed) if "no-names" in signals else nullcontext():
            return localize(db, query, limit=limit, signals=signals - {"no-names"})
    with Store(db, readonly=True) as store:
        if signals is not None and "candidate" in signals:
            ranker = ranking.load_ranker(CANDIDATE_MODEL)
        else:
            ranker = ranking.load_ranker(MODEL) if MODEL else ranking.active_ranker()[0]
        with one_stage() if signals is not None and "one-stage" in signals else nullcontext(), \
                stream_setting("EXPAND_FILES", 0) if signals is not None and "no-expand" in signals else nullcontext(), \
                stream_setting("STREAM_NAMES", True, ranking) if signals is not None and "names" in signals else nullcontext(), \
                no_title() if signals is not None and "no-title" in signals else nullcontext(), \
                transformer_rerank() if signals is not None and "transformer-rerank" in signals else nullcontext():
            return search.localize(store, query, limit, ranker,
                                   use_vectors=signals is None or "no-vectors" not in signals)


def dump_features(db: Path, inst: dict, fh, expand: tuple[int, int] | None = None) -> None:
    """Candidates and features of one instance (what the ranker is trained on), with labels.
    `expand` (files, per file): the functions of the best files join the candidates, marked
    (`Candidates.expanded`), so training can restrict them to any smaller setting."""
    from nsccn import ranking
    from nsccn.ranking.features import candidates

    from nsccn.store import Store

    with Store(db, readonly=True) as store:
        fusion, vector = ranking.featurize(store, inst["problem_statement"])
        cands = candidates(store, inst["problem_statement"], fusion, vector,
                           **(dict(expand=expand[0], per_file=expand[1]) if expand else {}))
    gold_files, gold_fns = set(inst["gold_files"]), set(inst["gold_functions"])
    fh.write(json.dumps({
        "instance_id": inst["instance_id"], "repo": inst["repo"], "base_commit": inst["base_commit"],
        "gold_files": inst["gold_files"], "gold_functions": inst["gold_functions"],
        "files": cands.files, "file_rows": cands.file_rows, "file_labels": [int(p in gold_files) for p in cands.files],
        "functions": cands.functions, "function_rows": cands.function_rows,
        "function_labels": [int(entity_to_loc(f) in gold_fns) for f in cands.functions],
        "expanded": cands.expanded,
        "fusion_files": fusion.files[:TOP_N], "fusion_functions": fusion.functions[:TOP_N],
        "vectors": vector is not None,
    }, allow_nan=True) + "\n")
    fh.flush()


def update_history(db: Path, gitdir: Path, commit: str) -> Any:
    """The index's git history, as of `commit` (only commits it descends from are seen), and, in an
    index with vectors, its messages' vectors: what `nsccn index` in a git work tree holds."""
    from nsccn.reading import history
    from nsccn.store import Store
    from nsccn.vectors.commit_vectors import embed_commits
    from nsccn.vectors.semantic import has_vectors

    with Store(db) as store:
        summary = history.update_history(store, gitdir, commit)
        if has_vectors(store):
            embed_commits(store)
        return summary


def run_benchmark(instances: Sequence[dict], mirrors: Path, configs: Sequence[str], out: Path,
                  workdir: Path, index_fn: Callable[[Path, Path], Any] | None = None,
                  localize_fn: Callable[..., Any] | None = None, workers: int = 1,
                  embed_test_files: bool | None = None, features: Path | None = None,
                  history: bool = True, features_expand: tuple[int, int] | None = None,
                  embedding_model: str | None = None, features_one_stage: Path | None = None) -> dict[str, Any]:
    """Run every instance under every configuration; write rankings.jsonl and metrics.json.

    `index_fn` / `localize_fn` default to `nsccn.indexing.indexer.index_repository` (with `workers` parser
    processes, the `embed_test_files` setting and `embedding_model`, else the configured default)
    / `nsccn.query.fusion.localize`.
    Returns the metrics dictionary (also written to OUTDIR/metrics.json).
    """
    if index_fn is None:
        from functools import partial

        from nsccn.config import Config
        from nsccn.indexing.indexer import index_repository

        # Built as `nsccn index` builds by default (the static vectors included), unless told otherwise.
        config = Config() if embed_test_files is None else Config(embed_test_files=embed_test_files)
        if embedding_model:
            config.embedding_model = embedding_model
        build = partial(index_repository, config=config, workers=workers)

        def index_fn(tree: Path, db: Path, embed: bool = False) -> Any:  # the repository: WORKDIR/owner+name/tree
            if embed:
                return build(tree, db, embed=True, embed_progress=ProgressLine(Path(tree).parent.name, "embedded"))
            return build(tree, db, progress=ProgressLine(Path(tree).parent.name, "parsed files"))
    if localize_fn is None:
        localize_fn = default_localize
    if features:
        Path(features).parent.mkdir(parents=True, exist_ok=True)
    feature_fh = open(features, "w") if features else None
    # The same candidates and features with the static stream read by cosine alone, from the same index.
    one_stage_fh = open(features_one_stage, "w") if features and features_one_stage else None
    mirrors, out, workdir = Path(mirrors), Path(out), Path(workdir)
    out.mkdir(parents=True, exist_ok=True)

    def gitdir_of(repo: str) -> Path:
        return mirrors / _slug(repo) / "repo"

    code = code_version()  # at the start: the checkout may move while a long run goes on
    groups = order_instances(instances, gitdir_of)
    want_vectors = any("vector" in CONFIGS[c] for c in configs)
    total = sum(len(v) for v in groups.values())
    records: dict[str, list[dict]] = {c: [] for c in configs}
    index_log: dict[str, list[dict]] = {}
    done = 0
    t_start = time.perf_counter()
    with open(out / "rankings.jsonl", "w") as rank_fh:
        for repo, insts in groups.items():
            gitdir = gitdir_of(repo)
            base = workdir / _slug(repo)
            base.mkdir(parents=True, exist_ok=True)
            tree, db = base / "tree", base / "index.db"
            warmed = False
            for inst in insts:
                done += 1
                commit = inst["base_commit"]
                prev = tree_commit(tree)
                full_index = not db.exists()
                try:
                    upd = materialize_tree(gitdir, commit, tree, prev=prev)
                    t0 = time.perf_counter()
                    summary = index_fn(tree, db)
                    index_s = time.perf_counter() - t0
                    # The build embeds as `nsccn index` does by default (the static model: in the
                    # index time); an index function that did not gets a second pass that only embeds.
                    embed_s, embed_summary = None, getattr(summary, "vectors", None)
                    if want_vectors and not embed_summary:
                        t0 = time.perf_counter()
                        embed_summary = index_fn(tree, db, embed=True)
                        embed_s = time.perf_counter() - t0
                    if history:
                        t0 = time.perf_counter()
                        hist = update_history(db, gitdir, commit)
                        if time.perf_counter() - t0 > 5:
                            _progress(f"  history: {hist.added} commits read in {time.perf_counter() - t0:.1f} s")
                except Exception as exc:  # a missing commit, a broken tree: a miss, reported; the run goes on
                    err = f"preparing the index failed: {type(exc).__name__}: {exc}"
                    _progress(f"[{done}/{total}] {inst['instance_id']} {commit[:10]} {err}")
                    _state_file(tree).unlink(missing_ok=True)  # the next instance rebuilds the tree
                    for cfg in configs:
                        rec = {"instance_id": inst["instance_id"], "repo": repo, "config": cfg, "base_commit": commit,
                               "query_s": None, "index_s": None, "index_full": full_index, "embed_s": None,
                               "metrics": instance_metrics(inst["gold_files"], inst["gold_functions"], [], []),
                               "files": [], "functions": [], "error": err}
                        rank_fh.write(json.dumps(rec) + "\n")
                        records[cfg].append(rec)
                    rank_fh.flush()
                    continue
                index_log.setdefault(repo, []).append({
                    "instance_id": inst["instance_id"], "base_commit": commit, "full": full_index,
                    "tree": _jsonable(upd), "index_s": round(index_s, 4), "summary": _jsonable(summary),
                    "embed_s": None if embed_s is None else round(embed_s, 4),
                    "embed_summary": _jsonable(getattr(embed_summary, "vectors", embed_summary) or None)})
                if feature_fh is not None:
                    try:
                        dump_features(db, inst, feature_fh, features_expand)
                        if one_stage_fh is not None:
                            with one_stage():
                                dump_features(db, inst, one_stage_fh, features_expand)
                    except Exception as exc:  # reported; the instance is simply not in the training data
                        _progress(f"  features of {inst['instance_id']} failed: {type(exc).__name__}: {exc}")
                if not warmed:  # model loading and first-open costs stay out of the query times
                    for cfg in configs:
                        try:
                            localize_fn(db, WARMUP_QUERY, limit=TOP_N, signals=CONFIGS[cfg])
                        except Exception:
                            pass
                    warmed = True
                hits = []
                for cfg in configs:
                    err = None
                    if want_vectors:  # each configuration pays for embedding the report itself
                        from nsccn.vectors.embed import forget_queries

                        forget_queries()
                    t0 = time.perf_counter()
                    try:
                        res = localize_fn(db, inst["problem_statement"], limit=TOP_N, signals=CONFIGS[cfg])
                        files, funcs = list(res.files)[:TOP_N], list(res.functions)[:TOP_N]
                    except Exception as exc:  # counted as a miss, reported
                        files, funcs, err = [], [], f"{type(exc).__name__}: {exc}"
                    query_s = time.perf_counter() - t0
                    m = instance_metrics(inst["gold_files"], inst["gold_functions"], files, funcs)
                    rec = {"instance_id": inst["instance_id"], "repo": repo, "config": cfg,
                           "base_commit": commit, "query_s": round(query_s, 5),
                           "index_s": round(index_s, 4), "index_full": full_index,
                           "embed_s": None if embed_s is None else round(embed_s, 4),
                           "metrics": m, "files": files, "functions": funcs, "error": err}
                    rank_fh.write(json.dumps(rec) + "\n")
                    records[cfg].append(rec)
                    hits.append(f"{cfg}:{m['file@1']}{m['file@5']}/"
                                f"{'-' if m['function@10'] is None else m['function@10']}"
                                + ("!" if err else ""))
                rank_fh.flush()
                _progress(f"[{done}/{total}] {inst['instance_id']} {commit[:10]} "
                          f"tree {'full' if upd.full else 'diff'} +{upd.added} ~{upd.modified} -{upd.deleted} "
                          f"({upd.seconds:.2f}s), index {index_s:.2f}s"
                          + ("" if embed_s is None else f" + embed {embed_s:.2f}s")
                          + " | file@1,@5/func@10 "
                          + " ".join(hits))

    for fh in (feature_fh, one_stage_fh):
        if fh is not None:
            fh.close()
    repos = list(groups)
    results: dict[str, dict[str, Any]] = {}
    for cfg in configs:
        results[cfg] = {"overall": aggregate(records[cfg])}
        for repo in repos:
            results[cfg][repo] = aggregate([r for r in records[cfg] if r["repo"] == repo])
    index_summary = {}
    for repo, log in index_log.items():
        ups = [e for e in log if not e["full"]]
        builds = [e for e in log if e["full"]]
        index_summary[repo] = {
            "instances": len(log),
            "build_s": [e["index_s"] for e in builds],
            "update_s_mean": round(statistics.fmean(e["index_s"] for e in ups), 3) if ups else None,
            "update_s_p50": round(statistics.median(e["index_s"] for e in ups), 3) if ups else None,
            "embed_build_s": [e["embed_s"] for e in builds if e["embed_s"] is not None],
            "embed_update_s_mean": _mean([e["embed_s"] for e in ups if e["embed_s"] is not None], 3),
            "embed_update_s_p50": _median([e["embed_s"] for e in ups if e["embed_s"] is not None], 3),
            "changed_files_mean": round(statistics.fmean(
                e["tree"]["added"] + e["tree"]["modified"] + e["tree"]["deleted"] for e in ups), 1) if ups else None,
            "log": log,
        }
    metrics = {
        "instances": total,
        "code": code,
        "repos": repos,
        "configs": {c: sorted(CONFIGS[c]) for c in configs},
        "order": "per repository, by base commit committer date",
        "workers": workers,
        "embed_test_files": embed_test_files,
        "definitions": {
            "file@k": "gold files all in the top k files",
            "module@k": "gold modules (path:first qualname component) all in the top k distinct modules "
                        "of the ranked functions; over instances with gold functions",
            "function@k": "gold functions all in the top k (the first k of them when there are more than k); "
                          "over instances with gold functions",
            "query_ms": "wall time of one localize() call, after one untimed warm-up call per configuration",
            "index_update_s": "wall time of index_repository() after the tree moved to the next base commit "
                              "(the first, full build of each repository excluded); parse, write, resolve, ranks",
            "embed_update_s": "wall time of the following index_repository(embed=True) call: a scan that finds "
                              "nothing changed, then embedding the entities whose text is new",
        },
        "wall_s": round(time.perf_counter() - t_start, 1),
        "results": results,
        "index": index_summary,
    }
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    return metrics


# --------------------------------------------------------------------------------------------
# Reporting


def _fmt(v: Any) -> str:
    if v is None:
        return "–"
    return f"{v:.1f}" if isinstance(v, float) else str(v)


def _fmt2(v: Any) -> str:
    return "–" if v is None else f"{v:.2f}"


def markdown_table(metrics: dict[str, Any]) -> str:
    configs = list(metrics["configs"])
    repos = metrics["repos"]
    head = ("| config | n | file @1 | @3 | @5 | module @5 | @10 | function @5 | @10 | query ms mean / p50 |\n"
            "|---|---|---|---|---|---|---|---|---|---|")

    def row(label: str, m: dict[str, Any]) -> str:
        n = f"{m['n']}" if m["n_function"] == m["n"] else f"{m['n']} ({m['n_function']})"
        return (f"| {label} | {n} | " + " | ".join(_fmt(m[name]) for name in METRIC_NAMES)
                + f" | {_fmt(m['query_ms_mean'])} / {_fmt(m['query_ms_p50'])} |")

    parts = [f"Overall ({metrics['instances']} instances; n (k): k instances have gold functions)\n", head]
    parts += [row(c, metrics["results"][c]["overall"]) for c in configs]
    if len(repos) > 1:
        for repo in repos:
            parts += ["", f"{repo}\n", head]
            parts += [row(c, metrics["results"][c][repo]) for c in configs]
    parts += ["", "Index (one index per repository, moved from base commit to base commit; seconds)\n",
              "| repository | instances | full build: index + embed | update: index mean / p50 "
              "| update: embed mean / p50 | changed .py files per update |",
              "|---|---|---|---|---|---|"]
    for repo in repos:
        ix = metrics["index"].get(repo, {})
        builds = ", ".join(f"{b:.1f}" for b in ix.get("build_s", [])) or "–"
        ebuilds = ", ".join(f"{b:.1f}" for b in ix.get("embed_build_s", [])) or "–"
        parts.append(f"| {repo} | {ix.get('instances', 0)} | {builds} + {ebuilds} | "
                     f"{_fmt2(ix.get('update_s_mean'))} / {_fmt2(ix.get('update_s_p50'))} | "
                     f"{_fmt2(ix.get('embed_update_s_mean'))} / {_fmt2(ix.get('embed_update_s_p50'))} | "
                     f"{_fmt(ix.get('changed_files_mean'))} |")
    return "\n".join(parts) + "\n"


def plot(metrics: dict[str, Any], path: Path) -> bool:
    """Grouped bars of the overall metrics per configuration, and query time. False without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        _progress("matplotlib is not installed: no plot (pip install matplotlib)")
        return False
    configs = list(metrics["configs"])
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(14, 5), gridspec_kw={"width_ratios": [4, 1]})
    width = 0.8 / max(1, len(configs))
    for i, cfg in enumerate(configs):
        m = metrics["results"][cfg]["overall"]
        vals = [m[name] or 0.0 for name in METRIC_NAMES]
        xs = [j + (i - (len(configs) - 1) / 2) * width for j in range(len(METRIC_NAMES))]
        ax.bar(xs, vals, width, label=cfg)
    for j, (label, ref) in enumerate(REFERENCES.items()):
        for n, (name, v) in enumerate(ref.items()):
            x = METRIC_NAMES.index(name)
            ax.plot([x - 0.45, x + 0.45], [v, v], color=f"0.{2 + 3 * j}", lw=1.5, ls="--", zorder=3,
                    label=f"{label} (SweRank, Lite)" if n == 0 else None)
    ax.set_xticks(range(len(METRIC_NAMES)), METRIC_NAMES)
    ax.set_ylabel("Acc@k (%)")
    ax.set_ylim(0, 100)
    ax.set_title(f"Localization, {metrics['instances']} instances ({', '.join(metrics['repos'])})", fontsize=9)
    ax.legend(fontsize=7, ncol=5, loc="upper center", bbox_to_anchor=(0.5, -0.08), frameon=False)
    ax.grid(axis="y", alpha=0.3)
    qms = [metrics["results"][c]["overall"]["query_ms_mean"] or 0.0 for c in configs]
    ax2.bar(range(len(configs)), qms, color=[f"C{i}" for i in range(len(configs))])
    ax2.set_xticks(range(len(configs)), configs, rotation=45, ha="right", fontsize=8)
    ax2.set_ylabel("mean query time (ms)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def rescore(rankings: Path) -> dict[str, Any]:
    """Metrics of an existing rankings.jsonl (a finished run, or the instances a running or
    stopped one has written so far), in the shape `markdown_table` reads."""
    records: dict[str, list[dict]] = {}
    repos: list[str] = []
    with (gzip.open(rankings, "rt") if rankings.suffix == ".gz" else open(rankings)) as fh:  # results/ keeps .gz
        for line in fh:
            if line.strip():
                rec = json.loads(line)
                records.setdefault(rec["config"], []).append(rec)
                if rec["repo"] not in repos:
                    repos.append(rec["repo"])
    results = {cfg: {"overall": aggregate(recs), **{r: aggregate([x for x in recs if x["repo"] == r]) for r in repos}}
               for cfg, recs in records.items()}
    return {"instances": max((len(r) for r in records.values()), default=0), "repos": repos,
            "configs": {c: sorted(CONFIGS.get(c, ())) for c in records}, "results": results, "index": {}}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--rescore"]:  # python benchmarks/localize.py --rescore OUTDIR/rankings.jsonl
        if len(argv) != 2:
            print("usage: localize.py --rescore RANKINGS_JSONL", file=sys.stderr)
            return 2
        print(markdown_table(rescore(Path(argv[1]))))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="Or: localize.py --rescore OUTDIR/rankings.jsonl (the table of an existing, "
                                        "possibly partial, run)")
    ap.add_argument("--dataset", type=Path, required=True, help="JSONL in the format of swebench-dev.jsonl")
    ap.add_argument("--mirrors", type=Path, required=True, help="directory of {owner}+{name}/repo bare clones")
    ap.add_argument("--repo", help="only this repository (owner/name; comma-separated for several)")
    ap.add_argument("--limit", type=int, help="only the first N instances of the dataset (after --repo)")
    ap.add_argument("--configs", default=",".join(CONFIGS),
                    help=f"comma-separated, of {', '.join(CONFIGS)} (default: all)")
    ap.add_argument("--out", type=Path, required=True, help="output directory")
    ap.add_argument("--workdir", type=Path,
                    help="where trees and indexes live (default OUTDIR/work); reused across runs")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                    help="parser processes for index updates (default: one per core)")
    ap.add_argument("--embed-test-files", choices=("yes", "no"),
                    help="give test and documentation files vectors or not (default: as `nsccn index` does, "
                         "yes; `no` saves a third of a transformer's embedding: localize() demotes them)")
    ap.add_argument("--features", type=Path,
                    help="also write every instance's ranking candidates, features and labels here (JSONL): "
                         "the learned ranker's training data (benchmarks/train_ranker.py)")
    ap.add_argument("--features-one-stage", type=Path,
                    help="with --features: the same records with the static vector stream read by cosine alone "
                         "(no second stage) here, from the same indexes")
    ap.add_argument("--features-expand", metavar="FILES:PER_FILE",
                    type=lambda v: tuple(int(x) for x in v.split(":", 1)),
                    help="with --features: the functions of the fusion's best FILES files (PER_FILE each) join "
                         "the candidates, marked (train_ranker.py --expansions compares settings)")
    ap.add_argument("--model", type=Path,
                    help="the model of the `default` configuration (default: the one `nsccn localize` uses)")
    ap.add_argument("--candidate-model", type=Path,
                    help="the model of the `candidate` and `candidate-lexical` configurations (a new ranker "
                         "beside the shipped one in the same run)")
    ap.add_argument("--no-history", action="store_true",
                    help="do not index the git history (by default each index holds the commits its base commit "
                         "descends from, as `nsccn index` does in a git work tree)")
    ap.add_argument("--embed-max-chars", type=int,
                    help="embed at most this many characters per entity instead of the model's own max_chars "
                         "(nsccn.vectors.embed.KNOWN_MODELS): what shorter texts cost in localization; use a workdir of "
                         "its own, the vectors of another length would be re-made")
    ap.add_argument("--embedding-onnx", type=Path, metavar="ONNX",
                    help="embed with this ONNX file of MiniLM's shape (a model being evaluated, e.g. "
                         "train_embedder.py export's) instead of the default model; its vectors carry an id "
                         "of their own (nsccn.vectors.embed.register_onnx_model), so use a workdir of its own")
    args = ap.parse_args(argv)
    embedding_model = None
    if args.embedding_onnx:
        from nsccn.vectors.embed import ModelUnavailable, register_onnx_model

        try:
            embedding_model = register_onnx_model(args.embedding_onnx)
        except ModelUnavailable as exc:
            ap.error(str(exc))
    if args.embed_max_chars:
        import dataclasses

        from nsccn.vectors import embed

        for name, spec in list(embed.KNOWN_MODELS.items()):  # before any model is loaded
            embed.KNOWN_MODELS[name] = dataclasses.replace(spec, max_chars=args.embed_max_chars)
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    if args.model:
        global MODEL
        MODEL = args.model
    if args.candidate_model:
        global CANDIDATE_MODEL
        CANDIDATE_MODEL = args.candidate_model
    elif any("candidate" in CONFIGS.get(c, ()) for c in configs):
        ap.error("the candidate configurations need --candidate-model")
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown or not configs:
        ap.error(f"unknown configuration(s) {unknown}; known: {', '.join(CONFIGS)}")
    instances = load_instances(args.dataset, args.repo, args.limit)
    if not instances:
        ap.error("no instances selected")
    missing = sorted({i["repo"] for i in instances if not (args.mirrors / _slug(i["repo"]) / "repo").exists()})
    if missing:
        ap.error(f"no mirror for {', '.join(missing)} under {args.mirrors} (expected {{owner}}+{{name}}/repo)")
    workdir = args.workdir or args.out / "work"
    metrics = run_benchmark(instances, args.mirrors, configs, args.out, workdir, workers=args.workers,
                            embed_test_files=None if args.embed_test_files is None else args.embed_test_files == "yes",
                            features=args.features,
                            history=not args.no_history, features_expand=args.features_expand,
                            embedding_model=embedding_model, features_one_stage=args.features_one_stage)
    table = markdown_table(metrics)
    (args.out / "metrics.md").write_text(table)
    print(table)
    if plot(metrics, args.out / "metrics.png"):
        _progress(f"plot: {args.out / 'metrics.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
