#!/usr/bin/env python
"""Query latency p50/p99 of the library calls on an existing index, and skeleton token reduction.

    python benchmarks/query_latency.py ROOT [--n 300] [--db INDEX] [--reports FILE]

ROOT must be indexed (`nsccn index ROOT`, or give the index with --db). When the index has
vectors, hybrid search (every signal, the query embedded on the CPU) is timed too, for short
name-like queries and, with --reports (a JSONL file with a `problem_statement` per line, such as
the localization dataset), for whole bug reports. Entities and files are sampled with a fixed seed.
Skeleton reduction is measured over every indexed file with the o200k_base tokenizer:
sum(skeleton tokens) / sum(source tokens).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

from nsccn.graph.trace import trace
from nsccn.serving.navigator import Navigator
from nsccn.vectors import semantic
from nsccn.query.fusion import search
from nsccn.vectors.semantic import default_embedder, has_vectors
from nsccn.vectors.table import VectorStore
from nsccn.tokens import count_tokens


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def timed(fn, args_list) -> list[float]:
    out = []
    for a in args_list:
        t = time.perf_counter()
        fn(*a)
        out.append((time.perf_counter() - t) * 1000)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--db", help="the index (default ROOT/.nsccn/index.db)")
    ap.add_argument("--reports", help="JSONL with problem_statement fields: bug reports as queries")
    args = ap.parse_args()
    nav = Navigator(Path(args.root), db_path=args.db)
    store = nav.store
    rng = random.Random(7)
    ids = [i for (i,) in store.conn.execute("SELECT id FROM entities WHERE kind IN ('func','method') ORDER BY id")]
    files = store.file_paths()
    sample_ids = rng.sample(ids, min(args.n, len(ids)))
    sample_files = rng.sample(files, min(args.n, len(files)))
    names = [i.rsplit(":", 1)[-1].rsplit(".", 1)[-1].replace("_", " ") for i in sample_ids]
    rows = {
        "trace downstream depth 3": timed(lambda i: trace(store, i, "downstream", 3), [(i,) for i in sample_ids]),
        "trace upstream depth 3": timed(lambda i: trace(store, i, "upstream", 3), [(i,) for i in sample_ids]),
        "skeleton (cached, from the store)": timed(lambda f: store.skeleton(f), [(f,) for f in sample_files]),
        "window (context 5)": timed(lambda i: nav.window(i, 5), [(i,) for i in sample_ids]),
        "lexical search (bm25 + exact)": timed(
            lambda q: search(store, q, 10, signals=frozenset({"bm25", "query_analysis"})), [(q,) for q in names]),
        "search, all lexical signals + graph + prior": timed(
            lambda q: search(store, q, 10, signals=frozenset({"bm25", "query_analysis", "graph", "prior"})),
            [(q,) for q in names]),
    }
    if has_vectors(store):
        embedder = default_embedder(*semantic._recorded_model(VectorStore(store.conn)))
        embedder.embed_query("warm up")
        # Each query is new to the embedder (its cache of recent queries would flatter the numbers).
        rows["hybrid search, every signal incl. vectors"] = timed(
            lambda q: search(store, q, 10, embedder=embedder), [(f"{q} {i}",) for i, q in enumerate(names)])
        rows["  of which: embedding the query"] = timed(
            lambda q: embedder.embed_query(q), [(f"{q} #{i}",) for i, q in enumerate(names)])
        if args.reports:
            with open(args.reports) as fh:
                reports = [json.loads(line)["problem_statement"] for line in fh if line.strip()][: args.n]
            rows[f"hybrid search, whole bug reports ({len(reports)})"] = timed(
                lambda q: search(store, q, 10, embedder=embedder), [(q,) for q in reports])
            rows["  of which: embedding the report"] = timed(
                lambda q: embedder.embed_query(q + " "), [(q,) for q in reports])
    print(f"| operation ({len(ids)} functions, {len(files)} files) | p50 ms | p99 ms |")
    print("|---|---|---|")
    for name, xs in rows.items():
        print(f"| {name} | {statistics.median(xs):.2f} | {pct(xs, 99):.2f} |")
    skel = src = 0
    for f in files:
        s = store.skeleton(f)
        try:
            text = (Path(args.root) / f).read_text("utf-8", "replace")
        except OSError:
            continue
        skel += count_tokens(s[0])
        src += count_tokens(text)
    print(f"\nskeleton tokens over all {len(files)} files: {skel:,} of {src:,} source tokens "
          f"= {100 * (1 - skel / src):.1f}% reduction (o200k_base)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
