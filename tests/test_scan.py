"""The scan's file set: which files of a tree are indexed (ignore rules, defaults, binaries).

The scan prunes ignored directories, reads a `.gitignore` only where a directory lists one and
tests a path against the union of a file's patterns before the patterns one by one: these tests
pin that none of that changes which files it finds.
"""

from __future__ import annotations

import os

import pathspec
import pytest

from conftest import write_repo
from nsccn.config import Config
from nsccn.reading.scan import IgnoreRules, Patterns, compile_patterns, scan_repository

TREE = {
    ".gitignore": "\n".join([
        "# comment", "", "*.log", "!keep.log", "build/", "/docs/_out/", "secret*", "!secret_ok.py",
        "**/gen/*.py", "!**/gen/keep.py", "tmp", "[z-a]bad", "*.py[co]", "data/**/raw/",
    ]) + "\n",
    "a.py": "x = 1\n",
    "b.log": "log\n",
    "keep.log": "kept by a negation\n",
    "secret.py": "x = 1\n",
    "secret_ok.py": "x = 1\n",
    "cache.pyc": "not text\n",
    "build/out.py": "x = 1\n",
    "sub/build.py": "a file named like the ignored directory\n",
    "sub/build/deep.py": "x = 1\n",
    "docs/_out/page.md": "x\n",
    "docs/_out2/page.md": "x\n",
    "docs/index.md": "# docs\n",
    "docs/sub/_out/page.md": "anchored pattern: only docs/_out at the root\n",
    "tmp/t.py": "x = 1\n",
    "src/tmp": "a file named tmp\n",
    "data/x/raw/r.csv": "1,2\n",
    "data/x/cooked/c.csv": "1,2\n",
    "src/.gitignore": "*.txt\n!important.txt\nlocal/\n/only_here.py\n",
    "src/m.py": "x = 1\n",
    "src/notes.txt": "ignored below src\n",
    "src/important.txt": "negated below src\n",
    "src/only_here.py": "anchored to src/\n",
    "src/deep/only_here.py": "not anchored here\n",
    "src/deep/.gitignore": "!*.txt\nmore.py\n",
    "src/deep/readme.txt": "an outer .gitignore ignores it: the inner negation is not consulted\n",
    "src/deep/more.py": "x = 1\n",
    "src/local/z.py": "x = 1\n",
    "src/gen/a.py": "x = 1\n",
    "src/gen/keep.py": "x = 1\n",
    "src/gen/sub/b.py": "x = 1\n",
    "other/notes.txt": "not ignored outside src\n",
    "node_modules/m.js": "x\n",
    ".venv/lib/site.py": "x = 1\n",
    "pkg.egg-info/PKG-INFO": "x\n",
    "vendor/v.py": "x = 1\n",
    "logo.png": "not text\n",
    ".hidden": "a dotfile\n",
}

# What the scan found before it was made faster (main at 8cbcd79), by hand from the rules above.
EXPECTED = {
    "a.py", "keep.log", "secret_ok.py", "sub/build.py", "docs/_out2/page.md", "docs/index.md",
    "docs/sub/_out/page.md", "data/x/cooked/c.csv", "src/m.py", "src/important.txt",
    "src/deep/only_here.py", "src/gen/keep.py", "src/gen/sub/b.py", "other/notes.txt",
}


def test_scan_file_set_is_pinned(tmp_path):
    repo = write_repo(tmp_path / "r", TREE)
    os.symlink("src", repo / "src_link")  # indexed at its target, not twice
    scan = scan_repository(repo, Config(ignore_patterns=["vendor/"]))
    assert {f.path for f in scan.files} == EXPECTED
    assert [f.path for f in scan.files] == sorted(EXPECTED, key=lambda p: p.split("/"))  # walk order
    assert scan.skipped == {"binary": 1, "directory symlink inside the repository (indexed at its target)": 1}
    assert len(scan.warnings) == 1 and scan.warnings[0].startswith(".gitignore:12: ignoring the bad pattern '[z-a]bad'")


def test_scan_answers_as_the_per_path_rules_do(tmp_path):
    """The walk's verdicts equal `IgnoreRules.ignored` (what the watcher asks) for every path of the tree."""
    repo = write_repo(tmp_path / "r", TREE)
    config = Config(ignore_patterns=["vendor/"])
    rules = IgnoreRules(repo, config)
    found = {f.path for f in scan_repository(repo, config).files}
    for path in TREE:
        parts = path.split("/")
        hidden = any(rules.ignored("/".join(parts[:i]), True) for i in range(1, len(parts)))
        if not hidden and not rules.ignored(path, False):
            assert path in found or path.rsplit("/", 1)[-1].startswith(".") or path.endswith((".png", ".pyc"))
        else:
            assert path not in found


PATTERNS = [
    "*.py", "!keep.py", "build/", "/top.txt", "a/**/b", "**/gen/*", "!**/gen/ok", "doc/*.md", "x?z",
    "[abc]*.c", "[(?P<ps_d>]*.q", "name\\ with\\ space", "trailing\\\\", "dir\\\\/", "\\#hash", "\\!bang",
    "deep/**", "*.PY", "ünï*", "",
]
PATHS = [
    "a.py", "keep.py", "x/keep.py", "build/", "build", "x/build/", "top.txt", "x/top.txt", "a/b", "a/x/y/b",
    "a/b/", "gen/f", "x/gen/ok", "x/gen/f/", "doc/r.md", "doc/x/r.md", "xyz", "x/xyz", "bc.c", "d.c", "(.q",
    "P.q", "?.q", "_.q", "z.q", "name with space", "trailing\\", "dir\\/", "#hash", "!bang", "deep/a/b",
    "deep/", "A.PY", "ünïcode", "plain", "a/", "",
]


@pytest.mark.parametrize("negate_all", [False, True])
def test_patterns_match_exactly_as_pathspec(negate_all):
    """The union in front of the patterns never changes an answer: pathspec's is the reference."""
    lines = [("!" + p if negate_all and p and not p.startswith("!") else p) for p in PATTERNS]
    warnings: list[str] = []
    spec = compile_patterns(lines, "test", warnings)
    assert spec is not None and not warnings
    reference = pathspec.GitIgnoreSpec.from_lines(lines)
    fast = Patterns(spec)
    for path in PATHS:
        assert fast.match(path) == reference.match_file(path), path
    matched = [p for p in PATHS if reference.match_file(p)]
    assert negate_all or len(matched) > 10  # the fixture exercises real matches, not only misses
