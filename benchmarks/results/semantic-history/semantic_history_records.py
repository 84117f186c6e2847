#!/usr/bin/env python
"""Feature records of feature version 3 with version 4's three semantic-history columns appended
(`hist_sem_max`, `hist_sem_top3`, `hist_sem_similar`; a function's row its file's), computed from
the mirrors' git history instead of re-indexing every record (hours for the 10,533 mined ones).

    python benchmarks/results/semantic-history/semantic_history_records.py --out OUT_DIR \
        --queries DATASET.jsonl [--queries ...] [--fold-models F0.npz F1.npz F2.npz] RECORDS.features.jsonl ...

For each repository: `git log --topo-order --name-only` from its records' base commits; each record
reads the 3,000 commits from its base back (merges and commits without a message or a file left
out), their messages embedded by the static model as queries, as `nsccn` embeds them
(`commit_vectors.embed_commits`), and scores its candidate files as `history.semantic_fixes` does
(the best cosine of a commit that changed the file, the best three's mean, BugLocator's sum over the
50 most similar commits). A record of a training repository (`mine_history.REPOSITORIES`) is scored
with the fold model that never saw it (`--fold-models`: fold k held out REPOSITORIES[k::3]), the
rest with the shipped model. Checked against the product (`localize.py --features` with version 4,
agronholm/anyio's 120 records): median difference 8e-6 (float16 vectors), 177 of 13,428 values
missing in the product only (empty `__init__.py` files a commit added: `git log -p` shows no path
for them, `--name-only` does).
"""

import argparse
import json
import math
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

_ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(_ROOT))
sys.path.insert(0, str(_ROOT / "benchmarks"))
from mine_history import REPOSITORIES  # noqa: E402

from nsccn.reading.history import MAX_COMMITS, SIMILAR_COMMITS  # noqa: E402
from nsccn.vectors.static_embed import StaticModel, load_static_model  # noqa: E402


def git(gitdir: str, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", gitdir, *args], capture_output=True, check=True).stdout.decode(
        "utf-8", "replace")


def history(gitdir: str, bases: list[str]) -> tuple[list[str], list[str], list[list[str]], list[bool]]:
    """shas (topological order, newest first) back to MAX_COMMITS before the oldest base, with
    each commit's message, files and whether it is a merge."""
    order = git(gitdir, "rev-list", "--topo-order", *bases).split()
    pos = {s: i for i, s in enumerate(order)}
    n = max(pos[b] for b in bases) + MAX_COMMITS + 1
    out = git(gitdir, "log", "--topo-order", f"-n{n}", "--no-renames", "--name-only",
              "--format=%x00%H%x1f%P%x1f%B%x1f", *bases)
    shas, msgs, files, merges = [], [], [], []
    for chunk in out.split("\x00")[1:]:
        sha, parents, msg, rest = (chunk.split("\x1f") + [""] * 4)[:4]
        shas.append(sha)
        msgs.append(msg.strip())
        merges.append(len(parents.split()) > 1)
        files.append([line for line in rest.strip().splitlines() if line.strip()])
    return shas, msgs, files, merges


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("records", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--queries", type=Path, action="append", required=True,
                    help="a dataset the records were featured from (repeatable)")
    ap.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    ap.add_argument("--fold-models", type=Path, nargs=3)
    args = ap.parse_args()
    queries = {}
    for path in args.queries:
        for line in path.read_text().splitlines():
            if line.strip():
                d = json.loads(line)
                queries[d["instance_id"]] = d["problem_statement"]
    shipped = load_static_model()
    folds = [StaticModel.load(p) for p in args.fold_models] if args.fold_models else None
    args.out.mkdir(parents=True, exist_ok=True)
    for path in args.records:
        by_repo: dict[str, list[dict]] = defaultdict(list)
        for line in path.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                by_repo[r["repo"]].append(r)
        with open(args.out / path.name, "w") as fh:
            for repo, rs in by_repo.items():
                model = folds[REPOSITORIES.index(repo) % 3] if folds and repo in REPOSITORIES else shipped
                gitdir = str(args.mirrors / repo.replace("/", "+") / "repo")
                shas, msgs, files, merges = history(gitdir, sorted({r["base_commit"] for r in rs}))
                at = {s: i for i, s in enumerate(shas)}
                keep = [i for i in range(len(shas)) if not merges[i] and msgs[i] and files[i]]
                vec = np.zeros((len(shas), model.dim), dtype=np.float32)
                vec[keep] = model.embed([msgs[i] for i in keep], query=True)
                touch = defaultdict(list)
                for i in keep:
                    for f in files[i]:
                        touch[f].append(i)
                for r, q in zip(rs, model.embed([queries[r["instance_id"]] for r in rs], query=True)):
                    lo = at[r["base_commit"]]
                    hi = lo + MAX_COMMITS
                    window = [i for i in keep if lo <= i < hi]
                    sims = vec[window] @ q
                    shared: dict[str, float] = defaultdict(float)
                    for j in np.argsort(-sims)[:SIMILAR_COMMITS]:
                        i = window[j]
                        for f in files[i]:
                            shared[f] += max(float(sims[j]), 0.0) / math.sqrt(len(files[i]))
                    sim_of = dict(zip(window, sims.tolist()))

                    def of_file(p: str) -> list[float]:
                        values = sorted((sim_of[i] for i in touch.get(p, ()) if lo <= i < hi), reverse=True)
                        if not values:
                            return [math.nan] * 3
                        return [values[0], sum(values[:3]) / len(values[:3]), shared.get(p, 0.0)]

                    per_file = {p: of_file(p) for p in r["files"]}
                    r["file_rows"] = [row + per_file[p] for row, p in zip(r["file_rows"], r["files"])]
                    r["function_rows"] = [row + (per_file.get(fid.split(":")[1]) or of_file(fid.split(":")[1]))
                                          for row, fid in zip(r["function_rows"], r["functions"])]
                    fh.write(json.dumps(r) + "\n")
                print(f"{repo}: {len(rs)} records, {len(shas)} commits read", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
