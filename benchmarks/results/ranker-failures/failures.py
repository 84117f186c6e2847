#!/usr/bin/env python
"""Where the learned ranker misses function@10 on the dev set, and two post-hoc ideas checked
against it (nineteenth stop).

    python failures.py dump --dev DEV.jsonl --mined MINED.jsonl [--mined ...] --out LORO.pkl
    python failures.py taxonomy LORO.pkl
    python failures.py caps LORO.pkl
    python failures.py caps --records 'HELDOUT_GLOB' --model RANKER.npz
    python failures.py callees LORO.pkl --index INDEX.db [--repo-prefix sympy]

`dump`: every dev query ranked by a model that never saw its repository (as
`train_ranker.py`'s leave-one-repository-out), its file and function order kept.
`taxonomy`: each function@10 miss by kind: a gold function that is not even a candidate, one
that is but ranks below 10, and the rank of the gold file. `caps`: at most C functions of one file
in the top 10 (a more varied list): function@5/10 beside the model's own order, query by query.
`callees`: how many gold functions are callees (one or two CALLS hops) of the model's top 5,
against how many other functions are (`INDEX.db`: one index of the repository, at one commit:
an estimate, not a feature).
"""

from __future__ import annotations

import argparse
import collections
import glob
import pickle
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from localize import aggregate, function_hit, instance_metrics, ranked_locs  # noqa: E402
from paired_sign import KEYS, compare  # noqa: E402

from nsccn.model import split_entity_id  # noqa: E402
from nsccn.ranking import load_ranker, order  # noqa: E402
from nsccn.ranking.features import Candidates  # noqa: E402
from nsccn.ranking.train import fit, load_records, rerank  # noqa: E402

CAPS = (None, 2, 3, 4, 5, 6)


def dump(dev_paths: list[Path], mined_paths: list[Path], out: Path) -> None:
    dev, mined = load_records(dev_paths), load_records(mined_paths)
    ranked = {}
    for repo in sorted({r["repo"] for r in dev}):
        ranker = fit(mined + [r for r in dev if r["repo"] != repo], seed=0)
        for r in (r for r in dev if r["repo"] == repo):
            files, functions = rerank(ranker, r)
            ranked[r["instance_id"]] = {"gold_files": r["gold_files"], "gold_functions": r["gold_functions"],
                                        "files": files[:50], "functions": functions[:50],
                                        "candidates": r["functions"]}
        print(f"{repo}: scored", file=sys.stderr)
    out.write_bytes(pickle.dumps(ranked))


def taxonomy(ranked: dict) -> None:
    kinds: dict[str, list] = collections.defaultdict(list)
    n = hits = 0
    for iid, r in ranked.items():
        gold = r["gold_functions"]
        if not gold:
            continue
        n += 1
        locs = ranked_locs(r["functions"])
        if function_hit(gold, locs, 10):
            hits += 1
            continue
        candidates = set(ranked_locs(r["candidates"]))
        file_rank = [r["files"].index(g) + 1 if g in r["files"] else None for g in r["gold_files"]]
        if not all(g in candidates for g in gold[:10]):
            kind = "a gold function is not a candidate"
        else:
            kind = f"all candidates, ranked below 10 ({min(len(gold), 10)} gold)"
        kinds[kind].append((iid, [locs.index(g) + 1 if g in locs else None for g in gold][:10], file_rank))
    print(f"function@10: {hits} of {n} ({100 * hits / n:.1f}%); the {n - hits} misses:\n")
    print("| kind | misses | gold file first |\n|---|---|---|")
    for kind, items in sorted(kinds.items(), key=lambda kv: -len(kv[1])):
        first = sum(1 for _, _, fr in items if fr and fr[0] == 1)
        print(f"| {kind} | {len(items)} | {first} |")
    for kind, items in sorted(kinds.items()):
        print(f"\n{kind}: (instance, ranks of the gold functions, ranks of the gold files)")
        for item in items:
            print("   ", *item)


def capped(functions: list[str], cap: int | None, k: int = 10) -> list[str]:
    if cap is None:
        return functions
    top, rest, per = [], [], collections.Counter()
    for f in functions:
        path = split_entity_id(f)[1]
        if len(top) < k and per[path] < cap:
            top.append(f)
            per[path] += 1
        else:
            rest.append(f)
    return top + rest


