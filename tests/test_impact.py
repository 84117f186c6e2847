"""`nsccn impact` / MCP `detect_changes` on a real git repository with several commits, a real
index, the command as a process and the tool through a real MCP client over stdio."""

import asyncio
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from fastmcp.exceptions import ToolError

from nsccn.reading.diff import DiffError, apply_hunks, parse_diff
from nsccn.indexing.indexer import index_repository
from nsccn.serving.answers import ImpactAnswer
from nsccn.serving.navigator import Navigator

NSCCN = Path(sys.executable).parent / "nsccn"

BASE = {
    "pkg/__init__.py": "",
    "pkg/core.py": """
        LIMIT = 3


        class Base:
            def run(self, x):
                return self.step(x)

            def step(self, x):
                return x


        class Child(Base):
            def step(self, x):
                return x * 2


        def helper(x):
            return x + 1


        def mid(x):
            return helper(x)


        def top(x):
            return mid(x)


        def unrelated():
            return 0


        def gone():
            return 1


        def uses_gone():
            return gone() + 1


        def load_settings():
            return {"limit": LIMIT}


        def helper_twice():
            return 2 * 2


        def documented():
            '''Say what it does.'''
            return unrelated()
    """,
    "tests/__init__.py": "",
    "tests/conftest.py": """
        import pytest

        from pkg.core import load_settings


        @pytest.fixture
        def settings():
            return load_settings()
    """,
    "tests/test_core.py": """
        from pkg.core import helper_twice, top, unrelated, uses_gone


        def test_top():
            assert top(1) == 2


        def test_unrelated():
            assert unrelated() == 0


        def test_uses_gone():
            assert uses_gone() == 2


        def test_settings(settings):
            assert settings["limit"] == 3


        REGISTRY = []


        def register(view):
            REGISTRY.append(view)
            return view


        def test_stand_in_class():
            class Stub:
                value = helper_twice()

            assert Stub.value == 4


        def test_registered_view():
            @register
            def view():
                return helper_twice()

            assert REGISTRY[-1]() == 4
    """,
    "web/cart.ts": """
        export function total(items: number[]): number {
          return items.reduce((a, b) => a + b, 0);
        }

        export function unused(): number {
          return 1;
        }
    """,
    "web/cart.test.ts": """
        import { total } from './cart';

        test('total adds', () => {
          expect(total([1, 2])).toBe(3);
        });
    """,
    "web/other.test.ts": """
        test('nothing', () => {
          expect(1).toBe(1);
        });
    """,
    # suites big enough that the body change below reaches under half of each (`run` selects, not all)
    **{f"web/other{i}.test.ts": """
        test('nothing else', () => {
          expect(2).toBe(2);
        });
    """ for i in range(2)},
    "tests/test_other.py": "".join(f"def test_other_{i}():\n    assert {i} == {i}\n\n\n" for i in range(9)),
    "calc/other_test.go": "package calc\n\nimport \"testing\"\n\n" + "".join(
        f"func TestOther{i}(t *testing.T) {{\n\tif {i} != {i} {{\n\t\tt.Fatal(\"other\")\n\t}}\n}}\n\n" for i in range(3)),
    "calc/calc.go": """
        package calc

        func Add(a, b int) int {
        \treturn a + b
        }

        func Sub(a, b int) int {
        \treturn a - b
        }
    """,
    "calc/calc_test.go": """
        package calc

        import "testing"

        func TestAdd(t *testing.T) {
        \tif Add(1, 2) != 3 {
        \t\tt.Fatal("add")
        \t}
        }

        func TestSub(t *testing.T) {
        \tif Sub(2, 1) != 1 {
        \t\tt.Fatal("sub")
        \t}
        }
    """,
}


def git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True, env=env).stdout


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip("\n"))


def edit(root: Path, rel: str, old: str, new: str) -> None:
    p = root / rel
    text = p.read_text()
    assert old in text
    p.write_text(text.replace(old, new, 1))


