"""A vocabulary's token -> row lookup in a few flat arrays instead of a dict of str.

The static model's vocabulary has 67,870 tokens: as a dict of str to int (with the list of them)
it took 8.5 MB of the writer's memory (a str object, an int object and a dict entry per token);
this takes 2 MB (the tokens' text, one offset and one hash a token). A lookup is a bisection over
the sorted hashes (about a microsecond, a dict's is a tenth of that), which the model makes once
per distinct token or identifier (its caches remember the answer), so embedding is no slower.
"""

from __future__ import annotations

import bisect
from array import array

import numpy as np


class TokenIndex:
    """`index.get(token)`: the row of `token` (its position in the vocabulary), or None; `token in
    index`; `len(index)`; `index.tokens()`, the vocabulary as a list. A token listed twice is found
    at its last row, as a dict built from the list would."""

    def __init__(self, text: str):
        """`text`: the tokens joined by newlines (the model file's form); a token holds no newline."""
        tokens = text.split("\n") if text else []
        n = len(tokens)
        # Python's str hash: salted per process, and the index lives only in the process that built it.
        hashes = np.fromiter(map(hash, tokens), np.int64, n)
        order = np.argsort(hashes, kind="stable")  # equal hashes keep the rows' order
        starts = np.zeros(n + 1, np.int64)
        np.cumsum(np.fromiter(map(len, tokens), np.int64, n) + 1, out=starts[1:])
        del tokens
        self._text = text
        # Flat arrays of machine ints: bisect and indexing read them without numpy's per-call cost.
        self._hashes = array("q", hashes[order].tobytes())
        self._rows = array("i", order.astype(np.int32).tobytes())
        self._starts = array("i", starts.astype(np.int32).tobytes())  # row r is text[starts[r]:starts[r + 1] - 1]

    def __len__(self) -> int:
        return len(self._rows)

    def get(self, token: str, default: int | None = None) -> int | None:
        hashes, h = self._hashes, hash(token)
        i = bisect.bisect_left(hashes, h)
        found = default
        while i < len(hashes) and hashes[i] == h:  # equal hashes: rows in order, the last match wins
            row = self._rows[i]
            if self._text[self._starts[row]:self._starts[row + 1] - 1] == token:
                found = row
            i += 1
        return found

    def __contains__(self, token: object) -> bool:
        return isinstance(token, str) and self.get(token) is not None

    def tokens(self) -> list[str]:
        return self._text.split("\n") if self._rows else []
