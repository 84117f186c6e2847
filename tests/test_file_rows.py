"""What keeps the loaded static model small: its int8 rows read from the file as texts use them
(`nsccn.vectors.file_rows`), its vocabulary a `TokenIndex` (`nsccn.vectors.token_index`); and
the vectors it makes, bit for bit those of the arrays read whole."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import pytest

from nsccn.vectors.file_rows import FileRows
from nsccn.vectors.static_embed import STATIC_MODEL_FILE, StaticModel
from nsccn.vectors.token_index import TokenIndex

HERE = Path(__file__).resolve().parent


def _matrix(rows=300, dim=16, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).integers(-127, 128, size=(rows, dim), dtype=np.int8)


def test_rows_are_read_as_asked_and_equal_the_array(tmp_path):
    m = _matrix()
    np.savez(tmp_path / "m.npz", other=np.arange(5, dtype=np.float32), m=m)
    rows = FileRows.of_npz(tmp_path / "m.npz", "m")
    assert rows is not None and rows.shape == m.shape and len(rows) == len(m)
    assert rows._used == 0  # nothing read at load
    ids = np.array([5, 7, 5, 299, 0, 7, -1])
    assert np.array_equal(rows[ids], m[ids])
    assert rows._used == 4  # 5, 7, 299 (= -1), 0: each row read once
    assert np.array_equal(rows[np.array([], dtype=np.intp)], m[:0])
    ids = np.random.default_rng(1).integers(0, len(m), size=2000)
    assert np.array_equal(rows[ids], m[ids])
    assert np.array_equal(np.asarray(rows), m)


def test_a_member_that_cannot_be_read_in_place_is_left_to_the_caller(tmp_path):
    np.savez_compressed(tmp_path / "z.npz", m=_matrix())
    np.savez(tmp_path / "f.npz", m=_matrix().astype(np.float32), v=np.zeros(4, np.int8))
    assert FileRows.of_npz(tmp_path / "z.npz", "m") is None  # compressed
    assert FileRows.of_npz(tmp_path / "f.npz", "m") is None  # float rows
    assert FileRows.of_npz(tmp_path / "f.npz", "v") is None  # one dimension


def test_threads_asking_for_new_rows_at_once_each_get_the_right_rows(tmp_path):
    m = _matrix(rows=4000)
    np.savez(tmp_path / "m.npz", m=m)
    rows = FileRows.of_npz(tmp_path / "m.npz", "m")
    wrong = []

    def work(seed):
        for ids in np.random.default_rng(seed).integers(0, len(m), size=(40, 64)):
            if not np.array_equal(rows[ids], m[ids]):
                wrong.append(seed)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong
    assert rows._used == len(np.unique(rows._slot[rows._slot >= 0]))  # no slot given twice


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_s_new_rows_do_not_change_the_parent_s(tmp_path):
    m = _matrix(rows=1000)
    np.savez(tmp_path / "m.npz", m=m)
    rows = FileRows.of_npz(tmp_path / "m.npz", "m")
    assert np.array_equal(rows[np.arange(10)], m[:10])
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child, once the parent has filled its next slots, fills the same slots with other rows
        ok = False
        try:
            os.close(go_w)
            os.read(go_r, 1)
            ok = np.array_equal(rows[np.arange(500, 700)], m[500:700])
        finally:
            os._exit(0 if ok else 1)
    os.close(go_r)
    assert np.array_equal(rows[np.arange(200, 400)], m[200:400])
    os.write(go_w, b"x")
    os.close(go_w)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert np.array_equal(rows[np.arange(200, 400)], m[200:400])  # the child's slots were its own
    assert np.array_equal(rows[np.arange(10)], m[:10])


def test_a_model_loaded_keeps_its_rows_when_its_file_is_saved_again(tmp_path):
    """`save` puts a new file in place: a model loaded before reads its rows from the file it opened."""
    vocab = ["alpha", "beta", "gamma"]
    rng = np.random.default_rng(0)
    path = tmp_path / "m.npz"
    StaticModel(vocab, rng.normal(size=(3, 8)).astype(np.float32)).save(path)
    first = StaticModel.load(path)
    assert isinstance(first._q, FileRows)
    want = StaticModel.load(path).embed(["alpha beta", "gamma"])
    StaticModel(vocab, rng.normal(size=(3, 8)).astype(np.float32)).save(path)
    assert np.array_equal(first.embed(["alpha beta", "gamma"]), want)
    assert not np.array_equal(StaticModel.load(path).embed(["alpha beta", "gamma"]), want)


def test_the_shipped_model_read_row_by_row_gives_the_vectors_of_its_arrays_read_whole():
    """The model as loaded (rows from the file, a `TokenIndex`) against one built from the file's
    arrays read whole with a plain vocabulary list: every vector identical, bit for bit, for
    entities (known tokens, compounds, unknown names in the bank) and queries."""
    loaded = StaticModel.load(STATIC_MODEL_FILE)
    assert isinstance(loaded._q, FileRows) and isinstance(loaded._bank_q, FileRows)
    with np.load(STATIC_MODEL_FILE) as npz:
        whole = StaticModel(bytes(npz["vocab"]).decode().split("\n"), None, loaded.model_id, header=loaded.header,
                            quantized=(npz["table"], npz["scale"].astype(np.float32)), bank=npz["bank"],
                            query_weight=npz["query_weight"].astype(np.float32))
    texts = [p.read_text()[i:i + 1500] for p in sorted((HERE.parent / "nsccn" / "vectors").glob("*.py"))
             for i in range(0, 6000, 1500)]
    texts += ["Session.send (session send)\nrequests/sessions.py\ndef send(self, request, **kwargs)",
              "getHTTPResponse setDefault parse_http_request zqxQuuxFrobnicate 404 1234567", ""]
    assert np.array_equal(loaded.embed(texts), whole.embed(texts))
    queries = ["the printer crashes when a matrix has symbols\nMatrix.det fails on symbols", "setdefault"]
    assert np.array_equal(loaded.embed(queries, query=True), whole.embed(queries, query=True))
    assert np.array_equal(loaded.late_interaction(queries[0], texts[:20]), whole.late_interaction(queries[0], texts[:20]))
    assert 0 < loaded._q._used < len(loaded._q) // 4  # only the rows these texts use were read
    assert loaded.vocab == whole.vocab and np.array_equal(loaded.table, whole.table)


def test_a_token_index_finds_each_token_s_row_as_a_dict_would():
    vocab = ["self", "get", "setdefault", "x", "get", "ünïcode", ""]
    index = TokenIndex("\n".join(vocab))
    as_dict = {t: i for i, t in enumerate(vocab)}
    assert len(index) == len(vocab)
    for token in [*vocab, "absent", "gets", "Get", "se"]:
        assert index.get(token) == as_dict.get(token), token
        assert (token in index) == (token in as_dict)
    assert index.get("get") == 4  # listed twice: the last row, as the dict
    assert index.get("absent", -1) == -1 and 3 not in index
    assert index.tokens() == vocab
    assert len(TokenIndex("")) == 0 and TokenIndex("").get("a") is None and TokenIndex("").tokens() == []
