#!/usr/bin/env python
"""A static model with a linear map baked into its rows (stop 64: tried, not kept).

    python benchmarks/results/static-embedding/linear_map.py --model M.npz --texts MORE.jsonl.gz \
        --parts TEACHER_PARTS --basis TEACHER.npz [--n 30000] --out MAPPED.npz

W is the least-squares map from the model's vectors of the first N texts of a corpus it never trained on (MORE: an
extension corpus, `train_static_embedder.py corpus --exclude`) to the teacher's vectors of them (`static_teacher.py
--parts`, reduced with the training corpus's basis). A text's vector is normalize(sum of w_t r_t), so normalize(x W)
is the same as every row, the vocabulary's and the bank's, mapped by W: the file keeps its form (the bank scaled
into its int8 range; a common scale changes no cosine). Prints the mean cosine with the teacher before and after.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from pool_fit import cos, load  # noqa: E402

from nsccn.vectors.static_embed import StaticModel  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--texts", type=Path, required=True)
    ap.add_argument("--parts", type=Path, required=True, help="static_teacher.py --parts DIR of those texts")
    ap.add_argument("--basis", type=Path, required=True, help="the training corpus's teacher file (its PCA)")
    ap.add_argument("--n", type=int, default=30000)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    m = StaticModel.load(args.model)
    x, y = load(m, args.texts, args.parts, args.n, args.basis)
    w, *_ = np.linalg.lstsq(x, y, rcond=None)
    print(f"{args.model.name}: mean cosine with the teacher {cos(x, y):.4f}, mapped {cos(x @ w, y):.4f}")
    mapped = m.table @ w
    mapped /= np.abs(mapped[m.n_vocab:]).max()  # the bank's int8 rows hold values in [-1, 1]
    StaticModel(m.vocab, mapped[: m.n_vocab], m.model_id, header=m.header, bank=mapped[m.n_vocab:],
                query_weight=m.query_weight).save(args.out, {"linear_map": f"{args.texts.name} {args.n}"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
