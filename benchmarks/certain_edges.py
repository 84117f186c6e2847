"""The certain edges (confidence 1.0) of one checkout, as indexed by the nsccn on sys.path: one
line each (relation, source, target, line, resolution), sorted, so two versions compare with
`comm`.

    python benchmarks/certain_edges.py CHECKOUT OUT.txt
    PYTHONPATH=<other nsccn checkout> python benchmarks/certain_edges.py CHECKOUT BASE.txt
    comm -23 <(cut -f1-4 BASE.txt) <(cut -f1-4 OUT.txt)     # certain edges the change lost
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from nsccn.indexing.indexer import index_repository
from nsccn.store import Store


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    root, out = Path(argv[0]), Path(argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "index.db"
        index_repository(root, db_path=db, workers=1)
        with Store(db, readonly=True) as store:
            rows = sorted({f"{e.relation}\t{e.source}\t{e.target}\t{e.line}\t{e.resolution}"
                           for e in store.all_edges() if e.confidence >= 1.0})
    out.write_text("".join(f"{r}\n" for r in rows))
    print(f"{len(rows)} certain edges -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
