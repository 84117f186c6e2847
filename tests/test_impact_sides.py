"""A changed file's side that the index does not hold is parsed for its definitions alone
(`extract.parse_definitions`, the rest of the parse made only for a change's module-level lines),
its tree reused by the inert check; the walk asks the index only for the overriding methods it
holds. Each must answer as the whole parse and the one-id-at-a-time reads did."""

import msgspec

from nsccn.graph import impact
from nsccn.graph.inert import CodeLines
from nsccn.indexing.indexer import index_repository
from nsccn.reading import changes, extract
from nsccn.store import Store

from tests.test_impact_batched import CORE, committed_repo

# definitions everywhere the full walk finds them: in every kind of block, decorated, nested,
# defined twice, after a comment in a signature, a class in a function, async
SHAPES = '''
"""The module's docstring."""
import typing

if typing.TYPE_CHECKING:
    def checked(x: int) -> int: ...
elif False:
    def elsewhere(): pass
else:
    class Fallback:
        pass

for _i in range(1):
    def looped():
        return 1
else:
    def after_loop(): pass

while False:
    def never(): pass

try:
    def tried(): pass
except ImportError:
    def caught(): pass
finally:
    def last(): pass

with open(__file__) as _f:
    def within(): pass

match 1:
    case 1:
        def matched(): pass


@decorator(1)
@other
class Shape(Base, metaclass=Meta):
    """A shape."""

    size = 1

    @property
    def area(self):  # a comment after the colon
        return 1

    @area.setter
    def area(self, value):
        self._area = value

    def method(self, a: int = 1,  # a comment in the signature
               b=lambda: 2) -> int:
        def inner():
            class Local:
                def deep(self):
                    return 3
            return Local
        return inner

    async def later(self):
        await self.method()


def twice():
    return 1


def twice():
    return 2


TABLE = [
    ("a", twice),
]
'''


def _without_terms(entities: list) -> list:
    return [msgspec.structs.replace(e, body_terms="") for e in entities]


def test_definitions_alone_are_the_entities_the_whole_parse_gives():
    data = SHAPES.encode()
    full = extract.parse_file("pkg/shapes.py", data).entities
    alone = extract.parse_definitions("pkg/shapes.py", data)
    assert len(full) > 20 and _without_terms(alone) == _without_terms(full)
    # where the walks could differ, none: the file is parsed whole
    assert extract.parse_definitions("pkg/broken.py", b"def ok():\n    pass\n\ndef broken(:\n    pass\n") is None
    deep = "".join(" " * i + "if x:\n" for i in range(110)) + " " * 110 + "def buried(): pass\n"
    assert extract.parse_definitions("pkg/deep.py", deep.encode()) is None
    assert extract.parse_file("pkg/deep.py", deep.encode()).deep_lines


EDITED = {
    "pkg/core.py": [("return x + 1", "return x + 2"),  # a body
                    ("# the value", "# the value, doubled"),  # a comment alone: inert
                    ('("a", twice),', '("a", twice),\n    ("b", twice),')],  # a table's line: its global
}
BASE = {
    "pkg/__init__.py": "",
    "pkg/core.py": """
        def helper(x):
            return x + 1


        def value():
            # the value
            return 2


        def twice():
            return 1


        TABLE = [
            ("a", twice),
        ]
    """,
}


def test_a_parsed_side_answers_as_the_whole_parse(tmp_path, monkeypatch):
    root = committed_repo(tmp_path, BASE)
    index_repository(root, workers=1, embed=False)  # holds the old side: the new one is parsed
    for rel, edits in EDITED.items():
        p = root / rel
        for old, new in edits:
            p.write_text(p.read_text().replace(old, new, 1))
    change = changes.from_git(root)
    with Store(root / ".nsccn" / "index.db", readonly=True) as store:
        fd = change.diff.files[0]
        side = impact._side(store, fd.new_path, change.new(fd), impact._lines_marked(fd, False))
        assert side.code is not None and side.code.tree is not None  # definitions alone, the tree kept
        got = impact.changed_entities(store, change, [{} for _ in change.diff.files])
        monkeypatch.setattr(extract, "parse_definitions", lambda *a, **k: None)  # every side parsed whole
        assert got == impact.changed_entities(store, change, [{} for _ in change.diff.files])
    changed = {c["id"]: c["change"] for c in got[0]}
    assert changed == {"func:pkg/core.py:helper": "body", "func:pkg/core.py:value": "inert",
                       "module:pkg/core.py:pkg.core": "body"}
    assert got[1] == ["var:pkg/core.py:TABLE"]


def test_absent_overriders_are_not_looked_up(tmp_path):
    root = committed_repo(tmp_path, CORE)
    index_repository(root, workers=1, embed=False)
    with Store(root / ".nsccn" / "index.db", readonly=True) as store:
        asked: list[str] = []
        entities = store.entities

        def recording(ids):
            ids = list(ids)
            asked.extend(ids)
            return entities(ids)

        store.entities = recording
        deps = impact.Dependents(store)
        # Shape.describe: Square and Cube might override it and do not
        reached, _ = impact.walk(deps, {"method:pkg/core.py:Shape.describe": None}, impact.TEST_DEPTH, 0.0)
        assert "method:pkg/core.py:Square.describe" not in asked and "method:pkg/core.py:Cube.describe" not in asked
        assert deps.row("method:pkg/core.py:Square.describe") is None
        # Shape.area: both override it, and are read
        reached, _ = impact.walk(deps, {"method:pkg/core.py:Shape.area": None}, impact.TEST_DEPTH, 0.0)
        assert reached["method:pkg/core.py:Cube.area"].path[1][0] == "OVERRIDES"
        assert store.method_owners(["area", "nothing"]) == {
            "area": {f"class:pkg/core.py:{c}": f"method:pkg/core.py:{c}.area" for c in ("Shape", "Square", "Cube")},
            "nothing": {}}



def _nodes(tree) -> list:
    out, stack = [], [tree.root_node]
    while stack:
        n = stack.pop()
        out.append((n.type, n.start_byte, n.end_byte, n.start_point, n.end_point, n.is_missing, n.has_error))
        stack.extend(reversed(n.children))
    return out


def test_a_side_parsed_from_the_other_side_s_tree_is_the_tree_parsed_from_nothing():
    old = SHAPES.encode()
    news = [old, old.replace(b"return 1\n", b"return 10  # ten\n", 1), old.replace(b'"""A shape."""\n', b""),
            b"# first\n" + old, old + b"def appended(): pass\n", old.replace(b"async def", b"def"),
            old.replace(b"match 1:", b"match 1 +"), b"", "é = 'ü'\n".encode() + old]  # (a syntax error, non-ASCII)
    for new in news:
        base = CodeLines("pkg/shapes.py", old)
        assert _nodes(CodeLines("pkg/shapes.py", new, base).tree) == _nodes(CodeLines("pkg/shapes.py", new).tree)
        assert _nodes(CodeLines("pkg/shapes.py", old, CodeLines("pkg/shapes.py", new)).tree) == _nodes(base.tree)
    ts_old, ts_new = b"const a = (x) => x + 1;\n", b"const a = (x) => { return x + 2; };\n"
    assert _nodes(CodeLines("web/a.ts", ts_new, CodeLines("web/a.ts", ts_old)).tree) == _nodes(CodeLines("web/a.ts", ts_new).tree)
