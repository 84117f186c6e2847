#!/usr/bin/env python
"""Does `nsccn train-ranker` (boosting on the repository's own fix commits) help? Measured per dev
repository, leave-one-repository-out.

    python benchmarks/adapt_eval.py --dev DEV_FEATURES --mined MINED_FEATURES --mirrors DIR
        --workdir WORKDIR [--repo owner/name] [--commits 300] [--out OUTDIR]

For each dev repository R: the base model is trained on the mined pairs and the other dev
repositories (as in train_ranker.py); R is indexed at the base commit of its earliest instance,
with the history that commit descends from, and `nsccn train-ranker`'s own-history training runs
there (nsccn.ranking.adapt); both models then score R's instances from DEV_FEATURES. Nothing
after R's earliest base commit is seen by the adapted model's training.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE))
sys.path.insert(0, str(_HERE.parent))
from localize import aggregate, materialize_tree  # noqa: E402
from train_ranker import HEADLINE, score_records  # noqa: E402

from nsccn.reading import history  # noqa: E402
from nsccn.indexing.indexer import index_repository  # noqa: E402
from nsccn.ranking.adapt import adapt, own_history_records  # noqa: E402
from nsccn.ranking.train import fit, load_records  # noqa: E402
from nsccn.store import Store  # noqa: E402


def earliest_commit(gitdir: Path, commits: set[str]) -> str:
    def when(c: str) -> int:
        return int(subprocess.run(["git", "-C", str(gitdir), "show", "-s", "--format=%ct", c],
                                  capture_output=True, text=True, check=True).stdout)
    return min(commits, key=when)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dev", type=Path, required=True)
    ap.add_argument("--mined", type=Path, required=True)
    ap.add_argument("--mirrors", type=Path, required=True)
    ap.add_argument("--workdir", type=Path, required=True)
    ap.add_argument("--repo", help="only this dev repository")
    ap.add_argument("--commits", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    dev = list({r["instance_id"]: r for r in load_records([args.dev])}.values())
    mined = load_records([args.mined])
    lines = ["| repository | model | n | own fix commits | " + " | ".join(HEADLINE) + " |",
             "|---|---|---|---|" + "---|" * len(HEADLINE)]
    for repo in sorted({r["repo"] for r in dev}):
        if args.repo and repo != args.repo:
            continue
        gitdir = args.mirrors / repo.replace("/", "+") / "repo"
        mine = [r for r in dev if r["repo"] == repo]
        start = earliest_commit(gitdir, {r["base_commit"] for r in mine})
        base = fit(mined + [r for r in dev if r["repo"] != repo])
        tree = args.workdir / repo.replace("/", "+") / "tree"
        db = args.workdir / repo.replace("/", "+") / "index.db"
        materialize_tree(gitdir, start, tree)
        index_repository(tree, db, workers=1)
        with Store(db) as store:
            history.update_history(store, gitdir, start)
            own = [r for r in own_history_records(store, args.commits) if any(r["file_labels"]) and any(r["function_labels"])]
        adapted = adapt(base, own, rounds=args.rounds) if len(own) >= 10 else None
        for name, model in (("shipped (LORO)", base), ("+ own history", adapted)):
            if model is None:
                lines.append(f"| {repo} | {name} | {len(mine)} | {len(own)} | too few own fix commits |")
                continue
            m = aggregate(score_records(mine, model))
            lines.append(f"| {repo} | {name} | {m['n']} | {len(own)} | "
                         + " | ".join(f"{m[k]:.1f}" if m[k] is not None else "–" for k in HEADLINE) + " |")
        print("\n".join(lines[-2:]), file=sys.stderr, flush=True)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "adapt.md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
