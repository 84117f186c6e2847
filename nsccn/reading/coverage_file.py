"""A coverage.py data file (`.coverage`, SQLite) with per-test contexts, read as: per measured file,
which test ran which lines.

`pytest --cov=PKG --cov-context=test` (pytest-cov) names each line's context after the test that ran
it: `tests/test_x.py::TestA::test_b|run` (also `|setup` and `|teardown`: a fixture's code runs for
the test too). Lines run outside any test (imports while pytest collects) have the empty context
and are credited to no test. Read with our own SQLite (the file's schema is coverage.py's, version
7, documented with its `numbits` encoding), so the product needs no coverage.py; opened read-only,
with `trusted_schema=OFF`: a data file is input, and reading runs no trigger.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import apsw

SCHEMA_VERSION = 7  # coverage.py 5.0 and later (7.x today)
# `path::Class::test_name[param]|run`: the test's node id without its parameters, and the phase
_CONTEXT = re.compile(r"^(?P<file>[^:|]+?\.py)::(?P<name>[^|\[]+)(?:\[.*\])?(?:\|(?:setup|run|teardown))?$")


class CoverageFileError(ValueError):
    """A data file that is not coverage.py's, of another schema, or without per-test contexts."""


@dataclass
class PerTestCoverage:
    path: Path
    mtime: float
    size: int
    when: str  # when it was written: its own record, else the file's time
    tests: list[str] = field(default_factory=list)  # `file::Class::test`, parameters stripped
    # repository-relative file -> test (index into `tests`) -> the lines it ran there
    lines: dict[str, dict[int, set[int]]] = field(default_factory=dict)
    outside: int = 0  # measured files outside the repository: not ours to map
    paths: dict[str, str] = field(default_factory=dict)  # repository-relative file -> its path in the data file


def numbits_to_lines(numbits: bytes) -> set[int]:
    """coverage.py's `numbits`: bit b of byte i set means line 8 * i + b ran."""
    out = set()
    for i, byte in enumerate(numbits):
        if byte:
            out.update(8 * i + b for b in range(8) if byte >> b & 1)
    return out


def read(path: Path, root: Path) -> PerTestCoverage:
    """The per-test lines of a data file, its measured paths made relative to `root`."""
    st = path.stat()
    conn, tables = _open(path)
    try:
        meta = dict(conn.execute("SELECT key, value FROM meta")) if "meta" in tables else {}
        when = meta.get("when") or time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(st.st_mtime))
        out = PerTestCoverage(path=path, mtime=st.st_mtime, size=st.st_size, when=when)
        measured = dict(conn.execute("SELECT id, path FROM file"))
        files = {fid: _relative(p, root) for fid, p in measured.items()}
        moved = _checkout_prefix([measured[f] for f, rel in files.items() if rel is None], root)
        if moved is not None:  # written in another checkout of this repository (moved, a container, CI)
            for fid, rel in files.items():
                if rel is None and measured[fid].startswith(moved):
                    files[fid] = measured[fid][len(moved):].lstrip("/") or None
        out.outside = sum(1 for p in files.values() if p is None)
        out.paths = {rel: measured[fid] for fid, rel in files.items() if rel is not None}
        test_of, out.tests = _tests_of_contexts(conn)
        if not out.tests:
            raise CoverageFileError(f"{path} records no per-test contexts: run the suite with "
                                    "`pytest --cov=PACKAGE --cov-context=test`")

        def add(fid: int, cid: int, lines) -> None:
            rel, test = files.get(fid), test_of.get(cid)
            if rel is not None and test is not None:
                out.lines.setdefault(rel, {}).setdefault(test, set()).update(lines)

        for fid, cid, numbits in conn.execute("SELECT file_id, context_id, numbits FROM line_bits"):
            add(fid, cid, numbits_to_lines(numbits))
        for fid, cid, a, b in conn.execute("SELECT file_id, context_id, fromno, tono FROM arc"):  # branch coverage
            add(fid, cid, [n for n in (a, b) if n > 0])
        return out
    except apsw.Error as exc:
        raise CoverageFileError(f"{path} cannot be read as a coverage data file: {exc}") from exc
    finally:
        conn.close()


