"""A real multi-process Ray cluster started the way users start one: `ray start --head` and
`ray start --address=...` on one host, each node its own raylet, in a network namespace of its
own that has nothing but loopback.

Why a namespace: on Linux `ray start --node-ip-address=127.0.0.1` does not keep loopback (Ray
rewrites a loopback node address into the machine's network address, and its GCS and raylets
then listen on every address of the machine); the switch that keeps Ray on loopback
(`RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`, what `--ray local` and the simulated cluster use) makes
`ray start --address` refuse to add a second node. In a fresh network namespace loopback is the
only address there is: the nodes end up on 127.0.0.1, nothing outside the namespace can reach
them, and any port is free. The driver runs there too (`inside(cmd)`: `nsenter --net=...`).

Why not `ray stop`: it stops every Ray process of the machine, by name (whoever started it):
another user's cluster, or a test's simulated one, with ours. The nodes run `ray start --block`
as our children instead and end on SIGTERM (each takes its processes down with it); whatever is
left under our temp dir afterwards is killed by its pid.

Token authentication is on (`RAY_AUTH_MODE=token`, a token of this cluster alone); usage
statistics off. Needs Linux, `unshare`, `nsenter`, `ip` and the right to make a network
namespace (root, as in CI): `ClusterUnavailable` says which is missing.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

GCS_PORT = 6379  # Ray's defaults: the namespace has no other user, so any port is free
CLIENT_PORT = 10001


class ClusterUnavailable(RuntimeError):
    """This host cannot start such a cluster (no network namespace, no Ray): the reason."""


@dataclass
class StartedCluster:
    address: str  # the GCS address (`--ray HOST:PORT`: the driver becomes a node's client)
    client_address: str  # Ray Client (`--ray ray://HOST:PORT`)
    env: dict  # the token and the mode, for the driver
    netns: str  # /proc/PID/ns/net of the head
    temp_dir: Path
    start_s: dict = field(default_factory=dict)  # node -> seconds to start

    def inside(self, cmd: list[str]) -> list[str]:
        """`cmd` run in the cluster's network namespace (the only place its nodes can be reached)."""
        return ["nsenter", f"--net={self.netns}", *cmd]


def _ray_cli() -> str:
    ray = Path(sys.executable).with_name("ray")
    if not ray.exists():
        raise ClusterUnavailable(f"no `ray` command beside {sys.executable} (pip install 'nsccn[ray]')")
    return str(ray)


def check_host() -> None:
    """ClusterUnavailable with the reason, when this host cannot make the cluster's namespace."""
    if not sys.platform.startswith("linux"):
        raise ClusterUnavailable("a network namespace needs Linux")
    for tool in ("unshare", "nsenter", "ip"):
        if shutil.which(tool) is None:
            raise ClusterUnavailable(f"no `{tool}` command")
    probe = subprocess.run(["unshare", "--net", "ip", "link", "set", "lo", "up"], capture_output=True, text=True)
    if probe.returncode:
        raise ClusterUnavailable(f"cannot make a network namespace here: {probe.stderr.strip()[:200]}")
    _ray_cli()


