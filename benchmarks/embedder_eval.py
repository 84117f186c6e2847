#!/usr/bin/env python
"""The vector stream alone, per embedding model, on repositories at one commit each.

    python benchmarks/embedder_eval.py --dataset D.jsonl --mirrors MIRRORS --models nsccn/all-MiniLM-L6-v2-onnx-int8 nsccn/minilm-code-v1 [--repo R] [--out OUT.md] [--one-stage] [--title-repeat N]

For each repository of the dataset (the format of ../shared/bench/swebench-dev.jsonl; commit
messages from `mine_history.py` too), its newest base commit is read from the mirror, every
function, method and class of its non-test Python files is embedded as the index embeds it
(`embed.embedding_text`), and each query (its problem statement) ranks them by cosine. A query
counts when all its gold functions exist at that commit (the same queries for every model).
Reported: file@1/@5 (the files of the gold functions, files ranked by their best entity) and
function@5/@10 (all of the first k gold functions in the top k), per repository and overall.
A static model's stream is scored as nsccn reads it: each entity's vector with its file's
(`semantic.FileContext`; `--no-file-context` without), its first `semantic.RERANK_DEPTH` entities
and the first files' others ordered again by its second stage (`semantic.staged`); `--one-stage`
scores cosine alone.
A static model reads a query's first line `static_embed.TITLE_REPEAT` more times when more lines
follow (`--title-repeat N` another number; 0: once, as the rest).
One commit per repository keeps it to one embedding of each corpus per model; a query of an
older base commit sees a slightly newer tree than it was written against, alike for every model.

A model is a bundled model id (`nsccn.vectors.embed.BUNDLED_MODELS`) or a path to an ONNX file of
MiniLM's shape (what `train_embedder.py export` writes), run through the bundled tokenizer.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE.parent))
from nsccn.vectors.embed import BUNDLED_MODELS, _BundledOnnx, embedding_text, register_onnx_model  # noqa: E402
from nsccn.languages.python import PythonExtractor  # noqa: E402
from nsccn.vectors import static_embed  # noqa: E402
from nsccn.vectors.static_embed import STATIC_MAX_CHARS, STATIC_MODEL, STATIC_MODEL_FILE, StaticModel  # noqa: E402
from nsccn.reading.testpaths import is_test_path  # noqa: E402
from nsccn.vectors.semantic import FileContext, file_keys, staged  # noqa: E402

KEYS = ("file@1", "file@5", "function@5", "function@10")
KINDS = ("func", "method", "class")


class Blobs:
    """`git cat-file --batch` on a bare mirror: the bytes of PATH at COMMIT, None when absent."""

    def __init__(self, gitdir: Path):
        self.gitdir = gitdir
        self.proc = subprocess.Popen(["git", "--git-dir", str(gitdir), "cat-file", "--batch"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def read(self, commit: str, path: str) -> bytes | None:
        self.proc.stdin.write(f"{commit}:{path}\n".encode())
        self.proc.stdin.flush()
        head = self.proc.stdout.readline().split()
        if len(head) < 3 or head[1] != b"blob":
            return None
        data = self.proc.stdout.read(int(head[2]))
        self.proc.stdout.read(1)
        return data

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def entity_parts(path: str, data: bytes) -> dict[str, tuple[str, str, str, str, str]]:
    """`path:qualname` -> (qualname, signature, docstring, body head, path), for the functions,
    methods and classes of a Python file ({} when it does not parse)."""
    try:
        entities = PythonExtractor(path, data).extract().entities
    except (SyntaxError, ValueError, RecursionError):
        return {}
    return {f"{path}:{e.qualname}": (e.qualname, e.signature, e.docstring, e.body_head, path)
            for e in entities if e.kind in KINDS}


def text_of(parts: tuple[str, str, str, str, str], max_chars: int) -> str:
    qualname, signature, docstring, body_head, path = parts
    return embedding_text(qualname, signature, docstring, body_head, path=path, max_chars=max_chars)


def entity_texts(path: str, data: bytes, max_chars: int = 750) -> dict[str, str]:
    """`path:qualname` -> the text the index embeds (for a model reading `max_chars` characters),
    for the functions, methods and classes of a Python file ({} when it does not parse)."""
    return {i: text_of(p, max_chars) for i, p in entity_parts(path, data).items()}


def mirror_of(mirrors: Path, repo: str) -> Path:
    return mirrors / repo.replace("/", "+") / "repo"


def newest_commit(gitdir: Path, commits: set[str]) -> str:
    dates = {c: int(subprocess.check_output(["git", "--git-dir", str(gitdir), "log", "-1", "--format=%ct", c], text=True))
             for c in commits}
    return max(sorted(dates), key=dates.get)


def corpus(gitdir: Path, commit: str) -> dict[str, tuple[str, str, str, str, str]]:
    """Every non-test Python entity's parts (`entity_parts`) at `commit`."""
    paths = subprocess.check_output(["git", "--git-dir", str(gitdir), "ls-tree", "-r", "--name-only", commit],
                                    text=True).splitlines()
    blobs = Blobs(gitdir)
    parts: dict[str, tuple[str, str, str, str, str]] = {}
    for path in paths:
        if path.endswith(".py") and not is_test_path(path):
            data = blobs.read(commit, path)
            if data is not None:
                parts.update(entity_parts(path, data))
    blobs.close()
    return parts


def load_model(model: str, threads: int):
    """A bundled model by id, the static model (`nsccn/static-code-v2`) or a static model file
    (`.npz`) by path, or an ONNX file of MiniLM's shape by path (the bundled tokenizer). Returns
    (backend with `embed(texts)`, characters of entity text it reads)."""
    if model == STATIC_MODEL or model.endswith(".npz"):
        return StaticModel.load(STATIC_MODEL_FILE if model == STATIC_MODEL else model), STATIC_MAX_CHARS
    onnx = _BundledOnnx(threads, optimize=True, model_id=model if model in BUNDLED_MODELS else register_onnx_model(model))
    return onnx, 750


