"""A unified diff (git's, or a plain `diff -u`) -> the files it changes and the lines of each side.

A diff can come from anyone (`nsccn impact --diff -`, the MCP `detect_changes` tool's `diff`), so
it is untrusted input: its size, files and hunks are capped (what is past a cap is named, never
silently dropped), a path that leaves the repository (absolute, `..`, a NUL) is refused by name,
and text that is not a diff at all is a clear error, not an empty answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from nsccn.errors import NavigatorError

MAX_DIFF_BYTES = 8 << 20  # a diff larger than this is read this far
MAX_FILES = 1_000  # files of one diff
MAX_CHANGED_LINES = 200_000  # added + deleted lines of one diff

_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_GIT_HEADER = re.compile(r"diff --git (\"(?:[^\"\\]|\\.)*\"|\S+) (\"(?:[^\"\\]|\\.)*\"|\S+)\s*\Z")
_ESCAPES = {"a": "\a", "b": "\b", "t": "\t", "n": "\n", "v": "\v", "f": "\f", "r": "\r", '"': '"', "\\": "\\"}


class DiffError(NavigatorError):
    """The text is not a diff we can read: the message says where and why."""


@dataclass
class Hunk:
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    lines: list[str] = field(default_factory=list)  # ' ', '-', '+' lines, as written (no newline)

    def deleted(self) -> list[int]:
        """Old-side line numbers this hunk removes."""
        return self._numbers("-", self.old_start, " -")

    def added(self) -> list[int]:
        """New-side line numbers this hunk adds."""
        return self._numbers("+", self.new_start, " +")

    def _numbers(self, mark: str, start: int, side: str) -> list[int]:
        out, line = [], start
        for text in self.lines:
            if text[:1] not in side:
                continue
            if text[:1] == mark:
                out.append(line)
            line += 1
        return out

    def insertion_point(self) -> int:
        """The old-side line after which a hunk that removes nothing inserts (git counts
        `-N,0` as "after line N")."""
        return self.old_start


@dataclass
class FileDiff:
    old_path: str | None  # None: the file is new
    new_path: str | None  # None: the file was deleted
    hunks: list[Hunk] = field(default_factory=list)
    binary: bool = False

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or ""

    @property
    def status(self) -> str:
        if self.old_path is None:
            return "added"
        if self.new_path is None:
            return "deleted"
        return "renamed" if self.old_path != self.new_path else "modified"


@dataclass
class ParsedDiff:
    files: list[FileDiff]
    refused: list[dict]  # {"path", "why"}: paths that leave the repository, names we cannot read
    capped: str | None = None  # what the caps left out, in words


def unquote(text: str) -> str:
    """A path as git writes it: C-quoted (`"a/\\303\\251.py"`) when it holds unusual bytes."""
    if not (len(text) >= 2 and text[0] == '"' and text[-1] == '"'):
        return text
    body, out, i = text[1:-1], bytearray(), 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if re.match(r"[0-7]{3}", body[i + 1:i + 4]):
                out.append(int(body[i + 1:i + 4], 8))
                i += 4
                continue
            out += _ESCAPES.get(nxt, nxt).encode()
            i += 2
            continue
        out += ch.encode("utf-8", "surrogateescape")
        i += 1
    return out.decode("utf-8", "replace")


def _strip(path: str, prefix: str) -> str | None:
    """A header's path without git's `a/` / `b/` prefix, a timestamp after a tab; None for /dev/null."""
    path = unquote(path.split("\t", 1)[0].rstrip() if not path.startswith('"') else path.rstrip())
    if path == "/dev/null":
        return None
    if path.startswith(prefix):
        return path[len(prefix):]
    return path


def _unsafe(path: str) -> str | None:
    """Why a path from a diff cannot be a file of the repository, or None."""
    if not path or "\x00" in path:
        return "an empty or NUL-bearing name"
    if path.startswith("/") or re.match(r"[A-Za-z]:[\\/]", path):
        return "an absolute path, outside the repository"
    if ".." in path.replace("\\", "/").split("/"):
        return "a path that leaves the repository (..)"
    if ".git" in path.split("/"):
        return "a path inside .git"
    return None


def parse_diff(text: str, max_bytes: int = MAX_DIFF_BYTES, max_files: int = MAX_FILES,
               max_lines: int = MAX_CHANGED_LINES) -> ParsedDiff:
    """The files and hunks of a unified diff. Raises DiffError on text that is not one (or a hunk
    whose counts its lines contradict); caps are notes in `capped`, not errors."""
    if not isinstance(text, str):
        raise DiffError("the diff must be text")
    capped = []
    if len(text.encode("utf-8", "surrogateescape")) > max_bytes:
        text = text.encode("utf-8", "surrogateescape")[:max_bytes].decode("utf-8", "ignore")
        text = text[: text.rfind("\n") + 1]
        capped.append(f"the diff is over {max_bytes >> 20} MiB: read up to there")
    files: list[FileDiff] = []
    refused: list[dict] = []
    cur: FileDiff | None = None
    hunk: Hunk | None = None
    left_old = left_new = 0  # lines the current hunk still has to give on each side
    n_lines = 0
    saw_header = False
    lines = text.splitlines()
    i = 0

    def close_hunk(lineno: int) -> None:
        if hunk is not None and (left_old > 0 or left_new > 0):
            raise DiffError(f"line {lineno}: the hunk at @@ -{hunk.old_start},{hunk.old_count} "
                            f"+{hunk.new_start},{hunk.new_count} @@ ends early (the diff is cut or edited)")

    def start_file(old: str | None, new: str | None) -> FileDiff | None:
        for p in (old, new):
            why = _unsafe(p) if p is not None else None
            if why:
                refused.append({"path": p, "why": why})
                return None
        fd = FileDiff(old, new)
        files.append(fd)
        return fd

    skipping = False  # inside a refused file's section
    while i < len(lines):
        line = lines[i]
        i += 1
        if hunk is not None and (left_old > 0 or left_new > 0):
            mark = line[:1]
            if mark == "\\":  # "\ No newline at end of file"
                continue
            if mark == " " or line == "":  # some tools strip the space of an empty context line
                left_old, left_new = left_old - 1, left_new - 1
                body = " " + line[1:] if line else " "
            elif mark == "-":
                left_old -= 1
                body = line
            elif mark == "+":
                left_new -= 1
                body = line
            else:
                close_hunk(i)
                continue
            if left_old < 0 or left_new < 0:
                raise DiffError(f"line {i}: more lines than the hunk header @@ -{hunk.old_start},{hunk.old_count} "
                                f"+{hunk.new_start},{hunk.new_count} @@ counts")
            if not skipping:
                hunk.lines.append(body)
                if mark in "+-":
                    n_lines += 1
            continue
        if line.startswith("\\"):
            continue
        if (hunk is not None and not skipping and line[:1] and line[:1] in "+- " and line != "-- "  # `-- `: a patch mail's signature
                and not (line.startswith("--- ") and i < len(lines) and lines[i].startswith("+++ "))):
            raise DiffError(f"line {i}: more lines than the hunk header @@ -{hunk.old_start},{hunk.old_count} "
                            f"+{hunk.new_start},{hunk.new_count} @@ counts")
        m = _GIT_HEADER.match(line) if line.startswith("diff --git ") else None
        if m or line.startswith("diff --git "):
            saw_header = True
            if len(files) >= max_files:
                capped.append(f"more than {max_files} files: the first {max_files} are read")
                break
            hunk = None
            old = new = None
            if m:
                old, new = _strip(m.group(1), "a/"), _strip(m.group(2), "b/")
            # the extended header lines until the first hunk or the next file
            binary = False
            created = deleted = False
            while i < len(lines) and not lines[i].startswith(("diff --git ", "@@ ")):
                ext = lines[i]
                if ext.startswith("rename from "):
                    old = unquote(ext[len("rename from "):])
                elif ext.startswith("rename to "):
                    new = unquote(ext[len("rename to "):])
                elif ext.startswith("new file mode"):
                    created = True
                elif ext.startswith("deleted file mode"):
                    deleted = True
                elif ext.startswith("--- "):
                    p = _strip(ext[4:], "a/")
                    created = created or p is None
                    old = p if p is not None else old
                elif ext.startswith("+++ "):
                    p = _strip(ext[4:], "b/")
                    deleted = deleted or p is None
                    new = p if p is not None else new
                elif ext.startswith(("Binary files ", "GIT binary patch")):
                    binary = True
                i += 1
            if old is None and new is None:
                raise DiffError(f"line {i}: a `diff --git` header whose paths cannot be read: {line[:200]!r}")
            cur = start_file(None if created else (old or new), None if deleted else (new or old))
            skipping = cur is None
            if cur is not None:
                cur.binary = binary
            continue
        if line.startswith("--- ") and i < len(lines) and lines[i].startswith("+++ "):
            saw_header = True  # a plain unified diff (diff -u, svn, hg): no `diff --git` line
            if len(files) >= max_files:
                capped.append(f"more than {max_files} files: the first {max_files} are read")
                break
            old_raw, new_raw = lines[i - 1][4:], lines[i][4:]
            i += 1
            both = old_raw.startswith("a/") and new_raw.startswith("b/")
            old = _strip(old_raw, "a/" if both else "\0")
            new = _strip(new_raw, "b/" if both else "\0")
            hunk = None
            cur = start_file(old, new)
            skipping = cur is None
            continue
        hm = _HUNK.match(line)
        if hm:
            if cur is None and not skipping:
                raise DiffError(f"line {i}: a hunk before any file header (---/+++ or diff --git)")
            o, oc, n, nc = hm.groups()
            hunk = Hunk(int(o), 1 if oc is None else int(oc), int(n), 1 if nc is None else int(nc))
            left_old, left_new = hunk.old_count, hunk.new_count
            if not skipping:
                cur.hunks.append(hunk)
            if n_lines > max_lines:
                capped.append(f"more than {max_lines:,} changed lines: read up to there")
                break
            continue
        # anything else between files (a commit message, `index ...` lines of a plain diff) is skipped
    if hunk is not None and (left_old > 0 or left_new > 0) and not capped:
        close_hunk(len(lines))
    if not saw_header:
        if text.strip():
            raise DiffError("this is not a unified diff: no file header (`diff --git a/x b/x`, or `--- x` then "
                            "`+++ x`) was found; give the output of `git diff` or `diff -u`")
        return ParsedDiff([], refused, "; ".join(capped) or None)
    return ParsedDiff(files, refused, "; ".join(dict.fromkeys(capped)) or None)


def apply_hunks(text_lines: list[str], hunks: list[Hunk], forward: bool) -> list[str] | None:
    """The other side of a file from one side and its hunks: `forward` makes the new side from the
    old one, else the old from the new. None when the hunks do not fit these lines (another
    version of the file)."""
    out: list[str] = []
    pos = 0  # index into text_lines
    for h in hunks:
        start = (h.old_start if forward else h.new_start)
        count = (h.old_count if forward else h.new_count)
        begin = start - 1 if count else start  # a hunk with no lines on this side comes after line `start`
        if begin < pos or begin > len(text_lines):
            return None
        out += text_lines[pos:begin]
        pos = begin
        keep, give = (" -", " +") if forward else (" +", " -")
        for body in h.lines:
            mark, content = body[:1], body[1:]
            if mark in keep:
                if pos >= len(text_lines) or text_lines[pos] != content:
                    return None
                pos += 1
            if mark in give:
                out.append(content)
    return out + text_lines[pos:]
