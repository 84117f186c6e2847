"""The learned ranker: LambdaMART (LightGBM) over the candidates and features of
`nsccn.ranking.features`, one model for files and one for functions.

The model ships inside the package (`nsccn/models/ranker/ranker.npz`): the trees as flat numpy
arrays (plus a JSON header) evaluated here with numpy, so a query never imports LightGBM (its import alone takes
over half a second); LightGBM is used to train (`nsccn.ranking.train`). A model records the
feature version and names it was trained with; one that does not match this code is refused with
a clear message and localization falls back to the hand-tuned fusion, never mis-scores.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from nsccn.ranking.features import (
    FEATURE_VERSION, FILE_FEATURES, FUNCTION_FEATURES, GROUPS, LEXICAL_SIGNALS, Candidates, candidates,
)
from nsccn.query.fusion import RRF_K, Fusion, Localization, fusion_localize
from nsccn.model import split_entity_id
from nsccn.store import Store
from nsccn.query.streams import STREAM_DEPTH, Hit, vector_stream
from nsccn.reading.testpaths import is_test_path

SHIPPED_MODEL = Path(__file__).resolve().parent.parent / "models" / "ranker" / "ranker.npz"
USER_MODEL_NAME = "ranker.npz"  # in the index directory: `nsccn train-ranker` writes it there
CANDIDATE_DEPTH = 50  # the fusion is asked for this many results to draw candidates from
# A file's ranking adds this share of the best function-model score among its candidate functions
# (`with_function_evidence`). Chosen on the 2,880 mined queries alone (`benchmarks/train_ranker.py
# --grouped --evidence-weights ...`: each scored by models that never saw its repository; their
# file@1+3+5 sum is flat from 0.15 to 0.35), then measured on the dev set: file@1 60.8 -> 62.4,
# file@3 76.8 -> 78.5, file@5 83.4 -> 82.9 (benchmarks/results/ranker-loro-v3-evidence/).
FUNCTION_EVIDENCE = 0.3


class RankerError(ValueError):
    """A model file that is missing, unreadable or made for other features."""


@dataclass
class Trees:
    """A LightGBM model's trees as flat arrays: one row per node, all trees side by side."""

    feature: np.ndarray  # (trees, nodes) split feature index; -1 for a leaf
    threshold: np.ndarray
    left: np.ndarray  # child node index (within the tree)
    right: np.ndarray
    default_left: np.ndarray  # bool: where a missing value goes
    missing: np.ndarray  # 0 none (NaN counts as 0), 1 zero (0 and NaN are missing), 2 NaN
    value: np.ndarray  # leaf output
    depth: int

    @classmethod
    def from_lightgbm_dump(cls, dump: dict) -> "Trees":
        """From `Booster.dump_model()`."""
        trees = [t["tree_structure"] for t in dump["tree_info"]]
        flat: list[list[tuple]] = []
        depth = 1
        for root in trees:
            nodes: list[tuple] = []

            def add(node: dict, d: int) -> int:
                nonlocal depth
                depth = max(depth, d)
                i = len(nodes)
                nodes.append(None)  # type: ignore[arg-type]
                if "leaf_value" in node or "split_feature" not in node:
                    nodes[i] = (-1, 0.0, 0, 0, False, 0, float(node.get("leaf_value", 0.0)))
                    return i
                if node.get("decision_type", "<=") != "<=":
                    raise RankerError("categorical splits are not supported")
                missing = {"None": 0, "Zero": 1, "NaN": 2}[node.get("missing_type", "None")]
                left = add(node["left_child"], d + 1)
                right = add(node["right_child"], d + 1)
                nodes[i] = (int(node["split_feature"]), float(node["threshold"]), left, right,
                            bool(node.get("default_left", True)), missing, 0.0)
                return i

            add(root, 1)
            flat.append(nodes)
        width = max(len(n) for n in flat) if flat else 1
        n = len(flat)

        def col(j: int, dtype) -> np.ndarray:
            out = np.zeros((n, width), dtype=dtype)
            for t, nodes in enumerate(flat):
                out[t, : len(nodes)] = [node[j] for node in nodes]
            return out

        feature = np.full((n, width), -1, dtype=np.int32)
        for t, nodes in enumerate(flat):
            feature[t, : len(nodes)] = [node[0] for node in nodes]
        return cls(feature, col(1, np.float64), col(2, np.int32), col(3, np.int32), col(4, bool), col(5, np.int8),
                   col(6, np.float64), depth)

    ARRAYS = ("feature", "threshold", "left", "right", "default_left", "missing", "value")

    def arrays(self, prefix: str) -> dict[str, np.ndarray]:
        return {f"{prefix}.{k}": getattr(self, k) for k in self.ARRAYS} | {f"{prefix}.depth": np.asarray(self.depth)}

    @classmethod
    def from_arrays(cls, data, prefix: str) -> "Trees":
        return cls(*(np.asarray(data[f"{prefix}.{k}"]) for k in cls.ARRAYS), int(data[f"{prefix}.depth"]))

    def beside(self, other: "Trees") -> "Trees":
        """One model whose score is the sum of both (the trees side by side)."""
        width = max(self.feature.shape[1], other.feature.shape[1])

        def pad(x: np.ndarray, fill) -> np.ndarray:
            out = np.full((x.shape[0], width), fill, dtype=x.dtype)
            out[:, : x.shape[1]] = x
            return out

        return Trees(*(np.vstack([pad(getattr(self, k), f), pad(getattr(other, k), f)]) for k, f in
                       (("feature", -1), ("threshold", 0.0), ("left", 0), ("right", 0), ("default_left", False),
                        ("missing", 0), ("value", 0.0))), max(self.depth, other.depth))

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Raw scores for the rows of x, as LightGBM's `predict(raw_score=True)` computes them.

        Every (tree, row) pair walks down one level per step; pairs that reached a leaf leave the
        working set, so the work is the sum of path lengths, not trees x rows x depth."""
        x = np.asarray(x, dtype=np.float64)
        rows, trees = x.shape[0], self.feature.shape[0]
        if rows == 0 or trees == 0:
            return np.zeros(rows)
        width = self.feature.shape[1]
        feature, threshold = self.feature.ravel(), self.threshold.ravel()
        base = (np.arange(trees) * width)[:, None]
        left, right = (self.left + base).ravel(), (self.right + base).ravel()
        default_left, missing, value = self.default_left.ravel(), self.missing.ravel(), self.value.ravel()
        node = np.repeat(np.arange(trees) * width, rows)  # each pair at its tree's root
        row = np.tile(np.arange(rows), trees)
        out = np.zeros(rows)
        flat_x = x.ravel()
        ncols = x.shape[1]
        for _ in range(self.depth + 1):
            feat = feature[node]
            leaf = feat < 0
            if leaf.any():
                np.add.at(out, row[leaf], value[node[leaf]])
                keep = ~leaf
                node, row, feat = node[keep], row[keep], feat[keep]
            if node.size == 0:
                break
            v = flat_x[row * ncols + feat]
            miss = missing[node]
            isnan = np.isnan(v)
            v = np.where(isnan & (miss != 2), 0.0, v)
            is_missing = ((miss == 1) & (v == 0.0)) | ((miss == 2) & isnan)
            go_left = np.where(is_missing, default_left[node], v <= threshold[node])
            node = np.where(go_left, left[node], right[node])
        return out


@dataclass
class Ranker:
    files: Trees
    functions: Trees
    info: dict = field(default_factory=dict)  # what it was trained on, when, feature version
    source: str = ""  # the file it came from
    disabled: frozenset[str] = frozenset()  # feature groups left out (ablations): their features are missing
    function_evidence: float = FUNCTION_EVIDENCE  # how much a file's best function score adds to its own

    @cached_property
    def split_features(self) -> frozenset[str]:
        """The features any tree splits on (asked once per query: computed once per model)."""
        return frozenset({FILE_FEATURES[i] for i in np.unique(self.files.feature) if i >= 0}
                         | {FUNCTION_FEATURES[i] for i in np.unique(self.functions.feature) if i >= 0})

    def reads(self, group: str) -> bool:
        """Whether any tree splits on a feature of `group` (`GROUPS`): a model trained where that
        evidence was always missing never learned what it means."""
        return not self.split_features.isdisjoint(GROUPS[group]) and group not in self.disabled

    def score(self, cands: Candidates) -> tuple[np.ndarray, np.ndarray]:
        """Scores of the candidate files and functions (higher is better). A file's score is its
        model's plus `function_evidence` times the best score among its candidate functions."""
        fx = _mask(np.asarray(cands.file_rows, dtype=np.float64).reshape(-1, len(FILE_FEATURES)), FILE_FEATURES,
                   self.disabled)
        gx = _mask(np.asarray(cands.function_rows, dtype=np.float64).reshape(-1, len(FUNCTION_FEATURES)),
                   FUNCTION_FEATURES, self.disabled)
        fn_scores = self.functions.predict(gx)
        file_scores = with_function_evidence(cands.files, self.files.predict(fx), cands.functions, fn_scores,
                                             self.function_evidence)
        return file_scores, fn_scores

    def rank(self, store: Store, fusion: Fusion, vector: list[int] | None = None, query: str = "") -> tuple[list[str], list[str]]:
        """Files and functions, best first: the candidates in the model's order, then the rest of
        the fusion's ranking."""
        files, functions, _ = self.rank_scored(store, fusion, vector, query)
        return files, functions

    def rank_scored(self, store: Store, fusion: Fusion, vector: list[int] | None = None,
                    query: str = "") -> tuple[list[str], list[str], dict[str, float]]:
        """`rank`, and the model's raw score of each candidate function (the rest have none)."""
        cands = candidates(store, query, fusion, vector)
        file_scores, fn_scores = self.score(cands)
        raw = {eid: float(fn_scores[i]) for i, eid in enumerate(cands.functions)}
        return (order(cands.files, file_scores, fusion.files), order(cands.functions, fn_scores, fusion.functions), raw)


