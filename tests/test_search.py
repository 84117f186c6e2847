"""Ranking behaviour: exact identifiers, tracebacks, semantic-only queries, RRF arithmetic."""

import pytest

from conftest import write_repo
from nsccn.config import Config
from nsccn.vectors.embed import load_embedder
from nsccn.indexing.indexer import index_repository
from nsccn.query.fusion import fuse, localize, search
from nsccn.query.query_analysis import analyze_query
from nsccn.store import Store

BILLING = {
    "billing/__init__.py": "",
    "billing/invoice.py": '''
        from .tax import apply_tax


        class Invoice:
            """A bill sent to a customer."""

            def total(self):
                return apply_tax(sum(line.amount for line in self.lines))

            def render_pdf(self):
                """Draw the invoice as a PDF document."""
                return b"%PDF"
    ''',
    "billing/tax.py": '''
        RATE = 0.2


        def apply_tax(amount):
            """Add value-added tax to an amount of money."""
            if amount < 0:
                raise ValueError("negative amount")
            return amount * (1 + RATE)
    ''',
    "billing/mail.py": '''
        def send_reminder(address):
            """E-mail a payment reminder to a customer who has not paid."""
            return address
    ''',
    "tests/test_tax.py": '''
        from billing.tax import apply_tax


        def test_apply_tax_negative_amount():
            apply_tax(-1)
    ''',
}


@pytest.fixture(scope="module")
def billing(tmp_path_factory):
    repo = write_repo(tmp_path_factory.mktemp("b") / "repo", BILLING)
    index_repository(repo, workers=1)
    store = Store(repo / ".nsccn/index.db", readonly=True)
    yield repo, store
    store.close()


def test_rrf_arithmetic():
    scores = fuse({"a": [1, 2, 3], "b": [3, 1]}, k=60)
    assert scores[1] == pytest.approx(1 / 61 + 1 / 62)
    assert scores[3] == pytest.approx(1 / 63 + 1 / 61)
    assert scores[2] == pytest.approx(1 / 62)
    weighted = fuse({"a": [1], "b": [2]}, k=10, weights={"b": 2.0})
    assert weighted[2] == pytest.approx(2 / 11) and weighted[1] == pytest.approx(1 / 11)


def test_query_analysis():
    q = analyze_query(
        "Calling `Invoice.total()` fails, see billing/tax.py and apply_tax. XML SELECT list e.g. this\n"
        'Traceback (most recent call last):\n  File "/site/billing/invoice.py", line 8, in total\n'
        '  File "/site/billing/tax.py", line 7, in apply_tax\nValueError: negative amount'
    )
    assert "Invoice.total" in q.identifiers and "apply_tax" in q.identifiers
    assert not {"XML", "SELECT", "list", "e.g"} & set(q.identifiers)
    assert "billing/tax.py" in q.paths
    assert q.frames[-1] == ("/site/billing/tax.py", 7, "apply_tax")
    assert q.terms[0] in {"invoice", "total", "apply_tax"}


def test_exact_identifier_ranks_its_definition_first(billing):
    _, store = billing
    hits = search(store, "something is off in send_reminder for customers", limit=3)
    assert hits[0].entity.id == "func:billing/mail.py:send_reminder"
    assert "exact" in hits[0].streams


def test_traceback_ranks_its_frames(billing):
    _, store = billing
    report = (
        "Crash when totalling:\n"
        'Traceback (most recent call last):\n  File "/usr/lib/python3/site-packages/billing/invoice.py", line 8, in total\n'
        '  File "/usr/lib/python3/site-packages/billing/tax.py", line 7, in apply_tax\n'
        "ValueError: negative amount"
    )
    ids = [h.entity.id for h in search(store, report, limit=5)]
    assert ids[0] == "func:billing/tax.py:apply_tax"  # the innermost frame first
    assert "method:billing/invoice.py:Invoice.total" in ids[:3]


def test_localize_demotes_tests_and_ranks_files(billing):
    repo, _ = billing
    loc = localize(repo / ".nsccn/index.db", "apply_tax raises for a negative amount", limit=5,
                   signals=frozenset({"bm25", "query_analysis"}))
    assert loc.files[0] == "billing/tax.py"
    assert loc.functions[0] == "func:billing/tax.py:apply_tax"
    assert loc.files.index("tests/test_tax.py") > 0


