"""Embedding throughput of the bundled model: NSCCN's embedder paths against a raw ONNX Runtime loop.

    python benchmarks/embed_throughput.py --tree TREE [--sample 1500] [--rounds 2]
        [--ceilings 32/1,32/2,32/2/nospin,8/2/nospin] [--max-chars 500,250]
        [--out-dir benchmarks/results/embed-throughput] [--label NAME]

The texts are the tree's entity texts exactly as the index makes them (`nsccn.vectors.semantic.wanted_texts`
over an in-process index of TREE without vectors: name, path, signature, docstring, body head,
cut at the model's `max_chars`), a fixed random sample of `--sample` of them (seed 0; 0 = all).
Configurations, timed in interleaved rounds (each in this process, one after another, every
configuration once per round), entities/s of wall time and of process CPU:

* `library`: `Embedder.embed_documents` in chunks of 256, as `nsccn index --embed`
  (`semantic.embed_index`) calls it;
* `actor`: what the pipeline's embedder actor does with the writer's jobs (`EmbedJob`s of
  `embedding_batch_size` entities in index order, each through `workers.embedder.embed_in_calls`);
* `... before`: the same through fastembed (the bundled model's backend up to code 9c91b3e),
  and for the actor its loop of then (the job's texts in their order, 8 per model call);
* `ceiling B/T[/nospin]`: the raw loop — the same ONNX file and tokenizer, straight onnxruntime
  (graph optimization on, intra-op threads T, their spinning on as by default or off), every
  text tokenized first, sorted by token count, batches of B, mean pooling and L2 norm: the most
  this model gives on this machine.

`--max-chars` also measures the ceiling's best B/T at shorter texts (what the model costs per
entity when less text is embedded; `benchmarks/localize.py --embed-max-chars` measures what
it costs in localization). Each configuration's vectors are checked against the library's
(cosine >= 0.999).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def entity_rows(tree: Path, cache: Path | None) -> list[list[str]]:
    """Every embeddable entity's text columns, in index order (rowid), as the writer sweeps them."""
    if cache and cache.exists():
        return json.loads(cache.read_text())["rows"]
    from nsccn.indexing.indexer import index_repository
    from nsccn.store import EMBEDDABLE_SQL, TEXT_COLUMNS
    from nsccn.store import Store

    with tempfile.TemporaryDirectory(prefix="nsccn-embed-bench-") as tmp:
        db = Path(tmp) / "index.db"
        index_repository(tree, db)
        store = Store(db)
        rows = store.conn.execute(f"SELECT {TEXT_COLUMNS} FROM entities WHERE {EMBEDDABLE_SQL} ORDER BY rowid").fetchall()
        store.close()
    if cache:
        cache.write_text(json.dumps({"rows": rows}))
    return rows


def entity_texts(rows: list[list[str]], max_chars: int) -> list[str]:
    from nsccn.vectors.semantic import texts_of_rows

    return list(texts_of_rows(rows, max_chars).values())


