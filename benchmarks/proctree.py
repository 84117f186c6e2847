"""Run a command and measure its whole process tree: wall, CPU, peak memory (summed and per process).

Used by the benchmarks that compare whole programs (aider_side_by_side.py, pipeline_scale.py).

* CPU: user + sys from ``getrusage(RUSAGE_CHILDREN)`` around the run, i.e. every descendant
  that was waited for (the supervisor waits for its actors, a pool for its workers). The
  psutil samples give a second figure (the last CPU time seen of each process), a check that
  nothing ran detached.
* Memory: the process tree is sampled every `interval` s with psutil; the peak of the sum of
  RSS over all its processes at one instant, and each process's own peak (by its command
  name, e.g. ``writer``), are reported. A process living shorter than one interval can be
  missed; the actors and the library's processes live for the whole run.
"""

from __future__ import annotations

import os
import resource
import subprocess
import threading
import time
from dataclasses import dataclass, field

import psutil


@dataclass
class TreeRun:
    wall_s: float
    cpu_s: float  # user + sys of every waited-for descendant (getrusage)
    user_s: float
    sys_s: float
    sampled_cpu_s: float  # the same from psutil samples (a lower bound: the last sample of each process)
    peak_rss_sum_mb: float  # the largest sum of RSS over the tree at one sample
    peak_rss_by_process_mb: dict[str, float] = field(default_factory=dict)
    peak_rss_parts_mb: dict[str, float] = field(default_factory=dict)  # the peak sum's parts, by label
    returncode: int = 0
    stdout: str = ""
    stderr: str = ""


def _label(p: psutil.Process) -> str:
    """A short name saying what the process is: the actor kind for pipeline actors, else the
    script or module it runs."""
    try:
        cmd = p.cmdline()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return "?"
    if "--kind" in cmd and cmd.index("--kind") + 1 < len(cmd):
        return cmd[cmd.index("--kind") + 1]
    if "-m" in cmd and cmd.index("-m") + 1 < len(cmd):
        return cmd[cmd.index("-m") + 1].split(".")[-1]
    for arg in cmd[1:]:
        if not arg.startswith("-"):
            return os.path.basename(arg)
    return os.path.basename(cmd[0]) if cmd else "?"


def run_tree(cmd: list[str], env: dict | None = None, cwd: str | None = None, interval: float = 0.05) -> TreeRun:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    root = psutil.Process(proc.pid)
    peak_sum = 0.0
    peak_parts: dict[str, float] = {}
    per_pid: dict[int, tuple[str, float, float]] = {}  # pid -> (label, peak rss MB, last cpu s)
    done = threading.Event()

    def sample() -> None:
        nonlocal peak_sum, peak_parts
        while not done.is_set():
            try:
                procs = [root, *root.children(recursive=True)]
            except psutil.NoSuchProcess:
                return
            total = 0.0
            parts: dict[str, float] = {}
            for p in procs:
                try:
                    with p.oneshot():
                        rss = p.memory_info().rss / 2**20
                        ct = p.cpu_times()
                except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                    continue
                total += rss
                label, peak, _ = per_pid.get(p.pid) or (_label(p), 0.0, 0.0)
                per_pid[p.pid] = (label, max(peak, rss), ct.user + ct.system)
                parts[label] = parts.get(label, 0.0) + rss
            if total > peak_sum:
                peak_sum, peak_parts = total, parts
            done.wait(interval)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    wall = time.perf_counter() - t0
    done.set()
    sampler.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    by_label: dict[str, float] = {}
    for label, peak, _ in per_pid.values():
        # Several processes of one kind (two parsers): the largest of them.
        by_label[label] = max(by_label.get(label, 0.0), peak)
    user = after.ru_utime - before.ru_utime
    sys_ = after.ru_stime - before.ru_stime
    return TreeRun(
        wall_s=wall,
        cpu_s=user + sys_,
        user_s=user,
        sys_s=sys_,
        sampled_cpu_s=sum(c for _, _, c in per_pid.values()),
        peak_rss_sum_mb=peak_sum,
        peak_rss_by_process_mb=by_label,
        peak_rss_parts_mb=peak_parts,
        returncode=proc.returncode,
        stdout=out,
        stderr=err,
    )


def dir_bytes(path: str | os.PathLike[str]) -> int:
    """Bytes of every regular file under `path` (not following symlinks)."""
    total = 0
    for dirpath, _, files in os.walk(path):
        for f in files:
            try:
                st = os.lstat(os.path.join(dirpath, f))
            except OSError:
                continue
            total += st.st_size
    return total
