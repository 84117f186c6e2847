"""What a program reaches by names it builds at run time: a class a library string names by its
dotted path (a registry that loads `"pkg.formats._xlsx.XlsxFormat"` by name), a class a class
attribute holds (`OPTIONS_CLASS = Opts`, built by a metaclass), and a subclass made by
`type(name, (Base,), ns)`; a package's own function that shares its name with a submodule
(`from pkg.retrying import retry`, `retrying/retry.py` beside it); what a class attribute built by a
call holds (`to_html = create_markdown()`, then `self.to_html(text)`); a method a class decorator adds
(`@dataclass_json` gives `Model.from_dict`). A real index, a real impact walk on a change."""

from __future__ import annotations

import pytest

from conftest import impact_of_edit, indexed_git_repo
from nsccn.store import Store

FILES = {
    "src/pkg/__init__.py": "",
    "src/pkg/formats/__init__.py": """
        from importlib import import_module


        class Registry:
            _formats = {}

            def register(self, key, path):
                self._formats[key] = path

            def register_builtins(self):
                self.register("xlsx", "pkg.formats._xlsx.XlsxFormat")

            def get(self, key):
                module, _, name = self._formats[key].rpartition(".")
                return getattr(import_module(module), name)()


        registry = Registry()
        registry.register_builtins()
    """,
    "src/pkg/formats/_xlsx.py": """
        class XlsxFormat:
            def export(self, rows):
                return b"xlsx" + bytes(len(rows))
    """,
    "src/pkg/notes.py": """
        HINT = "see pkg.formats._xlsx.XlsxFormat for the layout"


        def hint():
            return HINT
    """,
    "src/pkg/schema.py": """
        class Opts:
            def __init__(self, meta):
                self.many = getattr(meta, "many", False)


        class Meta(type):
            def __new__(mcs, name, bases, ns):
                klass = super().__new__(mcs, name, bases, ns)
                klass.opts = klass.OPTIONS_CLASS(ns.get("Meta"))
                return klass


        class Schema(metaclass=Meta):
            OPTIONS_CLASS = Opts

            def dump(self, x):
                return x

            @classmethod
            def from_dict(cls, fields):
                return type("Generated", (cls,), dict(fields))
    """,
    "src/pkg/retrying/__init__.py": """
        from pkg.retrying.retry import retry_base


        def retry(f):
            def wrapped(*args):
                return retry_base(f(*args))
            return wrapped
    """,
    "src/pkg/retrying/retry.py": """
        def retry_base(x):
            return x
    """,
    "src/pkg/md.py": """
        class Markdown:
            def __call__(self, text):
                return self.parse(text)

            def parse(self, text):
                return text.upper()


        def create_markdown() -> Markdown:
            return Markdown()


        def create_plain():
            return Markdown()


        class Holder:
            factory: type[Markdown] = Markdown
            size: int = 0

            def make(self):
                return self.factory()

            def grow(self):
                return self.size()

            def __call__(self):
                return 1
    """,
    "src/pkg/core2.py": """
        def base(x):
            return x + 1
    """,
    "src/pkg/wrap.py": """
        from pkg.core2 import base


        def wrapped(x):
            return base(x)


        def other(x):
            return x
    """,
    "tests/__init__.py": "",
    "tests/test_few.py": "from pkg.wrap import other, wrapped\n\n\ndef test_wrapped():\n    assert wrapped(1) == 2\n"
                         + "".join(f"\n\ndef test_other_{i}():\n    assert other({i}) == {i}\n" for i in range(3)),
    "tests/test_many.py": "from pkg.wrap import other, wrapped\n\n\ndef test_wrapped():\n    assert wrapped(1) == 2\n"
                          + "".join(f"\n\ndef test_other_{i}():\n    assert other({i}) == {i}\n" for i in range(12)),
    "tests/test_md.py": """
        from unittest import TestCase

        from pkg.md import create_markdown, create_plain


        class TestRound(TestCase):
            to_html = create_markdown()
            plain = create_plain()

            def check(self, text):
                return self.to_html(text)

            def test_round(self):
                assert self.check("a")

            def test_plain(self):
                assert self.plain.parse("a")
    """,
    "tests/test_retrying.py": """
        from pkg.retrying import retry


        @retry
        def flaky():
            return 1


        def test_flaky():
            assert flaky() == 1
    """,
    "tests/test_export.py": """
        from pkg.formats import registry


        def test_export():
            assert registry.get("xlsx").export([1])
    """,
    "tests/test_notes.py": """
        from pkg.notes import hint


        def test_hint():
            assert hint()
    """,
    "tests/test_package_only.py": """
        import pkg


        def test_package():
            assert pkg
    """,
    "tests/test_schema.py": """
        from pkg.schema import Schema


        def test_built_at_run_time():
            assert type("Built", (Schema,), {}).opts


        def test_from_dict():
            assert Schema.from_dict({}).opts
    """,
}


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return indexed_git_repo(tmp_path_factory.mktemp("run_time_names"), FILES)