class RawOnnx:
    """The ceiling: onnxruntime and tokenizers, nothing else."""

    def __init__(self, threads: int, spinning: bool = True, max_length: int = 256):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        from nsccn.vectors.embed import BUNDLED_TOKENIZER_DIR, FALLBACK_MODEL, bundled_onnx_path

        self.tok = Tokenizer.from_file(str(BUNDLED_TOKENIZER_DIR / "tokenizer.json"))
        self.tok.enable_truncation(max_length=max_length)
        self.tok.no_padding()
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        if not spinning:
            so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(str(bundled_onnx_path(FALLBACK_MODEL)), so, providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}

    def embed(self, texts: list[str], batch: int) -> np.ndarray:
        enc = self.tok.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: len(enc[i].ids))
        out = np.empty((len(texts), 384), np.float32)
        for s in range(0, len(order), batch):
            idx = order[s : s + batch]
            width = max(len(enc[i].ids) for i in idx)
            ids = np.zeros((len(idx), width), np.int64)
            mask = np.zeros((len(idx), width), np.int64)
            for r, i in enumerate(idx):
                n = len(enc[i].ids)
                ids[r, :n] = enc[i].ids
                mask[r, :n] = 1
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self.inputs:
                feed["token_type_ids"] = np.zeros_like(ids)
            h = self.session.run(None, feed)[0]
            pooled = (h * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
            out[idx] = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
        return out


def fastembed_bundled(threads: int | None = None, model_id: str | None = None):
    """fastembed running a bundled ONNX file (default: the default bundled model's) as a custom
    model: how the bundled model ran before it ran on onnxruntime directly (the reference its
    vectors are checked against)."""
    from fastembed import TextEmbedding
    from fastembed.common.model_description import ModelSource, PoolingType

    from nsccn.vectors.embed import BUNDLED_TOKENIZER_DIR, FALLBACK_MODEL, bundled_onnx_path

    model_id = model_id or FALLBACK_MODEL
    name = f"reference/{model_id.split('/')[-1]}-through-fastembed"
    if not any(d["model"] == name for d in TextEmbedding.list_supported_models()):
        TextEmbedding.add_custom_model(name, pooling=PoolingType.MEAN, normalization=True,
                                       sources=ModelSource(hf="sentence-transformers/all-MiniLM-L6-v2"), dim=384,
                                       model_file=os.path.relpath(bundled_onnx_path(model_id), BUNDLED_TOKENIZER_DIR),
                                       size_in_gb=0.023)
    return TextEmbedding(name, specific_model_path=str(BUNDLED_TOKENIZER_DIR), local_files_only=True, threads=threads)


def fastembed_embedder():
    """The bundled model as it ran before, in an `Embedder` (which sorts a call's texts by characters)."""
    from nsccn.vectors.embed import FALLBACK_MODEL, KNOWN_MODELS, Embedder

    return Embedder(model_name=FALLBACK_MODEL, dim=384, spec=KNOWN_MODELS[FALLBACK_MODEL], backend=fastembed_bundled())


def timed(fn) -> tuple[float, float, np.ndarray]:
    t, c = time.perf_counter(), time.process_time()
    v = fn()
    return time.perf_counter() - t, time.process_time() - c, v


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", required=True)
    ap.add_argument("--sample", type=int, default=1500)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--ceilings", default="32/1,32/2,32/2/nospin,8/2/nospin",
                    help="raw loops to run: BATCH/THREADS[/nospin], comma-separated")
    ap.add_argument("--max-chars", default="", help="also the best ceiling at these max_chars (e.g. 500,300)")
    ap.add_argument("--texts-cache", type=Path, default=None,
                    help="keep the tree's entity rows in this JSON file (indexing the tree again is skipped)")
    ap.add_argument("--out-dir", default=None)
    ap.add_argument("--label", default=None)
    args = ap.parse_args()

    from nsccn.vectors.embed import load_embedder
    import msgspec

    from nsccn.messages import ActorSpec
    from nsccn.vectors.semantic import EMBED_CHUNK
    from workers.embedder import embed_in_calls

    emb = load_embedder("bundled")
    rows = entity_rows(Path(args.tree), args.texts_cache)
    all_texts = entity_texts(rows, emb.max_chars)
    rng = random.Random(0)
    texts = all_texts if not args.sample or args.sample >= len(all_texts) else \
        [all_texts[i] for i in sorted(rng.sample(range(len(all_texts)), args.sample))]
    ntok = [len(e.ids) for e in RawOnnx(1).tok.encode_batch(texts)]
    print(f"{len(texts)} of {len(all_texts)} entity texts; chars mean {statistics.mean(map(len, texts)):.0f}; "
          f"tokens mean {statistics.mean(ntok):.0f}, p50 {statistics.median(ntok):.0f}, "
          f"at the 256 cap {sum(n >= 256 for n in ntok) / len(ntok):.0%}", flush=True)

    from nsccn.config import Config

    job = Config().embedding_batch_size
    step = next(f.default for f in msgspec.structs.fields(ActorSpec) if f.name == "embed_sub_batch")

    def library() -> np.ndarray:  # semantic.embed_index's loop
        return np.concatenate([emb.embed_documents(texts[i : i + EMBED_CHUNK]) for i in range(0, len(texts), EMBED_CHUNK)])

    def actor() -> np.ndarray:  # the writer's jobs, each through the actor's loop
        return np.concatenate([embed_in_calls(emb, texts[i : i + job], step) for i in range(0, len(texts), job)])

    before = fastembed_embedder()

    def library_before() -> np.ndarray:
        return np.concatenate([before.embed_documents(texts[i : i + EMBED_CHUNK]) for i in range(0, len(texts), EMBED_CHUNK)])

    def actor_before() -> np.ndarray:  # each job's texts in their order, `step` per model call
        return np.concatenate([before.embed_documents(texts[i : i + step]) for i in range(0, len(texts), step)])

    configs = {"library, before (fastembed)": library_before, "library (nsccn index --embed)": library,
               f"actor, before (jobs of {job} in order, calls of {step})": actor_before,
               f"actor (jobs of {job} shortest first, calls of {step})": actor}
    raws: dict[tuple[int, bool], RawOnnx] = {}
    for c in args.ceilings.split(","):
        b, t, *spin = c.split("/")
        key = (int(t), not spin)
        raw = raws.setdefault(key, RawOnnx(*key))
        configs[f"ceiling B={b} T={t}" + (" no spinning" if spin else "")] = (lambda raw=raw, b=int(b): raw.embed(texts, b))
    ref = emb.embed_documents(texts[:64])  # warm-up, and the reference vectors
    results: dict[str, list[tuple[float, float]]] = {k: [] for k in configs}
    loads = []
    for rnd in range(args.rounds):
        loads.append(os.getloadavg()[0])
        for name, fn in configs.items():
            wall, cpu, vec = timed(fn)
            cos = float(np.min(np.sum(vec[:64] * ref, axis=1)))
            if cos < 0.999:
                raise SystemExit(f"{name}: vectors differ from the library's (min cosine {cos:.4f})")
            results[name].append((wall, cpu))
            print(f"round {rnd} {name:32} {len(texts) / wall:7.1f} entities/s ({wall:.1f} s wall, {cpu:.1f} s CPU)", flush=True)

    def rate(name: str) -> float:
        return len(texts) / statistics.median(w for w, _ in results[name])

    best = max((k for k in configs if k.startswith("ceiling")), key=rate)
    lines = [f"`python benchmarks/embed_throughput.py --tree {Path(args.tree).name} --sample {args.sample} --rounds {args.rounds}` "
             f"({len(texts)} entity texts, {os.cpu_count()} cores, load average before each round "
             f"{', '.join(f'{x:.1f}' for x in loads)}; medians)\n",
             "| configuration | entities/s | CPU s per 1,000 entities | of the ceiling |", "|---|---|---|---|"]
    for name in configs:
        cpu = statistics.median(c for _, c in results[name])
        lines.append(f"| {name} | {rate(name):.1f} | {cpu / len(texts) * 1000:.1f} | {rate(name) / rate(best):.0%} |")
    if args.max_chars:
        b, t = (int(x.split("=")[1]) for x in best.split()[1:3])
        raw = raws[(t, "no spinning" not in best)]
        for mc in map(int, args.max_chars.split(",")):
            short = entity_texts(rows, mc)
            short = short if not args.sample or args.sample >= len(short) else \
                [short[i] for i in sorted(random.Random(0).sample(range(len(short)), args.sample))]
            wall, cpu, _ = timed(lambda: raw.embed(short, b))
            lines.append(f"| {best}, max_chars {mc} | {len(short) / wall:.1f} | {cpu / len(short) * 1000:.1f} "
                         f"| {len(short) / wall / rate(best):.0%} |")
    print("\n".join(lines))
    if args.out_dir:
        out = Path(args.out_dir)
        out.mkdir(parents=True, exist_ok=True)
        label = args.label or Path(args.tree).name
        (out / f"{label}.json").write_text(json.dumps({"texts": len(texts), "loads": loads, "results": results}, indent=2))
        (out / f"{label}.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