def _wait_started(proc: subprocess.Popen, log: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace") if log.exists() else ""
        if "will now block" in text:  # `ray start --block` prints it once the node is up
            return
        if proc.poll() is not None:
            raise ClusterUnavailable(f"`ray start` exited {proc.returncode}: {text[-1500:]}")
        time.sleep(0.1)
    raise ClusterUnavailable(f"`ray start` not up after {timeout_s:.0f} s: {log.read_text(errors='replace')[-1500:]}")


def _processes() -> dict[int, tuple[int, str, str, bytes]]:
    """pid -> (parent, state, start time, command line) of every process."""
    out = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text().rsplit(")", 1)[1].split()
                out[int(d.name)] = (int(stat[1]), stat[0], stat[19], (d / "cmdline").read_bytes())
            except (OSError, ValueError, IndexError):
                pass
    return out


def _ours(temp_dir: Path, roots: list[int]) -> dict[int, str]:
    """Our nodes' processes, pid -> start time: those below `roots` (the `ray start` processes:
    raylets, their workers) and any whose command line names our temp dir (gcs_server, agents)."""
    procs = _processes()
    mark = str(temp_dir).encode()
    found = {pid for pid, (_, _, _, cmd) in procs.items() if mark in cmd}
    todo = list(roots)
    while todo:
        p = todo.pop()
        kids = [c for c, (pp, *_) in procs.items() if pp == p and c not in found]
        found.update(kids)
        todo += kids
    return {pid: procs[pid][2] for pid in found if procs[pid][1] != "Z"}


def _alive(ours: dict[int, str]) -> dict[int, str]:
    """Those of `ours` still running: the same pid and start time (not a pid used again), no zombie."""
    procs = _processes()
    return {pid: t for pid, t in ours.items() if pid in procs and procs[pid][2] == t and procs[pid][1] != "Z"}


def _stop(proc: subprocess.Popen, timeout_s: float = 30.0) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)  # `ray start --block` kills its node's processes on SIGTERM
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def ray_start_cluster(worker_nodes: int = 1, cpus_per_node: int = 1, head_cpus: int = 0,
                      temp_root: str | None = None) -> Iterator[StartedCluster]:
    """A head (`head_cpus`: 0, it runs no task) and `worker_nodes` nodes of `cpus_per_node`, each
    started by `ray start --block` in one fresh network namespace; torn down on exit."""
    check_host()
    ray = _ray_cli()
    # A short path: Ray's unix sockets live under it (108 bytes at most a socket path).
    temp_dir = Path(tempfile.mkdtemp(prefix="nsccn-ray-", dir=temp_root))
    env = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32), "RAY_USAGE_STATS_ENABLED": "0"}
    node_env = {k: v for k, v in os.environ.items() if k != "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"}
    node_env.update(env, RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S="0")  # no Serve to drain: stop at once
    common = ["--block", "--node-ip-address=127.0.0.1", f"--temp-dir={temp_dir}", "--disable-usage-stats"]
    procs: list[subprocess.Popen] = []
    start_s: dict = {}
    try:
        t = time.perf_counter()
        log = temp_dir / "head.log"
        with log.open("wb") as out:
            head = subprocess.Popen(
                ["unshare", "--net", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", ray, "start", "--head",
                 f"--port={GCS_PORT}", f"--ray-client-server-port={CLIENT_PORT}", f"--num-cpus={head_cpus}",
                 "--include-dashboard=false", *common],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=node_env)
        procs.append(head)
        _wait_started(head, log, 180)
        start_s["head"] = time.perf_counter() - t
        netns = f"/proc/{head.pid}/ns/net"
        t = time.perf_counter()
        nodes = []
        for i in range(worker_nodes):  # side by side: each joins the head's GCS
            log = temp_dir / f"node{i}.log"
            with log.open("wb") as out:
                p = subprocess.Popen(
                    ["nsenter", f"--net={netns}", ray, "start", f"--address=127.0.0.1:{GCS_PORT}",
                     f"--num-cpus={cpus_per_node}", *common],
                    stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=node_env)
            procs.append(p)
            nodes.append((p, log))
        for p, log in nodes:
            _wait_started(p, log, 180)
        start_s["worker_nodes"] = time.perf_counter() - t
        yield StartedCluster(f"127.0.0.1:{GCS_PORT}", f"ray://127.0.0.1:{CLIENT_PORT}", env, netns, temp_dir, start_s)
    finally:
        tree = _ours(temp_dir, [p.pid for p in procs])  # before the stop: the workers' parents are known
        for p in reversed(procs):  # the worker nodes, then the head
            _stop(p)
        deadline = time.monotonic() + 10
        while (_alive(tree) or _ours(temp_dir, [])) and time.monotonic() < deadline:
            time.sleep(0.2)
        for pid in {**_alive(tree), **_ours(temp_dir, [])}:  # what outlived its node, by its pid
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        shutil.rmtree(temp_dir, ignore_errors=True)