def test_a_class_a_library_string_names_by_its_dotted_path_selects_the_tests_of_its_loaders_importers(repo):
    out = impact_of_edit(repo, "src/pkg/formats/_xlsx.py", 'b"xlsx"', 'b"XLSX"')
    module_tests = {(t.file, t.qualname): t for t in out.module_tests}
    # `registry.get("xlsx")` loads it by the name a string spells: no edge reaches it, the registry's module does
    assert ("tests/test_export.py", "test_export") in module_tests
    assert "Registry.register_builtins names class:src/pkg/formats/_xlsx.py:XlsxFormat in a string" \
        in module_tests[("tests/test_export.py", "test_export")].reason
    assert "tests/test_export.py::test_export" in out.run
    # a sentence that mentions the name loads nothing; importing the top package is not importing the registry
    assert ("tests/test_notes.py", "test_hint") not in module_tests
    assert ("tests/test_package_only.py", "test_package") not in module_tests


def test_a_class_a_class_attribute_holds_reaches_who_subclasses_the_holder_at_run_time(repo):
    out = impact_of_edit(repo, "src/pkg/schema.py", 'getattr(meta, "many", False)', 'getattr(meta, "many", None)')
    tests = {(t.file, t.qualname): t for t in out.tests}
    built = tests[("tests/test_schema.py", "test_built_at_run_time")]
    assert "-SUBCLASSES(0.8)-> class:src/pkg/schema.py:Schema -PASSES(0.8)-> class:src/pkg/schema.py:Opts" in built.reason
    # `type(name, (cls,), ns)` in a classmethod builds a subclass of its own class
    assert "-SUBCLASSES(0.8)-> class:src/pkg/schema.py:Schema" in tests[("tests/test_schema.py", "test_from_dict")].reason


def test_a_subclass_built_at_run_time_runs_class_creation_not_the_methods(repo):
    out = impact_of_edit(repo, "src/pkg/schema.py", "return x\n", "return (x)\n")
    tests = {(t.file, t.qualname) for t in out.tests}
    assert ("tests/test_schema.py", "test_built_at_run_time") not in tests
    assert ("tests/test_schema.py", "test_from_dict") not in tests


def test_a_packages_own_function_wins_over_its_submodule_of_the_same_name(repo):
    store = Store(repo / ".nsccn" / "index.db", readonly=True)
    try:
        calls = {e.target for e in store.edges_from("module:tests/test_retrying.py:tests.test_retrying", ("CALLS",))}
    finally:
        store.close()
    assert "func:src/pkg/retrying/__init__.py:retry" in calls  # `@retry`: the function, not `retrying/retry.py`
    assert not [t for t in calls if t.startswith("module:")]
    tests = {(t.file, t.qualname): t for t in impact_of_edit(repo, "src/pkg/retrying/__init__.py",
                                                       "return retry_base(f(*args))", "return retry_base(f(*args)) or 0").tests}
    assert "-DECORATES" in tests[("tests/test_retrying.py", "test_flaky")].reason


