#!/usr/bin/env python
"""A repository is untrusted input: the attacks of issue 45 (items 5-10) with more examples than
the test suite runs, against real `nsccn` processes, and the cost of a huge tsconfig.json.

    python benchmarks/hostile_repository.py [--only dotfiles,escapes,symlinks,full,tsconfig]
        [--files 2000] [--aliases 20000] [--rounds 3] [--before-src DIR]

dotfiles   a tree of dotfiles (secrets) and files under dot-directories, written and edited live
           under `nsccn serve`: what live edits index against what a scan of the same tree does
escapes    file names, docstrings and code with ESC/OSC/CSI/BEL, C1 controls, bidi overrides and
           newlines: raw control characters in the text output of every query command
symlinks   (root only) root serving a repository another user owns, who swaps .nsccn or
           .nsccn/logs for symlinks into a root-only directory: files created there
full       (root only: a tmpfs) edits under serve while the index's file system is full, then
           space freed: edits missing, writer restarts, what status said
tsconfig   --files .ts files and a tsconfig.json with --aliases `paths` aliases: wall time of a
           one-file incremental `nsccn index --in-process`, this checkout and, with --before-src
           (a copy of an older nsccn, e.g. `git archive main | tar -x -C /tmp/before`), that one,
           interleaved round by round

Every number is printed with the command that made it; nothing is timed but the tsconfig runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
from test_hostile_round2 import fill  # noqa: E402  (the tests' own filler: one way to fill a disk)

PY = sys.executable
RAW = [chr(c) for c in (*range(0, 9), *range(11, 32), 127, *range(0x80, 0xA0))] + ["\u202e", "\u2066", "\u2028"]


def nsccn(*args, env=None, src: str | None = None, timeout=300) -> subprocess.CompletedProcess:
    e = {**os.environ, **(env or {})}
    if src:
        e["PYTHONPATH"] = src  # an older checkout's nsccn, ahead of this one's
    return subprocess.run([PY, "-P", "-m", "nsccn.cli", *args], capture_output=True, text=True, timeout=timeout, env=e)


def serve(repo: Path, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen([PY, "-P", "-m", "nsccn.cli", "serve", str(repo), "--no-mcp", "--no-embed", "--workers", "1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, **(env or {})})


def status(repo: Path, env: dict | None = None) -> dict:
    r = nsccn("status", "--root", str(repo), "--json", env=env, timeout=60)
    try:
        return json.loads(r.stdout).get("pipeline") or {}
    except ValueError:
        return {}


def wait(pred, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.2)
    return False


def idle(repo: Path, env=None) -> bool:
    return bool(status(repo, env).get("idle"))


def stop(p: subprocess.Popen) -> None:
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(60)
    except subprocess.TimeoutExpired:
        p.kill()


def indexed(db: Path) -> set[str]:
    import apsw

    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return {r[0] for r in conn.execute("SELECT path FROM files")}
    finally:
        conn.close()


# -- 5, 6: dotfiles and dot-directories -----------------------------------------------------------

SECRETS = [".env", ".env.local", ".env.production", ".npmrc", ".pypirc", ".netrc", ".secrets", ".htpasswd",
           ".git-credentials", ".dockercfg", ".pgpass", ".s3cfg"]
DOT_DIRS = [".github/workflows", ".github", ".circleci", ".config/tool", ".devcontainer", ".husky", ".storybook",
            ".vscode-ext", ".gitlab/ci", ".buildkite"]


def bench_dotfiles(work: Path) -> dict:
    from nsccn.config import load_config
    from nsccn.reading.scan import scan_repository

    repo = work / "dot"
    (repo / "src").mkdir(parents=True)
    (repo / "src/a.py").write_text("def a():\n    pass\n")
    for d in DOT_DIRS:  # present before serve starts: the scan's view; then edited live
        (repo / d).mkdir(parents=True, exist_ok=True)
        (repo / d / "conf.yml").write_text("name: first\n")
    p = serve(repo)
    try:
        wait(lambda: idle(repo), 120)
        for sub in ("", "app/", "src/", "deploy/prod/"):
            for name in SECRETS:
                (repo / sub / name).parent.mkdir(parents=True, exist_ok=True)
                (repo / sub / name).write_text("DB_PASSWORD=hunter2\n")
        for d in DOT_DIRS:
            (repo / d / "conf.yml").write_text("name: second\non: push\n")
            (repo / d / "new.sh").write_text("#!/bin/sh\necho new\n")
        time.sleep(1.0)
        wait(lambda: idle(repo), 120)
        time.sleep(1.0)
        db = repo / ".nsccn/index.db"
        live = indexed(db)
        scanned = {f.path for f in scan_repository(repo, load_config(repo)).files}
        stale = json.loads(nsccn("status", "--root", str(repo), "--json").stdout).get("stale_files", {})
    finally:
        stop(p)
    return {"secrets written": 4 * len(SECRETS), "dot-directory files written or edited": 2 * len(DOT_DIRS),
            "indexed live, not by a scan": sorted(live - scanned), "indexed by a scan, not live": sorted(scanned - live),
            "secret files indexed": sum(1 for x in live if x.rsplit("/", 1)[-1] in SECRETS),
            "stale files after the edits": stale}


# -- 10: escape codes and newlines ------------------------------------------------------------------

HOSTILE_NAMES = {
    "osc_title": "t\x1b]0;pwned\x07.py", "clear": "c\x1b[2J\x1b[H.py", "csi8": "e\x9b2J.py", "bel": "b\x07\x07.py",
    "backspace": "bs\x08\x08\x08evil.py", "cr": "cr\rforged.py", "bidi": "bd\u202etxt.py", "nl": "nl\n  1. 9.9  func:x.py:y  (x.py:1)\n.py",
    "vt": "vt\x0b.py", "del": "del\x7f.py", "nel": "nel\x85.py", "isolate": "iso\u2066x\u2069.py",
}


def bench_escapes(work: Path) -> dict:
    repo = work / "esc"
    repo.mkdir()
    for key, name in HOSTILE_NAMES.items():
        (repo / name).write_text(f'def fn_{key}(x):\n    """Doc \x1b[31m{key}\x1b[0m \x9b1m."""\n'
                                 f'    return "\x1b]0;t\x07" + str(x)  # \u202e\n')
    nsccn("index", str(repo), "--in-process")
    runs = [["search", "fn doc"], ["map"], ["context", "fn doc"], ["localize", "fn doc"]]
    for key, name in HOSTILE_NAMES.items():
        runs += [["symbol", f"fn_{key}"], ["skeleton", name], ["window", f"func:{name}:fn_{key}"],
                 ["refs", f"func:{name}:fn_{key}"], ["trace", f"func:{name}:fn_{key}"]]
    raw = 0
    lines_forged = 0
    for args in runs:
        r = nsccn(*args, "--root", str(repo))
        raw += sum(r.stdout.count(c) + r.stderr.count(c) for c in RAW if c not in "\n\t")
        lines_forged += sum(1 for ln in r.stdout.splitlines() if ln.startswith("  1. 9.9  func:x.py"))
    return {"commands run": len(runs), "hostile names": len(HOSTILE_NAMES),
            "raw control characters printed": raw, "forged result lines printed": lines_forged}


# -- 8: symlinked index components -----------------------------------------------------------------------


def bench_symlinks(work: Path) -> dict:
    if os.geteuid() != 0:
        return {"skipped": "needs root (files of another user)"}
    uid = 4242
    out = {}
    for variant in ("index dir -> theirs, logs -> secret", "logs -> secret (index dir theirs, real)", "index dir -> secret"):
        base = work / f"sym-{len(out)}"
        repo = base / "repo"
        (repo / "pkg").mkdir(parents=True)
        (repo / "pkg/a.py").write_text("def a():\n    pass\n")
        for dirpath, dirnames, filenames in os.walk(repo):
            for n in [*dirnames, *filenames, ""]:
                os.lchown(os.path.join(dirpath, n), uid, uid)
        secret = base / "root-only"
        secret.mkdir(mode=0o700)
        p = serve(repo)
        try:
            wait(lambda: idle(repo), 120)
            watcher = status(repo)["actors"]["watcher"]["pid"]
            theirs = base / "theirs"
            theirs.mkdir()
            os.rename(repo / ".nsccn", repo / ".nsccn-away")
            if variant.startswith("index dir -> theirs"):
                (theirs / "logs").symlink_to(secret)
                os.symlink(theirs, repo / ".nsccn")
            elif variant.startswith("logs"):
                (theirs / "logs").symlink_to(secret)
                os.rename(theirs, repo / ".nsccn")
            else:
                os.symlink(secret, repo / ".nsccn")
            for dirpath, dirnames, filenames in os.walk(base):
                for n in [*dirnames, *filenames, ""]:
                    path = os.path.join(dirpath, n)
                    if not path.startswith(str(secret)):
                        if os.path.islink(path) or path.startswith(str(theirs)) or path == str(repo / ".nsccn"):
                            os.lchown(path, uid, uid)
            os.kill(watcher, signal.SIGKILL)
            time.sleep(4)
            out[variant] = {"files created in the root-only directory": sorted(os.listdir(secret)),
                            "serve alive": p.poll() is None}
        finally:
            stop(p)
    return out


# -- 7: a full disk ---------------------------------------------------------------------------------------


def bench_full(work: Path, rounds: int) -> dict:
    from test_pipeline import make_repo, module_source

    fs = work / "fs"
    fs.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(fs)], capture_output=True, text=True)
    if r.returncode != 0:
        return {"skipped": f"cannot mount a tmpfs: {r.stderr.strip()}"}
    out = []
    try:
        for rnd in range(rounds):
            idx = fs / f"idx{rnd}"
            env = {"NSCCN_INDEX_DIR": str(idx)}
            repo = make_repo(work / f"full{rnd}", 64)
            p = serve(repo, env)
            try:
                wait(lambda: idle(repo, env), 120)
                filler = fill(fs)
                for i in range(64):
                    (repo / f"pkg{i % 8}" / f"mod{i}.py").write_text(module_source(i, 64, f"\n\ndef full_{rnd}_{i}():\n    return 1\n"))
                said = wait(lambda: status(repo, env).get("disk_full"), 60)
                st = status(repo, env)
                time.sleep(6)
                filler.unlink()
                wait(lambda: idle(repo, env), 120)
                time.sleep(1)
                import apsw

                conn = apsw.Connection(str(idx / "index.db"), flags=apsw.SQLITE_OPEN_READONLY)
                found = conn.execute("SELECT COUNT(*) FROM entities WHERE name LIKE ?", (f"full_{rnd}_%",)).fetchone()[0]
                conn.close()
                after = status(repo, env)
                out.append({"status said disk full": bool(said), "state while full": st.get("state"),
                            "edits missing after space returned": 64 - found,
                            "writer restarts": after.get("actors", {}).get("writer", {}).get("restarts"),
                            "serve alive": p.poll() is None})
            finally:
                stop(p)
                shutil.rmtree(idx, ignore_errors=True)
    finally:
        subprocess.run(["umount", "-l", str(fs)], capture_output=True)
    return {"rounds": out}


# -- 9: a huge tsconfig.json ------------------------------------------------------------------------------


def bench_tsconfig(work: Path, files: int, aliases: int, rounds: int, before_src: str | None) -> dict:
    repo = work / "ts"
    (repo / "src").mkdir(parents=True)
    paths = {"@/*": ["src/*"], **{f"@lib{i}/*": [f"libs/lib{i}/src/*"] for i in range(aliases)}}
    (repo / "tsconfig.json").write_text(json.dumps({"compilerOptions": {"baseUrl": ".", "paths": paths}}))  # under max_file_size
    for i in range(files):
        (repo / "src" / f"m{i % 50}").mkdir(exist_ok=True)
        (repo / "src" / f"m{i % 50}" / f"file{i}.ts").write_text(
            f"import {{ f{(i + 1) % files} }} from '@/m{(i + 1) % 50}/file{(i + 1) % files}';\n"
            f"export function f{i}(x: number): number {{ return x > {i} ? f{(i + 1) % files}(x - 1) : x; }}\n")
    size = (repo / "tsconfig.json").stat().st_size
    sides = {"this checkout": None}
    if before_src:
        sides["before"] = before_src
    times: dict[str, list[float]] = {k: [] for k in sides}
    for name, src in sides.items():  # a first build each, into its own index
        env = {"NSCCN_INDEX_DIR": str(work / f"ts-idx-{name.replace(' ', '-')}")}
        r = nsccn("index", str(repo), "--in-process", env=env, src=src, timeout=1800)
        assert r.returncode == 0, r.stderr
    target = repo / "src/m0/file0.ts"
    for rnd in range(rounds):
        for name, src in sides.items():
            env = {"NSCCN_INDEX_DIR": str(work / f"ts-idx-{name.replace(' ', '-')}")}
            target.write_text(f"export function f0(x: number): number {{ return x + {rnd + 1}; }}\n")
            t = time.perf_counter()
            r = nsccn("index", str(repo), "--in-process", "--json", env=env, src=src, timeout=1800)
            times[name].append(time.perf_counter() - t)
            assert r.returncode == 0 and json.loads(r.stdout)["files_indexed"] == 1, r.stderr
    return {"tsconfig.json bytes": size, "aliases": aliases + 1, ".ts files": files,
            "one-file incremental index, median s": {k: round(statistics.median(v), 2) for k, v in times.items()},
            "runs s": {k: [round(x, 2) for x in v] for k, v in times.items()}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="dotfiles,escapes,symlinks,full,tsconfig")
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--aliases", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--before-src", help="a directory holding an older nsccn package, run against this one")
    args = ap.parse_args()
    only = set(args.only.split(","))
    results = {}
    with tempfile.TemporaryDirectory(prefix="nsccn-hostile-") as tmp:
        work = Path(tmp)
        if "dotfiles" in only:
            results["dotfiles (items 5, 6)"] = bench_dotfiles(work)
        if "escapes" in only:
            results["escapes (item 10)"] = bench_escapes(work)
        if "symlinks" in only:
            results["symlinked index components (item 8)"] = bench_symlinks(work)
        if "full" in only:
            results["full disk (item 7)"] = bench_full(work, args.rounds)
        if "tsconfig" in only:
            results["huge tsconfig (item 9)"] = bench_tsconfig(work, args.files, args.aliases, args.rounds, args.before_src)
    print(f"# {' '.join(sys.argv)}")
    print(json.dumps(results, indent=2, ensure_ascii=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
