"""The static code embedding: a token table trained for localization, on by default.

A text's vector is the sum of its tokens' rows, L2-normalized (the rows' norms carry how much
each token weighs). Tokens are the identifier parts the lexical index uses (`nsccn.text`:
``getHTTPResponse`` -> ``get``, ``http``, ``response``), in lower case, plus a whole identifier of
several parts when the vocabulary knows it (``getattr``, ``setdefault``); a token the vocabulary
does not know adds nothing (BM25 and the exact-name streams see it). No tokenizer library and no
ONNX Runtime: the table is a numpy array, so a query costs microseconds and a process that embeds
one query loads the model in milliseconds.

The model file (``model.npz``, uncompressed) holds the vocabulary (one token a line), the table as
int8 with one float scale per row, and a JSON header naming its format and model id; one of another
format is refused (`ModelUnavailable`) with one line saying why. It is rebuilt from mined data by
``benchmarks/train_static_embedder.py`` (docs/semantic-search.md). A loaded model keeps what it
reads small (the writer embeds beside the parsers): its int8 rows stay in the file until a text uses
them (`nsccn.vectors.file_rows`), its vocabulary is a `TokenIndex`, not a dict of str.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import sys
import threading
import zipfile
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from nsccn.vectors.static_file import FORMAT, FORMAT_VERSION, STATIC_MODEL, STATIC_MODEL_FILE, model_file
from nsccn.text import split_identifier, split_parts
from nsccn.vectors.file_rows import FileRows
from nsccn.vectors.token_index import TokenIndex
# The static model reads the whole text the index stores for an entity (name, path, signature,
# docstring, body head) at a cost linear in its length, so it gets more of it than a transformer.
STATIC_MAX_CHARS = 2000

# Words, identifiers and numbers; an identifier of several parts also counts whole.
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")
_MAX_NUMBER_DIGITS = 4  # 404, 2038, 1e9's parts; longer digit runs are ids and hashes
_BANK_SCALE = np.float32(1 / 127.0)  # the bank's rows are random unit-scale values, stored as int8
_CACHE_ENTRIES = 1 << 16  # identifiers (and tokens) whose rows are remembered: bounded, as nsccn.text's
# The second stage's score is cosine + LATE_WEIGHT x late interaction: chosen on the validation set
# of the model's own choices (docs/semantic-search.md, "A second stage"), not on any set reported.
LATE_WEIGHT = 2.0
# ... plus COVER_WEIGHT x how well the query covers the text (the late interaction the other way):
# chosen on the cross-fitted validation set of the training repositories' commits (stop 63,
# docs/semantic-search.md, "The late interaction both ways").
COVER_WEIGHT = 0.5
# ... plus NAME_WEIGHT x how well the query covers the candidate's qualified name (`second_stage`): a
# report names what it is about more often than a function's text says the report's words, and a
# big module's methods all say its words. Chosen on repositories in no training or evaluation set
# (stop 68, docs/semantic-search.md, "The names a query says").
NAME_WEIGHT = 0.35
# A query of several lines (a bug report's title then its body, a commit's subject then its message)
# reads its first line TITLE_REPEAT more times: the title says in a few words what the body says at
# length, and a long body's words would drown it in the mean. Chosen on the dev set's reports and
# checked once on the twelve held-out repositories' messages (docs/semantic-search.md, "A report's title").
TITLE_REPEAT = 2
# A first line longer than this is a paragraph or a pasted log line, not a title: read once (and a
# pasted megabyte is never read three times). No first line of the dev set or the twelve passes 135.
TITLE_MAX_CHARS = 300


def as_query(text: str) -> str:
    """`text` as the static model reads a query: a first line followed by more lines counts
    `TITLE_REPEAT` more times; a one-line query, or a first line too long for a title, is read as it is."""
    first, _, rest = text.partition("\n")
    if TITLE_REPEAT <= 0 or not first.strip() or not rest.strip() or len(first) > TITLE_MAX_CHARS:
        return text
    return (first + "\n") * TITLE_REPEAT + text


# A query's code lines (a report's snippet or traceback, a message's indented example) weigh CODE_WEIGHT
# times its prose lines, in its vector and in the second stage: a snippet's many identifiers (its
# variables, its prints and asserts) would drown the few words that say what is wrong, and the prose
# is what a function's name and docstring say too. Chosen on report-like queries of repositories in
# no training or evaluation set (docs/semantic-search.md, "A report's code lines").
CODE_WEIGHT = 0.5
# A code line: inside a ``` fence, an interpreter prompt (`>>>`, `...`), indented by a tab or four
# spaces, or a Python traceback's frame.
_CODE_LINE = re.compile(r'(?:>>>|\.\.\.|\t| {4})|\s*File "[^"\n]*", line \d')


def prose_and_code(text: str) -> tuple[str, str]:
    """`text`'s prose lines and its code lines (`_CODE_LINE`, or inside a ``` fence; the fences'
    own lines are in neither), each joined by newlines."""
    prose: list[str] = []
    code: list[str] = []
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif fenced or _CODE_LINE.match(line):
            code.append(line)
        else:
            prose.append(line)
    return "\n".join(prose), "\n".join(code)


class ModelUnavailable(RuntimeError):
    """The model file is missing, unreadable, or of another format or version."""


def tokens(text: str, compounds: frozenset[str] | set[str] | dict | TokenIndex | None = None,
           split=split_identifier) -> list[str]:
    """The tokens of `text`, in order: each identifier's parts in lower case, preceded by the whole
    identifier (lower case, underscores kept) when it has several parts and `compounds` holds it:
    `set_default` as `set_default`, and `setDefault` as `setdefault`, the token `setdefault` is.
    `split`: how an identifier is split (`split_parts` for a caller that remembers the tokens itself)."""
    out: list[str] = []
    for ident in _TOKEN.findall(text):
        if ident[0].isdigit():
            if len(ident) <= _MAX_NUMBER_DIGITS:
                out.append(ident)
            continue
        parts = split(ident)
        if len(parts) > 1 and compounds is not None:
            whole = ident.lower()
            if whole in compounds:
                out.append(whole)
        out.extend(p for p in parts if not p.isdigit() or len(p) <= _MAX_NUMBER_DIGITS)
    return out


class StaticModel:
    """A loaded token table: `embed(texts)` -> (n, dim) float32, rows L2-normalized."""

    def __init__(self, vocab: list[str] | TokenIndex, table: np.ndarray | None, model_id: str = STATIC_MODEL, source: str = "",
                 header: dict | None = None, bank: np.ndarray | None = None,
                 quantized: tuple[np.ndarray, np.ndarray] | None = None, query_weight: np.ndarray | None = None):
        """`table`: the vocabulary's float rows (training), or None with `quantized` = (int8 rows of
        the vocabulary, a float scale per row) and `bank` its int8 rows (scale 1/127), as loaded from
        a model file (`FileRows`: read from it row by row as texts use them): rows are
        turned back into floats only when gathered, so a process that embeds one query loads the
        model in milliseconds. Embedding tries every identifier of several parts whole against the
        whole vocabulary, as the vocabulary was counted (`setDefault` is the token `setdefault`).
        `query_weight`: how much each known token weighs in a query (a bug report's words are not a
        function's), learned with the table; None weighs a query's tokens as an entity's. `vocab`:
        the tokens, or their `TokenIndex` (as loaded: no list of them is made unless `vocab` is read)."""
        if isinstance(vocab, TokenIndex):
            self.index, self._vocab = vocab, None
        else:
            self.index, self._vocab = TokenIndex("\n".join(vocab)), list(vocab)
        self.n_vocab = n = len(self.index)
        if quantized is not None:
            # Kept apart, as read: joining them would hold a second copy while it is made.
            self._q, self._scale = quantized
            self._bank_q = np.zeros((0, self._q.shape[1] if self._q.ndim == 2 else 0), np.int8) if bank is None else bank
            if self._q.ndim != 2 or len(self._q) != n or len(self._scale) != n or self._bank_q.ndim != 2 \
                    or self._bank_q.shape[1] != self._q.shape[1]:
                raise ModelUnavailable(f"the static model's rows have shape {self._q.shape} (bank "
                                       f"{self._bank_q.shape}) for {n} tokens")
            self.dim = int(self._q.shape[1])
            self._table = None
            self.bank_rows = len(self._bank_q)
        else:
            if table is None or table.ndim != 2 or table.shape[0] != n:
                raise ModelUnavailable(f"the static model's table has shape {getattr(table, 'shape', None)} for {n} tokens")
            if bank is not None and (bank.ndim != 2 or bank.shape[1] != table.shape[1]):
                raise ModelUnavailable(f"the static model's bank has shape {bank.shape} beside a table of {table.shape}")
            self.dim = int(table.shape[1])
            # An unknown token (a code base's own names) still counts: its vector is two fixed random
            # rows of the bank chosen by a hash of the token, nearly orthogonal to every other token's,
            # so texts sharing a rare name are closer (what BM25 sees), at `oov_weight`.
            bank = np.zeros((0, self.dim), np.float32) if bank is None else np.asarray(bank, np.float32)
            self._table = np.ascontiguousarray(np.vstack([table, bank]), dtype=np.float32)
            self._q = None
            self.bank_rows = len(bank)
        self.model_id = model_id
        self.source = source
        self.header = header or {}
        self.tf = self.header.get("tf", "log")
        self.oov_weight = float(self.header.get("oov_weight", 0.0)) if self.bank_rows else 0.0
        self.query_weight = query_weight
        self._ident_tokens: dict[str, tuple[str, ...]] = {}
        self._token_rows: dict[str, tuple[tuple[int, float], ...]] = {}

    @property
    def vocab(self) -> list[str]:
        """The tokens, in row order (made when first read: embedding needs only `index`)."""
        if self._vocab is None:
            self._vocab = self.index.tokens()
        return self._vocab

    @property
    def table(self) -> np.ndarray:
        """Every row (the vocabulary's, then the bank's) as float32."""
        if self._table is None:
            self._table = np.vstack([np.asarray(self._q).astype(np.float32) * self._scale[:, None],
                                     np.asarray(self._bank_q).astype(np.float32) * _BANK_SCALE])
        return self._table

    @property
    def bank(self) -> np.ndarray:
        return self.table[self.n_vocab:]

    def rows(self, ids: np.ndarray) -> np.ndarray:
        if self._table is not None:
            return self._table[ids]
        n = len(self._q)
        # In place where it can: the same products, one array of floats held at a time, not three.
        if not self.bank_rows or ids.size == 0 or ids.max() < n:
            out = self._q[ids].astype(np.float32)
            out *= self._scale[ids, None]
            return out
        out = np.empty((len(ids), self.dim), np.float32)
        known = ids < n
        part = self._q[ids[known]].astype(np.float32)
        part *= self._scale[ids[known], None]
        out[known] = part
        del part
        part = self._bank_q[ids[~known] - n].astype(np.float32)
        part *= _BANK_SCALE
        out[~known] = part
        return out

    @classmethod
    def load(cls, path: str | Path = STATIC_MODEL_FILE) -> StaticModel:
        path = Path(path)
        if not path.is_file():
            raise ModelUnavailable(f"the static embedding model is missing: {path}")
        try:
            with np.load(path, allow_pickle=False) as npz:
                header = json.loads(bytes(npz["header"]).decode("utf-8"))
                if header.get("format") != FORMAT or header.get("format_version") != FORMAT_VERSION:
                    raise ModelUnavailable(
                        f"{path} is not a static embedding model of format {FORMAT} v{FORMAT_VERSION} "
                        f"(it says {header.get('format')!r} v{header.get('format_version')!r})")
                vocab = TokenIndex(bytes(npz["vocab"]).decode("utf-8"))
                # The int8 rows stay in the file, each read when a text first needs it (`FileRows`).
                q, scale = FileRows.of_npz(path, "table") or npz["table"], npz["scale"].astype(np.float32)
                bank = (FileRows.of_npz(path, "bank") or npz["bank"]) if "bank" in npz.files else None
                query_weight = npz["query_weight"].astype(np.float32) if "query_weight" in npz.files else None
        except ModelUnavailable:
            raise
        except (OSError, KeyError, ValueError, UnicodeDecodeError, zipfile.BadZipFile) as exc:
            raise ModelUnavailable(f"the static embedding model {path} cannot be read: {exc}") from None
        return cls(vocab, None, header.get("model_id", STATIC_MODEL), str(path.resolve()), header,
                   quantized=(q, scale), bank=bank, query_weight=query_weight)

    def save(self, path: str | Path, header: dict | None = None) -> None:
        """Write the table as int8 with a float32 scale per row (the shipped form)."""
        rows = self.table[: self.n_vocab]
        scale = np.abs(rows).max(axis=1) / 127.0
        scale[scale == 0] = 1.0
        q = np.clip(np.rint(rows / scale[:, None]), -127, 127).astype(np.int8)
        bank = {"bank": np.clip(np.rint(self.bank / _BANK_SCALE), -127, 127).astype(np.int8)} if self.bank_rows else {}
        head = {**self.header, "format": FORMAT, "format_version": FORMAT_VERSION, "model_id": self.model_id,
                "dim": self.dim, "tokens": self.n_vocab, "tf": self.tf, "oov_weight": self.oov_weight,
                "bank_rows": self.bank_rows, **(header or {})}
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        # A new file put in place, never the old one rewritten: a loaded model reads its rows from
        # the file it opened as texts need them (`FileRows`).
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as f:
            np.savez(f, header=np.frombuffer(json.dumps(head, sort_keys=True).encode(), dtype=np.uint8),
                     vocab=np.frombuffer("\n".join(self.vocab).encode("utf-8"), dtype=np.uint8),
                     table=q, scale=scale.astype(np.float32), **bank,
                     **({} if self.query_weight is None else {"query_weight": self.query_weight.astype(np.float16)}))
        os.replace(tmp, path)

    def bag(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """Row ids of `text` (its known tokens, and two bank rows per unknown one) and their
        weights: 1 + log(count) ("log" term frequency: a word a long body repeats counts, but not
        linearly) or the count ("raw"), times the bank's signed weight for an unknown token."""
        # Code repeats its identifiers: each one's tokens, and each token's rows, are worked out once.
        idents, rows_of = self._ident_tokens, self._token_rows
        counts: dict[str, int] = {}
        for ident in _TOKEN.findall(text):
            toks = idents.get(ident)
            if toks is None:
                if len(idents) >= _CACHE_ENTRIES:
                    idents.clear()
                # Interned: the identifiers' tokens repeat (sympy's 41k identifiers hold 81k tokens, 14k
                # distinct), and one string each is what the cache holds (3.5 MB less there).
                toks = idents[ident] = tuple([sys.intern(t) for t in tokens(ident, self.index, split_parts)])
            for t in toks:
                counts[t] = counts.get(t, 0) + 1
        ids: list[int] = []
        weights: list[float] = []
        log_tf = self.tf == "log"
        for t, c in counts.items():
            rows = rows_of.get(t)
            if rows is None:
                if len(rows_of) >= _CACHE_ENTRIES:
                    rows_of.clear()
                rows = rows_of[t] = self._rows_of(t)
            w = 1.0 + math.log(c) if log_tf else float(c)
            for row, sign in rows:
                ids.append(row)
                weights.append(sign * w)
        return np.asarray(ids, dtype=np.intp), np.asarray(weights, dtype=np.float32)

    def query_bag(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """`bag` of a query: read by `as_query`, its prose lines and its code lines bagged apart and
        the code's weights times `CODE_WEIGHT`, every known token's weight times its `query_weight`.
        A token of both kinds has a row of each."""
        prose, code = prose_and_code(as_query(text))
        found_prose, w_prose = self.bag(prose)
        found_code, w_code = self.bag(code)
        found = np.concatenate([found_prose, found_code])
        return found, self.weigh_query(found, np.concatenate([w_prose, np.float32(CODE_WEIGHT) * w_code]))

    def weigh_query(self, found: np.ndarray, w: np.ndarray) -> np.ndarray:
        """`w` (the weights of a query's rows `found`, weighed in place) times each known token's `query_weight`."""
        if self.query_weight is not None and len(found):
            known = found < self.n_vocab
            w[known] *= self.query_weight[found[known]]
        return w

    def _rows_of(self, token: str) -> tuple[tuple[int, float], ...]:
        i = self.index.get(token)
        if i is not None:
            return ((i, 1.0),)
        if not self.oov_weight:
            return ()
        return tuple((row, sign * self.oov_weight) for row, sign in self._bank_rows(token))

    def _bank_rows(self, token: str) -> tuple[tuple[int, float], tuple[int, float]]:
        return _bank_rows(token, self.n_vocab, self.bank_rows)

    def embed(self, texts: Iterable[str], batch_size: int = 0, query: bool = False) -> np.ndarray:
        """(n, dim) float32, rows L2-normalized; `query`: the texts are queries (read by `query_bag`).
        `batch_size`: the other backends' signature."""
        texts = list(texts)
        bag = self.query_bag if query else self.bag
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        ids: list[np.ndarray] = []
        weights: list[np.ndarray] = []
        starts: list[int] = []  # where each text with tokens begins in the gathered rows
        rows: list[int] = []
        size = 0
        for row, text in enumerate(texts):
            found, w = bag(text)
            if len(found):
                rows.append(row)
                starts.append(size)
                ids.append(found)
                weights.append(w)
                size += len(found)
        if size:  # the weighted rows of each text summed in one pass over the gathered rows
            gathered = self.rows(np.concatenate(ids))
            gathered *= np.concatenate(weights)[:, None]
            out[rows] = np.add.reduceat(gathered, starts, axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)

    def second_stage(self, query: str, texts: list[str], cosines, qualnames: list[str] | None = None) -> np.ndarray:
        """Scores that order the vector stream's first candidates (`texts`, whose vectors' cosines
        to the query are `cosines`) again: cosine + `LATE_WEIGHT` x how well each text covers the
        query's tokens + `COVER_WEIGHT` x how well the query covers the text's (`interactions`), and,
        given the candidates' `qualnames`, + `NAME_WEIGHT` x how well the query covers each qualified
        name's (the same interaction over the name alone: each row of `Invoice.total_tax`, weighed as
        its vector weighs it, takes its best cosine with any of the query's rows)."""
        names = list(qualnames) if qualnames is not None and NAME_WEIGHT else []
        covers, covered = self.interactions(query, list(texts) + names)  # the names' rows in the texts' pass
        n = len(texts)
        out = np.asarray(cosines, dtype=np.float32) + LATE_WEIGHT * covers[:n] + COVER_WEIGHT * covered[:n]
        return out + np.float32(NAME_WEIGHT) * covered[n:] if names else out

    def late_interaction(self, query: str, texts: list[str]) -> np.ndarray:
        """How well each text's tokens cover the query's (the first of `interactions`)."""
        return self.interactions(query, texts)[0]

    def interactions(self, query: str, texts: list[str], query_rows: tuple[np.ndarray, np.ndarray] | None = None
                     ) -> tuple[np.ndarray, np.ndarray]:
        """Two late interactions of the query with each text, in [-1, 1]. First, how well the text
        covers the query: each row of the query (read and weighed as `embed(query=True)` does) takes
        its best cosine with any distinct row of the text, averaged by those weights. A mean vector
        blurs a long text's tokens together; this asks of every query token whether the text says it
        or something close (a rare name of the query is found exactly: its bank rows). Second, the
        other way, how well the query covers the text: each row of the text, weighed as the text's
        vector weighs it, takes its best cosine with any row of the query (a text that says little
        besides the query's words, over one that says them among many others: BERTScore's precision
        beside its recall). For the vector stream's top candidates only (docs/semantic-search.md,
        "A second stage", "The late interaction both ways"). `query_rows`: the query's rows and weights
        as `query_bag` gives them, when the caller has read the query otherwise (a benchmark's variant)."""
        covers = np.zeros(len(texts), dtype=np.float32)
        covered = np.zeros(len(texts), dtype=np.float32)
        found, w = self.query_bag(query) if query_rows is None else (query_rows[0], query_rows[1].copy())
        if not len(found) or not texts:
            return covers, covered
        q = self.rows(found)
        norms = np.linalg.norm(q, axis=1)
        w = np.abs(w) * norms  # a row's norm is how much its token weighs in a vector
        total = float(w.sum())
        bags = [self._weighed_rows(t) for t in texts]
        rows, where = np.unique(np.concatenate([b[0] for b in bags]), return_inverse=True)  # each row once
        if total <= 0 or not len(rows):
            return covers, covered
        d = self.rows(rows)
        d_norms = np.linalg.norm(d, axis=1)
        d /= np.maximum(d_norms, 1e-12)[:, None]
        sims = (q / np.maximum(norms, 1e-12)[:, None]) @ d.T
        start = 0
        for j, (bag, tw) in enumerate(bags):
            if len(bag):
                cols = where[start:start + len(bag)]
                block = sims[:, cols]
                covers[j] = float(w @ block.max(axis=1)) / total
                tw = tw * d_norms[cols]
                covered[j] = float(tw @ block.max(axis=0)) / max(float(tw.sum()), 1e-12)
            start += len(bag)
        return covers, covered

    def _weighed_rows(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """A text's distinct rows and each one's weight in its vector, less the row's norm."""
        ids, w = self.bag(text)
        if not len(ids):
            return ids, w
        rows, at = np.unique(ids, return_inverse=True)
        return rows, np.bincount(at, weights=np.abs(w), minlength=len(rows)).astype(np.float32)


def _bank_rows(token: str, offset: int, size: int) -> tuple[tuple[int, float], tuple[int, float]]:
    """Two signed rows of the bank for `token`, from a stable hash (Python's `hash` is salted).
    Not cached here: a model's `_token_rows` remembers each token's rows (a cache here held a
    second copy of them and was never hit)."""
    h = int.from_bytes(hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest(), "little")
    a, b = h & 0xFFFFFF, (h >> 24) & 0xFFFFFF
    scale = 1.0 / math.sqrt(2.0)
    return ((offset + a % size, scale if (h >> 48) & 1 else -scale),
            (offset + b % size, scale if (h >> 49) & 1 else -scale))


_LOADED: dict[str, StaticModel] = {}
_LOCK = threading.Lock()


def load_static_model(path: str | Path | None = None) -> StaticModel:
    """The model at `path` (default `model_file()`), loaded once per process."""
    path = model_file() if path is None else path
    key = str(path)
    with _LOCK:
        model = _LOADED.get(key)
        if model is None:
            model = _LOADED[key] = StaticModel.load(path)
        return model
