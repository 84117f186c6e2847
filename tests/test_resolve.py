"""Each edge kind on the fixture shop, with its resolution and confidence."""

from conftest import edges_of


def test_calls_through_imports_self_super_and_constructors(shop_index):
    _, store = shop_index
    reg = edges_of(store, "func:shop/service.py:register", "CALLS")
    assert reg["func:shop/models.py:make_user"] == (1.0, "import")
    assert reg["func:shop/models.py:bump"] == (1.0, "import")  # m.bump() via `import shop.models as m`
    assert reg["ext:json.dumps"] == (1.0, "external")  # stdlib kept as an external target

    add = edges_of(store, "method:shop/models.py:User.add_item", "CALLS")
    assert add["method:shop/base.py:Model.save"] == (0.9, "self+MRO")  # inherited through Model
    assert "method:shop/models.py:User.items" not in add

    val = edges_of(store, "method:shop/models.py:User.validate", "CALLS")
    assert val["method:shop/base.py:Model.validate"] == (1.0, "super+MRO")

    save = edges_of(store, "method:shop/base.py:Model.save", "CALLS")
    assert save["method:shop/base.py:Model.validate"] == (1.0, "self+MRO")

    mk = edges_of(store, "func:shop/models.py:make_user", "CALLS")
    assert mk["class:shop/models.py:User"] == (1.0, "same_module")
    assert mk["method:shop/models.py:User.__init__"] == (1.0, "same_module+constructor")
    assert mk["func:shop/models.py:make_user.helper"] == (1.0, "same_scope")


def test_inherits_imports_contains(shop_index):
    _, store = shop_index
    assert edges_of(store, "class:shop/models.py:User", "INHERITS") == {"class:shop/base.py:Model": (1.0, "import")}
    assert edges_of(store, "class:shop/errors.py:ShopError", "INHERITS") == {"ext:builtins.Exception": (1.0, "builtin")}
    imports = edges_of(store, "module:shop/models.py:shop.models", "IMPORTS")
    assert imports["class:shop/base.py:Model"] == (1.0, "import")
    assert imports["module:shop/config.py:shop.config"] == (1.0, "import")
    assert imports["ext:os"] == (1.0, "external")
    # `from .models import User` in the package __init__ re-exports; service imports through it.
    contains = edges_of(store, "class:shop/models.py:User", "CONTAINS")
    assert set(contains) == {
        "method:shop/models.py:User.__init__",
        "method:shop/models.py:User.display",
        "method:shop/models.py:User.validate",
        "method:shop/models.py:User.add_item",
        "method:shop/models.py:User.connect",
    }


def test_mutates(shop_index):
    _, store = shop_index
    init = edges_of(store, "method:shop/models.py:User.__init__", "MUTATES")
    assert init["attr:shop/models.py:User.name"] == (1.0, "self")
    add = edges_of(store, "method:shop/models.py:User.add_item", "MUTATES")
    assert add["attr:shop/models.py:User.items"] == (1.0, "self")  # self.items.append(...)
    assert edges_of(store, "func:shop/models.py:bump", "MUTATES") == {"var:shop/models.py:COUNTER": (1.0, "global")}


def test_reads_config(shop_index):
    _, store = shop_index
    conn = edges_of(store, "method:shop/models.py:User.connect", "READS_CONFIG")
    assert conn["var:shop/config.py:DATABASE_URL"] == (1.0, "import")
    assert conn["env:HOME"] == (1.0, "environment")
    add = edges_of(store, "method:shop/models.py:User.add_item", "READS_CONFIG")
    assert add["var:shop/config.py:MAX_ITEMS"] == (1.0, "import")
    cfg = edges_of(store, "module:shop/config.py:shop.config", "READS_CONFIG")
    assert cfg["env:DATABASE_URL"] == (1.0, "environment")


def test_propagates_error(shop_index):
    _, store = shop_index
    val = edges_of(store, "method:shop/models.py:User.validate", "PROPAGATES_ERROR")
    assert val == {"class:shop/errors.py:ValidationError": (1.0, "import")}
    add = edges_of(store, "method:shop/models.py:User.add_item", "PROPAGATES_ERROR")
    assert add == {"ext:builtins.ValueError": (1.0, "builtin")}
    mk = edges_of(store, "func:shop/models.py:make_user", "PROPAGATES_ERROR")
    assert mk == {"class:shop/errors.py:ValidationError": (1.0, "import")}  # bare raise in `except VErr`


def test_ambiguous_names_split_confidence(tmp_path):
    from conftest import write_repo
    from nsccn.indexing.indexer import index_repository
    from nsccn.store import Store

    repo = write_repo(tmp_path / "r", {
        "a.py": "class A:\n    def handle(self):\n        pass\n",
        "b.py": "class B:\n    def handle(self):\n        pass\n\ndef free():\n    pass\n",
        "c.py": "def go(x):\n    x.handle()\n\ndef solo_user(x):\n    x.only_here()\n\ndef bare(free):\n    free()\n",
        "d.py": "class D:\n    def only_here(self):\n        pass\n",
    })
    index_repository(repo, workers=1)
    with Store(repo / ".nsccn/index.db", readonly=True) as store:
        go = edges_of(store, "func:c.py:go", "CALLS")
        assert go == {"method:a.py:A.handle": (0.25, "ambiguous:2"), "method:b.py:B.handle": (0.25, "ambiguous:2")}
        solo = edges_of(store, "func:c.py:solo_user", "CALLS")
        assert solo == {"method:d.py:D.only_here": (0.35, "unique_name")}
        # a bare name the module binds by no import or definition (here a parameter) is no guess
        assert edges_of(store, "func:c.py:bare", "CALLS") == {}


