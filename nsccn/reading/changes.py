"""Where a change comes from: the diff and both sides of every file it touches.

A change is a unified diff plus a way to read each file as it was (`old`) and as it is (`new`):
the working tree against HEAD (untracked files included, as new), the staged changes, everything
since a branch point (`base`), one commit, or a diff given as text (stdin, the MCP tool's `diff`),
whose other side is rebuilt from the working tree by applying its hunks. Every git call is made
by `nsccn.reading.git.git_command` (the trust boundary, docs/security.md).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from nsccn.reading.diff import MAX_DIFF_BYTES, DiffError, FileDiff, ParsedDiff, apply_hunks, parse_diff
from nsccn.errors import NavigatorError, said
from nsccn.reading.git import git_command

GIT_TIMEOUT_S = 60
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # git's id of the empty tree (a root commit's parent)
MAX_UNTRACKED = 200  # new files not yet added to git, read as added


@dataclass
class Change:
    source: str  # the change in words ("the working tree against HEAD")
    diff: ParsedDiff
    old: Callable[[FileDiff], bytes | None]  # a file as it was (None: unknown or not a file then)
    new: Callable[[FileDiff], bytes | None]
    notes: list[str]


def _start(root: Path, *args: str) -> subprocess.Popen:
    cmd, env = git_command(root, *args)
    try:
        return subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as exc:
        raise NavigatorError(f"cannot run git: {exc.strerror or exc}") from None


def _finish(proc: subprocess.Popen, what: str, limit: int = MAX_DIFF_BYTES) -> tuple[bytes, bool]:
    try:
        out = proc.stdout.read(limit + 1)
        cut = len(out) > limit
        if cut:
            proc.kill()
        _, err = proc.communicate(timeout=GIT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise NavigatorError(f"git {what} took over {GIT_TIMEOUT_S} s") from None
    if not cut and proc.returncode != 0:
        first = (err.decode("utf-8", "replace").strip().splitlines() or ["failed"])[0]
        raise NavigatorError(f"git {what}: {first[:300]}")
    return out[:limit], cut


def _git(root: Path, *args: str, limit: int = MAX_DIFF_BYTES) -> tuple[bytes, bool]:
    """(stdout up to `limit` bytes, whether it was cut) of a git command; NavigatorError with git's
    own first line when it fails."""
    return _finish(_start(root, *args), args[0], limit)


def _revision(root: Path, rev: str, what: str) -> str:
    """A commit id for a revision the user named; never an option (`--output=...`)."""
    if not isinstance(rev, str) or not rev.strip():
        raise NavigatorError(f"{what} is empty: name a commit, a branch or a tag")
    rev = rev.strip()
    if rev.startswith("-") or any(c in rev for c in "\x00\n\r") or len(rev) > 256:
        raise NavigatorError(f"{what} {said(rev)} is not a revision")
    try:
        out, _ = _git(root, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    except NavigatorError:
        raise NavigatorError(f"{what} {said(rev)} names no commit of this repository") from None
    return out.decode().strip()


def _work_tree(root: Path) -> str:
    """HEAD's commit id (the empty tree before the first commit), or why this is no work tree."""
    try:
        out, _ = _git(root, "rev-parse", "--is-inside-work-tree", "HEAD")
        lines = out.decode().split()
        if lines[:1] == ["true"] and len(lines) == 2:
            return lines[1]
    except NavigatorError:
        pass
    try:
        out, _ = _git(root, "rev-parse", "--is-inside-work-tree")
    except NavigatorError:
        out = b""
    if out.strip() != b"true":
        raise NavigatorError(f"{root} is not a git work tree: give the change as a diff (--diff -)")
    return EMPTY_TREE  # no commit yet: everything is new


def _blob(root: Path, rev: str, path: str, max_size: int) -> bytes | None:
    """A file as a commit (or the staging area, rev "") holds it; None when it is not there or too big."""
    spec = f"{rev}:{path}" if rev is not None else f":{path}"
    try:
        out, cut = _git(root, "cat-file", "blob", spec, limit=max_size)
    except NavigatorError:
        return None
    return None if cut else out


def head_copy(root: Path, path: str, max_size: int) -> bytes | None:
    """A file as HEAD holds it; None outside a work tree, where HEAD lacks it, or when too big."""
    return _blob(root, "HEAD", path, max_size)


def tracked(root: Path, path: str) -> bool:
    """Whether git tracks the file (False outside a work tree)."""
    try:
        out, _ = _git(root, "ls-files", "--", path)
    except NavigatorError:
        return False
    return bool(out.strip())


def _disk(root: Path, path: str, max_size: int) -> bytes | None:
    from nsccn.reading.repofile import UnreadableFile, read_bytes

    try:
        return read_bytes(root, path, max_size)[0]
    except UnreadableFile:
        return None


DIFF_ARGS = ("diff", "--no-color", "--no-ext-diff", "--no-textconv", "-M", "--src-prefix=a/", "--dst-prefix=b/")


