"""The repository's git history as evidence for ranking: which files and functions past commits
changed, and what their messages said (the "similar past fixes" signal of BugLocator and of
Ye, Bunescu and Liu's learning-to-rank for bug reports).

Stored in the index (tables `commits`, `commit_changes`, `commits_fts`), filled incrementally:
only commits not seen yet are read (`git log OLD..NEW`), the newest `max_commits` are kept.
A repository without git history simply has none; nothing requires it. Functions come from the
hunk headers git writes (`@@ -12,3 +12,4 @@ def name(...)`), with git's built-in function
patterns switched on per extension, so no language is special-cased here.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import math
import os
import re
import stat
import subprocess
import tempfile
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from nsccn.reading.git import git_command
from nsccn.store import Store
from nsccn.text import index_terms

_log = logging.getLogger(__name__)
MAX_COMMITS = 3000  # the newest commits kept: old history says little about where bugs are now
SIMILAR_COMMITS = 50  # past commits whose messages are compared with a query
# git's built-in hunk-header patterns ("diff drivers") per extension: names of enclosing functions.
_DIFF_DRIVERS = {
    "py": "python", "go": "golang", "rs": "rust", "java": "java", "js": "javascript", "jsx": "javascript",
    "ts": "javascript", "tsx": "javascript", "c": "cpp", "h": "cpp", "cc": "cpp", "cpp": "cpp", "hpp": "cpp",
    "cs": "csharp", "rb": "ruby", "php": "php", "kt": "kotlin", "ex": "elixir", "exs": "elixir",
}
_FIX = re.compile(
    r"\b(fix(e[sd]|ing)?|bug(s|fix)?|issue|error|crash(es|ed)?|regression|fail(s|ed|ure|ing)?|broken|"
    r"wrong|incorrect|exception|resolve[sd]?|close[sd]?|repair|patch)\b|#\d+",
    re.IGNORECASE,
)
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@ ?(.*)$")
_DEF_KEYWORD = re.compile(
    r"\b(?:def|class|func|fn|function|struct|interface|trait|impl|enum|module|sub)\s+(?:\([^)]*\)\s*)?([A-Za-z_]\w*)"
)
_CALL_NAME = re.compile(r"([A-Za-z_]\w*)\s*\(")
# Each commit as `\0<sha> <time>\0<message>\0` then its diff (or file names): a message cannot hold
# a NUL (git ends it there), nor can a line of the diff begin with one, so a message can forge
# neither a commit nor a change (it could with the old \x1f separators and a fake diff header).
LOG_FORMAT = "--format=%x00%H %ct%x00%B%x00"
MAX_MESSAGE = 16_384  # characters of a message stored (a 30 MB message was stored whole)
MAX_CHANGES = 2_000  # (file, function) rows stored per commit; n_files still counts every file
_MAX_LINE = 4_096  # bytes kept of one diff header line (a path, a hunk header)
_MAX_HEADER = 200  # bytes of `<sha> <time>`: more is not git's output


def is_fix_message(message: str) -> bool:
    """Whether a commit message reads like a bug fix."""
    return _FIX.search(message) is not None


def hunk_function(context: str) -> str | None:
    """The name of the definition a hunk header shows (`def foo(x):`, `func (r *T) Foo() {`, ...)."""
    m = _DEF_KEYWORD.search(context)
    if m:
        return m.group(1)
    m = _CALL_NAME.search(context)
    return m.group(1) if m else None


@dataclass
class Commit:
    sha: str
    time: int
    message: str
    changes: dict[str, set[str]] = field(default_factory=dict)  # path -> names of changed functions
    n_files: int = 0  # files it changed, all of them (`changes` holds at most MAX_CHANGES rows)


_PATCH_LINES = (b"diff --git ", b"+++ ", b"--- ", b"@@")


class _CommitReader:
    """One commit of `git log` output, fed its lines after the message: the files and functions
    it changed, at most MAX_CHANGES rows kept."""

    def __init__(self, header: bytes, patch: bool):
        sha, _, when = header.decode("ascii", "replace").partition(" ")
        self.commit = Commit(sha.strip(), int(when) if when.strip().isdigit() else 0, "")
        self.message = bytearray()
        self.patch = patch
        self.path: str | None = None
        self.in_header = False  # between `diff --git` and a file's first hunk: where +++/--- name it
        self.rows = 0

    def add_message(self, data: bytes) -> None:
        room = MAX_MESSAGE * 4 - len(self.message)  # UTF-8: 4 bytes a character at most
        if room > 0:
            self.message += data[:room]

    def _file(self, path: str) -> None:
        changes = self.commit.changes
        if path not in changes:
            self.commit.n_files += 1
            if self.rows < MAX_CHANGES:
                changes[path] = set()
                self.rows += 1

    def line(self, raw: bytes) -> None:
        if not self.patch:
            name = raw.decode("utf-8", "replace").strip()
            if name:
                self._file(name)
            return
        if raw.startswith(b"diff --git "):
            self.path, self.in_header = None, True
        elif raw.startswith(b"@@"):
            # Content lines (+..., -...) follow: a `+++ b/x` among them is an added `++ b/x`.
            self.in_header = False
            names = self.commit.changes.get(self.path) if self.path is not None else None
            m = _HUNK.match(raw.decode("utf-8", "replace")) if names is not None else None
            name = hunk_function(m.group(1)) if m else None
            if name and name not in names and self.rows < MAX_CHANGES:
                names.add(name)
                self.rows += 1
        elif self.in_header and raw.startswith(b"+++ "):
            target = raw[4:].decode("utf-8", "replace")
            self.path = target[2:] if target.startswith("b/") else None
            if self.path is not None:
                self._file(self.path)
        elif self.in_header and raw.startswith(b"--- ") and self.path is None:
            source = raw[4:].decode("utf-8", "replace")
            if source.startswith("a/"):  # a deleted file: its old path
                self.path = source[2:]
                self._file(self.path)

    def done(self) -> Commit:
        self.commit.message = bytes(self.message).decode("utf-8", "replace").strip()[:MAX_MESSAGE]
        return self.commit


def read_log(blocks: Iterable[bytes], patch: bool = True) -> Iterator[Commit]:
    """The commits of `git log LOG_FORMAT` output (`-p -U0` when `patch`, else `--name-only`) as
    it arrives in blocks. Memory stays bounded whatever the output: of a message only
    MAX_MESSAGE is kept, of the diff only what its header lines say (each line cut at
    _MAX_LINE), never its content lines."""
    buf = b""
    i = 0
    state = "start"  # start, message, lines
    reader: _CommitReader | None = None
    at_line_start = False
    for block in itertools.chain(blocks, [None]):
        final = block is None
        buf = buf[i:] + (block or b"")
        i = 0
        while i < len(buf):
            if state == "start" or (state == "lines" and at_line_start and buf[i:i + 1] == b"\0"):
                # A commit begins: `\0<sha> <time>\0` (no line of a diff starts with a NUL).
                if buf[i:i + 1] != b"\0":  # whatever precedes the first commit
                    i += 1
                    continue
                j = buf.find(b"\0", i + 1, i + _MAX_HEADER)
                if j < 0:
                    if len(buf) - i >= _MAX_HEADER:
                        raise ValueError("git log output is not in the expected format")
                    break
                if reader is not None:
                    yield reader.done()
                reader, i, state = _CommitReader(buf[i + 1:j], patch), j + 1, "message"
            elif state == "message":
                j = buf.find(b"\0", i)
                reader.add_message(buf[i:len(buf) if j < 0 else j])
                if j < 0:
                    i = len(buf)
                    break
                i, state, at_line_start = j + 1, "lines", False  # then the rest of the format's line
            else:
                if at_line_start:
                    k = buf.find(b"\n", i, i + _MAX_LINE)
                    if k < 0 and len(buf) - i < _MAX_LINE and not final:
                        break  # the line may be one to read: wait for its end
                    end = k if k >= 0 else min(len(buf), i + _MAX_LINE)
                    if end > i and (not patch or buf.startswith(_PATCH_LINES, i)):
                        reader.line(buf[i:end])
                    if k >= 0:
                        i = k + 1
                        continue
                    i, at_line_start = end, False  # a long line: the rest of it is skipped
                k = buf.find(b"\n", i)
                if k < 0:
                    i = len(buf)
                    break
                i, at_line_start = k + 1, True
    if reader is not None:
        yield reader.done()


def parse_log(text: str | bytes) -> list[Commit]:
    """Parse `git log LOG_FORMAT -p -U0` output: each commit's files and the functions its hunks are in."""
    return list(read_log([text.encode() if isinstance(text, str) else text]))


