"""Which entities are tests a runner collects, and the command that runs a selection of them.

What a test *file* is comes from `nsccn.reading.testpaths`; inside one, the runner's own convention says
which entity is a test (data below, by file extension):
- pytest / unittest: functions and methods named `test*` (pytest's `python_functions` default);
- `go test`: `Test*`, `Benchmark*`, `Fuzz*`, `Example*` functions;
- Rust, Java, Kotlin, C#: entities carrying a test attribute (`#[test]`, `@Test`, `[Fact]`, ...);
- Jest, Vitest, Mocha, RSpec and the rest: the file is the unit (tests are anonymous callbacks).
"""

from __future__ import annotations

import json
import re
import shlex
from collections import defaultdict
from functools import lru_cache

from nsccn.reading import testpaths

# a path's answer once: an impact answer asks it of every reached entity's file (a central sympy
# change: 18,000 times, over a few hundred paths)
is_test_path = lru_cache(maxsize=1 << 16)(testpaths.is_test_path)

# extension -> (runner, how a test entity is known: "name" regex or "attribute" regex, or None: the file)
CONVENTIONS: dict[str, tuple[str, str | None, str | None]] = {
    ".py": ("pytest", r"test", None),
    ".go": ("go", r"(?:Test|Benchmark|Fuzz|Example)(?:[A-Z0-9_]|\Z)", None),
    ".rs": ("cargo", None, r"#\[(?:\w+::)*test\b"),
    ".java": ("maven", None, r"@(?:\w+\.)*(?:Test|ParameterizedTest|RepeatedTest)\b"),
    ".kt": ("gradle", None, r"@(?:\w+\.)*Test\b"),
    ".cs": ("dotnet", None, r"\[(?:Fact|Theory|Test|TestMethod|TestCase)\b"),
}
FILE_RUNNERS = {".js": "jest", ".jsx": "jest", ".ts": "jest", ".tsx": "jest", ".mjs": "jest", ".cjs": "jest",
                ".mts": "jest", ".cts": "jest", ".rb": "rspec", ".php": "phpunit", ".exs": "mix"}
MAX_IDS_IN_COMMAND = 60  # past it, the command names files instead of single tests
# each runner's command for its whole suite (what its configuration collects)
WHOLE_SUITE = {"pytest": "python -m pytest", "go": "go test ./...", "cargo": "cargo test", "maven": "mvn test",
               "gradle": "gradle test", "dotnet": "dotnet test", "vitest": "npx vitest run", "mocha": "npx mocha",
               "jest": "npx jest", "rspec": "bundle exec rspec", "phpunit": "vendor/bin/phpunit", "mix": "mix test"}


