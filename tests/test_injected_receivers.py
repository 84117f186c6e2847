"""Receivers typed by what a pytest fixture or a factory returns, classes held in class
attributes, property reads as calls of their getter (issue 42's misses): a real parse of a small
tree, a real index, a real impact walk."""

from __future__ import annotations


import pytest

from conftest import indexed_git_repo
from nsccn.serving.navigator import Navigator
from nsccn.store import Store

FILES = {
    "src/pkg/__init__.py": "",
    "src/pkg/runner.py": """
        class Session:
            def __init__(self, data):
                self.data = data

            @property
            def permanent(self):
                return self.data.get("permanent", False)


        class Holder:
            def __init__(self):
                self.session = Session({})

            @property
            def flag(self):
                return self.session.permanent

            def plain(self):
                return self.flag, self.session.data


        def reader(s: Session):
            return s.permanent


        def unknown(other):
            return other.permanent


        class Case:
            @property
            def expected(self):
                return 1


        DEFAULT_CASE = Case()


        def wrap(fn):
            return fn


        class Interface:
            session_class = Session
            alias = Session

            def open(self, data):
                return self.session_class(data)

            def other(self):
                return 1


        def execute(cli):
            return cli()


        class Runner:
            def invoke(self, cli):
                return execute(cli)

            def isolation(self):
                return 1


        class Other:
            def invoke(self, cli):
                return 2

            def isolation(self):
                return 2


        def make_runner():
            r = Runner()
            return r


        def either(flag):
            if flag:
                return Runner()
            return Other()


        def gen_runner():
            yield Runner()
        """,
    "tests/conftest.py": """
        import pytest
        from pkg.runner import Runner, make_runner


        @pytest.fixture
        def runner():
            return Runner()


        @pytest.fixture
        def made():
            r = make_runner()
            yield r


        def not_a_fixture():
            return Runner()
        """,
    "tests/test_cases.py": """
        import pytest
        from pkg.runner import Case

        CASES = [Case(), Case()]


        @pytest.mark.parametrize("case", CASES)
        def test_case(case):
            assert case.expected == 1


        def test_unrelated():
            assert True


        def test_decorated():
            from pkg.runner import wrap

            @wrap
            def view():
                return 1


        def test_default():
            from pkg.runner import DEFAULT_CASE
            assert DEFAULT_CASE
        """,
    "tests/test_run.py": """
        from pkg.runner import either, gen_runner, make_runner


        def test_invoke(runner):
            runner.invoke(print)


        def test_made(made):
            made.isolation()


        def test_factory():
            r = make_runner()
            r.isolation()


        def test_not_one_type():
            r = either(True)
            r.isolation()


        def test_generator():
            g = gen_runner()
            g.isolation()


        def helper(runner):
            runner.invoke(print)


        def test_not_injected(not_a_fixture):
            not_a_fixture.invoke(print)
        """,
}


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    root = indexed_git_repo(tmp_path_factory.mktemp("injected"), FILES)
    nav = Navigator(root)
    try:
        edges = {(e.source, e.target): e for e in nav.store.all_edges() if e.relation == "CALLS"}
    finally:
        nav.close()
    return root, edges


def _typed(edges, source, target):
    e = edges.get((source, target))
    return e is not None and e.resolution == "typed" and e.confidence >= 0.8


def test_a_fixture_parameter_is_what_its_fixture_returns(indexed):
    _, edges = indexed
    t, run = "func:tests/test_run.py:", "method:src/pkg/runner.py:"
    assert _typed(edges, t + "test_invoke", run + "Runner.invoke")  # `return Runner()` in conftest.py
    assert not edges.get((t + "test_invoke", run + "Other.invoke"))
    assert _typed(edges, t + "test_made", run + "Runner.isolation")  # yields a local made by a factory
    assert _typed(edges, t + "test_factory", run + "Runner.isolation")  # a factory with no annotation
    # two types returned, a generator called, a helper (pytest injects nothing), not a fixture: no type
    for test, method in (("test_not_one_type", "isolation"), ("test_generator", "isolation"),
                         ("helper", "invoke"), ("test_not_injected", "invoke")):
        assert not any(_typed(edges, t + test, f"{run}{cls}.{method}") for cls in ("Runner", "Other")), test