@pytest.mark.parametrize("path, is_test", [
    ("tests/test_tax.py", True), ("tests/admin_views/models.py", True), ("testing/python/fixtures.py", True),
    ("xarray/tests/__init__.py", True), ("astropy/io/fits/tests/helper.py", True), ("test/util.py", True),
    ("pkg/conftest.py", True), ("test.py", True), ("app/tests.py", True), ("pkg/foo_test.go", True), ("web/app.spec.ts", True), ("web/app.test.jsx", True),
    ("src/test/java/org/x/FooTest.java", True), ("docs/conf.py", True), ("examples/demo.py", True),
    # A test framework inside the package is library code that bugs are fixed in.
    ("django/test/testcases.py", False), ("sympy/testing/runtests.py", False), ("xarray/testing/assertions.py", False),
    ("lib/matplotlib/testing/compare.py", False), ("src/main/java/org/x/Foo.java", False),
    ("pkg/attestation.py", False), ("pkg/contest.py", False), ("pkg/testing.py", False), ("pkg/latest.py", False), ("src/_pytest/python.py", False),
])
def test_is_test_path(path, is_test):
    from nsccn.reading.testpaths import is_test_path

    assert is_test_path(path) is is_test


def test_plural_words_find_singular_names(billing):
    """A query's regular plurals also look for their singular: "reminders ... customers" finds a
    docstring that says "reminder ... customer", and "taxes" finds `apply_tax`."""
    from nsccn.query.query_analysis import singular

    assert [singular(w) for w in ("entries", "matches", "taxes", "series", "class", "axis")] == [
        "entry", "match", "tax", "series", "class", "axis"]
    _, store = billing
    hits = search(store, "reminders for customers", limit=3, signals=frozenset({"bm25"}))
    assert hits[0].entity.id == "func:billing/mail.py:send_reminder"
    hits = search(store, "taxes", limit=3, signals=frozenset({"bm25"}))
    assert hits and hits[0].entity.id in {"func:billing/tax.py:apply_tax", "module:billing/tax.py:billing.tax"}


def test_words_the_report_repeats_weigh_more(billing):
    """The same two words, one said three times: the definition of the repeated one comes first.
    (Both queries have the same set of terms, so an unweighted BM25 ranks them alike.)"""
    q = analyze_query("latex latex latex latex LatexPrinter printer")
    assert q.weighted_terms().count("latex") == 3  # capped (MAX_TERM_REPEATS)
    assert q.weighted_terms().count("printer") == 1  # said once as a word; `LatexPrinter` is a name
    _, store = billing
    lexical = frozenset({"bm25"})
    top = search(store, "the money, the money, again the money; a payment", limit=1, signals=lexical)
    assert top[0].entity.id == "func:billing/tax.py:apply_tax"
    top = search(store, "a payment, the payment, again a payment; some money", limit=1, signals=lexical)
    assert top[0].entity.id == "func:billing/mail.py:send_reminder"


def test_unknown_signal_and_empty_query(billing):
    _, store = billing
    with pytest.raises(ValueError, match="unknown signals"):
        search(store, "x", signals=frozenset({"telepathy"}))
    with pytest.raises(ValueError, match="empty"):
        search(store, "   ")


@pytest.mark.parametrize("model,query", [
    ("default", "dunning letter for overdue bills"),  # the static model made by default
    ("minilm-code", "nag people who owe us money"),  # the transformer a user may choose
    ("all-MiniLM-L6-v2", "nag people who owe us money"),
])
def test_semantic_only_query_with_bundled_model(tmp_path, model, query):
    """No word of the query appears in the target: only the vectors can find it (the default
    static model, the bundled transformer tuned for code, and the plain MiniLM it was tuned from).
    The static model misses the harder paraphrase: "nag people who owe us money" puts `apply_tax`
    (its docstring says "money") before `send_reminder`."""
    from nsccn.vectors.semantic import embed_index

    repo = write_repo(tmp_path / "repo", BILLING)
    index_repository(repo, workers=1, embed=model == "default")
    if model != "default":
        with Store(repo / ".nsccn/index.db") as store:
            embed_index(store, load_embedder(model, threads=1))
    with Store(repo / ".nsccn/index.db", readonly=True) as store:
        hits = search(store, query, limit=3, signals=frozenset({"vector"}))
        assert hits[0].entity.id == "func:billing/mail.py:send_reminder"
        lexical = search(store, query, limit=3, signals=frozenset({"bm25"}))
        assert "func:billing/mail.py:send_reminder" not in [h.entity.id for h in lexical]
        hits = search(store, "produce a printable document of the bill", limit=3, signals=frozenset({"vector"}))
        assert "method:billing/invoice.py:Invoice.render_pdf" in [h.entity.id for h in hits[:2]]


