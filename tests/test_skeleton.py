"""Skeletons are valid Python that keeps every top-level name; signatures carry no comments."""

from __future__ import annotations

import ast
import os
import textwrap
import warnings
from pathlib import Path

import pytest

from nsccn.languages.python import PythonExtractor

# Every construct that has broken a skeleton or a signature once.
EVERY_CONSTRUCT = textwrap.dedent('''\
    """Module docstring.

    More text.
    """
    from __future__ import annotations

    import os, sys as system
    import collections.abc \\
        as cabc
    from typing import TYPE_CHECKING
    from .models import (  # noqa: F401
        DEFAULT_REDIRECT_LIMIT,  # the limit
        REDIRECT_STATI,
        # a comment on its own line
        PreparedRequest as Prepared,
    )
    from . import sibling

    if TYPE_CHECKING:
        from .adapters import BaseAdapter
        from .cookies import (
            RequestsCookieJar,  # jar
        )
    elif sys.version_info >= (3, 11): import tomllib
    else:
        tomllib = None

    try:
        import simplejson as json
    except ImportError:  # pragma: no cover
        json = None
    else: pass
    finally:
        pass

    CONSTANT: int = 3  # a constant
    A = B = 5
    first, second = 1, 2
    LONG = [
        1, 2, 3,
    ]
    with open(os.devnull) as _devnull: pass
    for _i in range(2):
        LOOPED = _i


    def _deco(*args, **kwargs):  # a decorator factory
        return lambda f: f


    @_deco(  # why
        "x",
    )
    @_deco
    async def fetch(
        url: str,  # the address
        *,
        timeout: float = 1.0,  # seconds
    ) -> bytes:  # the body
        # first body comment
        #: documentation comment
        return b""


    def one_liner(): return 1


    def raw_doc():
        r"""Backslashes \\d+ and \\x stay as written."""


    def quote_ending_doc():
        \'\'\'He said "hi"\'\'\'


    class Session(Base, metaclass=Meta):  # the session
        """A session.

        Long description.
        """

        #: A class attribute with a comment above
        trust_env = True

        def __init__(self) -> None:
            #: A case-insensitive dictionary of headers
            self.headers = {}

        class Inner:
            class Deeper: pass

            def deep(self): ...

        if sys.platform == "win32":
            def platform_method(self):
                pass
        else:
            def platform_method(self):
                pass

        @property
        def prop(self):  # comment
            return 1

        async def coro(self, a,
                       b=2):
            await other()


    class Empty:
        pass


    class OnlyComment:
        # nothing here
        x: int


    def last(a, b  # no closing comment problem
             ):
        pass
''')


def top_level_names(tree: ast.Module) -> set[str]:
    """Names a module binds at its top level (through if/try/with/for, not inside defs)."""
    names: set[str] = set()

    def block(stmts):
        for s in stmts:
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(s.name)
            elif isinstance(s, (ast.Import, ast.ImportFrom)):
                for a in s.names:
                    if a.name != "*":
                        names.add(a.asname or a.name.split(".")[0])
            elif isinstance(s, (ast.Assign, ast.AnnAssign)):
                targets = list(s.targets if isinstance(s, ast.Assign) else [s.target])
                while targets:  # names, and names in tuples: `x[k] = v` binds no name
                    t = targets.pop()
                    if isinstance(t, ast.Name):
                        names.add(t.id)
                    elif isinstance(t, (ast.Tuple, ast.List)):
                        targets.extend(t.elts)
                    elif isinstance(t, ast.Starred):
                        targets.append(t.value)
            for field in ("body", "orelse", "finalbody"):
                if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    block(getattr(s, field, []) or [])
            for h in getattr(s, "handlers", []) or []:
                block(h.body)

    block(tree.body)
    return names


def class_members(tree: ast.Module) -> dict[str, set[str]]:
    """Class name -> the names it defines (through its if/try blocks)."""
    defs = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            out[node.name] = {n.name for n in ast.walk(ast.Module(body=node.body, type_ignores=[]))
                              if isinstance(n, defs) and n is not node and _directly_in(node, n)}
    return out


def _directly_in(cls: ast.ClassDef, target: ast.AST) -> bool:
    """`target` is in `cls`'s body, not inside one of its functions or classes."""
    stack = list(cls.body)
    while stack:
        n = stack.pop()
        if n is target:
            return True
        if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(n))
    return False


def check_skeleton(path: str, source: bytes) -> str | None:
    """None when the skeleton parses and keeps every top-level name, else what is wrong."""
    try:
        with warnings.catch_warnings():  # old sources' invalid escapes: not ours to report
            warnings.simplefilter("ignore")
            original = ast.parse(source)
    except (SyntaxError, ValueError):
        return None  # not Python 3 (a fixture of the repository's own tests): nothing to keep
    skeleton = PythonExtractor(path, source).extract().skeleton
    try:
        tree = ast.parse(skeleton)
    except SyntaxError as exc:
        return f"{path}: skeleton does not parse: {exc}"
    lost = top_level_names(original) - top_level_names(tree)
    if lost:
        return f"{path}: skeleton lost {sorted(lost)}"
    return None


def test_skeleton_of_every_construct_is_valid_python_with_every_name():
    source = EVERY_CONSTRUCT.encode()
    skeleton = PythonExtractor("pkg/sessions.py", source).extract().skeleton
    tree = ast.parse(skeleton)  # raises on invalid code
    assert top_level_names(tree) == top_level_names(ast.parse(source))
    members = class_members(tree)
    assert members["Session"] == {"__init__", "Inner", "platform_method", "prop", "coro"}
    assert members["Inner"] == {"Deeper", "deep"}
    assert "from .adapters import BaseAdapter" in skeleton
    assert "# noqa" not in skeleton and "#:" not in skeleton
    assert "return" not in skeleton and "await" not in skeleton  # bodies elided
    assert '"""A session.' in skeleton
    assert r"\d+" in skeleton  # the raw docstring as written


def test_signatures_carry_no_comments():
    ents = {e.qualname: e for e in PythonExtractor("pkg/sessions.py", EVERY_CONSTRUCT.encode()).extract().entities}
    assert ents["Session.__init__"].signature == "def __init__(self) -> None"
    assert ents["fetch"].signature == "async def fetch(url: str, *, timeout: float = 1.0,) -> bytes"
    assert ents["last"].signature == "def last(a, b)"
    assert ents["Session"].signature == "class Session(Base, metaclass=Meta)"
    assert all("#" not in e.signature for e in ents.values())


REAL_REPO = os.environ.get("NSCCN_REAL_REPO")


@pytest.mark.skipif(not REAL_REPO, reason="set NSCCN_REAL_REPO to a checkout (e.g. pytest or sympy) to check every file")
def test_skeleton_of_every_file_of_a_real_repository():
    root = Path(REAL_REPO)
    problems, checked = [], 0
    for path in sorted(root.rglob("*.py")):
        if not path.is_file():
            continue
        problem = check_skeleton(path.relative_to(root).as_posix(), path.read_bytes())
        checked += 1
        if problem:
            problems.append(problem)
    assert checked, f"no Python files under {root}"
    assert not problems, f"{len(problems)} of {checked} files:\n" + "\n".join(problems[:30])