def commit(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-qm", message)
    return git(root, "rev-parse", "HEAD").strip()


# The change most tests look at: helper's body, total's body, Add's body (three languages).
BODY_CHANGE = [("pkg/core.py", "return x + 1", "return x + 1 + 0"),
               ("web/cart.ts", "(a, b) => a + b, 0", "(a, b) => b + a, 0"),
               ("calc/calc.go", "return a + b", "return b + a")]


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> dict:
    """main: the base commit, indexed; branch `feature`: a body change, then a deletion, then a
    signature change, then a change of an overridden method (the work tree stays at main)."""
    root = tmp_path_factory.mktemp("impact") / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / ".gitignore").write_text(".nsccn/\n")
    write(root, BASE)
    shas = {"base": commit(root, "base")}
    git(root, "checkout", "-q", "-b", "feature")
    for rel, old, new in BODY_CHANGE:
        edit(root, rel, old, new)
    shas["body"] = commit(root, "body change")
    edit(root, "pkg/core.py", "def gone():\n    return 1\n\n\n", "")
    shas["delete"] = commit(root, "delete gone")
    edit(root, "pkg/core.py", "def mid(x):\n    return helper(x)", "def mid(x, y=0):\n    return helper(x) + y")
    edit(root, "pkg/core.py", "Say what it does.", "Say what it does, better.")
    shas["signature"] = commit(root, "signature change and a docstring")
    edit(root, "pkg/core.py", "    def step(self, x):\n        return x\n", "    def step(self, x):\n        return x + 0\n")
    edit(root, "pkg/core.py", "return {\"limit\": LIMIT}", "return {\"limit\": LIMIT, \"x\": 1}")
    edit(root, "pkg/core.py", "return 2 * 2", "return 4")
    shas["override"] = commit(root, "overridden method, a fixture's callee, a callee of a nested function")
    edit(root, "pkg/core.py", "return x * 2", "return x * 2 + 0")
    shas["dispatch"] = commit(root, "an override")
    git(root, "checkout", "-q", "main")
    index_repository(root, workers=1, embed=False)
    return {"root": root, **shas}


def nav_of(root: Path) -> Navigator:
    return Navigator(root)


def changed_of(out: ImpactAnswer) -> dict[str, str]:
    return {c.id: c.change for c in out.changed}


def test_a_body_change_selects_the_test_three_calls_away_and_not_an_unrelated_one(repo):
    out = nav_of(repo["root"]).impact(commit=repo["body"])
    assert changed_of(out) == {"func:pkg/core.py:helper": "body", "func:web/cart.ts:total": "body",
                               "func:calc/calc.go:Add": "body"}
    tests = {t.id: t for t in out.tests}
    assert "func:tests/test_core.py:test_top" in tests
    assert tests["func:tests/test_core.py:test_top"].distance == 3  # test_top -> top -> mid -> helper
    assert "func:tests/test_core.py:test_unrelated" not in tests
    assert "CALLS" in tests["func:tests/test_core.py:test_top"].reason
    # TypeScript: the test file (its tests are anonymous callbacks); Go: the test function
    assert "file:web/cart.test.ts" in tests and "file:web/other.test.ts" not in tests
    assert "func:calc/calc_test.go:TestAdd" in tests and "func:calc/calc_test.go:TestSub" not in tests
    run = out.run
    assert "npx jest web/cart.test.ts" in run
    # TestAdd is half of calc_test.go's tests, test_top one of test_core.py's few: `run` runs those files whole
    # (the graph's answer alone names TestAdd and test_top); no module tier, since a test is reached from each change
    assert [t.file for t in out.test_files] == ["calc/calc_test.go", "tests/test_core.py"]
    assert "go test ./calc" in run and "python -m pytest tests/test_core.py" in run and out.module_tests == []
    # no runner's suite is mostly reached: the selection stands (test_core.py's 6 tests of 15: the file run whole)
    assert {s.runner: (s.reached, s.tests, s.whole) for s in out.suites} == {
        "jest": (1, 4, False), "go": (2, 5, False), "pytest": (6, 15, False)}
    precise = nav_of(repo["root"]).impact(commit=repo["body"], min_confidence=0.31).run
    assert "go test ./calc -run '^(TestAdd)$'" in precise and "test_unrelated" not in precise
    impacted = {i.id: i for i in out.impacted}
    assert impacted["func:pkg/core.py:mid"].distance == 1
    assert impacted["func:pkg/core.py:top"].path.startswith("func:pkg/core.py:top -CALLS(1)-> func:pkg/core.py:mid")
    assert out.risk.untested_changes == []


