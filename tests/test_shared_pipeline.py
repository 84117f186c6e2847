"""The shared pipeline (issue 14, item 1): `nsccn serve` attaches to the repository's pipeline or
starts it detached; it outlives its clients, lingers, restarts when it dies, and `nsccn stop`
ends it. Real `nsccn serve` processes under a real stdio MCP client, real pipelines.

Every test ends with `nsccn stop` and checks that no pipeline process is left.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from nsccn.config import load_config
from supervisor.addresses import running_pipeline, stopped_path
from test_pipeline import alive, make_repo, module_source, wait_for

PY = sys.executable


def serve(repo: Path, env: dict, *extra: str) -> StdioTransport:
    return StdioTransport(command=PY, args=["-m", "nsccn.cli", "serve", str(repo), "--workers", "1", *extra],
                          env=env, cwd=str(repo.parent), keep_alive=False)


def nsccn(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "nsccn.cli", *args], capture_output=True, text=True, timeout=120,
                          env=env or dict(os.environ))


def processes_naming(needle: bytes) -> list[tuple[int, bytes]]:
    """(pid, command line) of every live process whose command line holds `needle`."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmd = (d / "cmdline").read_bytes()
            except OSError:
                continue
            if needle in cmd and alive(int(d.name)):
                out.append((int(d.name), cmd))
    return out


def pipeline_processes(repo: Path) -> list[int]:
    """Pids of the detached pipelines (`python -m supervisor pipeline REPO`) of this repository."""
    return [pid for pid, _ in processes_naming(b"\0".join([b"supervisor", b"pipeline", str(repo).encode()]))]


def stop_all(repo: Path, env: dict) -> None:
    nsccn("stop", str(repo), env=env)
    wait_for(lambda: not pipeline_processes(repo), 30, "no pipeline left")


async def status(client: Client) -> dict:
    r = await client.call_tool("index_status", {})
    return json.loads(r.content[0].text)


def run_dir_evidence(data: dict) -> str:
    """For a timeout's message: the pipeline's socket files (name, inode, change time) and every
    live process that names its repository, so a pipeline stuck waiting explains itself."""
    p = data.get("pipeline") or {}
    lines = []
    if p.get("run_dir"):
        try:
            for f in sorted(Path(p["run_dir"]).iterdir()):
                st = f.stat()
                lines.append(f"{f.name} ino {st.st_ino} ctime {st.st_ctime_ns}")
        except OSError as exc:
            lines.append(f"run dir {p['run_dir']}: {exc}")
    root = p.get("root") or data.get("root")
    if root:
        for pid, cmd in processes_naming(root.encode()):
            words = cmd.replace(b"\0", b" ").decode(errors="replace")
            lines.append(f"pid {pid}: {words[:160]}")
    return "\n".join(lines)


async def until(client: Client, pred, timeout: float = 90, what: str = "") -> dict:
    deadline = time.monotonic() + timeout
    while True:
        data = await status(client)
        if pred(data):
            return data
        assert time.monotonic() < deadline, f"timed out waiting for {what}: {data}\n{run_dir_evidence(data)}"
        await asyncio.sleep(0.2)


async def search(client: Client, q: str) -> dict:
    r = await client.call_tool("search_and_rank", {"query": q, "limit": 3})
    return json.loads(r.content[0].text)


def ready(d: dict) -> bool:
    p = d.get("pipeline") or {}
    return bool(d.get("indexed") and p.get("pid") and p.get("state") in ("watching", "embedding") and not p.get("stale"))


def env_with(**kw) -> dict:
    return {**os.environ, "NSCCN_EMBED_MODEL": "test-hash", **kw}