def parse_name_only(text: str | bytes) -> list[Commit]:
    """Parse `git log LOG_FORMAT --name-only` output: files, no functions."""
    return list(read_log([text.encode() if isinstance(text, str) else text], patch=False))


def _git(gitdir: Path, *args: str, config: tuple[str, ...] = ()) -> str:
    cmd, env = git_command(gitdir, *args, config=config)
    proc = subprocess.run(cmd, capture_output=True, env=env, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.decode(errors="replace").strip()[:2000] or f"git {args[0]} failed")
    return proc.stdout.decode("utf-8", errors="replace")


def _git_blocks(gitdir: Path, *args: str, config: tuple[str, ...] = (), size: int = 1 << 20) -> Iterator[bytes]:
    """git's output as it comes, in blocks: a long `git log -p` (69 MB for sympy's newest 3,000
    commits) is never held whole. RuntimeError after the output when git fails."""
    cmd, env = git_command(gitdir, *args, config=config)
    with tempfile.TemporaryFile() as err:  # a file, not a pipe: a chatty stderr cannot block git
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, env=env, stdin=subprocess.DEVNULL)
        try:
            while block := proc.stdout.read(size):
                yield block
        finally:
            proc.stdout.close()
            returncode = proc.wait()
        if returncode != 0:
            err.seek(0)
            what = next((a for a in args if a.isalpha()), "")
            raise RuntimeError(err.read(2000).decode(errors="replace").strip() or f"git {what} failed")