def test_a_deleted_function_is_found_as_it_was_and_its_callers_are_impacted(repo, tmp_path):
    out = nav_of(repo["root"]).impact(commit=repo["delete"])
    assert changed_of(out) == {"func:pkg/core.py:gone": "deleted"}
    assert out.changed[0].in_index == "func:pkg/core.py:gone"
    assert "func:pkg/core.py:uses_gone" in {i.id for i in out.impacted}
    assert "func:tests/test_core.py:test_uses_gone" in {t.id for t in out.tests}
    assert out.risk.signature_or_removal == ["func:pkg/core.py:gone"]
    # An index made after the deletion no longer holds it: its callers are found by name.
    later = tmp_path / "later"
    shutil.copytree(repo["root"], later, ignore=shutil.ignore_patterns(".nsccn"))
    git(later, "checkout", "-q", repo["delete"])
    index_repository(later, workers=1, embed=False)
    out = nav_of(later).impact(commit=repo["delete"])
    assert out.changed[0].in_index is None
    assert "func:pkg/core.py:uses_gone" in {i.id for i in out.impacted}


def test_a_signature_change_is_told_apart_from_a_body_change(repo):
    out = nav_of(repo["root"]).impact(commit=repo["signature"])
    assert changed_of(out) == {"func:pkg/core.py:mid": "signature", "func:pkg/core.py:documented": "docstring"}
    assert not any("documented" in i.path for i in out.impacted)  # a docstring alone impacts nothing
    assert out.risk.signature_or_removal == ["func:pkg/core.py:mid"]
    assert out.risk.level == "high"  # a signature change with callers


def test_overrides_fixtures_nested_functions_and_dispatch(repo):
    out = nav_of(repo["root"]).impact(commit=repo["override"])
    assert changed_of(out) == {"method:pkg/core.py:Base.step": "body", "func:pkg/core.py:load_settings": "body",
                               "func:pkg/core.py:helper_twice": "body"}
    impacted = {i.id: i for i in out.impacted}
    assert "OVERRIDES" in impacted["method:pkg/core.py:Child.step"].path
    assert "method:pkg/core.py:Base.run" in impacted
    tests = {t.id: t for t in out.tests}
    # test_settings(settings): pytest injects the fixture that calls load_settings
    assert "USES_FIXTURE" in tests["func:tests/test_core.py:test_settings"].reason
    assert "func:tests/test_core.py:test_unrelated" not in tests
    # a view registered by a decorator inside the test: no call names it, the test defines it
    assert "DEFINES" in tests["func:tests/test_core.py:test_registered_view"].reason
    stand_in = tests["func:tests/test_core.py:test_stand_in_class"].reason
    assert stand_in.startswith("func:tests/test_core.py:test_stand_in_class -DEFINES(0.8)-> class:")
    # a changed override: whoever calls the base method through self may run it
    out = nav_of(repo["root"]).impact(commit=repo["dispatch"])
    impacted = {i.id: i for i in out.impacted}
    assert "DISPATCHES_TO" in impacted["method:pkg/core.py:Base.run"].path


