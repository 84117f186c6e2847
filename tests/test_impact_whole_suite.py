"""A change the answer finds most of a suite reaching runs the whole suite: past seven tenths of a
runner's tests, selecting saves little and the tests it would leave out mostly reach the change through
paths no edge shows. A change reaching a few tests still runs those alone. A real index, a real
impact walk on a change, the command as a process."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from conftest import impact_of_edit, indexed_git_repo
from nsccn.indexing.indexer import index_repository
from nsccn.serving.navigator import Navigator

NSCCN = Path(sys.executable).parent / "nsccn"

FILES = {
    "pkg/__init__.py": "",
    "pkg/core.py": """
        def parse(text):
            return text.split(",")
    """,
    "pkg/rare.py": """
        def rare():
            return 7
    """,
    "tests/test_parse.py": "from pkg.core import parse\n\n\n" + "".join(
        f"def test_parse_{i}():\n    assert parse('a,b') == ['a', 'b']\n\n\n" for i in range(9)),
    "tests/test_rare.py": """
        from pkg.rare import rare


        def test_rare():
            assert rare() == 7
    """,
    "tests/test_misc.py": "".join(f"def test_misc_{i}():\n    assert {i} == {i}\n\n\n" for i in range(2)),
}


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    return indexed_git_repo(tmp_path_factory.mktemp("suite") / "repo", FILES)


def test_a_change_most_of_the_suite_reaches_runs_the_whole_suite(repo):
    out = impact_of_edit(repo, "pkg/core.py", 'split(",")', 'split(",", -1)')
    assert len(out.tests) == 9  # the graph's answer still names each test
    assert [(s.runner, s.reached, s.tests, s.whole) for s in out.suites] == [("pytest", 9, 12, True)]
    assert out.run == "python -m pytest"
    # above the whole suite's confidence the selection stands
    precise = impact_of_edit(repo, "pkg/core.py", 'split(",")', 'split(",", -1)', min_confidence=0.31)
    assert precise.suites[0].whole is False and precise.run.startswith("python -m pytest tests/test_parse.py::")


def test_a_change_few_tests_reach_runs_those_alone(repo):
    out = impact_of_edit(repo, "pkg/rare.py", "return 7", "return 3 + 4")
    assert [(s.runner, s.reached, s.tests, s.whole) for s in out.suites] == [("pytest", 1, 12, False)]
    assert out.run == "python -m pytest tests/test_rare.py::test_rare"


def test_the_command_line_says_the_suite_runs_whole(repo):
    core, rare = repo / "pkg/core.py", repo / "pkg/rare.py"
    text = core.read_text()
    core.write_text(text.replace('split(",")', 'split(",", -1)'))
    try:
        shown = subprocess.run([str(NSCCN), "impact"], cwd=repo / "tests", capture_output=True, text=True, check=True)
        as_json = subprocess.run([str(NSCCN), "impact", "--json"], cwd=repo, capture_output=True, text=True, check=True)
    finally:
        core.write_text(text)
    text = rare.read_text()
    rare.write_text(text.replace("return 7", "return 3 + 4"))
    try:
        few = subprocess.run([str(NSCCN), "impact"], cwd=repo, capture_output=True, text=True, check=True)
    finally:
        rare.write_text(text)
    assert "suite (pytest): the answer reaches 1 of its 12 tests (8%)\n" in few.stdout and "whole suite" not in few.stdout
    assert "whole suite (pytest): the answer reaches 9 of its 12 tests (75%)" in shown.stdout
    assert "run (from the repository root): python -m pytest\n" in shown.stdout
    assert json.loads(as_json.stdout)["suites"] == [{"runner": "pytest", "tests": 12, "reached": 9, "whole": True}]


def test_detect_changes_says_why_it_runs_the_whole_suite(repo):
    diff = """--- a/pkg/core.py
+++ b/pkg/core.py
@@ -1,2 +1,2 @@
 def parse(text):
-    return text.split(",")
+    return text.split(",", -1)
"""

    async def go():
        async with Client(StdioTransport(str(NSCCN), ["mcp", "--root", str(repo)]), timeout=60) as c:
            return (await c.call_tool("detect_changes", {"diff": diff})).structured_content

    out = asyncio.run(go())
    assert out["run"] == "python -m pytest" and out["suites"][0]["whole"] is True
    assert "70% of its tests or more" in out["suites_are"]


def test_a_long_lived_answerer_counts_the_suite_of_the_index_as_it_is_now(tmp_path):
    """The suite's count is kept between answers (an MCP server's), until the index changes."""
    root = indexed_git_repo(tmp_path / "repo", FILES)
    core = root / "pkg/core.py"
    core.write_text(core.read_text().replace('split(",")', 'split(",", -1)'))
    nav = Navigator(root)
    try:
        first = nav.impact()
        assert [(s.reached, s.tests, s.whole) for s in first.suites] == [(9, 12, True)]
        more = "".join(f"def test_more_{i}():\n    assert {i} == {i}\n\n\n" for i in range(8))
        (root / "tests/test_more.py").write_text(more)
        for args in (["add", "tests/test_more.py"], ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "more"]):
            subprocess.run(["git", *args], cwd=root, check=True)  # in HEAD: not part of the change
        index_repository(root, workers=1, embed=False)  # another connection writes the index
        then = nav.impact()
        assert [(s.reached, s.tests, s.whole) for s in then.suites] == [(9, 20, False)]
    finally:
        nav.close()