def from_git(root: Path, staged: bool = False, base: str | None = None, commit: str | None = None,
             max_size: int = 1 << 20, skip: tuple[str, ...] = (".nsccn/",)) -> Change:
    """The change git knows: the working tree against HEAD (default), the staged changes, the
    working tree against the point where it left `base`, or one commit against its first parent.
    `skip`: folders whose untracked files are not the user's change (the index's)."""
    head = _work_tree(root)
    notes: list[str] = []
    untracked: list[str] = []
    others = None
    if commit is not None:
        sha = _revision(root, commit, "commit")
        try:
            parent = _git(root, "rev-parse", "--verify", "--quiet", f"{sha}^1")[0].decode().strip()
        except NavigatorError:
            parent = EMPTY_TREE  # a root commit: everything in it is new
        old_rev, new_rev, args = parent, sha, (parent, sha)
        source = f"commit {sha[:12]} against its first parent"
    elif base is not None:
        sha = _revision(root, base, "base")
        try:
            point = _git(root, "merge-base", sha, head)[0].decode().strip()
        except NavigatorError:
            raise NavigatorError(f"base {said(base)} shares no history with HEAD") from None
        old_rev, new_rev, args = point, None, (point,)
        source = f"the working tree against {point[:12]} (where it left {base.strip()})"
    elif staged:
        old_rev, new_rev, args = head, "", ("--cached", head)
        source = "the staged changes against HEAD"
    else:
        old_rev, new_rev, args = head, None, (head,)
        source = "the working tree against HEAD"
        others = _start(root, "ls-files", "--others", "--exclude-standard", "-z")  # walks the tree beside the diff
    text, cut = _git(root, *DIFF_ARGS, *args, "--")
    if others is not None:
        out, _ = _finish(others, "ls-files", 1 << 20)
        # new files the user made, not our own index (`skip`: its directory, when inside the tree)
        untracked = [p for p in out.decode("utf-8", "replace").split("\0") if p and not p.startswith(skip)]
        if len(untracked) > MAX_UNTRACKED:
            notes.append(f"{len(untracked)} untracked files: the first {MAX_UNTRACKED} are read as new")
            untracked = untracked[:MAX_UNTRACKED]
    parsed = parse_diff(text.decode("utf-8", "surrogateescape"))
    if cut:
        parsed.capped = "; ".join(filter(None, [parsed.capped, f"the diff is over {MAX_DIFF_BYTES >> 20} MiB: "
                                                "read up to there"]))
    for p in untracked:
        parsed.files.append(FileDiff(None, p))

    news: dict[int, bytes | None] = {}

    def new(fd: FileDiff) -> bytes | None:
        if fd.new_path is None:
            return None
        if id(fd) not in news:
            news[id(fd)] = (_disk(root, fd.new_path, max_size) if new_rev is None  # the working tree
                            else _blob(root, new_rev or None, fd.new_path, max_size))
        return news[id(fd)]

    def old(fd: FileDiff) -> bytes | None:
        if fd.old_path is None:
            return None
        now = new(fd)
        if now is not None and not fd.binary:  # git's own diff undone: no second read of the repository
            lines = apply_hunks(_lines(now), fd.hunks, forward=False)
            if lines is not None:
                return ("\n".join(lines) + "\n").encode()
        return _blob(root, old_rev, fd.old_path, max_size)

    return Change(source, parsed, old, new, notes)


def from_text(root: Path, text: str, max_size: int = 1 << 20) -> Change:
    """A diff given as text. Its files are read from the working tree: as the new side when the
    diff's added and context lines are there (`git diff` of edits made), else as the old side when
    its removed and context lines are (a patch not applied yet); the other side is rebuilt from the
    hunks. When neither fits, the lines of the diff are mapped as they are, with a note."""
    if isinstance(text, str) and not text.strip():
        raise DiffError("the diff is empty: nothing changed (pipe `git diff` or a patch in)")
    parsed = parse_diff(text)
    notes: list[str] = []
    sides: dict[int, tuple[bytes | None, bytes | None]] = {}

    def both(fd: FileDiff) -> tuple[bytes | None, bytes | None]:
        key = id(fd)
        if key not in sides:
            sides[key] = _rebuild(root, fd, max_size, notes)
        return sides[key]

    return Change("the diff given", parsed, lambda fd: both(fd)[0], lambda fd: both(fd)[1], notes)


def _lines(data: bytes) -> list[str]:
    return data.decode("utf-8", "replace").splitlines()


def _rebuild(root: Path, fd: FileDiff, max_size: int, notes: list[str]) -> tuple[bytes | None, bytes | None]:
    if fd.binary:
        return None, None
    here_new = _disk(root, fd.new_path, max_size) if fd.new_path else None
    if fd.new_path and here_new is not None:
        old_lines = apply_hunks(_lines(here_new), fd.hunks, forward=False)
        if old_lines is not None:  # the diff is of edits already made
            return ("\n".join(old_lines) + "\n").encode() if fd.old_path else None, here_new
    here_old = _disk(root, fd.old_path, max_size) if fd.old_path else None
    if fd.old_path and here_old is not None:
        new_lines = apply_hunks(_lines(here_old), fd.hunks, forward=True)
        if new_lines is not None:  # a patch not applied yet
            return here_old, ("\n".join(new_lines) + "\n").encode() if fd.new_path else None
    if fd.old_path is None and fd.new_path:  # a new file that is not here: the diff holds all of it
        return None, ("\n".join(ln[1:] for h in fd.hunks for ln in h.lines) + "\n").encode()
    notes.append(f"{fd.path}: the diff does not fit the file in the working tree (another version?): "
                 "its lines are mapped onto the indexed entities as they are")
    return None, None