def test_an_index_embedded_by_the_plain_minilm_answers_with_it_until_re_embedded(tmp_path):
    """Vectors made by the plain MiniLM (the bundled model before the code-tuned one) are queried
    with that model, not the configured one: no error, no mixed spaces. The next embedding with
    another configured model (here the tuned transformer) replaces them."""
    from nsccn.vectors.embed import FALLBACK_MODEL, PLAIN_MINILM
    from nsccn.vectors.semantic import embed_index, nearest_rowids

    repo = write_repo(tmp_path / "repo", BILLING)
    index_repository(repo, workers=1, embed=False)
    plain = load_embedder("all-MiniLM-L6-v2", threads=1)
    with Store(repo / ".nsccn/index.db") as store:
        assert embed_index(store, plain)["model"] == PLAIN_MINILM
    query = "dunning letter for overdue bills"
    with Store(repo / ".nsccn/index.db", readonly=True) as store:
        nearest = nearest_rowids(store, query, 5)
        assert nearest and nearest == nearest_rowids(store, query, 5, embedder=plain)
        with pytest.raises(RuntimeError, match="re-embed"):
            nearest_rowids(store, query, 5, embedder=load_embedder("bundled", threads=1))
    summary = index_repository(repo, workers=1, embed=True, config=Config(embedding_model="minilm-code"))
    assert summary.vectors["remodeled"] and summary.vectors["model"] == FALLBACK_MODEL
    with Store(repo / ".nsccn/index.db", readonly=True) as store:
        assert store.conn.execute("SELECT value FROM vec_meta WHERE key='model_id'").fetchone()[0] == FALLBACK_MODEL
        assert nearest_rowids(store, query, 5)


def test_an_index_embedded_by_a_registered_onnx_file_is_queried_with_it(tmp_path):
    """A model being evaluated (an ONNX file of MiniLM's shape, `register_onnx_model`) embeds an
    index under an id of its own and answers its queries: no other model's query vectors are
    compared with its vectors, and a missing file is a clear error."""
    import shutil

    from nsccn.vectors.embed import PLAIN_MINILM, ModelUnavailable, bundled_onnx_path, register_onnx_model
    from nsccn.vectors.semantic import nearest_rowids

    candidate = tmp_path / "candidate.onnx"
    shutil.copyfile(bundled_onnx_path(PLAIN_MINILM), candidate)
    model_id = register_onnx_model(candidate)
    assert model_id.startswith("onnx:candidate-") and register_onnx_model(candidate) == model_id
    with pytest.raises(ModelUnavailable, match="no ONNX file"):
        register_onnx_model(tmp_path / "absent.onnx")
    repo = write_repo(tmp_path / "repo", BILLING)
    summary = index_repository(repo, workers=1, embed=True, config=Config(embedding_model=model_id))
    assert summary.vectors["model"] == model_id
    with Store(repo / ".nsccn/index.db", readonly=True) as store:
        hits = search(store, "nag people who owe us money", limit=3, signals=frozenset({"vector"}))
        assert hits[0].entity.id == "func:billing/mail.py:send_reminder"
        with pytest.raises(RuntimeError, match="re-embed"):
            nearest_rowids(store, "overdue bills", 5, embedder=load_embedder("bundled", threads=1))


