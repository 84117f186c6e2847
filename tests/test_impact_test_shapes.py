"""Tests the runner makes out of others: a test method written once in a base class runs in each
test class that inherits it (`class TestLRU(CacheTests)`), and what a test's decorator calls
(`@given(items())`, `@pytest.mark.parametrize("x", [make()])`) is handed to the test. A real
index, a real impact walk on a change."""

from __future__ import annotations


import pytest

from conftest import indexed_git_repo
from nsccn.serving.navigator import Navigator

FILES = {
    "src/pkg/__init__.py": "",
    "src/pkg/core.py": """
        def build(n):
            return list(range(n))


        def fetch(cache, key):
            return cache.get(key)


        def spare():
            return 0
    """,
    "tests/__init__.py": "",
    "tests/base.py": """
        from pkg.core import fetch


        class CacheTests:
            def test_fetch(self):
                assert fetch({1: 2}, 1) == 2

            def test_other(self):
                assert True
    """,
    "tests/strategies.py": """
        from pkg.core import build


        def items():
            return build(3)


        def given(value):
            return lambda f: f


        nested = [items()]
    """,
    "tests/test_caches.py": """
        import pytest

        from pkg.core import spare
        from tests.base import CacheTests
        from tests.strategies import given, items, nested


        class TestLRU(CacheTests):
            pass


        class TestLFU(CacheTests):
            def test_fetch(self):
                assert spare() == 0


        class TestBuilt:
            @given(items())
            def test_items(self, value):
                assert value

            @pytest.mark.parametrize("n", [spare()])
            def test_spare(self, n):
                assert n == 0

            def test_plain(self):
                assert True

            @given(nested)
            def test_nested(self, value):
                assert value


        @pytest.mark.parametrize("value", [items()])
        def test_module_level(value):
            assert value
    """,
}


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    root = indexed_git_repo(tmp_path_factory.mktemp("shapes"), FILES)
    return root


def _tests(root, old, new):
    file = root / "src/pkg/core.py"
    text = file.read_text()
    file.write_text(text.replace(old, new, 1))
    nav = Navigator(root)
    try:
        return {(t.file, t.qualname): t for t in nav.impact().tests}
    finally:
        nav.close()
        file.write_text(text)


CASES = "tests/test_caches.py"


def test_an_inherited_test_method_runs_in_each_test_class_that_inherits_it(repo):
    tests = _tests(repo, "return cache.get(key)", "return cache.get(key, None)")
    assert (CASES, "TestLRU.test_fetch") in tests
    assert "inherits method:tests/base.py:CacheTests.test_fetch" in tests[(CASES, "TestLRU.test_fetch")].reason
    assert (CASES, "TestLRU.test_other") not in tests


def test_a_call_in_a_tests_decorator_reaches_the_test(repo):
    tests = _tests(repo, "return list(range(n))", "return list(range(n + 1))")
    assert tests[(CASES, "TestBuilt.test_items")].reason.startswith(
        "method:tests/test_caches.py:TestBuilt.test_items -DECORATES(0.9)-> func:tests/strategies.py:items")
    assert (CASES, "test_module_level") in tests
    assert "-DECORATES(0.9)-> var:tests/strategies.py:nested" in tests[(CASES, "TestBuilt.test_nested")].reason
    assert (CASES, "TestBuilt.test_plain") not in tests
