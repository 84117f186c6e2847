"""Per language, on one real repository each: indexing speed (files/s, LOC/s), entities, edges by
relation and how they were resolved, skeleton token reduction, and a random sample of edges to
read by hand.

    python benchmarks/languages_bench.py CHECKOUT [CHECKOUT ...] [--out benchmarks/results/languages] [--sample 30]

Each checkout is indexed from scratch into a temporary index (one worker, the library path), so
timings include scanning, parsing, writing and resolving. Results: one JSON per repository and a
markdown table (`table.md`); `sample-<repo>.txt` holds the sampled edges with their source lines.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path

from nsccn.indexing.indexer import index_repository
from nsccn.languages.tags import LANGUAGES as LONG_TAIL
from nsccn.store import Store
from nsccn.tokens import count_tokens

CODE = ("python", "javascript", "typescript", "tsx", "go", "rust", "java", *LONG_TAIL)  # not `text`


def bench(root: Path, out: Path, sample: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "index.db"
        t0 = time.perf_counter()
        index_repository(root, db_path=db, workers=1)
        wall = time.perf_counter() - t0
        with Store(db, readonly=True) as store:
            c = store.conn
            by_lang = {lang: (n, loc) for lang, n, loc in
                       c.execute("SELECT language, COUNT(*), SUM(line_count) FROM files GROUP BY language")}
            entities = dict(c.execute("SELECT kind, COUNT(*) FROM entities GROUP BY kind"))
            all_edges = store.all_edges()
            edges = Counter(e.relation for e in all_edges)
            non_contains = [e for e in all_edges if e.relation != "CONTAINS"]
            certain = sum(1 for e in non_contains if e.confidence >= 0.9)
            other = len(non_contains)
            resolutions = Counter(e.resolution.split(":")[0] for e in non_contains)
            source_tokens = skeleton_tokens = 0
            for path, skeleton, language in c.execute(
                    "SELECT s.path, s.skeleton, f.language FROM skeletons s JOIN files f USING(path)"):
                if language not in CODE:
                    continue
                source_tokens += count_tokens((root / path).read_text("utf-8", "replace"))
                skeleton_tokens += count_tokens(skeleton)
            rows = [(e.source, e.relation, e.target, e.confidence, e.resolution, e.path, e.line) for e in non_contains]
    random.Random(15).shuffle(rows)
    name = root.name
    lines = []
    for source, relation, target, conf, how, path, line in rows[:sample]:
        text = (root / path).read_text("utf-8", "replace").splitlines()
        at = text[line - 1].strip() if 0 < line <= len(text) else ""
        lines.append(f"{relation} {source} -> {target}  [{how} {conf}]\n    {path}:{line}: {at[:160]}\n")
    (out / f"sample-{name}.txt").write_text("".join(lines))
    files = sum(n for lang, (n, _) in by_lang.items() if lang in CODE)
    loc = sum(l or 0 for lang, (_, l) in by_lang.items() if lang in CODE)
    commit = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    result = {
        "repository": name, "commit": commit, "wall_s": round(wall, 2), "files": files, "loc": loc,
        "files_per_s": round(files / wall, 1), "loc_per_s": round(loc / wall), "languages": by_lang,
        "entities": entities, "edges": edges, "certain_share": round(certain / max(1, other), 3),
        "resolutions": dict(resolutions.most_common()),
        "skeleton_reduction": round(1 - skeleton_tokens / max(1, source_tokens), 3),
        "load": os.getloadavg()[0],
    }
    (out / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("roots", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/languages"))
    ap.add_argument("--sample", type=int, default=30)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    table = ["| repository | files | LOC | files/s | LOC/s | entities | CALLS | IMPORTS | INHERITS | MUTATES | READS_CONFIG "
             "| PROPAGATES_ERROR | certain | skeleton tokens saved |", "|" + "---|" * 14]
    for root in args.roots:
        r = bench(root.resolve(), args.out, args.sample)
        e = r["edges"]
        table.append(f"| {r['repository']}@{r['commit']} | {r['files']} | {r['loc']} | {r['files_per_s']} | {r['loc_per_s']} "
                     f"| {sum(r['entities'].values())} | {e.get('CALLS', 0)} | {e.get('IMPORTS', 0)} | {e.get('INHERITS', 0)} "
                     f"| {e.get('MUTATES', 0)} | {e.get('READS_CONFIG', 0)} | {e.get('PROPAGATES_ERROR', 0)} "
                     f"| {r['certain_share']:.0%} | {r['skeleton_reduction']:.0%} |")
        print(table[-1], f"(load {r['load']:.1f})", flush=True)
    (args.out / "table.md").write_text("\n".join(table) + "\n")


if __name__ == "__main__":
    main()
