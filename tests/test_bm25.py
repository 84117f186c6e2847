"""BM25 from the postings (nsccn.store.bm25) is FTS5's bm25(), bit for bit, on a real index that
has also been updated incrementally; where it cannot promise that, FTS5 answers."""

import math
import shutil
from pathlib import Path

import pytest

from nsccn.indexing.indexer import index_repository
from nsccn.query.streams import BM25_WEIGHTS, FILE_WEIGHTS, any_of, bm25_stream, file_bm25
from nsccn.store import Store

PACKAGE = Path(__file__).resolve().parent.parent / "nsccn"
QUERIES = [
    # Common words (in most rows: FTS5 floors their IDF), rare ones, repeats (a repeated phrase
    # counts again), a word no row has, a term that matches only paths.
    "self def return nsccn store store store query terms bm25 postings",
    "tree sitter parser walk node identifier identifier assignment xyzzynotaword",
    "ranker features lightgbm model trees predict score file function",
    "supervisor zmq socket curve key private",
]
WEIGHTS = {
    "entities_fts": [BM25_WEIGHTS, (6.0, 0.0, 0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 0.0, 1.0), (1.0, 1.0, 1.0, 1.0, 1.0)],
    "files_fts": [FILE_WEIGHTS, (0.0, 1.0)],
}


def _terms(query: str) -> list[str]:
    return query.split()


def _assert_same_as_fts5(store: Store) -> int:
    checked = 0
    for table, weight_sets in WEIGHTS.items():
        for query in QUERIES:
            terms = _terms(query)
            found = store.bm25_matches(table, terms)
            assert found is not None
            for weights in weight_sets:
                w = ", ".join(map(str, weights))
                fts5 = dict(store.conn.execute(
                    f"SELECT rowid, bm25({table}, {w}) FROM {table} WHERE {table} MATCH ?", (any_of(terms),)))
                ours = dict(zip(found.rowids.tolist(), found.scores(weights).tolist()))
                assert ours.keys() == fts5.keys()
                assert [r for r in fts5 if ours[r] != fts5[r]] == []  # exact: no tolerance
                top = [r for (r,) in store.conn.execute(
                    f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY bm25({table}, {w}) LIMIT 40",
                    (any_of(terms),))]
                assert found.rowids[found.order(found.scores(weights))][:40].tolist() == top
                checked += len(fts5)
    return checked


@pytest.fixture
def package_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(PACKAGE, repo / "nsccn", ignore=shutil.ignore_patterns("__pycache__", "models"))
    index_repository(repo, workers=1)
    return repo


def test_scores_are_fts5s_own_before_and_after_incremental_updates(package_repo: Path):
    db = package_repo / ".nsccn" / "index.db"
    with Store(db, readonly=True) as reader:
        assert _assert_same_as_fts5(reader) > 1000
        before = reader.bm25_matches("entities_fts", ["postings"])
        # Rows deleted, changed and added: FTS5 keeps tombstones and new segments side by side.
        (package_repo / "nsccn" / "store" / "bm25.py").unlink()
        search = package_repo / "nsccn" / "query" / "streams.py"
        search.write_text(search.read_text().replace("def bm25_stream", "def postings_stream_renamed"))
        (package_repo / "nsccn" / "added.py").write_text("def postings_again(store):\n    return store\n")
        index_repository(package_repo, workers=1)
        # The same reader (another connection wrote): its cached postings must not answer.
        after = reader.bm25_matches("entities_fts", ["postings"])
        assert after.rowids.tolist() != before.rowids.tolist()
        assert _assert_same_as_fts5(reader) > 1000


def test_the_streams_give_fts5s_answers(package_repo: Path):
    with Store(package_repo / ".nsccn" / "index.db", readonly=True) as store:
        for query in QUERIES:
            terms = _terms(query)
            w = ", ".join(map(str, BM25_WEIGHTS))
            expected = [r for (r,) in store.conn.execute(
                f"SELECT rowid FROM entities_fts WHERE entities_fts MATCH ? ORDER BY bm25(entities_fts, {w}) LIMIT 25",
                (any_of(terms),))]
            assert bm25_stream(store, terms, limit=25) == expected
            files = [p for (p,) in store.conn.execute(
                "SELECT i.path FROM files_fts f JOIN files i ON i.id = f.rowid WHERE files_fts MATCH ? "
                "ORDER BY bm25(files_fts, 3.0, 1.0) LIMIT 10", (any_of(terms),))]
            assert file_bm25(store, terms, limit=10, code_only=True) == files


