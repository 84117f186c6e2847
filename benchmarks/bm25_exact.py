#!/usr/bin/env python
"""Is BM25 from the postings (nsccn.store.bm25) FTS5's own bm25(), bit for bit, on a real index?

    python benchmarks/bm25_exact.py INDEX.db OWNER/REPO [--n 40] [--dataset FILE]

For the first N bug reports of that repository in the dataset (default: the dev set), the
report's weighted query terms are matched both ways, on the entity table under four column
weightings (the stream's, two single columns, all equal) and on the whole-file table (path and
body as ranked): every matching row's score must be equal as a float (no tolerance) and the top
200 rows of `ORDER BY bm25(...)` in the same order. Exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nsccn.query.query_analysis import analyze_query  # noqa: E402
from nsccn.query.streams import BM25_WEIGHTS, FILE_WEIGHTS, any_of  # noqa: E402
from nsccn.store import Store  # noqa: E402

WEIGHTINGS = {
    "entities_fts": [BM25_WEIGHTS, (6.0, 0.0, 0.0, 0.0, 0.0), (0.0, 3.0, 0.0, 0.0, 0.0), (1.0, 1.0, 1.0, 1.0, 1.0)],
    "files_fts": [FILE_WEIGHTS],
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("db")
    ap.add_argument("repo")
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--dataset", default=str(Path(__file__).resolve().parents[2] / "shared/bench/swebench-dev.jsonl"))
    args = ap.parse_args()
    rows = [json.loads(line) for line in open(args.dataset) if line.strip()]
    reports = [r["problem_statement"] for r in rows if r["repo"] == args.repo][: args.n]
    checked = differ = misordered = 0
    with Store(args.db, readonly=True) as store:
        for table, weightings in WEIGHTINGS.items():
            for report in reports:
                terms = analyze_query(report).weighted_terms()
                found = store.bm25_matches(table, terms) if terms else None
                if found is None:
                    continue
                for weights in weightings:
                    w = ", ".join(map(str, weights))
                    fts5 = dict(store.conn.execute(
                        f"SELECT rowid, bm25({table}, {w}) FROM {table} WHERE {table} MATCH ?", (any_of(terms),)))
                    ours = dict(zip(found.rowids.tolist(), found.scores(weights).tolist()))
                    checked += len(fts5)
                    differ += len(fts5.keys() ^ ours.keys()) + sum(1 for r in fts5 if r in ours and ours[r] != fts5[r])
                    top = [r for (r,) in store.conn.execute(
                        f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY bm25({table}, {w}) LIMIT 200",
                        (any_of(terms),))]
                    misordered += found.rowids[found.order(found.scores(weights))][:200].tolist() != top
    print(f"{len(reports)} reports, {checked} matching rows compared: {differ} scores differ, "
          f"{misordered} top-200 lists out of order")
    return 1 if differ or misordered else 0


if __name__ == "__main__":
    sys.exit(main())
