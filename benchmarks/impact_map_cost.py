"""What the first `impact` after a coverage run pays to map the data file: each entity's fingerprint
over every file of an index (`nsccn.graph.recorded.fingerprints`: each line's code, as the inert check
reads it), beside a hash of the same lines' text (the rule before stop 58), in one run.

    python benchmarks/impact_map_cost.py TREE [--rounds 2]

TREE: an indexed tree (e.g. sympy). Alternates the two over the same files, `--rounds` times.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nsccn.graph.recorded import _innermost, fingerprints  # noqa: E402
from nsccn.store import Store  # noqa: E402


def text_fingerprints(data: bytes, entities: list) -> dict[str, int]:
    """The text rule: each entity's own lines, stripped, hashed."""
    lines = data.decode("utf-8", "replace").splitlines()
    owner = _innermost(entities)
    parts: dict[str, list[str]] = {e.id: [] for e in entities}
    for n in sorted(owner):
        if n - 1 < len(lines) and lines[n - 1].strip():
            parts[owner[n]].append(lines[n - 1].strip())
    return {eid: int.from_bytes(hashlib.blake2b("\n".join(p).encode(), digest_size=8).digest(), "big")
            for eid, p in parts.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tree")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    tree = Path(args.tree).resolve()
    store = Store(tree / ".nsccn" / "index.db", readonly=True)
    files = {p: ((tree / p).read_bytes(), store.entities_in_file(p)) for p in store.file_paths() if (tree / p).is_file()}
    lines = sum(d.count(b"\n") + 1 for d, _ in files.values())
    entities = sum(len(e) for _, e in files.values())
    print(f"{len(files)} files, {lines} lines, {entities} entities")
    for r in range(args.rounds):
        for name, fn in (("code", lambda p, d, e: fingerprints(p, d, e)), ("text", lambda p, d, e: text_fingerprints(d, e))):
            t0 = time.perf_counter()
            for path, (data, ents) in files.items():
                fn(path, data, ents)
            print(f"round {r + 1} {name}: {time.perf_counter() - t0:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
