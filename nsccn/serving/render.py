"""Answers as text for a model: compact JSON, cut to a token cap, with their notes.

Shared by the tools' MCP renderings (nsccn/serving/tools.py) and the MCP server."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from nsccn.serving.escape import json_text, one_line
from nsccn.tokens import count_tokens

MAX_SIGNATURE_CHARS = 300  # one absurd signature must not eat a whole answer
NOTE_KEYS = ("disk_full", "stale", "partial", "unresolved")


def _flat(v: Any) -> bool:
    """A scalar, a list of scalars, or a dict of those: printed on one line."""
    if isinstance(v, dict):
        return all(not isinstance(x, (dict, list)) or (isinstance(x, list) and all(not isinstance(y, (dict, list)) for y in x))
                   for x in v.values())
    if isinstance(v, list):
        return all(not isinstance(x, (dict, list)) for x in v)
    return True


def render_json(v: Any, indent: int = 0, max_depth: int = 99) -> str:
    """Valid JSON, one entry per line down to flat records (or `max_depth` levels): readable and
    cheap in tokens."""
    if _flat(v) or not v or indent >= max_depth:
        return json_text(json.dumps(v, ensure_ascii=False))  # C1 controls and the like escaped too
    pad = " " * (indent + 1)
    if isinstance(v, dict):
        body = ",\n".join(f"{pad}{json_text(json.dumps(k, ensure_ascii=False))}: {render_json(x, indent + 1, max_depth)}"
                          for k, x in v.items())
        return "{\n" + body + "\n" + " " * indent + "}"
    body = ",\n".join(pad + render_json(x, indent + 1, max_depth) for x in v)
    return "[\n" + body + "\n" + " " * indent + "]"


def short(sig: str) -> str:
    return sig if len(sig) <= MAX_SIGNATURE_CHARS else sig[: MAX_SIGNATURE_CHARS - 3] + "..."


def echo(query: str, limit: int = 200) -> str:
    """The query as echoed in an answer: a pasted bug report must not eat the answer's budget."""
    q = " ".join(query.split())
    return q if len(q) <= limit else q[: limit - 3] + "..."


def fit(n_items: int, render: Callable[[int], str], cap: int) -> tuple[int, str]:
    """The largest k <= n_items with count_tokens(render(k)) <= cap, and render(k)."""
    text = render(n_items)
    total = count_tokens(text)
    if total <= cap:
        return n_items, text
    lo, hi = 0, n_items - 1
    guess = min(hi, int(n_items * cap / total))  # tokens are roughly even per item: start near the answer
    if guess > 0:
        if count_tokens(render(guess)) <= cap:
            lo = guess
        else:
            hi = guess - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count_tokens(render(mid)) <= cap:
            lo = mid
        else:
            hi = mid - 1
    return lo, render(lo)


def note_lines(out: dict) -> str:
    """The answer's notes as `# note:` lines for the text the model reads."""
    return "".join(f"# note: {one_line(out[key])}\n" for key in NOTE_KEYS if out.get(key))
