#!/usr/bin/env python
"""Does the index grow under incremental updates? Index a copy of a tree, then edit one file at a
time and re-index incrementally, ROUNDS times; the size of the database (checkpointed, free pages
included: what is on disk) after the first index and after the last update.

    python benchmarks/index_growth.py TREE [--rounds 100] [--files 20]

Each round rewrites one of FILES files (in turn) as its original text plus one small function
whose name alternates, so the repository's content stays the same size: any growth is the store's.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import apsw

from nsccn.indexing.indexer import index_repository


def db_bytes(db: Path) -> int:
    conn = apsw.Connection(str(db))
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        pages, size = conn.execute("PRAGMA page_count").fetchone()[0], conn.execute("PRAGMA page_size").fetchone()[0]
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
    finally:
        conn.close()
    return pages * size, free * size


def stale_full_text_rows(db: Path) -> int:
    """entities_fts rows whose entity is gone (BM25 counts them; none should exist)."""
    conn = apsw.Connection(str(db))
    try:
        return conn.execute("SELECT count(*) FROM entities_fts_docsize WHERE id NOT IN (SELECT rowid FROM entities)"
                            ).fetchone()[0]
    finally:
        conn.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("tree")
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--files", type=int, default=20)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="nsccn-growth-"))
    try:
        root = tmp / "tree"
        shutil.copytree(args.tree, root, symlinks=True)
        db = tmp / "index.db"
        index_repository(root, db, workers=1)
        start, start_free = db_bytes(db)
        start_stale = stale_full_text_rows(db)
        py = sorted(p for p in root.rglob("*.py") if ".nsccn" not in p.parts)
        step = max(1, len(py) // args.files)
        chosen = py[::step][: args.files]
        originals = {p: p.read_text(encoding="utf-8", errors="replace") for p in chosen}
        t = time.perf_counter()
        for i in range(args.rounds):
            p = chosen[i % len(chosen)]
            p.write_text(originals[p] + f"\n\ndef _nsccn_growth_{i % 2}():\n    return {i}\n", encoding="utf-8")
            st = p.stat()
            os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000 * (i + 1)))  # a new mtime even within one tick
            index_repository(root, db, workers=1)
        seconds = time.perf_counter() - t
        end, end_free = db_bytes(db)
        end_stale = stale_full_text_rows(db)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"after the first index: {start / 2**20:.1f} MB ({start_free / 2**20:.1f} MB free pages)")
    print(f"after {args.rounds} incremental updates: {end / 2**20:.1f} MB ({end_free / 2**20:.1f} MB free pages);"
          f" growth {100 * (end - start) / start:+.1f}%; {seconds / args.rounds:.2f} s an update")
    print(f"full-text rows of entities that are gone: {start_stale} after the first index, {end_stale} after the updates")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
