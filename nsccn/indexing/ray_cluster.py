"""Where `nsccn index --ray ADDRESS` runs: a Ray runtime started or joined, and kept private.

A Ray cluster runs code for anyone who can reach it (Ray's own documentation says so), so:

* `local` starts a runtime inside the command with every node address and every server on
  loopback (127.0.0.1). Ray by default takes the machine's network address and rewrites a
  loopback address into it; its switch for that (`RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`, read when
  Ray is imported: "no cluster networking") is set before Ray is imported, and the nodes are
  checked after the start: one that is not on loopback stops the run.
* token authentication stays on: `RAY_AUTH_MODE=token` unless the user set it, and a run with it
  set to anything else is refused. `local` gets a fresh token for this run alone; a cluster
  joined (`auto`, `HOST:PORT`, `ray://HOST:PORT`) takes the user's token as Ray finds it
  (RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH, ~/.ray/auth_token).
* Ray's usage reporting (it would send data over the network) is off unless the user set it.
* only the command line names a cluster: no repository configuration can.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

RAY_EXTRA = "pip install 'nsccn[ray]'"
LOOPBACK = "127.0.0.1"
_HOST_PORT = re.compile(r"^(ray://)?([A-Za-z0-9_.\-]+|\[[0-9A-Fa-f:]+\]):(\d{1,5})$")


class RayUnavailable(RuntimeError):
    """Ray is not installed: the optional extra."""


class RayRefused(ValueError):
    """A Ray address or setting nsccn will not use, or a cluster it cannot reach: one line."""


class RayTaskFailed(RuntimeError):
    """Work that failed on the cluster after the retries (a parse task, the embedding actors), or
    came from another nsccn."""


@dataclass
class Runtime:
    """The Ray runtime a run uses: its address, nodes and CPUs, and how long joining took."""

    address: str
    nodes: list[str] = field(default_factory=list)  # each alive node's address
    cpus: int = 1
    started_s: float = 0.0
    local: bool = False


def check_address(text: str) -> str:
    """`local`, `auto`, `HOST:PORT` or `ray://HOST:PORT`, else RayRefused naming the forms."""
    text = (text or "").strip()
    if text in ("local", "auto"):
        return text
    m = _HOST_PORT.match(text)
    if m and 0 < int(m.group(3)) <= 65535:
        return text
    raise RayRefused(f"--ray {text!r}: expected local, auto, HOST:PORT or ray://HOST:PORT")


def on_loopback(address: str) -> bool:
    """A cluster on this machine's loopback (`127.0.0.1:PORT`): joined as it is, not through the
    machine's network address (Ray's default rewrite, which such a cluster does not listen on)."""
    m = _HOST_PORT.match(address)
    return bool(m) and m.group(2) in (LOOPBACK, "localhost")


def require_ray() -> None:
    """RayUnavailable, naming the extra, when Ray is not installed (checked without importing it)."""
    import importlib.util

    try:
        found = importlib.util.find_spec("ray") is not None
    except (ValueError, ImportError):  # a module entry that is None or has no spec: not importable
        found = False
    if not found:
        raise RayUnavailable(f"--ray needs Ray, an optional extra: {RAY_EXTRA}")


def import_ray(local: bool = False):
    """Ray, or RayUnavailable naming the extra. `local`: Ray imported with loopback as this
    machine's address (has effect only when this is the process's first import of Ray)."""
    if local:
        os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # read by ray_constants on import
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        import ray
    except ImportError:
        raise RayUnavailable(f"--ray needs Ray, an optional extra: {RAY_EXTRA}") from None
    return ray


def _token_auth(local: bool) -> dict[str, str | None]:
    """Turn token authentication on for this process and what it starts; returns the variables
    as they were (restored after the run)."""
    names = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")
    before = {k: os.environ.get(k) for k in names}
    mode = before["RAY_AUTH_MODE"]
    if mode is not None and mode.strip().lower() != "token":
        raise RayRefused(f"RAY_AUTH_MODE={mode}: nsccn uses Ray only with token authentication (a Ray cluster runs code"
                         " for anyone who can reach it); unset it or set RAY_AUTH_MODE=token")
    os.environ["RAY_AUTH_MODE"] = "token"
    if local:  # a token of this run alone, known to the processes it starts and to nothing else
        os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)
        os.environ.pop("RAY_AUTH_TOKEN_PATH", None)
    return before


def _reload_auth(ray) -> None:
    from ray._raylet import AuthenticationTokenLoader, Config

    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()


def _restore(env: dict[str, str | None]) -> None:
    for k, v in env.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@contextmanager
def ray_runtime(address: str, cpus: int | None = None) -> Iterator[Runtime]:
    """Start (`local`) or join a Ray runtime for the length of the block, then leave it (a local
    one ends with it). `cpus`: the CPUs of a local runtime (default: Ray's count of this machine)."""
    address = check_address(address)
    local = address == "local"
    imported = "ray" in sys.modules
    env = _token_auth(local)  # before Ray is imported: it reads the mode once
    started = time.perf_counter()
    try:
        ray = import_ray(local or on_loopback(address))
        if ray.is_initialized():
            raise RayRefused("this process is connected to a Ray runtime already")
        if imported:  # imported before: it must read the mode and token again
            _reload_auth(ray)
        kwargs = dict(log_to_driver=False, logging_level=logging.ERROR, namespace="nsccn")
        try:
            if local:
                ray.init(address="local", _node_ip_address=LOOPBACK, include_dashboard=False, num_cpus=cpus, **kwargs)
            else:
                ray.init(address=address, **kwargs)
        except (ConnectionError, TimeoutError, ValueError, RuntimeError) as exc:
            raise RayRefused(f"cannot use the Ray cluster at {address}: {' '.join(str(exc).split())[:400]} (is it up,"
                             " reachable from here, and is RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token"
                             " its token?)") from None
        try:
            nodes = [n["NodeManagerAddress"] for n in ray.nodes() if n.get("Alive")]
            runtime = Runtime(address, nodes, int(ray.cluster_resources().get("CPU", 1)) or 1,
                              time.perf_counter() - started, local)
            off_loopback = [n for n in nodes if n != LOOPBACK] if local else []
            if off_loopback:  # Ray was imported before without the switch: do not run exposed
                raise RayRefused(f"the local Ray runtime took the address {off_loopback[0]}, not loopback: start nsccn"
                                 " in a process that has not imported Ray yet")
            yield runtime
        finally:
            ray.shutdown()
    finally:
        _restore(env)
