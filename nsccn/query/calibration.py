"""A search result's score as a probability a user can read: how likely this result is one the
query was looking for, the same scale whichever ranking answered and whatever the query.

The rankings' own numbers cannot be read that way: the learned ranker's raw score is a LambdaMART
margin (only its order within one query means something) and the hand-tuned fusion's is a sum of
reciprocal ranks (~0.02). Each is mapped through a logistic curve of two inputs, the raw score and
its distance below the query's best raw score (how clearly a result leads), fitted on queries the
ranker never trained on: the commit messages of the held-out repositories
(`benchmarks/score_calibration.py`, which also measures how well calibrated it is on repositories
the curve itself did not see; docs/learned-ranking.md, "Scores"). The fit is kept beside the shipped
model with that model's digest: a model trained again needs its curve fitted again, and a test
says so (tests/test_score_calibration.py).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from nsccn.query.streams import Hit

CALIBRATION_FILE = Path(__file__).resolve().parent.parent / "models" / "ranker" / "calibration.json"  # beside the model
SCORERS = ("model", "fusion", "name")  # the learned ranker, the fusion, a definition of the name typed


@dataclass(frozen=True)
class Curve:
    """p = 1 / (1 + exp(-(bias + w_score * score + w_gap * (score - best score of the query))))."""

    bias: float
    w_score: float
    w_gap: float

    def probability(self, score: float, best: float) -> float:
        z = self.bias + self.w_score * score + self.w_gap * (score - best)
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))


def model_digest(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


@lru_cache(maxsize=1)
def curves() -> dict[str, Curve]:
    """The fitted curves, by what scored the hit ("model", "fusion"); none when no fit ships."""
    try:
        data = json.loads(CALIBRATION_FILE.read_text())
    except (OSError, ValueError):
        return {}
    return {name: Curve(*data["curves"][name]) for name in SCORERS if name in data.get("curves", {})}


def probabilities(hits: list[Hit]) -> list[Hit]:
    """The hits with `score` the probability that each is what the query sought (`scored_by`
    "probability"). The best raw score of each scorer is the query's first hit of it (the list
    starts at rank 1). A hit the fusion scored below the learned ranker's hits (the rest of what
    the fusion matched) is no likelier than the last of them. Without a fitted curve the hits are
    returned as they are."""
    fitted = curves()
    if not fitted or not any(h.scored_by in fitted for h in hits):
        return hits
    best: dict[str, float] = {}
    for h in hits:
        if h.scored_by in fitted:
            best[h.scored_by] = max(best.get(h.scored_by, h.score), h.score)
    out: list[Hit] = []
    floor = 1.0  # the last model-scored probability: the fusion's tail stays below it
    for h in hits:
        curve = fitted.get(h.scored_by)
        if curve is None:
            out.append(h)
            continue
        p = curve.probability(h.score, best[h.scored_by])
        if h.scored_by == "model":
            floor = p
        elif "model" in best:
            p = min(p, floor)
        out.append(replace(h, score=p, scored_by="probability"))
    return out


def function_probabilities(raw: dict[str, float]) -> dict[str, float]:
    """`localize`'s functions, each the probability that the fix changes it: the learned ranker's
    raw scores of one report through the same curve as `search`'s. The curve fits exactly this: the
    model's top 10 functions for a commit message, labelled by whether the commit changed them
    (`benchmarks/score_calibration.py`). Empty without a fitted curve or raw scores."""
    curve = curves().get("model")
    if curve is None or not raw:
        return {}
    best = max(raw.values())
    return {f: curve.probability(s, best) for f, s in raw.items()}