def scores(ids: list[str], sims: np.ndarray, gold: list[str]) -> dict[str, int]:
    order = np.argsort(-sims, kind="stable")
    ranked = [ids[j] for j in order]
    files = list(dict.fromkeys(i.split(":", 1)[0] for i in ranked))
    gold_files = set(g.split(":", 1)[0] for g in gold)
    out = {f"file@{k}": int(gold_files <= set(files[:k])) for k in (1, 5)}
    for k in (5, 10):
        out[f"function@{k}"] = int(set(gold[:k]) <= set(ranked[:k]))
    return out


def evaluate(records: list[dict], mirrors: Path, models: list[str], threads: int,
             one_stage: bool = False, file_context: bool = True) -> dict[str, dict[str, dict]]:
    """model -> repository (and "all") -> metric -> percentage, with "n". A static model's stream
    is scored as nsccn reads it: its entities with their files' context (`semantic.FileContext`,
    unless not `file_context`), its second stage (`semantic.staged`: the first
    `semantic.RERANK_DEPTH` and the first files read whole);
    `one_stage`: by the entities' own cosines alone."""
    by_repo: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        by_repo[r["repo"]].append(r)
    backends = {m: load_model(m, threads) for m in models}
    hits: dict[str, dict[str, list[dict]]] = {m: defaultdict(list) for m in models}
    for repo, rs in by_repo.items():
        gitdir = mirror_of(mirrors, repo)
        commit = newest_commit(gitdir, {r["base_commit"] for r in rs})
        parts = corpus(gitdir, commit)
        ids = list(parts)
        queries = [r for r in rs if r["gold_functions"] and all(g in parts for g in dict.fromkeys(r["gold_functions"]))]
        for m, (backend, max_chars) in backends.items():
            t0 = time.perf_counter()
            docs = backend.embed([text_of(parts[i], max_chars) for i in ids])
            texts = [r["problem_statement"] for r in queries]
            # A static model weighs a query's tokens with its query weights, as `nsccn` does.
            qs = backend.embed(texts, query=True) if isinstance(backend, StaticModel) else backend.embed(texts)
            # As nsccn reads a static stream: each entity with its file's context, unless asked otherwise.
            paths = [i.split(":", 1)[0] for i in ids]
            context = (FileContext(paths, docs)
                       if isinstance(backend, StaticModel) and not one_stage and file_context and ids else None)
            file_of = context.of if context is not None else file_keys(paths)[0]
            for r, q in zip(queries, qs):
                sims = docs @ q if context is None else context.cosines(docs, q)
                if isinstance(backend, StaticModel) and not one_stage:  # the stream as nsccn reads it
                    cand, staged_scores = staged(sims, file_of, lambda at, q=r["problem_statement"], c=sims: (
                        backend.second_stage(q, [text_of(parts[ids[j]], max_chars) for j in at], c[at],
                                             [ids[j].split(":", 1)[1] for j in at])))
                    sims = sims - 10.0  # below every second-stage score: the rest keep their order after
                    sims[cand] = staged_scores
                hits[m][repo].append(scores(ids, sims, list(dict.fromkeys(r["gold_functions"]))))
            print(f"{repo} @ {commit[:8]}: {len(ids)} entities, {len(queries)}/{len(rs)} queries, {m}: "
                  f"{time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    out: dict[str, dict[str, dict]] = {}
    for m in models:
        rows = {repo: hs for repo, hs in hits[m].items()}
        rows["all"] = [h for hs in hits[m].values() for h in hs]
        out[m] = {repo: {"n": len(hs), **{k: round(100 * sum(h[k] for h in hs) / max(len(hs), 1), 1) for k in KEYS}}
                  for repo, hs in rows.items()}
    return out


def table(result: dict[str, dict[str, dict]]) -> str:
    lines = ["| repository | model | n | " + " | ".join(KEYS) + " |", "|---|---|---|" + "---|" * len(KEYS)]
    repos = list(next(iter(result.values())))
    for repo in repos:
        for m, per in result.items():
            row = per[repo]
            lines.append(f"| {repo} | {m} | {row['n']} | " + " | ".join(f"{row[k]:.1f}" for k in KEYS) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", type=Path, required=True)
    ap.add_argument("--mirrors", type=Path, required=True)
    ap.add_argument("--models", nargs="+", default=[STATIC_MODEL, BUNDLED_MODELS[0]])
    ap.add_argument("--repo", action="append", help="only these repositories (repeatable)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path, help="write the table (and OUT.json the numbers) here")
    ap.add_argument("--one-stage", action="store_true",
                    help="a static model's stream by cosine alone (without its second stage or its files' context)")
    ap.add_argument("--no-file-context", action="store_true",
                    help="a static model's entities by their own vectors, without their files' (`semantic.FILE_CONTEXT`)")
    ap.add_argument("--title-repeat", type=int,
                    help=f"a static model reads a query's first line this many more times (default {static_embed.TITLE_REPEAT})")
    args = ap.parse_args(argv)
    if args.title_repeat is not None:
        static_embed.TITLE_REPEAT = args.title_repeat
    records = [json.loads(line) for line in args.dataset.read_text().splitlines() if line.strip()]
    if args.repo:
        records = [r for r in records if r["repo"] in args.repo]
    if not records:
        ap.error("no records")
    result = evaluate(records, args.mirrors, args.models, args.threads, one_stage=args.one_stage,
                      file_context=not args.no_file_context)
    text = table(result)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
        args.out.with_suffix(".json").write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
