"""The localization benchmark harness (benchmarks/localize.py): metrics and tree materialization."""

from __future__ import annotations

import importlib.util
import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parent.parent / "benchmarks" / "localize.py"
_spec = importlib.util.spec_from_file_location("bench_localize", _PATH)
bench = importlib.util.module_from_spec(_spec)
sys.modules["bench_localize"] = bench
_spec.loader.exec_module(bench)


# ---------------------------------------------------------------- metrics


def test_entity_to_loc():
    assert bench.entity_to_loc("func:pkg/a.py:helper") == "pkg/a.py:helper"
    assert bench.entity_to_loc("method:pkg/a.py:Cls.meth") == "pkg/a.py:Cls.meth"
    assert bench.entity_to_loc("class:pkg/a.py:Cls") == "pkg/a.py:Cls"
    assert bench.entity_to_loc("module:pkg/a.py:pkg.a") is None
    with pytest.raises(ValueError):
        bench.entity_to_loc("nonsense")


def test_module_of_and_ranked_modules():
    assert bench.module_of("a.py:Cls.meth") == "a.py:Cls"
    assert bench.module_of("a.py:Outer.Inner.meth") == "a.py:Outer"
    assert bench.module_of("a.py:func") == "a.py:func"
    locs = ["a.py:C.m1", "b.py:f", "a.py:C.m2", "a.py:D.m", "b.py:f"]
    assert bench.ranked_modules(locs) == ["a.py:C", "b.py:f", "a.py:D"]


def test_ranked_locs_drops_modules_and_duplicates():
    ids = ["method:a.py:C.m", "module:a.py:a", "func:b.py:f", "method:a.py:C.m", "class:a.py:C"]
    assert bench.ranked_locs(ids) == ["a.py:C.m", "b.py:f", "a.py:C"]


def test_file_accuracy():
    files = ["x.py", "a.py", "y.py", "b.py", "z.py"]
    m = bench.instance_metrics(["a.py"], [], files, [])
    assert (m["file@1"], m["file@3"], m["file@5"]) == (0, 1, 1)
    m = bench.instance_metrics(["a.py", "b.py"], [], files, [])
    assert (m["file@1"], m["file@3"], m["file@5"]) == (0, 0, 1)  # all gold files must be in
    m = bench.instance_metrics(["x.py"], [], files, [])
    assert (m["file@1"], m["file@3"], m["file@5"]) == (1, 1, 1)
    m = bench.instance_metrics(["q.py"], [], files, [])
    assert (m["file@1"], m["file@3"], m["file@5"]) == (0, 0, 0)
    # no gold functions: module/function levels are not scored
    assert m["module@5"] is None and m["function@10"] is None


def test_function_accuracy_all_gold_needed():
    ranked = [f"func:f.py:g{i}" for i in range(12)]
    gold = ["f.py:g1", "f.py:g7"]
    m = bench.instance_metrics(["f.py"], gold, ["f.py"], ranked)
    assert m["function@5"] == 0  # g7 is 8th
    assert m["function@10"] == 1


def test_function_accuracy_more_gold_than_k_counts_first_k():
    ranked = [f"func:f.py:g{i}" for i in range(20)]
    # six gold functions; the first five of them are in the top 5, the sixth is 16th
    gold = ["f.py:g4", "f.py:g0", "f.py:g3", "f.py:g1", "f.py:g2", "f.py:g15"]
    m = bench.instance_metrics(["f.py"], gold, ["f.py"], ranked)
    assert m["function@5"] == 1
    assert m["function@10"] == 0  # six gold <= 10: all six needed, g15 is not in the top 10
    # the first five gold in dataset order decide @5, not any five
    gold2 = ["f.py:g15", "f.py:g0", "f.py:g1", "f.py:g2", "f.py:g3", "f.py:g4"]
    m2 = bench.instance_metrics(["f.py"], gold2, ["f.py"], ranked)
    assert m2["function@5"] == 0
    assert bench.function_hit(gold2, [f"f.py:g{i}" for i in range(20)], 5) is False


