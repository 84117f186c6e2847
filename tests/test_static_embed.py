"""The static code embedding: its tokens, its shipped vectors, the index built with it by default,
a missing or foreign model file, and deterministic training (benchmarks/train_static_embedder.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from nsccn.vectors.static_embed import STATIC_MODEL, STATIC_MODEL_FILE, ModelUnavailable, StaticModel, load_static_model, tokens

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "benchmarks"))
REFERENCE = HERE / "data" / "static_reference.json"
NSCCN = [sys.executable, "-m", "nsccn.cli"]


def test_tokens_are_identifier_parts_and_known_compounds():
    assert tokens("getHTTPResponse_v2(x) and 404 but not 1234567") == [
        "get", "http", "response", "v", "2", "x", "and", "404", "but", "not"]
    assert tokens("self.setdefault(key)", compounds={"setdefault"}) == ["self", "setdefault", "key"]
    assert tokens("set_default", compounds={"set_default"}) == ["set_default", "set", "default"]
    assert tokens("obj.setDefault(key)", compounds={"setdefault"}) == ["obj", "setdefault", "set", "default", "key"]


def test_a_camel_case_identifier_counts_as_the_whole_token_the_vocabulary_knows():
    """`setDefault` is the token `setdefault` when the vocabulary has it (as the vocabulary was
    counted), so it lands near `setdefault` and not only near `set` and `default`."""
    rows = np.eye(4, 8, dtype=np.float32)
    model = StaticModel(["setdefault", "set", "default", "key"], rows)
    camel, snake_whole, parts = model.embed(["setDefault", "setdefault", "set default"])
    assert float(camel @ snake_whole) > 0.5
    assert float(camel @ snake_whole) > float(parts @ snake_whole) + 0.3


def test_query_weights_weigh_a_query_s_tokens_and_survive_the_file(tmp_path):
    """A query's known tokens are weighed by the model's query weights (an entity's are not), and
    the weights are saved and loaded with the table."""
    model = StaticModel(["crash", "cache", "render"], np.eye(3, 6, dtype=np.float32))
    model.query_weight = np.array([0.0, 1.0, 1.0], np.float32)  # "crash" says nothing where in a query
    path = tmp_path / "m.npz"
    model.save(path)
    loaded = StaticModel.load(path)
    assert np.array_equal(loaded.query_weight, model.query_weight)
    as_query, as_text = loaded.embed(["crash in cache"], query=True)[0], loaded.embed(["crash in cache"])[0]
    cache = loaded.embed(["cache"])[0]
    assert float(as_query @ cache) > 0.99 > float(as_text @ cache) + 0.2


def test_the_shipped_model_gives_the_pinned_vectors():
    """Cosine to reference vectors made by the shipped model (regenerate them with the model:
    `python tests/test_static_embed.py` writes tests/data/static_reference.json)."""
    model = load_static_model(STATIC_MODEL_FILE)
    ref = json.loads(REFERENCE.read_text())
    assert ref["model_id"] == model.model_id == STATIC_MODEL
    assert ref["tokens"] == len(model.vocab)
    got = model.embed(ref["texts"])
    want = np.asarray(ref["vectors"], dtype=np.float32)
    cos = np.sum(got * want, axis=1) / np.linalg.norm(want, axis=1)
    assert cos.min() > 0.999, cos
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


def test_a_query_ranks_the_entity_sharing_its_words_above_an_unrelated_one():
    model = load_static_model(STATIC_MODEL_FILE)
    q, near, far = model.embed([
        "redirect loop when the server sends a relative location header",
        "resolve_redirects (resolve redirects)\nrequests/sessions.py\ndef resolve_redirects(self, resp, req)\n"
        "location = self.get_redirect_target(resp)",
        "render_table (render table)\nrich/table.py\ndef render_table(self, console, options)\n"
        "widths = self._calculate_column_widths(console, options)",
    ])
    assert float(q @ near) > float(q @ far) + 0.1


def test_an_empty_text_is_a_zero_vector_and_an_unknown_name_still_counts():
    """No token: a zero vector, not an error. A name no vocabulary knows (a code base's own) gets
    a fixed random direction of its own, so two texts sharing it are close and others are not."""
    model = load_static_model(STATIC_MODEL_FILE)
    empty, name, same, other = model.embed(["", "qqqzzzxxy", "the qqqzzzxxy crashes", "the wwwvvvkkj crashes"])
    assert empty.shape == (model.dim,) and not empty.any()
    assert abs(float(name @ name) - 1) < 1e-5
    assert float(name @ same) > float(name @ other) + 0.3


def test_late_interaction_asks_whether_a_text_says_each_query_token():
    """A query token said by the text scores its full weight (a rare name exactly: its bank rows),
    an empty text nothing, and a text saying every word of the query beats one saying some."""
    model = load_static_model(STATIC_MODEL_FILE)
    exact, other, empty = model.late_interaction("qqqzzzxxy", ["call qqqzzzxxy here", "call wwwvvvkkj here", ""])
    assert abs(float(exact) - 1) < 1e-5 and float(other) < 0.5 and float(empty) == 0.0
    all_words, some = model.late_interaction("parse the charset of a content type header",
                                             ["def parse_content_type(header): charset", "def parse(value)"])
    assert float(all_words) > float(some) + 0.2
    assert not model.late_interaction("", ["def f(): pass"]).any()


def test_the_late_interaction_the_other_way_asks_how_much_of_a_text_is_the_query_s():
    """Both texts say every word of the query (the same late interaction), but one says little
    else: the query covers it better, and with equal cosines the second stage puts it first."""
    from nsccn.vectors.static_embed import COVER_WEIGHT

    model = load_static_model(STATIC_MODEL_FILE)
    query = "parse the charset of a content type header"
    focused = "def parse_charset(content_type_header): parse the charset"
    diluted = focused + " width height margin padding border layout cell column table grid render paint canvas"
    covers, covered = model.interactions(query, [focused, diluted])
    assert abs(float(covers[0]) - float(covers[1])) < 1e-6
    assert float(covered[0]) > float(covered[1]) + 0.1
    assert np.array_equal(covers, model.late_interaction(query, [focused, diluted]))
    assert COVER_WEIGHT > 0
    first, second = model.second_stage(query, [focused, diluted], [0.5, 0.5])
    assert float(first) > float(second)


def _diluted_repo(tmp_path: Path) -> Path:
    """One function says every word of the query among many others (its mean vector is diluted);
    another says two of them and little else. Neither's name is a word of the query."""
    words = ("width height margin padding border layout cell column table grid render paint canvas pixel "
             "colour font glyph stroke fill shadow").split()
    body = "\n".join(f"    {words[i % 20]}_{words[i * 7 % 20]} = {words[i * 3 % 20]}({words[i * 11 % 20]})"
                     for i in range(20))
    repo = tmp_path / "repo"
    (repo / "web").mkdir(parents=True)
    (repo / "web" / "http.py").write_text(
        f'def split_value(value):\n    """Parse a content type header and its charset."""\n{body}\n    return value\n')
    (repo / "web" / "codecs.py").write_text(
        'def codec_of(header):\n    """The charset of a header."""\n    return header.charset\n')
    return repo


def test_the_static_stream_s_second_stage_puts_the_text_saying_the_whole_query_first(tmp_path):
    """By cosine alone the short function saying two of the query's words comes first; the second
    stage (cosine + late interaction over the stream's top entities) puts the one saying them all
    first, in the stream every answer reads."""
    from nsccn.query.streams import vector_stream
    from nsccn.store import Store
    from nsccn.vectors import semantic

    repo = _diluted_repo(tmp_path)
    assert _run(["index"], repo).returncode == 0
    query = "the charset of a content type header is parsed wrong"
    with Store(repo / ".nsccn" / "index.db", readonly=True) as store:
        def first() -> str:
            rowid = vector_stream(store, query)[0]
            return store.conn.execute("SELECT qualname FROM entities WHERE rowid = ?", (rowid,)).fetchone()[0]

        assert first() == "split_value"
        depth = semantic.RERANK_DEPTH
        semantic.RERANK_DEPTH = 0
        try:
            assert first() == "codec_of"
        finally:
            semantic.RERANK_DEPTH = depth


def _vector_stream_order(store, query: str) -> list[str]:
    """The vector stream's entities for `query` as `path:qualname`, in order, its vector and the
    files' context made afresh."""
    from nsccn.query.streams import vector_stream
    from nsccn.vectors import embed, semantic

    embed._QUERY_VECTORS.clear()  # query vectors are remembered by the query's text
    semantic._FILE_CONTEXTS.clear()
    names = dict(store.conn.execute("SELECT rowid, path || ':' || qualname FROM entities").fetchall())
    return [names[r] for r in vector_stream(store, query)]


def _first_in_vector_stream(store, query: str) -> str:
    """The qualname of the vector stream's first entity for `query`, its vector made afresh."""
    return _vector_stream_order(store, query)[0].split(":", 1)[1]


def test_a_query_of_several_lines_reads_its_first_line_more():
    """A report's title (its first line, when more lines follow) is read `TITLE_REPEAT` more times;
    a one-line query, or one whose first line is blank, is read as it is."""
    from nsccn.vectors.static_embed import TITLE_REPEAT, as_query

    assert TITLE_REPEAT == 2
    assert as_query("Title here\nthe body") == "Title here\nTitle here\nTitle here\nthe body"
    for text in ("one line only", "a title\n   \n", "\nbody after a blank line", "", "x" * 301 + "\nthe body"):
        assert as_query(text) == text


def test_a_report_s_title_outweighs_a_body_about_something_else(tmp_path, monkeypatch):
    """The title says the printed bill comes out empty; the body speaks of the customer and an
    email. Reading the title more puts the invoice's function first in the vector stream every
    answer reads; read once, as the rest (`TITLE_REPEAT` 0), the body's email function wins. The query
    says neither function's name (what a name said adds is `test_the_stream_reads_each_candidate_s_name`'s)."""
    from nsccn.store import Store
    from nsccn.vectors import embed, static_embed

    repo = tmp_path / "repo"
    (repo / "shop").mkdir(parents=True)
    (repo / "shop" / "invoice.py").write_text(
        'def render_pdf(invoice):\n    """Produce a printable document of the bill."""\n    return invoice.total\n\n\n'
        'def notify(customer):\n    """Email the customer that a payment is due."""\n    return customer.email\n')
    assert _run(["index"], repo).returncode == 0
    query = ("Printed bill comes out empty\n"
             "The customer got the reminder email. The customer opened the email. Every customer is emailed.")
    with Store(repo / ".nsccn" / "index.db", readonly=True) as store:
        first = lambda: _first_in_vector_stream(store, query)  # noqa: E731
        assert first() == "render_pdf"
        monkeypatch.setattr(static_embed, "TITLE_REPEAT", 0)
        assert first() == "notify"
    embed._QUERY_VECTORS.clear()


def test_a_model_file_of_another_format_version_is_refused_in_one_line(tmp_path):
    model = StaticModel(["alpha", "beta"], np.eye(2, 4, dtype=np.float32))
    path = tmp_path / "m.npz"
    model.save(path, {"format_version": 99})
    with pytest.raises(ModelUnavailable) as err:
        StaticModel.load(path)
    assert "v99" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(ModelUnavailable, match="missing"):
        StaticModel.load(tmp_path / "absent.npz")
    # The same verdicts from the header alone (what the supervisor checks, without numpy).
    from nsccn.vectors.static_file import file_problem

    assert "v99" in file_problem(path) and "missing" in file_problem(tmp_path / "absent.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    assert "cannot be read" in file_problem(tmp_path / "junk.npz")
    assert file_problem(STATIC_MODEL_FILE) is None


def test_a_saved_model_loads_back_within_int8_rounding(tmp_path):
    rng = np.random.default_rng(0)
    table = rng.normal(size=(50, 16)).astype(np.float32)
    vocab = [f"w{i}" for i in range(50)]
    StaticModel(vocab, table).save(tmp_path / "m.npz")
    back = StaticModel.load(tmp_path / "m.npz")
    assert back.vocab == vocab
    assert np.abs(back.table - table).max() <= np.abs(table).max(axis=1).max() / 127 + 1e-6


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "shop").mkdir(parents=True)
    (repo / "shop" / "invoice.py").write_text(
        'def render_pdf(invoice):\n    """Produce a printable document of the bill."""\n    return invoice.total\n\n\n'
        "def send_reminder(customer):\n    return customer.email\n")
    (repo / "shop" / "cart.py").write_text("class Cart:\n    def total(self):\n        return sum(self.items)\n")
    return repo


def _run(args, cwd, env=None):
    return subprocess.run(NSCCN + args, cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def test_an_index_built_by_default_holds_static_vectors_and_no_embed_holds_none(tmp_path):
    repo = _repo(tmp_path)
    out = _run(["index", "--json"], repo)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["vectors"]["model"] == STATIC_MODEL and summary["vectors"]["embedded"] >= 4
    status = json.loads(_run(["status", "--json"], repo).stdout)
    assert status["vectors"]["model"] == STATIC_MODEL and status["vectors"]["entities_without_vectors"] == 0
    found = json.loads(_run(["search", "printable document of the bill", "--json"], repo).stdout)
    assert found["vectors"] == STATIC_MODEL and "vector" in found["signals"]
    assert found["results"][0]["id"] == "func:shop/invoice.py:render_pdf"

    other = tmp_path / "other"
    other.mkdir()
    (other / "a.py").write_text("def f():\n    return 1\n")
    out = _run(["index", "--no-embed", "--json"], other)
    assert out.returncode == 0, out.stderr
    assert not json.loads(out.stdout).get("vectors")
    status = json.loads(_run(["status", "--json"], other).stdout)
    assert status["vectors"]["vectors"] == 0
    found = json.loads(_run(["search", "f", "--json"], other).stdout)
    assert found["vectors"] is None and "no vectors" in found["vectors_note"]


def test_vectors_of_a_replaced_static_model_answer_lexically_until_the_next_index(tmp_path):
    """An index embedded by an earlier static model (v1, whose file a newer nsccn no longer ships):
    search answers without its vectors and says to re-index, never a traceback; `nsccn index`
    embeds it again with the current model."""
    from nsccn.store import VECTORS_COMPLETE, Store
    from nsccn.vectors.table import VectorStore

    repo = _repo(tmp_path)
    assert _run(["index"], repo).returncode == 0
    with Store(repo / ".nsccn" / "index.db") as store:  # the vectors as the earlier model left them
        vs = VectorStore(store.conn)
        vs.ensure_model("nsccn/static-code-v1", 256)
        vs.upsert([("func:shop/invoice.py:render_pdf", "0" * 16, np.ones(256, np.float32) / 16)])
        store.set_meta("embedding_model", "nsccn/static-code-v1")
        store.set_meta(VECTORS_COMPLETE, "nsccn/static-code-v1")
    out = _run(["search", "printable document of the bill", "--json"], repo)
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout)
    assert found["vectors"] is None and "vector" not in found["signals"]
    assert "static-code-v1" in found["vectors_note"] and "nsccn index" in found["vectors_note"]
    assert found["results"][0]["id"] == "func:shop/invoice.py:render_pdf"
    assert "nsccn index" in json.loads(_run(["status", "--json"], repo).stdout)["vectors"]["note"]
    assert _run(["index"], repo).returncode == 0
    found = json.loads(_run(["search", "printable document of the bill", "--json"], repo).stdout)
    assert found["vectors"] == STATIC_MODEL and "vector" in found["signals"]


def test_a_missing_model_file_indexes_without_vectors_and_search_says_why(tmp_path):
    repo = _repo(tmp_path)
    gone = {"NSCCN_STATIC_MODEL": str(tmp_path / "absent" / "model.npz")}
    out = _run(["index"], repo, gone)
    assert out.returncode == 0, out.stderr
    warning = [line for line in out.stderr.splitlines() if "no vectors" in line]
    assert len(warning) == 1 and "missing" in warning[0], out.stderr
    assert "Traceback" not in out.stderr
    # An index with vectors, queried where the model file is of another version: lexical, with a note.
    assert _run(["index"], repo).returncode == 0
    foreign = tmp_path / "foreign.npz"
    StaticModel(["alpha"], np.ones((1, 256), np.float32), STATIC_MODEL).save(foreign, {"format_version": 2})
    found = _run(["search", "printable document of the bill", "--json"], repo, {"NSCCN_STATIC_MODEL": str(foreign)})
    assert found.returncode == 0, found.stderr
    answer = json.loads(found.stdout)
    assert answer["vectors"] is None and "not used" in answer["vectors_note"] and "v2" in answer["vectors_note"]
    assert "vector" not in answer["signals"] and answer["results"]


def test_training_is_deterministic_for_a_seed():
    import train_static_embedder as tse

    pairs = [
        {"repo": "a/x", "query": "fix the cache expiry", "pos": ["def expire(self): cache ttl"], "negs": ["def render(self): html"]},
        {"repo": "a/x", "query": "render html escapes", "pos": ["def render(self): html escape"], "negs": ["def expire(self): ttl"]},
        {"repo": "a/x", "query": "parse the config file", "pos": ["def load_config(path): parse"], "negs": ["def render(self)"]},
        {"repo": "a/x", "query": "retry on timeout", "pos": ["def retry(request): timeout backoff"], "negs": ["def expire(self)"]},
    ]
    vocab, freq = tse.build_vocab(pairs, min_repos=1, min_count=1)
    teacher = np.random.default_rng(0).normal(size=(len(vocab), 12)).astype(np.float32)
    start = tse.initial_model(vocab, teacher, freq, dim=8, identity=1.0, oov_weight=1.0, bank_rows=64)
    runs = [tse.train_table(pairs, start, seed=s, epochs=3, batch=2, lr=0.05, log=lambda m: None).table
            for s in (1, 1, 2)]
    assert np.array_equal(runs[0], runs[1])
    assert not np.array_equal(runs[0], runs[2])
    assert not np.array_equal(runs[0], start.table)  # it trained
    assert np.array_equal(runs[0][len(vocab):], start.table[len(vocab):])  # the bank stays fixed
    weighted = [tse.train_table(pairs, start, seed=1, epochs=3, batch=2, lr=0.05, query_lr=0.1, log=lambda m: None)
                for _ in range(2)]
    assert np.array_equal(weighted[0].query_weight, weighted[1].query_weight)
    assert not np.allclose(weighted[0].query_weight, 1.0)  # the query side's weights learned
    texts = [t for p in pairs for t in tse.texts_of(p)]
    targets = np.random.default_rng(1).normal(size=(len(texts), 8)).astype(np.float32)
    regressed = [tse.regress_table(texts, targets, start, seed=s, epochs=2, batch=3, log=lambda m: None).table
                 for s in (1, 1)]
    assert np.array_equal(regressed[0], regressed[1]) and not np.array_equal(regressed[0], start.table)



def test_learning_the_teacher_s_rankings_is_deterministic_and_learns_them():
    import train_static_embedder as tse

    entities = ["def expire(self): cache ttl", "def render(self): html escape", "def load_config(path): parse toml",
                "def retry(request): timeout backoff", "def close(self): socket shutdown", "def sort_rows(rows): key order"]
    messages = ["fix the cache expiry", "escape html when rendering", "parse the config file", "retry on a timeout",
                "shut the socket on close", "stable order of rows"]
    texts = entities + messages
    groups = {"a/x": {"entities": list(range(len(entities))), "messages": list(range(len(entities), len(texts)))}}
    rng = np.random.default_rng(3)
    teacher = rng.normal(size=(len(texts), 12)).astype(np.float32)
    teacher /= np.linalg.norm(teacher, axis=1, keepdims=True)
    vocab, freq = tse.vocab_of_texts(texts, min_count=1)
    start = tse.initial_model(vocab, rng.normal(size=(len(vocab), 12)).astype(np.float32), freq, dim=8, identity=1.0,
                              oov_weight=1.0, bank_rows=64)
    rankings = tse.teacher_rankings(groups, teacher, repos={"a/x"}, top=2, log=lambda m: None)
    assert len(rankings) == len(messages) and all(len(best) == 2 for _, _, best in rankings)

    def run(seed):
        logged = []
        model = tse.distill_rankings(texts, teacher, rankings, groups, start, seed=seed, epochs=6, batch=3, pool=4,
                                     lr=0.05, scale=10.0, teacher_scale=10.0, log=logged.append)
        return model, [float(m.split("KL ")[1].split()[0]) for m in logged]

    (a, kl), (b, _), (c, _) = run(1), run(1), run(2)
    assert np.array_equal(a.table, b.table) and not np.array_equal(a.table, c.table)
    assert np.array_equal(a.table[len(vocab):], start.table[len(vocab):])  # the bank stays fixed
    assert kl[-1] < kl[0]  # the student's rankings moved toward the teacher's


def write_reference() -> None:
    model = load_static_model(STATIC_MODEL_FILE)
    texts = ["Session.send (session send)\nrequests/sessions.py\ndef send(self, request, **kwargs)",
             "fix a crash when the config file is empty", "parse_http_request getHTTPResponse setdefault"]
    REFERENCE.write_text(json.dumps({"model_id": model.model_id, "tokens": len(model.vocab), "texts": texts,
                                     "vectors": [[round(float(x), 6) for x in v] for v in model.embed(texts)]}))


if __name__ == "__main__":
    write_reference()


def test_the_pipeline_embeds_with_the_static_model_in_the_writer(tmp_path):
    """No embedder actor for the static model (its process and messages cost more than the
    embedding): the writer embeds each entity itself, and the index has every vector."""
    repo = _repo(tmp_path)
    out = _run(["index", "--pipeline", "--json"], repo)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert "embedder" not in summary["pipeline"]["actors"]
    assert summary["vectors"]["model"] == STATIC_MODEL and summary["vectors"]["embedded"] >= 4
    assert summary["vectors"]["entities_without_vectors"] == 0
    (repo / "shop" / "cart.py").write_text("class Cart:\n    def total(self):\n        return 0\n\n"
                                           "    def refund(self, order):\n        return order.amount\n")
    out = _run(["index", "--pipeline", "--json"], repo)
    assert out.returncode == 0 and json.loads(out.stdout)["vectors"]["entities_without_vectors"] == 0
    found = json.loads(_run(["search", "give the customer their money back", "--json"], repo).stdout)
    assert found["vectors"] == STATIC_MODEL


def test_a_report_s_code_lines_weigh_less_than_its_prose():
    """Code lines (fenced, prompts, indented, traceback frames) and prose are told apart; the fences'
    own lines are in neither, and a pasted megabyte is split in one pass."""
    from nsccn.vectors.static_embed import prose_and_code

    report = ("Totals are rounded the wrong way\nWhen a discount applies:\n```python\ncart = Cart()\n"
              "cart.add(item)\n```\n>>> cart.total()\n    Decimal('9.99')\n"
              '  File "shop/cart.py", line 12, in total\nThanks!')
    prose, code = prose_and_code(report)
    assert prose == "Totals are rounded the wrong way\nWhen a discount applies:\nThanks!"
    assert code == ("cart = Cart()\ncart.add(item)\n>>> cart.total()\n    Decimal('9.99')\n"
                    '  File "shop/cart.py", line 12, in total')
    assert prose_and_code("x = 1\n" * 200_000)[0] == "x = 1\n" * 199_999 + "x = 1"


def test_the_query_reading_s_key_says_the_title_repeat_and_the_code_weight():
    """Vectors stored from a query's reading (the history's commit messages) are keyed by it: a
    change of `TITLE_REPEAT` or `CODE_WEIGHT` must change `QUERY_READING`, so they are made again."""
    from nsccn.vectors.static_embed import CODE_WEIGHT, TITLE_REPEAT
    from nsccn.vectors.static_file import QUERY_READING

    assert QUERY_READING == f"title{TITLE_REPEAT}-code{CODE_WEIGHT:g}"


def test_a_snippet_s_many_names_do_not_drown_what_the_report_says(tmp_path, monkeypatch):
    """The report says in a line that a discount is rounded wrong; its snippet fills a cart. With its code
    lines weighed `CODE_WEIGHT` the rounding function comes first in the vector stream every answer
    reads; weighed as the prose, the snippet's cart function does."""
    from nsccn.store import Store
    from nsccn.vectors import embed, static_embed

    repo = tmp_path / "repo"
    (repo / "shop").mkdir(parents=True)
    (repo / "shop" / "pricing.py").write_text(
        'def round_discount(price, rate):\n    """Round the discounted price to cents."""\n    return round(price * rate, 2)\n')
    (repo / "shop" / "cart.py").write_text(
        'def add_item(cart, item, quantity):\n    """Put an item in the cart."""\n    cart.items.append((item, quantity))\n')
    assert _run(["index"], repo).returncode == 0
    query = "Discount rounded the wrong way\n```python\ncart = new_cart()\n" + "".join(
        f"add_item(cart, item{i}, quantity={i})\n" for i in range(2)) + "print(cart.items)\n```"
    with Store(repo / ".nsccn" / "index.db", readonly=True) as store:
        first = lambda: _first_in_vector_stream(store, query)  # noqa: E731
        assert first() == "round_discount"
        monkeypatch.setattr(static_embed, "CODE_WEIGHT", 1.0)
        assert first() == "add_item"
    embed._QUERY_VECTORS.clear()


def test_the_file_context_s_cosines_are_those_of_the_mixed_vectors():
    """`FileContext` scores each entity by its vector plus `FILE_CONTEXT` x its file's mean (normalized),
    normalized, without making those vectors: the same cosines as making them."""
    from nsccn.vectors.semantic import FILE_CONTEXT, FileContext

    rng = np.random.default_rng(0)
    matrix = rng.normal(size=(50, 16)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    paths = [f"f{i % 7}.py" for i in range(50)]
    q = rng.normal(size=16).astype(np.float32)
    q /= np.linalg.norm(q)
    means = {p: matrix[[i for i in range(50) if paths[i] == p]].sum(0) for p in set(paths)}
    mixed = np.stack([matrix[i] + FILE_CONTEXT * means[p] / np.linalg.norm(means[p]) for i, p in enumerate(paths)])
    mixed /= np.linalg.norm(mixed, axis=1, keepdims=True)
    assert FILE_CONTEXT == 0.3
    assert np.allclose(FileContext(paths, matrix).cosines(matrix, q), mixed @ q, atol=1e-5)
    assert np.allclose(FileContext(paths, matrix, weight=0.0).cosines(matrix, q), matrix @ q, atol=1e-6)


def test_of_two_helpers_alike_the_one_in_the_file_about_the_query_comes_first(tmp_path, monkeypatch):
    """Two files hold the same small helper; one file is about invoices and taxes, the other about
    drawing a window. Asked about an invoice's tax, the vector stream puts the invoice file's helper
    first: each entity is read with its file's context (`semantic.FILE_CONTEXT`). Read alone, the two
    helpers' texts differ only by their paths (`a.py`, `b.py`), and the window file's comes first."""
    from nsccn.store import Store
    from nsccn.vectors import embed, semantic

    repo = tmp_path / "repo"
    repo.mkdir()
    helper = 'def fmt(value):\n    return str(value)\n'
    (repo / "a.py").write_text(
        'def invoice_tax(invoice):\n    """The tax due on an invoice."""\n    return invoice.amount * invoice.tax_rate\n\n\n'
        'def invoice_total(invoice):\n    """An invoice\'s total with its tax."""\n    return invoice.amount + invoice_tax(invoice)\n\n\n'
        + helper)
    (repo / "b.py").write_text(
        'def draw_window(screen):\n    """Draw the main window on the screen."""\n    screen.paint()\n\n\n'
        'def resize_window(screen, size):\n    """Resize the window."""\n    screen.size = size\n\n\n' + helper)
    assert _run(["index"], repo).returncode == 0
    query = "wrong tax on an invoice"
    with Store(repo / ".nsccn" / "index.db", readonly=True) as store:
        def helpers() -> list[str]:
            return [n.split(":")[0] for n in _vector_stream_order(store, query) if n.endswith(":fmt")]

        assert helpers() == ["a.py", "b.py"]
        monkeypatch.setattr(semantic, "FILE_CONTEXT", 0.0)
        assert helpers() == ["a.py", "b.py"]  # the second stage's files' best alone (`FILE_STAGE`) says so too
        monkeypatch.setattr(semantic, "FILE_STAGE", 0.0)
        assert helpers() == ["b.py", "a.py"]  # alone, the path's letter decides
    embed._QUERY_VECTORS.clear()
    semantic._FILE_CONTEXTS.clear()


def test_the_files_best_adds_to_each_candidate_and_keeps_the_files_order():
    """`file_stage`: each candidate's score + `FILE_STAGE` x the best of its file's; a file's second
    function can pass another file's first, and the files' order by their best stays."""
    from nsccn.vectors.semantic import FILE_STAGE, file_stage

    assert FILE_STAGE == 1.0
    paths, scores = ["a.py", "b.py", "a.py", "c.py"], [1.0, 0.8, 0.75, -0.2]
    out = file_stage(paths, scores)
    assert np.allclose(out, [2.0, 1.6, 1.75, -0.4])
    assert list(np.argsort(-out)) == [0, 2, 1, 3]  # a.py's second passes b.py's only
    best = lambda s: sorted({p: max(x for q, x in zip(paths, s) if q == p) for p in paths}.items(), key=lambda t: -t[1])  # noqa: E731
    assert [p for p, _ in best(out)] == [p for p, _ in best(scores)]
    assert np.allclose(file_stage(paths, scores, weight=0.0), scores)
    assert len(file_stage([], [])) == 0


def test_the_stage_reads_its_first_files_whole():
    """`staged`: the first `RERANK_DEPTH` by cosine, then the other entities of the first
    `EXPAND_FILES` files they rank (at most `EXPAND_LIMIT`, nearest first), scored too; an entity past
    the depth in the first file can come first, one in another file cannot, and one left out (-inf)
    never enters."""
    from nsccn.vectors.semantic import EXPAND_FILES, EXPAND_LIMIT, staged

    assert (EXPAND_FILES, EXPAND_LIMIT) == (3, 100)
    cosines = np.array([0.9, 0.8, 0.7, 0.1, 0.05, -np.inf, 0.02], dtype=np.float32)
    file_of = np.array([0, 1, 0, 0, 2, 0, 1])
    bonus = np.array([0, 0, 0, 5, 5, 5, 0], dtype=np.float32)  # what the second stage sees past the cosine
    read: list[list[int]] = []

    def stage(at):
        read.append(list(at))
        return cosines[at] + bonus[at]

    cand, scores = staged(cosines, file_of, stage, depth=2, expand=1)
    assert read == [[0, 1], [2, 3]]  # the first two, then file 0's others (not 5: left out)
    assert cand[np.argsort(-scores, kind="stable")].tolist()[0] == 3
    read.clear()
    cand, scores = staged(cosines, file_of, stage, depth=2, expand=0)
    assert read == [[0, 1]] and cand.tolist() == [0, 1]
    read.clear()
    cand, _ = staged(cosines, file_of, stage, depth=2, expand=1, expand_limit=1)  # the nearest one more only
    assert read == [[0, 1], [2]]
    cand, _ = staged(cosines, file_of, stage, depth=2, expand=2)  # file 1 next: its entity 6 too; file 2's 4 never
    assert sorted(cand.tolist()) == [0, 1, 2, 3, 6]
    cand, scores = staged(np.full(3, -np.inf, dtype=np.float32), np.zeros(3, dtype=np.intp), stage)
    assert len(cand) == 0 and len(scores) == 0


def test_a_method_past_the_depth_comes_up_with_its_file_read_whole(tmp_path, monkeypatch):
    """Through the index: with the second stage one entity deep, the invoice file's own helper is
    read by the stage because its file is first (`EXPAND_FILES`), and comes before the other file's
    entity that the cosine put ahead of it; with the first files not read whole, it stays behind."""
    from nsccn.store import Store
    from nsccn.vectors import embed, semantic

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.py").write_text(
        'def invoice_tax(invoice):\n    """The tax due on an invoice."""\n    return invoice.amount * invoice.tax_rate\n\n\n'
        'def fmt(value):\n    return str(value)\n')
    (repo / "b.py").write_text(
        'def invoice_email(invoice):\n    """Send the invoice by email."""\n    mail(invoice.customer)\n')
    assert _run(["index"], repo).returncode == 0
    query = "wrong tax on an invoice"
    with Store(repo / ".nsccn" / "index.db", readonly=True) as store:
        def order() -> list[str]:
            return [n for n in _vector_stream_order(store, query) if n.split(":")[1] in ("invoice_tax", "fmt", "invoice_email")]

        monkeypatch.setattr(semantic, "RERANK_DEPTH", 1)
        monkeypatch.setattr(semantic, "EXPAND_FILES", 0)
        assert order() == ["a.py:invoice_tax", "b.py:invoice_email", "a.py:fmt"]  # past the first: by cosine
        monkeypatch.setattr(semantic, "EXPAND_FILES", 1)
        assert order() == ["a.py:invoice_tax", "a.py:fmt", "b.py:invoice_email"]
    embed._QUERY_VECTORS.clear()
    semantic._FILE_CONTEXTS.clear()


def test_the_second_stage_reads_the_names_a_query_says():
    """The names' term (`NAME_WEIGHT` x how well the query covers each qualified name): a name the
    query says whole scores `NAME_WEIGHT`, one it says in part less, one it does not say about
    nothing; the second stage given the candidates' names is the one without them plus that."""
    from nsccn.vectors.static_embed import NAME_WEIGHT

    model = load_static_model(STATIC_MODEL_FILE)
    query = "Invoice.settle charges the customer twice when the payment is retried"
    names = ["Invoice.settle", "Invoice.refund_all", "Ledger.close"]
    said = NAME_WEIGHT * model.interactions(query, names)[1]
    assert NAME_WEIGHT > 0
    assert abs(float(said[0]) - NAME_WEIGHT) < 1e-4
    assert float(said[0]) > float(said[1]) > float(said[2]) + 0.05
    texts = ["def settle(self):\n    self.gateway.capture(self.total)", "def refund_all(self):\n    self.paid = 0",
             "def close(self):\n    self.open = False"]
    cos = model.embed(texts) @ model.embed([query], query=True)[0]
    assert np.allclose(model.second_stage(query, texts, cos, names), model.second_stage(query, texts, cos) + said, atol=1e-6)
    assert np.array_equal(model.second_stage(query, texts, cos, []), model.second_stage(query, texts, cos))


def test_the_stream_reads_each_candidate_s_name(tmp_path, monkeypatch):
    """Through the index: `process`'s text says the query's words, `update`'s none of them but the
    query names it: at the shipped `NAME_WEIGHT` the named function comes first in the stream nsccn
    answers from; without the names, the other. The learned ranker's features read the stream it was
    trained on, without the names (`ranking.STREAM_NAMES`)."""
    from nsccn import ranking
    from nsccn.store import Store
    from nsccn.vectors import static_embed

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "billing.py").write_text(
        'def update(order):\n    order.state = "done"\n    return order.capture()\n\n\n'
        'def process(customer, total):\n    """Charge the customer the total through the payment gateway; a failed charge retries."""\n'
        '    return gateway.charge(customer, total)\n')
    assert _run(["index"], repo).returncode == 0
    query = "update() charges the customer twice: the payment gateway retries a failed charge"
    with Store(repo / ".nsccn" / "index.db", readonly=True) as store:
        def order() -> list[str]:
            return [n.split(":", 1)[1] for n in _vector_stream_order(store, query)]

        assert order() == ["update", "process"]
        # The learned ranker reads the stream it was trained on: without the names (`STREAM_NAMES`).
        qualname = dict(store.conn.execute("SELECT rowid, qualname FROM entities").fetchall())
        assert not ranking.STREAM_NAMES
        assert [qualname[r] for r in ranking.vector_ranks(store, query)] == ["process", "update"]
        monkeypatch.setattr(ranking, "STREAM_NAMES", True)
        assert [qualname[r] for r in ranking.vector_ranks(store, query)] == ["update", "process"]
        monkeypatch.setattr(static_embed, "NAME_WEIGHT", 0.0)
        assert order() == ["process", "update"]