def _ext(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return name[name.rfind("."):] if "." in name else ""


def is_test(kind: str, path: str, name: str, decorators: list[str]) -> bool:
    """Whether an entity is a test its runner collects (a test file's helpers and fixtures are not)."""
    if kind not in ("func", "method") or not is_test_path(path):
        return False
    rule = runner_rule(path)
    return rule is not None and rule.collects(name, decorators)


def tests_among(path: str, functions) -> int:
    """How many of a file's (kind, name, decorators as JSON) its runner collects: `is_test` of each,
    the path asked once, the decorators read only where the runner knows tests by an attribute."""
    rule = runner_rule(path) if is_test_path(path) else None
    if rule is None:
        return 0
    return sum(kind in ("func", "method") and rule.collects(name, json.loads(decorators) if rule.by_name is None else [])
               for kind, name, decorators in functions)


class RunnerRule:
    """How a runner knows a test in a file it collects: by the function's name, or by an attribute."""

    def __init__(self, by_name: str | None, by_attribute: str | None):
        self.by_name = re.compile(by_name) if by_name is not None else None
        self.by_attribute = re.compile(by_attribute) if by_attribute is not None else None

    def collects(self, name: str, decorators: list[str]) -> bool:
        if self.by_name is not None:
            return self.by_name.match(name) is not None
        return any(self.by_attribute.match(d.strip()) for d in decorators)


_RULES = {ext: RunnerRule(by_name, by_attribute) for ext, (_, by_name, by_attribute) in CONVENTIONS.items()}


def runner_rule(path: str) -> RunnerRule | None:
    """The rule of a test file's runner (None: a runner whose unit is the file, or no runner)."""
    return _RULES.get(_ext(path))


def is_test_file_unit(path: str) -> bool:
    """Whether the file itself is the unit a runner selects (its tests are not entities of ours)."""
    return is_test_path(path) and _ext(path) in FILE_RUNNERS


def _pytest_id(path: str, qualname: str) -> str:
    return f"{path}::{qualname.replace('.', '::')}"


def runner_of(path: str, runner_hint: str | None = None) -> str | None:
    """The runner that collects a test file's tests (`runner_hint`: a package.json's, for JavaScript)."""
    ext = _ext(path)
    runner = CONVENTIONS[ext][0] if ext in CONVENTIONS else FILE_RUNNERS.get(ext)
    return runner_hint if runner == "jest" and runner_hint else runner


def run_command(tests: list[dict], runner_hint: str | None = None, whole: frozenset[str] = frozenset()) -> str | None:
    """A command that runs these tests (`{"file", "qualname" (None: the file)}`) in the repository's
    own runner: one line per runner, joined by `&&`; the runners in `whole` run their whole suite."""
    by_runner: dict[str, list[dict]] = defaultdict(list)
    for t in tests:
        runner = runner_of(t["file"], runner_hint)
        if runner:
            by_runner[runner].append(t)
    parts = []
    for runner, items in by_runner.items():
        if runner in whole:
            parts.append(WHOLE_SUITE[runner])
            continue
        files = list(dict.fromkeys(t["file"] for t in items))
        names = [t for t in items if t.get("qualname")]
        if runner == "pytest":
            ids = [_pytest_id(t["file"], t["qualname"]) for t in names] + [t["file"] for t in items if not t.get("qualname")]
            if len(ids) > MAX_IDS_IN_COMMAND:
                ids = files
            parts.append("python -m pytest " + " ".join(shlex.quote(i) for i in dict.fromkeys(ids)))
        elif runner == "go":
            by_pkg: dict[str, list[str]] = defaultdict(list)
            for t in items:
                pkg = "./" + t["file"].rsplit("/", 1)[0] if "/" in t["file"] else "."
                if t.get("qualname"):
                    by_pkg[pkg].append(t["qualname"].rsplit(".", 1)[-1])
                else:
                    by_pkg.setdefault(pkg, [])
            for pkg, funcs in by_pkg.items():
                run = f" -run {shlex.quote('^(' + '|'.join(dict.fromkeys(funcs)) + ')$')}" if funcs else ""
                parts.append(f"go test {shlex.quote(pkg)}{run}")
        elif runner == "cargo":
            funcs = list(dict.fromkeys(t["qualname"].rsplit(".", 1)[-1] for t in names))
            parts.append("cargo test" + (" -- " + " ".join(shlex.quote(f) for f in funcs) if funcs else ""))
        elif runner in ("maven", "gradle"):
            classes = list(dict.fromkeys(t["file"].rsplit("/", 1)[-1].rsplit(".", 1)[0] for t in items))
            if runner == "maven":
                parts.append("mvn test -Dtest=" + shlex.quote(",".join(classes)))
            else:
                parts.append("gradle test " + " ".join(f"--tests {shlex.quote(c)}" for c in classes))
        elif runner == "dotnet":
            funcs = list(dict.fromkeys(t["qualname"].rsplit(".", 1)[-1] for t in names))
            parts.append("dotnet test --filter " + shlex.quote("|".join(f"Name={f}" for f in funcs)))
        elif runner == "vitest":
            parts.append("npx vitest run " + " ".join(shlex.quote(f) for f in files))
        elif runner == "mocha":
            parts.append("npx mocha " + " ".join(shlex.quote(f) for f in files))
        elif runner == "jest":
            parts.append("npx jest " + " ".join(shlex.quote(f) for f in files))
        elif runner == "rspec":
            parts.append("bundle exec rspec " + " ".join(shlex.quote(f) for f in files))
        elif runner == "phpunit":
            parts.append(" && ".join(f"vendor/bin/phpunit {shlex.quote(f)}" for f in files))
        elif runner == "mix":
            parts.append("mix test " + " ".join(shlex.quote(f) for f in files))
    return " && ".join(parts) or None


def js_runner(package_json: bytes | None) -> str | None:
    """The JavaScript test runner a package.json names (vitest, mocha), None for jest's default."""
    if not package_json:
        return None
    text = package_json.decode("utf-8", "replace")
    for runner in ("vitest", "mocha"):
        if f'"{runner}"' in text or f"{runner} " in text:
            return runner
    return None
