"""Identifier splitting shared by indexing and querying, so both sides tokenize alike."""

from __future__ import annotations

import re

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def split_identifier(ident: str) -> list[str]:
    """`getHTTPResponse_v2` -> ['get', 'http', 'response', 'v2'] (lower case)."""
    parts: list[str] = []
    for chunk in ident.split("_"):
        parts.extend(p.lower() for p in _CAMEL.findall(chunk))
    return parts


def index_terms(text: str) -> str:
    """Text for the FTS index: every identifier whole (lower case) and split into its parts."""
    out: list[str] = []
    seen: set[str] = set()
    for ident in _IDENT.findall(text):
        low = ident.lower()
        for term in (low, *split_identifier(ident)):
            if term not in seen:
                seen.add(term)
                out.append(term)
    return " ".join(out)


def identifiers(text: str) -> list[str]:
    return _IDENT.findall(text)
