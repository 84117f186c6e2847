"""`nsccn index --ray`: the files parsed by Ray tasks on a simulated multi-node cluster (every node a
real Ray node on this host's loopback, token authentication on), written by the one writer here.

One cluster for the module: a head node that runs no task (0 CPUs: the driver's objects live
there) and two worker nodes of one CPU each. Checked: the index equals `nsccn index --in-process`'s
(benchmarks/index_identity.py) with tasks on both worker nodes; a worker process killed in the
middle of its task is retried and the index is still the same; a driver killed mid-run leaves an
index that the next run completes to the same; one failing repository among several is reported
and the others are indexed (a re-run parses nothing); the static model's vectors made beside the
parse and a transformer's on a pool of actors (one on each worker node) are the local index's; a
node removed mid-run costs nothing (last: it leaves one worker node); and without Ray installed,
`--ray` is one line naming the extra.
"""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import SHOP, write_repo
from nsccn.indexing.indexer import index_repository

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import index_identity  # noqa: E402

# A long file (about a second to parse) gives a task long enough to be killed in the middle.
LONG_METHODS = 6000


def _tree() -> dict[str, str | bytes]:
    files: dict[str, str | bytes] = dict(SHOP)
    for i in range(40):
        files[f"pkg/mod{i}.py"] = (f"from pkg.mod{(i + 1) % 40} import f{(i + 1) % 40}\n\n\n"
                                   f"def f{i}(x):\n    return f{(i + 1) % 40}(x) if x else {i}\n")
    body = "".join(f"    def m{i}(self, x):\n        return self.m{(i + 1) % LONG_METHODS}(x)\n" for i in range(LONG_METHODS))
    files["a_long.py"] = "class Long:\n" + body  # first in the scan: its task starts first
    files["pkg/data.bin"] = b"\x00\x01binary\x00" * 10
    # A script and the module it imports, whose edges depend on which of the two is written first
    # (the resolver's order dependence): the Ray index must write in the scan's order too.
    files["bin/tool"] = "#!/usr/bin/env python\nif __name__ == '__main__':\n    from tool import main\n    main()\n"
    files["tool.py"] = "def main():\n    return 0\n"
    return files


@pytest.fixture(scope="module")
def cluster():
    """Head (no CPU) + two one-CPU worker nodes, all on 127.0.0.1, token auth on."""
    env = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",  # loopback is this machine's address: no rewrite
           "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32), "RAY_USAGE_STATS_ENABLED": "0"}
    before = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'nsccn[ray]')")
    from ray.cluster_utils import Cluster

    try:
        # A removed node is found dead within about a second, not Ray's default 15 s.
        health = {"health_check_period_ms": 300, "health_check_timeout_ms": 300, "health_check_failure_threshold": 3}
        c = Cluster(initialize_head=True, head_node_args={"node_ip_address": "127.0.0.1", "num_cpus": 0,
                                                          "include_dashboard": False, "_system_config": health})
        workers = [c.add_node(wait=False, node_ip_address="127.0.0.1", num_cpus=1) for _ in range(2)]
        c.wait_for_nodes()
    except Exception as exc:  # only where Ray cannot start on this host
        pytest.skip(f"a Ray cluster cannot start here: {exc}")
    c.workers = workers
    yield c
    if ray.is_initialized():
        ray.shutdown()
    c.shutdown()
    for k, v in before.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def _local_index(tmp_path: Path, files: dict) -> dict:
    root = write_repo(tmp_path / "local", files)
    index_repository(root, workers=1, embed=False)
    return index_identity.dump(str(root / ".nsccn" / "index.db"))


@pytest.fixture(scope="module")
def local_dump(tmp_path_factory) -> dict:
    """The index of `_tree()` made by `nsccn index --in-process`, what every Ray index must equal."""
    return _local_index(tmp_path_factory.mktemp("local"), _tree())


def _on_ray(root: Path, address: str):
    from nsccn.indexing.ray_cluster import ray_runtime
    from nsccn.indexing.ray_index import index_with_ray

    with ray_runtime(address) as runtime:
        return index_with_ray(root, runtime, embed=False)


def _task_processes() -> list[int]:
    """Ray worker processes of this test's cluster running our parse task now (Ray titles them
    `ray::look_at_batch`); only this process's descendants: another suite's on this host are not ours."""
    out = []
    for pid in _descendants():
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"ray::look_at_batch"):
                out.append(pid)
        except OSError:
            pass
    return out