def read_commits(gitdir: Path, head: str, since: str | None = None, max_commits: int = MAX_COMMITS) -> list[Commit]:
    """Commits reachable from `head` (and not from `since`), newest first, merges left out."""
    revs = head if since is None else f"{since}..{head}"
    with tempfile.NamedTemporaryFile("w", suffix=".gitattributes", delete=False) as fh:
        fh.write("".join(f"*.{ext} diff={driver}\n" for ext, driver in _DIFF_DRIVERS.items()))
    try:
        # A small delta cache and small windows of the packs mapped: git's own memory (sympy: 182 ->
        # 93 MB, then 62 with the windows) for the same CPU; it runs beside the parse (`start_update`).
        return list(read_log(_git_blocks(
            gitdir, "log", f"-n{max_commits}", "--no-merges", "--no-renames", "-p", "-U0", LOG_FORMAT, revs,
            config=("core.deltaBaseCacheLimit=16m", "core.packedGitLimit=16m", "core.packedGitWindowSize=1m",
                    f"core.attributesFile={fh.name}"),
        )))
    except RuntimeError:
        # A clone missing some blobs (partial or damaged) cannot show diffs: the files each commit
        # changed still come from its trees, without the functions.
        return list(read_log(_git_blocks(
            gitdir, "log", f"-n{max_commits}", "--no-merges", "--no-renames", "--name-only", LOG_FORMAT, revs),
            patch=False))
    finally:
        os.unlink(fh.name)


def resolve_head(gitdir: Path, rev: str = "HEAD") -> str | None:
    try:
        return _git(gitdir, "rev-parse", "--verify", "-q", f"{rev}^{{commit}}").strip() or None
    except RuntimeError:
        return None


def git_dir_of(root: Path) -> Path | None:
    """The repository `root` is a work tree of, if any, and if its git directory is its own.

    A `.git` that is a symlink, or a `.git` directory with a `commondir` file, would have git read
    another repository (its refs, its commit messages, into this index): refused, with a warning.
    A `.git` file (`gitdir: ...`) is a linked work tree's or a submodule's, and is followed only
    when it is one: the work tree's administrative directory points back at this `.git` file,
    or the submodule's lives under an enclosing repository's `.git/modules/`."""
    root = Path(root)
    dotgit = root / ".git"
    try:
        st = os.lstat(dotgit)
    except OSError:
        return None
    why = None
    if stat.S_ISLNK(st.st_mode):
        why = "is a symlink"
    elif stat.S_ISDIR(st.st_mode):
        if os.path.lexists(dotgit / "commondir"):
            why = "has a commondir file (it would read another repository)"
    elif stat.S_ISREG(st.st_mode):
        why = _foreign_gitfile(root, dotgit)
    else:
        why = "is not a directory or a file"
    if why:
        _log.warning("git history not read: %s %s", dotgit, why)
        return None
    return root


