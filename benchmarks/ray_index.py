#!/usr/bin/env python
"""`nsccn index --ray`: identity, cost on one machine, the single writer's ceiling, many repositories.

    python benchmarks/ray_index.py identity TREE [--nodes 3]      # --ray local and a simulated cluster
    python benchmarks/ray_index.py cost TREE [--rounds 3]          # against --in-process, interleaved
    python benchmarks/ray_index.py ceiling TREE [TREE ...]         # the writer fed pre-computed results
    python benchmarks/ray_index.py many TREE [TREE ...] [--nodes 3] # one --repos job against one index after another
    python benchmarks/ray_index.py vectors TREE [--nodes 3] [--rounds 3]  # the static model's vectors on the nodes
    python benchmarks/ray_index.py real TREE [--nodes 2] [--embed] [--model M]  # a cluster started with `ray start`, HOST:PORT and ray://
    python benchmarks/ray_index.py actors TREE [--nodes 3] [--rounds 2] [--model minilm]  # a transformer on Ray actors

Every Ray node starts on 127.0.0.1 with token authentication (a simulated cluster:
`ray.cluster_utils.Cluster`, each node a real Ray node on this host; the head runs no task).
Every run is `nsccn index` in a fresh process on a fresh index (`NSCCN_INDEX_DIR` or `--out`),
with `--no-embed` but in `vectors` (which measures where the vectors' CPU goes).
CPU is the whole process tree's (benchmarks/proctree.py: getrusage of waited-for children, and
the psutil samples of every descendant, the larger taken: Ray's processes are not all waited for).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import statistics
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import index_identity  # noqa: E402
from proctree import run_tree  # noqa: E402

PY = sys.executable
LOOPBACK_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "token", "RAY_USAGE_STATS_ENABLED": "0"}


def nsccn(tree: Path, index_dir: Path, *extra: str, env: dict | None = None, embed: bool = False):
    cmd = [PY, "-m", "nsccn_cli", "index", str(tree), *(() if embed else ("--no-embed",)), "--json", *extra]
    run = run_tree(cmd, env={**os.environ, **(env or {}), "NSCCN_INDEX_DIR": str(index_dir)})
    if run.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{run.stderr[-3000:]}")
    return run, json.loads(run.stdout)


@contextmanager
def simulated_cluster(nodes: int):
    """A head (no CPU) and `nodes - 1` one-CPU worker nodes, all on loopback; yields (address, env)."""
    env = {**LOOPBACK_ENV, "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    os.environ.update(env)
    from ray.cluster_utils import Cluster

    c = Cluster(initialize_head=True, head_node_args={"node_ip_address": "127.0.0.1", "num_cpus": 0,
                                                      "include_dashboard": False})
    for _ in range(nodes - 1):
        c.add_node(wait=False, node_ip_address="127.0.0.1", num_cpus=1)
    c.wait_for_nodes()
    try:
        yield c.address, env
    finally:
        c.shutdown()


def cluster_cpu() -> dict[int, float]:
    """pid -> CPU seconds of every descendant of this process (the simulated cluster's nodes)."""
    import psutil

    out = {}
    for p in psutil.Process().children(recursive=True):
        try:
            ct = p.cpu_times()
            out[p.pid] = ct.user + ct.system
        except psutil.Error:
            pass
    return out


def cpu_since(before: dict[int, float]) -> float:
    return sum(c - before.get(pid, 0.0) for pid, c in cluster_cpu().items())


def listening_off_loopback() -> list[str]:
    """Listening TCP sockets of this machine on any address but loopback (IPv4 and IPv6)."""
    out = []
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(name).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if f[3] != "0A":  # LISTEN
                continue
            addr = f[1].split(":")[0]
            if addr not in ("0100007F", "00000000000000000000000001000000", "0000000000000000FFFF00000100007F"):
                out.append(f[1])
    return out


def cmd_identity(args) -> int:
    tree = Path(args.tree).resolve()
    work = Path(tempfile.mkdtemp(prefix="nsccn-ray-identity-"))
    try:
        _, ref = nsccn(tree, work / "local", "--in-process")
        before = set(listening_off_loopback())
        t = time.perf_counter()
        _, local = nsccn(tree, work / "ray-local", "--ray", "local")
        local_s = time.perf_counter() - t
        with simulated_cluster(args.nodes) as (address, env):
            exposed = sorted(set(listening_off_loopback()) - before)
            _, sim = nsccn(tree, work / "ray-cluster", "--ray", address, env=env)
        a = index_identity.dump(str(work / "local" / "index.db"))
        rows = [("--ray local", local, work / "ray-local"), (f"simulated {args.nodes}-node cluster", sim, work / "ray-cluster")]
        print(f"tree {tree.name}: {ref['files_indexed']} files, {ref['entities']} entities, {ref['edges']} edges"
              f" (nsccn index --in-process)")
        print(f"new listening sockets off loopback while the cluster ran: {exposed or 'none'}")
        ok = True
        for label, s, d in rows:
            diff = index_identity.compare(a, index_identity.dump(str(d / "index.db")))
            ok &= not diff
            r = s["ray"]
            print(f"  {label}: {'identical' if not diff else 'DIFFERS: ' + '; '.join(diff)}"
                  f" ({r['tasks']} tasks on {len(r['tasks_by_node'])} node(s), {r['retries']} retried)")
        print(f"  (--ray local wall {local_s:.1f} s)")
        return 0 if ok else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


def cmd_cost(args) -> int:
    tree = Path(args.tree).resolve()
    work = Path(tempfile.mkdtemp(prefix="nsccn-ray-cost-"))
    rows = []
    try:
        for i in range(args.rounds):
            for mode in ("in-process", "ray"):
                d = work / f"{mode}-{i}"
                extra = ("--in-process", "--workers", "0") if mode == "in-process" else ("--ray", "local")
                run, s = nsccn(tree, d, *extra)
                cpu = max(run.cpu_s, run.sampled_cpu_s)
                rows.append({"round": i, "mode": mode, "wall_s": run.wall_s, "cpu_s": cpu,
                             "ray_start_s": (s.get("ray") or {}).get("seconds", {}).get("ray_start", 0.0),
                             "files": s["files_indexed"], "load": os.getloadavg()[0]})
                shutil.rmtree(d, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    wall_ratio = [r["wall_s"] / l["wall_s"] for l, r in zip(rows[0::2], rows[1::2])]
    cpu_ratio = [r["cpu_s"] / l["cpu_s"] for l, r in zip(rows[0::2], rows[1::2])]
    start = [r["ray_start_s"] for r in rows[1::2]]
    print(f"tree {tree.name}, {rows[0]['files']} files; {args.rounds} rounds, in-process (a pool of one parser per core)"
          f" then --ray local, each a fresh process and index, --no-embed")
    print("| round | mode | wall s | CPU s | of it Ray start s | load |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['round']} | {r['mode']} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | {r['ray_start_s']:.1f} | {r['load']:.1f} |")
    print(f"median ratio ray / in-process: wall {statistics.median(wall_ratio):.2f}x, CPU {statistics.median(cpu_ratio):.2f}x;"
          f" Ray's start-up median {statistics.median(start):.1f} s of it")
    return 0


def _vectors(db: Path) -> dict[str, bytes]:
    from nsccn.store import Store
    from nsccn.vectors.table import VectorStore

    with Store(db, readonly=True) as store:
        ids = [r[0] for r in store.conn.execute("SELECT entity_id FROM vec_ids")]
        return {e: v.tobytes() for e, v in VectorStore(store.conn).vectors(ids).items()}


def cmd_vectors(args) -> int:
    """The static model's vectors made on the nodes beside the parse: the driver's CPU with and
    without vectors on a simulated cluster (the driver is the command's process tree: the nodes
    are this process's children), the nodes' CPU, and `--in-process` with and without vectors
    for what the one writer paid when it embedded; the vectors compared with the local index's."""
    tree = Path(args.tree).resolve()
    work = Path(tempfile.mkdtemp(prefix="nsccn-ray-vectors-"))
    rows = []
    try:
        _, ref = nsccn(tree, work / "ref", "--in-process", "--workers", "0", embed=True)
        want = _vectors(work / "ref" / "index.db")
        with simulated_cluster(args.nodes) as (address, env):
            same = None
            for i in range(args.rounds):
                for mode, embed in (("ray --no-embed", False), ("ray", True), ("in-process --no-embed", False),
                                    ("in-process", True)):
                    d = work / f"{i}-{mode}"
                    extra = ("--ray", address) if mode.startswith("ray") else ("--in-process", "--workers", "0")
                    before = cluster_cpu()
                    run, s = nsccn(tree, d, *extra, env=env, embed=embed)
                    nodes = cpu_since(before) if mode.startswith("ray") else 0.0
                    if mode == "ray" and same is None:
                        same = _vectors(d / "index.db") == want
                    rows.append({"round": i, "mode": mode, "driver_cpu_s": run.cpu_s, "wall_s": run.wall_s,
                                 "nodes_cpu_s": nodes, "vectors": s.get("vectors") or {},
                                 "load": os.getloadavg()[0]})
                    shutil.rmtree(d, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"tree {tree.name}: {ref['files_indexed']} files, {ref['entities']} entities; a simulated {args.nodes}-node"
          f" cluster on loopback; {args.rounds} rounds, the four runs interleaved, each a fresh process and index")
    print(f"vectors of the Ray index equal the --in-process index's, byte for byte: {same} ({len(want)} vectors)")
    print("| round | run | driver CPU s | nodes CPU s | wall s | vectors made by the driver / on the nodes | load |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        v = r["vectors"]
        made = f"{v.get('embedded', 0)} / {v.get('from_nodes', 0)}" if v else "-"
        print(f"| {r['round']} | {r['mode']} | {r['driver_cpu_s']:.1f} | {r['nodes_cpu_s']:.1f} | {r['wall_s']:.1f} |"
              f" {made} | {r['load']:.1f} |")
    by = {m: [r for r in rows if r["mode"] == m] for m in ("ray --no-embed", "ray", "in-process --no-embed", "in-process")}
    ray_d = [b["driver_cpu_s"] - a["driver_cpu_s"] for a, b in zip(by["ray --no-embed"], by["ray"])]
    ray_n = [b["nodes_cpu_s"] - a["nodes_cpu_s"] for a, b in zip(by["ray --no-embed"], by["ray"])]
    loc_d = [b["driver_cpu_s"] - a["driver_cpu_s"] for a, b in zip(by["in-process --no-embed"], by["in-process"])]
    print(f"median CPU the vectors add: the Ray driver {statistics.median(ray_d):+.1f} s (the nodes"
          f" {statistics.median(ray_n):+.1f} s); in process {statistics.median(loc_d):+.1f} s")
    return 0


def _user_config(work: Path, model: str | None) -> dict:
    """The environment of a user config that sets the embedding model (a user setting), or {}."""
    if not model:
        return {}
    f = work / "user-config.json"
    f.write_text(json.dumps({"embedding_model": model}))
    return {"NSCCN_CONFIG": str(f)}


def _same_vectors(got: dict[str, bytes], want: dict[str, bytes]) -> str:
    """'identical' (bit for bit), 'within 1e-5', or what differs."""
    import numpy as np

    if sorted(got) != sorted(want):
        return f"DIFFER: {len(set(got) ^ set(want))} entities have a vector in one index only"
    if got == want:
        return "identical"
    worst = max(float(np.abs(np.frombuffer(got[e], np.float32) - np.frombuffer(want[e], np.float32)).max())
                for e in want) if want else 0.0
    return "within 1e-5" if worst < 1e-5 else f"DIFFER by up to {worst:.2g}"


def cmd_actors(args) -> int:
    """A transformer (a user setting) on a pool of Ray actors (nsccn.indexing.ray_embed), one
    model load each, against `--in-process` embedding it in the one writer: a simulated cluster,
    interleaved rounds, fresh processes and indexes; the driver's CPU (the command's process tree)
    and the nodes' (the cluster's processes); the vectors compared."""
    tree = Path(args.tree).resolve()
    work = Path(tempfile.mkdtemp(prefix="nsccn-ray-actors-"))
    user = _user_config(work, args.model)
    rows = []
    try:
        with simulated_cluster(args.nodes) as (address, env):
            for i in range(args.rounds):
                for mode in ("ray", "in-process"):
                    d = work / f"{i}-{mode}"
                    extra = ("--ray", address) if mode == "ray" else ("--in-process", "--workers", "0")
                    before = cluster_cpu()
                    run, s = nsccn(tree, d, *extra, env={**env, **user}, embed=True)
                    nodes = cpu_since(before) if mode == "ray" else 0.0
                    rows.append({"round": i, "mode": mode, "run": run, "s": s, "nodes_cpu_s": nodes,
                                 "vectors": _vectors(d / "index.db"), "load": os.getloadavg()[0]})
                    shutil.rmtree(d, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    ref = rows[1]["s"]
    print(f"tree {tree.name}: {ref['files_indexed']} files, {ref['entities']} entities, {len(rows[1]['vectors'])} vectors"
          f" of {ref['vectors']['model']}; a simulated {args.nodes}-node cluster on loopback (the head runs no task);"
          f" {args.rounds} rounds, --ray then --in-process, each a fresh process and index")
    print("| round | run | wall s | driver CPU s | nodes CPU s | actors (on nodes) | actors' start s | embedding s |"
          " actors' CPU s | vectors vs in-process | load |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for k, r in enumerate(rows):
        ray = r["s"].get("ray") or {}
        sec = ray.get("seconds", {})
        same = _same_vectors(r["vectors"], rows[k + 1]["vectors"]) if r["mode"] == "ray" else "-"  # its round's
        print(f"| {r['round']} | {r['mode']} | {r['run'].wall_s:.1f} | {max(r['run'].cpu_s, r['run'].sampled_cpu_s):.1f} |"
              f" {r['nodes_cpu_s']:.1f} | {ray.get('embed_actors', '-')} ({len(ray.get('actors_by_node', {})) or '-'}) |"
              f" {sec.get('embed_actors_start', 0):.1f} | {sec.get('embed_on_actors', 0):.1f} |"
              f" {sec.get('embed_actors_cpu', 0):.1f} | {same} | {r['load']:.1f} |")
    ray_d = [r["run"].cpu_s for r in rows if r["mode"] == "ray"]
    loc_d = [r["run"].cpu_s for r in rows if r["mode"] == "in-process"]
    print(f"median driver CPU: --ray {statistics.median(ray_d):.1f} s, --in-process {statistics.median(loc_d):.1f} s")
    return 0


def cmd_real(args) -> int:
    """A real multi-process cluster, started the way users start one (`ray start --head`, then
    `ray start --address` for each other node: benchmarks/ray_start_cluster.py, in a network
    namespace with only loopback), joined by `nsccn index --ray 127.0.0.1:PORT` (the GCS) and
    `--ray ray://127.0.0.1:PORT` (Ray Client); each index compared with `--in-process`'s."""
    from ray_start_cluster import ray_start_cluster

    tree = Path(args.tree).resolve()
    work = Path(tempfile.mkdtemp(prefix="nsccn-ray-real-"))
    try:
        user = _user_config(work, args.model)
        t = time.perf_counter()
        _, ref = nsccn(tree, work / "local", "--in-process", embed=args.embed, env=user)
        local_s = time.perf_counter() - t
        a = index_identity.dump(str(work / "local" / "index.db"))
        want = _vectors(work / "local" / "index.db") if args.embed else {}
        rows = []
        before = set(listening_off_loopback())
        t = time.perf_counter()
        with ray_start_cluster(worker_nodes=args.nodes - 1, cpus_per_node=args.cpus) as c:
            up_s = time.perf_counter() - t
            exposed = sorted(set(listening_off_loopback()) - before)
            for label, address in (("GCS address", c.address), ("Ray Client", c.client_address)):
                for i in range(args.rounds):
                    d = work / f"{label}-{i}".replace(" ", "-")
                    cmd = c.inside([PY, "-m", "nsccn_cli", "index", str(tree), *(() if args.embed else ("--no-embed",)),
                                    "--json", "--ray", address])
                    run = run_tree(cmd, env={**os.environ, **c.env, **user, "NSCCN_INDEX_DIR": str(d)})
                    if run.returncode:
                        logs = Path(tempfile.mkdtemp(prefix="nsccn-ray-real-logs-"))
                        shutil.copytree(c.temp_dir / "session_latest" / "logs", logs, dirs_exist_ok=True)
                        raise SystemExit(f"{' '.join(cmd)} failed (the cluster's logs: {logs}):\n{run.stderr[-3000:]}")
                    s = json.loads(run.stdout)
                    diff = index_identity.compare(a, index_identity.dump(str(d / "index.db")))
                    same_vectors = _same_vectors(_vectors(d / "index.db"), want) if args.embed else None
                    rows.append((label, address, run, s, diff, same_vectors))
                    shutil.rmtree(d, ignore_errors=True)
            t = time.perf_counter()
        down_s = time.perf_counter() - t
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"tree {tree.name}: {ref['files_indexed']} files, {ref['entities']} entities, {ref['edges']} edges"
          f" (nsccn index --in-process: {local_s:.1f} s)")
    print(f"cluster: a head (0 CPUs) and {args.nodes - 1} node(s) of {args.cpus} CPU(s), each `ray start --block`, token"
          f" authentication; head up in {c.start_s['head']:.1f} s, the other nodes {c.start_s['worker_nodes']:.1f} s"
          f" (all {up_s:.1f} s), torn down in {down_s:.1f} s")
    print(f"new listening sockets off loopback on this host while it ran: {exposed or 'none'}")
    print("| joined through | index | vectors | tasks on nodes (address id: tasks) | wall s | driver CPU s |"
          " of it joining s | parse s |")
    print("|---|---|---|---|---|---|---|---|")
    ok = True
    for label, address, run, s, diff, same_vectors in rows:
        r = s["ray"]
        ok &= not diff and same_vectors in (None, "identical", "within 1e-5")
        vec = "-" if same_vectors is None else same_vectors
        vec += f" ({r['embed_actors']} actors)" if r.get("embed_actors") else ""
        print(f"| {label} `{address}` | {'identical' if not diff else 'DIFFERS: ' + '; '.join(diff)} | {vec} |"
              f" {r['nodes']} nodes, {r['tasks']} tasks: {r['tasks_by_node']} | {run.wall_s:.1f} |"
              f" {max(run.cpu_s, run.sampled_cpu_s):.1f} | {r['seconds']['ray_start']:.1f} | {r['seconds'].get('parse', 0):.1f} |")
    return 0 if ok else 1


def cmd_ceiling(args) -> int:
    """Parse every file first (in this process, timed: what a node does), then replay the results
    into a fresh index through IndexSession in the batches `nsccn index` commits (timed: what the
    one writer can take when results arrive faster than it commits)."""
    from nsccn.config import load_config
    from nsccn.indexing.index_session import IndexSession, look_at
    from nsccn.indexing.indexer import write_in_batches
    from nsccn.messages import decode, encode
    from nsccn.model import Parsed
    from nsccn.reading.scan import scan_repository
    from nsccn.store import WRITER_CACHE_MIB, Store

    print("| tree | files | entities | parse CPU s | files/s a core | commit CPU s (wall s) | files/s committed (CPU) |"
          " entities/s committed | resolve+rank CPU s | parsing cores one writer keeps up with |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for tree in args.trees:
        root = Path(tree).resolve()
        config = load_config(root)
        scan = scan_repository(root, config)
        t = time.process_time()
        frames = [encode(look_at(root, f.path, config.max_file_size)) for f in scan.files]
        parse_cpu = time.process_time() - t
        results = [decode(f) for f in frames]  # what arrives from the tasks
        work = Path(tempfile.mkdtemp(prefix="nsccn-ray-ceiling-"))
        try:
            with Store(work / "index.db", cache_mib=WRITER_CACHE_MIB) as store:
                session = IndexSession(store)
                t, c = time.perf_counter(), time.process_time()
                write_in_batches(session, results)
                commit_s, commit_cpu = time.perf_counter() - t, time.process_time() - c
                c = time.process_time()
                session.resolve(parallel=False)
                session.settle(len(scan.files))
                finish_cpu = time.process_time() - c
                entities = store.counts()["entities"]
        finally:
            shutil.rmtree(work, ignore_errors=True)
        files = sum(isinstance(r, Parsed) for r in results)
        per_core = files / parse_cpu
        committed = files / commit_cpu
        print(f"| {root.name} | {files} | {entities} | {parse_cpu:.1f} | {per_core:.0f} | {commit_cpu:.2f} ({commit_s:.2f}) |"
              f" {committed:.0f} | {entities / commit_cpu:.0f} | {finish_cpu:.1f} | {committed / per_core:.1f} |")
    return 0


def cmd_merge(args) -> int:
    """The alternative to one writer committing every result: workers writing SQLite shards that
    the writer merges (ATTACH + INSERT ... SELECT). Its floor, measured: copying the rows a
    commit makes (files, entities, refs, skeletons, symbols) from a finished index into an empty
    one, no id remapping (a real merge must remap symbol ids: more work, not less), against the
    CPU of committing the same results. The full-text indexes are contentless (FTS5
    content=''): their rows cannot be selected back out of a shard, so a merge re-inserts their
    text and pays their tokenizing in the writer as a commit does; they are left out of the floor."""
    from nsccn.config import load_config
    from nsccn.indexing.index_session import IndexSession, look_at
    from nsccn.model import Parsed
    from nsccn.reading.scan import scan_repository
    from nsccn.store import WRITER_CACHE_MIB, Store

    tables = ("symbols", "files", "entities", "refs", "skeletons")
    print("| tree | files | commit CPU s (all rows, FTS included) | merge floor CPU s (no FTS, no remap) | rows copied |")
    print("|---|---|---|---|---|")
    for tree in args.trees:
        root = Path(tree).resolve()
        config = load_config(root)
        scan = scan_repository(root, config)
        results = [look_at(root, f.path, config.max_file_size) for f in scan.files]
        work = Path(tempfile.mkdtemp(prefix="nsccn-ray-merge-"))
        try:
            with Store(work / "shard.db", cache_mib=WRITER_CACHE_MIB) as store:
                session = IndexSession(store)
                c = time.process_time()
                session.apply([r for r in results if isinstance(r, Parsed)])
                commit_cpu = time.process_time() - c
            with Store(work / "merged.db", cache_mib=WRITER_CACHE_MIB) as merged:
                conn = merged.conn
                conn.execute(f"ATTACH DATABASE '{work / 'shard.db'}' AS shard")
                c = time.process_time()
                rows = 0
                with conn:
                    for t in tables:
                        conn.execute(f"DELETE FROM main.{t}")
                        conn.execute(f"INSERT INTO main.{t} SELECT * FROM shard.{t}")
                        rows += conn.execute(f"SELECT COUNT(*) FROM main.{t}").fetchone()[0]
                merge_cpu = time.process_time() - c
                conn.execute("DETACH DATABASE shard")
            files = sum(isinstance(r, Parsed) for r in results)
            print(f"| {root.name} | {files} | {commit_cpu:.2f} | {merge_cpu:.2f} | {rows} |")
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return 0


def cmd_many(args) -> int:
    trees = [Path(t).resolve() for t in args.trees]
    work = Path(tempfile.mkdtemp(prefix="nsccn-ray-many-"))
    try:
        listing = work / "repos.txt"
        listing.write_text("".join(f"{t}\n" for t in trees))
        t = time.perf_counter()
        seq_cpu = 0.0
        files = 0
        for i, tree in enumerate(trees):
            run, s = nsccn(tree, work / "seq" / f"{i}", "--in-process", "--workers", "0")
            seq_cpu += max(run.cpu_s, run.sampled_cpu_s)
            files += s["files_indexed"]
        seq_wall = time.perf_counter() - t
        with simulated_cluster(args.nodes) as (address, env):
            cmd = [PY, "-m", "nsccn_cli", "index", "--ray", address, "--repos", str(listing), "--out", str(work / "ray"),
                   "--no-embed", "--json"]
            cpu0 = cluster_cpu()
            run = run_tree(cmd, env={**os.environ, **env})
            nodes_cpu = cpu_since(cpu0)
            out = json.loads(run.stdout)
            t = time.perf_counter()
            again = run_tree(cmd, env={**os.environ, **env})
            rerun_wall = time.perf_counter() - t
            parsed_again = sum(r["summary"].get("files_indexed", 0) for r in json.loads(again.stdout)["repositories"])
        same = sum(
            not index_identity.compare(index_identity.dump(str(work / "seq" / f"{i}" / "index.db")),
                                       index_identity.dump(r["summary"]["db_path"]))
            for i, r in enumerate(out["repositories"]) if r["ok"])
        print(f"{len(trees)} repositories, {files} files")
        print(f"  one `nsccn index --in-process` after another: wall {seq_wall:.1f} s, CPU {seq_cpu:.1f} s")
        print(f"  one --repos job on a simulated {args.nodes}-node cluster: wall {run.wall_s:.1f} s (Ray start"
              f" {out['ray']['start_s']:.1f} s of it), CPU {max(run.cpu_s, run.sampled_cpu_s) + nodes_cpu:.1f} s"
              f" (the driver's {max(run.cpu_s, run.sampled_cpu_s):.1f} s, the nodes' {nodes_cpu:.1f} s), {out['failed']} failed")
        print(f"  identical to the sequential indexes: {same} of {len(trees)}; a re-run: {rerun_wall:.1f} s,"
              f" {parsed_again} files parsed again")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    sp = sub.add_parser("identity")
    sp.add_argument("tree")
    sp.add_argument("--nodes", type=int, default=3)
    sp = sub.add_parser("cost")
    sp.add_argument("tree")
    sp.add_argument("--rounds", type=int, default=3)
    sp = sub.add_parser("vectors")
    sp.add_argument("tree")
    sp.add_argument("--nodes", type=int, default=3)
    sp.add_argument("--rounds", type=int, default=3)
    sp = sub.add_parser("real")
    sp.add_argument("tree")
    sp.add_argument("--nodes", type=int, default=2, help="Ray nodes, the head included (it runs no task)")
    sp.add_argument("--cpus", type=int, default=2, help="CPUs of each node but the head")
    sp.add_argument("--rounds", type=int, default=1)
    sp.add_argument("--embed", action="store_true", help="with vectors (the static model's, made on the nodes)")
    sp.add_argument("--model", help="the embedding model (a user setting; with --embed): e.g. minilm, on Ray actors")
    sp = sub.add_parser("actors")
    sp.add_argument("tree")
    sp.add_argument("--nodes", type=int, default=3)
    sp.add_argument("--rounds", type=int, default=2)
    sp.add_argument("--model", default="minilm", help="a transformer (the bundled MiniLM by default)")
    sp = sub.add_parser("ceiling")
    sp.add_argument("trees", nargs="+")
    sp = sub.add_parser("merge")
    sp.add_argument("trees", nargs="+")
    sp = sub.add_parser("many")
    sp.add_argument("trees", nargs="+")
    sp.add_argument("--nodes", type=int, default=3)
    args = p.parse_args()
    return {"identity": cmd_identity, "cost": cmd_cost, "ceiling": cmd_ceiling, "merge": cmd_merge,
            "many": cmd_many, "vectors": cmd_vectors, "real": cmd_real,
            "actors": cmd_actors}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
