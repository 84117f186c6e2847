"""How much of a cold index is the parse itself: CPU seconds of tree-sitter's parse alone, of the
Python extractor (parse + walk) and of `extract.parse_file` (+ skeleton and full-text terms) over
every .py file of a tree, in one process, interleaved over rounds (the machine is shared).

    python benchmarks/parse_floor.py TREE [--rounds 3] [--json OUT.json]

The parse is the floor under any indexer built on tree-sitter: issue 16's "< 12 s on 2 cores"
needs everything else (walk, store, resolution, PageRank) to fit in what the parse leaves.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from importlib.metadata import version
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def python_files(tree: Path) -> list[tuple[str, bytes]]:
    """The .py files `nsccn index` parses (its scan: ignore rules, size limit), with their bytes."""
    from nsccn.config import load_config
    from nsccn.reading.scan import scan_repository

    scan = scan_repository(tree, load_config(tree))
    return [(f.path, (tree / f.path).read_bytes()) for f in scan.files if f.path.endswith(".py")]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tree", type=Path)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)

    import tree_sitter as ts
    import tree_sitter_python

    from nsccn.reading.extract import parse_file
    from nsccn.languages.python import PythonExtractor

    files = python_files(args.tree)
    parser = ts.Parser(ts.Language(tree_sitter_python.language()))

    def each(work):  # one file's result dropped before the next, as an indexer does (held, 1,225 trees cost page faults)
        def run():
            for path, data in files:
                work(path, data)
        return run

    stages = {
        "parse": each(lambda path, data: parser.parse(data)),
        "parse + walk (PythonExtractor)": each(lambda path, data: PythonExtractor(path, data).extract()),
        "parse_file (+ terms)": each(parse_file),
    }
    cpu: dict[str, list[float]] = {name: [] for name in stages}
    for rnd in range(args.rounds):
        for name, run in stages.items():
            t = time.process_time()
            run()
            cpu[name].append(time.process_time() - t)
        print(f"round {rnd + 1}: " + ", ".join(f"{n} {v[-1]:.2f}" for n, v in cpu.items()),
              f"(load {os.getloadavg()[0]:.1f})", file=sys.stderr, flush=True)
    mb = sum(len(d) for _, d in files) / 1e6
    versions = {m: version(m) for m in ("tree-sitter", "tree-sitter-python")}
    print(f"{len(files)} files, {mb:.1f} MB; {versions}")
    print("| stage | CPU s, median of rounds | min | MB/s (median) |\n|---|---|---|---|")
    for name, vals in cpu.items():
        med = statistics.median(vals)
        print(f"| {name} | {med:.2f} | {min(vals):.2f} | {mb / med:.1f} |")
    if args.json:
        args.json.write_text(json.dumps({"files": len(files), "mb": mb, "versions": versions, "cpu_s": cpu}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