def _when_a_task_runs(action, timeout_s: float = 60.0, for_s: float = 0.1) -> threading.Thread:
    """Call `action(pid)` (in a thread) on a parse task seen running for `for_s`: the long file's
    (the others take milliseconds)."""

    def watch():
        deadline = time.monotonic() + timeout_s
        since: dict[int, float] = {}
        while time.monotonic() < deadline:
            now = time.monotonic()
            running = set(_task_processes())
            since = {pid: since.get(pid, now) for pid in running}
            for pid, t in since.items():
                if now - t >= for_s:
                    action(pid)
                    return
            time.sleep(0.005)

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    return t


def test_ray_index_is_the_local_index(cluster, local_dump, tmp_path):
    files = _tree()
    root = write_repo(tmp_path / "ray", files)
    summary = _on_ray(root, cluster.address)
    got = index_identity.dump(str(root / ".nsccn" / "index.db"))
    assert index_identity.compare(local_dump, got) == []
    assert summary.ray["nodes"] == 3 and summary.ray["cpus"] == 2
    assert len(summary.ray["tasks_by_node"]) == 2, summary.ray  # both worker nodes parsed
    assert summary.files_indexed == len(files) - 1 and summary.skipped["binary"] == 1
    again = _on_ray(root, cluster.address)  # nothing changed: nothing shipped
    assert again.files_indexed == 0 and again.ray["tasks"] == 0


def test_a_worker_killed_mid_task_is_retried(cluster, local_dump, tmp_path):
    files = _tree()
    root = write_repo(tmp_path / "ray", files)
    killed = []
    watcher = _when_a_task_runs(lambda pid: (os.kill(pid, signal.SIGKILL), killed.append(pid)))
    summary = _on_ray(root, cluster.address)
    watcher.join()
    assert killed, "no parse task was seen running"
    assert summary.ray["retries"] >= 1
    got = index_identity.dump(str(root / ".nsccn" / "index.db"))
    assert index_identity.compare(local_dump, got) == []


def test_a_killed_driver_leaves_what_a_rerun_completes(cluster, tmp_path):
    files = _tree()
    for i in range(40, 400):  # enough batches that the driver is killed between two commits
        files[f"more/m{i}.py"] = f"def g{i}():\n    return {i}\n"
    root = write_repo(tmp_path / "ray", files)
    db = root / ".nsccn" / "index.db"
    proc = subprocess.Popen(_index_command(root, cluster.address), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if db.exists() and _files_in(db) > 0:
                proc.kill()  # SIGKILL: no cleanup, a transaction maybe open
                break
            time.sleep(0.01)
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the driver finished before it could be killed"
    summary = _on_ray(root, cluster.address)  # the next run (in this process: no second start-up)
    assert 0 < summary.files_unchanged and summary.files_indexed < len(files)  # it went on, not over
    assert index_identity.compare(_local_index(tmp_path, files), index_identity.dump(str(db))) == []


def _index_command(root: Path, address: str) -> list[str]:
    """`nsccn index ROOT --ray ADDRESS --no-embed --json`, a driver process of its own."""
    return [sys.executable, "-m", "nsccn_cli", "index", str(root), "--ray", address, "--no-embed", "--json"]


def _files_in(db: Path) -> int:
    import apsw

    try:
        conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            return conn.execute("SELECT COUNT(*) FROM files").fetchone()[0]
        finally:
            conn.close()
    except apsw.Error:
        return 0


def test_one_failing_repository_does_not_stop_the_others(cluster, tmp_path, capsys):
    from nsccn_cli import main

    a = write_repo(tmp_path / "a", SHOP)
    b = write_repo(tmp_path / "b", {"b.py": "def b():\n    return 1\n"})
    src = write_repo(tmp_path / "src", {"c.py": "def c():\n    return 2\n"})  # a git URL and a commit: cloned
    git = ["git", "-C", str(src), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "c"], check=True)
    sha = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    listing = tmp_path / "repos.txt"
    listing.write_text(f"{a}\n# a comment\nno-such-checkout\n{b}\nfile://{src} {sha}\n")
    argv = ["index", "--ray", cluster.address, "--repos", str(listing), "--out", str(tmp_path / "out"), "--no-embed",
            "--json"]
    assert main(argv) == 1
    out = json.loads(capsys.readouterr().out)
    state = {r["name"]: r for r in out["repositories"]}
    assert [r["name"] for r in out["repositories"]] == ["a", "no-such-checkout", "b", "src"] and out["failed"] == 1
    assert state["src"]["ok"] and state["src"]["root"] == str(tmp_path / "out" / "src" / "checkout"), state["src"]
    assert state["src"]["summary"]["files_indexed"] == 1
    assert not state["no-such-checkout"]["ok"] and "not a directory" in state["no-such-checkout"]["error"]
    assert state["a"]["ok"] and state["a"]["summary"]["files_indexed"] == len(SHOP)
    assert Path(state["b"]["summary"]["db_path"]) == tmp_path / "out" / "b" / "index.db"
    assert main(argv) == 1  # a re-run: nothing parsed again
    again = {r["name"]: r for r in json.loads(capsys.readouterr().out)["repositories"]}
    assert again["a"]["summary"]["files_indexed"] == 0 and again["a"]["summary"]["files_unchanged"] == len(SHOP)


