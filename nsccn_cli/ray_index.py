"""`nsccn index --ray ADDRESS`: one repository (PATH) or many (`--repos FILE`) parsed on a Ray
cluster and written here (nsccn.indexing.ray_index, nsccn.indexing.ray_repos)."""

from __future__ import annotations

import sys
from pathlib import Path

from nsccn.serving.escape import one_line
from nsccn.serving.tools import EXIT_FAILED, EXIT_OK, EXIT_USAGE


def _say(text: str) -> None:
    print(f"nsccn: {text}", file=sys.stderr, flush=True)


def cmd_index_ray(args) -> int:
    from nsccn.indexing.ray_cluster import RayRefused, RayUnavailable, check_address, require_ray

    if not args.ray:
        _say("--repos and --out need --ray ADDRESS (local, auto, HOST:PORT or ray://HOST:PORT)")
        return EXIT_USAGE
    if args.out and not args.repos:
        _say("--out goes with --repos FILE (one index per repository under it)")
        return EXIT_USAGE
    if args.repos and args.path is not None:
        _say("give the repositories either as PATH or in --repos FILE, not both")
        return EXIT_USAGE
    try:
        check_address(args.ray)
    except RayRefused as exc:
        _say(str(exc))
        return EXIT_USAGE
    try:
        require_ray()
        return _many(args) if args.repos else _one(args)
    except RayUnavailable as exc:
        _say(str(exc))
        return EXIT_FAILED
    except RayRefused as exc:
        _say(one_line(str(exc)))
        return EXIT_FAILED


def _starting(args) -> None:
    if not args.json:
        where = "a local Ray runtime on 127.0.0.1" if args.ray == "local" else f"the Ray cluster at {args.ray}"
        _say(f"starting {where} (a few seconds)...")


def _one(args) -> int:
    from nsccn.config import load_config
    from nsccn.errors import ResolveFailed
    from nsccn.indexing.ray_cluster import ray_runtime
    from nsccn.indexing.ray_index import RayTaskFailed, index_with_ray
    from nsccn.store import is_disk_full
    from nsccn_cli import _Progress, _repository, print_index_summary

    root = _repository(args)
    if not root.is_dir():
        _say(f"{root} is not a directory")
        return EXIT_USAGE
    config = load_config(root.resolve())
    from supervisor.addresses import running_pipeline

    info = running_pipeline(root.resolve(), config)
    if info is not None:  # its writer owns the index: a second writer would go behind its back
        from supervisor.cli import busy_message

        _say(busy_message(info))
        return EXIT_FAILED
    progress = _Progress("parsing", "files", quiet=args.json)
    embed_progress = _Progress("embedding", "entities", quiet=args.json)
    _starting(args)
    try:
        with ray_runtime(args.ray) as runtime:
            summary = index_with_ray(root, runtime, config=config, progress=progress, embed=not args.no_embed,
                                     embed_progress=embed_progress)
    except RayTaskFailed as exc:  # what was committed stays: the next run goes on from there
        _say(f"{one_line(str(exc))}; what was committed stays, run the command again to complete the index")
        return EXIT_FAILED
    except ResolveFailed as exc:
        _say(f"{exc}; the index keeps its old edges and the next run resolves again")
        return EXIT_FAILED
    except Exception as exc:
        if not is_disk_full(exc):
            raise
        _say(f"disk full: the index of {root} could not be written ({is_disk_full(exc)}); what was committed stays:"
             " free some space and run `nsccn index` again")
        return EXIT_FAILED
    finally:
        progress.close()
        embed_progress.close()
    return print_index_summary(summary, args.json)


def _many(args) -> int:
    from nsccn.indexing.ray_cluster import ray_runtime
    from nsccn.indexing.ray_repos import ReposFileError, index_many, read_repos
    from nsccn_cli import _print_json

    try:
        jobs = read_repos(args.repos, args.out)
    except ReposFileError as exc:
        _say(one_line(str(exc)))
        return EXIT_USAGE
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)

    def done(r, finished: int, total: int) -> None:
        if args.json:
            return
        if r.ok:
            s = r.summary
            _say(f"[{finished}/{total}] {one_line(r.name)}: {s['files_indexed']} parsed, {s['files_unchanged']} unchanged,"
                 f" {s['entities']} entities in {r.seconds:.1f} s")
        else:
            _say(f"[{finished}/{total}] {one_line(r.name)} FAILED: {one_line(r.error)}")

    _starting(args)
    with ray_runtime(args.ray) as runtime:
        results = index_many(jobs, runtime, embed=not args.no_embed, done=done)
    failed = [r for r in results if not r.ok]
    if args.json:
        _print_json({"repositories": [r.as_dict() for r in results], "failed": len(failed),
                     "ray": {"address": runtime.address, "nodes": len(runtime.nodes), "cpus": runtime.cpus,
                             "start_s": round(runtime.started_s, 3)}})
    else:
        ok = len(results) - len(failed)
        print(f"indexed {ok} of {len(results)} repositories on Ray ({len(runtime.nodes)} node(s), {runtime.cpus} CPUs)")
        for r in results:
            where = r.summary.get("db_path", "") if r.ok else ""
            state = f"ok, {r.summary['files_indexed']} parsed -> {where}" if r.ok else f"FAILED: {r.error}"
            print(f"  {one_line(r.name)}: {one_line(state)}")
    return EXIT_FAILED if failed else EXIT_OK
