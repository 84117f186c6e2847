#!/usr/bin/env python
"""Does the index depend on the order files are written in? A tree indexed twice in this process,
once with the parse results in the scan's order and once reversed, compared section by section
(benchmarks/index_identity.py: files, entities, edges, skeletons, full-text terms, ranks).

    python benchmarks/index_order.py TREE [--keep DIR]      # exit 0 when identical, 1 otherwise

The actor pipeline writes results as its parsers finish them; this is its worst case, made
deterministic. `--keep DIR`: leave both indexes there (DIR/forward.db, DIR/reversed.db).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import index_identity  # noqa: E402

from nsccn.indexing.index_session import look_at  # noqa: E402
from nsccn.indexing.indexer import index_repository  # noqa: E402


def _reversed(root, todo, config, known):
    for f in reversed(todo):
        yield look_at(str(root), f.path, config.max_file_size, known.get(f.path, (None,))[0])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tree")
    ap.add_argument("--keep", help="a directory for both indexes")
    args = ap.parse_args()
    tree = Path(args.tree).resolve()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="nsccn-index-order-"))
    work.mkdir(parents=True, exist_ok=True)
    dumps = {}
    try:
        for name, parse in (("forward", None), ("reversed", _reversed)):
            db = work / f"{name}.db"
            for old in work.glob(f"{name}.db*"):
                old.unlink()
            t = time.perf_counter()
            s = index_repository(tree, db, workers=1, embed=False, parse=parse)
            print(f"{name}: {s.files_indexed} files, {s.edges} edges in {time.perf_counter() - t:.1f} s", flush=True)
            dumps[name] = index_identity.dump(str(db))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    diff = index_identity.compare(dumps["forward"], dumps["reversed"])
    counts = ", ".join(f"{s} {len(dumps['forward'][s])}" for s in index_identity.SECTIONS)
    print(f"{tree}: {counts}")
    print("\n".join(diff) if diff else "identical")
    return 1 if diff else 0


if __name__ == "__main__":
    raise SystemExit(main())