def _is_under(pid: int, node) -> bool:
    """Whether process `pid` was started by one of the node's processes (its raylet)."""
    ours = {p.process.pid for procs in node.all_processes.values() for p in procs}
    while pid > 1:
        if pid in ours:
            return True
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return False
    return False


def _listening_sockets() -> dict[str, str]:
    """Socket inode -> local address (hex, as the kernel prints it) of every listening TCP socket."""
    out = {}
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(name).read_text().splitlines()[1:]:
            f = line.split()
            if f[3] == "0A":
                out[f[9]] = f[1].rsplit(":", 1)[0]
    return out


LOOPBACK_HEX = {"0100007F", "00000000000000000000000001000000", "0000000000000000FFFF00000100007F"}


def _descendants() -> set[int]:
    """Every process below this one (from /proc: parent pids)."""
    parent: dict[int, int] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                parent[int(d.name)] = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                pass
    out, todo = set(), [os.getpid()]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p and c not in out]
        out.update(kids)
        todo += kids
    return out


def test_a_local_runtime_listens_on_loopback_only_with_a_token():
    """`--ray local`: every node on 127.0.0.1, every port its processes listen on is loopback,
    token authentication on (and a mode that turns it off refused)."""
    from nsccn.indexing.ray_cluster import RayRefused, ray_runtime

    if importlib.util.find_spec("ray") is None:  # (not imported here: the runtime sets loopback first)
        pytest.skip("Ray is not installed (pip install 'nsccn[ray]')")
    already = _descendants()  # the module's simulated cluster, when it runs
    with ray_runtime("local", cpus=1) as runtime:
        assert runtime.local and runtime.nodes == ["127.0.0.1"]
        assert os.environ["RAY_AUTH_MODE"] == "token" and len(os.environ["RAY_AUTH_TOKEN"]) == 64
        listening = _listening_sockets()
        seen = {}
        for pid in _descendants() - already:
            try:
                fds = list(Path(f"/proc/{pid}/fd").iterdir())
            except OSError:
                continue
            for fd in fds:
                try:
                    target = os.readlink(fd)
                except OSError:
                    continue
                if target.startswith("socket:[") and target[8:-1] in listening:
                    seen[target[8:-1]] = listening[target[8:-1]]
        assert seen and set(seen.values()) <= LOOPBACK_HEX, seen
    before = os.environ.get("RAY_AUTH_MODE")
    os.environ["RAY_AUTH_MODE"] = "disabled"
    try:
        with pytest.raises(RayRefused, match="token authentication"):
            with ray_runtime("local"):
                pass
    finally:
        if before is None:
            os.environ.pop("RAY_AUTH_MODE", None)
        else:
            os.environ["RAY_AUTH_MODE"] = before


