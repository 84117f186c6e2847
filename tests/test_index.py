"""Incremental indexing and every kind of bad input the scanner meets."""

import os
import time
from pathlib import Path

import pytest

from conftest import SHOP, edges_of, write_repo
from nsccn.config import Config
from nsccn.indexing.indexer import index_repository
from nsccn.reading.scan import scan_repository
from nsccn.store import Store


def db(repo: Path) -> Store:
    return Store(repo / ".nsccn" / "index.db", readonly=True)


def test_unchanged_rerun_does_nothing(shop_repo):
    first = index_repository(shop_repo, workers=1)
    assert first.files_indexed == len(SHOP)
    again = index_repository(shop_repo, workers=1)
    assert again.files_indexed == 0 and again.files_unchanged == len(SHOP)
    # Same content, new mtime: hashed, found equal, not re-parsed.
    os.utime(shop_repo / "shop/base.py", (time.time() + 5, time.time() + 5))
    touched = index_repository(shop_repo, workers=1)
    assert touched.files_indexed == 0 and touched.files_unchanged == len(SHOP)


def test_modify_rename_delete(shop_repo):
    index_repository(shop_repo, workers=1)
    svc = shop_repo / "shop/service.py"
    svc.write_text(svc.read_text() + "\n\ndef unregister(name):\n    return make_user(name)\n")
    s = index_repository(shop_repo, workers=1)
    assert s.files_indexed == 1
    with db(shop_repo) as store:
        assert "func:shop/models.py:make_user" in edges_of(store, "func:shop/service.py:unregister", "CALLS")

    # Rename the module that service imports from: edges into it must follow.
    (shop_repo / "shop/base.py").rename(shop_repo / "shop/basics.py")
    models = shop_repo / "shop/models.py"
    models.write_text(models.read_text().replace("from .base import Model", "from .basics import Model"))
    index_repository(shop_repo, workers=1)
    with db(shop_repo) as store:
        assert store.entity("class:shop/base.py:Model") is None
        assert store.entity("class:shop/basics.py:Model") is not None
        assert edges_of(store, "class:shop/models.py:User", "INHERITS") == {"class:shop/basics.py:Model": (1.0, "import")}
        assert edges_of(store, "method:shop/models.py:User.add_item", "CALLS")["method:shop/basics.py:Model.save"][1] == "self+MRO"
        assert store.skeleton("shop/base.py") is None

    # Delete a file: its entities, edges and skeleton go; edges into it are re-resolved away.
    (shop_repo / "shop/service.py").unlink()
    s = index_repository(shop_repo, workers=1)
    assert s.files_deleted == 1
    with db(shop_repo) as store:
        assert store.entities_in_file("shop/service.py") == []
        assert store.edges_from("func:shop/service.py:register") == []
        assert store.conn.execute("SELECT COUNT(*) FROM refs WHERE file NOT IN (SELECT id FROM files)").fetchone()[0] == 0
        hits = store.conn.execute("SELECT COUNT(*) FROM entities_fts WHERE entities_fts MATCH 'unregister'").fetchone()[0]
        assert hits == 0


def test_definition_appearing_later_is_resolved(tmp_path):
    repo = write_repo(tmp_path / "r", {"a.py": "from b import later\n\ndef f():\n    later()\n"})
    index_repository(repo, workers=1)
    with db(repo) as store:
        assert edges_of(store, "func:a.py:f", "CALLS") == {"ext:b.later": (1.0, "external")}
    write_repo(repo, {"b.py": "def later():\n    pass\n"})
    index_repository(repo, workers=1)
    with db(repo) as store:
        assert edges_of(store, "func:a.py:f", "CALLS") == {"func:b.py:later": (1.0, "import")}


def test_bad_inputs_are_skipped_and_counted(tmp_path):
    repo = write_repo(tmp_path / "r", {
        "ok.py": "def fine():\n    return 1\n",
        "latin1.py": b"# \xe9t\xe9\ndef accent():\n    return '\xe9'\n",
        "binary.py": b"\x00\x01\x02binary",
        "huge.py": "x = 1\n" * 400_000,
        "broken.py": "def ok_one():\n    pass\n\ndef bad(:\n    pass\n",
        "outside_target/secret.py": "def secret():\n    pass\n",
    })
    os.symlink(repo, repo / "loop")  # a symlink loop back to the root
    outside = tmp_path / "elsewhere.py"
    outside.write_text("def elsewhere():\n    pass\n")
    os.symlink(outside, repo / "escape.py")
    os.symlink(repo / "missing.py", repo / "dangling.py")
    unreadable = repo / "locked.py"
    unreadable.write_text("def locked():\n    pass\n")
    unreadable.chmod(0)
    try:
        s = index_repository(repo, workers=1)
    finally:
        unreadable.chmod(0o644)
    assert s.skipped["binary"] == 1
    assert s.skipped["too large"] == 1
    assert s.skipped["symlink loop"] == 1
    assert s.skipped["symlink outside repository"] == 1
    assert s.skipped["broken symlink"] == 1
    if os.geteuid() != 0:  # root reads anything
        assert s.skipped["unreadable"] == 1
    assert s.files_with_syntax_errors == 1
    with db(repo) as store:
        assert store.entity("func:ok.py:fine") is not None
        assert store.entity("func:latin1.py:accent") is not None
        assert store.entity("func:broken.py:ok_one") is not None
        assert store.entity("func:escape.py:elsewhere") is None
        assert store.file("binary.py") is None


