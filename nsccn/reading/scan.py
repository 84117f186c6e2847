"""Which files of a repository to index: ignore rules, size limits, binaries, symlinks.

Nothing here is fatal: every file that cannot be indexed is skipped and counted by reason.
"""

from __future__ import annotations

import os
import re
import stat
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from nsccn.config import Config, index_dir
from nsccn.languages import TEXT, enabled, language_for, needs_head, shebang_language
from nsccn.reading.repofile import UnreadableFile, read_bytes

MAX_GITIGNORE_SIZE = 1 << 20
# A symlink to a directory of the repository already indexed under its own path: not a loop.
DIR_SYMLINK = "directory symlink inside the repository (indexed at its target)"

# Directories no one wants indexed; matched by name at any depth.
DEFAULT_IGNORED_DIRS = frozenset(
    """.git .hg .svn .nsccn __pycache__ node_modules .venv venv env .env .tox .nox .mypy_cache
    .pytest_cache .ruff_cache .eggs build dist site-packages .idea .vscode htmlcov""".split()
)


@dataclass(frozen=True, slots=True)
class FileInfo:
    path: str  # relative, forward slashes
    size: int
    mtime: float


@dataclass
class ScanResult:
    files: list[FileInfo] = field(default_factory=list)
    skipped: Counter = field(default_factory=Counter)  # reason -> count
    skipped_examples: dict[str, str] = field(default_factory=dict)  # reason -> one path
    warnings: list[str] = field(default_factory=list)  # e.g. bad .gitignore lines, each once

    def skip(self, reason: str, path: str) -> None:
        self.skipped[reason] += 1
        self.skipped_examples.setdefault(reason, path)


def compile_patterns(lines: list[str], source: str, warnings: list[str]) -> pathspec.GitIgnoreSpec | None:
    """A spec of the patterns that compile. git ignores a pattern it cannot use (`[z-a]`) and keeps
    the rest of the file, and so do we: one bad line costs that line, named in `warnings`."""
    good: list[str] = []
    for n, line in enumerate(lines, start=1):
        try:
            pathspec.GitIgnoreSpec.from_lines([line])
        except Exception as exc:  # re.error, GitIgnorePatternError, ...: pathspec's are not one type
            warnings.append(f"{source}:{n}: ignoring the bad pattern {line.strip()!r} ({exc})")
            continue
        good.append(line)
    return pathspec.GitIgnoreSpec.from_lines(good) if good else None


_GROUP = re.compile(r"\(\?P<(\w+)>")


class Patterns:
    """A compiled ignore file: `spec.match_file`, behind one regular expression that is the union
    of its patterns. Most paths match none of them, and one search of the union then answers for
    all (pathspec otherwise tries every pattern in Python). Only a path the union finds goes to
    the spec, which decides (negations, directory patterns), so the answers are the spec's."""

    __slots__ = ("spec", "_union")

    def __init__(self, spec: pathspec.GitIgnoreSpec):
        self.spec = spec
        self._union = None
        regexes = [p.regex for p in spec.patterns if p.include is not None]
        if regexes and all(isinstance(r, re.Pattern) and r.flags == re.UNICODE for r in regexes):
            # Each pattern names its directory group alike: renamed per pattern, the union compiles.
            # (A rename inside a character class only adds characters to it: still a superset.)
            alternatives = (_GROUP.sub(lambda m, i=i: f"(?P<{m.group(1)}_{i}>", r.pattern) for i, r in enumerate(regexes))
            try:
                self._union = re.compile("|".join(f"(?:{a})" for a in alternatives))
            except re.error:  # a pattern the union cannot hold: the spec alone answers
                self._union = None
        elif not regexes:  # only blank lines and comments
            self._union = re.compile(r"(?!)")

    def match(self, path: str) -> bool:
        if self._union is not None and self._union.search(path) is None:
            return False
        return self.spec.match_file(path)


