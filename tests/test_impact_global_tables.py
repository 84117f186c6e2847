"""A function held in a module global's table reaches the tests of whoever reads the table: no call
names a rule listed in `_rules = [("text", rules.text), ...]` or a plugin spelled in `_plugins =
{"upper": "pkg.extra.upper.shout"}`, yet the class that reads the table runs them
(`nsccn.languages.global_tables`). A real index of a git repository, the impact walk on an edit."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import impact_of_edit, indexed_git_repo
from nsccn.reading.extract import parse_file

FILES = {
    "pkg/__init__.py": "",
    "pkg/rules/__init__.py": "from .text import text\nfrom . import emphasis\n",
    "pkg/rules/text.py": """
        def text(state):
            return state.upper()
    """,
    "pkg/rules/emphasis.py": """
        def tokenize(state):
            return state.replace("*", "")
    """,
    "pkg/ruler.py": """
        class Ruler:
            def __init__(self):
                self.rules = []

            def push(self, name, rule):
                self.rules.append(rule)
    """,
    "pkg/parser.py": """
        from . import rules
        from .ruler import Ruler

        _rules = [
            ("text", rules.text),
            ("emphasis", rules.emphasis.tokenize),
        ]


        class Parser:
            def __init__(self):
                self.ruler = Ruler()
                for name, rule in _rules:
                    self.ruler.push(name, rule)

            def parse(self, s):
                for rule in self.ruler.rules:
                    s = rule(s)
                return s
    """,
    "pkg/extra/__init__.py": "",
    "pkg/extra/upper.py": """
        def shout(s):
            return s.upper() + "!"
    """,
    "pkg/plugins.py": """
        import importlib

        _plugins = {
            "upper": "pkg.extra.upper.shout",
        }


        def load(name):
            module, _, func = _plugins[name].rpartition(".")
            return getattr(importlib.import_module(module), func)
    """,
    "pkg/api.py": """
        from pkg.plugins import load


        def run_plugin(name, s):
            return load(name)(s)
    """,
    "pkg/unrelated.py": """
        def other():
            return 1
    """,
    "tests/test_parser.py": """
        from pkg.parser import Parser


        def test_parse():
            assert Parser().parse("a*b") == "AB"
    """,
    "tests/test_api.py": """
        from pkg.api import run_plugin


        def test_plugin():
            assert run_plugin("upper", "a") == "A!"
    """,
    "pkg/checkers.py": """
        lookups = []


        def check_dict(v):
            return isinstance(v, dict)


        def builtin_lookup(kind):
            if kind == "dict":
                return check_dict
            return None


        lookups.append(builtin_lookup)


        def check(kind, v):
            for lookup in lookups:
                checker = lookup(kind)
                if checker:
                    return checker(v)
            return False
    """,
    "pkg/valid/__init__.py": "from .url import url\n",
    "pkg/valid/url.py": """
        from .host import host


        def url(s):
            return host(s.split("/")[0])
    """,
    "pkg/valid/host.py": """
        def host(s):
            return "." in s
    """,
    "tests/test_checkers.py": """
        from pkg.checkers import check


        def test_check():
            assert check("dict", {})
    """,
    "tests/test_valid.py": """
        from pkg.valid import url


        def test_url():
            assert url("a.b/c")
    """,
    "tests/test_unrelated.py": "from pkg.unrelated import other\n\n\n" + "".join(
        f"def test_other_{i}():\n    assert other() == 1\n\n\n" for i in range(8)),
}


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    return indexed_git_repo(tmp_path_factory.mktemp("holders") / "repo", FILES)


def _selected(out) -> set[str]:
    return {f"{t.file}::{t.qualname}" for t in out.tests}


def test_a_rule_in_a_global_table_reaches_the_tests_of_its_reader(repo):
    out = impact_of_edit(repo, "pkg/rules/text.py", "state.upper()", "state.upper().strip()")
    assert _selected(out) == {"tests/test_parser.py::test_parse"}
    (test,) = out.tests
    assert "-PASSES(" in test.reason and "-READS_CONFIG(" in test.reason and "var:pkg/parser.py:_rules" in test.reason
    assert out.run == "python -m pytest tests/test_parser.py::test_parse"


def test_a_rule_reached_through_a_package_that_imports_its_module(repo):
    # `rules.emphasis.tokenize`: the parser imports the package, whose `__init__` imports the module
    out = impact_of_edit(repo, "pkg/rules/emphasis.py", 'replace("*", "")', 'replace("*", "", -1)')
    assert "tests/test_parser.py::test_parse" in _selected(out)
    assert not any(t.file == "tests/test_unrelated.py" for t in out.tests)


def test_a_plugin_named_in_a_global_table_reaches_the_tests_of_its_loader(repo):
    out = impact_of_edit(repo, "pkg/extra/upper.py", 'upper() + "!"', 'upper() + "!" * 1')
    # proved by the graph (`tests`), not the importer tier: the test imports `pkg.api`, not `pkg.plugins`
    assert _selected(out) == {"tests/test_api.py::test_plugin"}
    assert "-MENTIONS(" in out.tests[0].reason and "var:pkg/plugins.py:_plugins" in out.tests[0].reason


def test_a_change_to_the_table_itself_reaches_its_readers_tests(repo):
    out = impact_of_edit(repo, "pkg/parser.py", '("text", rules.text),', '("text", rules.text),  # first\n    ("t2", rules.text),')
    assert "tests/test_parser.py::test_parse" in _selected(out)


def test_what_the_parser_keeps_of_a_table():
    src = b"""from typing import TypeVar
