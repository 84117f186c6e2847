"""Change impact reads a walk's frontier at once (`Dependents.read_ahead`) and maps a changed file's
side on the index's entities where the index holds those very bytes (`impact._indexed_side`): both
must give the answers that reading one node at a time and parsing every side give. A real git
repository, real indexes, the real walk."""

import shutil
import textwrap
from pathlib import Path

from nsccn.graph import impact
from nsccn.indexing.indexer import index_repository
from nsccn.reading import changes
from nsccn.store import Store

from tests.test_impact import commit, git, write

CORE = {
    "pkg/__init__.py": "",
    "pkg/core.py": """
        def base(x):
            return x


        def left(x):
            return base(base(x))


        def right(x):
            return base(x) + base(x + 1)


        def top(x):
            return left(x) + right(x)


        class Shape:
            def area(self):
                return base(1)

            def describe(self):
                return self.area()


        class Square(Shape):
            def area(self):
                return 4


        class Cube(Square):
            def area(self):
                return 6


        def run(shape):
            return shape.area()


        def apply(f):
            return f(1)


        def uses_pass():
            return apply(left)
    """,
    "tests/__init__.py": "",
    "tests/test_core.py": """
        import pytest

        from pkg.core import Cube, Square, base, left, right, run, top, uses_pass


        def test_top():
            assert top(1) == 4


        def test_both():
            assert left(1) + right(1) == 5


        @pytest.mark.parametrize("v", [base(2)])
        def test_param(v):
            assert v == 2


        def test_run():
            assert run(Cube()) == 6 and run(Square()) == 4


        def test_uses_pass():
            assert uses_pass() == 1
    """,
}


def committed_repo(tmp_path: Path, files: dict) -> Path:
    """A git repository holding `files`, committed once (the index's folder ignored)."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / ".gitignore").write_text(".nsccn/\n")
    write(root, files)
    commit(root, "base")
    return root


def _walk_answer(deps: impact.Dependents, seeds: dict) -> list:
    reached, truncated = impact.walk(deps, dict(seeds), impact.TEST_DEPTH, 0.0)
    return [(eid, r.distance, r.confidence, r.path) for eid, r in reached.items()] + [truncated]


class OneAtATime(impact.Dependents):
    """Reads nothing ahead: each node's reads happen when `of` asks, for it alone."""

    def read_ahead(self, nodes: list[str]) -> None:
        pass


def test_a_frontier_read_at_once_walks_as_one_node_at_a_time(tmp_path):
    root = committed_repo(tmp_path, CORE)
    index_repository(root, workers=1, embed=False)
    with Store(root / ".nsccn" / "index.db", readonly=True) as store:
        # several nodes a frontier (left, right, Shape.area's callers ...), two paths as sure to top (the first wins),
        # two calls on one line (base(base(x))): each node's edges in the order it alone gets them
        for seeds in ({"func:pkg/core.py:base": None}, {"method:pkg/core.py:Shape.area": None},
                      {"func:pkg/core.py:base": None, "func:pkg/core.py:left": None, "method:pkg/core.py:Cube.area": None}):
            batched = _walk_answer(impact.Dependents(store), seeds)
            assert batched == _walk_answer(OneAtATime(store), seeds)
            assert len(batched) > 6
        top = dict((eid, path) for eid, _d, _c, path in _walk_answer(impact.Dependents(store), {"func:pkg/core.py:base": None})[:-1])
        assert top["func:tests/test_core.py:test_param"][1][0] == "DECORATES"
        ids = [e for (e,) in store.conn.execute("SELECT id FROM entities ORDER BY id")]
        many = store.edges_to_many(ids, impact.DEPENDENT_RELATIONS)
        assert any(len({e.line for e in es}) < len(es) for es in many.values())  # ties on a line, ordered alike
        assert all(many[i] == store.edges_to(i, impact.DEPENDENT_RELATIONS) for i in ids)
        assert all(es == store.edges_from(i, ("CALLS",)) for i, es in store.edges_from_many(ids, ("CALLS",)).items())
        paths = store.file_paths()
        assert all(rows == store.entities_in_file(p) for p, rows in store.entities_in_files(paths).items())
        by_tail = store.refs_by_tail(["base", "left"], ("CALLS", "PASSES"))
        for name, refs in by_tail.items():
            assert refs and refs == [r for r in store.refs(names=[name])
                                     if r[3] in ("CALLS", "PASSES") and r[4].rsplit(".", 1)[-1] == name]


SHAPES = {
    "pkg/__init__.py": "",
    # a property's getter and setter: one entity id, the index keeps the setter
    "pkg/getter.py": """
        class Box:
            @property
            def size(self):
                return self._size

            @size.setter
            def size(self, value):
                self._size = value
    """,
    # a table, a function, and a name defined twice that the change does not touch
    "pkg/elsewhere.py": """
        import os

        TABLE = [
            ("a", os.sep),
            ("b", os.getcwd),
        ]


        class Box:
            @property
            def size(self):
                return self._size

            @size.setter
            def size(self, value):
                self._size = value


        def helper(x):
            return x + 1
    """,
    # a function defined twice, the first one changed
    "pkg/twice.py": """
        def twice():
            return 1


        def twice():
            return 2
    """,
}
EDITS = {"pkg/getter.py": ("return self._size", "return self._size + 0"),
         "pkg/elsewhere.py": ("return x + 1", "return x + 2"),
         "pkg/twice.py": ("return 1", "return 10")}


def test_a_side_the_index_holds_maps_as_its_parse_does(tmp_path):
    root = committed_repo(tmp_path, SHAPES)
    for rel, (old, new) in EDITS.items():
        p = root / rel
        p.write_text(p.read_text().replace(old, new, 1))
    # also a line of the table (the global it sets is impacted)
    p = root / "pkg/elsewhere.py"
    p.write_text(p.read_text().replace('("b", os.getcwd)', '("b", os.getcwd),\n    ("c", os.sep)'))
    index_repository(root, workers=1, embed=False)  # holds the new side of each file
    other = tmp_path / "other"  # an index that holds neither side: every side parsed
    shutil.copytree(root, other, ignore=shutil.ignore_patterns(".nsccn"))
    for rel in SHAPES:
        if rel.endswith(".py") and rel != "pkg/__init__.py":
            (other / rel).write_text((other / rel).read_text() + "# later\n")
    index_repository(other, workers=1, embed=False)
    change = changes.from_git(root)
    with Store(root / ".nsccn" / "index.db", readonly=True) as held, \
            Store(other / ".nsccn" / "index.db", readonly=True) as parsed:
        taken = {fd.new_path: impact._indexed_side(held, fd.new_path, change.new(fd), impact._lines_marked(fd, False))
                 is not None for fd in change.diff.files}
        # the index maps the file whose change misses its name defined twice, not the others
        assert taken == {"pkg/elsewhere.py": True, "pkg/getter.py": False, "pkg/twice.py": False}
        got = impact.changed_entities(held, change, [{} for _ in change.diff.files])
        assert got == impact.changed_entities(parsed, change, [{} for _ in change.diff.files])
    changed = {c["id"]: c["change"] for c in got[0]}
    assert changed["func:pkg/elsewhere.py:helper"] == "body" and "var:pkg/elsewhere.py:TABLE" in got[1]
    assert "method:pkg/getter.py:Box.size" in changed and "func:pkg/twice.py:twice" in changed
