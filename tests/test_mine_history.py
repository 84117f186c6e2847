"""Mining training pairs from git history: the filters on hand-made commits, and the instances
mined from a real fixture repository (gold files and the functions enclosing changed lines)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import mine_history as mh  # noqa: E402

from tests.test_history import commit, git  # noqa: E402


def test_messages_that_say_something():
    keep = [
        "Fix KeyError when the cache directory is missing",
        "Handle empty headers in parse_response (#1234)\n\nThe parser assumed at least one header line.",
        "Allow passing a timeout to Client.send",
    ]
    drop = [
        "Bump version to 2.3.1",
        "Release 1.0",
        "1.2.3",
        "Merge pull request #12 from someone/branch",
        "build(deps): bump urllib3 from 1.26.4 to 1.26.5",
        "[pre-commit.ci] pre-commit autoupdate",
        "Fix typo in docstring",
        "typo",
        "Reformat with black",
        "docs: explain the cache option",
        "Revert \"Handle empty headers\"",
        "wip",
        "Update changelog for the next release",
    ]
    for m in keep:
        assert mh.keep_message(m), m
    for m in drop:
        assert not mh.keep_message(m), m
    assert not mh.keep_message("Fix the crash on empty input files", author="dependabot[bot] <x@y>")


def test_commits_worth_a_pair():
    msg = "Fix KeyError when the cache directory is missing"
    assert mh.keep_commit(msg, "a", 1, {"pkg/cache.py": "M", "tests/test_cache.py": "M", "CHANGES.rst": "M"})
    assert not mh.keep_commit(msg, "a", 2, {"pkg/cache.py": "M"})  # a merge
    assert not mh.keep_commit(msg, "a", 1, {"tests/test_cache.py": "M"})  # tests only
    assert not mh.keep_commit(msg, "a", 1, {"pkg/new.py": "A"})  # nothing existing was changed
    assert not mh.keep_commit(msg, "a", 1, {f"pkg/m{i}.py": "M" for i in range(6)})  # too wide


def test_mined_instances_from_a_repository(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    v1 = ("class Cache:\n    def get(self, key):\n        return self.data[key]\n\n"
          "    def put(self, key, value):\n        self.data[key] = value\n\n\n"
          "def make_cache():\n    def inner():\n        return Cache()\n    return inner()\n")
    base = commit(root, {"pkg/cache.py": v1, "tests/test_cache.py": "def test_x():\n    pass\n"}, "Initial import of the cache", 1_600_000_000)
    v2 = v1.replace("return self.data[key]", "return self.data.get(key)").replace("return Cache()", "return Cache()  # fresh")
    fix = commit(root, {"pkg/cache.py": v2, "tests/test_cache.py": "def test_x():\n    assert True\n"},
                 "Fix KeyError in Cache.get for missing keys", 1_600_086_400)
    commit(root, {"README.md": "hello\n"}, "Bump version to 1.0.1", 1_600_172_800)
    rows = mh.mine_repository(root, "acme/cache", per_repo=5)
    assert len(rows) == 1
    row = rows[0]
    assert row["base_commit"] == base and row["commit"] == fix
    assert row["problem_statement"] == "Fix KeyError in Cache.get for missing keys"
    assert row["gold_files"] == ["pkg/cache.py"]
    # The method, and the outermost function around the nested helper's changed line.
    assert row["gold_functions"] == ["pkg/cache.py:Cache.get", "pkg/cache.py:make_cache"]


def test_the_held_out_repositories_are_in_no_training_data():
    """The evaluation set of a shipped model shares no repository with what it was trained on:
    the mined repositories and the dev set's."""
    dev = {"sympy/sympy", "pytest-dev/pytest", "psf/requests", "pallets/flask"}  # ../shared/bench/README.md
    held_out = {r.lower() for r in mh.HELD_OUT_REPOSITORIES}
    assert len(held_out) == len(mh.HELD_OUT_REPOSITORIES) == 12
    assert not held_out & {r.lower() for r in mh.REPOSITORIES}
    assert not held_out & {r.lower() for r in dev}


def test_mining_reads_each_repository_at_its_pin(tmp_path):
    """A newer fetch of a mirror changes no mined instance: the pins file names the commit each
    repository is read at; `--at-head` reads HEAD; a mirror without the pinned commit is refused."""
    import json

    import pytest

    root = tmp_path / "mirrors" / "acme+cache" / "repo"
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    v1 = "def get(data, key):\n    return data[key]\n\n\ndef put(data, key, value):\n    data[key] = value\n"
    commit(root, {"pkg/cache.py": v1}, "Initial import of the cache", 1_600_000_000)
    v2 = v1.replace("return data[key]", "return data.get(key)")
    first = commit(root, {"pkg/cache.py": v2}, "Fix KeyError in get for missing keys", 1_600_086_400)
    pins = tmp_path / "pins.json"
    assert mh.main(["--mirrors", str(tmp_path / "mirrors"), "--repos", "acme/cache", "--pin", "--pins", str(pins)]) == 0
    assert mh.load_pins(pins) == {"acme/cache": first}
    commit(root, {"pkg/cache.py": v2.replace("data[key] = value", "data[key] = value or None")},
           "Store None for falsy values in put", 1_600_172_800)  # fetched later
    out = tmp_path / "mined.jsonl"

    def mined(*extra: str) -> list[str]:
        assert mh.main(["--mirrors", str(tmp_path / "mirrors"), "--repos", "acme/cache", "--pins", str(pins),
                        "--out", str(out), *extra]) == 0
        return [json.loads(line)["commit"] for line in out.read_text().splitlines()]

    assert mined() == [first]
    assert len(mined("--at-head")) == 2
    pins.write_text(json.dumps({"repositories": {"acme/cache": {"commit": "0" * 40, "date": "2020-01-01"}}}))
    with pytest.raises(SystemExit, match="lacks the pinned commit"):
        mined()