def _foreign_gitfile(root: Path, dotgit: Path) -> str | None:
    """Why a `gitdir:` file leads to a git directory not this work tree's (None: it is its own)."""
    try:
        with open(dotgit, "rb") as fh:
            text = fh.read(4096).decode("utf-8", "replace").strip()
    except OSError:
        return "cannot be read"
    if not text.startswith("gitdir:"):
        return "is not a gitdir file"
    target = Path(text[len("gitdir:"):].strip())
    target = (target if target.is_absolute() else root / target).resolve()
    try:  # a linked work tree: its administrative directory names this .git file
        back = (target / "gitdir").read_text(encoding="utf-8", errors="replace").strip()
        if Path(back).resolve() == dotgit.resolve():
            return None
    except OSError:
        pass
    for parent in root.resolve().parents:  # a submodule: under an enclosing repository's .git/modules
        if target.is_relative_to(parent / ".git" / "modules"):
            return None
    return f"points at {target}, which is neither a linked work tree's nor a submodule's git directory of it"


def update_for_root(store: Store, root: Path, enabled: bool = True, max_commits: int = MAX_COMMITS) -> HistorySummary:
    """The indexers' step: the history of the git work tree at `root`, if it is one. Never fatal:
    a repository without git, or a git that fails, leaves the history as it was (logged)."""
    gitdir = git_dir_of(root) if enabled else None
    if gitdir is None:
        return HistorySummary(None)
    try:
        return update_history(store, gitdir, "HEAD", max_commits)
    except (RuntimeError, OSError, ValueError) as exc:
        _log.warning("git history not indexed: %s", exc)
        return HistorySummary(None)


@dataclass
class HistorySummary:
    head: str | None
    added: int = 0
    rebuilt: bool = False
    kept: int = 0


def update_history(store: Store, gitdir: Path | None, head: str = "HEAD", max_commits: int = MAX_COMMITS) -> HistorySummary:
    """Bring the stored history to `head`: only commits not seen yet are read; if `head` does not
    descend from what is stored (a checkout moved back, a rebase), the history is rebuilt.
    Without git (no gitdir, no such commit) the history is left as it is."""
    update = read_update(gitdir, store.get_meta("history_head"), head, max_commits)
    return apply_update(store, update, max_commits)


@dataclass
class HistoryUpdate:
    """What git said, not yet stored: the commits after `since` up to `sha` (`since` None: all)."""

    sha: str | None = None
    since: str | None = None
    rebuilt: bool = False
    commits: list[Commit] | None = None  # None: nothing to store (no git, or already at `sha`)


def read_update(gitdir: Path | None, known: str | None, head: str = "HEAD",
                max_commits: int = MAX_COMMITS) -> HistoryUpdate:
    """The git half of `update_history`: reads git, never the store (safe in a thread)."""
    if gitdir is None:
        return HistoryUpdate()
    sha = resolve_head(Path(gitdir), head)
    if sha is None or known == sha:
        return HistoryUpdate(sha)
    since, rebuilt = known, False
    if known is not None:
        try:
            _git(Path(gitdir), "merge-base", "--is-ancestor", known, sha)
        except RuntimeError:
            since, rebuilt = None, True
    return HistoryUpdate(sha, since, rebuilt, read_commits(Path(gitdir), sha, since, max_commits))


def apply_update(store: Store, update: HistoryUpdate, max_commits: int = MAX_COMMITS) -> HistorySummary:
    """The store half of `update_history`: writes what `read_update` read."""
    if update.sha is None:
        return HistorySummary(None)
    if update.commits is None:
        return HistorySummary(update.sha, kept=_count(store))
    with store.conn:
        if update.since is None:
            _clear(store)
        _insert(store, update.commits)
        _prune(store, max_commits)
        store.set_meta("history_head", update.sha)
    return HistorySummary(update.sha, added=len(update.commits), rebuilt=update.rebuilt, kept=_count(store))


def start_update(store: Store, root: Path, max_commits: int = MAX_COMMITS) -> Callable[[Store], HistorySummary]:
    """Begin `update_for_root`'s git reading now, in a thread (git runs in its own process), so
    an index run's own work hides it; the returned function waits for it and stores it. If the
    stored history moved meanwhile, or git failed, it does the whole update then, as
    `update_for_root` would."""
    known = store.get_meta("history_head")
    gitdir = git_dir_of(root)
    box: dict[str, HistoryUpdate] = {}

    def read() -> None:
        # A git that fails leaves nothing here: `finish` then runs the whole update, which logs why.
        with contextlib.suppress(RuntimeError, OSError, ValueError):
            box["update"] = read_update(gitdir, known, "HEAD", max_commits)

    thread = threading.Thread(target=read, name="history-read", daemon=True)
    thread.start()

    def finish(target: Store) -> HistorySummary:
        thread.join()
        update = box.get("update")
        if update is None or target.get_meta("history_head") != known:
            return update_for_root(target, root, max_commits=max_commits)
        return apply_update(target, update, max_commits)

    return finish