def caps(items: list[tuple]) -> None:
    scores = {c: {} for c in CAPS}
    for iid, gold_files, gold_functions, files, functions in items:
        for c in CAPS:
            scores[c][iid] = {"metrics": instance_metrics(gold_files, gold_functions, files[:50],
                                                          capped(functions, c)[:50])}
    ids = sorted(scores[None])
    print("| at most C functions of a file in the top 10 | " + " | ".join(KEYS) + " | vs the model's order |")
    print("|---|" + "---|" * (len(KEYS) + 1))
    for c in CAPS:
        m = aggregate(list(scores[c].values()))
        versus = "" if c is None else "; ".join(
            f"{key} +{b}/-{w} p {p:.2g}" for key in ("function@5", "function@10")
            for _, _, b, w, p in [compare(scores[None], scores[c], ids, key)])
        print(f"| {'none (the model)' if c is None else c} | " + " | ".join(f"{m[k]:.1f}" for k in KEYS)
              + f" | {versus} |")


def callees(ranked: dict, index: Path, prefix: str) -> None:
    import apsw

    conn = apsw.Connection(str(index), flags=apsw.SQLITE_OPEN_READONLY)
    calls: dict[str, set[str]] = collections.defaultdict(set)
    for s, t in conn.execute("SELECT s.name, t.name FROM edges e JOIN symbols s ON s.id = e.source "
                             "JOIN symbols t ON t.id = e.target WHERE e.relation = "
                             "(SELECT id FROM symbols WHERE name = 'CALLS')"):
        calls[s].add(t)
    entity_of = {f"{p}:{q}": i for i, p, q in conn.execute("SELECT id, path, qualname FROM entities")}
    counts = collections.Counter()
    for iid, r in ranked.items():
        if not iid.startswith(prefix) or not r["gold_functions"]:
            continue
        locs = ranked_locs(r["functions"])
        top = [entity_of[loc] for loc in locs[:5] if loc in entity_of]
        hop1 = set().union(*(calls[t] for t in top))
        hop2 = set().union(*(calls[t] for t in hop1)) - hop1
        counts["queries"] += 1
        counts["one hop, all functions"] += len(hop1)
        counts["two hops, all functions"] += len(hop2)
        for g in r["gold_functions"]:
            if g not in entity_of:
                counts["gold not in this index"] += 1
                continue
            where = "gold in the top 10" if g in locs[:10] else "gold below 10"
            counts[where] += 1
            counts[f"{where}, one hop"] += entity_of[g] in hop1
            counts[f"{where}, two hops"] += entity_of[g] in hop2
    for key, value in counts.items():
        print(f"{key}: {value}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("--dev", type=Path, action="append", required=True)
    d.add_argument("--mined", type=Path, action="append", required=True)
    d.add_argument("--out", type=Path, required=True)
    t = sub.add_parser("taxonomy")
    t.add_argument("loro", type=Path)
    c = sub.add_parser("caps")
    c.add_argument("loro", type=Path, nargs="?")
    c.add_argument("--records", help="a glob of feature records, ranked by --model instead of LORO.pkl")
    c.add_argument("--model", type=Path)
    g = sub.add_parser("callees")
    g.add_argument("loro", type=Path)
    g.add_argument("--index", type=Path, required=True)
    g.add_argument("--repo-prefix", default="sympy")
    args = ap.parse_args(argv)
    if args.cmd == "dump":
        dump(args.dev, args.mined, args.out)
    elif args.cmd == "taxonomy":
        taxonomy(pickle.loads(args.loro.read_bytes()))
    elif args.cmd == "callees":
        callees(pickle.loads(args.loro.read_bytes()), args.index, args.repo_prefix)
    elif args.records:
        if args.model is None:
            ap.error("--records needs --model")
        ranker = load_ranker(args.model)
        items = []
        for r in load_records(sorted(Path(p) for p in glob.glob(args.records))):
            fs, gs = ranker.score(Candidates(r["files"], r["file_rows"], r["functions"], r["function_rows"]))
            items.append((r["instance_id"], r["gold_files"], r["gold_functions"],
                          order(r["files"], fs, r["fusion_files"]), order(r["functions"], gs, r["fusion_functions"])))
        caps(items)
    elif args.loro:
        ranked = pickle.loads(args.loro.read_bytes())
        caps([(i, r["gold_files"], r["gold_functions"], r["files"], r["functions"]) for i, r in ranked.items()])
    else:
        ap.error("caps needs LORO.pkl or --records")
    return 0


if __name__ == "__main__":
    sys.exit(main())
