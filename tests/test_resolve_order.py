"""The graph is a function of the files alone, not of the order they were written in.

The actor pipeline writes parse results as its parsers finish them, an update adds a file long
after the others: each of these orders must end in the index a cold build makes. The tree holds
names two files claim (a script `bin/tool` and the module `tool.py` are both `tool` to an
import; a Go function defined in two files of one package, one per platform) and a hierarchy
whose middle arrives last (`Leaf(Mid)`, `Mid(Base)`: `self.ping()` in Leaf is Base's).
"""

from __future__ import annotations

import sys
from pathlib import Path

from conftest import write_repo
from nsccn.indexing.index_session import look_at
from nsccn.indexing.indexer import index_repository

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import index_identity  # noqa: E402
from test_pipeline import Pipeline  # noqa: E402

TREE = {
    "tool.py": "def main():\n    return 0\n",
    # an executable script: a Python file by its shebang, `tool` to `_canonical_module` too
    "bin/tool": "#!/usr/bin/env python\nif __name__ == '__main__':\n    from tool import main\n    main()\n",
    "bin/other.py": "from tool import main as go\n\n\ndef run():\n    return go()\n",
    "go.mod": "module example.com/app\n\ngo 1.21\n",
    "pkg/open_linux.go": "package pkg\n\nfunc open() int { return 1 }\n",
    "pkg/open_windows.go": "package pkg\n\nfunc open() int { return 2 }\n",
    "pkg/use.go": "package pkg\n\nfunc Use() int { return open() }\n",
    "base.py": "class Base:\n    def ping(self):\n        return 1\n",
    "base2.py": "class Base:\n    def ping(self):\n        return 2\n",
    "mid.py": "from base import Base\n\n\nclass Mid(Base):\n    pass\n",
    "leaf.py": "from mid import Mid\n\n\nclass Leaf(Mid):\n    def run(self):\n        return self.ping()\n",
    # references no update touches: an update resolves what it affects, not everything again
    "filler.py": "".join(f"def f{i}():\n    return f{i + 1}()\n\n\n" for i in range(60)) + "def f60():\n    return 0\n",
}
LATE = ("tool.py", "mid.py")  # the files that settle other files' references


def _reversed(root, todo, config, known):
    for f in reversed(todo):
        yield look_at(str(root), f.path, config.max_file_size, known.get(f.path, (None,))[0])


def _edges(root: Path) -> dict[str, list[str]]:
    return index_identity.dump(str(root / ".nsccn" / "index.db"))


def _same(a: dict, b: dict) -> None:
    assert index_identity.compare(a, b) == []


def test_edges_do_not_depend_on_the_order_files_are_written_in(tmp_path):
    forward = write_repo(tmp_path / "forward", TREE)
    index_repository(forward, workers=1, embed=False)
    want = _edges(forward)
    assert "('module:bin/tool:bin.tool', 'IMPORTS', 'func:tool.py:main', 1.0, 'import', 3)" in want["edges"]
    assert "('func:bin/other.py:run', 'CALLS', 'func:tool.py:main', 1.0, 'import', 5)" in want["edges"]
    assert "('method:leaf.py:Leaf.run', 'CALLS', 'method:base.py:Base.ping', 0.9, 'self+MRO', 6)" in want["edges"]
    assert any("'func:pkg/use.go:Use', 'CALLS', 'func:pkg/open_" in e for e in want["edges"])

    backward = write_repo(tmp_path / "backward", TREE)
    index_repository(backward, workers=1, embed=False, parse=_reversed)
    _same(want, _edges(backward))

    # An update that adds the settling files later, and one that adds every other file later.
    for name, first in (("late", [p for p in TREE if p not in LATE]), ("early", list(LATE))):
        root = write_repo(tmp_path / name, {p: TREE[p] for p in first})
        index_repository(root, workers=1, embed=False)
        write_repo(root, {p: TREE[p] for p in TREE if p not in first})
        index_repository(root, workers=1, embed=False)
        _same(want, _edges(root))

    # The same bases written, imported from another module: Leaf's self.ping() moves with them.
    moved = {"mid.py": TREE["mid.py"].replace("from base import", "from base2 import")}
    write_repo(root, moved)
    index_repository(root, workers=1, embed=False)
    fresh = write_repo(tmp_path / "fresh", {**TREE, **moved})
    index_repository(fresh, workers=1, embed=False)
    got = _edges(root)
    _same(_edges(fresh), got)
    assert "('method:leaf.py:Leaf.run', 'CALLS', 'method:base2.py:Base.ping', 0.9, 'self+MRO', 6)" in got["edges"]


def test_the_pipeline_ends_where_a_cold_build_does(tmp_path):
    """The actor pipeline (parsers finish in any order) on the files that settle the others'
    references, then an update through its writer that brings every other file."""
    cold = write_repo(tmp_path / "cold", TREE)
    index_repository(cold, workers=1, embed=False)
    repo = write_repo(tmp_path / "repo", {p: TREE[p] for p in LATE})
    _pipeline_index(repo)
    write_repo(repo, {p: t for p, t in TREE.items() if p not in LATE})
    _pipeline_index(repo)
    _same(_edges(cold), _edges(repo))


def _pipeline_index(repo: Path) -> None:
    p = Pipeline(["index", str(repo), "--workers", "2", "--json"])
    try:
        _, err = p.proc.communicate(timeout=120)
        assert p.proc.returncode == 0, err.decode()[-3000:]
    finally:
        p.kill_all()
