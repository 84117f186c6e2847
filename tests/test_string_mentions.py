"""What links a test to code no call names (issue 42's last misses): a dotted name a test spells in
a string (`import_module("webapp.main")`, the source of a module it writes), a function's own
import of a name its module also defines, a class bound to a local name and called. A real
parse of a small tree, a real index, a real impact walk."""

from __future__ import annotations


import pytest

from conftest import indexed_git_repo
from nsccn.serving.navigator import Navigator

FILES = {
    "src/pkg/__init__.py": "from .core import Engine\n",
    "src/pkg/core.py": """
        class Engine:
            def __init__(self, name):
                self.name = name
                self.start()

            def start(self):
                return self.name


        def spare():
            return 2
    """,
    "src/pkg/notes.py": """
        WHERE = "the engine is pkg.core.Engine"  # library prose: only a string that is a dotted name alone is read
    """,
    "src/pkg/lazy.py": """
        def render(text):
            from ._impl import render
            return render(text)


        def again(text):
            return again(text[1:]) if text else text
    """,
    "src/pkg/_impl.py": """
        def render(text):
            return text.upper()
    """,
    "src/pkg/options.py": """
        class Option:
            def __init__(self, name):
                self.name = name.strip()


        class Other:
            pass


        def option(name, cls=None):
            if cls is None:
                cls = Option

            def decorator(f):
                f.opt = cls(name)
                return f

            return decorator


        def pick(flag):
            kind = Option
            if flag:
                kind = Other
            return kind("x")


        def nested():
            class Error(Exception):
                pass

            def raise_it():
                raise Error(1)

            Error = SystemExit
            return raise_it
    """,
    "tests/apps/webapp/__init__.py": "",
    "tests/apps/webapp/main.py": """
        from pkg.core import Engine

        engine = Engine("web")
    """,
    "tests/test_strings.py": """
        import importlib

        import pytest


        @pytest.mark.parametrize("name", ["webapp.main", "webapp.main:engine"])
        def test_locate(name):
            importlib.import_module(name.split(":")[0])


        def test_written(tmp_path):
            (tmp_path / "made.py").write_text(
                "import pkg\\n"
                "engine = pkg.Engine('x')\\n"
            )


        def test_unrelated():
            assert "os.path.join" and "pkg" and "spare"


        def test_render():
            from pkg.lazy import render
            assert render("a") == "A"


        def test_option():
            from pkg.options import option

            @option("x")
            def f():
                pass
    """,
}


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    root = indexed_git_repo(tmp_path_factory.mktemp("mentions"), FILES)
    nav = Navigator(root)
    try:
        refs = [r for r in nav.store.refs() if r[3] == "MENTIONS"]
        edges = {(e.source, e.target): e for e in nav.store.all_edges()}
    finally:
        nav.close()
    return root, refs, edges


def _tests_of(root, path, old, new):
    file = root / path
    text = file.read_text()
    file.write_text(text.replace(old, new, 1))
    nav = Navigator(root)
    try:
        out = nav.impact()
    finally:
        nav.close()
        file.write_text(text)
    return {t.id: t.reason for t in out.tests}


def test_a_test_string_that_spells_a_dotted_name_is_a_mention(indexed):
    _, refs, edges = indexed
    got = {(source.rsplit(":", 1)[-1], target) for _, _, source, _, target, _, _ in refs}
    # a parametrize decorator's strings belong to the test it decorates; code in a string is read too
    assert {("test_locate", "webapp.main"), ("test_locate", "webapp.main:engine"),
            ("test_written", "pkg.Engine")} <= got
    assert ("test_unrelated", "os.path.join") in got  # kept raw; it names nothing of the repository
    assert not [t for _, t in got if t in ("pkg", "spare")]  # a bare word is no module path
    assert not [r for r in refs if r[1].startswith("src/")]  # a library's prose names nothing it loads
    assert not [e for e in edges.values() if e.relation == "MENTIONS"]  # a guess from a string is no edge


def test_a_change_reaches_the_tests_whose_strings_name_it(indexed):
    root, _, _ = indexed
    tests = _tests_of(root, "src/pkg/core.py", "return self.name", "return self.name or ''")
    # the module a test imports by a string runs `Engine(...)` at its top level
    assert tests["func:tests/test_strings.py:test_locate"].startswith(
        "func:tests/test_strings.py:test_locate -MENTIONS(0.5)-> module:tests/apps/webapp/main.py"), tests
    # `pkg.Engine` in the source a test writes: the class, through the package that re-exports it
    assert tests["func:tests/test_strings.py:test_written"].startswith(
        "func:tests/test_strings.py:test_written -MENTIONS(0.5)-> class:src/pkg/core.py:Engine"), tests
    assert "func:tests/test_strings.py:test_unrelated" not in tests
    # a name no string spells reaches nothing (`spare` is written bare)
    assert "func:tests/test_strings.py:test_unrelated" not in _tests_of(root, "src/pkg/core.py", "return 2", "return 3")


def test_a_functions_own_import_binds_its_name_there(indexed):
    root, _, edges = indexed
    e = edges[("func:src/pkg/lazy.py:render", "func:src/pkg/_impl.py:render")]
    assert e.relation == "CALLS" and e.resolution == "import"
    assert ("func:src/pkg/lazy.py:render", "func:src/pkg/lazy.py:render") not in edges
    assert edges[("func:src/pkg/lazy.py:again", "func:src/pkg/lazy.py:again")].resolution == "same_module"  # recursion stays
    tests = _tests_of(root, "src/pkg/_impl.py", "text.upper()", "text.upper() or text")
    assert "func:tests/test_strings.py:test_render" in tests


def test_a_class_bound_to_a_local_name_is_called_through_it(indexed):
    root, _, edges = indexed
    deco = "func:src/pkg/options.py:option.decorator"  # `cls(name)` in a nested def; `cls = Option` in option
    assert edges[(deco, "class:src/pkg/options.py:Option")].confidence == 1.0
    assert (deco, "method:src/pkg/options.py:Option.__init__") in edges
    # bound to two classes: says nothing
    assert not [k for k in edges if k[0] == "func:src/pkg/options.py:pick" and k[1].startswith("class:")]
    # a class defined under that name there as well: the call keeps its own class
    assert edges[("func:src/pkg/options.py:nested.raise_it", "class:src/pkg/options.py:nested.Error")].resolution == "same_scope"
    tests = _tests_of(root, "src/pkg/options.py", "name.strip()", "name.strip() or name")
    assert "func:tests/test_strings.py:test_option" in tests
