"""A module global bound to a name of the repository is that name (issue 42: `s = attributes =
attrs` in a package's `__init__`, tests calling `pkg.s(...)`): a call of the global, or of
`module.global`, is a call of what it holds. A real parse, a real index, a real impact walk, and a
real incremental update when the binding changes."""

from __future__ import annotations

import subprocess

import pytest

from conftest import write_repo
from nsccn.indexing.indexer import index_repository
from nsccn.serving.navigator import Navigator

FILES = {
    "src/pkg/__init__.py": """
        from functools import partial
        from io import open as io_open

        from ._make import Base, attrib, attrs

        s = attributes = attrs
        ib = attrib
        Model = Base
        twice = attrs
        twice = attrib
        opener = io_open
        again = s
        dataclass = partial(attrs, auto=True)
    """,
    "src/pkg/_make.py": """
        class Base:
            def __init__(self):
                self.ok = True


        def attrs():
            return 1


        def attrib():
            return 2
    """,
    "tests/test_alias.py": """
        import pkg
        from pkg import attributes


        def test_s():
            assert pkg.s() == 1


        def test_chained():
            assert attributes() == 1


        def test_ib():
            assert pkg.ib() == 2


        def test_again():
            assert pkg.again() == 1


        def test_partial():
            assert pkg.dataclass() == 1


        def test_twice():
            pkg.twice()


        def test_opener():
            pkg.opener("x")


        class Sub(pkg.Model):
            pass


        def test_model():
            Sub()
    """,
}


def _git(root, *args):
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=root, check=True)


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    root = write_repo(tmp_path_factory.mktemp("alias"), FILES)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "one")
    index_repository(root, workers=1, embed=False)
    return root


def _edges(root):
    nav = Navigator(root)
    try:
        return {(e.source, e.target): e for e in nav.store.all_edges() if e.relation in ("CALLS", "INHERITS")}
    finally:
        nav.close()


T = "func:tests/test_alias.py:"
MAKE = "src/pkg/_make.py"


def test_a_call_of_a_global_bound_to_a_name_calls_that_name(repo):
    edges = _edges(repo)
    e = edges[(T + "test_s", f"func:{MAKE}:attrs")]  # `pkg.s()`, `s = attributes = attrs`
    assert e.confidence == 1.0 and "alias" in e.resolution
    assert (T + "test_chained", f"func:{MAKE}:attrs") in edges  # the middle name of a chain, imported
    assert (T + "test_ib", f"func:{MAKE}:attrib") in edges
    assert (T + "test_again", f"func:{MAKE}:attrs") in edges  # a global bound to an alias
    assert (T + "test_partial", f"func:{MAKE}:attrs") in edges  # `partial(attrs, ...)` calls attrs
    assert (T + "test_s", "var:src/pkg/__init__.py:s") not in edges
    # a class: subclassing the alias subclasses it, building the subclass runs its __init__
    assert edges[("class:tests/test_alias.py:Sub", f"class:{MAKE}:Base")].relation == "INHERITS"
    # assigned twice: no one value; bound to a name outside the repository: the global stays
    assert (T + "test_twice", "var:src/pkg/__init__.py:twice") in edges
    assert not [k for k in edges if k[0] == T + "test_twice" and k[1].startswith("func:")]
    assert (T + "test_opener", "var:src/pkg/__init__.py:opener") in edges
    assert not [e for e in edges.values() if e.relation == "BINDS"]  # a binding is read, never an edge


def test_a_change_reaches_the_tests_that_call_through_the_alias(repo):
    path = repo / MAKE
    text = path.read_text()
    path.write_text(text.replace("return 1", "return 1 + 0"))
    nav = Navigator(repo)
    try:
        tests = {t.id for t in nav.impact().tests}
    finally:
        nav.close()
        path.write_text(text)
    assert {T + "test_s", T + "test_chained", T + "test_again"} <= tests
    assert T + "test_ib" not in tests and T + "test_twice" not in tests


def test_a_rebound_global_is_resolved_again_on_update(repo, tmp_path):
    init = repo / "src/pkg/__init__.py"
    text = init.read_text()
    init.write_text(text.replace("ib = attrib", "ib = attrs"))
    try:
        index_repository(repo, workers=1, embed=False)  # an update: only what changed is resolved again
        edges = _edges(repo)
        assert (T + "test_ib", f"func:{MAKE}:attrs") in edges
        assert (T + "test_ib", f"func:{MAKE}:attrib") not in edges
    finally:
        init.write_text(text)
        index_repository(repo, workers=1, embed=False)
    assert (T + "test_ib", f"func:{MAKE}:attrib") in _edges(repo)