def test_gitignore_nested_defaults_and_config(tmp_path):
    repo = write_repo(tmp_path / "r", {
        ".gitignore": "generated/\n*.gen.py\n",
        "pkg/.gitignore": "local_only.py\n",
        "pkg/keep.py": "x = 1\n",
        "pkg/local_only.py": "x = 1\n",
        "pkg/sub/local_only.py": "x = 1\n",
        "generated/out.py": "x = 1\n",
        "a.gen.py": "x = 1\n",
        "node_modules/lib.py": "x = 1\n",
        ".venv/lib/site.py": "x = 1\n",
        "__pycache__/c.py": "x = 1\n",
        "vendor/thing.py": "x = 1\n",
        "notes.txt": "not python\n",
    })
    files = {f.path for f in scan_repository(repo, Config(ignore_patterns=["vendor/"])).files}
    assert files == {"pkg/keep.py", "notes.txt"}  # text files too, not dotfiles
    files = {f.path for f in scan_repository(repo, Config(use_gitignore=False)).files}
    assert "generated/out.py" in files and "node_modules/lib.py" not in files


def test_write_is_atomic_per_batch(shop_repo, tmp_path):
    """A failure inside a write transaction leaves the previous rows intact."""
    from nsccn.reading.extract import parse_file

    index_repository(shop_repo, workers=1)
    store = Store(shop_repo / ".nsccn" / "index.db")
    before = store.counts()["entities"]
    good = parse_file("shop/base.py", b"def replaced():\n    pass\n")
    bad = parse_file("shop/errors.py", b"class X:\n    pass\n")
    bad = type(bad)(**{**{f: getattr(bad, f) for f in bad.__struct_fields__}, "entities": [None]})  # breaks mid-write
    with pytest.raises(Exception):
        store.write_files([good, bad])
    assert store.counts()["entities"] == before
    assert store.entity("func:shop/base.py:replaced") is None
    store.close()


def test_older_schema_is_rebuilt_never_misread(shop_repo, capfd):
    """An index of schema 3 (text ids in edges and refs) is rebuilt with one line on stderr: its
    tables dropped, the next run a first build with the same answers; a reader refuses it."""
    import apsw

    from nsccn.store.schema import SCHEMA_VERSION

    index_repository(shop_repo, workers=1)
    path = shop_repo / ".nsccn" / "index.db"
    with Store(path) as store:
        expected = store.counts()
        store.conn.execute("UPDATE meta SET value='3' WHERE key='schema_version'")
        store.conn.execute("INSERT INTO commits VALUES(1, 'abc', 0, 'kept', 0, 1)")  # history outlives a rebuild
    with pytest.raises(RuntimeError, match="schema 3"):
        Store(path, readonly=True)
    capfd.readouterr()
    s = index_repository(shop_repo, workers=1)
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "schema 3" in err[0] and "rebuilding" in err[0], err
    assert s.files_indexed == len(SHOP) and s.files_unchanged == 0
    with Store(path, readonly=True) as store:
        assert store.get_meta("schema_version") == str(SCHEMA_VERSION)
        assert store.counts() == expected
        assert store.conn.execute("SELECT message FROM commits").fetchall() == [("kept",)]
    newer = apsw.Connection(str(path))
    newer.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    newer.close()
    with pytest.raises(RuntimeError, match="newer"):
        Store(path)


def test_an_index_made_by_other_indexing_code_is_rebuilt_never_mixed(shop_repo, capfd):
    """Unchanged files keep what the code that indexed them extracted: an index whose recorded
    extraction digest is not this code's is refused by readers and rebuilt by the next run (one line
    on stderr), every file parsed again, the same answers, history kept."""
    from nsccn.store import IndexOutdated
    from nsccn.store.extraction import EXTRACTED_BY, extraction_digest

    index_repository(shop_repo, workers=1)
    path = shop_repo / ".nsccn" / "index.db"
    with Store(path) as store:
        assert store.get_meta(EXTRACTED_BY) == extraction_digest()
        expected = store.counts()
        store.conn.execute("UPDATE meta SET value='0123456789abcdef' WHERE key=?", (EXTRACTED_BY,))
        store.conn.execute("INSERT INTO commits VALUES(1, 'abc', 0, 'kept', 0, 1)")
    with pytest.raises(IndexOutdated, match="another version of nsccn's indexing code"):
        Store(path, readonly=True)
    capfd.readouterr()
    s = index_repository(shop_repo, workers=1)
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "another version" in err[0] and "rebuilding" in err[0], err
    assert s.files_indexed == len(SHOP) and s.files_unchanged == 0
    with Store(path, readonly=True) as store:
        assert store.get_meta(EXTRACTED_BY) == extraction_digest()
        assert store.counts() == expected
        assert store.conn.execute("SELECT message FROM commits").fetchall() == [("kept",)]
    s = index_repository(shop_repo, workers=1)  # made by this code now: nothing to parse
    assert s.files_indexed == 0 and capfd.readouterr().err.strip() == ""


