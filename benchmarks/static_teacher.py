#!/usr/bin/env python
"""The teacher's sentence vectors for the static embedding's regression step.

    python benchmarks/static_teacher.py --texts texts.jsonl.gz --out teacher.npz [--device cuda|cpu] [--check 64]

Every text (one JSON string a line, gzip) is embedded by the bundled transformer `minilm-code-v1`
as the index would embed it (its tokenizer, 256 tokens, mean pooling, L2 norm); the vectors are
reduced by PCA to `--dim` dimensions and stored as int8 with a scale per row (the regression reads
their directions), beside the PCA basis.

Two ways to run the same model: ONNX Runtime on the CPU (what NSCCN ships; about 0.1 s of CPU a
text in a pipeline; batched by length here, ~30 ms), or, where PyTorch and transformers are installed, the ONNX
file's own weights (int8 times their scales, exactly what ONNX Runtime folds them back to) loaded
into transformers' BertModel on a GPU (`--device cuda`: a minute). `--check N` compares the first
N texts' vectors of both ways (cosine). Needs only numpy, tokenizers and onnx besides, so it runs
on a machine without NSCCN's other dependencies.

On the CPU the corpus takes about an hour of both cores (219,576 texts in 3,434 s at stop 53, load
2-3), more than a session can spare beside other work: `--parts
DIR` embeds it in parts of `--part-rows` texts, each kept as DIR/part-NNNNN.npy (float16) once done,
so a later run with the same texts takes up where the last one stopped; `--stop-after SECONDS`
ends a run (exit 3) after the part that passes that time (one part at least), before the PCA.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(_ROOT))
from nsccn.vectors.embed import FALLBACK_MODEL, _BundledOnnx, bundled_onnx_path  # noqa: E402


def read_texts(path: Path) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def bert_state_from_onnx(onnx_path: Path) -> dict[str, np.ndarray]:
    """The float weights of the bundled ONNX graph under transformers' BertModel names: int8
    initializers dequantized, each MatMul weight named by the bias its product is added to."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(onnx_path))
    raw = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    weights: dict[str, np.ndarray] = {}
    for name, arr in raw.items():
        if name.endswith("_scale"):
            continue
        if name.endswith("_q"):
            arr = arr.astype(np.float32) * raw[name[:-2] + "_scale"]
            name = name[:-2]
        weights[name] = arr.astype(np.float32)
    consumers: dict[str, list] = {}
    for node in model.graph.node:
        for i in node.input:
            consumers.setdefault(i, []).append(node)
    state: dict[str, np.ndarray] = {}
    for node in model.graph.node:
        if node.op_type == "MatMul" and node.input[1] in weights and not node.input[1].startswith("m."):
            adds = [n for n in consumers.get(node.output[0], []) if n.op_type == "Add"]
            bias = next(i for n in adds for i in n.input if i.startswith("m.") and i.endswith(".bias"))
            state[bias[2:-5] + ".weight"] = weights[node.input[1]].T  # MatMul holds [in, out]
    for name, arr in weights.items():
        if name.startswith("m."):
            state[name[2:]] = arr
    return state


class TorchTeacher:
    def __init__(self, device: str):
        import torch
        from transformers import BertConfig, BertModel

        config = BertConfig.from_json_file(str(_ROOT / "nsccn" / "models" / "all-MiniLM-L6-v2" / "config.json"))
        model = BertModel(config, add_pooling_layer=False)
        state = {k: torch.from_numpy(v) for k, v in bert_state_from_onnx(bundled_onnx_path(FALLBACK_MODEL)).items()}
        missing, unexpected = model.load_state_dict(state, strict=False)
        missing = [m for m in missing if not m.endswith("position_ids")]
        if missing or unexpected:
            raise SystemExit(f"weights do not fit BertModel: missing {missing}, unexpected {unexpected}")
        self.torch = torch
        self.model = model.to(device).eval()
        self.device = device

    def embed(self, texts: list[str], batch_size: int = 256) -> np.ndarray:
        torch = self.torch
        out = np.empty((len(texts), 384), np.float32)
        with torch.inference_mode():
            for rows, ids, mask in tokenizer().padded_batches(texts, batch_size):
                ids_t = torch.from_numpy(ids).to(self.device)
                mask_t = torch.from_numpy(mask).to(self.device)
                hidden = self.model(input_ids=ids_t, attention_mask=mask_t,
                                    token_type_ids=torch.zeros_like(ids_t)).last_hidden_state
                m = mask_t.unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)
                pooled = torch.nn.functional.normalize(pooled, dim=1)
                out[rows] = pooled.float().cpu().numpy()
        return out


_TOKENIZER = None


def tokenizer() -> _BundledOnnx:
    """The bundled model's session and tokenizer (ONNX Runtime, CPU)."""
    global _TOKENIZER
    if _TOKENIZER is None:
        _TOKENIZER = _BundledOnnx(None, optimize=True, model_id=FALLBACK_MODEL)
    return _TOKENIZER


