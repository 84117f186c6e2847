"""The repository map: library code before tests, methods under their class, the budget filled."""

import re

import pytest

from nsccn.indexing import repomap
from nsccn.indexing.indexer import index_repository
from nsccn.serving.navigator import Navigator
from nsccn.reading.testpaths import is_test_path

from conftest import write_repo


def _library_module(i: int) -> str:
    methods = "".join(
        f"\n    def step_{j}(self, value: int, scale: float = 1.0) -> int:\n"
        f"        return helper_{i}(value) + self.step_{(j + 1) % 6}(value)\n"
        for j in range(6)
    )
    return (
        f"from .base import helper_{i}\n\n\n"
        f"class Engine{i}:\n    \"\"\"Engine number {i}.\"\"\"\n{methods}\n\n"
        # Nothing calls the class itself: its methods outrank it, and still show under it.
        f"def build_engine_{i}(config: dict) -> Engine{i}:\n    return config['engine']\n\n\n"
        f"def run_engine_{i}(engine: Engine{i}, value: int) -> int:\n    return engine.step_0(value)\n"
    )


def _test_module(i: int) -> str:
    # Many small tests with a nested `def hook` each: lots of definitions, each calling the library.
    tests = "".join(
        f"\n\ndef test_case_{j}():\n    def hook(r, *args, **kwargs):\n        return r\n"
        f"    engine = build_engine_{i}({{}})\n    assert engine.step_{j % 6}({j}) and run_engine_{i}(engine, 1)\n"
        for j in range(12)
    )
    return f"from lib.mod{i} import build_engine_{i}, run_engine_{i}\n{tests}"


@pytest.fixture(scope="module")
def mixed_repo(tmp_path_factory):
    files = {"lib/__init__.py": "", "lib/base.py": "".join(f"def helper_{i}(x):\n    return x\n\n\n" for i in range(14))}
    for i in range(14):
        files[f"lib/mod{i}.py"] = _library_module(i)
        files[f"tests/test_mod{i}.py"] = _test_module(i)
    # One big test file: by the sum of its definitions' ranks it outranks any library module.
    files["tests/test_everything.py"] = "".join(
        f"def test_{j}():\n    def hook(r):\n        return r\n    assert hook(1)\n\n\n" for j in range(150))
    repo = write_repo(tmp_path_factory.mktemp("mixed"), files)
    index_repository(repo, workers=1)
    nav = Navigator(repo)
    yield nav
    nav.close()


def _blocks(text: str) -> list[list[str]]:
    blocks = []
    for line in text.splitlines():
        if not line.startswith(" "):
            blocks.append([line])
        else:
            blocks[-1].append(line)
    return blocks


@pytest.mark.parametrize("budget", [300, 1000])
def test_map_fills_its_budget_library_first_methods_under_their_class(mixed_repo, budget):
    m = mixed_repo.repo_map(max_tokens=budget)
    assert 0.9 * budget <= m.tokens <= budget, m
    blocks = _blocks(m.map)
    assert len(blocks) == m.files_shown > 1
    paths = [b[0].rstrip(":") for b in blocks]
    assert not is_test_path(paths[0])
    tests_at = [is_test_path(p) for p in paths]
    assert tests_at == sorted(tests_at), f"a library file after a test file: {paths}"
    for block in blocks:
        for n, line in enumerate(block[1:], start=1):
            depth = (len(line) - len(line.lstrip()) - 2) // 4
            if depth:  # its container is the nearest line above one level out
                above = next(b for b in reversed(block[1:n]) if (len(b) - len(b.lstrip()) - 2) // 4 < depth)
                assert re.match(r"\s*(class|def|async def) ", above), (block, line)
                assert (len(above) - len(above.lstrip()) - 2) // 4 == depth - 1
    assert any("    def step_" in line for b in blocks for line in b), "no method shown"
    assert "\n  def hook" not in m.map  # a nested function only under the function around it


def test_map_with_room_for_everything_shows_everything(mixed_repo):
    from nsccn.config import load_config

    # max_tokens is bounded by the answer cap (result_token_cap, a setting): raised for a whole map
    wide = Navigator(mixed_repo.root, config=load_config(mixed_repo.root, {"result_token_cap": 200_000}))
    m = wide.repo_map(max_tokens=200_000)
    wide.close()
    assert m.files_shown == m.files_total and not m.truncated
    assert m.map.count("def hook") == 14 * 12 + 150  # every definition, nested ones under their test


@pytest.mark.parametrize("block_rows", [repomap.BLOCK_ROWS, 3])  # 3: edges read in many blocks
def test_the_rank_graph_is_every_weighted_edge_between_two_entities_in_edge_order(shop_index, block_rows, monkeypatch):
    # PageRank's float sums follow the graph's order: edges by (source, relation), then as resolved.
    _, store = shop_index
    monkeypatch.setattr(repomap, "BLOCK_ROWS", block_rows)
    src, dst, w, n, rowids = repomap._read_graph(store)
    at = {int(r): i for i, r in enumerate(rowids)}
    expected = [
        (at[s], at[t], repomap.RANK_RELATIONS[rel] * conf)
        for s, t, rel, conf in store.conn.execute(
            "SELECT s.rowid, t.rowid, rl.name, ed.confidence FROM edges ed JOIN symbols rl ON rl.id = ed.relation"
            " JOIN symbols ss ON ss.id = ed.source JOIN entities s ON s.id = ss.name"
            " JOIN symbols ts ON ts.id = ed.target JOIN entities t ON t.id = ts.name"
            " ORDER BY ed.source, ed.relation, ed.ref, ed.n"
        )
        if rel in repomap.RANK_RELATIONS and s != t
    ]
    assert len(expected) > 10 and n == len(rowids) == store.conn.execute("SELECT COUNT(*) FROM entities").fetchone()[0]
    assert list(zip(src.tolist(), dst.tolist(), w.tolist())) == expected


def test_text_files_come_after_all_code_and_only_when_it_fits(tmp_path):
    root = write_repo(tmp_path / "r", {"AUTHORS.rst": "Ann\n", ".github/POLICY.md": "# policy\n",
                                       **{f"pkg/m{i}.py": _library_module(i) for i in range(3)}})
    index_repository(root, workers=1)
    nav = Navigator(root)
    try:
        cut = nav.repo_map(max_tokens=150)
        assert cut.truncated and "AUTHORS.rst" not in cut.map and "POLICY.md" not in cut.map
        full = nav.repo_map(max_tokens=4000)
        assert not full.truncated and full.files_shown == full.files_total == 5
        assert full.map.index("AUTHORS.rst") > full.map.index("pkg/m2.py")  # after every code file
    finally:
        nav.close()