def test_ray_without_the_extra_is_one_line_naming_it(tmp_path):
    root = write_repo(tmp_path / "repo", SHOP)
    code = ("import sys; sys.modules['ray'] = None; from nsccn_cli import main;"
            f" sys.exit(main(['index', {str(root)!r}, '--ray', 'local']))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == ["nsccn: --ray needs Ray, an optional extra: pip install 'nsccn[ray]'"]
    assert not (root / ".nsccn").exists()


def _vectors(db: Path) -> dict:
    from nsccn.store import Store
    from nsccn.vectors.table import VectorStore

    with Store(db, readonly=True) as store:
        vs = VectorStore(store.conn)
        ids = [r[0] for r in store.conn.execute("SELECT entity_id FROM vec_ids")]
        return {e: v.tobytes() for e, v in vs.vectors(ids).items()}


def test_the_static_models_vectors_are_made_on_the_nodes(cluster, tmp_path):
    """With the static model (the default) the tasks embed what they parse; the driver only stores
    the vectors, and they are the local index's, byte for byte."""
    from nsccn.indexing.ray_cluster import ray_runtime
    from nsccn.indexing.ray_index import index_with_ray

    files = dict(SHOP)
    local = write_repo(tmp_path / "local", files)
    index_repository(local, workers=1, embed=True)
    root = write_repo(tmp_path / "ray", files)
    with ray_runtime(cluster.address) as runtime:
        summary = index_with_ray(root, runtime, embed=True)
    want = _vectors(local / ".nsccn" / "index.db")
    assert want and _vectors(root / ".nsccn" / "index.db") == want
    assert summary.vectors["embedded"] == 0 and summary.vectors["from_nodes"] == len(want), summary.vectors
    assert summary.ray["vectors_from_nodes"] == len(want) and summary.ray["vectors_refused"] == 0


def test_a_transformer_embeds_on_a_pool_of_ray_actors(cluster, tmp_path):
    """A transformer (a user setting; here the bundled MiniLM) is embedded by Ray actors, one
    model load each, after the parse; the driver only stores the vectors: those of
    `nsccn index --in-process` (each chunk the same call on the same ONNX settings)."""
    import numpy as np

    from nsccn.config import load_config
    from nsccn.indexing.ray_cluster import ray_runtime
    from nsccn.indexing.ray_index import index_with_ray

    files = dict(SHOP)
    for i in range(9):  # more than one chunk of texts (EMBED_CHUNK): both actors get work
        files[f"pkg/m{i}.py"] = "".join(f"def f{i}_{j}(x):\n    '''Return x times {j}.'''\n    return x * {j}\n\n"
                                        for j in range(30))
    overrides = {"embedding_model": "minilm"}
    local = write_repo(tmp_path / "local", files)
    index_repository(local, workers=1, embed=True, config=load_config(local, overrides))
    root = write_repo(tmp_path / "ray", files)
    with ray_runtime(cluster.address) as runtime:
        summary = index_with_ray(root, runtime, embed=True, config=load_config(root, overrides))
    want, got = _vectors(local / ".nsccn" / "index.db"), _vectors(root / ".nsccn" / "index.db")
    assert len(want) > 256 and sorted(got) == sorted(want)
    worst = max(float(np.abs(np.frombuffer(got[e], np.float32) - np.frombuffer(want[e], np.float32)).max()) for e in want)
    assert worst < 1e-5, worst  # (bit for bit here, in every run so far: the same batches, one thread or many)
    assert summary.vectors["model"] == "nsccn/minilm-code-v1" and summary.vectors["embedded"] == len(want), summary.vectors
    r = summary.ray
    assert r["embed_actors"] == 2 and len(r["actors_by_node"]) == 2 and r["vectors_from_actors"] == len(want), r
    assert r["vectors_refused"] == 0


def test_a_node_removed_mid_run_costs_nothing(cluster, local_dump, tmp_path):
    """Last in the module: it leaves one worker node."""
    files = _tree()
    root = write_repo(tmp_path / "ray", files)
    removed = []

    def remove_its_node(pid: int) -> None:
        for node in cluster.workers:
            if _is_under(pid, node):
                # A machine lost takes its processes with it, the running task first: removing the node
                # alone (its raylet killed, then the rest) leaves the worker running for a moment, and
                # on a loaded host it finished the task and handed back its small (inlined) result
                # before it noticed: the node was gone but nothing was lost (CI, stops 53 and 54).
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                cluster.remove_node(node, allow_graceful=False)
                removed.append(node)

    watcher = _when_a_task_runs(remove_its_node)
    # the driver in its own process, as `nsccn index --ray` runs: a driver that a node's loss brought
    # down would take this process (and the suite) with it (a segfault in Ray's core worker, once)
    done = subprocess.run(_index_command(root, cluster.address), capture_output=True, text=True, timeout=300)
    watcher.join()
    assert done.returncode == 0, done.stderr[-2000:]
    assert removed, "the node of a running task was not found"
    # Ray prints what its raylets say (a node's loss) on the driver's standard output beside the JSON
    start = ("\n" + done.stdout).find("\n{")
    assert start >= 0, done.stdout[-2000:]
    summary, _ = json.JSONDecoder().raw_decode(done.stdout[start:])
    assert summary["ray"]["retries"] >= 1
    got = index_identity.dump(str(root / ".nsccn" / "index.db"))
    assert index_identity.compare(local_dump, got) == []