from . import rules
from .base import Base

T = TypeVar("T", bound=Base)
_table = {"a": rules.a, Base: [rules.b, (rules.c,)]}
_built = Registry([rules.d], key=rules.e)
_plain = rules.f


def use(x: T):
    for k in _table:
        pass
    return _built


class Holder:
    def get(self):
        return _table["a"], self._table
"""
    pf = parse_file("pkg/m.py", src)
    held = {(r.source.rsplit(":", 1)[1], r.target) for r in pf.refs if r.source.startswith("var:") and r.relation == "PASSES"}
    assert held == {("_table", "rules.a"), ("_table", "Base"), ("_table", "rules.b"), ("_table", "rules.c"),
                    ("_built", "rules.d")}  # a call's own argument outside a container, and `T`'s, hold nothing
    reads = {(r.source, r.target) for r in pf.refs if r.relation == "READS_CONFIG" and not r.target.startswith(("env:", "config:"))}
    assert reads == {("func:pkg/m.py:use", "_table"), ("func:pkg/m.py:use", "_built"),
                     ("method:pkg/m.py:Holder.get", "_table")}  # `self._table` is no read of the global


def test_a_function_returned_by_a_lookup_in_a_filled_table_reaches_the_tests_of_its_reader(repo):
    # `return check_dict` hands it to the caller; `lookups.append(builtin_lookup)` fills a table `check` reads
    out = impact_of_edit(repo, "pkg/checkers.py", "return isinstance(v, dict)", "return type(v) is dict")
    assert _selected(out) == {"tests/test_checkers.py::test_check"}
    reason = out.tests[0].reason
    assert "var:pkg/checkers.py:lookups" in reason and "func:pkg/checkers.py:builtin_lookup" in reason


def test_a_name_a_package_imports_from_its_own_submodule_is_the_function(repo):
    # `from .url import url` in `pkg/valid/__init__.py`: `from pkg.valid import url` is the function, not the module
    out = impact_of_edit(repo, "pkg/valid/host.py", 'return "." in s', 'return s.count(".") > 0')
    assert _selected(out) == {"tests/test_valid.py::test_url"}
    assert "-CALLS(1)-> func:pkg/valid/url.py:url -CALLS(1)-> func:pkg/valid/host.py:host" in out.tests[0].reason
