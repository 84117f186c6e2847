"""A change that runs the same (comments, a signature's annotations, an `if TYPE_CHECKING:` block,
a string written otherwise, `@overload` stubs)
walks nothing: `nsccn impact` lists it as `inert` and selects no test for it, while a change to
code beside a comment still does. A real git repository, a real index, a real diff."""

from __future__ import annotations


import pytest

from conftest import indexed_git_repo
from nsccn.serving.navigator import Navigator

FILES = {
    "src/pkg/__init__.py": "",
    "src/pkg/core.py": """
        from typing import TYPE_CHECKING, overload

        if TYPE_CHECKING:
            from pkg.other import Thing

        LIMIT = 3  # the most


        def clip(value: int, top: int = LIMIT) -> int:
            # the smaller of the two
            return min(value, top)  # never more than top


        def name_of(value):
            return 'small' if value < LIMIT else "large"


        class Box:
            def put(self, item):
                return [item]
    """,
    "src/web/clip.ts": """
        export function clip(value: number, top: number): number {
          // the smaller of the two
          return Math.min(value, top);
        }
    """,
    "tests/test_core.py": """
        from pkg.core import clip


        def test_clip():
            assert clip(5, 3) == 3
    """,
}


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    root = indexed_git_repo(tmp_path_factory.mktemp("inert"), FILES)
    return root


def _impact(root, path, *edits):
    file = root / path
    text = file.read_text()
    changed = text
    for old, new in edits:
        assert old in changed
        changed = changed.replace(old, new, 1)
    file.write_text(changed)
    nav = Navigator(root)
    try:
        out = nav.impact()
    finally:
        nav.close()
        file.write_text(text)
    return {c.id: c.change for c in out.changed}, {t.id for t in out.tests}


CLIP = "func:src/pkg/core.py:clip"
TEST = "func:tests/test_core.py:test_clip"


@pytest.mark.parametrize("edits", [
    [("# the smaller of the two", "# the lesser of the two\n    # (ties: either)")],  # whole-line comments
    [("# never more than top", "# type: ignore[arg-type]")],  # a trailing comment
    [("value: int, top: int = LIMIT) -> int:", "value: float, top=LIMIT):")],  # annotations only
    [("from pkg.other import Thing", "from pkg.other import Thing, Other")],  # never runs
    [("LIMIT = 3  # the most", "LIMIT = 3")],  # a module line's comment: the global it sets is not rebound
    [("return 'small'", 'return "small"'), ('"large"', "'l\\x61rge'")],  # the same strings, written otherwise
    # typing's overload stubs: replaced when the class is made, never called
    [("    def put(self, item):", "    @overload\n    def put(self, item: int) -> list: ...\n"
      "    @overload\n    def put(self, item: str) -> list: ...\n    def put(self, item):")],
])
def test_a_change_that_runs_the_same_selects_no_test(repo, edits):
    changed, tests = _impact(repo, "src/pkg/core.py", *edits)
    assert changed and set(changed.values()) == {"inert"}, changed
    assert not tests


def test_code_beside_a_comment_still_counts(repo):
    changed, tests = _impact(repo, "src/pkg/core.py", ("min(value, top)  # never", "max(value, top)  # always"))
    assert changed[CLIP] == "body" and TEST in tests
    changed, tests = _impact(repo, "src/pkg/core.py", ("top: int = LIMIT", "top: int = 4"))
    assert changed[CLIP] == "signature" and TEST in tests  # a default is code, its annotation is not
    changed, _ = _impact(repo, "src/pkg/core.py", ("return 'small'", "return 'tiny'"))
    assert set(changed.values()) == {"body"}, changed
    changed, _ = _impact(repo, "src/pkg/core.py", ("LIMIT = 3", "LIMIT = 4"))
    assert [c for i, c in changed.items() if i.startswith("module:src/pkg/core.py:")] == ["body"]


def test_another_languages_comments_run_nothing(repo):
    changed, _ = _impact(repo, "src/web/clip.ts", ("// the smaller of the two", "// the lesser of the two"))
    assert set(changed.values()) == {"inert"}, changed
    changed, _ = _impact(repo, "src/web/clip.ts", ("Math.min(value, top)", "Math.max(value, top)"))
    assert set(changed.values()) == {"body"}, changed


def test_a_function_s_lines_read_alone_read_as_in_the_whole_file():
    """The map reads each line's code for whole files, a change's old side for one function: the two must
    agree, or a function would look changed since the run. nsccn's own sources, every function."""
    from pathlib import Path

    from nsccn.graph.inert import CodeLines
    from nsccn.reading.extract import parse_file

    checked = 0
    for path in sorted((Path(__file__).resolve().parents[1] / "nsccn" / "graph").glob("*.py")):
        data = path.read_bytes()
        code = CodeLines(path.name, data)
        whole = code.code_by_line(1, data.count(b"\n") + 1)
        assert whole
        for e in parse_file(path.name, data).entities:
            if e.kind in ("func", "method"):
                checked += 1
                assert code.code_by_line(e.start_line, e.end_line) == \
                    {n: v for n, v in whole.items() if e.start_line <= n <= e.end_line}, e.id
    assert checked > 100


def test_a_line_s_code_leaves_out_what_runs_nothing():
    from nsccn.graph.inert import CodeLines

    text = (b"from typing import TYPE_CHECKING, overload\nif TYPE_CHECKING:\n    import y  # c\n"
            b"def f(a: int, b='q') -> int:  # hi\n    @overload\n    def g(x: int) -> int: ...\n"
            b"    return (a +\n        \"b\")\n")
    got = CodeLines("a.py", text).code_by_line(1, 8)
    assert sorted(got) == [1, 4, 7, 8]  # the TYPE_CHECKING block and the stub run nothing
    assert got[4] == b"def\x00f\x00(\x00a\x00,\x00b\x00=\x00'\x00q\x00'\x00)\x00:"  # no annotation, no comment
    assert got[8] == b"        '\x00b\x00'\x00)"  # a string as its value; the line's indentation kept