def test_embed_without_test_files(tmp_path):
    """`embed_test_files: false`: code gets vectors, tests do not, and status does not count
    the skipped ones as missing; turning it back on fills them in."""
    import json

    from nsccn.vectors.semantic import vector_status

    repo = write_repo(tmp_path / "repo", BILLING)
    (repo / ".nsccn").mkdir(exist_ok=True)
    (repo / ".nsccn/config.json").write_text(json.dumps({"embed_test_files": False}))
    index_repository(repo, workers=1, embed=True)
    with Store(repo / ".nsccn/index.db", readonly=True) as store:
        ids = {eid for (eid,) in store.conn.execute("SELECT entity_id FROM vec_ids")}
        assert "func:billing/tax.py:apply_tax" in ids
        assert not [i for i in ids if i.split(":")[1].startswith("tests/")]
        status = vector_status(store)
        assert status["entities_without_vectors"] == 0 and "not embedded" in status["note"]
    (repo / ".nsccn/config.json").write_text(json.dumps({"embed_test_files": True}))
    summary = index_repository(repo, workers=1, embed=True)
    assert summary.vectors["embedded"] > 0 and summary.vectors["from_cache"] > 0
    with Store(repo / ".nsccn/index.db", readonly=True) as store:
        ids = {eid for (eid,) in store.conn.execute("SELECT entity_id FROM vec_ids")}
        assert [i for i in ids if i.split(":")[1].startswith("tests/")]


def test_rrf_item_weights():
    scores = fuse({"a": [1, 2]}, k=10, item_weights={"a": {2: 0.5}})
    assert scores[1] == pytest.approx(1 / 11) and scores[2] == pytest.approx(0.5 / 12)


NESTED = {
    "shapes/__init__.py": "",
    "shapes/grid.py": '''
        class Grid:
            def scan_shape(self, iterable):
                """Work out the shape of a nested iterable."""
                def walk(pointer):
                    if not pointer:
                        return [], (0,)
                    return pointer, (len(pointer),)
                return walk(iterable)

            def size(self):
                return 0
    ''',
    "shapes/render.py": "".join(
        f'''
        class Painter{i}:
            def paint(self, canvas):
                return canvas
        '''
        for i in range(9)
    ),
}


def test_exact_name_defined_in_many_places_weighs_less(tmp_path):
    from nsccn.query.streams import exact_stream

    repo = write_repo(tmp_path / "repo", NESTED)
    index_repository(repo, workers=1)
    with Store(repo / ".nsccn/index.db", readonly=True) as store:
        weights: dict[int, float] = {}
        ranked = exact_stream(store, analyze_query("calling paint() and scan_shape() fails"), weights)
        rows = store.entity_at_rowids(ranked)
        assert rows[ranked[0]].id == "method:shapes/grid.py:Grid.scan_shape"  # the rare name first
        assert weights[ranked[0]] == 1.0
        assert {rows[r].name for r in ranked[1:]} == {"paint"}
        assert all(weights[r] == pytest.approx(1 / 3) for r in ranked[1:])  # 9 definitions


def test_localize_rolls_nested_functions_up_to_their_outermost_function(tmp_path):
    repo = write_repo(tmp_path / "repo", NESTED)
    index_repository(repo, workers=1)
    loc = localize(repo / ".nsccn/index.db", "walk over the pointer fails for an empty nested iterable", limit=10,
                   signals=frozenset({"bm25", "query_analysis"}))
    assert loc.functions[0] == "method:shapes/grid.py:Grid.scan_shape"
    assert not [f for f in loc.functions if f.endswith(".walk")]
    assert loc.files[0] == "shapes/grid.py"


SIMILAR = {
    "geo/__init__.py": "",
    "geo/shapes.py": '''
        class Polygon:
            def area_of_square(self, side):
                """Area of a square polygon."""
                return side * side

            def area_of_rectangle(self, w, h):
                """Area of a rectangle polygon."""
                return w * h

            def area_of_triangle(self, b, h):
                """Area of a triangle polygon."""
                return b * h / 2
    ''',
    "geo/land.py": '''
        def parcel_area(parcel):
            """Area of a land parcel, from its polygon."""
            return parcel.size
    ''',
}


def test_diversity_spreads_results_over_places(tmp_path):
    repo = write_repo(tmp_path / "repo", SIMILAR)
    index_repository(repo, workers=1)
    with Store(repo / ".nsccn/index.db", readonly=True) as store:
        lexical = frozenset({"bm25"})
        plain = search(store, "area of a polygon", limit=3, signals=lexical)
        assert {h.entity.path for h in plain} == {"geo/shapes.py"}  # three near-duplicates
        diverse = search(store, "area of a polygon", limit=3, signals=lexical, diversity=0.5)
        assert diverse[0].entity.id == plain[0].entity.id
        assert diverse[1].entity.id == "func:geo/land.py:parcel_area"
        with pytest.raises(ValueError, match="diversity"):
            search(store, "area", diversity=2.0)