class IgnoreRules:
    """`.gitignore` files (nested ones apply below their directory), defaults and configured patterns.

    `warnings` names every pattern that could not be used (file and line); it only grows."""

    def __init__(self, root: Path, config: Config):
        self.root = root
        self.config = config
        self.warnings: list[str] = []
        extra = compile_patterns(config.ignore_patterns, "config.json ignore_patterns", self.warnings)
        self.extra = Patterns(extra) if extra is not None else None
        self._specs: dict[str, Patterns | None] = {}
        idx = index_dir(root, config)
        self.index_rel = None
        try:
            self.index_rel = idx.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            pass

    def no_gitignore(self, rel_dir: str) -> None:
        """The directory's listing has no `.gitignore`: no need to try to open one."""
        self._specs.setdefault(rel_dir, None)

    def _spec_for(self, rel_dir: str) -> Patterns | None:
        if rel_dir not in self._specs:
            spec = None
            if self.config.use_gitignore:
                rel = f"{rel_dir}/.gitignore" if rel_dir else ".gitignore"
                try:  # a .gitignore can be a FIFO or a symlink out, like any file of the repository
                    data, _ = read_bytes(self.root, rel, MAX_GITIGNORE_SIZE)
                except UnreadableFile as exc:
                    if exc.reason not in ("missing", "directory"):
                        self.warnings.append(f"{rel}: not read ({exc})")
                else:
                    spec = compile_patterns(data.decode("utf-8", "replace").splitlines(), rel, self.warnings)
            self._specs[rel_dir] = Patterns(spec) if spec is not None else None
        return self._specs[rel_dir]

    def ignored(self, rel: str, is_dir: bool) -> bool:
        parts = rel.split("/")
        return self.ignored_below(rel, is_dir, ["/".join(parts[:i]) for i in range(len(parts))])

    def ignored_below(self, rel: str, is_dir: bool, ancestors: list[str]) -> bool:
        """`ignored`, given the path's ancestor directories, root first ("", "a", "a/b" for
        a/b/c): the scan keeps that list per directory instead of making it per path."""
        name = rel.rsplit("/", 1)[-1]
        if is_dir and (name in DEFAULT_IGNORED_DIRS or name.endswith(".egg-info") or rel == self.index_rel):
            return True
        probe = rel + "/" if is_dir else rel
        if self.extra is not None and self.extra.match(probe):
            return True
        # Each ancestor's .gitignore sees the path relative to itself; each is read when first needed.
        for base in ancestors:
            spec = self._specs[base] if base in self._specs else self._spec_for(base)
            if spec is not None and spec.match(probe[len(base) + 1:] if base else probe):
                return True
        return False


def is_binary(data: bytes) -> bool:
    return b"\0" in data[:8192]


# Formats that are never text, skipped by name when scanned: read, they would be found binary on
# every run (a skipped file is not remembered), which made a no-change run parse them again.
BINARY_EXTENSIONS = frozenset((
    ".png", ".jpg", ".jpeg", ".gif", ".bmp", ".ico", ".icns", ".webp", ".tif", ".tiff", ".psd",
    ".pdf", ".zip", ".gz", ".tgz", ".bz2", ".xz", ".zst", ".7z", ".rar", ".tar", ".jar", ".war", ".whl",
    ".egg", ".so", ".dylib", ".dll", ".exe", ".o", ".a", ".lib", ".obj", ".class", ".pyc", ".pyo", ".pyd",
    ".wasm", ".bin", ".db", ".sqlite", ".sqlite3", ".npy", ".npz", ".pkl", ".pickle", ".parquet",
    ".woff", ".woff2", ".ttf", ".otf", ".eot", ".mp3", ".mp4", ".wav", ".ogg", ".flac", ".avi", ".mov",
    ".mkv", ".webm", ".xls", ".xlsx", ".doc", ".docx", ".ppt", ".pptx", ".odt", ".ods",
))


BAD_NAME = "file name not valid UTF-8"


def bad_name(rel: str) -> bool:
    """A name that is not valid UTF-8 (Linux allows any bytes; Python keeps the bad ones as
    surrogates): neither SQLite nor msgpack can hold it, and one such name stopped all indexing."""
    if rel.isascii():
        return False
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def shown_name(rel: str) -> str:
    """The name as a warning can print it: its bad bytes escaped (`caf\\xe9.py`)."""
    return os.fsencode(rel).decode("utf-8", "backslashreplace")


def binary_by_name(name: str) -> bool:
    dot = name.rfind(".")
    return dot > 0 and name[dot:].lower() in BINARY_EXTENSIONS


