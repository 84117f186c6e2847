#!/usr/bin/env python
"""Are the learned ranker's inputs on Python unchanged by a code change? (issue 15, item 4)

The shipped model (nsccn/models/ranker/ranker.npz) was trained on the features of Python
repositories; making query analysis, test-file rules and features language-agnostic must not
move a single value on Python, or the model scores inputs it never saw. Cheaper and stricter
than re-running `benchmarks/localize.py`: dump everything the model reads with one code tree,
dump it again with another, compare bit for bit.

    python benchmarks/features_identity.py dump --code OLD_CHECKOUT --dataset FILE --index REPO=INDEX.db ... --out old.json
    python benchmarks/features_identity.py dump --code NEW_CHECKOUT ... --out new.json
    python benchmarks/features_identity.py compare old.json new.json

A dump holds, for every report of the dataset, its query analysis (terms, identifiers, paths,
frames, counts, caps); for every file of each index, `is_test_path`; and for every report of a
repository given with `--index`, the candidate files and functions with their feature rows
(lexical fusion only: the indexes carry no vectors, so vector features are the NaN the model
also sees without vectors) and the shipped model's top 10 files and functions, so where a
feature does differ the effect on the answer shows. Floats are written as their hex form, so equal means bit-identical.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path


def _hex(x: float) -> str:
    return "nan" if isinstance(x, float) and math.isnan(x) else float(x).hex()


def dump(args) -> None:
    sys.path.insert(0, str(Path(args.code).resolve()))  # the nsccn of that checkout
    import nsccn
    from nsccn.ranking import active_ranker, featurize
    from nsccn.ranking.features import candidates
    try:
        from nsccn.query.query_analysis import analyze_query
        from nsccn.reading.testpaths import is_test_path
    except ImportError:  # a checkout from before search was split (issue 40)
        from nsccn.query.search import analyze_query, is_test_path
    from nsccn.store import Store

    print(f"nsccn from {Path(nsccn.__file__).parent}", file=sys.stderr)
    ranker, _ = active_ranker()  # the shipped model: what users get
    reports = [json.loads(line) for line in open(args.dataset)]
    out: dict = {"analysis": {}, "test_paths": {}, "features": {}, "rankings": {}}
    for r in reports:
        a = analyze_query(r["problem_statement"])
        out["analysis"][r["instance_id"]] = {
            "terms": a.terms, "identifiers": a.identifiers, "paths": a.paths,
            "frames": [list(f) for f in a.frames], "counts": a.counts, "capped": a.capped,
        }
    for spec in args.index:
        repo, db = spec.split("=", 1)
        with Store(db, readonly=True) as store:
            paths = [p for (p,) in store.conn.execute("SELECT path FROM files ORDER BY path")]
            out["test_paths"][repo] = {p: is_test_path(p) for p in paths}
            for r in reports:
                if r["repo"] != repo:
                    continue
                fusion, vector = featurize(store, r["problem_statement"], use_vectors=False)
                c = candidates(store, r["problem_statement"], fusion, vector)
                files, functions = ranker.rank(store, fusion, vector, r["problem_statement"])
                out["features"][r["instance_id"]] = {
                    "files": c.files, "file_rows": [[_hex(x) for x in row] for row in c.file_rows],
                    "functions": c.functions, "function_rows": [[_hex(x) for x in row] for row in c.function_rows],
                }
                out["rankings"][r["instance_id"]] = {"files": files[:10], "functions": functions[:10]}
                print(f"{r['instance_id']}: {len(c.files)} files, {len(c.functions)} functions", file=sys.stderr)
    Path(args.out).write_text(json.dumps(out))


def compare(args) -> int:
    old, new = json.loads(Path(args.old).read_text()), json.loads(Path(args.new).read_text())
    differ = 0
    for section in ("analysis", "test_paths", "features", "rankings"):
        keys = sorted(set(old[section]) | set(new[section]))
        changed = [k for k in keys if old[section].get(k) != new[section].get(k)]
        if section == "test_paths":
            changed = [f"{k}: {p} {old[section][k].get(p)} -> {new[section][k].get(p)}" for k in keys
                       for p in sorted(set(old[section].get(k, {})) | set(new[section].get(k, {})))
                       if old[section].get(k, {}).get(p) != new[section].get(k, {}).get(p)]
            total = sum(len(v) for v in new[section].values())
        else:
            total = len(keys)
        print(f"{section}: {total - len(changed)} of {total} identical")
        for k in changed[:20]:
            print(f"  differs: {k}")
        differ += len(changed)
    return 1 if differ else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("--code", required=True, help="checkout whose nsccn computes the dump")
    d.add_argument("--dataset", required=True)
    d.add_argument("--index", action="append", default=[], help="OWNER/NAME=path/to/index.db")
    d.add_argument("--out", required=True)
    c = sub.add_parser("compare")
    c.add_argument("old")
    c.add_argument("new")
    args = ap.parse_args()
    if args.cmd == "dump":
        dump(args)
        return 0
    return compare(args)


if __name__ == "__main__":
    sys.exit(main())
