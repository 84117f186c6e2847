"""A file edited after indexing, no pipeline running: windows show the entity's current lines or
refuse, skeletons are of the current file, and every answer built on it says it is stale."""

import json
import subprocess
import sys

import pytest

from nsccn.serving.navigator import Navigator, NavigatorError


def nsccn(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "nsccn.cli", *args], capture_output=True, text=True, cwd=cwd, timeout=120)


class _closing:
    def __init__(self, nav):
        self.nav = nav

    def __enter__(self):
        return self.nav

    def __exit__(self, *exc):
        self.nav.close()


@pytest.fixture
def edited(shop_index):
    """shop/base.py with 3 lines inserted above everything, after indexing."""
    repo, _ = shop_index
    p = repo / "shop/base.py"
    p.write_text("import sys\n\n\n" + p.read_text())
    n = Navigator(repo)
    yield repo, n
    n.close()


def test_window_shows_the_current_lines_of_a_moved_entity(edited):
    repo, nav = edited
    w = nav.window("method:shop/base.py:Model.save", context_lines=0)
    lines = (repo / "shop/base.py").read_text().splitlines()
    assert (w.start, w.end) == (7, 10)  # indexed at 4-7
    code = w.code.splitlines()
    assert code[0] == f" 7 | {lines[6]}" and "def save(self):" in code[0]
    assert "Model.registry.append(self)" in code[-1]
    assert "4-7" in w.stale and "7-10" in w.stale


def test_window_of_an_entity_gone_from_the_file_is_refused(shop_index):
    repo, _ = shop_index
    p = repo / "shop/base.py"
    p.write_text(p.read_text().replace("def validate(self):", "def check(self):"))
    with _closing(Navigator(repo)) as nav:
        with pytest.raises(NavigatorError, match="no longer defines method:shop/base.py:Model.validate"):
            nav.window("method:shop/base.py:Model.validate")
        assert "def save" in nav.window("method:shop/base.py:Model.save").code


def test_skeleton_of_an_edited_file_is_of_the_current_file(shop_index):
    repo, _ = shop_index
    p = repo / "shop/base.py"
    p.write_text(p.read_text() + "\n\ndef added_later(x):\n    return x\n")
    with _closing(Navigator(repo)) as nav:
        out = nav.skeleton("shop/base.py")
    assert "def added_later(x):" in out.skeleton and "changed since it was indexed" in out.stale


def test_trace_carries_stale(edited):
    _, nav = edited
    out = nav.trace("method:shop/base.py:Model.validate", "upstream", depth=1)
    assert "shop/base.py" in out.stale
    assert nav.trace("func:shop/service.py:register", "downstream", depth=1).stale is None


def test_cli_json_answers_carry_stale(edited):
    repo, _ = edited
    root = ["--root", str(repo), "--json"]
    w = json.loads(nsccn("window", "method:shop/base.py:Model.save", "--context", "0", *root).stdout)
    assert w["start"] == 7 and "def save(self):" in w["code"].splitlines()[0] and w["stale"]
    s = json.loads(nsccn("search", "save model", *root).stdout)
    assert "shop/base.py" in s["stale"]
    t = json.loads(nsccn("trace", "method:shop/base.py:Model.save", *root).stdout)
    assert "shop/base.py" in t["stale"]
    k = json.loads(nsccn("skeleton", "shop/base.py", *root).stdout)
    assert k["stale"]
    r = nsccn("window", "method:shop/base.py:Model.save", "--root", str(repo))
    assert "# note:" in r.stderr and " 7 | " in r.stdout
