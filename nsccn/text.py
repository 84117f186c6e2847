"""Identifier splitting shared by indexing and querying, so both sides tokenize alike."""

from __future__ import annotations

import re
from functools import lru_cache

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


@lru_cache(maxsize=1 << 18)  # identifiers repeat across a repository: split each once
def _split(ident: str) -> tuple[str, ...]:
    parts: list[str] = []
    for chunk in ident.split("_"):
        parts.extend(p.lower() for p in _CAMEL.findall(chunk))
    return tuple(parts)


def split_identifier(ident: str) -> list[str]:
    """`getHTTPResponse_v2` -> ['get', 'http', 'response', 'v', '2'] (lower case); any
    separator splits, so `Cart::total`, `cart->total`, `parse-http-request` split alike."""
    return list(_split(ident))


def index_terms(text: str, unique: bool = True) -> str:
    """Text for the FTS index: every identifier whole (lower case) and split into its parts.
    `unique=False` keeps repetitions, so BM25 sees term frequency."""
    out: list[str] = []
    seen: set[str] = set()
    for ident in _IDENT.findall(text):
        low = ident.lower()
        parts = _split(ident)
        for term in (low, *parts) if parts != (low,) else (low,):
            if unique:
                if term in seen:
                    continue
                seen.add(term)
            out.append(term)
    return " ".join(out)


def identifiers(text: str) -> list[str]:
    return _IDENT.findall(text)