def with_function_evidence(files: list[str], file_scores: np.ndarray, functions: list[str],
                           fn_scores: np.ndarray, weight: float = FUNCTION_EVIDENCE) -> np.ndarray:
    """File scores plus `weight` x the best function score in each file (a file without a
    candidate function gets the query's lowest), so the function model's view of a file counts."""
    if not len(fn_scores) or not weight:
        return file_scores
    best: dict[str, float] = {}
    for fid, s in zip(functions, fn_scores):
        path = split_entity_id(fid)[1]
        if s > best.get(path, -np.inf):
            best[path] = float(s)
    lowest = float(np.min(fn_scores))
    return file_scores + weight * np.array([best.get(p, lowest) for p in files])


def order(items: list[str], scores, rest: list[str]) -> list[str]:
    """Candidates by score, best first (ties keep their order: the fusion's), then what the fusion
    ranked that is not a candidate."""
    ranked = [items[i] for i in sorted(range(len(items)), key=lambda i: (-scores[i], i))]
    seen = set(ranked)
    return ranked + [x for x in rest if x not in seen]


def _mask(x: np.ndarray, names: list[str], disabled: frozenset[str]) -> np.ndarray:
    if not disabled:
        return x
    cols = [i for i, n in enumerate(names) if any(n in GROUPS[g] for g in disabled)]
    x = x.copy()
    x[:, cols] = np.nan
    return x


