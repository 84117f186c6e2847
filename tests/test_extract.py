import pytest

from nsccn.reading.extract import parse_file
from nsccn.languages.python import module_name


def ids(pf):
    return {e.id: e for e in pf.entities}


def test_entities_qualnames_lines_signatures_decorators():
    src = b'''"""Module doc."""
import functools


@functools.lru_cache(maxsize=None)
def top(a: int, b: str = "x") -> list[str]:
    """Top level."""
    def inner(x):
        class Local:
            def m(self):
                pass
        return x
    return inner(a)


class Outer(Base):
    """Outer doc."""

    class Inner:
        def deep(self) -> None: ...

    @staticmethod
    async def run(*args, **kw):
        return 1
'''
    pf = parse_file("pkg/mod.py", src)
    e = ids(pf)
    assert set(e) == {
        "module:pkg/mod.py:pkg.mod",
        "func:pkg/mod.py:top",
        "func:pkg/mod.py:top.inner",
        "class:pkg/mod.py:top.inner.Local",
        "method:pkg/mod.py:top.inner.Local.m",
        "class:pkg/mod.py:Outer",
        "class:pkg/mod.py:Outer.Inner",
        "method:pkg/mod.py:Outer.Inner.deep",
        "method:pkg/mod.py:Outer.run",
    }
    top = e["func:pkg/mod.py:top"]
    assert (top.start_line, top.end_line) == (5, 13)  # decorator line included
    assert top.signature == 'def top(a: int, b: str = "x") -> list[str]'
    assert top.docstring == "Top level."
    assert top.decorators == ["functools.lru_cache(maxsize=None)"]
    assert top.parent == "module:pkg/mod.py:pkg.mod"
    run = e["method:pkg/mod.py:Outer.run"]
    assert run.signature == "async def run(*args, **kw)"
    assert run.decorators == ["staticmethod"]
    assert e["class:pkg/mod.py:Outer"].signature == "class Outer(Base)"
    assert e["module:pkg/mod.py:pkg.mod"].docstring == "Module doc."


def test_syntax_error_keeps_entities_outside_the_broken_region():
    src = b"""def good_before():
    return 1

def broken(:
    x = = 2

def good_after():
    return 3

class Fine:
    def ok(self):
        pass
"""
    pf = parse_file("bad.py", src)
    names = {e.qualname for e in pf.entities}
    assert {"good_before", "good_after", "Fine", "Fine.ok"} <= names
    assert pf.error_lines and min(pf.error_lines) >= 4
    # Recovery keeps byte offsets: signatures and skeleton lines are the real ones.
    assert {e.qualname: e.signature for e in pf.entities}["good_after"] == "def good_after()"
    assert "def good_after():\n    ..." in pf.skeleton and "class Fine:" in pf.skeleton


def test_non_utf8_and_empty_files_parse():
    pf = parse_file("latin.py", b"# caf\xe9\ndef f():\n    return '\xff'\n")
    assert any(e.qualname == "f" for e in pf.entities)
    empty = parse_file("empty.py", b"")
    assert [e.kind for e in empty.entities] == ["module"]


def test_relative_imports_and_aliases():
    src = b"from . import a as b, c\nfrom ..x.y import z as w\nimport os.path as p, q.r\nfrom m import *\n"
    pf = parse_file("pkg/sub/mod.py", src)
    assert pf.imports["b"] == "pkg.sub.a"
    assert pf.imports["c"] == "pkg.sub.c"
    assert pf.imports["w"] == "pkg.x.y.z"
    assert pf.imports["p"] == "os.path"
    assert pf.imports["q"] == "q"
    assert pf.imports["*m"] == "m"
    init = parse_file("pkg/sub/__init__.py", b"from .mod import f\n")
    assert init.imports["f"] == "pkg.sub.mod.f"


def test_module_names():
    assert module_name("src/pkg/__init__.py") == "src.pkg"
    assert module_name("a/b.py") == "a.b"
    assert module_name("setup.py") == "setup"


