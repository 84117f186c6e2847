"""Bulk resolution by child processes (nsccn.indexing.resolve_partitions): the same edges as one process,
and a child that dies fails the resolution and leaves the index as it was."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SHOP, write_repo
from nsccn.indexing.indexer import index_repository
from nsccn.indexing.resolution import resolve_everything
from nsccn.indexing.resolve_partitions import DIE_AFTER_ENV, ResolveFailed, partitions
from nsccn.store import Store

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import index_identity  # noqa: E402


def _repo(root: Path) -> Path:
    """The shop, and more files that call into it: references across files and partitions."""
    files = dict(SHOP)
    for i in range(12):
        files[f"app/step{i}.py"] = (
            "from shop.models import User\nfrom shop.service import register\n\n"
            f"class Step{i}(User):\n    def run(self):\n        self.validate()\n        return register('n{i}')\n"
        )
    return write_repo(root, files)


@pytest.fixture
def indexed(tmp_path):
    root = _repo(tmp_path / "repo")
    index_repository(root, workers=1)
    return root / ".nsccn" / "index.db"


def test_partitions_cut_between_files_and_cover_every_ref(indexed):
    with Store(indexed, readonly=True) as store:
        files = store.conn.execute("SELECT refs_first, refs_last FROM files WHERE refs_last >= refs_first").fetchall()
        total = store.ref_count()
        for n in (1, 2, 3, 50):
            spans = partitions(store, n)
            assert 1 <= len(spans) <= n
            assert spans[0][0] == 0 and spans[-1][1] == max(last for _, last in files)
            assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))  # contiguous, no ref twice
            assert sum(upto - after for after, upto in spans) == total
            ends = {last for _, last in files}
            assert all(upto in ends for _, upto in spans)  # a file's refs stay in one partition


def _edge_indexes(db: Path) -> list[tuple[str, str]]:
    """The edges' indexes as the schema made them: a full resolution drops them while it inserts."""
    with Store(db, readonly=True) as store:
        return store.conn.execute("SELECT name, sql FROM sqlite_master WHERE type='index' AND tbl_name='edges'"
                                  " ORDER BY name").fetchall()


@pytest.mark.parametrize("children", [0, 1, 2, 3])
def test_children_resolve_the_edges_one_process_does(indexed, children):
    before, indexes = index_identity.dump(str(indexed)), _edge_indexes(indexed)
    assert len(indexes) == 3  # source, target, the partial one of INHERITS
    with Store(indexed) as store:
        n = resolve_everything(store, children=children)
        assert n == store.counts()["edges"] > 0
    assert index_identity.compare(before, index_identity.dump(str(indexed))) == []
    assert _edge_indexes(indexed) == indexes


@pytest.mark.parametrize("frames", [0, 1])
def test_a_killed_child_fails_the_resolution_and_keeps_the_index(indexed, monkeypatch, frames):
    """A child killed before or after it sent edges: nothing of the resolution is kept."""
    before, indexes = index_identity.dump(str(indexed)), _edge_indexes(indexed)
    monkeypatch.setenv(DIE_AFTER_ENV, str(frames))
    with Store(indexed) as store:
        with pytest.raises(ResolveFailed, match=r"resolving partition \d of 2 .* killed by SIGKILL"):
            resolve_everything(store, children=2)
        assert store.counts()["edges"] > 0
    assert index_identity.compare(before, index_identity.dump(str(indexed))) == []
    assert _edge_indexes(indexed) == indexes  # the rollback brought back the dropped indexes


def test_a_child_that_cannot_read_the_index_says_why(tmp_path):
    r = subprocess.run([sys.executable, "-m", "nsccn.indexing.resolve_partitions", str(tmp_path / "none.db"), "0", "10",
                        str(os.getpid())],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [f"IndexMissing: no index at {tmp_path / 'none.db'}: run `nsccn index` first"]


def test_index_in_process_with_a_killed_child_fails_in_one_line_and_the_next_run_resolves(tmp_path, monkeypatch):
    """`nsccn index --in-process` with parser processes resolves in children too: a killed child
    ends the run with one line, the crash marker stays, and the next run resolves everything."""
    root = _repo(tmp_path / "repo")
    ref = tmp_path / "ref.db"
    index_repository(root, ref, workers=1)
    monkeypatch.setenv("NSCCN_RESOLVE_CHILDREN", "2")

    def index(**env):
        return subprocess.run([sys.executable, "-m", "nsccn.cli", "index", str(root), "--in-process", "--workers", "2"],
                              capture_output=True, text=True, timeout=120, env={**os.environ, **env})

    r = index(**{DIE_AFTER_ENV: "1"})
    assert r.returncode == 1
    errors = [line for line in r.stderr.splitlines() if line and not line.startswith("nsccn: parsing ")]
    assert len(errors) == 1 and "killed by SIGKILL" in errors[0]  # one line besides the progress lines
    db = root / ".nsccn" / "index.db"
    with Store(db, readonly=True) as store:
        assert store.get_meta("resolve_pending") == "1" and store.counts()["edges"] == 0
    r = index()
    assert r.returncode == 0, r.stderr
    assert index_identity.compare(index_identity.dump(str(ref)), index_identity.dump(str(db))) == []
