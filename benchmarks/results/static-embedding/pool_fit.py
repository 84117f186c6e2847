#!/usr/bin/env python
"""How close a static model's vectors of unseen code come to the teacher's, alone, through a linear map, or through a
small network on the pooled vector (stop 64: the map and the network fit alike, 0.73 and 0.72 from 0.65).

    python benchmarks/results/static-embedding/pool_fit.py --model M.npz --basis TEACHER.npz \
        --train TEXTS_A.jsonl.gz PARTS_A --test TEXTS_B.jsonl.gz PARTS_B [--n-train 60000] [--n-test 20000]

TEXTS_* are corpora the model never trained on (two extension corpora of different repositories), PARTS_* the
teacher's full vectors of them (`static_teacher.py --parts`), reduced with BASIS (the training corpus's teacher
file). The map and the network (256 -> 1024 -> 256, ReLU, a residual, 8 epochs of Adam on 1 - cosine) learn on A
and are scored on B: mean cosine with the teacher.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from static_teacher import read_texts, reduced_parts  # noqa: E402

from nsccn.vectors.static_embed import StaticModel  # noqa: E402


def load(model: StaticModel, texts: Path, parts: Path, n: int, basis: Path) -> tuple[np.ndarray, np.ndarray]:
    """The model's vectors of the first `n` texts and the teacher's (reduced with `basis`), float32."""
    return model.embed(read_texts(texts)[:n]), reduced_parts(parts, basis, n).astype(np.float32)


def cos(a: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(np.sum(a / np.linalg.norm(a, axis=1, keepdims=True) * y, axis=1)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--basis", type=Path, required=True)
    ap.add_argument("--train", nargs=2, type=Path, required=True, metavar=("TEXTS", "PARTS"))
    ap.add_argument("--test", nargs=2, type=Path, required=True, metavar=("TEXTS", "PARTS"))
    ap.add_argument("--n-train", type=int, default=60000)
    ap.add_argument("--n-test", type=int, default=20000)
    args = ap.parse_args()
    m = StaticModel.load(args.model)
    xa, ya = load(m, *args.train, args.n_train, args.basis)
    xb, yb = load(m, *args.test, args.n_test, args.basis)
    print(f"the model alone: train {cos(xa, ya):.4f}, test {cos(xb, yb):.4f}")
    w, *_ = np.linalg.lstsq(xa, ya, rcond=None)
    print(f"a linear map: train {cos(xa @ w, ya):.4f}, test {cos(xb @ w, yb):.4f}")
    rng = np.random.default_rng(0)
    w1 = rng.normal(0, 1 / 16, (xa.shape[1], 1024)).astype(np.float32)
    b1 = np.zeros(1024, np.float32)
    w2 = np.zeros((1024, xa.shape[1]), np.float32)
    params = [w1, b1, w2]
    m1 = [np.zeros_like(p) for p in params]
    m2 = [np.zeros_like(p) for p in params]
    step = 0

    def forward(x):
        pre = x @ w1 + b1
        h = np.maximum(pre, 0)
        return pre, h, x + h @ w2

    for epoch in range(8):
        order = rng.permutation(len(xa))
        for i in range(0, len(order), 256):
            idx = order[i : i + 256]
            x, y = xa[idx], ya[idx]
            pre, h, o = forward(x)
            norm = np.linalg.norm(o, axis=1, keepdims=True)
            s = o / norm
            ds = -y / len(idx)
            do = (ds - s * np.sum(s * ds, axis=1, keepdims=True)) / norm
            dpre = (do @ w2.T) * (pre > 0)
            step += 1
            for p, g, a, b in zip(params, [x.T @ dpre, dpre.sum(0), h.T @ do], m1, m2):
                a *= 0.9
                a += 0.1 * g
                b *= 0.999
                b += 0.001 * g * g
                p -= 1e-3 * (a / (1 - 0.9**step)) / (np.sqrt(b / (1 - 0.999**step)) + 1e-8)
        print(f"a network, epoch {epoch + 1}: train {cos(forward(xa)[2], ya):.4f}, test {cos(forward(xb)[2], yb):.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