def test_second_client_sees_edits_after_the_first_leaves_then_stop(tmp_path):
    repo = make_repo(tmp_path / "repo", 10)
    env = env_with(NSCCN_PIPELINE_LINGER_S="60")

    async def main():
        first = Client(serve(repo, env, "--no-embed"), timeout=60)
        await first.__aenter__()
        st = await until(first, ready, what="the first session's pipeline")
        pid = st["pipeline"]["pid"]
        async with Client(serve(repo, env, "--no-embed"), timeout=60) as second:
            st2 = await until(second, ready, what="the second session attached")
            assert st2["pipeline"]["pid"] == pid
            await first.__aexit__(None, None, None)  # the session whose `serve` started the pipeline leaves
            (repo / "pkg0" / "mod0.py").write_text(module_source(0, 10, "\n\ndef zanzibar_quokka():\n    pass\n"))
            for _ in range(300):
                res = (await search(second, "zanzibar_quokka"))["results"]
                if res and res[0]["id"] == "func:pkg0/mod0.py:zanzibar_quokka":
                    break
                await asyncio.sleep(0.1)
            else:
                raise AssertionError("the edit did not reach the session left after the first one closed")
            st2 = await until(second, lambda d: len(d["pipeline"]["clients"]["attached"]) == 1, what="one client")
            assert st2["pipeline"]["pid"] == pid and alive(pid)
            return pid

    try:
        pid = asyncio.run(asyncio.wait_for(main(), 240))
        # No client: the pipeline lingers (60 s here), and status says so.
        r = nsccn("status", "--root", str(repo), "--json", env=env)
        live = json.loads(r.stdout)["pipeline"]
        assert live["pid"] == pid and live["clients"]["attached"] == [] and 0 < live["clients"]["stops_in_s"] <= 60
        assert "clients: 0 attached" in nsccn("status", "--root", str(repo), env=env).stdout
        r = nsccn("stop", str(repo), env=env)
        assert r.returncode == 0 and f"stopped the pipeline on {repo} (pid {pid})" in r.stdout, r.stderr
        assert not alive(pid) and running_pipeline(repo, load_config(repo)) is None
        assert json.loads(stopped_path(repo, load_config(repo)).read_text())["reason"] == "nsccn stop"
        r = nsccn("stop", str(repo), env=env)
        assert r.returncode == 0 and "no pipeline runs" in r.stdout
    finally:
        stop_all(repo, env)


def test_five_simultaneous_serves_start_exactly_one_pipeline(tmp_path):
    repo = make_repo(tmp_path / "repo", 8)
    env = env_with(NSCCN_PIPELINE_LINGER_S="60")

    async def main():
        clients = [Client(serve(repo, env, "--no-embed"), timeout=90) for _ in range(5)]
        await asyncio.gather(*(c.__aenter__() for c in clients))
        try:
            sts = await asyncio.gather(*(until(c, ready, what="attached") for c in clients))
            assert len({s["pipeline"]["pid"] for s in sts}) == 1, [s["pipeline"]["pid"] for s in sts]
            assert len(pipeline_processes(repo)) == 1
            st = await until(clients[0], lambda d: len(d["pipeline"]["clients"]["attached"]) == 5,
                             what="five clients listed")
            assert len({c["pid"] for c in st["pipeline"]["clients"]["attached"]}) == 5
        finally:
            for c in clients:
                await c.__aexit__(None, None, None)

    try:
        asyncio.run(asyncio.wait_for(main(), 240))
    finally:
        stop_all(repo, env)


