"""What the tests ran when per-test coverage was last recorded, kept beside the index: which tests
ran each entity, and each entity's fingerprint then, so a later change can be told which of its
dependents changed since (`nsccn.graph.impact` walks the graph only through those).

A coverage data file names lines of files as they were when the suite ran. They are mapped onto
entities once, as early as possible (the first `impact` after a run), using a file's text only
where it is what ran: the file on disk unchanged since the data file was written, or else HEAD's
copy of it when every line the data file says ran is code there (a shifted copy would put some on
a blank line or a comment; the common case: tests run, then files edited). Other files' entities count as changed since.

An entity's fingerprint hashes the code of its own lines (a class's header and class-level code,
not its methods'; a module's top-level code), as `nsccn.graph.inert` reads code: without comments,
a signature's annotations, layout. A method edited since does not make its class look new, and
an annotation or a comment edited since changes nothing that ran.

The map is kept in the user's state folder (`nsccn.store.trust.state_dir`), named after the
index's random id, never in the repository: a map a repository carries would be believed.
"""

from __future__ import annotations

import ast
import hashlib
import sys
import time
from array import array
from pathlib import Path

import msgspec

from nsccn.graph.inert import CodeLines
from nsccn.private import PrivatePathError, private_dir, write_private
from nsccn.reading.coverage_file import CoverageFileError, PerTestCoverage, read
from nsccn.store import Store
from nsccn.store.trust import state_dir

FORMAT = 4
DEFAULT_FILE = ".coverage"  # coverage.py's, where pytest-cov writes it


class Recorded(msgspec.Struct):
    format: int
    source: str  # the data file, relative to the root where inside it
    size: int
    mtime: float
    when: str | None  # the data file's own time of writing
    mapped_at: float
    tests: list[str]  # `file::Class::test` as the runner names them, parameters stripped
    # entity id -> the tests (indexes into `tests`) that ran its lines, as little-endian uint32s: a large
    # suite's map is read whole on every answer, and only the few entities a change reaches are unpacked
    ran: dict[str, bytes]
    fingerprints: dict[str, int]  # entity id -> the hash of its own lines' code when the suite ran
    files: dict[str, str]  # file -> its content hash when the suite ran (where known)
    measured: list[str]  # files the data file measured and that were mapped: an entity there no test ran ran in no test
    unmapped: list[str]  # measured files whose text then is not known any more: changed since
    # function or method id -> [first line, last line] when the suite ran, and measured file -> the hash of
    # each line's code then (`line_codes`, uint32s): where a change's old side holds a function's code line
    # for line as it ran, the data file's lines name the tests that ran a changed line
    spans: dict[str, list[int]] = {}
    codes: dict[str, bytes] = {}
    paths: dict[str, str] = {}  # measured file -> its path as the data file writes it


def fingerprints(path: str, data: bytes, entities: list) -> dict[str, int]:
    """Entity id -> a hash of the code of its own lines: its span less its children's spans."""
    return _prints(_code_by_line(path, data, None), entities)


def _prints(by_line: dict[int, bytes], entities: list) -> dict[str, int]:
    owner = _innermost(entities)  # a child's lines are taken from its parent
    parts: dict[str, list[bytes]] = {e.id: [] for e in entities}
    for n in sorted(owner):
        text = by_line.get(n)
        if text:
            parts[owner[n]].append(text)
    return {eid: int.from_bytes(hashlib.blake2b(b"\n".join(p), digest_size=8).digest(), "big")
            for eid, p in parts.items()}


def line_codes(path: str, data: bytes, first: int, last: int, code: CodeLines | None = None) -> list[int]:
    """A hash of each line's code, lines `first`..`last` (1-based): 0 for a line of none (blank, a comment,
    annotations alone); two lines alike read as the same code."""
    return _hashes(_code_by_line(path, data, code, first, last), first, last)


def _hashes(by_line: dict[int, bytes], first: int, last: int) -> list[int]:
    return [_line_hash(by_line[n]) if by_line.get(n) else 0 for n in range(first, last + 1)]


def _line_hash(text: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(text, digest_size=4).digest(), "little") or 1


def _code_by_line(path: str, data: bytes, code: CodeLines | None, first: int = 1, last: int | None = None) -> dict[int, bytes]:
    """Line -> its code (`CodeLines.code_by_line`); a file no grammar reads: its lines' text."""
    code = code if code is not None else CodeLines(path, data)
    last = data.count(b"\n") + 1 if last is None else last
    got = code.code_by_line(first, last)
    if got is not None:
        return got
    lines = data.split(b"\n")
    return {n: lines[n - 1].rstrip() for n in range(first, min(last, len(lines)) + 1) if lines[n - 1].strip()}


def code_lines(data: bytes) -> set[int] | None:
    """The lines a Python tracer can report as run: where a statement or an except/case clause
    starts, and every line of an expression (a call written over several lines reports them);
    None when the text does not parse."""
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError):
        return None
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.stmt, ast.ExceptHandler)):
            out.add(node.lineno)
        elif isinstance(node, (ast.expr, ast.pattern)):
            out.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return out


def _innermost(entities: list) -> dict[int, str]:
    """line -> the innermost entity holding it."""
    out: dict[int, str] = {}
    for e in sorted(entities, key=lambda e: (e.start_line, -e.end_line)):
        for n in range(e.start_line, e.end_line + 1):
            out[n] = e.id
    return out