def test_a_class_held_in_a_class_attribute_is_called_through_self(indexed):
    _, edges = indexed
    open_ = "method:src/pkg/runner.py:Interface.open"
    assert edges[(open_, "class:src/pkg/runner.py:Session")].confidence == 1.0
    assert (open_, "method:src/pkg/runner.py:Session.__init__") in edges


def test_a_test_reaches_a_change_through_its_fixture(indexed):
    root, _ = indexed
    path = root / "src/pkg/runner.py"
    text = path.read_text()
    path.write_text(text.replace("return cli()", "return cli() or None"))  # `execute`: only the typed call reaches it
    nav = Navigator(root)
    try:
        out = nav.impact()
    finally:
        nav.close()
        path.write_text(text)
    tests = {t.id: t.reason for t in out.tests}
    assert tests["func:tests/test_run.py:test_invoke"].startswith(
        "func:tests/test_run.py:test_invoke -CALLS(0.9)-> method:src/pkg/runner.py:Runner.invoke"), tests


def test_a_property_read_on_a_known_type_calls_its_getter(indexed):
    _, edges = indexed
    run = "src/pkg/runner.py:"
    getter = f"method:{run}Session.permanent"
    assert edges[(f"func:{run}reader", getter)].resolution == "typed+property"  # a typed parameter
    assert edges[(f"method:{run}Holder.flag", getter)].resolution == "typed+property"  # a typed field
    assert edges[(f"method:{run}Holder.plain", f"method:{run}Holder.flag")].resolution == "self+MRO+property"
    # a plain attribute is no call; an unknown receiver (`other.permanent`) is no edge above a guess
    assert not [e for (src, _), e in edges.items() if src == f"method:{run}Holder.plain" and e.target.endswith(".data")]
    assert (f"func:{run}unknown", getter) not in edges


def test_a_parametrized_test_reaches_what_its_module_builds(indexed):
    root, _ = indexed
    path = root / "src/pkg/runner.py"
    text = path.read_text()
    path.write_text(text.replace("return 1\n", "return 2 - 1\n", 1))  # Case.expected (the first `return 1`)
    nav = Navigator(root)
    try:
        out = nav.impact()
    finally:
        nav.close()
        path.write_text(text)
    assert [c.id for c in out.changed] == ["method:src/pkg/runner.py:Case.expected"]
    tests = {t.id: t.reason for t in out.tests}
    # `case.expected`: no type, no edge; the module builds the cases parametrize hands the test
    assert "PARAMETRIZES" in tests["func:tests/test_cases.py:test_case"], tests
    # a global the library's top-level code builds (`DEFAULT_CASE = Case()`), imported by a test
    assert "-ASSIGNS(0.8)-> module:src/pkg/runner.py" in tests["func:tests/test_cases.py:test_default"], tests
    assert "func:tests/test_cases.py:test_unrelated" not in tests


def test_a_decorator_written_as_a_name_is_a_call(indexed):
    _, edges = indexed
    e = edges[("func:tests/test_cases.py:test_decorated", "func:src/pkg/runner.py:wrap")]
    assert e.resolution == "import" and e.line == 19
    # `@property`: a builtin gives no edge; `@pytest.fixture`: a decorator of another package, an external one
    assert not [k for k in edges if k[0] == "class:src/pkg/runner.py:Case"]
    assert ("module:tests/conftest.py:tests.conftest", "ext:pytest.fixture") in edges


def test_a_changed_module_line_reaches_only_the_globals_it_sets(indexed):
    root, _ = indexed
    path = root / "src/pkg/runner.py"
    text = path.read_text()
    path.write_text("import os\n" + text)  # the module's top level changes; no global it sets does
    nav = Navigator(root)
    try:
        out = nav.impact()
    finally:
        nav.close()
        path.write_text(text)
    assert "module:src/pkg/runner.py:src.pkg.runner" in [c.id for c in out.changed]
    assert "func:tests/test_cases.py:test_default" not in {t.id for t in out.tests}
