"""Two rankings of the same queries, metric by metric: the means, how many queries got better
and worse, and the two-sided sign test's p of that split (results scripts use it)."""

from __future__ import annotations

from math import comb

KEYS = ("file@1", "file@3", "file@5", "function@5", "function@10")


def sign_p(better: int, worse: int) -> float:
    n = better + worse
    return min(1.0, 2 * sum(comb(n, i) for i in range(min(better, worse) + 1)) / 2 ** n) if n else 1.0


def compare(a: dict, b: dict, ids, key: str) -> tuple[float, float, int, int, float]:
    """a, b: instance id -> a record with "metrics"; over the ids where `key` is scored:
    (mean before, mean after, better, worse, p), means in percent."""
    xs = [i for i in ids if a[i]["metrics"].get(key) is not None]
    before = 100 * sum(a[i]["metrics"][key] for i in xs) / max(1, len(xs))
    after = 100 * sum(b[i]["metrics"][key] for i in xs) / max(1, len(xs))
    better = sum(1 for i in xs if b[i]["metrics"][key] and not a[i]["metrics"][key])
    worse = sum(1 for i in xs if a[i]["metrics"][key] and not b[i]["metrics"][key])
    return before, after, better, worse, sign_p(better, worse)
