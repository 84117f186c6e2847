#!/usr/bin/env python
"""Do two indexes hold the same thing? A canonical dump of an index, and a comparison of two.

    python benchmarks/index_identity.py dump INDEX.db > FILE        # the canonical form, one line a fact
    python benchmarks/index_identity.py compare OLD.db NEW.db       # exit 0 when equal, 1 otherwise

The dump is independent of how the schema stores things (text ids or integer ids, any schema
version this script knows), so an index built by an older nsccn can be compared with one built
by a newer: the guardrail of every change to the store, the writer or the extractor. Compared:
files (module, imports, globals, syntax-error lines), entities (every column but the rowid),
edges (source, relation, target, confidence, resolution, line), skeletons, the terms of both
full-text indexes (term, documents, occurrences) and PageRank (per entity id, 7 digits).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections.abc import Iterator

import apsw

SECTIONS = ("files", "entities", "edges", "skeletons", "entities_fts", "files_fts", "ranks")


def _schema(conn: apsw.Connection) -> int:
    return int(conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0])


def _rows(conn: apsw.Connection, section: str) -> Iterator[tuple]:
    text_ids = _schema(conn) <= 3  # schemas 1-3 keep ids as text in edges and refs
    if section == "files":
        yield from conn.execute("SELECT path, language, module, imports, module_globals, error_lines, line_count FROM files")
    elif section == "entities":
        yield from conn.execute(
            "SELECT id, kind, path, qualname, name, start_line, end_line, signature, docstring, decorators,"
            " parent, body_head FROM entities"
        )
    elif section == "edges":
        if text_ids:
            q = "SELECT source, relation, target, confidence, resolution, line FROM edges"
        else:
            q = (
                "SELECT s.name, r.name, t.name, e.confidence, h.name, e.line FROM edges e"
                " JOIN symbols s ON s.id = e.source JOIN symbols t ON t.id = e.target"
                " JOIN symbols r ON r.id = e.relation JOIN symbols h ON h.id = e.resolution"
            )
        for s, rel, t, conf, how, line in conn.execute(q):
            yield s, rel, t, round(float(conf), 6), how, line
    elif section == "skeletons":
        yield from conn.execute("SELECT path, content_hash, skeleton FROM skeletons")
    elif section in ("entities_fts", "files_fts"):
        conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab_{section} USING fts5vocab(main, {section}, 'col')")
        yield from conn.execute(f"SELECT term, col, doc, cnt FROM temp.vocab_{section}")
    elif section == "ranks":
        q = "SELECT e.id, r.rank FROM ranks r JOIN entities e ON e.rowid = r.entity_rowid"
        for eid, rank in conn.execute(q):
            yield eid, f"{rank:.7g}"


def dump(db: str) -> dict[str, list[str]]:
    """Section -> its facts, each a line, sorted."""
    conn = apsw.Connection(db, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return {s: sorted(repr(r) for r in _rows(conn, s)) for s in SECTIONS}
    finally:
        conn.close()


def digest(lines: list[str]) -> str:
    return hashlib.sha1("\n".join(lines).encode()).hexdigest()[:12]


def compare(a: dict[str, list[str]], b: dict[str, list[str]], show: int = 5) -> list[str]:
    """One line per section that differs (counts and a few facts only one side has)."""
    out = []
    for s in SECTIONS:
        if a[s] == b[s]:
            continue
        sa, sb = set(a[s]), set(b[s])
        only_a, only_b = sorted(sa - sb)[:show], sorted(sb - sa)[:show]
        out.append(f"{s}: {len(a[s])} vs {len(b[s])} facts; only in the first: {only_a}; only in the second: {only_b}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("db")
    c = sub.add_parser("compare")
    c.add_argument("old")
    c.add_argument("new")
    args = ap.parse_args(argv)
    if args.cmd == "dump":
        for section, lines in dump(args.db).items():
            for line in lines:
                print(f"{section}\t{line}")
        return 0
    a, b = dump(args.old), dump(args.new)
    for s in SECTIONS:
        same = "same" if a[s] == b[s] else "DIFFERENT"
        print(f"{s:13} {len(a[s]):>9} {digest(a[s])}  {len(b[s]):>9} {digest(b[s])}  {same}")
    diffs = compare(a, b)
    for line in diffs:
        print(line)
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