def _shebang_language(path: str) -> str | None:
    """The language a `#!` line names, for a file without an extension (`bin/serve`)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return shebang_language(os.read(fd, 128))
    except OSError:
        return None
    finally:
        os.close(fd)


def detect_language(full_path: str, rel: str) -> str | None:
    """A file's language by its name, or by its `#!` line when the name has no extension; `text`
    when neither says (a binary file is skipped when read), except for a dotfile (`.gitignore`,
    `.env`: settings and secrets, not prose), which is not indexed. `rel` may be a path: only its
    last component is the name (a file under `.github/` is no dotfile, `app/.env` is one)."""
    name = rel.rsplit("/", 1)[-1]
    language = language_for(name)
    if language is None and needs_head(name):
        language = _shebang_language(full_path)
    return language or (None if name.startswith(".") else TEXT)


def file_by_name(full_path: str, rel: str, wanted) -> tuple[str | None, str | None]:
    """What the name alone says of a file, for the scan and for the watcher's live events alike
    (one rule, so a file indexed live is one the scan indexes): (language, None) to read it,
    (None, None) not to index it and not to count it (a dotfile, a language not enabled), or
    (None, reason) to skip and count it."""
    language = detect_language(full_path, rel)
    if language not in wanted:
        return None, None
    if language == TEXT and binary_by_name(rel.rsplit("/", 1)[-1]):
        return None, "binary"
    return language, None


def scan_repository(root: Path, config: Config) -> ScanResult:
    root = Path(root)
    real_root = root.resolve()
    rules = IgnoreRules(root, config)
    wanted = enabled(config.languages)
    result = ScanResult()
    seen_dirs: set[str] = set()
    # Directory symlinks inside the repository are walked after every real directory: what they
    # lead to is indexed under its own path, whichever name sorts first.
    linked_dirs: list[tuple[Path, str]] = []

    def walk(dir_path: Path, rel_dir: str, real: str | None = None, ancestors: list[str] | None = None) -> None:
        if real is None:  # the root, or a directory symlink: a subdirectory's is its parent's + name
            try:
                real = os.path.realpath(dir_path)
            except OSError:
                result.skip("unreadable", rel_dir or ".")
                return
        if ancestors is None:
            parts = rel_dir.split("/") if rel_dir else []
            ancestors = ["/".join(parts[:i]) for i in range(len(parts) + 1)]
        if real in seen_dirs:
            parent = os.path.realpath(dir_path.parent)
            if parent == real or parent.startswith(real + os.sep):
                result.skip("symlink loop", rel_dir)  # it leads back to a directory it is inside
            else:
                result.skip(DIR_SYMLINK, rel_dir)
            return
        seen_dirs.add(real)
        try:
            entries = sorted(os.scandir(dir_path), key=lambda e: e.name)
        except OSError:
            result.skip("unreadable", rel_dir or ".")
            return
        if not any(e.name == ".gitignore" for e in entries):
            rules.no_gitignore(rel_dir)
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                is_link = entry.is_symlink()
                is_dir = entry.is_dir(follow_symlinks=True)
            except OSError:
                result.skip("unreadable", rel)
                continue
            if rules.ignored_below(rel, is_dir, ancestors):
                continue
            if bad_name(rel):
                result.skip(BAD_NAME, shown_name(rel))
                result.warnings.append(f"{shown_name(rel)}: skipped, its {'directory ' if is_dir else ''}name is not valid UTF-8")
                continue
            if is_link:
                target = os.path.realpath(entry.path)
                if not (target == str(real_root) or target.startswith(str(real_root) + os.sep)):
                    result.skip("symlink outside repository", rel)
                    continue
                if not os.path.exists(entry.path):
                    result.skip("broken symlink", rel)
                    continue
            if is_dir:
                if is_link:
                    linked_dirs.append((Path(entry.path), rel))
                else:
                    walk(Path(entry.path), rel, os.path.join(real, entry.name), [*ancestors, rel])
                continue
            language, reason = file_by_name(entry.path, rel, wanted)
            if language is None:
                if reason is not None:
                    result.skip(reason, rel)
                continue
            try:
                st = entry.stat(follow_symlinks=True)
            except OSError:
                result.skip("unreadable", rel)
                continue
            if not stat.S_ISREG(st.st_mode):  # a FIFO named x.py: reading it would wait forever
                result.skip("not a regular file", rel)
                continue
            if st.st_size > config.max_file_size:
                result.skip("too large", rel)
                continue
            if not os.access(entry.path, os.R_OK):
                result.skip("unreadable", rel)
                continue
            result.files.append(FileInfo(rel, st.st_size, st.st_mtime))

    walk(root, "")
    while linked_dirs:  # one that leads somewhere not walked yet (an ignored directory) is walked
        walk(*linked_dirs.pop(0))
    result.warnings = list(rules.warnings) + result.warnings
    return result


def read_source(root: Path, rel: str, max_size: int) -> tuple[bytes | None, str | None]:
    """(bytes, None) or (None, reason to skip)."""
    try:
        data, _ = read_bytes(root, rel, max_size)
    except UnreadableFile as exc:
        return None, exc.reason
    if is_binary(data):
        return None, "binary"
    return data, None
