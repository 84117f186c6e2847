"""A repository is untrusted input (issue 12, items 1-3): hostile fixture repositories, real
pipelines over real ZeroMQ sockets, a second local user's view of the files.

* a repository's own config cannot move the index or open sockets, and `status` says where each
  setting came from;
* the pipeline listens on no network port, whatever the user's config or environment asks (the
  tcp transport was retired: other machines are used through `nsccn index --ray`);
* the index, logs, lock, info file and sockets are private under umask 000;
* a /tmp socket directory someone else made (or left open) is refused, not used.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from nsccn.config import load_config, load_settings
from nsccn.indexing.indexer import index_repository
from nsccn.private import PrivatePathError
from supervisor.addresses import addresses, prepare_run_dir, run_dir, shared_base
from test_pipeline import Pipeline, make_repo, settled, wait_for

PY = sys.executable


def nsccn(*args, env=None, timeout=120):
    return subprocess.run([PY, "-m", "nsccn.cli", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def small_repo(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "app.py").write_text("def handler(x):\n    return helper(x)\n\n\ndef helper(x):\n    return x\n")
    return root


# -- 1. the repository's config is not the user's ------------------------------------------------


def test_repository_config_cannot_move_the_index_or_open_sockets(tmp_path, monkeypatch):
    repo = small_repo(tmp_path / "repo")
    (repo / ".nsccn").mkdir()
    (repo / ".nsccn" / "config.json").write_text(json.dumps({
        "pipeline": {"transport": "tcp", "host": "0.0.0.0", "base_port": 47100},  # retired, and never a repository's
        "index_dir": "../elsewhere",
        "rrf_k": 30,
    }))
    r = nsccn("index", str(repo), "--pipeline", "--workers", "1")  # the actors: they would open the sockets
    assert r.returncode == 0, r.stderr[-2000:]
    assert "ignoring 'index_dir'" in r.stderr and "ignoring 'pipeline'" in r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "elsewhere").exists()
    assert (repo / ".nsccn" / "index.db").exists()
    assert addresses(repo, load_config(repo)).control.startswith("ipc://")

    r = nsccn("status", "--root", str(repo), "--json")
    assert r.returncode == 0, r.stderr
    conf = json.loads(r.stdout)["configuration"]
    settings = conf["settings"]
    assert settings["index_dir"] == {"value": ".nsccn", "from": "default"}
    assert "pipeline" not in settings
    assert settings["rrf_k"] == {"value": 30, "from": f"repository config {repo / '.nsccn' / 'config.json'}"}
    assert len(conf["refused"]) == 2 and conf["files"]["repository"] == str(repo / ".nsccn" / "config.json")

    # The user decides: their config file (per repository), then the environment.
    user = tmp_path / "user.json"
    user.write_text(json.dumps({"rrf_k": 50, "repositories": {str(repo): {"index_dir": str(tmp_path / "idx")}}}))
    monkeypatch.setenv("NSCCN_CONFIG", str(user))
    s = load_settings(repo)
    assert s.config.index_dir == str(tmp_path / "idx") and s.sources["index_dir"].startswith(f"user config {user}")
    assert s.config.rrf_k == 30 and s.sources["rrf_k"].startswith("repository config")  # the repo's ranking wins over a global one
    monkeypatch.setenv("NSCCN_INDEX_DIR", str(tmp_path / "env-idx"))
    s = load_settings(repo)
    assert s.sources["index_dir"] == "environment NSCCN_INDEX_DIR"


def test_a_symlinked_index_dir_in_the_repository_is_refused(tmp_path):
    repo = small_repo(tmp_path / "repo")
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo / ".nsccn").symlink_to(outside)  # what a cloned repository can carry
    for args in (["index", str(repo), "--in-process"], ["index", str(repo), "--workers", "1"]):
        r = nsccn(*args)
        assert r.returncode == 1 and "is a symlink" in r.stderr and "Traceback" not in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
    assert list(outside.iterdir()) == []


# -- 2. no network port: other machines are used through Ray, never by the pipeline -------------------


def listening_inodes() -> set[str]:
    """Socket inodes of every listening TCP socket of this machine (IPv4 and IPv6)."""
    out = set()
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(name).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A":  # LISTEN
                out.add(fields[9])
    return out


def socket_inodes(pid: int) -> set[str]:
    out = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            out.add(target[8:-1])
    return out


def test_the_pipeline_listens_on_no_network_port_whatever_the_user_asked(tmp_path, monkeypatch):
    """The retired tcp transport, asked for by the environment and the user config, is one
    warning each; the pipeline's processes (supervisor and actors) listen on no TCP port."""
    repo = make_repo(tmp_path / "repo", 8)
    user = tmp_path / "user.json"
    user.write_text(json.dumps({"pipeline": {"transport": "tcp", "host": "0.0.0.0", "base_port": 47100}}))
    monkeypatch.setenv("NSCCN_CONFIG", str(user))
    monkeypatch.setenv("NSCCN_PIPELINE_TCP", "0.0.0.0:47100")
    s = load_settings(repo)
    assert [line.split(":", 1)[0] for line in s.refused] == [f"ignoring 'pipeline' in {user}", "ignoring NSCCN_PIPELINE_TCP"]
    assert all("nsccn index --ray" in line for line in s.refused)
    p = Pipeline(["serve", str(repo), "--no-mcp", "--no-embed", "--workers", "1"])
    try:
        st = wait_for(lambda: settled(repo, 0, p), 60, "the initial index")
        assert addresses(repo, load_config(repo)).control.startswith("ipc://")
        pids = [st["pid"], *(a["pid"] for a in st["actors"].values() if a.get("pid"))]
        assert len(pids) >= 3
        listening = listening_inodes()
        assert all(not (socket_inodes(pid) & listening) for pid in pids), "a pipeline process listens on a TCP port"
        code, _out, err = p.stop()
        assert code == 0, err[-2000:]
        assert err.count("the pipeline's tcp transport was retired") >= 1
    finally:
        p.kill_all()