def map_coverage(store: Store, root: Path, cov: PerTestCoverage, head_blob) -> Recorded:
    """The per-test lines of `cov` as entities, with every mappable entity's fingerprint.
    `head_blob(path)`: HEAD's copy of a file, or None."""
    from nsccn.reading.extract import content_hash, parse_file
    from nsccn.reading.repofile import UnreadableFile, read_bytes

    states = store.file_states()
    ran: dict[str, set[int]] = {}
    prints: dict[str, int] = {}
    spans: dict[str, list[int]] = {}
    codes: dict[str, bytes] = {}
    files: dict[str, str] = {}
    measured, unmapped = [], []
    for path, (indexed_hash, _size, _mtime) in states.items():
        data = None
        try:
            disk, st = read_bytes(root, path, 1 << 24)
            if st.st_mtime <= cov.mtime:
                data = disk  # unchanged since the suite ran (as far as the clock tells)
        except UnreadableFile:
            pass  # gone or unreadable now: a measured file may still map from HEAD's copy
        per_test = cov.lines.get(path)
        if data is None and per_test:
            head = head_blob(path)
            ran_lines = set().union(*per_test.values())
            code = code_lines(head) if head is not None else None
            if code is not None and ran_lines <= code:
                data = head
        if data is None:
            if per_test:
                unmapped.append(path)
            continue
        h = content_hash(data)
        entities = store.entities_in_file(path) if h == indexed_hash else list(parse_file(path, data).entities)
        files[path] = h
        by_line = _code_by_line(path, data, None)
        prints.update(_prints(by_line, entities))
        if per_test is None:
            continue
        measured.append(path)
        spans.update({e.id: [e.start_line, e.end_line] for e in entities if e.kind in ("func", "method")})
        codes[path] = _packed(_hashes(by_line, 1, data.count(b"\n") + 1), sort=False)
        owner = _innermost(entities)
        for test, lines in per_test.items():
            for eid in {owner[n] for n in lines if n in owner}:
                ran.setdefault(eid, set()).add(test)
    try:
        source = cov.path.resolve().relative_to(root).as_posix()
    except ValueError:
        source = str(cov.path)
    return Recorded(format=FORMAT, source=source, size=cov.size, mtime=cov.mtime, when=cov.when,
                    mapped_at=time.time(), tests=cov.tests, ran={k: _packed(v) for k, v in ran.items()},
                    fingerprints=prints, files=files, measured=sorted(measured), unmapped=sorted(unmapped),
                    spans=spans, codes=codes, paths={p: cov.paths[p] for p in measured if p in cov.paths})


def _packed(values, sort: bool = True) -> bytes:
    a = array("I", sorted(values) if sort else values)
    if sys.byteorder != "little":
        a.byteswap()
    return a.tobytes()


def _unpacked(data: bytes) -> list[int]:
    a = array("I")
    a.frombytes(data)
    if sys.byteorder != "little":
        a.byteswap()
    return a.tolist()


def ran_by(rec: Recorded, eid: str) -> list[int]:
    """The tests (indexes into `rec.tests`) that ran `eid`'s lines."""
    return _unpacked(rec.ran.get(eid, b""))


def codes_then(rec: Recorded, path: str, first: int, last: int) -> list[int] | None:
    """`line_codes` of a measured file's lines `first`..`last` when the suite ran (None: not kept)."""
    data = rec.codes.get(path)
    return None if data is None else _unpacked(data[4 * (first - 1) : 4 * last])


def _kept_path(store: Store) -> Path | None:
    index_id = store.get_meta("index_id")
    return state_dir() / "coverage" / f"{index_id}.msgpack" if index_id else None


_MEMO: dict[Path, tuple[tuple[int, int], Recorded]] = {}  # a server's answers read a kept map once


def _kept(kept: Path) -> Recorded:
    st = kept.stat()
    hit = _MEMO.get(kept)
    if hit is None or hit[0] != (st.st_size, st.st_mtime_ns):
        _MEMO[kept] = ((st.st_size, st.st_mtime_ns), msgspec.msgpack.decode(kept.read_bytes(), type=Recorded))
    return _MEMO[kept][1]


def recorded(store: Store, root: Path, path: Path | None, head_blob) -> tuple[Recorded | None, str | None]:
    """The recorded coverage for `path` (default: `.coverage` at the root, when it is there): the
    kept map when it was made from this very data file, else mapped now and kept. (map, a note)."""
    given = path is not None
    path = path if given else root / DEFAULT_FILE
    if not path.is_file():
        return None, (f"no coverage data file at {path}" if given else None)
    st = path.stat()
    kept = _kept_path(store)
    if kept is not None and kept.is_file():
        try:
            old = _kept(kept)
            if old.format == FORMAT and old.size == st.st_size and old.mtime == st.st_mtime:
                return old, None
        except (msgspec.DecodeError, msgspec.ValidationError, OSError):
            pass  # made by another version, or damaged: map again
    try:
        cov = read(path, root)
    except CoverageFileError as exc:
        return None, f"per-test coverage not used: {exc}"
    rec = map_coverage(store, root, cov, head_blob)
    if kept is not None:
        try:
            private_dir(kept.parent)
            write_private(kept, msgspec.msgpack.encode(rec))
        except (OSError, PrivatePathError):
            pass  # kept or not, this answer has it
    return rec, None
