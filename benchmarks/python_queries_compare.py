"""Issue 15's open question, measured: would Python keep its edges and its speed on the
query-driven core (`nsccn.languages.queries`) instead of its own walker (`nsccn.languages.python`)?

    python benchmarks/python_queries_compare.py CHECKOUT [CHECKOUT ...] [--out benchmarks/results/python-queries]

Python queries for the core live in benchmarks/python_queries/ (definitions, references,
imports, causal patterns in the core's capture names; the import-binding and module-naming rules
that queries cannot say are the `PythonQueries` hooks below). For each checkout:

1. index it twice from scratch with the library path (one worker, same process, same resolver):
   once as shipped, once with the Python extractor swapped for the query core in this process
   only (`nsccn.languages.python.PythonExtractor` is replaced while that index runs);
2. compare entity ids and certain edges (confidence 1.0; source, relation, target) found by
   each and missed by the other, per relation, with examples;
3. time extraction (parse + extract, no writing) of every Python file with both, interleaved
   per file (A B, then B A for the next file), after one warm-up pass of both.

Results: `<repo>.json` (counts, examples, times) and `<repo>-missed.txt` (every certain edge one
side found and the other did not) under --out; a summary table in `table.md`.
"""

from __future__ import annotations

import argparse
import json
import os
import posixpath
import subprocess
import tempfile
import time
from collections import Counter
from functools import cached_property
from pathlib import Path

import tree_sitter as ts

import nsccn.languages.python as walker
from nsccn.indexing.indexer import index_repository
from nsccn.languages.queries import QueryExtractor, QueryLanguage, node_text
from nsccn.store import Store

QUERIES = Path(__file__).parent / "python_queries"
EXAMPLES = 10


class PythonQueries(QueryLanguage):
    """Python as a QueryLanguage: the .scm files above plus what they cannot say."""

    name = "python"
    extensions = (".py", ".pyi")
    self_names = ("self", "cls")
    # no wrapper_types: a decorator runs in the enclosing scope, and the walker files its calls there

    def grammar(self):
        import tree_sitter_python

        return tree_sitter_python.language()

    @cached_property
    def query(self) -> ts.Query:
        sources = [p.read_text() for p in sorted(QUERIES.glob("*.scm"))]
        sources.append("(comment) @comment\n")
        return ts.Query(self.language, "\n".join(sources))

    @cached_property
    def globals_query(self) -> ts.Query:
        # Module-level names (the resolver's `var:` targets); the core has no capture for them.
        return ts.Query(self.language, "(assignment left: [(identifier) @global (pattern_list (identifier) @global)])")

    def module_name(self, path: str, root: ts.Node) -> str:
        return walker.module_name(path) or "__init__"

    def bindings(self, ex: QueryExtractor, node: ts.Node, caps: dict) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        if node.type == "import_statement":
            for item in node.named_children:
                if item.type == "aliased_import":
                    out.append((node_text(item.child_by_field_name("alias")), node_text(item.child_by_field_name("name"))))
                elif item.type == "dotted_name":
                    dotted = node_text(item)
                    head = dotted.split(".")[0]
                    # `import a.b` binds `a` and imports `a.b`: the name and the edge differ
                    ex.imports.setdefault(head, head) if dotted != head else None
                    out.append((head if dotted == head else f"\0mod:{dotted}", dotted))
            return out
        module_node = node.child_by_field_name("module_name")
        if module_node is None:
            return out
        base = walker.absolute_module(ex.path, ex.module, module_node)  # the walker's rule
        for item in node.named_children:
            if item == module_node:
                continue
            if item.type == "wildcard_import":
                out.append((f"*{base}", base))
                continue
            if item.type == "aliased_import":
                target, alias = node_text(item.child_by_field_name("name")), node_text(item.child_by_field_name("alias"))
            elif item.type == "dotted_name":
                target = alias = node_text(item)
            else:
                continue
            out.append((alias, f"{base}.{target}" if base else target))
        return out

    def extract(self, path: str, data: bytes) -> QueryExtractor:
        ex = QueryExtractor(self, path, data).extract()
        tree = self.parser.parse(data)  # a second parse: the core does not hand its tree back
        ex.module_globals = [node_text(n) for n in ts.QueryCursor(self.globals_query).captures(tree.root_node).get("global", [])
                             if at_module_level(n)]
        return ex


def at_module_level(node: ts.Node) -> bool:
    """Whether an assignment target is module-scope (inside `if` / `try` counts): what the
    walker puts in module_globals."""
    node = node.parent
    while node is not None:
        if node.type in ("function_definition", "class_definition", "lambda"):
            return False
        node = node.parent
    return True


PYTHON_QUERIES = PythonQueries()


class QueryCoreExtractor:
    """Stands in for `PythonExtractor(path, data)` while the query-core index runs."""

    def __init__(self, path: str, data: bytes):
        self.path, self.data = path, data

    def extract(self) -> QueryExtractor:
        return PYTHON_QUERIES.extract(self.path, self.data)


def index(root: Path, db: Path, core: bool) -> tuple[set[str], set[tuple[str, str, str]], Counter, float]:
    original = walker.PythonExtractor
    if core:
        walker.PythonExtractor = QueryCoreExtractor
    try:
        t0 = time.perf_counter()
        index_repository(root, db_path=db, workers=1)
        wall = time.perf_counter() - t0
    finally:
        walker.PythonExtractor = original
    with Store(db, readonly=True) as store:
        entities = {r[0] for r in store.conn.execute(
            "SELECT e.id FROM entities e JOIN files f ON f.path = e.path WHERE f.language = 'python'")}
        edges = store.all_edges()
    all_counts = Counter(e.relation for e in edges)
    certain = {(e.source, e.relation, e.target) for e in edges if e.confidence >= 1.0}
    return entities, certain, all_counts, wall


