#!/usr/bin/env python
"""Name search: for the classes, functions and methods of indexed repositories, query each by its
bare name (`send`), its qualified name (`Session.send`) and its dotted module path
(`src.requests.sessions.Session.send`), and score whether `search` puts a definition of exactly
that name first (definition@1) or among the first three (definition@3).

    python benchmarks/name_search.py TREE [TREE ...] [--sample 300] [--seed 41] [--out DIR]

Each TREE is an indexed checkout (its index where `nsccn index` put it). The search is the one
users get (`Navigator.search`, limit 10: vectors when the index has them, the learned ranker for
queries of three or more terms); beside it ("without"), the same search's ranking before the
definitions a query names are put first (`nsccn.query.name_query.names_first`): today's answer. Test code is never a target (`nsccn.reading.testpaths`, and Rust's
`mod tests`), nor a definition nested in a function.

What counts as "a definition of exactly that name" is this script's own reading of the query,
independent of search: bare -> every definition with that name; qualified -> every definition
whose qualified name ends with it (whole components); dotted -> the definition whose module path
plus qualified name is it. A query whose name has one such definition counts as "once", else as
"several" (for those, any of them counts as a hit: which one comes first is a matter of
centrality, not of exactness). A repository with more definitions than --sample is sampled (a
fixed seed: the same sample every run); each distinct query is asked once.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from collections import defaultdict
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE.parent))

import nsccn.serving.navigator  # noqa: E402
from nsccn.serving.navigator import Navigator  # noqa: E402
from nsccn.reading.testpaths import is_test_path  # noqa: E402

FORMS = ("bare", "qualified", "dotted")
KS = (1, 3)


def _is_test(path: str, qualname: str) -> bool:
    return is_test_path(path) or "tests" in qualname.split(".")[:-1]


def targets(nav: Navigator) -> list[dict]:
    """The non-test classes, functions and methods (not nested in a function) of an index."""
    store = nav.store
    modules = dict(store.conn.execute("SELECT path, module FROM files"))
    funcs = {(p, q) for p, q in store.conn.execute("SELECT path, qualname FROM entities WHERE kind IN ('func', 'method')")}
    out = []
    for eid, kind, path, qualname, name in store.conn.execute(
            "SELECT id, kind, path, qualname, name FROM entities WHERE kind IN ('class', 'func', 'method') ORDER BY id"):
        if _is_test(path, qualname) or not name.isidentifier():
            continue
        parts = qualname.split(".")
        if any((path, ".".join(parts[:n])) in funcs for n in range(1, len(parts))):
            continue  # a helper nested in a function: not a name anyone looks up from outside
        module = (modules.get(path) or "").replace("/", ".").strip(".")
        qualname = re.sub(r"#\d+(?=\.|$)", "", qualname)  # a second definition of a name (an overload): typed as the name
        out.append({"id": eid, "kind": kind, "path": path, "qualname": qualname, "name": name,
                    "dotted": f"{module}.{qualname}" if module else qualname})
    return out


def queries(defs: list[dict], sample: list[dict]) -> list[tuple[str, str, set[str]]]:
    """(form, query, the ids of every definition of exactly that name) for the sampled definitions."""
    by_name, by_dotted = defaultdict(set), defaultdict(set)
    by_suffix = defaultdict(set)
    for d in defs:
        by_name[d["name"]].add(d["id"])
        by_dotted[d["dotted"]].add(d["id"])
        parts = d["qualname"].split(".")
        for n in range(2, len(parts) + 1):
            by_suffix[".".join(parts[-n:])].add(d["id"])
    out: dict[tuple[str, str], set[str]] = {}
    for d in sample:
        out[("bare", d["name"])] = by_name[d["name"]]
        if "." in d["qualname"]:
            out[("qualified", d["qualname"])] = by_suffix[d["qualname"]]
        if d["dotted"] != d["qualname"]:
            out[("dotted", d["dotted"])] = by_dotted[d["dotted"]]
    return [(form, q, gold) for (form, q), gold in out.items()]


class Observed:
    """`Navigator.search` hands its ranking to `names_first` (nsccn.query.name_query), which lists the
    definitions a query names first: the ranking as it was before that step is today's answer
    without it. Seen here, so one search gives both sides (same index, same moment)."""

    def __init__(self):
        self.real = nsccn.serving.navigator.names_first
        self.before: list[str] = []
        nsccn.serving.navigator.names_first = self

    def __call__(self, store, query, hits, limit, kinds=None):
        self.before = [h.entity.id for h in hits[:limit]]
        return self.real(store, query, hits, limit, kinds)


def _rank(ids: list[str], gold: set[str]) -> int | None:
    return next((i for i, e in enumerate(ids, start=1) if e in gold), None)


def run_repo(tree: Path, sample_size: int, seed: int, observed: Observed | None) -> dict:
    nav = Navigator(tree)
    defs = targets(nav)
    sample = defs if len(defs) <= sample_size else random.Random(seed).sample(defs, sample_size)
    asked = queries(defs, sample)
    rows = []
    started = time.perf_counter()
    for form, q, gold in asked:
        ids = [r.id for r in nav.search(q, limit=10).results]
        row = {"form": form, "query": q, "definitions": len(gold), "rank": _rank(ids, gold), "top": ids[:3]}
        if observed is not None:
            row["rank_without"] = _rank(observed.before, gold)
        rows.append(row)
    seconds = time.perf_counter() - started
    nav.close()
    return {"tree": str(tree), "definitions": len(defs), "sampled": len(sample), "queries": len(rows),
            "seconds": round(seconds, 1), "rows": rows}


def score(rows: list[dict], rank: str = "rank") -> dict:
    """definition@k (percent) and the query count, over all, once and several, per form."""
    rows = [{**r, "rank": r[rank]} for r in rows if rank in r]
    out = {}
    for form in (*FORMS, "all"):
        picked = [r for r in rows if form == "all" or r["form"] == form]
        for group, keep in (("once", lambda r: r["definitions"] == 1), ("several", lambda r: r["definitions"] > 1),
                            ("all", lambda r: True)):
            g = [r for r in picked if keep(r)]
            if g:
                out[f"{form}/{group}"] = {"n": len(g), **{f"@{k}": round(100 * sum(1 for r in g if r["rank"] and r["rank"] <= k) / len(g), 1)
                                                          for k in KS}}
    return out


def table(name: str, scores: dict, without: dict | None = None) -> str:
    if not without:
        lines = [f"### {name}", "", "| form | names | n | def@1 | def@3 |", "|---|---|---:|---:|---:|"]
        for key, s in scores.items():
            form, group = key.split("/")
            lines.append(f"| {form} | {group} | {s['n']} | {s['@1']} | {s['@3']} |")
        return "\n".join(lines)
    lines = [f"### {name}", "", "| form | names | n | def@1 without | def@1 | def@3 without | def@3 |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for key, s in scores.items():
        form, group = key.split("/")
        w = without.get(key, {})
        lines.append(f"| {form} | {group} | {s['n']} | {w.get('@1')} | {s['@1']} | {w.get('@3')} | {s['@3']} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trees", nargs="+", type=Path)
    ap.add_argument("--sample", type=int, default=300, help="definitions sampled per repository (default 300)")
    ap.add_argument("--seed", type=int, default=41)
    ap.add_argument("--out", type=Path, help="directory for results.json and results.md")
    args = ap.parse_args()
    # "without": the same search's ranking before the named definitions are put first (an nsccn
    # that has no name_query, e.g. a checkout before it, has none: only its own numbers are shown).
    observed = Observed() if hasattr(nsccn.serving.navigator, "names_first") else None
    repos, everything, md = [], [], []
    for tree in args.trees:
        res = run_repo(tree, args.sample, args.seed, observed)
        repos.append(res)
        everything += res["rows"]
        scores, without = score(res["rows"]), score(res["rows"], "rank_without")
        res["scores"], res["scores_without"] = scores, without
        sampled = "" if res["sampled"] == res["definitions"] else f", sampled {res['sampled']} (seed {args.seed})"
        md.append(table(f"{tree.name}: {res['definitions']} definitions{sampled}, {res['queries']} queries, "
                        f"{res['seconds']} s", scores, without))
        a, w = scores.get("all/all", {}), without.get("all/all", {})
        print(f"{tree.name}: {res['queries']} queries, def@1 {w.get('@1')} -> {a.get('@1')}, def@3 {w.get('@3')} -> "
              f"{a.get('@3')} (once @1 {scores.get('all/once', {}).get('@1')}) in {res['seconds']} s", flush=True)
    overall, overall_without = score(everything), score(everything, "rank_without")
    md.insert(0, table(f"all repositories: {len(everything)} queries", overall, overall_without))
    text = "\n\n".join(md)
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "results.json").write_text(json.dumps({"overall": overall, "overall_without": overall_without,
                                                          "repos": repos}, indent=1))
        (args.out / "results.md").write_text(f"`{' '.join(['python', *sys.argv])}`\n\n{text}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
