"""Identifier splitting shared by indexing and querying, so both sides tokenize alike."""

from __future__ import annotations

import re
from functools import lru_cache
from itertools import chain

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


# Identifiers repeat across a repository: split each once. The caches are bounded because a
# parser lives as long as its pipeline: at 2**18 entries each, a parser grew from 41 to 140 MB over
# a 100k-file tree. 2**16 holds all of sympy's 44k distinct identifiers (2**14 cost the pipeline
# 3% more CPU there): benchmarks/results/pipeline-scale/identifier-cache.md.
_IDENT_CACHE = 1 << 16


def split_parts(ident: str) -> tuple[str, ...]:
    """`split_identifier` without its cache: for a caller that remembers each identifier's
    result itself (the static model), where the cache would hold a second copy of every one."""
    parts: list[str] = []
    for chunk in ident.split("_"):
        parts.extend(p.lower() for p in _CAMEL.findall(chunk))
    return tuple(parts)


_split = lru_cache(maxsize=_IDENT_CACHE)(split_parts)


def split_identifier(ident: str) -> list[str]:
    """`getHTTPResponse_v2` -> ['get', 'http', 'response', 'v', '2'] (lower case); any
    separator splits, so `Cart::total`, `cart->total`, `parse-http-request` split alike."""
    return list(_split(ident))


@lru_cache(maxsize=_IDENT_CACHE)
def _terms(ident: str) -> tuple[str, ...]:
    """An identifier's index terms: itself in lower case, then its parts when they differ."""
    low = ident.lower()
    parts = _split(ident)
    return (low, *parts) if parts != (low,) else (low,)


def index_terms(text: str, unique: bool = True) -> str:
    """Text for the FTS index: every identifier whole (lower case) and split into its parts.
    `unique=False` keeps repetitions, so BM25 sees term frequency."""
    terms = term_list(text)
    return " ".join(dict.fromkeys(terms) if unique else terms)


def term_list(text: str) -> list[str]:
    """The terms of `index_terms(text, unique=False)`, in order, as a list."""
    return list(chain.from_iterable(map(_terms, _IDENT.findall(text))))


def identifiers(text: str) -> list[str]:
    return _IDENT.findall(text)
