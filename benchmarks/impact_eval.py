"""Test selection by `nsccn impact`, held against per-test coverage nobody tuned.

For each of N sampled commits that change a repository's library code: at the commit's parent,
run the whole suite once with per-test coverage contexts (`pytest --cov --cov-context=test`); the
tests whose coverage holds a line the commit changes are the truth (removed lines on the old side,
and for a hunk that only adds, the lines around where it adds). Then ask `impact --commit` (the
index made at the parent, as an agent's would be) for its tests. Beside it, in the same run:
every test, the tests in `test_<module>.py` of each changed module, and the tests in files that
import a changed file, transitively (Pants' `--changed-dependents=transitive`, file level, from
the index's IMPORTS edges). Also the `changed` entities against the commit's hunks mapped with
Python's own `ast` (precision/recall of diff -> entity). For every covering test it misses, it
says why (not an entity of the index, reachable only deeper than the test depth, no path).

    python benchmarks/impact_eval.py --repo /work/.mirror/pallets+flask/repo --package src/flask \\
        --python /path/to/venv-with-the-suite's-deps/bin/python --commits 8 --seed 42 --work /tmp/eval-flask

A changed file whose code Python's own `ast` sees unchanged once comments, a signature's
annotations and `if TYPE_CHECKING:` blocks are left out (no test can fail because of it) adds no
covering test to the truth; the truth as written (every covering test of a changed line) is scored
beside it (`nsccn_as_written`). Each commit's suite times and covering tests per file are kept in
`--truth` (default WORK/truth): a replay of other nsccn code on the same commits skips the suite.

The commits: the newest 150 non-merge commits (`--window`), those touching 1-5 library .py files (no test
file counted), sampled with the seed. The package runs from the checkout (PYTHONPATH=src or the
root), so the scratch environment holds only the suite's dependencies.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nsccn.reading.diff import parse_diff  # noqa: E402
from nsccn.indexing.indexer import index_repository  # noqa: E402
from nsccn.serving.answers import plain  # noqa: E402
from nsccn.serving.navigator import Navigator  # noqa: E402
from nsccn.graph.impact import TEST_DEPTH, _suite as impact_suite  # noqa: E402
from nsccn.reading.testpaths import is_test_path  # noqa: E402

# the same answer's tests within fewer hops of the change: the walk is breadth-first, so a test's
# distance is the same whatever the bound, and one walk to the deepest scores every depth exactly
TEST_DEPTHS = (4, 5, 6, 7, 8, 9)
# the whole suite run once the answer reaches this share of it (the product's WHOLE_SUITE_SHARE is one)
SUITE_SHARES = (0.3, 0.5, 0.7, 0.9)
CONFIDENCE_FLOORS = (0.3, 0.6)  # the same answer's tests, cut at a path confidence: how recall trades for selection
CONTEXTS = r"""
import json, sys
from coverage import CoverageData
data = CoverageData(sys.argv[1]); data.read()
want = json.loads(sys.argv[2])
out = {}
for f in data.measured_files():
    for rel, lines in want.items():
        if f == rel or f.endswith('/' + rel):  # relative_files = true writes them relative
            by_line = data.contexts_by_lineno(f)
            out[rel] = {str(n): sorted(set(by_line.get(n, []))) for n in lines}
