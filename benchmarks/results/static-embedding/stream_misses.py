#!/usr/bin/env python
"""Where the static stream's function@10 misses are: the gold file's rank, the gold function's rank in
the stream and by cosine, the gold file's size (a diagnostic of stop 67; nothing is chosen by it).

    python benchmarks/results/static-embedding/stream_misses.py --dataset D.jsonl --mirrors MIRRORS [--model M.npz]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
for _p in (HERE, HERE.parents[1], HERE.parents[2]):
    sys.path.insert(0, str(_p))
from embedder_eval import corpus, mirror_of, newest_commit  # noqa: E402
from stream_variants import Repo, variant  # noqa: E402

from nsccn.vectors.static_embed import STATIC_MAX_CHARS, StaticModel  # noqa: E402


def bucket(x: int, cuts: list[int]) -> str:
    return next((f"<={c}" for c in cuts if x <= c), f">{cuts[-1]}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", type=Path, required=True)
    ap.add_argument("--mirrors", type=Path, required=True)
    ap.add_argument("--model", type=Path, default=HERE.parents[2] / "nsccn/models/static-code-v2/model.npz")
    args = ap.parse_args()
    m = StaticModel.load(args.model)
    recs = [json.loads(line) for line in args.dataset.read_text().splitlines() if line.strip()]
    by = defaultdict(list)
    for r in recs:
        by[r["repo"]].append(r)
    rows = []
    for repo, rs in by.items():
        g = mirror_of(args.mirrors, repo)
        parts = corpus(g, newest_commit(g, {x["base_commit"] for x in rs}))
        R = Repo(m, parts, STATIC_MAX_CHARS)
        for rec in rs:
            gold = list(dict.fromkeys(rec["gold_functions"]))
            if not gold or not all(x in parts for x in gold):
                continue
            s = variant("shipped", R, rec["problem_statement"])
            order = [R.ids[j] for j in np.argsort(-s, kind="stable")]
            files = list(dict.fromkeys(i.split(":", 1)[0] for i in order))
            pos = {e: k for k, e in enumerate(order)}
            gf = {x.split(":", 1)[0] for x in gold}
            frank = max(files.index(f) for f in gf)
            grank = max(pos[x] for x in gold[:10])
            cos = R.context.cosines(R.docs, m.embed([rec["problem_statement"]], query=True)[0])
            crank = {x: int((cos > cos[R.ids.index(x)]).sum()) for x in gold}
            rows.append(dict(id=rec["instance_id"], n_gold=len(gold), n_files=len(gf), file_rank=frank, fn_rank=grank,
                             cos_rank=max(crank.values()), hit10=grank < 10, len=len(rec["problem_statement"]),
                             file_size=max(sum(1 for i in R.ids if i.startswith(f + ":")) for f in gf)))
    miss = [r for r in rows if not r["hit10"]]
    print(len(rows), "queries;", len(miss), "miss function@10")
    print("misses by gold count:", Counter(min(r["n_gold"], 4) for r in miss), " all:", Counter(min(r["n_gold"], 4) for r in rows))
    print("misses by gold files:", Counter(r["n_files"] for r in miss))
    print("misses, gold file's rank (0 = first):", Counter(bucket(r["file_rank"], [0, 1, 4, 9, 49]) for r in miss))
    print("misses, gold function's stream rank:", Counter(bucket(r["fn_rank"], [19, 49, 99, 199, 999]) for r in miss))
    print("misses, gold function's cosine rank:", Counter(bucket(r["cos_rank"], [199, 999, 4999]) for r in miss))
    print("misses with the gold file first, its size:", sorted(r["file_size"] for r in miss if r["file_rank"] == 0))
    print("misses with the gold file first, single gold:", sum(1 for r in miss if r["file_rank"] == 0 and r["n_gold"] == 1), "fn ranks", sorted(r["fn_rank"] for r in miss if r["file_rank"] == 0 and r["n_gold"] == 1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