def test_crash_between_write_and_resolve_is_repaired(shop_repo):
    """A run killed after writing files but before resolving leaves a flag; the next run repairs."""
    index_repository(shop_repo, workers=1)
    store = Store(shop_repo / ".nsccn" / "index.db")
    expected = store.counts()["edges"]
    store.set_meta("resolve_pending", "1")
    store.delete_edges([r[0] for r in store.refs(["shop/service.py"])])  # as if never resolved
    store.close()
    s = index_repository(shop_repo, workers=1)  # nothing changed on disk
    assert s.files_indexed == 0
    assert s.edges == expected


def test_a_touched_file_leaves_no_full_resolution_behind(shop_repo):
    """A new mtime on unchanged content (a checkout, a save without edits) writes nothing: the
    run must not leave the crash marker that makes the next run resolve every reference again."""
    index_repository(shop_repo, workers=1)
    p = shop_repo / "shop" / "models.py"
    os.utime(p, (time.time() + 5, time.time() + 5))
    s = index_repository(shop_repo, workers=1)
    assert s.files_indexed == 0 and s.files_unchanged == len(SHOP)
    with Store(shop_repo / ".nsccn" / "index.db", readonly=True) as store:
        assert store.get_meta("resolve_pending") == "0"


def test_binary_files_are_skipped_by_name_and_a_no_change_run_reads_nothing(tmp_path):
    """An image is skipped when scanned (never read, never planned): before, a skipped file was
    not remembered, so every no-change run read it again to find it binary."""
    from nsccn.config import load_config
    from nsccn.indexing.indexer import plan_changes
    from nsccn.reading.scan import scan_repository

    root = write_repo(tmp_path / "r", {"app.py": "def main():\n    return 1\n"})
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + bytes(64))
    (root / "blob.xyz").write_bytes(b"\0\1\2binary of an unknown kind")
    first = index_repository(root)
    assert first.skipped["binary"] == 2
    config = load_config(root)
    scan = scan_repository(root, config)
    assert scan.skipped["binary"] == 1 and "logo.png" not in {f.path for f in scan.files}
    with Store(config.db_path(root), readonly=True) as store:
        assert [f.path for f in plan_changes(root, store, scan.files).to_parse] == ["blob.xyz"]


def test_a_name_defined_twice_leaves_one_full_text_row(tmp_path):
    """A property's setter (or any redefinition) is one entity: one entities_fts row, so BM25's
    statistics count it once and a later entity that gets its rowid back is the only row there."""
    twice = ("class Response:\n    @property\n    def body(self):\n        return self._b\n\n"
             "    @body.setter\n    def body(self, value):\n        self._b = value\n\n\n"
             "def decode(response):\n    return response.body\n\n\ndef decode(response):\n    return response.body or b''\n")
    write_repo(tmp_path, {"pkg/resp.py": twice, "pkg/other.py": "def helper():\n    return 1\n"})

    def consistent() -> None:
        with Store(tmp_path / ".nsccn" / "index.db", readonly=True) as store:
            c = store.conn
            entities = {r for (r,) in c.execute("SELECT rowid FROM entities")}
            full_text = {r for (r,) in c.execute("SELECT id FROM entities_fts_docsize")}
            assert full_text == entities
            ids = [i for (i,) in c.execute("SELECT id FROM entities WHERE path='pkg/resp.py' ORDER BY start_line")]
            assert ids.count("method:pkg/resp.py:Response.body") == 1 and ids.count("func:pkg/resp.py:decode") == 1
            # the last definition is the entity
            assert c.execute("SELECT start_line FROM entities WHERE id='func:pkg/resp.py:decode'").fetchone()[0] == 15
            c.execute("SELECT rowid FROM entities_fts WHERE entities_fts MATCH 'response' "
                      "ORDER BY bm25(entities_fts)").fetchall()

    index_repository(tmp_path, workers=1)
    consistent()
    for step in range(3):  # rewritten, and new files take the highest rowids back
        (tmp_path / "pkg/resp.py").write_text(twice.replace("_b", f"_b{step}"))
        (tmp_path / f"pkg/new_{step}.py").write_text("def response_helper():\n    return 2\n")
        index_repository(tmp_path, workers=1)
        consistent()