print(json.dumps(out))
"""


def git(repo: Path, *args: str, git_dir: Path | None = None) -> str:
    cmd = ["git"] + (["--git-dir", str(git_dir)] if git_dir else ["-C", str(repo)]) + list(args)
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def sample_commits(mirror: Path, package: str, n: int, seed: int, window: int, exclude: set[str]) -> list[str]:
    shas = git(mirror, "log", "--no-merges", "-n", str(window), "--format=%H", git_dir=mirror).split()
    ok = []
    for sha in shas:
        files = git(mirror, "diff-tree", "--no-commit-id", "-r", "--name-only", "--root", sha, git_dir=mirror).split()
        lib = [f for f in files if f.endswith(".py") and f.startswith(package + "/") and not is_test_path(f)]
        if 1 <= len(lib) <= 5 and not any(sha.startswith(x) for x in exclude):
            ok.append(sha)
    return sorted(random.Random(seed).sample(ok, min(n, len(ok))), key=shas.index)


def node(file: str, qual: str | None) -> str:
    return f"{file}::{qual.replace('.', '::')}" if qual else file


def strip_params(nodeid: str) -> str:
    return nodeid.split("[", 1)[0]


def record_coverage(tree: Path, parent: str, args, truth_dir: Path, work: Path) -> str | None:
    """Per-test coverage recorded at parent~K (run once, kept in the truth folder), left in the tree as
    `.coverage` and mapped by nsccn there, at that commit, with its index then; the tree back at the parent.
    None when that commit does not exist or its suite did not run."""
    try:
        at = git(tree, "rev-parse", "--verify", "--quiet", f"{parent}~{args.recorded_ago}^{{commit}}").strip()
    except subprocess.CalledProcessError:
        return None
    kept = truth_dir / f"recorded-{at}.coverage"
    git(tree, "checkout", "-q", "-f", "--detach", at)
    git(tree, "clean", "-q", "-fdx", "-e", ".nsccn")
    if not kept.exists():
        times, cov, _ = run_suite(tree, args.python, args.package, args.tests, work, args.timeout)
        if times and cov.exists():
            kept.write_bytes(cov.read_bytes())
    got = None
    if kept.exists():
        (tree / ".coverage").write_bytes(kept.read_bytes())  # written now: after every file of this checkout
        index_repository(tree, workers=1, embed=False)
        nav = Navigator(tree)
        used, note = nav._recorded_coverage(nav.store, ".coverage")  # mapped now, as the first `impact` would
        nav.close()
        got = at if used is not None else None
        if note:
            print(f"{at[:10]}: {note}", file=sys.stderr)
    git(tree, "checkout", "-q", "-f", "--detach", parent)
    git(tree, "clean", "-q", "-fdx", "-e", ".nsccn", *(("-e", ".coverage") if got else ()))
    if not got:
        (tree / ".coverage").unlink(missing_ok=True)
    return got


def run_suite(tree: Path, python: str, package: str, tests: str, work: Path, timeout: int) -> tuple[dict, Path, float]:
    """{test id: seconds} of the whole suite and the coverage file with its per-test contexts."""
    cov, junit = work / "coverage.db", work / "junit.xml"
    for p in (cov, junit):
        p.unlink(missing_ok=True)
    env = {**os.environ, "COVERAGE_FILE": str(cov), "PYTHONPATH": str(tree / "src") if (tree / "src").is_dir() else str(tree),
           "PYTHONDONTWRITEBYTECODE": "1"}
    t0 = time.perf_counter()
    subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--continue-on-collection-errors", f"--cov={tree / package}", "--cov-context=test",
                    "--cov-report=", "-o", "junit_family=xunit1", f"--junitxml={junit}", tests],
                   cwd=tree, env=env, capture_output=True, timeout=timeout)
    wall = time.perf_counter() - t0
    times: dict[str, float] = {}
    if junit.exists():
        for case in ET.parse(junit).iter("testcase"):
            f = case.get("file") or ""
            mod = f[:-3].replace("/", ".")
            cls = case.get("classname", "")
            qual = cls[len(mod) + 1:] if cls.startswith(mod + ".") else ""
            tid = strip_params(node(f, (qual + "." if qual else "") + case.get("name", "")))
            times[tid] = times.get(tid, 0.0) + float(case.get("time") or 0)
    return times, cov, wall


def truth_lines(tree: Path, parent: str, sha: str, package: str) -> dict[str, list[int]]:
    diff = parse_diff(git(tree, "diff", "-U0", "--no-color", "--no-ext-diff", "-M", parent, sha))
    out: dict[str, list[int]] = {}
    for fd in diff.files:
        if not fd.old_path or not fd.old_path.endswith(".py") or is_test_path(fd.old_path) \
                or not fd.old_path.startswith(package + "/"):
            continue
        lines = set()
        for h in fd.hunks:
            gone = h.deleted()
            lines |= set(gone) if gone else {h.old_start, h.old_start + 1}  # around where it only adds
        out[fd.old_path] = sorted(lines)
    return out


def covering_tests(python: str, cov: Path, lines: dict[str, list[int]]) -> dict[str, set[str]]:
    """Per changed file, the tests whose coverage holds one of its lines."""
    got = subprocess.run([python, "-c", CONTEXTS, str(cov), json.dumps(lines)], capture_output=True, text=True, check=True)
    out: dict[str, set[str]] = {}
    for rel, by_line in json.loads(got.stdout).items():
        for contexts in by_line.values():
            out.setdefault(rel, set()).update(strip_params(c.split("|", 1)[0]) for c in contexts if c)
    return out


class _NoAnnotations(ast.NodeTransformer):
    """A module as it runs: a signature's annotations and `if TYPE_CHECKING:` blocks (no else) left out."""

    def visit_arg(self, node):
        node.annotation = None
        return node

    def visit_FunctionDef(self, node):
        node.returns = None
        return self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_If(self, node):
        t = node.test
        if not node.orelse and ((isinstance(t, ast.Name) and t.id == "TYPE_CHECKING")
                                or (isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")):
            return None
        return self.generic_visit(node)


def runs_the_same(tree: Path, parent: str, sha: str, path: str) -> bool:
    """Whether a file's change leaves its code as Python runs it (comments, a signature's
    annotations, `if TYPE_CHECKING:` blocks alone): Python's own ast, not nsccn's, says so."""
    try:
        a, b = (ast.dump(_NoAnnotations().visit(ast.parse(git(tree, "show", f"{rev}:{path}")))) for rev in (parent, sha))
    except (SyntaxError, subprocess.CalledProcessError, ValueError):
        return False
    return a == b


def ast_entities(text: str) -> list[tuple[str, int, int]]:
    out = []

    def visit(n, prefix):
        for child in ast.iter_child_nodes(n):  # into every statement: a def inside an `if` is nested too
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                start = min([child.lineno] + [d.lineno for d in child.decorator_list])
                q = prefix + child.name
                out.append((q, start, child.end_lineno))
                visit(child, q + ".")
            else:
                visit(child, prefix)
    try:
        visit(ast.parse(text), "")
    except SyntaxError:
        pass
    return out


def function_bodies(text: str) -> list[tuple[int, int]]:
    """(first, last line) of every function's body: what runs when it is called, not at import."""
    try:
        module = ast.parse(text)
    except SyntaxError:
        return []
    return [(n.body[0].lineno, n.end_lineno) for n in ast.walk(module) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def library_lines(tree: Path, parent: str, sha: str, package: str):
    """Each side of each changed library .py file: (its path as the commit names it, the side's file
    text, the non-blank lines of that side the commit changes as (line, text))."""
    diff = parse_diff(git(tree, "diff", "--no-color", "--no-ext-diff", "-M", parent, sha))
    for fd in diff.files:
        for path, rev, old in ((fd.old_path, parent, True), (fd.new_path, sha, False)):
            if not path or not path.endswith(".py") or is_test_path(path) or not path.startswith(package + "/"):
                continue
            lines = []
            for h in fd.hunks:
                line = h.old_start if old else h.new_start
                for body in h.lines:
                    if body[:1] == ("+" if old else "-"):
                        continue
                    if body[:1] == ("-" if old else "+") and body[1:].strip():
                        lines.append((line, body[1:]))
                    line += 1
            yield fd.new_path or path, git(tree, "show", f"{rev}:{path}"), lines


def import_time_only(tree: Path, parent: str, sha: str, package: str) -> bool:
    """Whether every changed code line of the library (either side) lies outside a function's body:
    a class body, a module constant, a signature or a decorator, run when the module is imported.
    Per-test coverage credits such lines to no test (the import happens while pytest collects),
    so the truth of such a commit is empty whatever depends on the change."""
    seen = False
    for _name, text, lines in library_lines(tree, parent, sha, package):
        bodies = function_bodies(text)
        for line, body in lines:
            if not body.strip().startswith("#"):
                if any(a <= line <= b for a, b in bodies):
                    return False
                seen = True
    return seen


def ast_changed(tree: Path, parent: str, sha: str, package: str) -> set[str]:
    """path:qualname of the innermost def/class holding each changed non-blank line (ast's view)."""
    out = set()
    for name, text, lines in library_lines(tree, parent, sha, package):
        ents = ast_entities(text)
        for line, _body in lines:
            inner = [e for e in ents if e[1] <= line <= e[2]]
            if inner:
                out.add(f"{name}:{min(inner, key=lambda e: e[2] - e[1])[0]}")
    return out


def importer_tests(nav: Navigator, changed_files: set[str], all_tests: set[str]) -> set[str]:
    """Tests in files that import a changed file, transitively (file level), and every test under a
    conftest.py that does."""
    store = nav.store
    reverse: dict[str, set[str]] = {}
    for e in store.all_edges():
        if e.relation == "IMPORTS" and e.target.count(":") >= 2 and not e.target.startswith(("ext:", "var:")):
            target_file = e.target.split(":", 2)[1]
            reverse.setdefault(target_file, set()).add(e.path)
    seen, todo = set(changed_files), list(changed_files)
    while todo:
        for src in reverse.get(todo.pop(), ()):
            if src not in seen:
                seen.add(src)
                todo.append(src)
    # a conftest.py in the closure reaches every test under its folder (pytest loads it for them)
    folders = [f.rsplit("/", 1)[0] + "/" if "/" in f else "" for f in seen if f.rsplit("/", 1)[-1] == "conftest.py"]
    return {t for t in all_tests if t.split("::", 1)[0] in seen or any(t.startswith(d) for d in folders)}


def why_missed(nav: Navigator, missed: set[str], commit: str, changed: list[dict], tree: Path) -> dict[str, int]:
    """Why each covering test was not selected: not an entity of the index (inherited from a base
    class in another file, generated), reachable only past the test depth, a changed name written
    in the test (or a helper of its file) that no edge resolved to (a receiver whose type the
    resolver did not know), or nothing in the test names it (reached at run time only: through a
    public API the graph did not follow, dynamic dispatch, a fixture of a plugin, parametrization)."""
    deep = {node(t["file"], t.get("qualname")) for t in plain(nav.impact(commit=commit, test_depth=10))["tests"]}
    names = {c["id"].rsplit(":", 1)[-1].rsplit(".", 1)[-1] for c in changed
             if c["kind"] != "module" and not is_test_path(c["file"])}
    reasons: dict[str, int] = {}
    for t in missed:
        file, _, rest = t.partition("::")
        qual = rest.replace("::", ".")
        rows = [r for r in (nav.store.entity(f"func:{file}:{qual}"), nav.store.entity(f"method:{file}:{qual}")) if r]
        if not rows:
            why = "not an entity of the index (inherited from a base class elsewhere, or generated)"
        elif t in deep:
            why = "reachable only past the test depth"
        else:
            try:
                text = (tree / file).read_text(errors="replace")
            except OSError:
                text = ""
            body = "\n".join(text.splitlines()[rows[0].start_line - 1:rows[0].end_line])
            if any(re.search(rf"\b{re.escape(n)}\b", body) for n in names):
                why = "the test names a changed entity, no edge resolved to it (receiver type unknown)"
            elif any(re.search(rf"\b{re.escape(n)}\b", text) for n in names):
                why = "a helper or fixture of the test file names it, no edge or injection reached the test"
            else:
                why = "nothing in the test file names it (run-time path: public API, dispatch, plugin fixture)"
        reasons[why] = reasons.get(why, 0) + 1
    return reasons


def selected_paths(tests: list[dict], truth: set[str], all_tests: set[str]) -> list[list]:
    """[test, covering?, confidence, distance, the relations of its reason path] of each selected
    test: what over-selection goes through (read by impact_pool.py --paths)."""
    out = []
    for t in tests:
        if not t.get("qualname"):
            continue
        tid = node(t["file"], t["qualname"])
        if tid in all_tests:
            relations = re.findall(r" -([A-Z_]+)(?:\([^)]*\))?\(", t["reason"])
            out.append([tid, tid in truth, t["confidence"], t["distance"], relations])
    return out


def score(selected: set[str], truth: set[str], times: dict[str, float]) -> dict:
    selected = selected & set(times)
    total = sum(times.values()) or 1.0
    return {"recall": len(selected & truth) / len(truth) if truth else None, "safe": truth <= selected,
            "selected": len(selected), "selection_rate": len(selected) / max(1, len(times)),
            "time_share": sum(times[t] for t in selected) / total}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", required=True, help="a git directory (bare mirror) of the repository")
    ap.add_argument("--package", required=True, help="the library's folder, e.g. src/flask")
    ap.add_argument("--tests", default="tests")
    ap.add_argument("--python", required=True, help="a Python with the suite's dependencies, pytest-cov among them")
    ap.add_argument("--commits", type=int, default=8)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--window", type=int, default=150, help="sample among this many newest non-merge commits "
                    "(older ones need older dependencies than one scratch environment holds)")
    ap.add_argument("--work", required=True)
    ap.add_argument("--timeout", type=int, default=900, help="seconds one suite run may take")
    ap.add_argument("--out", help="write the per-commit results here (JSON)")
    ap.add_argument("--exclude", nargs="*", default=[], help="results (JSON) of earlier runs, or commit ids, left "
                    "out of the sample (a fresh sample after a change made looking at them)")
    ap.add_argument("--replay", help="the commits of an earlier run's results (JSON), in its order, not a new "
                    "sample: before and after a change on the same commits")
    ap.add_argument("--recorded-ago", type=int, default=0, metavar="K",
                    help="also score `impact` with per-test coverage recorded K commits before each parent (parent~K: "
                         "stale, as a developer's last run with coverage would be), mapped by nsccn at that commit; "
                         "0: not scored. Each recording is kept in the truth folder (recorded-SHA.coverage)")
    ap.add_argument("--truth", help="a folder of each commit's suite times and covering tests (default WORK/truth): "
                    "read when there, written when not, so replays of other nsccn code skip the suite")
    args = ap.parse_args()
    mirror, work = Path(args.repo), Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    tree = work / "tree"
    truth_dir = Path(args.truth) if args.truth else work / "truth"
    truth_dir.mkdir(parents=True, exist_ok=True)
    seen = {r["commit"] for f in args.exclude if f.endswith(".json") for r in json.loads(Path(f).read_text())["commits"]}
    seen |= {f for f in args.exclude if not f.endswith(".json")}  # commit ids (or their prefixes) as such
    if args.replay:
        commits = [r["commit"] for r in json.loads(Path(args.replay).read_text())["commits"]]
    else:
        commits = sample_commits(mirror, args.package, args.commits, args.seed, args.window, seen)
    if not tree.exists():
        git(mirror, "worktree", "add", "-f", "--detach", str(tree), commits[0] + "^", git_dir=mirror)
    rows = []
    for sha in commits:
        parent = git(tree, "rev-parse", sha + "^").strip()
        git(tree, "checkout", "-q", "-f", "--detach", parent)
        git(tree, "clean", "-q", "-fdx", "-e", ".nsccn")
        lines = truth_lines(tree, parent, sha, args.package)
        cached = truth_dir / f"{sha}.json"
        if cached.exists():  # the truth is the suite's, not nsccn's: one run of it serves every replay
            known = json.loads(cached.read_text())
            times, wall = known["times"], known["suite_seconds"]
            by_file = {f: set(t) for f, t in known["by_file"].items()} if "by_file" in known else None
            truth = set(known["covering"])
        else:
            times, cov, wall = run_suite(tree, args.python, args.package, args.tests, work, args.timeout)
            if not times:
                print(f"{sha[:10]}: the suite did not run at the parent; skipped", file=sys.stderr)
                continue
            by_file = {f: t & set(times) for f, t in covering_tests(args.python, cov, lines).items()}
            truth = set().union(*by_file.values()) if by_file else set()
            cached.write_text(json.dumps({"times": times, "covering": sorted(truth), "suite_seconds": wall,
                                          "by_file": {f: sorted(t) for f, t in by_file.items()}}))
        # the lines a change touches that run the same (comments, annotations) can break no test: the
        # tests that cover them are not the truth (Ekstazi's checksums leave out debug information too)
        inert = sorted(f for f in lines if runs_the_same(tree, parent, sha, f))
        as_written = truth
        if inert:
            if by_file is not None:
                truth = set().union(*(t for f, t in by_file.items() if f not in inert))
            elif len(inert) == len(lines):
                truth = set()
            # else: an older cache without the files apart, and some file's code changed: all of it kept
        recorded_at = record_coverage(tree, parent, args, truth_dir, work) if args.recorded_ago else None
        index_repository(tree, workers=1, embed=False)
        nav = Navigator(tree)
        t0 = time.perf_counter()
        out = plain(nav.impact(commit=sha, coverage="off"))  # as its JSON: what the command line answers (TEST_DEPTH)
        seconds = time.perf_counter() - t0
        # the graph's tests at every depth: one walk to the deepest (the product's tiers hang on its own depth)
        deepest = out if max(TEST_DEPTHS) <= TEST_DEPTH else plain(nav.impact(commit=sha, test_depth=max(TEST_DEPTHS),
                                                                              coverage="off"))
        all_tests = set(times)
        wide = plain(nav.impact(commit=sha, wide=True, coverage="off"))
        with_coverage = plain(nav.impact(commit=sha)) if recorded_at else None  # `.coverage` at the root, as a user's

        def picked_at(floor: float, depth: int = TEST_DEPTH, tiers: tuple[str, ...] = ("tests",)) -> set[str]:
            got = set()
            answer = out if depth <= TEST_DEPTH else deepest
            for t in (t for tier in tiers for t in answer.get(tier) or ()):
                if t["confidence"] < floor or t["distance"] > depth:
                    continue
                if t.get("qualname"):
                    got.add(node(t["file"], t["qualname"]))
                else:
                    got |= {x for x in all_tests if x.split("::", 1)[0] == t["file"]}
            return got

        picked = picked_at(0.0)
        tiers = picked_at(0.0, tiers=("tests", "module_tests", "test_files"))

        def suite_at(share: float) -> set[str]:  # the whole suite once a runner's share reaches `share`
            python = [s for s in out.get("suites") or () if s["runner"] == "pytest"]
            return all_tests if any(s["reached"] >= share * s["tests"] for s in python) else tiers

        def runs(answer: dict) -> set[str]:  # what an answer's `run` runs: its tiers, or the whole suite
            if any(s["whole"] for s in answer.get("suites") or ()):
                return all_tests
            got = set()
            for t in (t for tier in ("covered_tests", "tests", "module_tests", "test_files") for t in answer.get(tier) or ()):
                got |= {node(t["file"], t["qualname"])} if t.get("qualname") else \
                    {x for x in all_tests if x.split("::", 1)[0] == t["file"]}
            return got

        run = runs(out)
        assert run == (all_tests if any(s["whole"] for s in out.get("suites") or ()) else tiers)
        by_test = picked_at(0.0, tiers=("tests", "module_tests"))  # the same, no test file run whole
        # every test file the answer reaches run whole (pytest's file unit, as Pants selects files)
        run_files = {x for x in all_tests if x.split("::", 1)[0] in {t.split("::", 1)[0] for t in run}}
        changed_files = set(lines)
        named = {t for t in all_tests if Path(t.split("::", 1)[0]).name in
                 {f"test_{Path(f).stem if Path(f).stem != '__init__' else Path(f).parent.name}.py" for f in changed_files}}
        ast_set = ast_changed(tree, parent, sha, args.package)
        ours = {f"{c['file']}:{c['id'].rsplit(':', 1)[-1]}" for c in out["changed"]
                if c["kind"] in ("func", "method", "class") and not is_test_path(c["file"])
                and c["file"].startswith(args.package + "/")}
        row = {
            "commit": sha, "suite_tests": len(all_tests), "suite_seconds": round(wall, 1), "covering": len(truth),
            "impact_seconds": round(seconds, 3),
            "covering_as_written": len(as_written), "inert_files": inert,
            "import_time_only": import_time_only(tree, parent, sha, args.package),
            "nsccn": score(picked, truth, times),
            "nsccn_as_written": score(picked, as_written, times),
            # what the answer's `run` runs: the graph's tests, the module tests (no edge; their file imports a
            # changed module) and the test files run whole (a tenth of their tests reached or more)
            "nsccn_run": score(run, truth, times),
            "nsccn_run_tiers": score(tiers, truth, times),  # never the whole suite
            # with the coverage recorded at parent~K: the tests that ran a changed function then, and the graph
            # from what is new or changed since (`nsccn.graph.recorded`)
            **({"recorded_at": recorded_at, "nsccn_recorded": score(runs(with_coverage) & all_tests, truth, times),
                "recorded_use": with_coverage.get("coverage")} if with_coverage else {}),
            **{f"nsccn_run_suite_{f:g}": score(suite_at(f), truth, times) for f in SUITE_SHARES},
            "nsccn_run_by_test": score(by_test, truth, times),
            "nsccn_run_files": score(run_files, truth, times),
            **{f"nsccn_conf_{f:g}": score(picked_at(f), truth, times) for f in CONFIDENCE_FLOORS},
            **{f"nsccn_depth_{d}": score(picked_at(0.0, d), truth, times) for d in TEST_DEPTHS},
            "named_test_module": score(named, truth, times),
            "file_importers": score(importer_tests(nav, changed_files, all_tests), truth, times),
            "all": score(all_tests, truth, times),
            "changed_precision": len(ours & ast_set) / len(ours) if ours else None,
            "changed_recall": len(ours & ast_set) / len(ast_set) if ast_set else None,
            "selected_paths": selected_paths(out["tests"], truth, all_tests),
            # the answer's units by tier and its suites: what a selection policy can be replayed from
            # offline (`impact_policy.py`), with the truth cache's tests and times
            # (with `wide`: the module tier whatever the graph reaches; the policy decides when to use it)
            "answer_units": [[tier, t["file"], t.get("qualname"), t["confidence"], t["distance"]]
                             for tier in ("tests", "module_tests", "test_files") for t in wide.get(tier) or ()],
            "answer_suites": out.get("suites") or [],
            # the index's pytest suite (file -> test names): the denominators of the product's whole-file and
            # whole-suite shares, for `impact_policy.py` to decide as the product does
            "index_suite": {f: sorted(q for q in names if q) for f, names in
                            impact_suite(nav.store, None).get("pytest", {}).items()},
            "truth_tests": sorted(truth), "test_seconds": times,
            "missed_tests": sorted(truth - picked)[:10],
            "missed": why_missed(nav, truth - picked, sha, out["changed"], tree) if truth - picked else {},
        }
        nav.close()
        rows.append(row)
        n = row["nsccn"]
        recall = "-" if n["recall"] is None else f"{n['recall']:.2f}"
        print(f"{sha[:10]} covering {len(truth):>4}/{len(all_tests)}  nsccn recall {recall} rate {n['selection_rate']:.3f} "
              f"safe {n['safe']}  impact {seconds * 1000:.0f} ms  missed {row['missed']}", flush=True)
    summary = summarize(rows)
    print(json.dumps(summary, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps({"args": vars(args), "summary": summary, "commits": rows}, indent=1))
    return 0


def scores_of(rows: list[dict], key: str, truth: str = "covering") -> dict:
    """Recall and safety over the commits some test covers; selection and time over all of them."""
    covered = [r for r in rows if r.get(truth, r["covering"])]
    rec = [r[key]["recall"] for r in covered]
    return {
        "median_recall": round(statistics.median(rec), 3) if rec else None,
        "mean_recall": round(statistics.fmean(rec), 3) if rec else None,
        "safety": round(sum(r[key]["safe"] for r in covered) / len(covered), 3) if covered else None,
        "median_selection_rate": round(statistics.median(r[key]["selection_rate"] for r in rows), 3) if rows else None,
        "mean_selection_rate": round(statistics.fmean(r[key]["selection_rate"] for r in rows), 3) if rows else None,
        "median_time_share": round(statistics.median(r[key]["time_share"] for r in rows), 3) if rows else None,
    }


def summarize(rows: list[dict]) -> dict:
    covered = [r for r in rows if r["covering"]]
    out = {"commits": len(rows), "commits_with_covering_tests": len(covered),
           "import_time_only": sum(1 for r in rows if r.get("import_time_only"))}
    for key in ("nsccn", "nsccn_run", "nsccn_run_tiers", *(f"nsccn_run_suite_{f:g}" for f in SUITE_SHARES),
                "nsccn_run_by_test", "nsccn_run_files", *(f"nsccn_conf_{f:g}" for f in CONFIDENCE_FLOORS),
                *(f"nsccn_depth_{d}" for d in TEST_DEPTHS),
                "named_test_module", "file_importers", "all",
                "nsccn_as_written"):
        out[key] = scores_of(rows, key, "covering_as_written" if key == "nsccn_as_written" else "covering")
    recorded = [r for r in rows if "nsccn_recorded" in r]
    if recorded:  # with the stale coverage, beside the graph alone on the same commits
        out["recorded_commits"] = len(recorded)
        for key, name in (("nsccn_recorded", "nsccn_recorded"), ("nsccn_run", "nsccn_run_where_recorded"),
                          ("all", "all_where_recorded")):
            out[name] = scores_of(recorded, key)
    for key in ("changed_precision", "changed_recall"):
        vals = [r[key] for r in rows if r[key] is not None]
        out[key] = round(statistics.fmean(vals), 3) if vals else None
    missed: dict[str, int] = {}
    for r in rows:
        for why, n in r["missed"].items():
            missed[why] = missed.get(why, 0) + n
    out["missed_by_reason"] = missed
    out["median_impact_seconds"] = round(statistics.median(r["impact_seconds"] for r in rows), 3) if rows else None
    return out


if __name__ == "__main__":
    sys.exit(main())