def test_a_killed_pipeline_is_noticed_answers_say_stale_then_a_new_one_is_attached(tmp_path):
    repo = make_repo(tmp_path / "repo", 10)
    env = env_with(NSCCN_PIPELINE_LINGER_S="60")

    async def main():
        async with Client(serve(repo, env, "--no-embed"), timeout=60) as a, \
                Client(serve(repo, env, "--no-embed"), timeout=60) as b:
            old = (await until(a, ready, what="a attached"))["pipeline"]["pid"]
            assert (await until(b, ready, what="b attached"))["pipeline"]["pid"] == old
            os.kill(old, signal.SIGKILL)
            notes, moved_on = {}, set()
            deadline = time.monotonic() + 30
            while len(notes | dict.fromkeys(moved_on)) < 2:  # each front notices within seconds
                for name, c in (("a", a), ("b", b)):
                    out = await search(c, "helper")
                    if out.get("stale") and name not in notes:
                        notes[name] = out["stale"]
                    # A front whose successor pipeline finished its first scan between two of our
                    # searches says stale for less than a search takes: its status shows it moved on.
                    if ((await status(c)).get("pipeline") or {}).get("pid") not in (None, old):
                        moved_on.add(name)
                assert time.monotonic() < deadline, f"the fronts did not notice the pipeline died: {notes}, {moved_on}"
                await asyncio.sleep(0.05)
            assert notes and all("pipeline" in n for n in notes.values()), notes
            new_a = (await until(a, ready, what="a reattached"))["pipeline"]["pid"]
            new_b = (await until(b, ready, what="b reattached"))["pipeline"]["pid"]
            assert new_a == new_b != old
            assert "stale" not in await search(a, "helper")
            # The new pipeline watches: an edit reaches both sessions.
            (repo / "pkg1" / "mod1.py").write_text(module_source(1, 10, "\n\ndef after_the_kill():\n    pass\n"))
            for _ in range(300):
                res = (await search(b, "after_the_kill"))["results"]
                if res and res[0]["id"] == "func:pkg1/mod1.py:after_the_kill":
                    break
                await asyncio.sleep(0.1)
            else:
                raise AssertionError("the new pipeline did not index an edit")
            assert pipeline_processes(repo) == [new_a]

    try:
        asyncio.run(asyncio.wait_for(main(), 240))
    finally:
        stop_all(repo, env)


def test_the_pipeline_lingers_then_ends(tmp_path):
    """A short configured linger (user config)."""
    repo = make_repo(tmp_path / "repo", 6)
    user = tmp_path / "user.json"
    user.write_text(json.dumps({"pipeline_linger_s": 4}))
    env = env_with(NSCCN_CONFIG=str(user))
    env.pop("NSCCN_PIPELINE_LINGER_S", None)

    async def main():
        async with Client(serve(repo, env, "--no-embed"), timeout=60) as c:
            st = await until(c, ready, what="attached")
            assert st["pipeline"]["clients"]["linger_s"] == 4
            return st["pipeline"]["pid"]

    try:
        pid = asyncio.run(asyncio.wait_for(main(), 120))
        assert alive(pid)  # the session is over; the pipeline lingers
        wait_for(lambda: not alive(pid), 30, "the pipeline to end after lingering")
        reason = json.loads(stopped_path(repo, load_config(repo)).read_text())["reason"]
        assert "pipeline_linger_s" in reason
    finally:
        stop_all(repo, env)


def test_a_client_started_per_call_gets_vectors_on_its_third_call(tmp_path):
    """As the Inspector CLI does: one `nsccn serve` per call. The pipeline lingers between calls
    and embeds the repository (with the test-hash model: the real model's speed is not the point)."""
    repo = make_repo(tmp_path / "repo", 8)
    env = env_with(NSCCN_PIPELINE_LINGER_S="60")

    async def one_call() -> list:
        async with Client(serve(repo, env), timeout=60) as c:
            r = await c.call_tool("search_and_rank", {"query": "helper", "limit": 3}, raise_on_error=False)
            return [] if r.is_error else json.loads(r.content[0].text)["signals"]  # the first: no index yet

    try:
        signals = [asyncio.run(asyncio.wait_for(one_call(), 120))]
        signals.append(asyncio.run(asyncio.wait_for(one_call(), 120)))

        def embedded():
            r = nsccn("status", "--root", str(repo), "--json", env=env)
            live = json.loads(r.stdout).get("pipeline") or {}
            return live.get("state") in ("watching", "embedding") and live.get("vectors_pending") == 0 and \
                live.get("entities_without_vectors") == 0

        wait_for(embedded, 60, "the lingering pipeline to embed the repository", interval=0.5)
        signals.append(asyncio.run(asyncio.wait_for(one_call(), 120)))
        assert "vector" in signals[2], signals
    finally:
        stop_all(repo, env)