# -- 3. private whatever the umask ---------------------------------------------------------------------


def test_index_logs_lock_and_sockets_are_private_under_umask_000(tmp_path):
    repo = make_repo(tmp_path / "repo", 8)
    p = Pipeline.__new__(Pipeline)
    p.proc = subprocess.Popen([PY, "-m", "supervisor", "serve", str(repo), "--no-mcp", "--no-embed", "--workers", "1"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=lambda: os.umask(0))
    p.pids = set()
    try:
        wait_for(lambda: settled(repo, 0, p), 60, "the initial index")
        idx = repo / ".nsccn"
        dirs = [idx, idx / "run", idx / "logs"]
        files = [idx / "index.db", idx / "pipeline.json", idx / "pipeline.lock", *sorted((idx / "logs").iterdir())]
        assert len(files) > 4
        assert {str(d): oct(mode(d)) for d in dirs} == {str(d): "0o700" for d in dirs}
        assert {str(f): oct(mode(f)) for f in files} == {str(f): "0o600" for f in files}
        for f in (idx / "index.db-wal", idx / "index.db-shm"):
            assert not f.exists() or mode(f) == 0o600
        code, _out, err = p.stop()
        assert code == 0, err[-2000:]
    finally:
        p.kill_all()

    # The library path, in this process.
    lib = small_repo(tmp_path / "lib")
    old = os.umask(0)
    try:
        index_repository(lib, workers=1)
    finally:
        os.umask(old)
    assert mode(lib / ".nsccn") == 0o700 and mode(lib / ".nsccn" / "index.db") == 0o600


@pytest.fixture
def own_tmpdir(monkeypatch):
    """A temporary directory of the test's own (short: socket paths have 107 bytes), so the
    machine's /tmp/nsccn-<uid> of other runs is never touched."""
    d = Path(tempfile.mkdtemp(prefix="n", dir="/tmp"))
    monkeypatch.setenv("TMPDIR", str(d))
    monkeypatch.setattr(tempfile, "tempdir", str(d))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_a_foreign_or_open_tmp_socket_dir_is_refused(tmp_path, own_tmpdir):
    deep = small_repo(tmp_path / ("d" * 60) / ("e" * 60))
    d = run_dir(deep, load_config(deep))
    assert d.parent == shared_base() == own_tmpdir / f"nsccn-{os.getuid()}"  # the fallback is in use

    d.parent.mkdir()
    d.parent.chmod(0o777)  # pre-created by someone, open to all
    r = nsccn("index", str(deep), "--pipeline", "--workers", "1", timeout=60)
    assert r.returncode == 1 and f"{d.parent} has mode 0777" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not d.exists()  # nothing of ours went into it

    d.parent.chmod(0o700)
    os.chown(d.parent, 65534, 65534)  # made by another user
    r = nsccn("index", str(deep), "--pipeline", "--workers", "1", timeout=60)
    assert r.returncode == 1 and f"{d.parent} belongs to uid 65534" in r.stderr, r.stderr
    with pytest.raises(PrivatePathError, match="belongs to uid 65534"):
        prepare_run_dir(d)

    d.parent.rmdir()
    r = nsccn("index", str(deep), "--pipeline", "--workers", "1", timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    assert prepare_run_dir(d) == d and mode(d.parent) == 0o700 and mode(d) == 0o700  # made by us: fine
    d.mkdir(exist_ok=True)
    d.chmod(0o755)
    with pytest.raises(PrivatePathError, match="mode 0755"):
        prepare_run_dir(d)
