"""Many repositories in one Ray job: `nsccn index --ray ADDRESS --repos FILE [--out DIR]`.

FILE lists the repositories, one a line: a path (relative to FILE's directory), or a git URL and a
commit (`https://host/org/name 8fc63c2d`: cloned into --out, the commit checked out); blank lines
and `#` comments are ignored. FILE may also be a directory: each directory in it is a checkout.

Each repository gets its own index (its `.nsccn/`, or `DIR/NAME/` with --out) and its own writer
here; up to `AT_ONCE` of them share the cluster at a time, their parse tasks side by side. One
repository's failure (a bad path, an unreachable URL, a failed parse) is reported and the others
go on. A re-run does only what changed: every index is incremental, and a clone already at its
commit is not fetched again.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from nsccn.indexing.ray_cluster import Runtime

AT_ONCE = 3  # repositories indexed at a time: their writers overlap the others' parses
_URL = re.compile(r"^(https?|git|file)://\S+$")
_COMMIT = re.compile(r"^[0-9a-fA-F]{4,40}$")
_SAFE_NAME = re.compile(r"[^A-Za-z0-9_.+-]")
CLONE_PROTOCOLS = "file:git:http:https"  # never ext:: (it runs a command) nor anything else


class ReposFileError(ValueError):
    """A --repos FILE that cannot be read as a list of repositories: one line naming the line."""


@dataclass
class RepoJob:
    name: str  # unique in the job: the index's directory under --out
    root: Path  # the checkout indexed
    url: str | None = None  # a git URL line: cloned into `root`, `commit` checked out
    commit: str | None = None
    index_dir: Path | None = None  # --out DIR/NAME, else the repository's own


@dataclass
class RepoResult:
    name: str
    root: str
    ok: bool
    seconds: float = 0.0
    error: str = ""
    summary: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def read_repos(spec: str | Path, out: str | Path | None = None) -> list[RepoJob]:
    """The repositories a --repos FILE (or directory of checkouts) names."""
    spec = Path(spec)
    out = Path(out).resolve() if out else None
    entries: list[tuple[str, Path, str | None, str | None]] = []  # (name, root, url, commit)
    if spec.is_dir():
        for d in sorted(p for p in spec.iterdir() if p.is_dir() and not p.name.startswith(".")):
            entries.append((d.name, d.resolve(), None, None))
    else:
        try:
            text = spec.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ReposFileError(f"--repos {spec}: cannot read it ({exc})") from None
        for n, raw in enumerate(text.splitlines(), 1):
            line = re.sub(r"(^|\s)#.*$", "", raw).strip()  # a comment: `#` at the start or after a space
            if not line:
                continue
            parts = line.split()
            if _URL.match(parts[0]):
                if len(parts) != 2 or not _COMMIT.match(parts[1]):
                    raise ReposFileError(f"--repos {spec} line {n}: a git URL needs a commit after it (URL COMMIT)")
                if out is None:
                    raise ReposFileError(f"--repos {spec} line {n}: a git URL is cloned into --out DIR: give --out")
                name = parts[0].rstrip("/").rsplit("/", 1)[-1].removesuffix(".git") or "repo"
                entries.append((name, Path(), parts[0], parts[1]))
            else:  # the whole line is a path (it may hold spaces)
                path = Path(line).expanduser()
                root = (path if path.is_absolute() else spec.parent / path).resolve()
                entries.append((root.name or "repo", root, None, None))
    jobs, seen = [], set()
    for name, root, url, commit in entries:
        name = _SAFE_NAME.sub("_", name).lstrip(".") or "repo"  # a directory name under --out, never a path
        unique, k = name, 2
        while unique in seen:
            unique, k = f"{name}-{k}", k + 1
        seen.add(unique)
        if url is not None:
            root = out / unique / "checkout"
        jobs.append(RepoJob(unique, root, url, commit, out / unique if out else None))
    if not jobs:
        raise ReposFileError(f"--repos {spec}: no repository in it")
    return jobs


def checkout(job: RepoJob) -> None:
    """Clone `job.url` into `job.root` and check out `job.commit`; a clone already at the commit
    is left alone (a re-run fetches nothing)."""
    from nsccn.reading.git import git_command

    def git(where: Path, *args: str) -> str:
        cmd, env = git_command(where, *args)
        env["GIT_ALLOW_PROTOCOL"] = CLONE_PROTOCOLS
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
        if done.returncode:
            raise RuntimeError(f"git {args[0]}: {' '.join(done.stderr.split())[:300]}")
        return done.stdout.strip()

    if not (job.root / ".git").exists():
        job.root.parent.mkdir(parents=True, exist_ok=True)
        git(job.root.parent, "clone", "--quiet", "--no-checkout", "--", job.url, job.root.name)
    elif (job.root / ".git" / "index").exists():  # checked out before (a clone without checkout has no index)
        try:
            head = git(job.root, "rev-parse", "--verify", "HEAD^{commit}")
        except RuntimeError:
            head = ""
        if head.startswith(job.commit.lower()):
            return
    try:
        git(job.root, "cat-file", "-e", f"{job.commit}^{{commit}}")
    except RuntimeError:
        git(job.root, "fetch", "--quiet", "origin", job.commit)
    git(job.root, "checkout", "--quiet", "--force", "--detach", job.commit)


def index_one(job: RepoJob, runtime: Runtime, embed: bool = True) -> RepoResult:
    """One repository of the job; every failure is its result, never an exception."""
    from nsccn.config import load_config
    from nsccn.indexing.ray_index import index_with_ray

    started = time.perf_counter()
    try:
        if job.url is not None:
            checkout(job)
        if not job.root.is_dir():
            raise FileNotFoundError(f"{job.root} is not a directory")
        overrides = {"index_dir": str(job.index_dir)} if job.index_dir else None
        summary = index_with_ray(job.root, runtime, config=load_config(job.root, overrides), embed=embed)
        return RepoResult(job.name, str(job.root), True, time.perf_counter() - started, summary=summary.as_dict())
    except Exception as exc:  # one repository's failure is reported; the others go on
        return RepoResult(job.name, str(job.root), False, time.perf_counter() - started,
                          error=" ".join(f"{type(exc).__name__}: {exc}".split())[:500])


def index_many(jobs: list[RepoJob], runtime: Runtime, embed: bool = True, at_once: int = AT_ONCE,
               done: Callable[[RepoResult, int, int], None] | None = None) -> list[RepoResult]:
    """Every job on the runtime, `at_once` at a time; results in the jobs' order. `done(result,
    finished, total)` is told as each repository ends."""
    results: dict[str, RepoResult] = {}
    with ThreadPoolExecutor(max_workers=max(1, at_once)) as pool:
        futures = [pool.submit(index_one, job, runtime, embed) for job in jobs]
        for fut in as_completed(futures):
            r = fut.result()
            results[r.name] = r
            if done:
                done(r, len(results), len(jobs))
    return [results[j.name] for j in jobs]
