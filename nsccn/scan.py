"""Which files of a repository to index: ignore rules, size limits, binaries, symlinks.

Nothing here is fatal: every file that cannot be indexed is skipped and counted by reason.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from nsccn.config import Config, index_dir
from nsccn.languages import language_for

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

    def skip(self, reason: str, path: str) -> None:
        self.skipped[reason] += 1
        self.skipped_examples.setdefault(reason, path)


class IgnoreRules:
    """`.gitignore` files (nested ones apply below their directory), defaults and configured patterns."""

    def __init__(self, root: Path, config: Config):
        self.root = root
        self.config = config
        self.extra = pathspec.GitIgnoreSpec.from_lines(config.ignore_patterns) if config.ignore_patterns else None
        self._specs: dict[str, pathspec.GitIgnoreSpec | None] = {}
        idx = index_dir(root, config)
        self.index_rel = None
        try:
            self.index_rel = idx.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            pass

    def _spec_for(self, rel_dir: str) -> pathspec.GitIgnoreSpec | None:
        if rel_dir not in self._specs:
            spec = None
            if self.config.use_gitignore:
                gi = self.root / rel_dir / ".gitignore" if rel_dir else self.root / ".gitignore"
                try:
                    spec = pathspec.GitIgnoreSpec.from_lines(gi.read_text("utf-8", "replace").splitlines())
                except OSError:
                    spec = None
            self._specs[rel_dir] = spec
        return self._specs[rel_dir]

    def ignored(self, rel: str, is_dir: bool) -> bool:
        name = rel.rsplit("/", 1)[-1]
        if is_dir and (name in DEFAULT_IGNORED_DIRS or name.endswith(".egg-info") or rel == self.index_rel):
            return True
        probe = rel + "/" if is_dir else rel
        if self.extra is not None and self.extra.match_file(probe):
            return True
        # Each ancestor's .gitignore sees the path relative to itself.
        parts = rel.split("/")
        for i in range(len(parts)):
            base = "/".join(parts[:i])
            spec = self._spec_for(base)
            if spec is not None:
                sub = "/".join(parts[i:]) + ("/" if is_dir else "")
                if spec.match_file(sub):
                    return True
        return False


def is_binary(data: bytes) -> bool:
    return b"\0" in data[:8192]


def scan_repository(root: Path, config: Config) -> ScanResult:
    root = Path(root)
    real_root = root.resolve()
    rules = IgnoreRules(root, config)
    result = ScanResult()
    seen_dirs: set[str] = set()

    def walk(dir_path: Path, rel_dir: str) -> None:
        try:
            real = os.path.realpath(dir_path)
        except OSError:
            result.skip("unreadable", rel_dir or ".")
            return
        if real in seen_dirs:
            result.skip("symlink loop", rel_dir)
            return
        seen_dirs.add(real)
        try:
            entries = sorted(os.scandir(dir_path), key=lambda e: e.name)
        except OSError:
            result.skip("unreadable", rel_dir or ".")
            return
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                is_link = entry.is_symlink()
                is_dir = entry.is_dir(follow_symlinks=True)
            except OSError:
                result.skip("unreadable", rel)
                continue
            if rules.ignored(rel, is_dir):
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
                walk(Path(entry.path), rel)
                continue
            if language_for(entry.name) is None or language_for(entry.name) not in config.languages:
                continue
            try:
                st = entry.stat(follow_symlinks=True)
            except OSError:
                result.skip("unreadable", rel)
                continue
            if st.st_size > config.max_file_size:
                result.skip("too large", rel)
                continue
            if not os.access(entry.path, os.R_OK):
                result.skip("unreadable", rel)
                continue
            result.files.append(FileInfo(rel, st.st_size, st.st_mtime))

    walk(root, "")
    return result


def read_source(root: Path, rel: str, max_size: int) -> tuple[bytes | None, str | None]:
    """(bytes, None) or (None, reason to skip)."""
    try:
        with open(Path(root) / rel, "rb") as fh:
            data = fh.read(max_size + 1)
    except OSError:
        return None, "unreadable"
    if len(data) > max_size:
        return None, "too large"
    if is_binary(data):
        return None, "binary"
    return data, None