def _open(path: Path) -> tuple[apsw.Connection, set[str]]:
    """The data file, read-only, its schema checked; its tables."""
    try:
        conn = apsw.Connection(f"file:{path}?mode=ro", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    except apsw.Error as exc:
        raise CoverageFileError(f"{path} cannot be opened as a coverage data file: {exc}") from exc
    try:
        conn.execute("PRAGMA trusted_schema=OFF")
        tables = {n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not {"coverage_schema", "file", "context", "line_bits", "arc"} <= tables:
            raise CoverageFileError(f"{path} is not a coverage.py data file (coverage.py 5 or later)")
        version = conn.execute("SELECT version FROM coverage_schema").fetchone()
        if not version or version[0] != SCHEMA_VERSION:
            raise CoverageFileError(f"{path} has coverage.py schema {version and version[0]}; "
                                    f"schema {SCHEMA_VERSION} (coverage.py 5 to 7) is read")
    except apsw.Error as exc:
        conn.close()
        raise CoverageFileError(f"{path} cannot be read as a coverage data file: {exc}") from exc
    except CoverageFileError:
        conn.close()
        raise
    return conn, tables


def lines_of_file(path: Path, measured: str) -> dict[str, set[int]]:
    """`file::Class::test` -> the lines of one measured file (its path as the data file writes it)
    it ran: what `read` gives for that file, read alone (a change's few files, at answer time)."""
    conn, _tables = _open(path)
    try:
        row = conn.execute("SELECT id FROM file WHERE path=?", (measured,)).fetchone()
        if row is None:
            return {}
        test_of, tests = _tests_of_contexts(conn)
        out: dict[str, set[int]] = {}
        rows = [(cid, numbits_to_lines(nb)) for cid, nb in
                conn.execute("SELECT context_id, numbits FROM line_bits WHERE file_id=?", row)]
        rows += [(cid, [n for n in (a, b) if n > 0]) for cid, a, b in
                 conn.execute("SELECT context_id, fromno, tono FROM arc WHERE file_id=?", row)]
        for cid, lines in rows:
            test = test_of.get(cid)
            if test is not None:
                out.setdefault(tests[test], set()).update(lines)
        return out
    except apsw.Error as exc:
        raise CoverageFileError(f"{path} cannot be read as a coverage data file: {exc}") from exc
    finally:
        conn.close()


def _tests_of_contexts(conn) -> tuple[dict[int, int | None], list[str]]:
    """context id -> the test it names (an index into the list), None for a context of no test; the tests."""
    test_of: dict[int, int | None] = {}
    index: dict[str, int] = {}
    for cid, context in conn.execute("SELECT id, context FROM context"):
        m = _CONTEXT.match(context or "")
        if m is None:
            test_of[cid] = None
            continue
        test_of[cid] = index.setdefault(f"{m['file']}::{m['name']}", len(index))
    return test_of, list(index)


def _checkout_prefix(paths: list[str], root: Path) -> str | None:
    """The folder the data file's measured paths hang from, where they name files this repository
    has (`/ci/build/src/pkg/a.py` -> `/ci/build` when `src/pkg/a.py` is here): the prefix most of
    them share, None when none does."""
    votes: dict[str, int] = {}
    for measured in paths[:200]:
        parts = measured.split("/")
        for i in range(1, len(parts) - 1):
            if (root / "/".join(parts[i:])).is_file():
                prefix = "/".join(parts[:i])
                votes[prefix] = votes.get(prefix, 0) + 1
                break
    if not votes:
        return None
    best = max(votes, key=votes.get)
    return best if votes[best] * 2 > min(len(paths), 200) else None


def _relative(measured: str, root: Path) -> str | None:
    """A measured path relative to the repository (coverage.py writes absolute ones unless told
    `relative_files`), or None outside it."""
    p = Path(measured)
    if not p.is_absolute():
        return p.as_posix() if ".." not in p.parts else None
    try:
        return Path(os.path.realpath(p)).relative_to(root).as_posix()
    except ValueError:
        try:
            return p.relative_to(root).as_posix()
        except ValueError:
            return None
