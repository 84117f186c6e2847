"""Exact token counts with a real LLM tokenizer (o200k_base), not characters divided by a constant."""

from __future__ import annotations

from functools import lru_cache


ENCODING = "o200k_base"


@lru_cache(maxsize=1)
def _encoding():
    import bpe_openai  # loaded on first count: processes that never count tokens skip its start-up

    return bpe_openai.get_encoding(ENCODING)


CHUNK_CHARS = 100_000  # the encoder refuses inputs over 200k tokens; count long texts in pieces


def count_tokens(text: str) -> int:
    if not text:
        return 0
    enc = _encoding()
    if len(text) <= CHUNK_CHARS:
        return len(enc.encode_ordinary(text))
    total, start = 0, 0
    while start < len(text):
        end = text.rfind("\n", start, start + CHUNK_CHARS) + 1 or start + CHUNK_CHARS
        if end <= start:
            end = start + CHUNK_CHARS
        total += len(enc.encode_ordinary(text[start:end]))
        start = end
    return total


def truncate_to_tokens(text: str, max_tokens: int) -> tuple[str, bool]:
    """The longest prefix of `text` within `max_tokens`, cut at a line end; (text, was_cut)."""
    if count_tokens(text) <= max_tokens:
        return text, False
    lines = text.splitlines(keepends=True)
    lo, hi = 0, len(lines)
    while lo < hi:  # binary search on the number of whole lines that fit
        mid = (lo + hi + 1) // 2
        if count_tokens("".join(lines[:mid])) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return "".join(lines[:lo]), True