def test_refs_of_each_relation():
    src = b'''import os
LIMIT = 3
STATE = []

class C(Base):
    def m(self):
        global STATE
        self.x = 1
        self.items.append(2)
        STATE = [LIMIT]
        v = os.environ["HOME"] + os.getenv("USER")
        w = settings.DEBUG
        try:
            self.go()
        except (KeyError, mod.Err):
            raise
        raise ValueError("no")
'''
    pf = parse_file("c.py", src)
    refs = {(r.relation, r.target) for r in pf.refs if r.source == "method:c.py:C.m"}
    assert ("MUTATES", "self.x") in refs
    assert ("MUTATES", "self.items") in refs
    assert ("MUTATES", "STATE") in refs
    assert ("READS_CONFIG", "LIMIT") in refs
    assert ("READS_CONFIG", "env:HOME") in refs
    assert ("READS_CONFIG", "env:USER") in refs
    assert ("READS_CONFIG", "config:settings.DEBUG") in refs
    assert ("CALLS", "self.go") in refs
    assert ("PROPAGATES_ERROR", "KeyError") in refs  # bare re-raise inside except
    assert ("PROPAGATES_ERROR", "mod.Err") in refs
    assert ("PROPAGATES_ERROR", "ValueError") in refs
    assert ("INHERITS", "Base") in {(r.relation, r.target) for r in pf.refs if r.source == "class:c.py:C"}


def test_skeleton_elides_bodies_keeps_structure():
    src = b'''"""Doc of the module.

Long explanation that the skeleton drops.
"""
import os

TIMEOUT = 30
BIG = {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6, "g": 7, "h": 8, "i": 9}


class Service:
    """Handles things."""

    retries: int = 3

    def run(self, job: str) -> bool:
        """Run a job."""
        x = compute(job)
        return bool(x)


def helper():
    return 42
'''
    skel = parse_file("s.py", src).skeleton
    assert '"""Doc of the module. ..."""' in skel
    assert "import os" in skel
    assert "TIMEOUT = 30" in skel
    assert "BIG = ..." in skel
    assert "class Service:" in skel and "retries: int = 3" in skel
    assert "    def run(self, job: str) -> bool:\n        \"\"\"Run a job.\"\"\"\n        ..." in skel
    assert "compute(job)" not in skel and "return 42" not in skel
    assert "def helper():\n    ..." in skel
    compile(skel, "s.py", "exec")  # a skeleton is valid Python


def test_the_walk_finds_calls_and_names_inside_f_strings_and_skips_the_literal_parts():
    """The walk skips a string's literal parts, numbers and comments, but not an f-string's
    interpolations, nor those nested in a format specifier."""
    src = b'''def show(x):
    # a comment naming nothing()
    return f"{compute(x)!r:>{width(x.NAME)}} {{not_a_call()}} \\n" + "plain(1)" + str(3 + 0.5)
'''
    pf = parse_file("pkg/fmt.py", src)
    refs = {(r.relation, r.target) for r in pf.refs if r.source == "func:pkg/fmt.py:show"}
    # RETURNS `?`: what it returns builds no class the resolver could type a receiver with
    assert refs == {("CALLS", "compute"), ("CALLS", "width"), ("CALLS", "str"), ("READS_CONFIG", "x.NAME"), ("RETURNS", "?")}
    terms = ids(pf)["func:pkg/fmt.py:show"].body_terms.split()
    assert terms == ["x", "compute", "width", "NAME", "plain", "str"]  # an f-string gives no words of its own


def test_walk_kinds_name_grammar_types():
    # The walk dispatches on kind ids made from type names: a misspelt name must fail at import,
    # not quietly match no node (the walk would then skip what it names).
    from nsccn.languages.python import _kinds

    assert _kinds("identifier") and len(_kinds("block")) == 2  # an alias shares its name's kinds
    with pytest.raises(ValueError, match="identifer"):
        _kinds("identifer")
