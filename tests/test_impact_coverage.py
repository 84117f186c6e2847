"""`impact` with recorded per-test coverage: a real suite run by pytest with coverage contexts
(`pytest --cov --cov-context=test`, pytest-cov) in a git repository the test writes, then changes,
then a real index and the impact answer. The coverage names the tests that ran a changed function
(a branch the graph cannot tell apart, a call by name it cannot see); the graph adds only tests
that reach the change through code new or changed since the coverage was recorded."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import indexed_git_repo
from nsccn.errors import NavigatorError
from nsccn.graph.recorded import code_lines, fingerprints
from nsccn.indexing.indexer import index_repository
from nsccn.reading.coverage_file import CoverageFileError, numbits_to_lines, read
from nsccn.reading.extract import parse_file
from nsccn.serving.navigator import Navigator

FILES = {
    "pkg/__init__.py": "",
    "pkg/core.py": """
        def helper(x):
            return x + 1


        def used(x):
            return helper(x)


        def maybe(x, flag=False):
            if flag:
                return helper(x)
            return x


        def by_name(name, x):
            return globals()[name](x)
    """,
    "tests/__init__.py": "",
    "tests/test_core.py": """
        from pkg.core import by_name, maybe, used


        def test_used():
            assert used(1) == 2


        def test_maybe_not():
            assert maybe(1) == 1


        def test_by_name():
            assert by_name("helper", 1) == 2


        class TestMaybe:
            def test_flag(self):
                assert maybe(1, flag=True) == 2
    """,
    "pkg/other.py": """
        def other(n):
            return n * 2
    """,
    "tests/test_other.py": """
        from pkg.other import other


        def test_other_one():
            assert other(1) == 2


        def test_other_two():
            assert other(2) == 4


        def test_other_three():
            assert other(3) == 6
    """,
    "pytest.ini": "[pytest]\n",
}
HELPER = "func:pkg/core.py:helper"


@pytest.fixture(autouse=True)
def own_state(tmp_path, monkeypatch):
    """The recorded map is kept in the user's state folder: this test's own."""
    monkeypatch.setenv("NSCCN_STATE_DIR", str(tmp_path / "state"))


def record(root: Path, contexts: bool = True) -> Path:
    """The repository's suite run once with per-test coverage, as a developer runs it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_", "COVERAGE_"))}
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--cov=pkg", "--cov-report=",
            *(["--cov-context=test"] if contexts else []), "tests"]
    done = subprocess.run(args, cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return root / ".coverage"


def commit(root: Path, message: str) -> None:
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", message], cwd=root, check=True)


def edit(root: Path, rel: str, old: str, new: str) -> None:
    p = root / rel
    text = p.read_text()
    assert old in text
    p.write_text(text.replace(old, new, 1))


def impact(root: Path, **kw):
    index_repository(root, workers=1, embed=False)
    nav = Navigator(root)
    try:
        return nav.impact(**kw)
    finally:
        nav.close()


def names(tests) -> set[str]:
    return {f"{t.file}::{t.qualname}" for t in tests}


def repo(tmp_path: Path) -> Path:
    root = indexed_git_repo(tmp_path / "repo", FILES)
    (root / ".gitignore").write_text(".coverage\n.nsccn/\n")
    commit(root, "ignore")
    return root


def test_the_tests_that_ran_a_changed_function_and_not_those_the_graph_only_guesses(tmp_path):
    root = repo(tmp_path)
    record(root)
    edit(root, "pkg/core.py", "return x + 1", "return 1 + x")  # after the run: mapped through HEAD's copy
    graph = impact(root, coverage="off")
    with_cov = impact(root)
    # the graph reaches test_maybe_not through `maybe` (the branch not taken), and not test_by_name
    assert "tests/test_core.py::test_maybe_not" in names(graph.tests)
    assert "tests/test_core.py::test_by_name" not in names(graph.tests)
    assert names(with_cov.covered_tests) == {"tests/test_core.py::test_used", "tests/test_core.py::test_by_name",
                                             "tests/test_core.py::TestMaybe.test_flag"}
    assert with_cov.tests == []  # nothing changed since the run: the graph adds nothing
    assert with_cov.coverage.answered == 1 and with_cov.coverage.unmapped is None
    assert "test_maybe_not" not in with_cov.run and "TestMaybe::test_flag" in with_cov.run
    assert all(HELPER in t.reason for t in with_cov.covered_tests)


def test_what_changed_since_the_run_is_walked_by_the_graph(tmp_path):
    root = repo(tmp_path)
    record(root)
    impact(root)  # mapped now
    # after the run: a new caller of helper and its test (new code: the coverage knows nothing of it), and
    # `used` edited to call helper twice (changed since: its callers' tests may run helper anew)
    (root / "pkg" / "extra.py").write_text("from pkg.core import helper\n\n\ndef twice(x):\n    return helper(helper(x))\n")
    (root / "tests" / "test_extra.py").write_text("from pkg.extra import twice\n\n\ndef test_twice():\n    assert twice(1) == 3\n")
    commit(root, "new caller")
    edit(root, "pkg/core.py", "return x + 1", "return 1 + x")
    got = impact(root)
    assert "tests/test_extra.py::test_twice" in names(got.tests)  # through new code
    assert "tests/test_core.py::test_maybe_not" not in names(got.tests) | names(got.covered_tests)
    assert got.coverage.changed_since >= 1
    assert {"tests/test_core.py::test_used", "tests/test_core.py::test_by_name"} <= names(got.covered_tests)


def test_a_new_function_and_code_run_at_import_are_left_to_the_graph(tmp_path):
    root = repo(tmp_path)
    record(root)
    edit(root, "pkg/core.py", "def used(x):", "LIMIT = 3\n\n\ndef used(x):")
    edit(root, "pkg/core.py", "return helper(x)\n\n\ndef maybe", "return helper(x) + LIMIT - 3\n\n\ndef maybe")
    got = impact(root)
    assert got.coverage.answered == 1  # `used`'s body; LIMIT is module code: walked
    assert "tests/test_core.py::test_used" in names(got.covered_tests) | names(got.tests)


def test_a_committed_coverage_file_is_not_believed(tmp_path):
    root = repo(tmp_path)
    record(root)
    subprocess.run(["git", "add", "-f", ".coverage"], cwd=root, check=True)
    commit(root, "someone committed their coverage")
    edit(root, "pkg/core.py", "return x + 1", "return 1 + x")
    got = impact(root)
    assert got.coverage is None and got.covered_tests == []
    assert any("committed" in n for n in got.notes)
    assert "tests/test_core.py::test_maybe_not" in names(got.tests)  # the graph's answer, as without one


def test_without_a_coverage_file_the_answer_says_how_to_record_one(tmp_path):
    root = repo(tmp_path)
    edit(root, "pkg/core.py", "return x + 1", "return 1 + x")
    got = impact(root)
    assert got.tests and any("--cov-context=test" in n for n in got.notes or ())
    assert not any("--cov-context=test" in n for n in impact(root, coverage="off").notes or ())  # asked not to: no hint
    record(root)
    assert not any("--cov-context=test" in n for n in impact(root).notes or ())  # recorded: used, no hint


def test_coverage_without_contexts_says_how_to_record_them(tmp_path):
    root = repo(tmp_path)
    record(root, contexts=False)
    edit(root, "pkg/core.py", "return x + 1", "return 1 + x")
    got = impact(root)
    assert got.coverage is None
    assert any("--cov-context=test" in n for n in got.notes)
    with pytest.raises(CoverageFileError, match="per-test contexts"):
        read(root / ".coverage", root)


def test_a_coverage_file_outside_the_repository_or_not_one_is_refused(tmp_path):
    root = repo(tmp_path)
    edit(root, "pkg/core.py", "return x + 1", "return 1 + x")
    with pytest.raises(NavigatorError, match="outside the repository"):
        impact(root, coverage=str(tmp_path / ".coverage"))
    (root / "notes.db").write_bytes(b"not sqlite at all" * 10)
    got = impact(root, coverage="notes.db")
    assert got.coverage is None and any("notes.db" in n for n in got.notes)
    got = impact(root, coverage="missing.coverage")
    assert any("no coverage data file" in n for n in got.notes)


def test_a_kept_map_serves_the_next_answer_and_a_new_run_replaces_it(tmp_path):
    root = repo(tmp_path)
    record(root)
    edit(root, "pkg/core.py", "return x + 1", "return 1 + x")
    first = impact(root)
    kept = list((tmp_path / "state" / "coverage").iterdir())
    assert len(kept) == 1
    assert names(impact(root).covered_tests) == names(first.covered_tests)
    kept[0].write_bytes(b"\x93damaged")  # a map another version wrote, or a torn one: made again
    assert names(impact(root).covered_tests) == names(first.covered_tests)
    edit(root, "tests/test_core.py", "assert maybe(1) == 1", "assert maybe(1, True) == 2")
    commit(root, "test_maybe_not runs helper now")
    edit(root, "pkg/core.py", "return 1 + x", "return x + 1")
    commit(root, "back")
    record(root)  # a new run: the map is made again
    edit(root, "pkg/core.py", "return x + 1", "return 1 + x")
    assert "tests/test_core.py::test_maybe_not" in names(impact(root).covered_tests)


def test_numbits_and_code_lines():
    assert numbits_to_lines(bytes([0b00000110, 0, 0b10000000])) == {1, 2, 23}
    code = b"def f(x):\n    y = g(\n        x,\n    )\n\n    # note\n    return y\n"
    assert code_lines(code) >= {1, 2, 3, 7} and not code_lines(code) & {5, 6}
    assert code_lines(b"def (:") is None


def test_a_fingerprint_is_an_entity_s_own_lines():
    before = textwrap.dedent("""
        class A:
            x = 1

            def m(self):
                return 1
    """).lstrip().encode()
    def prints(text: bytes) -> dict[str, int]:
        return fingerprints("a.py", text, list(parse_file("a.py", text).entities))

    fb, fa = prints(before), prints(before.replace(b"return 1", b"return 2"))
    assert fb["class:a.py:A"] == fa["class:a.py:A"]  # a method edited: its class reads the same
    assert fb["method:a.py:A.m"] != fa["method:a.py:A.m"]
    assert prints(b"\n\n" + before)["method:a.py:A.m"] == fb["method:a.py:A.m"]
    # what runs nothing: a comment, an annotation of the signature, a blank line
    commented = before.replace(b"def m(self):", b"def m(self) -> int:  # one\n").replace(b"return 1", b"# why\n        return 1")
    assert prints(commented)["method:a.py:A.m"] == fb["method:a.py:A.m"]
    # a line's block is its indentation: the same tokens in another block are other code
    nested = textwrap.dedent("""
        def f(a):
            if a:
                g()
            h()
    """).lstrip().encode()
    assert prints(nested)["func:a.py:f"] != prints(nested.replace(b"    h()", b"        h()"))["func:a.py:f"]


def test_the_command_line_prints_the_covered_tests(tmp_path):
    root = repo(tmp_path)
    record(root)
    edit(root, "pkg/core.py", "return x + 1", "return 1 + x")
    index_repository(root, workers=1, embed=False)
    exe = Path(sys.executable).parent / "nsccn"
    done = subprocess.run([str(exe), "impact"], cwd=root / "tests", capture_output=True, text=True, timeout=120,
                          env={**os.environ})
    assert done.returncode == 0, done.stderr
    assert "covered tests (3:" in done.stdout and "tests/test_core.py::TestMaybe::test_flag" in done.stdout
    off = subprocess.run([str(exe), "impact", "--coverage", "off"], cwd=root, capture_output=True, text=True,
                         timeout=120)
    assert "covered tests" not in off.stdout and "test_maybe_not" in off.stdout


def test_a_data_file_written_in_another_checkout_is_read_relative_to_it(tmp_path):
    first = repo(tmp_path)
    data = record(first).read_bytes()  # its paths: absolute, under `first`
    second = tmp_path / "elsewhere"
    subprocess.run(["git", "clone", "-q", str(first), str(second)], check=True)
    (second / ".coverage").write_bytes(data)  # as CI's artifact, or a container's run
    edit(second, "pkg/core.py", "return x + 1", "return 1 + x")
    got = impact(second)
    assert got.coverage.answered == 1
    assert "tests/test_core.py::test_by_name" in names(got.covered_tests)


def test_a_function_changed_since_to_reach_the_change_brings_the_tests_that_ran_it(tmp_path):
    root = repo(tmp_path)
    record(root)
    assert impact(root).changed == []  # the first answer after the run maps it, while the files are as it ran them
    edit(root, "pkg/other.py", "def other(n):\n    return n * 2",
         "from pkg.core import helper\n\n\ndef other(n):\n    return helper(n) - 1 + n")  # calls helper now
    commit(root, "other uses helper")
    edit(root, "pkg/core.py", "return x + 1", "return 1 + x")
    got = impact(root)
    by_name = {f"{t.file}::{t.qualname}": t for t in got.covered_tests}
    assert {"tests/test_other.py::test_other_one", "tests/test_other.py::test_other_two"} <= set(by_name)
    assert "changed since" in by_name["tests/test_other.py::test_other_one"].reason
    assert got.tests == []  # the run measured `other`: its tests then are its tests now, no walk
    assert "tests/test_core.py::test_maybe_not" not in by_name


def test_a_file_whose_text_at_the_run_is_lost_is_left_to_the_graph(tmp_path):
    root = repo(tmp_path)
    record(root)
    # committed after the run and before any answer mapped it: neither the disk nor HEAD holds what ran
    edit(root, "pkg/other.py", "def other(n):\n    return n * 2",
         "from pkg.core import helper\n\n\ndef other(n):\n    return helper(n) - 1 + n")
    commit(root, "other uses helper")
    edit(root, "pkg/core.py", "return x + 1", "return 1 + x")
    got = impact(root)
    assert got.coverage.unmapped == ["pkg/other.py"]
    assert "tests/test_other.py::test_other_one" in names(got.tests)  # the graph, from `other`


def test_detect_changes_over_stdio_lists_the_covered_tests(tmp_path):
    import asyncio

    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    root = repo(tmp_path)
    record(root)
    edit(root, "pkg/core.py", "return x + 1", "return 1 + x")
    index_repository(root, workers=1, embed=False)
    transport = StdioTransport(command=str(Path(sys.executable).parent / "nsccn"), args=["mcp", "--root", str(root)],
                               cwd=str(root), env={**os.environ, "NSCCN_LOG_LEVEL": "WARNING"})

    async def main():
        async with Client(transport) as client:
            on = await client.call_tool("detect_changes", {})
            off = await client.call_tool("detect_changes", {"coverage": "off"})
            return on.structured_content, off.structured_content

    on, off = asyncio.run(main())
    assert {f"{t['file']}::{t['qualname']}" for t in on["covered_tests"]} == {
        "tests/test_core.py::test_used", "tests/test_core.py::test_by_name", "tests/test_core.py::TestMaybe.test_flag"}
    assert on["coverage"]["answered"] == 1 and on["totals"]["covered_tests"] == 3 and "covered_tests_are" in on
    assert "covered_tests" not in off and "coverage" not in off
    assert "test_maybe_not" in {t["qualname"] for t in off["tests"]} and "test_maybe_not" not in on["run"]


def test_a_test_file_the_run_recorded_nothing_of_is_answered_by_the_graph(tmp_path):
    root = repo(tmp_path)
    (root / "tests" / "test_later.py").write_text(
        "import pytest\n\nfrom pkg.core import used\n\npytestmark = pytest.mark.skip(reason='not yet')\n\n\n"
        "def test_later():\n    assert used(2) == 3\n")
    commit(root, "a skipped test file")
    record(root)  # skipped: the run records no test of it
    impact(root)
    edit(root, "tests/test_later.py", "pytestmark = pytest.mark.skip(reason='not yet')\n", "")
    commit(root, "it runs now")
    edit(root, "pkg/core.py", "return x + 1", "return 1 + x")
    got = impact(root)
    assert "tests/test_later.py::test_later" in names(got.tests)
    assert got.coverage.unknown_tests == 1
    assert "tests/test_core.py::test_maybe_not" not in names(got.tests)  # a file it recorded: answered by it


def test_a_test_added_since_the_run_is_run(tmp_path):
    root = repo(tmp_path)
    record(root)
    impact(root)
    # a new test in a file the run knows, reaching helper through a call the graph cannot see: the run knows
    # nothing of it, so it runs (as pytest-testmon runs a test it has no data for)
    edit(root, "tests/test_core.py", "class TestMaybe:", "def test_added():\n    assert by_name('helper', 5) == 6\n\n\nclass TestMaybe:")
    commit(root, "a test added")
    edit(root, "pkg/core.py", "return x + 1", "return 1 + x")
    got = impact(root)
    assert "tests/test_core.py::test_added" in names(got.tests)
    assert "added since the run" in next(t.reason for t in got.tests if t.qualname == "test_added")
    assert got.coverage.unknown_tests == 1 and "test_maybe_not" not in got.run


def test_a_changed_signature_brings_the_tests_that_ran_the_function_and_the_graph_s(tmp_path):
    root = repo(tmp_path)
    record(root)
    edit(root, "pkg/core.py", "def helper(x):\n    return x + 1", "def helper(x, y=1):\n    return x + y")
    got = impact(root)
    assert got.changed[0].change == "signature"
    assert "tests/test_core.py::test_by_name" in names(got.covered_tests)  # a call the graph cannot see
    # and the graph's walk from it, to the functions the run measured: the tests that ran them
    assert "tests/test_core.py::test_maybe_not" in names(got.covered_tests)
    assert "cannot tell" in next(t.reason for t in got.covered_tests if t.qualname == "test_maybe_not")


def test_where_the_graph_alone_runs_the_whole_suite_the_test_files_the_run_knows_nothing_of_run(tmp_path):
    files = dict(FILES)
    files["tests/test_maybe.py"] = "from pkg.core import maybe\n" + "".join(
        f"\n\ndef test_maybe_{i}():\n    assert maybe({i}) == {i}\n" for i in range(8))
    root = indexed_git_repo(tmp_path / "repo", files)
    (root / ".gitignore").write_text(".coverage\n.nsccn/\n")
    commit(root, "ignore")
    record(root)
    impact(root)
    # tests made at run time, added since the run: no test function of ours, nothing recorded of them
    (root / "tests" / "test_made.py").write_text(
        "import unittest\n\nfrom pkg.core import by_name\n\n\nclass Made(unittest.TestCase):\n    pass\n\n\n"
        "for i in range(3):\n    setattr(Made, f'test_{i}', lambda self, i=i: self.assertEqual(by_name('helper', i), i + 1))\n")
    commit(root, "generated tests")
    edit(root, "pkg/core.py", "return x + 1", "return 1 + x")
    alone = impact(root, coverage="off")
    assert any(s.whole for s in alone.suites)  # the graph alone: most of the suite, so all of it
    got = impact(root)
    assert not any(s.whole for s in got.suites)
    assert "tests/test_made.py" in {t.file for t in got.test_files} and "tests/__init__.py" not in got.run
    assert "test_maybe_3" not in got.run


def test_a_test_class_added_since_the_run_is_left_to_the_graph(tmp_path):
    root = repo(tmp_path)
    record(root)
    impact(root)
    (root / "tests" / "test_other.py").write_text(
        (root / "tests" / "test_other.py").read_text().replace("from pkg.other import other", "from pkg.core import used\nfrom pkg.other import other")
        + "\n\nclass TestMore:\n    def test_more(self):\n        assert used(0) == 1\n\n    def test_less(self):\n        assert other(0) == 0\n")
    commit(root, "a test class added")
    edit(root, "pkg/core.py", "return x + 1", "return 1 + x")
    got = impact(root)
    # its node ids may name what the runner does not collect (classes made at run time): what the graph reaches
    assert "tests/test_other.py::TestMore.test_more" in names(got.tests)
    assert "tests/test_other.py::TestMore.test_less" not in names(got.tests)


def test_tests_that_were_there_and_recorded_no_line_are_left_to_the_graph(tmp_path):
    files = dict(FILES)
    files["tests/test_sub.py"] = (
        "import subprocess\nimport sys\n\nfrom pkg.other import other\n\n\n"
        "def test_in_process():\n    assert other(2) == 4\n\n\n"
        "def test_in_process_too():\n    assert other(3) == 6\n"
        + "".join(f"\n\ndef test_sub_{i}():\n    out = subprocess.run([sys.executable, '-c', 'from pkg.core import used; "
                  f"print(used({i}))'], capture_output=True, text=True, check=True)\n    assert out.stdout.strip() == "
                  f"'{i + 1}'\n" for i in range(3)))
    root = indexed_git_repo(tmp_path / "repo", files)
    (root / ".gitignore").write_text(".coverage\n.nsccn/\n")
    commit(root, "ignore")
    record(root)  # the subprocesses' lines are not measured: the run records no line of those tests
    edit(root, "pkg/core.py", "return x + 1", "return 1 + x")
    got = impact(root)
    # not listed for that alone (listing every such test took half of some suites), and no file run whole for it
    assert not names(got.tests) & {f"tests/test_sub.py::test_sub_{i}" for i in range(3)}
    assert "tests/test_sub.py" not in {t.file for t in got.test_files} and "test_sub" not in got.run


LINES = {
    "pkg/lines.py": """
        def pick(x, flag=False):
            if flag:
                return describe(
                    x,
                    "flagged",
                )
            return x


        def describe(x, how):
            return f"{x} {how}"


        def kind(x):
            if x == 0:
                return "zero"

            # the rest
            else:
                return "other"


        def check(x):
            return x > 0


        def gate(x):
            if check(x):
                return "in"
            return "out"
    """,
    "tests/test_lines.py": """
        from pkg.lines import gate, kind, pick


        def test_in():
            assert gate(1) == "in"


        def test_out():
            assert gate(-1) == "out"


        def test_zero():
            assert kind(0) == "zero"


        def test_other():
            assert kind(1) == "other"


        def test_plain():
            assert pick(1) == 1


        def test_flagged():
            assert pick(1, flag=True) == "1 flagged"
    """,
}
PICK = "func:pkg/lines.py:pick"


def lines_repo(tmp_path: Path) -> Path:
    root = indexed_git_repo(tmp_path / "repo", {**FILES, **LINES})
    (root / ".gitignore").write_text(".coverage\n.nsccn/\n")
    commit(root, "ignore")
    return root


def covered_by(got, eid: str) -> set[str]:
    return {n for n, t in ((f"{t.file}::{t.qualname}", t) for t in got.covered_tests) if eid in t.reason}


def test_a_changed_line_brings_the_tests_that_ran_that_line_not_all_of_the_function_s(tmp_path):
    root = lines_repo(tmp_path)
    record(root)
    edit(root, "pkg/lines.py", "    return x\n", "    return x * 1\n")  # run by test_plain alone
    got = impact(root)
    assert covered_by(got, PICK) == {"tests/test_lines.py::test_plain"}
    assert "the changed lines (line 7 before the change)" in got.covered_tests[0].reason
    assert "test_flagged" not in got.run
    graph = impact(root, coverage="off")  # the graph cannot tell the branches apart
    assert {"tests/test_lines.py::test_plain", "tests/test_lines.py::test_flagged"} <= names(graph.tests)


def test_a_line_inside_a_statement_written_over_several_counts_as_the_statement(tmp_path):
    root = lines_repo(tmp_path)
    record(root)
    edit(root, "pkg/lines.py", '"flagged",', '"marked",')  # the call's third line: the call ran in test_flagged
    got = impact(root)
    assert "tests/test_lines.py::test_flagged" in covered_by(got, PICK)
    assert "tests/test_lines.py::test_plain" not in covered_by(got, PICK)


def test_lines_added_bring_the_tests_that_ran_the_lines_around_them(tmp_path):
    root = lines_repo(tmp_path)
    record(root)
    edit(root, "pkg/lines.py", "    return x\n", "    x = x + 0\n    return x\n")  # only adds, before `return x`
    got = impact(root)
    assert "tests/test_lines.py::test_plain" in covered_by(got, PICK)


def pick_changed_after(tmp_path: Path, *since: tuple[str, str]):
    """The answer for a change of `pick`'s last line, made after the run and then `since`'s edits of it."""
    root = lines_repo(tmp_path)
    record(root)
    impact(root)  # mapped now, as the run left the file
    for old, new in since:
        edit(root, "pkg/lines.py", old, new)
    commit(root, "since the run")
    edit(root, "pkg/lines.py", "    return x\n", "    return x * 1\n")
    return impact(root)


def test_a_function_laid_out_otherwise_since_the_run_brings_all_its_tests(tmp_path):
    # a blank line above, two lines of the call joined: its code on other lines than it ran
    got = pick_changed_after(tmp_path, ("    if flag:\n", "\n    if flag:\n"), ('x,\n            "flagged",', 'x, "flagged",'))
    assert covered_by(got, PICK) == {"tests/test_lines.py::test_plain", "tests/test_lines.py::test_flagged"}
    assert not any("the changed lines" in t.reason for t in got.covered_tests)


def test_a_branch_added_to_a_chain_brings_the_tests_that_went_past_it(tmp_path):
    root = lines_repo(tmp_path)
    record(root)
    # between lines no test ran (a blank line, a comment): whoever ran the line before or the line after
    edit(root, "pkg/lines.py", "\n    # the rest\n", "\n    elif x < 0:\n        return \"negative\"\n    # the rest\n")
    got = impact(root)
    assert {"tests/test_lines.py::test_zero", "tests/test_lines.py::test_other"} <= covered_by(got, "func:pkg/lines.py:kind")
    assert "the changed lines" in got.covered_tests[0].reason


def test_a_function_whose_callee_changed_since_the_run_brings_all_its_tests(tmp_path):
    root = lines_repo(tmp_path)
    record(root)
    impact(root)  # mapped now, as the run left the file
    edit(root, "pkg/lines.py", "return x > 0", "return x > -5")  # gate(-1) now takes the first branch
    commit(root, "check widened")
    edit(root, "pkg/lines.py", 'return "in"', 'return "inside"')
    got = impact(root)
    assert covered_by(got, "func:pkg/lines.py:gate") == {"tests/test_lines.py::test_in", "tests/test_lines.py::test_out"}


def test_a_function_whose_comments_and_annotations_changed_since_the_run_keeps_its_lines(tmp_path):
    # annotations, a comment and a blank line: its code reads line for line as it ran
    got = pick_changed_after(tmp_path, ("def pick(x, flag=False):", "def pick(x: int, flag: bool = False) -> object:"),
                             ("    return x\n", "    # the plain case\n\n    return x\n"))
    assert covered_by(got, PICK) == {"tests/test_lines.py::test_plain"}
    assert "the changed lines (line 9 before the change)" in got.covered_tests[0].reason


def test_a_caller_whose_comments_changed_since_the_run_did_not_change_since(tmp_path):
    root = repo(tmp_path)
    record(root)
    impact(root)  # mapped now, as the run left the file
    edit(root, "pkg/core.py", "def used(x):\n    return helper(x)", "def used(x) -> int:\n    # by the helper\n    return helper(x)")
    commit(root, "comment")
    edit(root, "pkg/core.py", "return x + 1", "return 1 + x")
    got = impact(root)
    assert got.coverage.changed_since == 0
    assert "tests/test_core.py::test_used" in names(got.covered_tests)
    assert not any("changed since" in t.reason for t in got.covered_tests)


def test_a_module_imported_while_a_test_ran_brings_that_test_when_its_own_lines_change(tmp_path):
    """A plugin loaded by name: no import of it in any test file, yet its top-level code runs inside
    the test that loads it, and the recorded coverage says which."""
    files = {**FILES, "pkg/plugins/__init__.py": "", "pkg/plugins/lazy.py": 'NAME = "lazy"\n',
             "pkg/loader.py": "import importlib\n\n\ndef load(name):\n    return importlib.import_module(f'pkg.plugins.{name}')\n",
             "tests/test_loader.py": "from pkg.loader import load\n\n\ndef test_load():\n    assert load('lazy').NAME.startswith('lazy')\n"}
    root = indexed_git_repo(tmp_path / "repo", files)
    (root / ".gitignore").write_text(".coverage\n.nsccn/\n")
    commit(root, "ignore")
    record(root)
    edit(root, "pkg/plugins/lazy.py", 'NAME = "lazy"', 'NAME = "lazy!"')
    got = impact(root)
    by_name = {f"{t.file}::{t.qualname}": t for t in got.covered_tests}
    assert "imported while the test ran" in by_name["tests/test_loader.py::test_load"].reason
    assert "tests/test_core.py::test_used" not in by_name
    graph = impact(root, coverage="off")  # no edge names the module: the graph alone cannot see it
    assert "tests/test_loader.py::test_load" not in names(graph.tests) | names(graph.module_tests)
