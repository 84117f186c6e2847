"""FTS5's bm25() over many OR'd terms, computed with numpy from the index's own postings.

A bug report's query is 30-60 terms OR'd together; on a large repository it matches nearly every
row (a package's name is in every path), and FTS5 then runs its bm25() row by row: most of a
localization's time. The same number is a few array operations once each term's postings are in
hand. This module reads them through `fts5vocab` (instance), the row lengths from the table's
`_docsize`, the row count and total length from its averages record, and follows
`fts5Bm25Function` (sqlite/ext/fts5/fts5_aux.c) operation by operation, so the scores are FTS5's
own to the last bit (a test compares every matching row with FTS5's). Where that cannot be
promised (a term the tokenizer would split) the caller gets None and asks FTS5; column weights
must be whole numbers (a row's weighted frequency is then exact whatever the order of its sum).

Postings and row lengths are cached per connection until the index changes.
"""

from __future__ import annotations

import math
import re
from collections import OrderedDict
from dataclasses import dataclass, field

import apsw
import numpy as np

K1, B = 1.2, 0.75  # fts5_aux.c's constants
# A term stored exactly as written: one token of `unicode61 tokenchars '_'` (lower case ASCII).
_ONE_TOKEN = re.compile(r"[a-z0-9_]+\Z")
# Postings kept per table and connection (the MCP server reads through up to 8 connections):
# sympy's common terms and a few reports' worth of the rest.
CACHE_BYTES = 8 << 20


def _varints(blob: bytes) -> list[int]:
    """SQLite's varints (big-endian 7-bit groups, a 9th byte of 8 bits), as FTS5 stores sizes."""
    out, value, n = [], 0, 0
    for byte in blob:
        n += 1
        if n == 9:
            out.append((value << 8) | byte)
            value, n = 0, 0
        elif byte & 0x80:
            value = (value << 7) | (byte & 0x7F)
        else:
            out.append((value << 7) | byte)
            value, n = 0, 0
    return out


def _row_lengths(blobs: bytes, n_rows: int, n_columns: int) -> np.ndarray:
    """Each row's tokens over all its columns, from its `_docsize` blob (a varint per column),
    all rows' blobs one after another: decoded with array operations (a loop over 28k rows
    costs 70 ms)."""
    if not blobs:
        return np.zeros(n_rows)
    buf = np.frombuffer(blobs, dtype=np.uint8)
    last = buf < 0x80  # the last byte of a varint (sizes never need the 9-byte form)
    if int(last.sum()) != n_rows * n_columns:
        raise ValueError(f"_docsize holds {int(last.sum())} sizes for {n_rows} rows of {n_columns} columns")
    varint = np.concatenate(([0], np.cumsum(last)[:-1]))  # which varint each byte belongs to
    after = np.flatnonzero(last)[varint] - np.arange(len(buf))  # bytes after it in its varint
    values = np.bincount(varint, weights=(buf & 0x7F) * np.power(128.0, after), minlength=n_rows * n_columns)
    return values.reshape(n_rows, n_columns).sum(axis=1)


@dataclass
class Matches:
    """The rows matching any of a query's terms, and per term how often it occurs in each column."""

    rowids: np.ndarray  # int64, ascending
    doc_len: np.ndarray  # float64 per row: its tokens over all columns (FTS5's D)
    phrases: list[tuple[float, np.ndarray, np.ndarray]]  # per query phrase, in order: idf, rows, counts
    avgdl: float
    terms: list[str] = field(default_factory=list)  # each phrase's term (a term listed twice is two phrases)
    _scored: dict = field(default_factory=dict, repr=False)

    def scores(self, weights: tuple[float, ...]) -> np.ndarray:
        """FTS5's `bm25(table, *weights)` of every matching row (negative: lower is better)."""
        key = tuple(map(float, weights))
        if key not in self._scored:
            self._scored[key] = self._score(key)
        return self._scored[key]

    def _score(self, weights: tuple[float, ...]) -> np.ndarray:
        if not all(x.is_integer() for x in weights):
            raise ValueError(f"column weights {weights}: only whole numbers keep the scores FTS5's own")
        w = np.asarray(weights, dtype=np.float64)
        score = np.zeros(len(self.rowids))
        norm = K1 * (1 - B + B * self.doc_len / self.avgdl)
        for idf, rows, counts in self.phrases:
            freq = counts @ w  # whole-number weights: the sum is exact in any order (float64 result)
            score[rows] += idf * ((freq * (K1 + 1.0)) / (freq + norm[rows]))
        return -1.0 * score

    def scores_of(self, rowids: list[int], weights: tuple[float, ...]) -> dict[int, float]:
        """rowid -> FTS5's bm25 for those of `rowids` that match (a lookup, not a dict of all rows)."""
        want = np.asarray(rowids, dtype=np.int64)
        at = np.minimum(np.searchsorted(self.rowids, want), max(0, len(self.rowids) - 1))
        hit = (self.rowids[at] == want) if len(self.rowids) else np.zeros(len(want), dtype=bool)
        return dict(zip(want[hit].tolist(), self.scores(weights)[at[hit]].tolist()))

    def idf_coverage(self) -> np.ndarray:
        """Per matching row, the share of the query's idf its text holds: each distinct term found in
        the row counts its idf once, however often the row or the query says it (BM25 rewards
        repetition; this rewards breadth)."""
        cover = np.zeros(len(self.rowids))
        total = 0.0
        seen: set[str] = set()
        for term, (idf, rows, _counts) in zip(self.terms, self.phrases):
            if term in seen:
                continue
            seen.add(term)
            cover[rows] += idf
            total += idf
        return cover / total if total else cover

    def order(self, scores: np.ndarray) -> np.ndarray:
        """Positions best first, as `ORDER BY bm25(...)` returns them (ties by rowid)."""
        return np.lexsort((self.rowids, scores))


