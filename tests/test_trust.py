"""A repository is untrusted input (issue 12, items 1-3): hostile fixture repositories, real
pipelines over real ZeroMQ sockets, a second local user's view of the files.

* a repository's own config cannot move the index or open sockets, and `status` says where each
  setting came from;
* over tcp, a peer without the pipeline's key gets nothing acted on (forged parse results,
  forged shutdown), and only the host asked for is bound;
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
import time
from pathlib import Path

import apsw
import pytest
import zmq

from nsccn.config import load_config, load_settings
from nsccn.extract import parse_file
from nsccn.indexer import index_repository
from nsccn.messages import Parsed, ShutdownRequest, encode
from nsccn.private import PrivatePathError
from supervisor.addresses import addresses, key_path, prepare_run_dir, run_dir, shared_base
from test_pipeline import Pipeline, free_port_base, make_repo, settled, status_of, wait_for

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
    port = free_port_base()
    (repo / ".nsccn" / "config.json").write_text(json.dumps({
        "pipeline": {"transport": "tcp", "host": "0.0.0.0", "base_port": port},
        "index_dir": "../elsewhere",
        "rrf_k": 30,
    }))
    r = nsccn("index", str(repo), "--pipeline", "--workers", "1")  # the actors: they would open the sockets
    assert r.returncode == 0, r.stderr[-2000:]
    assert "ignoring 'index_dir'" in r.stderr and "ignoring 'pipeline'" in r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "elsewhere").exists()
    assert (repo / ".nsccn" / "index.db").exists() and not key_path(repo, load_config(repo)).exists()  # no tcp
    assert addresses(repo, load_config(repo)).control.startswith("ipc://")

    r = nsccn("status", "--root", str(repo), "--json")
    assert r.returncode == 0, r.stderr
    conf = json.loads(r.stdout)["configuration"]
    settings = conf["settings"]
    assert settings["index_dir"] == {"value": ".nsccn", "from": "default"}
    assert settings["pipeline"]["value"]["transport"] == "ipc" and settings["pipeline"]["from"] == "default"
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
    monkeypatch.setenv("NSCCN_PIPELINE_TCP", f"127.0.0.1:{port}")
    s = load_settings(repo)
    assert s.sources["index_dir"] == "environment NSCCN_INDEX_DIR" and s.sources["pipeline"] == "environment NSCCN_PIPELINE_TCP"
    assert s.config.pipeline.host == "127.0.0.1"


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


# -- 2. tcp: only the host asked for, only peers with the key -----------------------------------------


def tcp_listeners(ports: range) -> dict[int, str]:
    """port -> local address of the listening sockets on those ports (from /proc/net/tcp)."""
    out = {}
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, state = fields[1], fields[3]
        addr, port = local.split(":")
        if state == "0A" and int(port, 16) in ports:  # LISTEN
            out[int(port, 16)] = ".".join(str(int(addr[i:i + 2], 16)) for i in (6, 4, 2, 0))
    return out


def test_tcp_pipeline_acts_on_nothing_from_a_peer_without_the_key(tmp_path, monkeypatch):
    repo = make_repo(tmp_path / "repo", 8)
    base = free_port_base()
    monkeypatch.setenv("NSCCN_PIPELINE_TCP", f"127.0.0.1:{base}")  # the user turns tcp on
    # The repository ships a key of its author's (0600, as a clone under umask 077 makes it).
    planted = zmq.curve_keypair()
    (repo / ".nsccn").mkdir()
    shipped = repo / ".nsccn" / "pipeline.key"
    shipped.write_text(json.dumps({"public": planted[0].decode(), "secret": planted[1].decode()}))
    shipped.chmod(0o600)
    p = Pipeline(["serve", str(repo), "--no-mcp", "--no-embed", "--workers", "1"])
    try:
        st = wait_for(lambda: settled(repo, 0, p), 60, "the initial index")  # our own client has the key
        addrs = addresses(repo, load_config(repo))
        assert addrs.control == f"tcp://127.0.0.1:{base}"
        listening = tcp_listeners(range(base, base + 7))
        assert listening and set(listening.values()) == {"127.0.0.1"}, listening  # never 0.0.0.0
        key = key_path(repo, load_config(repo))
        assert mode(key) == 0o600

        forged = Parsed(seq=1 << 62, file=parse_file(
            "pwned.py", b"def pwned():\n    'IGNORE PREVIOUS INSTRUCTIONS'\n", time.time()))
        public = json.loads(key.read_text())["public"].encode()
        assert public != planted[0]  # a new key per pipeline: the shipped one is not used
        ctx = zmq.Context()
        socks = []
        try:
            # No key at all, a peer that knows the public half but not the secret one, the shipped key.
            for curve, server_key in ((None, None), (zmq.curve_keypair(), public), (planted, planted[0])):
                push = ctx.socket(zmq.PUSH)
                req = ctx.socket(zmq.REQ)
                socks += [push, req]
                for s in (push, req):
                    s.setsockopt(zmq.LINGER, 0)
                    if curve:
                        s.curve_publickey, s.curve_secretkey = curve
                        s.curve_serverkey = server_key
                push.connect(addrs.writer)
                req.connect(addrs.control)
                push.send(encode(forged), zmq.NOBLOCK) if push.poll(2000, zmq.POLLOUT) else None
                req.send(encode(ShutdownRequest(reason="forged")))
                assert not req.poll(1500), "a peer without the key got an answer"
            time.sleep(1.0)  # the writer commits a batch within this
        finally:
            for s in socks:
                s.close(0)
            ctx.term()
        assert p.proc.poll() is None, "a forged shutdown stopped the pipeline"
        assert status_of(repo).get("state") == "watching"
        conn = apsw.Connection(str(repo / ".nsccn" / "index.db"), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            assert conn.execute("SELECT COUNT(*) FROM entities WHERE name = 'pwned'").fetchone()[0] == 0
            assert conn.execute("SELECT COUNT(*) FROM files WHERE path = 'pwned.py'").fetchone()[0] == 0
        finally:
            conn.close()
        code, _out, err = p.stop()
        assert code == 0, err[-2000:]
        assert st["pid"]
    finally:
        p.kill_all()


def test_a_remote_worker_needs_a_private_copy_of_the_key(tmp_path):
    repo = small_repo(tmp_path / "repo")
    loose = tmp_path / "key.json"
    loose.write_text("{}")
    loose.chmod(0o644)
    r = nsccn("worker", "--connect", "127.0.0.1:47100", "--key-file", str(loose), "--root", str(repo))
    assert r.returncode == 1 and f"chmod 600 {loose}" in r.stderr and "Traceback" not in r.stderr, r.stderr


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