def test_module_accuracy_dedups_ranked_functions():
    # methods of one class take one module slot
    ranked = ["method:a.py:A.m1", "method:a.py:A.m2", "method:a.py:A.m3", "func:b.py:f",
              "method:c.py:C.x", "method:c.py:C.y", "func:d.py:g", "func:e.py:h", "method:f.py:F.z"]
    # modules: a.py:A, b.py:f, c.py:C, d.py:g, e.py:h, f.py:F
    m = bench.instance_metrics(["e.py"], ["e.py:h"], [], ranked)
    assert m["module@5"] == 1  # 5th module although 8th function
    assert m["function@5"] == 0 and m["function@10"] == 1
    m = bench.instance_metrics(["f.py"], ["f.py:F.z"], [], ranked)
    assert m["module@5"] == 0 and m["module@10"] == 1
    # a gold method is found at module level through any method of its class
    m = bench.instance_metrics(["c.py"], ["c.py:C.other"], [], ranked)
    assert m["module@5"] == 1 and m["function@10"] == 0
    # a gold class (change outside any function) matches its class module
    m = bench.instance_metrics(["a.py"], ["a.py:A"], [], ranked)
    assert m["module@5"] == 1 and m["function@10"] == 0


def test_aggregate_percentages_and_denominators():
    def rec(f1, fn10, q, idx, full=False):
        return {"metrics": {"file@1": f1, "file@3": f1, "file@5": 1, "module@5": fn10, "module@10": fn10,
                            "function@5": fn10, "function@10": fn10},
                "query_s": q, "index_s": idx, "index_full": full}

    recs = [rec(1, 1, 0.010, 30.0, full=True), rec(0, 0, 0.020, 1.0), rec(1, None, 0.030, 3.0),
            rec(0, 1, 0.040, 2.0)]
    a = bench.aggregate(recs)
    assert a["n"] == 4 and a["n_function"] == 3 and a["n_module"] == 3
    assert a["file@1"] == 50.0
    assert a["file@5"] == 100.0
    assert a["function@10"] == pytest.approx(66.7)
    assert a["query_ms_mean"] == pytest.approx(25.0)
    assert a["query_ms_p50"] == pytest.approx(25.0)
    assert a["index_update_s_mean"] == pytest.approx(2.0)  # the full build is excluded
    assert a["index_build_s_mean"] == pytest.approx(30.0)
    assert a["n_index_updates"] == 3


# ---------------------------------------------------------------- trees