def save_ranker(ranker: Ranker, path: Path) -> None:
    """One .npz file: the trees' arrays and a JSON header (features, version, provenance)."""
    header = {"feature_version": FEATURE_VERSION, "features": {"file": FILE_FEATURES, "function": FUNCTION_FEATURES},
              "disabled": sorted(ranker.disabled), "info": ranker.info}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:
        np.savez_compressed(fh, header=np.asarray(json.dumps(header)), **ranker.files.arrays("files"),
                            **ranker.functions.arrays("functions"))
    os.replace(tmp, path)


def read_header(path: Path) -> dict:
    with np.load(path, allow_pickle=False) as data:
        return json.loads(str(data["header"]))


def load_ranker(path: Path) -> Ranker:
    """A model file, checked against this code's features; RankerError says what is wrong."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            doc = json.loads(str(data["header"]))
            files, functions = Trees.from_arrays(data, "files"), Trees.from_arrays(data, "functions")
    except FileNotFoundError:
        raise RankerError(f"no ranking model at {path}") from None
    except (OSError, ValueError, KeyError) as exc:
        raise RankerError(f"the ranking model {path} cannot be read: {exc}") from None
    if doc.get("feature_version") != FEATURE_VERSION or doc.get("features") != {
        "file": FILE_FEATURES, "function": FUNCTION_FEATURES
    }:
        raise RankerError(
            f"the ranking model {path} was trained on other features (version {doc.get('feature_version')}, "
            f"this nsccn computes version {FEATURE_VERSION}): retrain it (`nsccn train-ranker`) or delete it"
        )
    return Ranker(files, functions, doc.get("info", {}), str(path), frozenset(doc.get("disabled", ())))


_cache: dict[tuple[str, float], Ranker] = {}


def active_ranker(index_dir: Path | None = None) -> tuple[Ranker | None, str]:
    """The model localization uses: the repository's own (`nsccn train-ranker`) when there is one,
    else the shipped one. (ranker, a line saying which, or why none)."""
    notes = []
    for path in ([Path(index_dir) / USER_MODEL_NAME] if index_dir else []) + [SHIPPED_MODEL]:
        if not path.exists():
            continue
        key = (str(path), path.stat().st_mtime)
        try:
            if key not in _cache:
                _cache[key] = load_ranker(path)
            which = "repository model" if path != SHIPPED_MODEL else "shipped model"
            return _cache[key], f"learned ranker ({which}, {path})"
        except RankerError as exc:
            notes.append(str(exc))
    return None, "hand-tuned fusion" + (f" ({'; '.join(notes)})" if notes else " (no ranking model found)")


# The shipped model learned the ranks of the static stream before its second stage read the
# candidates' names (stop 68). Fed the stream with them, it ranks worse (twelve unseen repositories:
# file@5 73.6 -> 72.9, 2 queries better and 12 worse, p 0.01; docs/semantic-search.md, "The names a
# query says"), so it reads the stream it learned. A model trained on the stream with names sets this.
STREAM_NAMES = False


def featurize(store: Store, query: str, embedder=None, use_vectors: bool = True,
              rrf_k: int = RRF_K) -> tuple[Fusion, list[int] | None]:
    """The lexical fusion and the vector stream (None without vectors) the features read."""
    fusion = fusion_localize(store, query, limit=CANDIDATE_DEPTH, signals=LEXICAL_SIGNALS, rrf_k=rrf_k)
    vector = vector_ranks(store, query, embedder) if use_vectors and _has_vectors(store) else None
    return fusion, vector


def vector_ranks(store: Store, query: str, embedder=None) -> list[int] | None:
    """The vector stream the features read: entity rowids nearest the query, best first, of
    non-test files only. The model learned vector ranks among those (its training indexes
    embedded no test or documentation file); an index that embeds them too (the default) would
    push every other entity down the ranks, so they are left out, read deep enough that as many
    remain. The stream's second stage reads the candidates' names only if `STREAM_NAMES`."""
    nearest = vector_stream(store, query, limit=2 * STREAM_DEPTH, embedder=embedder, skip_path=is_test_path,
                            names=STREAM_NAMES)
    return nearest[:STREAM_DEPTH] or None


def _has_vectors(store: Store) -> bool:
    try:
        from nsccn.vectors.semantic import has_vectors
    except ImportError:
        return False
    return has_vectors(store)


def localize(store: Store, query: str, ranker: Ranker, limit: int = 50, embedder=None,
             rrf_k: int = RRF_K, use_vectors: bool = True) -> Localization:
    """Localization by the learned ranker over every signal the index has and the model reads (the
    vector stream only for a model whose trees split on vector features). Without a model the
    query path (`nsccn.query.search`) asks the hand-tuned fusion instead."""
    started = time.perf_counter()
    fusion, vector = featurize(store, query, embedder=embedder, use_vectors=use_vectors and ranker.reads("vectors"),
                               rrf_k=rrf_k)
    files, functions, raw = ranker.rank_scored(store, fusion, vector, query)
    functions = functions[:limit]
    return Localization(files[:limit], functions, time.perf_counter() - started,
                        function_scores={f: raw[f] for f in functions if f in raw})


def search(store: Store, query: str, limit: int, ranker: Ranker, kinds: tuple[str, ...] | None = None,
           embedder=None, rrf_k: int = RRF_K, use_vectors: bool = True) -> list[Hit]:
    """Ranked entities for `search`: the function candidates in the learned order, then the rest
    of what the fusion matched (modules, nested definitions) in its order. A candidate's score is
    the model's raw score (`scored_by` "model"), the rest keep the fusion's; the query path turns
    both into probabilities (`nsccn.query.calibration`)."""
    fusion, vector = featurize(store, query, embedder=embedder, use_vectors=use_vectors and ranker.reads("vectors"),
                               rrf_k=rrf_k)
    cands = candidates(store, query, fusion, vector)
    _, fn_scores = ranker.score(cands)
    ordered = order(cands.functions, fn_scores, [])
    model_score = {eid: float(fn_scores[i]) for i, eid in enumerate(cands.functions)}
    fused = {h.entity.id: h.score for h in fusion.hits}
    streams: dict[str, dict[str, int]] = {}
    for h in fusion.hits:
        for eid in (h.entity.id, fusion.outer.get(h.entity.id)):
            if eid and eid not in streams:
                streams[eid] = dict(h.streams)
    rows = store.entities(ordered)
    ids = [e for e in ordered if e in rows] + [h.entity.id for h in fusion.hits]
    for h in fusion.hits:
        rows.setdefault(h.entity.id, h.entity)
    hits: list[Hit] = []
    seen: set[str] = set()
    for eid in ids:
        if eid in seen:
            continue
        seen.add(eid)
        row = rows[eid]
        if kinds and row.kind not in kinds:
            continue
        if eid in model_score:
            hits.append(Hit(row, model_score[eid], streams.get(eid, {}), "model"))
        else:
            hits.append(Hit(row, fused.get(eid, 0.0), streams.get(eid, {}), "fusion"))
        if len(hits) >= limit:
            break
    return hits
