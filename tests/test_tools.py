"""Window, trace, skeleton, search and lookups through the Navigator."""

import os

import pytest

from nsccn.serving.navigator import Navigator, NavigatorError
from nsccn.serving.window import PathOutsideRepository, safe_path


@pytest.fixture
def nav(shop_index):
    repo, _ = shop_index
    n = Navigator(repo)
    yield n
    n.close()


def test_window_exact_lines_with_context(nav, shop_index):
    repo, _ = shop_index
    w = nav.window("method:shop/base.py:Model.save", context_lines=1)
    lines = (repo / "shop/base.py").read_text().splitlines()
    assert (w.start, w.end) == (4, 7)
    assert w.shown == [3, 8]
    assert w.code.splitlines()[0] == "3 | "
    assert w.code.splitlines()[1] == f"4 | {lines[3]}"
    assert w.stale is None


def test_window_reports_stale_file(nav, shop_index):
    repo, _ = shop_index
    p = repo / "shop/base.py"
    p.write_text("# moved\n" + p.read_text())
    assert nav.window("method:shop/base.py:Model.save", 0).stale


@pytest.mark.parametrize("bad", ["/etc/passwd", "../outside.py", "shop/../../x.py", "", "a\0b"])
def test_paths_outside_are_refused(shop_repo, bad):
    with pytest.raises(PathOutsideRepository):
        safe_path(shop_repo, bad)


def test_symlink_leading_out_is_refused(shop_repo, tmp_path):
    (tmp_path / "secret.py").write_text("SECRET = 1\n")
    os.symlink(tmp_path / "secret.py", shop_repo / "link.py")
    with pytest.raises(PathOutsideRepository, match="outside the repository"):
        safe_path(shop_repo, "link.py")
    os.symlink(tmp_path, shop_repo / "dirlink")
    with pytest.raises(PathOutsideRepository):
        safe_path(shop_repo, "dirlink/secret.py")


def test_skeleton_tool(nav):
    out = nav.skeleton("shop/models.py")
    assert "class User(Model):" in out.skeleton
    assert "raise VErr" not in out.skeleton
    assert 0 < out.tokens < out.source_tokens
    assert "method:shop/models.py:User.add_item" in out.entities
    with pytest.raises(NavigatorError, match="outside|refused"):
        nav.skeleton("../etc/passwd")
    with pytest.raises(NavigatorError) as err:
        nav.skeleton("shop/model.py")
    assert "shop/models.py" in err.value.suggestions


def test_trace_directions_depth_and_validation(nav):
    down = nav.trace("func:shop/service.py:register", "downstream", depth=3)
    adj = down.adjacency_list
    assert {i.target for i in adj["func:shop/service.py:register"]} >= {"func:shop/models.py:make_user"}
    # depth 2 reaches what make_user calls
    assert "class:shop/models.py:User" in {i.target for i in adj["func:shop/models.py:make_user"]}
    assert down.entities["func:shop/models.py:make_user"].hops == 1
    assert down.entities["ext:json.dumps"].kind == "external"

    one = nav.trace("func:shop/service.py:register", "downstream", depth=1)
    assert list(one.adjacency_list) == ["func:shop/service.py:register"]

    up = nav.trace("method:shop/base.py:Model.validate", "upstream", depth=2)
    callers = {i.source for i in up.adjacency_list["method:shop/base.py:Model.validate"]}
    assert {"method:shop/base.py:Model.save", "method:shop/models.py:User.validate"} <= callers

    state = nav.trace("method:shop/models.py:User.connect", "state", depth=1)
    targets = {i.target for i in state.adjacency_list["method:shop/models.py:User.connect"]}
    assert {"env:HOME", "var:shop/config.py:DATABASE_URL"} <= targets

    for bad_depth in (0, 11, 50):
        with pytest.raises(NavigatorError, match="depth"):
            nav.trace("func:shop/service.py:register", depth=bad_depth)
    with pytest.raises(NavigatorError, match="direction"):
        nav.trace("func:shop/service.py:register", direction="sideways")
    with pytest.raises(NavigatorError, match="relations"):
        nav.trace("func:shop/service.py:register", relations=["EATS"])


def test_trace_terminates_on_cycles(tmp_path):
    from conftest import write_repo
    from nsccn.indexing.indexer import index_repository

    repo = write_repo(tmp_path / "r", {"cyc.py": "def a():\n    b()\n\ndef b():\n    c()\n\ndef c():\n    a()\n"})
    index_repository(repo, workers=1)
    nav = Navigator(repo)
    out = nav.trace("func:cyc.py:a", depth=10)
    assert set(out.entities) == {"func:cyc.py:a", "func:cyc.py:b", "func:cyc.py:c"}
    assert out.adjacency_list["func:cyc.py:c"][0].target == "func:cyc.py:a"
    nav.close()


def test_unknown_entity_gets_closest_ids(nav):
    with pytest.raises(NavigatorError) as err:
        nav.window("func:shop/models.py:make_usr")
    assert err.value.suggestions[0] == "func:shop/models.py:make_user"
    with pytest.raises(NavigatorError):
        nav.window("   ")
    with pytest.raises(NavigatorError, match="context_lines"):
        nav.window("func:shop/models.py:make_user", context_lines=-1)


def test_search_ranks_definitions(nav):
    hits = nav.search("register a new user as JSON", limit=5).results
    assert hits[0].id == "func:shop/service.py:register"
    exact = nav.search("why does add_item raise?", limit=3).results
    assert exact[0].id == "method:shop/models.py:User.add_item"
    with pytest.raises(NavigatorError, match="empty"):
        nav.search("  ")
    with pytest.raises(NavigatorError, match="limit"):
        nav.search("user", limit=-1)


def test_find_symbol_and_references(nav):
    defs = nav.find_symbol("User.validate").definitions
    assert [d.id for d in defs] == ["method:shop/models.py:User.validate"]
    assert nav.find_symbol("make_user").definitions[0].line > 1
    with pytest.raises(NavigatorError) as err:
        nav.find_symbol("make_usr")
    assert "make_user" in err.value.suggestions
    refs = nav.find_references("func:shop/models.py:make_user").references
    assert {(r.from_, r.relation) for r in refs} >= {
        ("func:shop/service.py:register", "CALLS"),
        ("module:shop/service.py:shop.service", "IMPORTS"),
    }


def test_repo_map_and_context_budgets(nav):
    m = nav.repo_map(max_tokens=80)
    assert m.tokens <= 80 and m.map
    focused = nav.repo_map(max_tokens=120, focus=["shop/errors.py"])
    assert focused.map.startswith("shop/errors.py:")
    with pytest.raises(NavigatorError):
        nav.repo_map(focus=["nowhere.py"])
    ctx = nav.assemble_context("register a user", max_tokens=300)
    assert ctx.tokens <= 300
    assert "def register" in ctx.context


def test_sqlite_work_past_the_deadline_is_interrupted(nav):
    """The time budget of an MCP call: the connection's progress handler stops a statement once
    `nav.deadline` has passed (apsw.InterruptError); without a deadline nothing is stopped."""
    import time

    import apsw

    slow = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000000) SELECT count(*) FROM c"
    assert nav.store.conn.execute(slow).fetchone()[0] == 2_000_000
    nav.deadline = time.monotonic() + 0.05
    started = time.monotonic()
    with pytest.raises(apsw.InterruptError):
        nav.store.conn.execute(slow).fetchone()
    assert time.monotonic() - started < 5  # stopped, not run to the end
    nav.deadline = None
    assert nav.search("save").results  # the connection serves the next call