def python_files(root: Path) -> list[str]:
    out = subprocess.run(["git", "-C", str(root), "ls-files", "*.py", "*.pyi"], capture_output=True, text=True, check=True)
    return [p for p in out.stdout.splitlines() if (root / p).is_file()]


def time_extraction(root: Path, paths: list[str]) -> dict:
    """Seconds per side over every file, interleaved per file (the order alternates)."""
    data = [(p, (root / p).read_bytes()) for p in paths]
    sides = {"walker": lambda p, d: walker.PythonExtractor(p, d).extract(),
             "queries": lambda p, d: PYTHON_QUERIES.extract(p, d)}
    for p, d in data[:50]:  # warm: grammars, queries, caches
        for run in sides.values():
            run(p, d)
    total = {"walker": 0.0, "queries": 0.0}
    ratios = []
    for i, (p, d) in enumerate(data):
        order = ("walker", "queries") if i % 2 == 0 else ("queries", "walker")
        took = {}
        for side in order:
            t0 = time.perf_counter()
            sides[side](p, d)
            took[side] = time.perf_counter() - t0
            total[side] += took[side]
        if took["walker"] > 0:
            ratios.append(took["queries"] / took["walker"])
    ratios.sort()
    return {"files": len(data), "bytes": sum(len(d) for _, d in data),
            "walker_s": round(total["walker"], 3), "queries_s": round(total["queries"], 3),
            "ratio_queries_over_walker": round(total["queries"] / total["walker"], 3),
            "median_file_ratio": round(ratios[len(ratios) // 2], 3) if ratios else None}


def compare(root: Path, out: Path) -> dict:
    name = root.name
    with tempfile.TemporaryDirectory() as tmp:
        w_ent, w_edges, w_all, w_wall = index(root, Path(tmp) / "walker.db", core=False)
        q_ent, q_edges, q_all, q_wall = index(root, Path(tmp) / "queries.db", core=True)
    relations = sorted({r for _, r, _ in w_edges | q_edges})
    only_w, only_q = sorted(w_edges - q_edges), sorted(q_edges - w_edges)
    by_rel = {}
    for rel in relations:
        w = {e for e in w_edges if e[1] == rel}
        q = {e for e in q_edges if e[1] == rel}
        by_rel[rel] = {"walker": len(w), "queries": len(q), "both": len(w & q),
                       "walker_only": len(w - q), "queries_only": len(q - w),
                       "walker_only_examples": [list(e) for e in sorted(w - q)[:: max(1, len(w - q) // EXAMPLES)][:EXAMPLES]],
                       "queries_only_examples": [list(e) for e in sorted(q - w)[:: max(1, len(q - w) // EXAMPLES)][:EXAMPLES]]}
    timing = time_extraction(root, python_files(root))
    result = {
        "repo": name, "commit": subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                                               text=True).stdout.strip(),
        "load_avg_1m": os.getloadavg()[0],
        "entities": {"walker": len(w_ent), "queries": len(q_ent), "both": len(w_ent & q_ent),
                     "walker_only": len(w_ent - q_ent), "queries_only": len(q_ent - w_ent),
                     "walker_only_examples": sorted(w_ent - q_ent)[:EXAMPLES],
                     "queries_only_examples": sorted(q_ent - w_ent)[:EXAMPLES]},
        "certain_edges": {"walker": len(w_edges), "queries": len(q_edges), "both": len(w_edges & q_edges),
                          "walker_only": len(only_w), "queries_only": len(only_q), "by_relation": by_rel},
        "all_edges_by_relation": {"walker": dict(w_all), "queries": dict(q_all)},
        "index_wall_s": {"walker": round(w_wall, 2), "queries": round(q_wall, 2)},
        "extraction": timing,
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(result, indent=1) + "\n")
    with open(out / f"{name}-missed.txt", "w") as f:
        f.write(f"# {name}: certain edges (confidence 1.0) the walker finds and the queries miss ({len(only_w)})\n")
        f.writelines(f"W {s} {r} {t}\n" for s, r, t in only_w)
        f.write(f"# ... and the queries find and the walker does not ({len(only_q)})\n")
        f.writelines(f"Q {s} {r} {t}\n" for s, r, t in only_q)
    return result


def table(results: list[dict]) -> str:
    rows = ["| repo | entities W / Q (W only, Q only) | certain edges W / Q | W only (queries miss) | Q only | "
            "extraction Q/W time | load |", "|---|---|---|---|---|---|---|"]
    for r in results:
        e, c, t = r["entities"], r["certain_edges"], r["extraction"]
        miss = ", ".join(f"{rel} {v['walker_only']}" for rel, v in c["by_relation"].items() if v["walker_only"])
        extra = ", ".join(f"{rel} {v['queries_only']}" for rel, v in c["by_relation"].items() if v["queries_only"])
        rows.append(f"| {r['repo']}@{r['commit'][:8]} | {e['walker']} / {e['queries']} ({e['walker_only']}, {e['queries_only']}) "
                    f"| {c['walker']} / {c['queries']} | {c['walker_only']} ({miss}) | {c['queries_only']} ({extra}) "
                    f"| {t['ratio_queries_over_walker']} ({t['walker_s']} s vs {t['queries_s']} s, {t['files']} files) "
                    f"| {r['load_avg_1m']:.1f} |")
    return "\n".join(rows) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkouts", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/python-queries"))
    args = ap.parse_args()
    results = [compare(root.resolve(), args.out) for root in args.checkouts]
    text = table(results)
    (args.out / "table.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
