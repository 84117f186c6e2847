#!/usr/bin/env python
"""Report-like training pairs for the static model (stop 63: tried, not kept).

    python benchmarks/results/static-embedding/report_pairs.py pairs --mined mined.jsonl mined_extra.jsonl \
        --pairs pairs_all.jsonl --mirrors MIRRORS --out pairs_report.jsonl
    python benchmarks/results/static-embedding/report_pairs.py teacher --pairs pairs_report.jsonl \
        --texts texts.jsonl.gz --teacher teacher/teacher.npz --out DIR

A bug report is a title, some prose and a snippet that shows the bug; a mined commit message is a subject line
and maybe some prose. A fix's commit usually adds a test that reproduces the bug, so `pairs` makes a report-like
query of each mined pair whose commit added test code: the message, then the lines the commit added to test files
(Python, `nsccn.reading.testpaths`), up to 1,500 characters, in a fenced block; the positives and negatives are the
pair's. `teacher` embeds those queries with the bundled transformer, projects them with the corpus teacher's PCA
(`static_teacher.py`'s basis) and writes DIR/texts.jsonl.gz and DIR/teacher.npz: the corpus and its teacher file
with the report-like queries appended, for `train_static_embedder.py build --texts --teacher` (the regression
onto the teacher then also sees long report-like texts). `build --hold-out` drops a held-out repository's
report-like queries as it drops its messages (they are its pairs' texts).
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from embedder_eval import mirror_of  # noqa: E402

from nsccn.reading.testpaths import is_test_path  # noqa: E402

MAX_CODE = 1500  # characters of added test code: about a report's snippet


def added_test_code(gitdir: Path, commit: str) -> str:
    """The lines `commit` added to Python test files, without the diff's marks."""
    diff = subprocess.run(["git", "--git-dir", str(gitdir), "show", "--format=", "-U0", "--no-color", commit],
                          capture_output=True, text=True, errors="replace").stdout
    lines, keep = [], False
    for line in diff.splitlines():
        if line.startswith("diff --git"):
            path = line.split(" b/", 1)[-1]
            keep = path.endswith(".py") and is_test_path(path)
        elif keep and line.startswith("+") and not line.startswith("+++") and line[1:].strip():
            lines.append(line[1:])
    return "\n".join(lines)[:MAX_CODE]


def cmd_pairs(args) -> int:
    commits = {}
    for f in args.mined:
        for line in f.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                commits[r["instance_id"]] = (r["repo"], r["commit"])
    pairs = [json.loads(line) for line in args.pairs.read_text().splitlines() if line.strip()]

    def report_like(p: dict) -> dict | None:
        repo, commit = commits[p["id"]]
        code = added_test_code(mirror_of(args.mirrors, repo), commit)
        if code.count("\n") < 2:  # three lines at least: a snippet, not a one-line touch
            return None
        return dict(p, id=p["id"] + "-report", query=p["query"].rstrip() + "\n\n```python\n" + code + "\n```")

    with ThreadPoolExecutor(4) as pool:
        made = [q for q in pool.map(report_like, pairs) if q]
    args.out.write_text("".join(json.dumps(q) + "\n" for q in made))
    print(f"{len(made)} of {len(pairs)} pairs made report-like", file=sys.stderr)
    return 0


def cmd_teacher(args) -> int:
    from static_teacher import tokenizer

    queries = list(dict.fromkeys(json.loads(line)["query"] for line in args.pairs.read_text().splitlines() if line))
    vectors = tokenizer().embed(queries, batch_size=32).astype(np.float32)
    with np.load(args.teacher) as head:
        mean, basis, shards, n = head["mean"], head["basis"], int(head["shards"]), int(head["texts"])
    args.out.mkdir(parents=True, exist_ok=True)
    for k in range(shards):
        shutil.copy(args.teacher.with_name(f"{args.teacher.stem}-{k}.npz"), args.out / f"teacher-{k}.npz")
    np.savez(args.out / f"teacher-{shards}.npz", vectors=((vectors - mean) @ basis.T).astype(np.float32),
             scale=np.ones((len(queries), 1), np.float32))
    np.savez(args.out / "teacher.npz", mean=mean, basis=basis, shards=np.array(shards + 1),
             texts=np.array(n + len(queries)))
    with gzip.open(args.texts, "rt", encoding="utf-8") as src, \
            gzip.open(args.out / "texts.jsonl.gz", "wt", encoding="utf-8") as dst:
        for line in src:
            dst.write(line)
        for q in queries:
            dst.write(json.dumps(q) + "\n")
    print(f"{len(queries)} report-like queries appended to {n} texts", file=sys.stderr)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pairs")
    p.add_argument("--mined", type=Path, nargs="+", required=True)
    p.add_argument("--pairs", type=Path, required=True)
    p.add_argument("--mirrors", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    t = sub.add_parser("teacher")
    t.add_argument("--pairs", type=Path, required=True)
    t.add_argument("--texts", type=Path, required=True)
    t.add_argument("--teacher", type=Path, required=True)
    t.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    return cmd_pairs(args) if args.cmd == "pairs" else cmd_teacher(args)


if __name__ == "__main__":
    sys.exit(main())
