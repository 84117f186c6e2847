#!/usr/bin/env python
"""Does the index depend on the order files are written in? A tree indexed twice in this process,
once with the parse results in the scan's order and once reversed, compared section by section
(benchmarks/index_identity.py: files, entities, edges, skeletons, full-text terms, ranks).

    python benchmarks/index_order.py TREE [--late N] [--keep DIR]   # exit 0 when identical, 1 otherwise

The actor pipeline writes results as its parsers finish them; this is its worst case, made
deterministic. `--late N`: a third index, of a copy of the tree less N of its files (evenly
spread over the scan's order), brought up to date by an update once they are put back, as an
edit session adds files (compared less PageRank, which an update of under 5% of the files
defers). `--keep DIR`: leave the indexes there (DIR/forward.db, reversed.db, late.db).
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
    ap = argparse.ArgumentParser(description="Does the index depend on the order files are written in?")
    ap.add_argument("tree")
    ap.add_argument("--late", type=int, default=0, help="files added by an update, after the others")
    ap.add_argument("--keep", help="a directory for the indexes")
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
        if args.late:
            dumps["late"] = _late(tree, work, args.late)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    counts = ", ".join(f"{s} {len(dumps['forward'][s])}" for s in index_identity.SECTIONS)
    print(f"{tree}: {counts}")
    failed = False
    for other in [n for n in dumps if n != "forward"]:
        a, b = dumps["forward"], dumps[other]
        if other == "late":  # an update this small defers PageRank (RANKS_REFRESH_SHARE): not compared
            a, b = {**a, "ranks": []}, {**b, "ranks": []}
        diff = index_identity.compare(a, b)
        print(f"forward vs {other}: " + ("\n".join(diff) if diff else "identical"))
        failed |= bool(diff)
    return 1 if failed else 0


def _late(tree: Path, work: Path, n: int) -> dict[str, list[str]]:
    """The index of a copy of `tree` less `n` files, then updated once they are back."""
    from nsccn.config import load_config
    from nsccn.reading.scan import scan_repository

    paths = [f.path for f in scan_repository(tree, load_config(tree)).files]
    late = set(paths[len(paths) // (2 * n)::max(1, len(paths) // n)][:n])
    copy = work / "late-tree"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(tree, copy, symlinks=True, ignore=lambda d, names: [
        x for x in names if Path(d, x).relative_to(tree).as_posix() in late])
    db = work / "late.db"
    for old in work.glob("late.db*"):
        old.unlink()
    t = time.perf_counter()
    index_repository(copy, db, workers=1, embed=False)
    for p in sorted(late):
        (copy / p).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(tree / p, copy / p)
    u = time.perf_counter()
    s = index_repository(copy, db, workers=1, embed=False)
    print(f"late: {len(paths) - len(late)} files in {u - t:.1f} s, then {s.files_indexed} added by an update in "
          f"{time.perf_counter() - u:.1f} s", flush=True)
    shutil.rmtree(copy, ignore_errors=True)
    return index_identity.dump(str(db))


if __name__ == "__main__":
    raise SystemExit(main())