def test_a_class_attribute_built_by_a_call_types_self_attribute_calls(repo):
    store = Store(repo / ".nsccn" / "index.db", readonly=True)
    try:
        check = {e.target: e.confidence for e in store.edges_from("method:tests/test_md.py:TestRound.check", ("CALLS",))}
        plain = {e.target: e.confidence for e in store.edges_from("method:tests/test_md.py:TestRound.test_plain", ("CALLS",))}
    finally:
        store.close()
    assert check.get("method:src/pkg/md.py:Markdown.__call__") == 0.9  # calling the instance: its `__call__`
    assert plain.get("method:src/pkg/md.py:Markdown.parse") == 0.9  # through what `create_plain` returns
    tests = {(t.file, t.qualname) for t in impact_of_edit(repo, "src/pkg/md.py", "return text.upper()", "return text.lower()").tests}
    assert {("tests/test_md.py", "TestRound.test_round"), ("tests/test_md.py", "TestRound.test_plain")} <= tests


def test_a_test_file_of_which_a_tenth_of_the_tests_is_reached_runs_whole(repo):
    out = impact_of_edit(repo, "src/pkg/core2.py", "return x + 1", "return x + 2")
    assert {(t.file, t.qualname) for t in out.tests} >= {("tests/test_few.py", "test_wrapped"), ("tests/test_many.py", "test_wrapped")}
    # one of test_few.py's 4 tests is reached: the file runs whole; one of test_many.py's 13 is under a tenth
    assert [t.file for t in out.test_files] == ["tests/test_few.py"]
    assert "the answer reaches 1 of its 4 tests" in out.test_files[0].reason
    assert " tests/test_few.py " in f" {out.run} " and "tests/test_many.py::test_wrapped" in out.run
    assert "tests/test_many.py::test_other_0" not in out.run


def test_a_class_attribute_annotated_type_of_a_class_builds_it_and_an_unknown_type_calls_nothing(repo):
    store = Store(repo / ".nsccn" / "index.db", readonly=True)
    try:
        make = {e.target for e in store.edges_from("method:src/pkg/md.py:Holder.make", ("CALLS",))}
        grow = {e.target for e in store.edges_from("method:src/pkg/md.py:Holder.grow", ("CALLS",))}
    finally:
        store.close()
    assert "class:src/pkg/md.py:Markdown" in make  # `factory: type[Markdown]`: calling it builds a Markdown
    assert "method:src/pkg/md.py:Markdown.__call__" not in make
    assert "method:src/pkg/md.py:Holder.__call__" not in grow  # `size: int`, called: never self's `__call__`


DECORATED = {
    "pkg/__init__.py": "",
    "pkg/api.py": """
        class Mixin:
            @classmethod
            def from_dict(cls, d):
                return _decode(cls, d)


        def _decode(cls, d):
            return cls(**d)


        def json_model(cls):
            cls.from_dict = classmethod(Mixin.from_dict.__func__)
            return cls
    """,
    "pkg/models.py": """
        from pkg.api import json_model


        @json_model
        class Point:
            def __init__(self, x):
                self.x = x


        class Plain:
            pass
    """,
    "tests/test_models.py": """
        from pkg.models import Plain, Point


        def test_point():
            assert Point.from_dict({"x": 1}).x == 1


        def test_plain():
            assert Plain.from_dict is None
    """,
    "tests/test_other.py": "".join(f"def test_other_{i}():\n    assert {i} == {i}\n\n\n" for i in range(8)),
}


def test_a_method_a_class_decorator_adds_is_guessed_by_its_name(tmp_path):
    """`Point.from_dict(...)`: `Point` neither defines nor inherits it; `@json_model` adds it when the
    class is made. An undecorated class's missing member is no guess (`Plain.from_dict`)."""
    root = indexed_git_repo(tmp_path / "repo", DECORATED)
    out = impact_of_edit(root, "pkg/api.py", "return cls(**d)", "return cls(**dict(d))")
    assert {(t.file, t.qualname) for t in out.tests} == {("tests/test_models.py", "test_point")}
    with Store(root / ".nsccn" / "index.db") as store:
        how = {e.target: e.resolution for e in store.edges_from("func:tests/test_models.py:test_point", ("CALLS",))}
        plain = [e.target for e in store.edges_from("func:tests/test_models.py:test_plain", ("CALLS",))]
    assert how.get("method:pkg/api.py:Mixin.from_dict", "").endswith("+decorated_class")
    assert "method:pkg/api.py:Mixin.from_dict" not in plain