def _count(store: Store) -> int:
    return store.conn.execute("SELECT count(*) FROM commits").fetchone()[0]


def _clear(store: Store) -> None:
    c = store.conn
    c.execute("DELETE FROM commits_fts")
    c.execute("DELETE FROM commit_changes")
    c.execute("DELETE FROM commits")


def _insert(store: Store, commits: list[Commit]) -> None:
    c = store.conn
    for cm in commits:
        if c.execute("SELECT 1 FROM commits WHERE sha=?", (cm.sha,)).fetchone():
            continue
        c.execute(
            "INSERT INTO commits(sha, time, message, is_fix, n_files) VALUES(?,?,?,?,?)",
            (cm.sha, cm.time, cm.message, int(is_fix_message(cm.message)), max(cm.n_files, len(cm.changes))),
        )
        rowid = c.last_insert_rowid()
        c.execute("INSERT INTO commits_fts(rowid, message) VALUES(?,?)", (rowid, index_terms(cm.message, unique=False)))
        c.executemany(
            "INSERT INTO commit_changes(commit_id, path, name) VALUES(?,?,?)",
            [(rowid, path, name) for path, names in cm.changes.items() for name in ("", *sorted(names))],
        )


def _prune(store: Store, max_commits: int) -> None:
    c = store.conn
    old = [r for (r,) in c.execute("SELECT rowid FROM commits ORDER BY time DESC, rowid DESC LIMIT -1 OFFSET ?",
                                   (max_commits,))]
    for i in range(0, len(old), 500):
        chunk = old[i:i + 500]
        marks = ",".join("?" * len(chunk))
        c.execute(f"DELETE FROM commits_fts WHERE rowid IN ({marks})", chunk)
        c.execute(f"DELETE FROM commit_changes WHERE commit_id IN ({marks})", chunk)
        c.execute(f"DELETE FROM commits WHERE rowid IN ({marks})", chunk)


# -- evidence for ranking -------------------------------------------------------------------------


@dataclass
class HistoryEvidence:
    """Per file and per (file, function name): how often and how recently past commits changed
    it, how many of them were fixes, and how similar their messages are to the query."""

    present: bool  # the index holds history at all (otherwise every feature is missing, not zero)
    file_commits: dict[str, int] = field(default_factory=dict)
    file_fixes: dict[str, int] = field(default_factory=dict)
    file_age_days: dict[str, float] = field(default_factory=dict)  # since its last change, to the newest commit
    file_similar: dict[str, float] = field(default_factory=dict)
    fn_commits: dict[tuple[str, str], int] = field(default_factory=dict)
    fn_fixes: dict[tuple[str, str], int] = field(default_factory=dict)
    fn_similar: dict[tuple[str, str], float] = field(default_factory=dict)


def commit_count(store: Store) -> int:
    """Commits the index holds (0 for an index without history, or from before it existed)."""
    try:
        return _count(store)
    except Exception:
        return 0


def has_history(store: Store) -> bool:
    try:
        return store.conn.execute("SELECT 1 FROM commits LIMIT 1").fetchone() is not None
    except Exception:  # an index from before the history tables, opened read-only
        return False


def evidence(store: Store, terms: list[str], paths: list[str], before: int | None = None) -> HistoryEvidence:
    """History evidence for the candidate files `paths` and every function name in them; with
    `before` (a commit time) only older commits count (training on the repository's own history
    must not see the commit it asks about)."""
    if not paths or not has_history(store):
        return HistoryEvidence(False)
    ev = HistoryEvidence(True)
    c = store.conn
    cutoff = (1 << 62) if before is None else before
    newest = c.execute("SELECT max(time) FROM commits WHERE time < ?", (cutoff,)).fetchone()[0] or 0
    marks = ",".join("?" * len(paths))
    for path, name, n, fixes, last in c.execute(
        "SELECT cc.path, cc.name, count(*), sum(cm.is_fix), max(cm.time) FROM commit_changes cc "
        f"JOIN commits cm ON cm.rowid = cc.commit_id WHERE cc.path IN ({marks}) AND cm.time < ? "
        "GROUP BY cc.path, cc.name",
        (*paths, cutoff),
    ):
        if name == "":
            ev.file_commits[path] = n
            ev.file_fixes[path] = fixes or 0
            ev.file_age_days[path] = max(0.0, (newest - last) / 86400.0)
        else:
            ev.fn_commits[(path, name)] = n
            ev.fn_fixes[(path, name)] = fixes or 0
    if terms:
        ev.file_similar, ev.fn_similar = similar_fixes(store, terms, paths, before)
    return ev


