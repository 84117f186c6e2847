"""Which files hold tests, documentation or examples, in every language: one rule for search
(tests demoted), the ranker's features (`is_test`), the repository map (library code first) and
the embedder (test files get no vector unless asked).

Never where a bug's fix goes. The conventions by language:
- Python: `test_*.py`, `*_test.py`, `conftest.py`, `tests.py`, `test.py` (unittest's `test*.py` finds it), `tests/`, a top-level `test/` or `testing/`;
- Go: `*_test.go`, `testdata/` (fixtures the go tool never builds);
- JavaScript/TypeScript: `*.test.js`, `*.spec.ts` (`.jsx .tsx .mjs .cjs .mts .cts`), `__tests__/`, `__mocks__/`;
- Java, Kotlin, Scala, Groovy: `src/test/...` (and Gradle's `src/androidTest`, `src/testFixtures`,
  `src/integrationTest`), `*Test.java`, `*Tests.kt`, `*IT.java`, `*Spec.scala`;
- Rust: `tests/` (integration tests; unit tests live in `mod tests` inside the file);
- Ruby: `spec/` at the top, `*_spec.rb`, `*_test.rb`; PHP: `tests/`, `*Test.php`;
- C#: `*Tests.cs`, test projects `Foo.Tests/`, `Foo.UnitTests/`; Swift: `Tests/`, `*Tests.swift`;
- C and C++: `*_test.cc`, `*_unittest.cc`, `test/`; Elixir: `test/`, `*_test.exs`.
Folder names compare without case (`Tests/`, `Docs/`).
"""

from __future__ import annotations

import re
from functools import lru_cache

# Folders of tests, documentation and examples, wherever they are.
_TEST_DIRS = frozenset({"tests", "__tests__", "__mocks__", "testdata", "doc", "docs", "example", "examples"})
# These only at the top of the repository or right under src/ (pytest's testing/, Maven's
# src/test/, RSpec's spec/): inside a package they are library code that bugs are fixed in
# (django/test/, sympy/testing/, xarray/testing/, numpy/testing/).
_TOP_TEST_DIRS = frozenset({"test", "testing", "spec", "androidtest", "testfixtures", "integrationtest"})
# .NET test projects: `Shop.Tests/`, `Shop.UnitTests/`, `Shop.IntegrationTests/`.
_TEST_PROJECT = re.compile(r".+\.(?:unit|integration|functional)?tests?\Z")
_TEST_FILE = re.compile(
    r"(?:test_.*|.*_(?:unit)?test\.\w+|.*_spec\.rb|.*\.(?:test|spec)\.[cm]?[jt]sx?"
    r"|.*(?:Tests?|IT|Spec)\.(?:java|kt|kts|scala|groovy|cs|php|swift)|conftest\.py|tests?\.py)\Z"
)


@lru_cache(maxsize=1 << 16)  # asked of each entity an answer reaches (sympy: 11,000), of a few thousand files
def is_test_path(path: str) -> bool:
    """Whether a file holds tests, documentation or examples (never where a bug's fix goes)."""
    parts = path.split("/")
    dirs = [p.lower() for p in parts[:-1]]
    return (
        any(p in _TEST_DIRS or _TEST_PROJECT.match(p) for p in dirs)
        or any(p in _TOP_TEST_DIRS and (i == 0 or dirs[i - 1] == "src") for i, p in enumerate(dirs))
        or _TEST_FILE.match(parts[-1]) is not None
    )
