"""Vector search and embedding throughput.

    python benchmarks/vectors_bench.py [--sizes 10000,100000] [--dims 256,384] [--queries 200]
                                       [--oversample 10] [--min-candidates 1000] [--snippets 2000]
                                       [--batch-sizes 32,64]
                                       [--skip-embed]

1. Embedding throughput (entities/s) of the bundled fallback model (all-MiniLM-L6-v2 int8)
   on real code: functions and classes of the Python standard library, turned into entity
   text by `nsccn.vectors.embed.embedding_text` exactly as the index does.
2. k-NN over `nsccn.vectors.table.VectorStore` in a SQLite file: p50/p99 latency of exact search and
   of the binary-quantized path (hamming coarse pass over mean-centered sign bits,
   max(k*oversample, min_candidates) candidates, float re-rank),
   and recall@10 of the quantized path against exact search, for two distributions:
   - random: isotropic unit vectors, the worst case for sign bits (no real neighbours);
   - code:   mixtures of real MiniLM embeddings of the stdlib snippets plus noise
             (v = norm(E[i] + 0.7 E[j] + noise)), queries are held-out real embeddings;
             at 256 dims the first 256 components, renormalized, stand in.
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import apsw
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nsccn.vectors.embed import embedding_text, load_embedder  # noqa: E402
from nsccn.vectors.table import VectorStore  # noqa: E402


def code_snippets(n: int, max_chars: int = 750) -> list[str]:
    """Entity texts for the first `n` functions/classes of the stdlib (tests excluded)."""
    root = Path(sysconfig.get_paths()["stdlib"])
    out: list[str] = []
    for path in sorted(root.rglob("*.py")):
        if {"test", "tests", "idlelib", "site-packages"} & set(path.parts):
            continue
        try:
            source = path.read_text(encoding="utf-8")
            tree = ast.parse(source)
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        lines = source.splitlines()
        rel = path.relative_to(root).as_posix()

        def walk(node: ast.AST, prefix: str) -> None:
            for child in ast.iter_child_nodes(node):
                if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    continue
                qualname = prefix + child.name
                if isinstance(child, ast.ClassDef):
                    signature = f"class {child.name}"
                else:
                    signature = f"def {child.name}({ast.unparse(child.args)})"
                first = child.body[0].lineno - 1
                last = min(child.end_lineno or first, first + 15)
                body = "\n".join(lines[first:last])
                out.append(
                    embedding_text(
                        qualname, signature, ast.get_docstring(child) or "", body, path=rel, max_chars=max_chars
                    )
                )
                walk(child, qualname + ".")

        walk(tree, "")
        if len(out) >= n:
            break
    return out[:n]


def bench_embedding(n: int, batch_sizes: list[int], threads: int | None) -> tuple[list[tuple], np.ndarray]:
    embedder = load_embedder("all-MiniLM-L6-v2", threads=threads)
    texts = code_snippets(n, embedder.max_chars)
    rows, vecs = [], None
    embedder.embed_documents(texts[:8])  # warm up the session
    for bs in batch_sizes:
        embedder.batch_size = bs
        start = time.perf_counter()
        vecs = embedder.embed_documents(texts)
        secs = time.perf_counter() - start
        rows.append((bs, len(texts), secs, len(texts) / secs))
    return rows, vecs


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def make_data(kind: str, n: int, dim: int, n_queries: int, rng, real: np.ndarray | None):
    if kind == "random":
        return unit(rng.standard_normal((n, dim))), unit(rng.standard_normal((n_queries, dim)))
    assert real is not None
    base = unit(real[:, :dim])
    queries, basis = base[:n_queries], base[n_queries:]
    i, j = rng.integers(0, len(basis), n), rng.integers(0, len(basis), n)
    noise = rng.standard_normal((n, dim)) * (0.5 / np.sqrt(dim))
    return unit(basis[i] + 0.7 * basis[j] + noise), queries


def pct(xs: list[float], p: float) -> float:
    return float(np.percentile(np.asarray(xs) * 1000.0, p))


def bench_search(kind, n, dim, n_queries, oversample, min_cand, rng, real, workdir: Path) -> dict:
    data, queries = make_data(kind, n, dim, n_queries, rng, real)
    db = workdir / f"{kind}-{n}-{dim}.db"
    conn = apsw.Connection(str(db))
    conn.execute("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL")
    store = VectorStore(conn, oversample=oversample, min_candidates=min_cand)
    store.ensure_model(f"bench-{kind}", dim)
    start = time.perf_counter()
    for lo in range(0, n, 5000):
        store.upsert((f"func:m{i // 100}.py:f{i}", f"h{i}", data[i]) for i in range(lo, min(n, lo + 5000)))
    build = time.perf_counter() - start
    store.knn(queries[0], 10, quantized=False)  # warm the page cache
    store.knn(queries[0], 10, quantized=True)
    t_exact, t_quant, recalls = [], [], []
    for q in queries:
        t0 = time.perf_counter()
        exact = store.knn(q, 10, quantized=False)
        t1 = time.perf_counter()
        quant = store.knn(q, 10, quantized=True)
        t2 = time.perf_counter()
        t_exact.append(t1 - t0)
        t_quant.append(t2 - t1)
        recalls.append(len({e for e, _ in exact} & {e for e, _ in quant}) / 10)
    conn.close()
    size_mb = sum(p.stat().st_size for p in workdir.glob(db.name + "*")) / 1e6
    for p in workdir.glob(db.name + "*"):
        p.unlink()
    return {
        "kind": kind, "n": n, "dim": dim, "build_s": build, "db_mb": size_mb,
        "exact_p50": pct(t_exact, 50), "exact_p99": pct(t_exact, 99),
        "quant_p50": pct(t_quant, 50), "quant_p99": pct(t_quant, 99),
        "recall10": float(np.mean(recalls)),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--dims", default="256,384")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--oversample", type=int, default=10)
    ap.add_argument("--min-candidates", type=int, default=1000)
    ap.add_argument("--snippets", type=int, default=2000)
    ap.add_argument("--batch-sizes", default="32,64")
    ap.add_argument("--threads", type=int, default=None, help="ONNX Runtime threads (default: all cores)")
    ap.add_argument("--skip-embed", action="store_true", help="no embedding run; random vectors only")
    ap.add_argument("--skip-search", action="store_true", help="the embedding throughput only")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    dims = [int(d) for d in args.dims.split(",")]
    rng = np.random.default_rng(args.seed)
    # Timings on a shared machine mean little without the load they were taken under.
    print(f"cores: {os.cpu_count()}, load average at start: {os.getloadavg()[0]:.2f}")

    real = None
    if not args.skip_embed:
        rows, real = bench_embedding(args.snippets, [int(b) for b in args.batch_sizes.split(",")], args.threads)
        print("\nEmbedding throughput, all-MiniLM-L6-v2 int8 (fastembed/onnxruntime, CPU), stdlib code entities")
        print(f"{'batch':>5} {'entities':>8} {'seconds':>8} {'entities/s':>10}")
        for bs, n, secs, rate in rows:
            print(f"{bs:>5} {n:>8} {secs:>8.1f} {rate:>10.1f}")
        if real is not None and len(real) <= args.queries + 100:
            print("too few snippets for the code distribution; random only")
            real = None

    if args.skip_search:
        print(f"load average at end: {os.getloadavg()[0]:.2f}")
        return
    kinds = ["random"] + (["code"] if real is not None else [])
    workdir = Path(tempfile.mkdtemp(prefix="nsccn-vecbench-"))
    results = []
    try:
        for kind in kinds:
            for dim in dims:
                for n in sizes:
                    results.append(bench_search(
                        kind, n, dim, args.queries, args.oversample, args.min_candidates, rng, real, workdir
                    ))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    n_cand = max(10 * args.oversample, args.min_candidates)
    print(f"\nk-NN, k=10, {args.queries} queries; quantized = hamming pass, {n_cand} candidates, float re-rank; ms")
    print(
        f"{'data':<7} {'dim':>4} {'vectors':>8} {'build s':>7} {'db MB':>6} "
        f"{'exact p50':>9} {'exact p99':>9} {'quant p50':>9} {'quant p99':>9} {'recall@10':>9}"
    )
    for r in results:
        print(
            f"{r['kind']:<7} {r['dim']:>4} {r['n']:>8} {r['build_s']:>7.1f} {r['db_mb']:>6.0f} "
            f"{r['exact_p50']:>9.1f} {r['exact_p99']:>9.1f} {r['quant_p50']:>9.1f} {r['quant_p99']:>9.1f} "
            f"{r['recall10']:>9.3f}"
        )
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