def semantic_fixes(store: Store, sims: dict[int, float], n_files: dict[int, int], paths: list[str],
                   top: list[int]) -> dict[str, tuple[float, float, float]]:
    """What past commits whose messages read like a query say of the files `paths`, given each
    commit's similarity to the query (`sims`: commits.rowid -> cosine of the messages' and the
    query's vectors, `nsccn.vectors.commit_vectors`): per file that one of them changed, the best
    similarity, the mean of its best three, and BugLocator's score with these similarities (`top`:
    the SIMILAR_COMMITS most similar commits, each sharing its similarity among the files it changed)."""
    if not sims or not paths:
        return {}
    marks = ",".join("?" * len(paths))
    touched: dict[str, list[float]] = defaultdict(list)
    for commit_id, path in store.conn.execute(
        f"SELECT commit_id, path FROM commit_changes WHERE name = '' AND path IN ({marks})", paths
    ):
        if commit_id in sims:
            touched[path].append(sims[commit_id])
    shared: dict[str, float] = defaultdict(float)
    if top:
        tmarks = ",".join("?" * len(top))
        pset = set(paths)
        for commit_id, path in store.conn.execute(
            f"SELECT commit_id, path FROM commit_changes WHERE name = '' AND commit_id IN ({tmarks})", top
        ):
            if path in pset:
                shared[path] += max(sims[commit_id], 0.0) / math.sqrt(max(n_files.get(commit_id, 1), 1))
    out = {}
    for path, values in touched.items():
        values.sort(reverse=True)
        out[path] = (values[0], sum(values[:3]) / len(values[:3]), shared.get(path, 0.0))
    return out


def similar_fixes(store: Store, terms: list[str], paths: list[str], before: int | None = None
                  ) -> tuple[dict[str, float], dict[tuple[str, str], float]]:
    """BugLocator's similar-past-fixes score of the files `paths` and of each function name in
    them: the SIMILAR_COMMITS messages most like `terms` (BM25 relative to the best), each sharing
    its similarity among the files it changed. Only commits older than `before` count."""
    file_similar: dict[str, float] = {}
    fn_similar: dict[tuple[str, str], float] = {}
    if not terms or not paths:
        return file_similar, fn_similar
    c = store.conn
    cutoff = (1 << 62) if before is None else before
    match = " OR ".join(f'"{t}"' for t in terms)
    rows = c.execute(
        "SELECT f.rowid, -bm25(commits_fts) FROM commits_fts f JOIN commits cm ON cm.rowid = f.rowid "
        "WHERE commits_fts MATCH ? AND cm.time < ? ORDER BY bm25(commits_fts) LIMIT ?",
        (match, cutoff, SIMILAR_COMMITS),
    ).fetchall()
    if not rows:
        return file_similar, fn_similar
    top = rows[0][1] or 1.0
    sims = {rid: s / top for rid, s in rows}
    cmarks = ",".join("?" * len(sims))
    nfiles = dict(c.execute(f"SELECT rowid, max(n_files, 1) FROM commits WHERE rowid IN ({cmarks})", list(sims)))
    pset = set(paths)
    for rid, path, name in c.execute(
        f"SELECT commit_id, path, name FROM commit_changes WHERE commit_id IN ({cmarks})", list(sims)
    ):
        if path not in pset:
            continue
        share = sims[rid] / math.sqrt(nfiles[rid])
        if name == "":
            file_similar[path] = file_similar.get(path, 0.0) + share
        else:
            fn_similar[(path, name)] = fn_similar.get((path, name), 0.0) + share
    return file_similar, fn_similar


def changed_functions_by_commit(store: Store) -> dict[str, dict[str, set[str]]]:
    """sha -> path -> changed function names (for training on the repository's own history)."""
    out: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for sha, path, name in store.conn.execute(
        "SELECT cm.sha, cc.path, cc.name FROM commit_changes cc JOIN commits cm ON cm.rowid = cc.commit_id"
    ):
        out[sha][path]
        if name:
            out[sha][path].add(name)
    return out