def test_mmr_arithmetic_with_vectors(billing):
    """With vectors, similarity is their cosine: a near-duplicate of the first hit drops below
    a less relevant but different hit; with diversity 0 the order is the plain one."""
    import numpy as np

    from nsccn.query.fusion import diversify
    from nsccn.query.streams import Hit

    _, store = billing
    rows = store.entity_at_rowids([r for (r,) in store.conn.execute("SELECT rowid FROM entities LIMIT 3")])
    a, b, c = (Hit(row, score) for row, score in zip(rows.values(), (1.0, 0.9, 0.8)))
    vectors = {a.entity.id: np.array([1.0, 0.0]), b.entity.id: np.array([0.99, 0.14]), c.entity.id: np.array([0.0, 2.0])}
    assert [h.score for h in diversify([a, b, c], 3, 0.5, vectors)] == [1.0, 0.8, 0.9]
    assert [h.score for h in diversify([a, b, c], 3, 0.0, vectors)] == [1.0, 0.9, 0.8]
    assert [h.score for h in diversify([a, b, c], 2, 0.5, vectors)] == [1.0, 0.8]


# -- untrusted queries: analysis is linear, bounded, and says what it cut (issue 12, item 5) -------


def test_huge_traceback_is_analyzed_within_caps_and_says_so(billing):
    from conftest import pathological_traceback
    from nsccn.query.query_analysis import MAX_FRAMES, MAX_IDENTIFIERS, capped_note

    _, store = billing
    query = pathological_traceback(1 << 20)
    q = analyze_query(query)
    assert len(q.frames) == MAX_FRAMES and q.frames[-1] == ("/srv/app/billing/tax.py", 7, "apply_tax")
    assert len(q.identifiers) <= MAX_IDENTIFIERS and len(q.terms) <= 64
    note = capped_note(q)
    assert "innermost 100 of" in note and "traceback frames" in note and "first 100,000 of" in note
    hits = search(store, query, signals=frozenset({"bm25", "query_analysis"}))
    assert hits[0].entity.id == "func:billing/tax.py:apply_tax"  # the innermost frame still counts


def test_a_repeated_frame_counts_once_where_it_was_seen_last():
    frame = '  File "/a/b.py", line {}, in f\n'
    q = analyze_query("".join(frame.format(n) for n in range(2000)) + '  File "/a/c.py", line 1, in g\n')
    assert q.frames == [("/a/b.py", 1999, "f"), ("/a/c.py", 1, "g")] and not q.capped


def test_a_50kb_path_and_a_5000_digit_line_number_give_clean_answers(billing):
    _, store = billing
    long_path = "/".join(["a"] * 30_000) + "/tax.py"
    for query in (
        f'Traceback:\n  File "{long_path}", line 3, in apply_tax\n',  # was: LIKE or GLOB pattern too complex
        f"see {long_path} for the bug",
        'Traceback:\n  File "/srv/billing/tax.py", line ' + "9" * 5000 + ", in apply_tax\n",  # was: int() limit
    ):
        hits = search(store, query, signals=frozenset({"bm25", "query_analysis"}))
        assert hits and hits[0].entity.path == "billing/tax.py"
    q = analyze_query('File "/srv/billing/tax.py", line ' + "9" * 5000 + ", in apply_tax")
    assert q.frames == [("/srv/billing/tax.py", 0, "apply_tax")]  # line unknown, frame kept
    assert "path(s) over 4096 characters skipped" in analyze_query(f"see {long_path}").capped[0]


def test_paths_match_their_longest_indexed_suffix(billing):
    from nsccn.query.streams import indexed_suffix_matches

    _, store = billing
    assert indexed_suffix_matches(store, "/usr/lib/python3/site-packages/billing/tax.py") == ["billing/tax.py"]
    assert indexed_suffix_matches(store, "./billing/TAX.py") == ["billing/tax.py"]
    assert indexed_suffix_matches(store, "other/tests/test_tax.py") == ["tests/test_tax.py"]
    assert indexed_suffix_matches(store, "billing/nothing.py") == []