class Postings:
    """One FTS5 table's statistics and postings, read from the index and cached."""

    def __init__(self, conn: apsw.Connection, table: str):
        self.conn, self.table = conn, table
        self.columns = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
        self._version: tuple[int, int] | None = None
        self._terms: OrderedDict[str, tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self._held = 0
        self._has_vocab = False

    def _current(self, version: tuple[int, int]) -> None:
        if version == self._version:
            return
        self._terms.clear()
        self._held = 0
        (avg,) = self.conn.execute(f"SELECT block FROM {self.table}_data WHERE id = 1").fetchone()
        sizes = _varints(avg) or [0]  # a table never written to has an empty record
        self.n_rows, total = sizes[0], sum(sizes[1 : 1 + len(self.columns)])
        self.avgdl = float(total) / float(self.n_rows) if self.n_rows else 0.0
        # One string each, parsed by numpy: 28k rows fetched one by one cost four times as much.
        ids, blobs = self.conn.execute(
            f"SELECT group_concat(id), group_concat(hex(sz), '') FROM {self.table}_docsize").fetchone()
        self.ids = np.fromstring(ids or "", dtype=np.int64, sep=",")
        self.lens = _row_lengths(bytes.fromhex(blobs or ""), len(self.ids), len(self.columns))
        if np.any(np.diff(self.ids) <= 0):  # a rowid table is read in rowid order; never assumed
            by_id = np.argsort(self.ids, kind="stable")
            self.ids, self.lens = self.ids[by_id], self.lens[by_id]
        self._version = version

    def _postings(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """(rowids, per-column counts) of one term, rowids ascending and distinct."""
        hit = self._terms.get(term)
        if hit is not None:
            self._terms.move_to_end(term)
            return hit
        n = len(self.columns)
        cases = " ".join(f"WHEN '{c}' THEN {i}" for i, c in enumerate(self.columns))
        # Each instance as rowid * columns + column, all in one string numpy parses.
        (keys,) = self.conn.execute(
            f"SELECT group_concat(doc * {n} + CASE col {cases} END) FROM temp.{self._vocab()} WHERE term = ?",
            (term,)).fetchone()
        key = np.fromstring(keys or "", dtype=np.int64, sep=",")
        rows, at = np.unique(key // n, return_inverse=True)
        counts = np.bincount(at * n + key % n, minlength=len(rows) * n).reshape(len(rows), n).astype(np.int32)
        found = (rows, counts)
        self._terms[term] = found
        self._held += rows.nbytes + counts.nbytes
        while self._held > CACHE_BYTES and len(self._terms) > 1:
            _, (old_rows, old_counts) = self._terms.popitem(last=False)
            self._held -= old_rows.nbytes + old_counts.nbytes
        return found

    def _vocab(self) -> str:
        name = f"{self.table}_instances"
        if not self._has_vocab:
            self.conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{name} USING fts5vocab(main, {self.table}, instance)")
            self._has_vocab = True
        return name

    def match(self, terms: list[str], version: tuple[int, int]) -> Matches | None:
        """The rows matching any of `terms` (OR), or None where FTS5 must answer instead.
        `version`: the index's (`Store.version`); what was read at another is read again."""
        if not all(_ONE_TOKEN.match(t) for t in terms):
            return None
        with self.conn:  # one snapshot: a writer's commit between two reads would mix two indexes
            try:
                self._current(version)
            except ValueError:  # sizes stored in a form this reader does not know: FTS5 answers
                return None
            if not self.n_rows:
                return Matches(np.zeros(0, dtype=np.int64), np.zeros(0), [], 0.0)
            found = {t: self._postings(t) for t in dict.fromkeys(terms)}
        rowids = np.unique(np.concatenate([r for r, _ in found.values()] or [np.zeros(0, dtype=np.int64)]))
        at = np.searchsorted(self.ids, rowids)
        if len(rowids) and (at[-1] >= len(self.ids) or np.any(self.ids[at] != rowids)):
            return None  # a row without its length: never seen in a consistent index; FTS5 answers
        doc_len = self.lens[at]
        phrases, phrase_terms = [], []
        for term in terms:
            rows, counts = found[term]
            if not len(rows):
                continue
            n_hit = len(rows)
            idf = math.log((self.n_rows - n_hit + 0.5) / (n_hit + 0.5))
            phrases.append((idf if idf > 0.0 else 1e-6, np.searchsorted(rowids, rows), counts))
            phrase_terms.append(term)
        return Matches(rowids, doc_len, phrases, self.avgdl, terms=phrase_terms)

