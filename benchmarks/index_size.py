#!/usr/bin/env python
"""Where an index's bytes go: pages per table and index (SQLite's dbstat), largest first.

    python benchmarks/index_size.py INDEX.db
"""

from __future__ import annotations

import sys

import apsw


def sizes(db: str) -> list[tuple[str, int]]:
    conn = apsw.Connection(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return conn.execute("SELECT name, SUM(pgsize) s FROM dbstat GROUP BY name ORDER BY s DESC").fetchall()
    finally:
        conn.close()


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    rows = sizes(argv[0])
    total = sum(s for _, s in rows)
    print("| table or index | MB | share |\n|---|---:|---:|")
    for name, s in rows:
        if s >= 0.05 * 2**20:
            print(f"| {name} | {s / 2**20:.1f} | {100 * s / total:.0f}% |")
    print(f"| total | {total / 2**20:.1f} | |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
