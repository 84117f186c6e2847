#!/usr/bin/env python
"""CPU per entity of the static code embedding, on a real tree, and a query's cost.

    python benchmarks/static_embed_cost.py TREE [--rounds 3] [--transformer-sample 200]

The tree is indexed once without vectors (in a temporary index directory); then, `--rounds` times,
every embeddable entity's text (as `semantic.wanted_texts` makes it: what `nsccn index` embeds) is
embedded by the static model, timed in CPU seconds of this process (`time.process_time`, one
thread: the model is numpy on one core). Reported: entities, characters per text, ms of CPU per
entity (min / median / max of the rounds), the model's load time, and the CPU of one query vector
(median of 200). `--transformer-sample N` also embeds N of the texts with the bundled transformer
(`minilm-code-v1`, one thread) for the side-by-side ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(_ROOT))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tree", type=Path)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--transformer-sample", type=int, default=0)
    args = ap.parse_args(argv)
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    from nsccn.config import Config
    from nsccn.vectors.embed import STATIC_MAX_CHARS
    from nsccn.indexing.indexer import index_repository
    from nsccn.vectors.semantic import wanted_texts
    from nsccn.vectors.static_embed import StaticModel
    from nsccn.store import Store

    with tempfile.TemporaryDirectory(prefix="nsccn-static-cost-") as tmp:
        db = Path(tmp) / "index.db"
        index_repository(args.tree, db_path=db, config=Config(history=False), workers=2, embed=False)
        with Store(db, readonly=True) as store:
            texts = list(wanted_texts(store, STATIC_MAX_CHARS).values())
    t0 = time.process_time()
    model = StaticModel.load()
    load_s = time.process_time() - t0
    per_entity = []
    for _ in range(args.rounds):
        t0 = time.process_time()
        model.embed(texts)
        per_entity.append((time.process_time() - t0) / len(texts) * 1e3)
    queries = []
    for i in range(200):
        q = f"the printer crashes when a matrix has symbols {i}"
        t0 = time.process_time()
        model.embed([q])
        queries.append((time.process_time() - t0) * 1e6)
    chars = statistics.mean(len(t) for t in texts)
    print(f"{args.tree}: {len(texts)} entities, {chars:.0f} characters a text on average")
    print(f"static ({model.model_id}, {len(model.vocab)} tokens x {model.dim}): load {load_s * 1e3:.0f} ms CPU; "
          f"{min(per_entity):.3f} / {statistics.median(per_entity):.3f} / {max(per_entity):.3f} ms CPU an entity "
          f"(min / median / max of {args.rounds}); a query {statistics.median(queries):.0f} us CPU (median of 200)")
    if args.transformer_sample:
        from nsccn.vectors.embed import FALLBACK_MODEL, _BundledOnnx

        onnx = _BundledOnnx(1, optimize=True, model_id=FALLBACK_MODEL)
        sample = [t[:750] for t in texts[:: max(1, len(texts) // args.transformer_sample)]][: args.transformer_sample]
        onnx.embed(sample[:8])
        t0 = time.process_time()
        onnx.embed(sample)
        ms = (time.process_time() - t0) / len(sample) * 1e3
        print(f"transformer ({FALLBACK_MODEL}, one thread): {ms:.1f} ms CPU an entity over {len(sample)} texts; "
              f"static / transformer = {statistics.median(per_entity) / ms:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