def test_scores_of_some_rows_are_the_same_lookups(package_repo: Path):
    with Store(package_repo / ".nsccn" / "index.db", readonly=True) as store:
        found = store.bm25_matches("entities_fts", _terms(QUERIES[0]))
        every = dict(zip(found.rowids.tolist(), found.scores(BM25_WEIGHTS).tolist()))
        asked = found.rowids.tolist()[::3] + [0, -5, max(every) + 1]  # and rows that do not match
        assert found.scores_of(asked, BM25_WEIGHTS) == {r: every[r] for r in asked if r in every}
        assert found.scores_of([], BM25_WEIGHTS) == {}


def test_a_term_the_tokenizer_would_split_goes_to_fts5(package_repo: Path):
    with Store(package_repo / ".nsccn" / "index.db", readonly=True) as store:
        assert store.bm25_matches("entities_fts", ["bm25", "Store"]) is None  # upper case: FTS5 folds it
        assert store.bm25_matches("entities_fts", ["bm25-stream"]) is None  # two tokens: a phrase
        # ... and the stream still answers, through FTS5.
        assert bm25_stream(store, ["Store", "bm25"], limit=5)


def test_weights_that_are_not_whole_numbers_are_refused(package_repo: Path):
    with Store(package_repo / ".nsccn" / "index.db", readonly=True) as store:
        found = store.bm25_matches("entities_fts", ["store"])
        with pytest.raises(ValueError, match="whole numbers"):
            found.scores((0.3, 1.0, 1.0, 1.0, 1.0))


def test_tables_never_written_or_emptied_answer_nothing(tmp_path: Path):
    # A repository of code only: its text table was never written to (an empty averages record).
    repo = tmp_path / "code_only"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "orders.py").write_text("def total(order):\n    return sum(order)\n")
    index_repository(repo, workers=1)
    with Store(repo / ".nsccn" / "index.db", readonly=True) as store:
        assert store.bm25_matches("text_fts", ["total"]).rowids.tolist() == []
        assert file_bm25(store, ["total", "order"]) == ["pkg/orders.py"]  # code and text merged
    # Every row deleted again.
    (repo / "pkg" / "orders.py").unlink()
    index_repository(repo, workers=1)
    with Store(repo / ".nsccn" / "index.db", readonly=True) as store:
        assert store.bm25_matches("files_fts", ["total"]).rowids.tolist() == []
        assert bm25_stream(store, ["total"]) == []


def test_idf_coverage_counts_each_distinct_term_once(package_repo: Path):
    """The share of the query's idf a row holds, checked against FTS5's own matches per term."""
    with Store(package_repo / ".nsccn" / "index.db", readonly=True) as store:
        terms = _terms(QUERIES[0])  # `store` three times: counted once
        found = store.bm25_matches("entities_fts", terms)
        (n_rows,) = store.conn.execute("SELECT count(*) FROM entities_fts").fetchone()
        idf, holds = {}, {}
        for term in dict.fromkeys(terms):
            rows = {r for (r,) in store.conn.execute("SELECT rowid FROM entities_fts WHERE entities_fts MATCH ?",
                                                     (term,))}
            if rows:  # a word no row has weighs nothing
                idf[term] = max(1e-6, math.log((n_rows - len(rows) + 0.5) / (len(rows) + 0.5)))
                holds[term] = rows
        total = sum(idf.values())
        coverage = found.idf_coverage()
        assert coverage.max() <= 1.0 + 1e-12 and coverage.min() > 0
        for i, rowid in enumerate(found.rowids.tolist()):
            expected = sum(w for t, w in idf.items() if rowid in holds[t]) / total
            assert coverage[i] == pytest.approx(expected, rel=1e-12)
