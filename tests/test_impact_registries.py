"""A function a decorator registers reaches the tests of whoever reads the registry: `@register(ast.Call)`
where `register`'s inner function does `FUNCS[tp].append(func)`, `@hook` doing `_hooks.append(func)`,
`@handler("json")` doing `HANDLERS[name] = f`. No call names the decorated function; the code that runs
it reads the global. A real index of a git repository, the impact walk on an edit."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import impact_of_edit, indexed_git_repo
from nsccn.reading.extract import parse_file

FILES = {
    "pkg/__init__.py": "",
    "pkg/_data.py": """
        import collections

        FUNCS = collections.defaultdict(list)


        def register(tp):
            def register_decorator(func):
                FUNCS[tp].append(func)
                return func
            return register_decorator
    """,
    "pkg/_plugins/__init__.py": "",
    "pkg/_plugins/upper.py": """
        from pkg._data import register


        @register("text")
        def shout(s):
            return s.upper()
    """,
    "pkg/_plugins/strip.py": """
        from pkg._data import register


        def helper(s):
            return s.strip()


        @register("text")
        def strip(s):
            return helper(s)
    """,
    "pkg/main.py": """
        import importlib
        import pkgutil

        import pkg._plugins
        from pkg._data import FUNCS


        def _load():
            for info in pkgutil.iter_modules(pkg._plugins.__path__):
                importlib.import_module(f"pkg._plugins.{info.name}")


        def fix(s):
            _load()
            for func in FUNCS["text"]:
                s = func(s)
            return s
    """,
    "pkg/events.py": """
        _hooks = []
        HANDLERS = {}


        def hook(func):
            _hooks.append(func)
            return func


        def handler(name):
            def deco(f):
                HANDLERS[name] = f
                return f
            return deco


        @hook
        def on_start(x):
            return x + 1


        @handler("json")
        def load_json(text):
            return text.strip("{}")


        def fire(x):
            for h in _hooks:
                x = h(x)
            return x


        def dispatch(name, text):
            return HANDLERS[name](text)
    """,
    "pkg/unrelated.py": """
        def counter():
            return 1
    """,
    "tests/test_main.py": """
        from pkg.main import fix


        def test_fix():
            assert fix(" a ") == "A"
    """,
    "tests/test_upper.py": """
        from pkg.main import fix


        def test_upper():
            assert fix("a") == "A"
    """,
    "tests/test_events.py": """
        from pkg.events import dispatch, fire


        def test_fire():
            assert fire(1) == 2


        def test_dispatch():
            assert dispatch("json", "{a}") == "a"
    """,
    "tests/test_unrelated.py": "from pkg.unrelated import counter\n\n\n" + "".join(
        f"def test_counter_{i}():\n    assert counter() == 1\n\n\n" for i in range(8)),
}


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    return indexed_git_repo(tmp_path_factory.mktemp("registries") / "repo", FILES)


def _selected(out) -> set[str]:
    return {f"{t.file}::{t.qualname}" for t in out.tests}


def test_a_function_a_decorator_factory_registers_reaches_the_registry_readers_tests(repo):
    out = impact_of_edit(repo, "pkg/_plugins/upper.py", "s.upper()", "s.upper().upper()")
    assert "tests/test_main.py::test_fix" in _selected(out)
    test = next(t for t in out.tests if t.qualname == "test_fix")
    assert "-REGISTERS(" in test.reason and "var:pkg/_data.py:FUNCS" in test.reason
    assert not any(t.file == "tests/test_unrelated.py" for t in out.tests)


def test_of_tests_as_near_those_named_after_the_changed_module_come_first(repo):
    out = impact_of_edit(repo, "pkg/_plugins/upper.py", "s.upper()", "s.upper().upper()")
    near = [t for t in out.tests if (t.confidence, t.distance) == (out.tests[0].confidence, out.tests[0].distance)]
    assert {t.file for t in near} >= {"tests/test_main.py", "tests/test_upper.py"}
    assert out.tests[0].file == "tests/test_upper.py"  # `upper.py` changed; test_main.py sorts first by name


def test_what_a_registered_function_calls_reaches_the_same_tests(repo):
    out = impact_of_edit(repo, "pkg/_plugins/strip.py", "s.strip()", "s.strip(' ')")
    assert "tests/test_main.py::test_fix" in _selected(out)


def test_a_bare_decorator_and_a_keyed_handler_register_in_the_same_module(repo):
    hooked = impact_of_edit(repo, "pkg/events.py", "return x + 1", "return x + 1 + 0")
    assert "tests/test_events.py::test_fire" in _selected(hooked)
    keyed = impact_of_edit(repo, "pkg/events.py", 'text.strip("{}")', 'text.strip("{} ")')
    assert "tests/test_events.py::test_dispatch" in _selected(keyed)
    assert not any(t.file == "tests/test_unrelated.py" for t in hooked.tests + keyed.tests)


def test_what_the_parser_keeps_of_a_registering_function():
    src = b"""import collections
FUNCS = collections.defaultdict(list)
REG = {}
HANDLERS = {}


def register(tp):
    def register_decorator(func):
        FUNCS[tp].append(func)
        return func
    return register_decorator


def by_kind(kind, f):
    REG.setdefault(kind, []).append(f)


def keyed(name, f):
    HANDLERS[name] = f


def no_registry(x):
    local = []
    local.append(x)
    FUNCS[x].append(3)
    HANDLERS["k"] = local
"""
    refs = {(r.source.rsplit(":", 1)[-1], r.target) for r in parse_file("pkg/_data.py", src).refs
            if r.relation == "MUTATES"}
    assert refs == {("register.register_decorator", "FUNCS"), ("by_kind", "REG"), ("keyed", "HANDLERS")}