def cli(root: Path, *args: str, stdin: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    nsccn = NSCCN
    return subprocess.run([str(nsccn), "impact", *args], capture_output=True, text=True, input=stdin,
                          cwd=cwd or root, timeout=120)


def test_the_module_tier_stands_in_only_where_the_graph_reaches_no_test(repo):
    """A change the graph reaches a test from gets no module tier (the tests of files importing its
    module): `wide` asks for it anyway; from the command line too."""
    nav = nav_of(repo["root"])
    assert nav.impact(commit=repo["body"]).module_tests == []
    wide = nav.impact(commit=repo["body"], wide=True)
    assert wide.wide and ("tests/test_core.py", "test_unrelated") in {(t.file, t.qualname) for t in wide.module_tests}
    assert all(t.confidence == 0.3 and "no edge reaches this test" in t.reason for t in wide.module_tests)
    out = json.loads(cli(repo["root"], "--commit", repo["body"], "--wide", "--json").stdout)
    assert out["wide"] is True and {t["qualname"] for t in out["module_tests"]} == {t.qualname for t in wide.module_tests}


def test_staged_base_commit_and_a_diff_on_stdin_agree(repo, tmp_path):
    root = tmp_path / "agree"
    shutil.copytree(repo["root"], root)  # main, indexed
    diff = git(root, "diff", repo["base"], repo["body"])
    subprocess.run(["git", "-C", str(root), "apply"], input=diff, text=True, check=True)  # the edit, uncommitted
    answers = {"worktree": cli(root, "--json")}
    answers["base"] = cli(root, "--base", "main", "--json")
    answers["diff"] = cli(root, "--diff", "-", "--json", stdin=diff)
    answers["commit"] = cli(root, "--commit", repo["body"], "--json")
    git(root, "add", "-A")
    answers["staged"] = cli(root, "--staged", "--json", cwd=root / "pkg")  # from a subdirectory
    seen = {}
    for how, proc in answers.items():
        assert proc.returncode == 0, (how, proc.stderr)
        out = json.loads(proc.stdout)
        seen[how] = (sorted((c["id"], c["change"]) for c in out["changed"]), [t["id"] for t in out["tests"]], out["run"])
    first = seen["commit"]
    assert all(v == first for v in seen.values()), seen
    text = cli(root, "--staged")
    assert "tests/test_core.py::test_top" in text.stdout and "python -m pytest tests/test_core.py\n" in text.stdout


def test_bad_changes_get_clear_errors(repo):
    root = repo["root"]
    bad = cli(root, "--diff", "-", stdin="hello, this is not a diff\n")
    assert bad.returncode == 1 and "not a unified diff" in bad.stderr
    bad = cli(root, "--commit=--output=/tmp/x")
    assert bad.returncode == 1 and "is not a revision" in bad.stderr
    bad = cli(root, "--commit", "no-such-branch")
    assert bad.returncode == 1 and "names no commit" in bad.stderr
    bad = cli(root, "--staged", "--base", "main")
    assert bad.returncode == 1 and "one change at a time" in bad.stderr
    cut = "diff --git a/pkg/core.py b/pkg/core.py\n--- a/pkg/core.py\n+++ b/pkg/core.py\n@@ -1,3 +1,3 @@\n-LIMIT = 3\n"
    bad = cli(root, "--diff", "-", stdin=cut)
    assert bad.returncode == 1 and "ends early" in bad.stderr


def test_a_diff_naming_files_outside_the_root_or_binary_files_is_answered(repo):
    diff = textwrap.dedent("""\
        diff --git a/../../etc/passwd b/../../etc/passwd
        --- a/../../etc/passwd
        +++ b/../../etc/passwd
        @@ -1 +1 @@
        -root:x:0:0
        +root::0:0
        --- /etc/shadow
        +++ /etc/shadow
        @@ -1 +1 @@
        -a
        +b
        diff --git a/logo.png b/logo.png
        index 1111111..2222222 100644
        Binary files a/logo.png and b/logo.png differ
        diff --git a/README.md b/README.md
        new file mode 100644
        --- /dev/null
        +++ b/README.md
        @@ -0,0 +1 @@
        +hello
        """)
    proc = cli(repo["root"], "--diff", "-", "--json", stdin=diff)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert {r["path"] for r in out["refused"]} == {"../../etc/passwd", "/etc/shadow"}
    assert {f["path"]: f.get("binary", False) for f in out["files"]} == {"logo.png": True, "README.md": False}
    assert set(out["outside_index"]) == {"logo.png", "README.md"}
    assert out["changed"] == [] and out["tests"] == []


def test_a_huge_diff_is_capped_with_a_note(repo):
    parts = [f"diff --git a/gen/f{i}.py b/gen/f{i}.py\nnew file mode 100644\n--- /dev/null\n+++ b/gen/f{i}.py\n"
             f"@@ -0,0 +1 @@\n+x = {i}\n" for i in range(1_100)]
    proc = cli(repo["root"], "--diff", "-", "--json", stdin="".join(parts))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert len(out["files"]) == 1_000
    assert any("more than 1000 files" in n for n in out["notes"])


def test_diff_parsing_and_rebuilding_a_side():
    diff = textwrap.dedent("""\
        diff --git a/old name.py b/new.py
        similarity index 90%
        rename from old name.py
        rename to new.py
        --- a/old name.py
        +++ b/new.py
        @@ -1,3 +1,3 @@
         a
        -b
        +B
         c
        diff --git "a/caf\\303\\251.py" "b/caf\\303\\251.py"
        --- "a/caf\\303\\251.py"
        +++ "b/caf\\303\\251.py"
        @@ -2,0 +3 @@ x
        +added
        """)
    parsed = parse_diff(diff)
    renamed, quoted = parsed.files
    assert (renamed.old_path, renamed.new_path, renamed.status) == ("old name.py", "new.py", "renamed")
    assert renamed.hunks[0].deleted() == [2] and renamed.hunks[0].added() == [2]
    assert quoted.path == "café.py" and quoted.hunks[0].added() == [3]
    assert apply_hunks(["a", "B", "c"], renamed.hunks, forward=False) == ["a", "b", "c"]
    assert apply_hunks(["a", "b", "c"], renamed.hunks, forward=True) == ["a", "B", "c"]
    assert apply_hunks(["x", "y", "z"], renamed.hunks, forward=True) is None  # another version of the file
    with pytest.raises(DiffError, match="more lines than the hunk header"):
        parse_diff("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n+c\n-d\n")


def test_detect_changes_over_mcp_stdio(repo):
    async def go():
        transport = StdioTransport(str(NSCCN), ["mcp", "--root", str(repo["root"])])
        async with Client(transport, timeout=60) as c:
            tools = {t.name: t for t in await c.list_tools()}
            assert "detect_changes" in tools
            res = await c.call_tool("detect_changes", {"commit": repo["body"]})
            out = res.structured_content
            assert "func:tests/test_core.py:test_top" in {t["id"] for t in out["tests"]}
            assert out["totals"]["changed"] == 3
            assert {s["runner"]: s["whole"] for s in out["suites"]} == {"pytest": False, "jest": False, "go": False}
            assert "suites_are" not in out
            diff = git(repo["root"], "diff", repo["base"], repo["signature"], "--", "pkg/core.py")
            res = await c.call_tool("detect_changes", {"diff": diff, "depth": 1})
            got = {c["id"]: c["change"] for c in res.structured_content["changed"]}
            assert got["func:pkg/core.py:mid"] == "signature" and got["func:pkg/core.py:gone"] == "deleted"
            assert all(i["distance"] == 1 for i in res.structured_content["impacted"])
            with pytest.raises(ToolError, match="one change at a time"):
                await c.call_tool("detect_changes", {"staged": True, "commit": "main"})
            with pytest.raises(ToolError, match="not a unified diff"):
                await c.call_tool("detect_changes", {"diff": "nothing here"})

    asyncio.run(go())


def test_the_command_line_and_mcp_walk_to_the_test_depth_the_library_measures():
    from nsccn.graph import impact
    from nsccn.serving import params

    default = next(p.default for p in params.IMPACT if p.name == "test_depth")
    assert default == impact.TEST_DEPTH