def test_src_layout_canonical_module_names(tmp_path):
    from conftest import write_repo
    from nsccn.indexing.indexer import index_repository
    from nsccn.store import Store

    repo = write_repo(tmp_path / "r", {
        "src/pkg/__init__.py": "",
        "src/pkg/core.py": "def f():\n    pass\n",
        "tests/test_core.py": "from pkg.core import f\n\ndef test_f():\n    f()\n",
    })
    index_repository(repo, workers=1)
    with Store(repo / ".nsccn/index.db", readonly=True) as store:
        assert edges_of(store, "func:tests/test_core.py:test_f", "CALLS") == {"func:src/pkg/core.py:f": (1.0, "import")}


def test_one_name_resolves_per_caller_and_every_use_keeps_its_line(tmp_path):
    """Resolution answers each distinct reference of a file once and reuses the answer: the same
    bare name from two callers in one file must still resolve by each caller's own scope."""
    from conftest import write_repo
    from nsccn.indexing.indexer import index_repository
    from nsccn.store import Store

    root = write_repo(tmp_path / "repo", {"pkg/__init__.py": "", "pkg/m.py": """
        def helper():
            pass

        def a():
            def helper():
                pass
            helper()
            helper()

        def b():
            helper()
            helper()
    """})
    index_repository(root, workers=1)
    store = Store(root / ".nsccn" / "index.db", readonly=True)
    try:
        def calls(source):
            return sorted((e.target, e.resolution, e.line) for e in store.edges_from(source, ["CALLS"]))

        assert calls("func:pkg/m.py:a") == [("func:pkg/m.py:a.helper", "same_scope", 7),
                                            ("func:pkg/m.py:a.helper", "same_scope", 8)]
        assert calls("func:pkg/m.py:b") == [("func:pkg/m.py:helper", "same_module", 11),
                                            ("func:pkg/m.py:helper", "same_module", 12)]
    finally:
        store.close()


def test_a_first_build_writes_refs_without_their_indexes_and_resolution_makes_them(tmp_path):
    """A first build's refs go in without refs_tail/refs_head (one sort each at resolution, not
    a B-tree insert per ref); they exist once it is done, an edit's re-resolution reads them, and
    a writer that opens an index whose first build stopped before resolving makes them again."""
    import apsw

    from conftest import write_repo
    from nsccn.indexing.indexer import index_repository
    from nsccn.reading.extract import parse_file
    from nsccn.store import Store

    def ref_indexes(db):
        conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='index' AND tbl_name='refs'")}
        finally:
            conn.close()

    root = write_repo(tmp_path / "repo", {"a.py": "from b import g\n\n\ndef f():\n    g()\n", "b.py": "def g():\n    pass\n"})
    db = root / ".nsccn" / "index.db"
    store = Store(db)
    assert ref_indexes(db) == {"refs_tail", "refs_head"}  # a new index has them
    store.write_files([parse_file("a.py", (root / "a.py").read_bytes())])
    assert ref_indexes(db) == set()  # the first write into an empty refs table
    store.close()
    with Store(db):  # a writer opening it (the build stopped before resolving) makes them again
        pass
    assert ref_indexes(db) == {"refs_tail", "refs_head"}
    db.unlink()
    index_repository(root, workers=1)
    assert ref_indexes(db) == {"refs_tail", "refs_head"}
    (root / "b.py").write_text("def g():\n    pass\n\ndef h():\n    g()\n")
    index_repository(root, workers=1)  # re-resolves by name through refs_tail
    with Store(db, readonly=True) as store:
        assert set(edges_of(store, "func:a.py:f", "CALLS")) == {"func:b.py:g"}
        assert set(edges_of(store, "func:b.py:h", "CALLS")) == {"func:b.py:g"}


def test_the_symbol_table_holds_each_entity_once_and_no_empty_entries(shop_index):
    """The resolver's table grows with the repository (a bulk resolution's child holds all of it:
    a 100k-file tree made it 369 MB), so each entity's (id, kind) is one object that both lookups
    share, each path is one string object, and a file with no globals, imports or star imports
    has no entry (every reader asks `.get(path, ())`)."""
    from nsccn.indexing.resolve import Resolver

    _, store = shop_index
    r = Resolver(store)
    by_id = {entry[0]: entry for entries in r.by_name.values() for entry in entries}
    assert len(r.by_key) == len(by_id) > 10
    assert all(by_id[entry[0]] is entry for entry in r.by_key.values())
    path_object = {p: p for p in r.language}
    assert all(path_object[path] is path for path, _ in r.by_key)
    assert len(r.language) > len(r.globals) and len(r.language) > len(r.stars)  # the fixture has files without them
    assert all(r.globals.values()) and all(r.stars.values()) and all(r.imports.values())
    assert r.by_key[("shop/models.py", "User")][1] == "class"