def embed_in_parts(texts: list[str], parts: Path, part_rows: int, stop_after: float) -> np.ndarray | None:
    """The texts' vectors, each part of `part_rows` texts read from `parts` where an earlier run left
    it, else embedded (ONNX Runtime) and kept there; None once `stop_after` seconds have passed."""
    parts.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(json.dumps([part_rows, texts]).encode()).hexdigest()[:16]
    stamp = parts / "texts.sha"
    if stamp.exists() and stamp.read_text().strip() != digest:
        raise SystemExit(f"{parts} holds parts of other texts (or another --part-rows): give another folder")
    stamp.write_text(digest + "\n")
    t0 = time.perf_counter()
    out = []
    embedded = 0  # parts this run: each run makes one at least
    for i, start in enumerate(range(0, len(texts), part_rows)):
        path = parts / f"part-{i:05d}.npy"
        if not path.exists():
            if embedded and stop_after and time.perf_counter() - t0 > stop_after:
                done = sum(1 for _ in parts.glob("part-*.npy"))
                print(f"stopped after {stop_after:.0f} s: {done} of {-(-len(texts) // part_rows)} parts done", flush=True)
                return None
            vectors = tokenizer().embed(texts[start : start + part_rows], batch_size=32).astype(np.float16)
            tmp = path.with_suffix(".tmp.npy")
            np.save(tmp, vectors)
            os.replace(tmp, path)  # a part is there whole or not at all
            embedded += 1
            print(f"part {i}: {start + len(vectors)} of {len(texts)} texts ({time.perf_counter() - t0:.0f} s)", flush=True)
        out.append(np.load(path).astype(np.float32))
    return np.concatenate(out) if out else np.empty((0, 384), np.float32)


def pca(x: np.ndarray, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """(mean, basis[dim, d]) of the rows of `x`, component signs fixed (deterministic)."""
    mean = x.mean(axis=0)
    cov = np.cov((x - mean).T)
    values, vectors = np.linalg.eigh(cov)
    basis = vectors[:, ::-1][:, :dim].T
    basis *= np.sign(basis[np.arange(dim), np.abs(basis).argmax(axis=1)])[:, None]
    return mean.astype(np.float32), basis.astype(np.float32)


def reduced_parts(parts: Path, basis: Path, n: int) -> np.ndarray:
    """The first `n` texts' vectors from `--parts` DIR, reduced with the PCA of the teacher file `basis`
    and normalized: a corpus's teacher vectors in another corpus's space, as `--basis` reduces them."""
    raw = np.concatenate([np.load(p).astype(np.float32) for p in sorted(parts.glob("part-*.npy"))])[:n]
    with np.load(basis) as head:
        y = (raw - head["mean"]) @ head["basis"].T
    return y / np.linalg.norm(y, axis=1, keepdims=True)


def load_teacher(path: Path) -> np.ndarray:
    """The reduced teacher vectors (float32, one row per text, in the order of the texts)."""
    with np.load(path) as head:
        shards = int(head["shards"])
    parts = []
    for k in range(shards):
        with np.load(path.with_name(f"{path.stem}-{k}.npz")) as npz:
            parts.append(npz["vectors"].astype(np.float32) * npz["scale"])
    return np.concatenate(parts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--texts", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--device", default="cpu", help="cpu: ONNX Runtime as shipped; cuda: PyTorch on a GPU")
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--basis", type=Path,
                    help="reduce with this teacher file's PCA (mean, basis) instead of fitting one: for a corpus "
                         "that extends that one (train_static_embedder.py build --texts A B --teacher TA TB)")
    ap.add_argument("--check", type=int, default=0, help="compare the first N texts of both ways")
    ap.add_argument("--parts", type=Path, help="CPU: keep the vectors in parts here and resume from them")
    ap.add_argument("--part-rows", type=int, default=4096)
    ap.add_argument("--stop-after", type=float, default=0, help="with --parts: end after this many seconds (exit 3)")
    ap.add_argument("--shard-rows", type=int, default=0,
                    help="write the vectors in files of this many rows beside OUT (OUT-0.npz, ...)")
    args = ap.parse_args(argv)
    texts = read_texts(args.texts)
    t0 = time.perf_counter()
    if args.device == "cpu" and args.parts:
        vectors = embed_in_parts(texts, args.parts, args.part_rows, args.stop_after)
        if vectors is None:
            return 3
    elif args.device == "cpu":
        vectors = tokenizer().embed(texts, batch_size=32)
    else:
        teacher = TorchTeacher(args.device)
        if args.check:
            a = teacher.embed(texts[: args.check])
            b = tokenizer().embed(texts[: args.check])
            cos = np.sum(a * b, axis=1)
            print(f"check: cosine of torch and ONNX Runtime over {args.check} texts: min {cos.min():.5f} "
                  f"mean {cos.mean():.5f}", flush=True)
        vectors = teacher.embed(texts)
    print(f"{len(texts)} texts embedded in {time.perf_counter() - t0:.0f} s on {args.device}", flush=True)
    if args.basis:  # a corpus that extends another: its vectors in the other's reduced space
        with np.load(args.basis) as head:
            mean, basis = head["mean"], head["basis"]
    else:
        mean, basis = pca(vectors, args.dim)
    reduced = (vectors - mean) @ basis.T
    kept = float(np.sum(reduced * reduced) / np.sum((vectors - mean) ** 2))
    scale = np.abs(reduced).max(axis=1, keepdims=True) / 127.0
    scale[scale == 0] = 1.0
    q = np.clip(np.rint(reduced / scale), -127, 127).astype(np.int8)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    step = args.shard_rows or len(q)
    shards = 0
    for shards, start in enumerate(range(0, len(q), step), start=1):
        np.savez(args.out.with_name(f"{args.out.stem}-{shards - 1}.npz"), vectors=q[start : start + step],
                 scale=scale[start : start + step].astype(np.float32))
    np.savez(args.out, mean=mean, basis=basis, shards=np.int64(shards), texts=np.int64(len(q)))
    print(f"PCA {vectors.shape[1]} -> {args.dim}: {100 * kept:.1f}% of the variance; wrote {args.out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
