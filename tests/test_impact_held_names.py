"""Names that hold what runs: a function a class attribute holds (`MAKER = staticmethod(f)`) and a
base class calls as `self.MAKER(...)`; a name a function imports for its nested function (`def
cachedmethod(): from ._method import _wrap`, while another function of the file imports `_wrap`
from elsewhere); a class held by `partial(Cls, ...)`; a test that calls `x.m()` on an object of
unknown type where too many classes define `m` for the resolver to guess. A real index, a real
impact walk on a change."""

from __future__ import annotations


import pytest

from conftest import impact_of_edit, indexed_git_repo

FORMATS = "\n\n".join(f"class Format{c}:\n    def loads(self, s):\n        return '{c}' + s\n" for c in "ABCDEF")

FILES = {
    "src/pkg/__init__.py": "",
    "src/pkg/caching.py": """
        def lru(maxsize):
            return maxsize


        def mru(maxsize):
            return -maxsize
    """,
    "src/pkg/_plain.py": """
        def _wrap(f):
            return f
    """,
    "src/pkg/_method.py": """
        def _wrap(f):
            return ("method", f)
    """,
    "src/pkg/api.py": """
        def cached():
            from pkg._plain import _wrap

            def deco(f):
                return _wrap(f)
            return deco


        def cachedmethod():
            from pkg._method import _wrap

            def deco(f):
                return _wrap(f)
            return deco
    """,
    "src/pkg/ser.py": """
        class Serializer:
            def __init__(self, key):
                self.key = key

            def dumps(self, x):
                return f"{self.key}{x}"
    """,
    "src/pkg/formats.py": FORMATS,
    "src/pkg/dispatch.py": """
        def handle_csv(x):
            return x


        def handle(kind, x):
            return globals()["handle_" + kind](x)
    """,
    "src/pkg/handlers.py": """
        class EchoHandler:
            def handle(self):
                return "echo"
    """,
    "src/pkg/server.py": """
        def serve(handler_class):
            return handler_class().handle()


        class App:
            def use(self, handler_class):
                return handler_class().handle()
    """,
    "tests/test_chain.py": """
        from pkg.handlers import EchoHandler
        from pkg.server import App


        def test_chained():
            assert App().use(EchoHandler) == "echo"
    """,
    "tests/__init__.py": "",
    "tests/test_server.py": """
        from pkg.handlers import EchoHandler
        from pkg.server import serve


        def test_serve():
            assert serve(EchoHandler) == "echo"


        def test_alone():
            assert serve
    """,
    "tests/test_dispatch.py": """
        from pkg.dispatch import handle


        def test_csv():
            assert handle("csv", 1) == 1
    """,
    "tests/test_local_alias.py": """
        import pkg.caching as caching_mod


        def test_local_alias():
            lru = caching_mod.lru
            assert lru(2) == 2
    """,
    "tests/test_package_only.py": """
        import pkg


        def test_package():
            assert pkg
    """,
    "tests/test_held.py": """
        import unittest

        from pkg import caching


        class Mixin:
            def make(self, n):
                return self.MAKER(n)

            def test_make(self):
                assert self.make(2)


        class TestLRU(unittest.TestCase, Mixin):
            MAKER = staticmethod(caching.lru)


        class TestMRU(unittest.TestCase, Mixin):
            MAKER = staticmethod(caching.mru)
    """,
    "tests/test_api.py": """
        from pkg.api import cached, cachedmethod


        def test_method():
            assert cachedmethod()(len)


        def test_plain():
            assert cached()(len)
    """,
    "tests/test_ser.py": """
        from functools import partial

        from pkg.ser import Serializer


        def test_factory():
            factory = partial(Serializer, key="k")
            assert factory(key="j")


        def test_nothing():
            assert True
    """,
    "tests/test_formats.py": """
        import pytest

        from pkg import formats


        @pytest.fixture
        def fmt():
            return getattr(formats, "FormatC")()


        def test_loads(fmt):
            assert fmt.loads("x")


        def test_other():
            assert True
    """,
}


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    root = indexed_git_repo(tmp_path_factory.mktemp("held"), FILES)
    return root


def _tests(root, rel, old, new):
    return {(t.file, t.qualname): t for t in impact_of_edit(root, rel, old, new).tests}


def test_a_function_a_subclass_holds_in_a_class_attribute_runs_where_the_base_calls_it(repo):
    tests = _tests(repo, "src/pkg/caching.py", "return -maxsize", "return -maxsize - 1")
    assert ("tests/test_held.py", "TestMRU.test_make") in tests
    assert "-CALLS" in tests[("tests/test_held.py", "TestMRU.test_make")].reason


def test_a_nested_function_calls_what_its_enclosing_function_imports(repo):
    tests = _tests(repo, "src/pkg/_method.py", 'return ("method", f)', 'return ("method!", f)')
    assert ("tests/test_api.py", "test_method") in tests
    assert ("tests/test_api.py", "test_plain") not in tests
    tests = _tests(repo, "src/pkg/_plain.py", "return f", "return (f)")
    assert ("tests/test_api.py", "test_plain") in tests
    assert ("tests/test_api.py", "test_method") not in tests


def test_a_partial_of_a_class_builds_the_class(repo):
    tests = _tests(repo, "src/pkg/ser.py", "self.key = key", "self.key = key or None")
    assert ("tests/test_ser.py", "test_factory") in tests
    assert ("tests/test_ser.py", "test_nothing") not in tests


def test_a_test_calling_a_method_name_too_common_to_guess_is_selected_by_name(repo):
    tests = _tests(repo, "src/pkg/formats.py", "return 'C' + s", "return 'C!' + s")
    assert "NAMED_BY_TEST" in tests[("tests/test_formats.py", "test_loads")].reason
    assert ("tests/test_formats.py", "test_other") not in tests


def test_a_test_no_edge_reaches_in_a_file_importing_the_changed_module_is_a_module_test(repo):
    out = impact_of_edit(repo, "src/pkg/dispatch.py", "return x", "return (x)")
    assert ("tests/test_dispatch.py", "test_csv") not in {(t.file, t.qualname) for t in out.tests}  # no edge: a name built at run time
    module_tests = {(t.file, t.qualname): t for t in out.module_tests}
    assert set(module_tests) == {("tests/test_dispatch.py", "test_csv")}  # not the file that imports only the package
    assert module_tests[("tests/test_dispatch.py", "test_csv")].confidence == 0.3
    assert "tests/test_dispatch.py::test_csv" in out.run
    assert impact_of_edit(repo, "src/pkg/dispatch.py", "return x", "return (x)", min_confidence=0.5).module_tests == []


def test_a_local_name_bound_to_a_modules_function_calls_it(repo):
    tests = _tests(repo, "src/pkg/caching.py", "return maxsize\n", "return maxsize + 0\n")
    assert "-CALLS" in tests[("tests/test_local_alias.py", "test_local_alias")].reason


def test_a_class_handed_to_a_call_as_a_value_reaches_the_test_that_hands_it(repo):
    out = impact_of_edit(repo, "src/pkg/handlers.py", 'return "echo"', 'return "echo!"')
    tests = {(t.file, t.qualname): t for t in out.tests}
    assert "-PASSES(0.8)-> class:src/pkg/handlers.py:EchoHandler" in tests[("tests/test_server.py", "test_serve")].reason
    assert ("tests/test_server.py", "test_alone") not in tests  # a module test at most: its file imports the module
    # handed to a method of what a call returned: the callee has no name, what it is handed does
    assert "-PASSES(0.8)-> class:src/pkg/handlers.py:EchoHandler" in tests[("tests/test_chain.py", "test_chained")].reason