def _git(repo: Path, *args: str, date: str = "2020-01-01T00:00:00Z") -> str:
    env = {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin:/usr/local/bin", "HOME": str(repo)}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True, env=env).stdout.strip()


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def _snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture()
def two_commits(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    _git(work, "init", "-q")
    _write(work, {"a.py": "A = 1\n", "pkg/__init__.py": "", "pkg/b.py": "def b(): pass\n",
                  "pkg/c.py": "def c(): pass\n", "sub/deep/d.py": "D = 4\n", "README.md": "readme\n",
                  "data/x.txt": "x\n"})
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", "one")
    c1 = _git(work, "rev-parse", "HEAD")
    _write(work, {"a.py": "A = 2\n", "new/e.py": "E = 5\n", "with space.py": "S = 1\n",
                  "README.md": "changed\n", "notes.txt": "n\n"})
    (work / "pkg/c.py").unlink()
    (work / "sub/deep/d.py").unlink()
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", "two", date="2021-06-01T00:00:00Z")
    c2 = _git(work, "rev-parse", "HEAD")
    bare = tmp_path / "mirror" / "o+r" / "repo"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    return bare, c1, c2


def test_materialize_full_only_sources(two_commits, tmp_path):
    gitdir, c1, _ = two_commits
    dest = tmp_path / "tree"
    upd = bench.materialize_tree(gitdir, c1, dest)
    assert upd.full and upd.added == 5
    assert _snapshot(dest) == {"a.py": "A = 1\n", "pkg/__init__.py": "", "pkg/b.py": "def b(): pass\n",
                               "pkg/c.py": "def c(): pass\n", "sub/deep/d.py": "D = 4\n"}
    assert bench.tree_commit(dest) == c1


def test_materialize_incremental_matches_fresh(two_commits, tmp_path):
    gitdir, c1, c2 = two_commits
    dest = tmp_path / "tree"
    bench.materialize_tree(gitdir, c1, dest)
    untouched = dest / "pkg" / "b.py"
    inode = untouched.stat().st_ino
    upd = bench.materialize_tree(gitdir, c2, dest, prev=bench.tree_commit(dest))
    assert not upd.full
    assert (upd.added, upd.modified, upd.deleted) == (2, 1, 2)
    fresh = tmp_path / "fresh"
    bench.materialize_tree(gitdir, c2, fresh)
    assert _snapshot(dest) == _snapshot(fresh)
    assert _snapshot(dest)["a.py"] == "A = 2\n"
    assert not (dest / "sub").exists()  # directories left empty are pruned
    assert untouched.stat().st_ino == inode  # unchanged files are not rewritten
    assert bench.tree_commit(dest) == c2
    # and back again
    upd = bench.materialize_tree(gitdir, c1, dest, prev=c2)
    assert (upd.added, upd.modified, upd.deleted) == (2, 1, 2)
    fresh1 = tmp_path / "fresh1"
    bench.materialize_tree(gitdir, c1, fresh1)
    assert _snapshot(dest) == _snapshot(fresh1)
    # same commit: nothing to do
    upd = bench.materialize_tree(gitdir, c1, dest, prev=c1)
    assert (upd.added, upd.modified, upd.deleted) == (0, 0, 0)


# ---------------------------------------------------------------- the run, end to end


def test_run_benchmark_end_to_end(two_commits, tmp_path):
    """The real indexer and localize() over a two-commit history: order by commit date, one
    incremental index, an embedding pass for the vector configuration, scores and tables."""
    gitdir, c1, c2 = two_commits
    mirrors = gitdir.parent.parent
    instances = [
        # listed out of commit order: the run must take c1 first
        {"instance_id": "o__r-2", "repo": "o/r", "base_commit": c2, "problem_statement": "E is wrong in new/e.py",
         "gold_files": ["new/e.py"], "gold_functions": []},
        {"instance_id": "o__r-1", "repo": "o/r", "base_commit": c1, "problem_statement": "calling b() in pkg/b.py fails",
         "gold_files": ["pkg/b.py"], "gold_functions": ["pkg/b.py:b"]},
    ]
    out = tmp_path / "out"
    metrics = bench.run_benchmark(instances, mirrors, ["lexical-full", "vector"], out, tmp_path / "wd")
    log = metrics["index"]["o/r"]["log"]
    assert [e["instance_id"] for e in log] == ["o__r-1", "o__r-2"]  # c1 first
    assert log[0]["full"] and not log[1]["full"]
    assert log[0]["summary"]["files_indexed"] == 5
    assert log[1]["summary"]["files_indexed"] == 3 and log[1]["summary"]["files_deleted"] == 2  # only the diff
    assert log[0]["embed_summary"]["embedded"] > 0  # the vector configuration's pass
    lex = metrics["results"]["lexical-full"]["overall"]
    assert lex["file@1"] == 100.0 and lex["function@5"] == 100.0 and lex["n_function"] == 1
    assert metrics["results"]["vector"]["overall"]["errors"] == 0
    lines = [json.loads(x) for x in (out / "rankings.jsonl").read_text().splitlines()]
    assert [(r["instance_id"], r["config"]) for r in lines] == [
        ("o__r-1", "lexical-full"), ("o__r-1", "vector"), ("o__r-2", "lexical-full"), ("o__r-2", "vector")]
    assert lines[0]["functions"][0] == "func:pkg/b.py:b"
    assert json.loads((out / "metrics.json").read_text())["instances"] == 2
    assert "| lexical-full | 2 (1) | 100.0 |" in bench.markdown_table(metrics)
    # Re-scoring the rankings file gives the same numbers.
    again = bench.rescore(out / "rankings.jsonl")
    for cfg in ("lexical-full", "vector"):
        for name in bench.METRIC_NAMES:
            assert again["results"][cfg]["overall"][name] == metrics["results"][cfg]["overall"][name]
    assert "| lexical-full | 2 (1) | 100.0 |" in bench.markdown_table(again)
    packed = tmp_path / "rankings.jsonl.gz"  # as benchmarks/results keeps them
    packed.write_bytes(gzip.compress((out / "rankings.jsonl").read_bytes()))
    assert bench.rescore(packed) == again


def test_ab_pass_reuses_the_indexes_a_run_left(two_commits, tmp_path):
    """benchmarks/localize_ab.py scores every instance against the index a run left behind (at the
    last commit), without moving trees or indexing."""
    spec = importlib.util.spec_from_file_location("bench_localize_ab", _PATH.parent / "localize_ab.py")
    ab = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ab)
    gitdir, c1, c2 = two_commits
    instances = [
        {"instance_id": "o__r-1", "repo": "o/r", "base_commit": c1, "problem_statement": "calling b() in pkg/b.py fails",
         "gold_files": ["pkg/b.py"], "gold_functions": ["pkg/b.py:b"]},
        {"instance_id": "o__r-2", "repo": "o/r", "base_commit": c2, "problem_statement": "E is wrong in new/e.py",
         "gold_files": ["new/e.py"], "gold_functions": []},
    ]
    with pytest.raises(SystemExit, match="no index for"):
        ab.score(instances, tmp_path / "wd", ["lexical-full"])
    bench.run_benchmark(instances, gitdir.parent.parent, ["lexical-full"], tmp_path / "out", tmp_path / "wd")
    index = tmp_path / "wd" / "o+r" / "index.db"
    stamp = index.stat().st_mtime_ns
    metrics = ab.score(instances, tmp_path / "wd", ["lexical-full"])
    lex = metrics["results"]["lexical-full"]
    assert lex["overall"]["n"] == 2 and lex["overall"]["file@1"] == 100.0 and lex["overall"]["function@5"] == 100.0
    assert lex["o/r"]["n"] == 2
    assert index.stat().st_mtime_ns == stamp  # nothing was indexed
    assert "| lexical-full | 2 (1) | 100.0 |" in bench.markdown_table(metrics)


def test_load_instances_filters_and_limits(tmp_path):
    rows = [{"instance_id": f"i{n}", "repo": repo} for n, repo in enumerate(["a/x", "b/y", "a/x", "c/z", "b/y"])]
    ds = tmp_path / "ds.jsonl"
    ds.write_text("".join(json.dumps(r) + "\n" for r in rows) + "\n")
    assert [r["instance_id"] for r in bench.load_instances(ds)] == ["i0", "i1", "i2", "i3", "i4"]
    assert [r["instance_id"] for r in bench.load_instances(ds, "b/y")] == ["i1", "i4"]
    assert [r["instance_id"] for r in bench.load_instances(ds, "a/x,c/z", limit=2)] == ["i0", "i2"]


def test_missing_blob_is_skipped_not_fatal(two_commits, tmp_path):
    gitdir, c1, _ = two_commits
    sha = _git(gitdir, "rev-parse", f"{c1}:pkg/c.py")
    loose = gitdir / "objects" / sha[:2] / sha[2:]
    if not loose.exists():
        pytest.skip("the clone packed its objects")
    loose.unlink()
    dest = tmp_path / "tree"
    bench.materialize_tree(gitdir, c1, dest)
    snap = _snapshot(dest)
    assert "pkg/c.py" not in snap and snap["pkg/b.py"] == "def b(): pass\n" and snap["a.py"] == "A = 1\n"


def test_instance_whose_commit_is_missing_fails_alone(two_commits, tmp_path):
    gitdir, c1, _ = two_commits
    instances = [
        {"instance_id": "o__r-9", "repo": "o/r", "base_commit": "0" * 40, "problem_statement": "gone",
         "gold_files": ["a.py"], "gold_functions": []},
        {"instance_id": "o__r-1", "repo": "o/r", "base_commit": c1, "problem_statement": "calling b() in pkg/b.py fails",
         "gold_files": ["pkg/b.py"], "gold_functions": ["pkg/b.py:b"]},
    ]
    metrics = bench.run_benchmark(instances, gitdir.parent.parent, ["bm25"], tmp_path / "out", tmp_path / "wd")
    m = metrics["results"]["bm25"]["overall"]
    assert m["n"] == 2 and m["errors"] == 1 and m["file@1"] == 50.0


def test_progress_line_speaks_only_for_long_work(capsys):
    """A first build reports every `every` seconds and when it ends; a quick update says nothing."""
    now = [0.0]
    quick = bench.ProgressLine("psf+requests", "parsed files", every=15, clock=lambda: now[0])
    for done in range(1, 11):
        now[0] += 0.5
        quick(done, 10)
    assert capsys.readouterr().err == ""

    now[0] = 0.0
    slow = bench.ProgressLine("sympy+sympy", "embedded", every=15, clock=lambda: now[0])
    for done in range(256, 2561, 256):  # ten batches, 4 s each
        now[0] += 4
        slow(min(done, 2560), 2560)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "  sympy+sympy: embedded 1024/2560 (16 s, about 24 s left)"
    assert lines[-1] == "  sympy+sympy: embedded 2560/2560 (40 s)"
    assert len(lines) == 3  # at 16 s, 32 s, and the end


def test_embedding_onnx_that_is_missing_is_a_usage_error(two_commits, tmp_path):
    """`--embedding-onnx` names a file to evaluate: a missing one stops the run before any work."""
    gitdir, c1, _ = two_commits
    dataset = tmp_path / "d.jsonl"
    dataset.write_text(json.dumps({"instance_id": "o__r-1", "repo": "o/r", "base_commit": c1,
                                   "problem_statement": "b fails", "gold_files": ["pkg/b.py"]}) + "\n")
    run = subprocess.run([sys.executable, str(_PATH), "--dataset", str(dataset), "--mirrors", str(gitdir.parent.parent),
                          "--configs", "vector", "--out", str(tmp_path / "out"),
                          "--embedding-onnx", str(tmp_path / "absent.onnx")], capture_output=True, text=True)
    assert run.returncode == 2 and "no ONNX file at" in run.stderr
    assert not (tmp_path / "out").exists()
