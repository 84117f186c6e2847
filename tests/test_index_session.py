"""The one index session (nsccn.indexing.index_session): looking at a file, committing, resolving, PageRank,
the crash marker; on real files and a real SQLite index. The writer actor and `nsccn index
--in-process` both run it (tests/test_pipeline.py and tests/test_index.py run them whole)."""

import os

import pytest

from conftest import SHOP, edges_of, write_repo
from nsccn.indexing.index_session import IndexSession, look_at, rank
from nsccn.messages import Parsed, Removed, Skipped, Unchanged
from nsccn.store import RESOLVE_PENDING, Store


def test_look_at_says_what_a_file_is_now(tmp_path):
    repo = write_repo(tmp_path / "r", {"a.py": "def f():\n    return 1\n", "big.py": "x = 1\n" * 100,
                                       "img.py": "\0\1\2binary"})
    os.mkfifo(repo / "fifo.py")
    os.symlink("/etc/hostname", repo / "out.py")
    parsed = look_at(repo, "a.py", 10_000, seq=7)
    assert isinstance(parsed, Parsed) and parsed.seq == 7 and parsed.file.path == "a.py"
    same = look_at(repo, "a.py", 10_000, known_hash=parsed.file.content_hash)
    assert isinstance(same, Unchanged) and same.size == parsed.file.size
    assert isinstance(look_at(repo, "gone.py", 10_000), Removed)
    # one set of skip reasons, whoever looks (the scan's, the pipeline's parser, the library's pool)
    reasons = {p: look_at(repo, p, 100).reason for p in ("big.py", "img.py", "fifo.py", "out.py")}
    assert reasons == {"big.py": "too large", "img.py": "binary", "fifo.py": "not a regular file",
                       "out.py": "symlink outside repository"}


def _session_on(repo, db):
    store = Store(db)
    return store, IndexSession(store)


def test_a_session_commits_resolves_and_ranks(tmp_path):
    repo = write_repo(tmp_path / "r", SHOP)
    store, session = _session_on(repo, tmp_path / "i.db")
    with store:
        assert session.first_build and session.full and not session.needs_resolve
        session.apply([look_at(repo, p, 1 << 20) for p in SHOP])
        assert session.tally.written == len(SHOP) and session.needs_resolve
        assert store.get_meta(RESOLVE_PENDING) == "1"  # written, not resolved: a crash now is seen
        session.resolve(parallel=False)
        assert session.settle(len(SHOP))  # a first build: PageRank at once
        assert store.get_meta(RESOLVE_PENDING) == "0" and not session.needs_resolve and not session.full
        assert "func:shop/models.py:make_user" in edges_of(store, "func:shop/service.py:register", "CALLS")
        computed = dict(store.conn.execute("SELECT entity_rowid, rank FROM ranks"))
        # PageRank off the session's connection (the writer's live edits) gives the same rows
        assert session.store_ranks(rank(tmp_path / "i.db")) == len(computed)
        assert dict(store.conn.execute("SELECT entity_rowid, rank FROM ranks")) == computed

        # An edit: an incremental resolution of what it affects; too small a change for PageRank.
        svc = repo / "shop/service.py"
        svc.write_text(svc.read_text() + "\n\ndef unregister(name):\n    return make_user(name)\n")
        known = session.file_rows(["shop/service.py"])["shop/service.py"][0]
        changes = session.apply([look_at(repo, "shop/service.py", 1 << 20, known_hash=known),
                                 look_at(repo, "shop/base.py", 1 << 20, known_hash=None)])
        assert [pf.path for pf in changes.write] == ["shop/service.py"]  # base.py: the index holds it
        assert session.tally.duplicates == 1 and session.paths == {"shop/service.py"} and not session.full
        session.resolve(parallel=False)
        assert not session.settle(len(SHOP) * 100)
        assert store.get_meta("ranks_pending_files") == "1"
        assert "func:shop/models.py:make_user" in edges_of(store, "func:shop/service.py:unregister", "CALLS")

        # A skip of an indexed file drops it; a file gone drops it.
        (repo / "shop/base.py").write_bytes(b"\0binary now")
        os.remove(svc)
        session.apply([look_at(repo, "shop/base.py", 1 << 20), look_at(repo, "shop/service.py", 1 << 20)])
        assert session.tally.removed == 2 and session.tally.skipped["binary"] == 1
        assert store.file("shop/base.py") is None and store.file("shop/service.py") is None


def test_a_session_after_a_crash_resolves_everything(tmp_path):
    repo = write_repo(tmp_path / "r", SHOP)
    db = tmp_path / "i.db"
    store, session = _session_on(repo, db)
    with store:
        session.apply([look_at(repo, p, 1 << 20) for p in SHOP])
        session.resolve(parallel=False)
        session.settle(len(SHOP))
        svc = repo / "shop/service.py"
        svc.write_text(svc.read_text() + "\n\ndef unregister(name):\n    return make_user(name)\n")
        session.apply([look_at(repo, "shop/service.py", 1 << 20)])
        # ... and the process dies here, before resolving
    store, after = _session_on(repo, db)
    with store:
        assert after.interrupted and after.full and after.needs_resolve and not after.first_build
        after.resolve(parallel=False)
        assert after.settle(len(SHOP))  # a full pass: PageRank again too
        assert store.get_meta(RESOLVE_PENDING) == "0"
        assert "func:shop/models.py:make_user" in edges_of(store, "func:shop/service.py:unregister", "CALLS")


@pytest.mark.parametrize("content", [b"def f(:\n", b"x = 1\n" * 3])
def test_the_session_counts_what_the_summary_prints(tmp_path, content):
    repo = write_repo(tmp_path / "r", {"a.py": content.decode()})
    store, session = _session_on(repo, tmp_path / "i.db")
    with store:
        session.apply([look_at(repo, "a.py", 1 << 20)])
        assert (session.tally.written, session.tally.lines) == (1, content.count(b"\n"))
