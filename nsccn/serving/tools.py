"""The tools, each declared once: name, typed parameters with their limits, the `Navigator` call,
and the text rendering, for the MCP server (nsccn.serving.mcp_server) and the command line (nsccn.cli),
which are both built from `TOOLS`.

A tool is a class (as circus's commands are): `params` are its parameters, declared in
nsccn.serving.params (type, description, default, limits, the command line's spelling): the MCP
input schema and the command's options are made from them, and both fronts check a call against
them before it runs (as the Navigator checks its own calls), so a bad value gets the same message
naming the valid range through either; `cli` are the command's own arguments besides them (how it
reads or prints); `answer(ctx, req)` is the MCP answer (text for the model, the same data
structured), `run(nav, args)` the command's call and printout; both read the Navigator's typed
answers (nsccn.serving.answers) by attribute, and the command line makes the answer it returns
plain data for `--json`. A bad argument raises `ArgumentError`; a tool that cannot answer,
`NavigatorError` (no index: `NoIndex`).
"""

from __future__ import annotations

import json
import os
import posixpath
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Protocol

from nsccn import __version__
from nsccn.errors import ArgumentError, NavigatorError, said
from nsccn.serving.answers import plain
from nsccn.serving.escape import block, one_line
from nsccn.serving.render import echo, fit, note_lines, render_json, short
from nsccn.tokens import count_tokens, truncate_to_tokens
from nsccn.serving import params as P
from nsccn.serving.params import CAP, MIN_CONTEXT_TOKENS, MIN_MAP_TOKENS, REQUIRED, Param  # noqa: F401
from nsccn.vocab import KINDS as ENTITY_KINDS

if TYPE_CHECKING:  # the query stack: loaded by the commands that query, not to build the parser
    from nsccn.serving.answers import ImpactAnswer, LocalizeAnswer, SearchAnswer, TraceAnswer
    from nsccn.serving.navigator import Navigator



def vectors_of(res: SearchAnswer | LocalizeAnswer) -> dict:
    """Which model's vectors answered (`vectors`), or why none did (`vectors_note`)."""
    out = {"vectors": res.vectors}
    if res.vectors_note:
        out["vectors_note"] = res.vectors_note
    return out


def print_vectors(out: SearchAnswer | LocalizeAnswer) -> None:
    print(f"# vectors: {out.vectors}" if out.vectors else f"# note: {out.vectors_note}", file=sys.stderr)

class AnswerContext(Protocol):
    """What an MCP answer is made with (the server's NavigatorService): the navigator of this call,
    the repository, the token cap, and the notes every answer carries."""

    nav: Navigator
    root: Path
    cap: int

    def notes(self, out: dict, files=None, whole_index: bool = False, answer=None,
              vectors: bool = False) -> dict: ...

    def pipeline_status(self, fresh: bool = False) -> dict | None: ...

    def partial_note(self, vectors: bool = True) -> str | None: ...
MAX_EDGE_LINES = 5  # line numbers listed per trace edge; `sites` counts them all


# -- command-line-only arguments --------------------------------------------------------------------


@dataclass(frozen=True)
class Arg:
    """A command-line argument that is no tool parameter (how the command reads or prints: a
    report's file, --tokens, --syntax-errors): argparse's flags (none: positional) and keywords.
    The tools' parameters are `Param`s (nsccn.serving.params), on both fronts."""

    flags: tuple[str, ...]
    dest: str | None = None
    kw: dict = field(default_factory=dict)

    def add_to(self, parser) -> None:
        kw = dict(self.kw)
        if self.flags:
            if self.dest:
                kw["dest"] = self.dest
            parser.add_argument(*self.flags, **kw)
        else:
            parser.add_argument(self.dest, **kw)


def option(*flags: str, **kw) -> Arg:
    return Arg(flags, None, kw)


def positive_int(text: str) -> int:
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {value}")
    return value


# -- the tool ----------------------------------------------------------------------------------------


class Tool:
    name: str = ""  # the MCP tool (empty: the command line's only)
    description: str = ""
    params: tuple[Param, ...] = ()  # both fronts' (a `Param` says when it is one front's only)
    command: str = ""  # the command-line command (empty: MCP only)
    help: str = ""
    cli: tuple[Arg, ...] = ()  # the command line's own arguments, besides the parameters
    embeds_query = False  # the command embeds its query (with the running pipeline's embedder, when one runs)

    @property
    def mcp_params(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.mcp)

    @property
    def cli_params(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.cli is not None)

    def request(self, arguments: dict, cap: int) -> SimpleNamespace:
        """The MCP arguments, checked against the parameters' limits in their order."""
        req = SimpleNamespace(**arguments)
        for p in self.mcp_params:
            p.validate(getattr(req, p.name), cap)
        return req

    def add_cli(self, parser) -> None:
        """The command's arguments: its parameters, then its own."""
        for p in self.cli_params:
            p.add_to(parser)
        for arg in self.cli:
            arg.add_to(parser)

    def cli_request(self, args, cap: int) -> None:
        """The command line's arguments as their parameters' types (defaults filled in), checked
        against the same limits as an MCP call, in their order: the same message for a bad value."""
        for p in self.cli_params:
            setattr(args, p.name, p.from_cli(getattr(args, p.name), cap))
        for p in self.cli_params:
            p.validate(getattr(args, p.name), cap)

    def answer(self, ctx: AnswerContext, req) -> tuple[str, dict]:
        """The MCP answer: (text for the model, the same data structured)."""
        raise NotImplementedError

    def run(self, nav: Navigator, args) -> dict:
        """The command: the Navigator call, printed unless --json (the caller prints the JSON)."""
        raise NotImplementedError


# -- the tools ----------------------------------------------------------------------------------------


class Search(Tool):
    name, command = "search_and_rank", "search"
    description = (
        "Locate: find the entities (functions, methods, classes) a task or bug report is about, best first, "
        "by hybrid ranking (lexical BM25 + identifier/path/traceback analysis + vectors when available + call graph). "
        "Use it first when you know what you want but not where it is; then trace_causal_path or open_surgical_window on an id. "
        "A result's score is the estimated probability (0-1) that it is what you are looking for."
    )
    params = P.SEARCH
    help = "ranked entities for a query"
    embeds_query = True

    def answer(self, ctx, req):
        cap = ctx.cap
        res = ctx.nav.search(req.query, limit=req.limit, offset=req.offset, kinds=req.kinds or None,
                             diversity=req.diversity)
        rows = [{"id": r.id, "score": round(r.score, 4), "sig": short(r.signature), "file": r.file,
                 "line": r.line, "kind": r.kind} for r in res.results]
        base = {"query": echo(req.query), "signals": res.signals, **vectors_of(res)}
        if res.query_capped:  # what the caps on query analysis left out
            base["query_capped"] = res.query_capped

        def build(k: int) -> dict:
            out = {**base, "results": rows[:k]}
            if k < len(rows):
                out["truncated"] = (f"cut to {k} of {len(rows)} results by the {cap}-token cap; "
                                    f"call again with offset={req.offset + k} for the rest")
            elif res.more:
                out["more"] = res.more
            return out

        ctx.notes(base, [r.file for r in res.results], vectors=True)
        if not rows:
            base["hint"] = "nothing matched: try other words, a bare identifier, or repo_map to see what exists"
        k, text = fit(len(rows), lambda k: render_json(build(k)), cap)
        return text, build(k)

    def run(self, nav, args):
        out = nav.search(args.query, limit=args.limit, offset=args.offset, kinds=args.kinds, diversity=args.diversity)
        out.stale = nav.stale_note(r.file for r in out.results)  # in the answer itself, not only on stderr
        if not args.json:
            for i, r in enumerate(out.results, start=args.offset + 1):
                print(f"{i:>3}. {r.score:.4f}  {one_line(r.id)}  ({one_line(r.file)}:{r.line})")
                print(f"       {one_line(r.signature)}")
            if not out.results:
                print("no results")
            if out.more:  # the command line's own words, not the MCP parameter's
                print(f"  ... more results: run again with --offset {args.offset + args.limit}")
            if out.query_capped:
                print(f"# note: {out.query_capped}", file=sys.stderr)
            print_notes(out.stale)
            print(f"# ranking: {out.ranking}", file=sys.stderr)
            print_vectors(out)
        return out


class Localize(Tool):
    name, command = "localize_issue", "localize"
    description = (
        "Localize a bug: paste an issue, bug report, traceback or task; get the files and the functions its fix most "
        "likely touches, best first (the ranking measured by NSCCN's localization benchmark: tests and docs demoted, "
        "hits rolled up to files and outermost functions). Then read_skeleton the files, open_surgical_window the functions. "
        "A function's score is the estimated probability (0-1) that the fix changes it; files are ordered without a score."
    )
    params = P.LOCALIZE
    help = "files and functions a bug report's fix most likely touches"
    cli = (option("--file", help="read the report from this file"),)
    embeds_query = True

    def answer(self, ctx, req):
        cap = ctx.cap
        res = ctx.nav.localize(req.report, limit=req.limit)  # checks report and limit
        functions = [{"id": r.id, **({"score": r.score} if r.score is not None else {}), "sig": short(r.signature),
                      "file": r.file, "line": r.line} for r in res.functions]
        base = {"report": echo(req.report), "signals": res.signals, **vectors_of(res)}
        if res.query_capped:
            base["query_capped"] = res.query_capped

        def build(k: int) -> dict:
            out = {**base, "files": res.files[:k], "functions": functions[:k]}
            if k < max(len(functions), len(res.files)):
                out["truncated"] = (f"cut to the first {k} files and functions by the {cap}-token cap; "
                                    "the rest rank lower (search_and_rank pages through entities)")
            return out

        ctx.notes(base, res.files, vectors=True)
        if not res.files:
            base["hint"] = "nothing matched: try other words, a bare identifier, or repo_map to see what exists"
        k, text = fit(max(len(functions), len(res.files)), lambda k: render_json(build(k)), cap)
        return text, build(k)

    def cli_request(self, args, cap):
        args.report = _report_text(args)  # the argument, --file, or standard input
        super().cli_request(args, cap)

    def run(self, nav, args):
        out = nav.localize(args.report, limit=args.limit)
        if not args.json:
            print("files, most likely to change first:")
            for i, path in enumerate(out.files, start=1):
                print(f"{i:>3}. {one_line(path)}")
            scored = any(r.score is not None for r in out.functions)
            print("functions, each with the probability that the fix changes it:" if scored else "functions:")
            for i, r in enumerate(out.functions, start=1):
                score = f"{r.score:.4f}  " if r.score is not None else ""  # none from the fusion
                print(f"{i:>3}. {score}{one_line(r.id)}  ({one_line(r.file)}:{r.line})")
            if not out.files:
                print("nothing matched: try other words, or `nsccn map` to see what exists")
            print(f"# ranking: {out.ranking}", file=sys.stderr)
            print_vectors(out)
            if out.query_capped:
                print(f"# note: {out.query_capped}", file=sys.stderr)
        return out


class Skeleton(Tool):
    name, command = "read_skeleton", "skeleton"
    description = (
        "Orient: a file's skeleton (imports, signatures, type hints, docstrings; bodies elided as ...) with its token "
        "count, typically 70-90% smaller than the file. Use it instead of reading a whole file to see what it defines; "
        "then open_surgical_window on the entity you need."
    )
    params = P.SKELETON
    help = "a file's signatures and docstrings, bodies elided"
    cli = (
        option("--tokens", action="store_true", help="also count the skeleton's and the file's tokens "
               "(o200k_base; loading the tokenizer takes about a second)"),
    )

    def answer(self, ctx, req):
        cap, offset = ctx.cap, req.offset
        res = ctx.nav.skeleton(norm_path(ctx.root, req.file_path))
        lines = res.skeleton.splitlines(keepends=True)
        if offset and offset >= len(lines):
            raise ArgumentError(f"offset must be below {len(lines)} (the skeleton's line count), not {offset}")
        body_lines = lines[offset:]
        rel = res.file
        shown = one_line(rel)
        head = (f"# {shown}: skeleton {res.tokens} tokens, the file {res.source_tokens} tokens "
                f"({res.reduction:.0%} smaller); entity ids: <kind>:{shown}:<Qualified.name>\n")
        base = {"file": rel, "tokens": res.tokens, "source_tokens": res.source_tokens, "reduction": res.reduction}
        if res.stale:
            base["stale"] = res.stale
        ctx.notes(base)

        def build(k: int) -> tuple[str, dict]:
            out = {**base, "skeleton": "".join(body_lines[:k])}
            if offset:
                out["offset"] = offset
            text = head + (f"# (from skeleton line {offset})\n" if offset else "") + block(out["skeleton"])
            if k < len(body_lines):
                out["truncated"] = (f"cut at skeleton line {offset + k} of {len(lines)} by the {cap}-token cap; call "
                                    f"read_skeleton(file_path={rel!r}, offset={offset + k}) for the rest")
                text += ("" if text.endswith("\n") else "\n") + f"# ... {out['truncated']}\n"
            text += note_lines(out)
            return text, out

        k, text = fit(len(body_lines), lambda k: build(k)[0], cap)
        return text, build(k)[1]

    def run(self, nav, args):
        out = nav.skeleton(from_here(nav, args, args.file_path), tokens=args.tokens)
        if not args.json:
            print(block(out.skeleton), end="")
            if args.tokens:
                print(f"# {out.tokens} tokens (source {out.source_tokens}, {out.reduction:.0%} smaller)",
                      file=sys.stderr)
            print_notes(out.stale)
        return out


class Trace(Tool):
    name, command = "trace_causal_path", "trace"
    description = (
        "Trace: follow the causal graph from an entity: downstream (what it calls), upstream (who calls it), "
        "state (what it mutates / which config it reads) or all, up to depth hops. Returns an adjacency list with each "
        "edge's relation, confidence (1.0 certain, lower = guessed) and how it was resolved, plus each entity's signature. "
        "Use it after search_and_rank to find the cause or impact of a change; ids starting ext:/var:/attr:/env:/config: "
        "are external symbols, variables, attributes and settings, not repository entities."
    )
    params = P.TRACE
    help = "causal path from an entity"

    def answer(self, ctx, req):
        cap = ctx.cap
        res = ctx.nav.trace(req.entity_id, req.direction, req.depth, req.relations or None, float(req.min_confidence))
        order = list(res.entities)  # breadth-first: nearest hops first
        ents = {}
        for eid, meta in res.entities.items():
            if meta.signature is not None:  # kind and file are in the id
                ents[eid] = {"line": meta.line, "end_line": meta.end_line, "signature": short(meta.signature),
                             "hops": meta.hops}
            else:
                ents[eid] = {"kind": meta.kind, "hops": meta.hops}
        adjacency = {}
        for src, items in res.adjacency_list.items():
            adjacency[src] = []
            for it in items:
                it = plain(it)
                if len(it["lines"]) > MAX_EDGE_LINES:  # the same call at many lines
                    it["sites"] = len(it["lines"])
                    it["lines"] = it["lines"][:MAX_EDGE_LINES]
                adjacency[src].append(it)
        files = [e.split(":", 2)[1] for e in order if e.split(":", 1)[0] in ENTITY_KINDS and e.count(":") >= 2]
        base = {"root": res.root, "direction": res.direction, "depth": res.depth, "relations": res.relations}
        ctx.notes(base, files, answer=res)
        n_edges = sum(len(v) for v in adjacency.values())

        def build(k: int) -> dict:
            keep = set(order[:k])
            adj = {}
            for src, items in adjacency.items():
                if src not in keep:
                    continue
                kept = [it for it in items if (it.get("target") or it.get("source")) in keep]
                if kept:
                    adj[src] = kept
            out = {**base, "adjacency_list": adj, "entities": {e: ents[e] for e in order[:k]},
                   "nodes": len(order), "edges": n_edges}
            notes = []
            if res.truncated:
                notes.append(f"the traversal stopped at {len(order)} nodes")
            if k < len(order):
                notes.append(f"cut to the {k} nearest of {len(order)} nodes by the {cap}-token cap")
            if notes:
                out["truncated"] = ("; ".join(notes) + "; narrow with a smaller depth, relations=[...], "
                                    "min_confidence=0.9, or trace again from a node at the edge")
            return out

        k, text = fit(len(order), lambda k: render_json(build(k)), cap)
        return text, build(k)

    def run(self, nav, args):
        out = nav.trace(args.entity_id, args.direction, args.depth, args.relations or None, args.min_confidence)
        if not args.json:
            _print_tree(out)
            print_notes(out.stale, out.unresolved)
        return out


class Window(Tool):
    name, command = "open_surgical_window", "window"
    description = (
        "Examine: the exact numbered source lines of one entity (plus context_lines around it), straight from disk. "
        "Use it last, when you know which entity you need to read or edit, instead of reading the whole file."
    )
    params = P.WINDOW
    help = "an entity's exact lines, numbered"

    def answer(self, ctx, req):
        cap = ctx.cap
        res = ctx.nav.window(req.entity_id, req.context_lines)
        lo, hi = res.shown
        code_lines = res.code.splitlines(keepends=True)
        if req.from_line is not None:
            replace(P.named(self.params, "from_line"), lo=lo, hi=hi, check=True).validate(req.from_line, cap)
            code_lines = code_lines[req.from_line - lo:]
            lo = req.from_line
        base = {"entity_id": res.entity_id, "file": res.file, "start": res.start, "end": res.end}
        if res.stale:
            base["stale"] = res.stale
        ctx.notes(base)

        def build(k: int) -> tuple[str, dict]:
            out = {**base, "shown": [lo, lo + k - 1] if k else [lo, lo - 1], "code": "".join(code_lines[:k])}
            head = (f"# {one_line(res.entity_id)}  {one_line(res.file)}:{res.start}-{res.end}"
                    f"  (showing lines {lo}-{lo + k - 1})\n")
            text = head + block(out["code"])
            if k < len(code_lines):
                nxt = lo + k
                children = [e for e in ctx.nav.store.entities_in_file(res.file) if e.parent == res.entity_id][:8]
                hint = f"call open_surgical_window(entity_id={res.entity_id!r}, from_line={nxt}) for the rest"
                if children:
                    hint += " or open a smaller entity inside: " + ", ".join(c.id for c in children)
                out["truncated"] = f"cut at line {nxt - 1} of {hi} by the {cap}-token cap; {hint}"
                text += f"# ... {out['truncated']}\n"
            text += note_lines(out)
            return text, out

        k, text = fit(len(code_lines), lambda k: build(k)[0], cap)
        return text, build(k)[1]

    def run(self, nav, args):
        out = nav.window(args.entity_id, args.context_lines)
        if not args.json:
            print(f"# {one_line(out.entity_id)}  {one_line(out.file)}:{out.start}-{out.end}")
            print(block(out.code), end="")
            print_notes(out.stale)
        return out


class RepoMap(Tool):
    name, command = "repo_map", "map"
    description = (
        "Map: the repository's most important files and definitions (signatures), ranked by PageRank over the "
        "reference graph and cut to max_tokens; pass focus (entity ids or file paths) to centre it on a region. "
        "Use it first in an unfamiliar repository, or to see what surrounds the code you found."
    )
    params = P.REPO_MAP
    help = "ranked repository map within a token budget"

    def request(self, arguments, cap):
        req = super().request(arguments, cap)
        if req.focus is not None and not all(isinstance(f, str) and f.strip() for f in req.focus):
            raise ArgumentError("focus must be a list of entity ids or file paths")
        return req

    def answer(self, ctx, req):
        cap, max_tokens, focus = ctx.cap, req.max_tokens, req.focus
        res = ctx.nav.repo_map(max_tokens - 40 if max_tokens > 2 * MIN_MAP_TOKENS else max_tokens,
                               [f.strip() for f in focus] if focus else None)
        out = {"tokens": res.tokens, "files_shown": res.files_shown, "files_total": res.files_total,
               "truncated": res.truncated}
        if res.hint:
            out["hint"] = res.hint
        ctx.notes(out, whole_index=True, answer=res)
        text = (f"# repository map: {res.files_shown} of {res.files_total} files, {res.tokens} tokens"
                + (f"; {res.hint}" if res.hint else "") + "\n" + block(res.map))
        text += note_lines(out)
        out["map"] = res.map
        text, cut = truncate_to_tokens(text, cap)
        if cut:
            out["truncated"] = True
        return text, out

    def run(self, nav, args):
        focus = [from_here(nav, args, f) for f in args.focus] if args.focus else None  # as typed in a subdirectory
        out = nav.repo_map(args.max_tokens, focus)
        if not args.json:
            print(block(out.map), end="")  # (its names and signatures are one line each already)
            print(f"# {out.tokens} tokens, {out.files_shown} of {out.files_total} files", file=sys.stderr)
            print_notes(out.unresolved)
        return out


class Symbol(Tool):
    name, command = "find_symbol", "symbol"
    description = (
        "Look up where a name is defined: bare (save), qualified (User.save) or dotted module path "
        "(pkg.models.User); suggests close names when nothing matches. Use it when you already know the name."
    )
    params = P.SYMBOL
    help = "where a name is defined"

    def answer(self, ctx, req):
        cap = ctx.cap
        res = ctx.nav.find_symbol(req.name, limit=req.limit)
        defs = [{**plain(d), "signature": short(d.signature)} for d in res.definitions]
        base = {"name": res.name, "total": res.total}
        ctx.notes(base, [d.file for d in res.definitions])

        def build(k: int) -> dict:
            out = {**base, "definitions": defs[:k]}
            if k < res.total:
                out["more"] = (f"showing {k} of {res.total}; qualify the name (Class.method, pkg.module.name) "
                               + ("or raise limit" if k == len(defs) else f"(cut by the {cap}-token cap)"))
            return out

        k, text = fit(len(defs), lambda k: render_json(build(k)), cap)
        return text, build(k)

    def run(self, nav, args):
        out = nav.find_symbol(args.name, limit=args.limit)
        if not args.json:
            for d in out.definitions:
                print(f"{one_line(d.id)}  ({one_line(d.file)}:{d.line})\n    {one_line(d.signature)}")
        return out


class References(Tool):
    name, command = "find_references", "refs"
    description = (
        "Every place that uses an entity: call sites, imports, subclasses, raises (file:line, the using entity, "
        "the edge's confidence and how it was resolved). Use it before changing a signature or behaviour."
    )
    params = P.REFERENCES
    help = "every call/import/inheritance site of an entity"

    def answer(self, ctx, req):
        cap, offset = ctx.cap, req.offset
        res = ctx.nav.find_references(req.entity_id, limit=req.limit, offset=offset)
        refs = [plain(r) for r in res.references]
        base = {"entity_id": res.entity_id, "total": res.total, "offset": offset}
        ctx.notes(base, [r.file for r in res.references] + [res.entity_id.split(":", 2)[1]], answer=res)

        def build(k: int) -> dict:
            out = {**base, "references": refs[:k]}
            if offset + k < res.total:
                why = "" if k == len(refs) else f" (cut by the {cap}-token cap)"
                out["more"] = f"{res.total - offset - k} more{why}; call again with offset={offset + k}"
            return out

        k, text = fit(len(refs), lambda k: render_json(build(k)), cap)
        return text, build(k)

    def run(self, nav, args):
        out = nav.find_references(args.entity_id, limit=args.limit, offset=args.offset)
        if not args.json:
            for r in out.references:
                print(f"{one_line(r.file)}:{r.line}  {r.relation}  from {one_line(r.from_)}  "
                      f"({r.resolution}, {r.confidence})")
            if not out.references:
                print("no references")
            if out.more:  # the command line's own words, not the MCP parameter's
                left = out.total - args.offset - len(out.references)
                print(f"  ... {left} more: run again with --offset {args.offset + args.limit}")
            print_notes(out.unresolved)
        return out


class Impact(Tool):
    name, command = "detect_changes", "impact"
    description = (
        "Before you stop editing: what a change touches (changed entities, signature vs body), what depends on it "
        "(callers, subclasses and overriders, importers, readers of state it mutates: distance, path, confidence) "
        "and which tests reach it, with a command to run them, plus a short risk summary. The change: the working "
        "tree against HEAD (default), staged=true, base=<branch point, e.g. main>, commit=<rev>, or diff=<unified diff>. "
        "Where the suite ran with per-test coverage (.coverage from pytest --cov-context=test), the tests that ran the "
        "changed functions then (covered_tests), the graph only for what changed since."
    )
    params = P.IMPACT
    help = "what a change touches, what depends on it, and which tests to run"
    cli = (
        option("--diff", dest="diff_file", metavar="FILE", help="a unified diff to analyze: a file, or - for standard input"),
        option("--limit", type=positive_int, default=30, help="impacted entities and tests printed (--json: all)"),
    )

    def answer(self, ctx, req):
        cap, offset = ctx.cap, req.offset
        res = ctx.nav.impact(staged=req.staged, base=req.base, commit=req.commit, diff=req.diff, depth=req.depth,
                             min_confidence=float(req.min_confidence), wide=bool(req.wide), coverage=req.coverage)
        # each impacted entity names the one it depends on (`via`): the whole path is in `tests`' reasons
        impacted = [{k: v for k, v in plain(i).items() if k not in ("path", "file")} for i in res.impacted[offset:]]
        tests = plain(res.tests[offset:])
        covered = [{k: v for k, v in t.items() if k != "reason"} for t in plain(res.covered_tests[offset:])]
        module_tests = [{k: v for k, v in t.items() if k != "reason"} for t in plain(res.module_tests[offset:])]
        test_files = [{"file": t.file, "why": t.reason} for t in res.test_files[offset:]]
        changed = plain(res.changed)
        base = {"source": res.source, "files": plain(res.files), "risk": plain(res.risk), "run": res.run}
        if res.suites:
            base["suites"] = plain(res.suites)
        if res.coverage is not None:
            base["coverage"] = plain(res.coverage)
            base["covered_tests_are"] = (f"tests that ran the changed lines (where the function is as it ran) or function when "
                                         f"the suite last ran with per-test "
                                         f"coverage ({res.coverage.file}); `tests` then holds only what the graph adds: "
                                         "tests reaching the change through code new or changed since")
        if any(s.whole for s in res.suites):
            from nsccn.graph.impact import WHOLE_SUITE_CONFIDENCE, WHOLE_SUITE_SHARE

            base["suites_are"] = (f"`run` runs a runner's whole suite (whole: true) when the answer reaches "
                                  f"{WHOLE_SUITE_SHARE:.0%} of its tests or more: what it would leave out mostly "
                                  "reaches the change through paths no edge shows; min_confidence above "
                                  f"{WHOLE_SUITE_CONFIDENCE:g} keeps the selection")
        for key, listed in (("outside_index", res.outside_index), ("refused", res.refused), ("notes", res.notes)):
            if listed:
                base[key] = plain(listed)
        ctx.notes(base, answer=res)
        if res.stale:
            base["stale"] = res.stale
        n = max(len(changed), len(impacted), len(tests), len(covered), len(module_tests), len(test_files))
        if res.module_tests:
            base["module_tests_are"] = ("tests no edge reaches, in test files that import a changed module or one that "
                                        "loads it by name" + ("" if res.wide else ", listed since the graph reaches no test "
                                        "from the change (wide=true: always)") + ": `run` includes them; min_confidence "
                                        f"above {res.module_tests[0].confidence:g} drops them")
        if res.test_files:
            base["test_files_are"] = ("test files `run` runs whole: the answer reaches a tenth of their tests or more; "
                                      f"min_confidence above {res.test_files[0].confidence:g} drops them")

        def build(k: int) -> dict:
            out = {**base, "changed": changed[:k], "impacted": impacted[:k], "tests": tests[:k],
                   "totals": {"changed": len(changed), "impacted": len(res.impacted), "tests": len(res.tests),
                              "module_tests": len(res.module_tests), "test_files": len(res.test_files)}}
            if res.coverage is not None:
                out["covered_tests"] = covered[:k]
                out["totals"]["covered_tests"] = len(res.covered_tests)
            if module_tests:
                out["module_tests"] = module_tests[:k]
            if test_files:
                out["test_files"] = test_files[:k]  # run whole by `run`
            if k < n:
                more = (f"call again with offset={offset + k} for more impacted entities and tests" if k else
                        "the summary alone fills it")
                out["truncated"] = (f"cut to {k} changed, impacted and tests each by the {cap}-token cap; {more}, "
                                    "or raise min_confidence / lower depth")
            return out

        k, text = fit(n, lambda k: render_json(build(k)), cap)
        return text, build(k)

    def run(self, nav, args):
        diff = _diff_text(args.diff_file) if args.diff_file is not None else None
        out = nav.impact(staged=args.staged, base=args.base, commit=args.commit, diff=diff, depth=args.depth,
                         min_confidence=args.min_confidence, test_depth=args.test_depth, wide=args.wide,
                         coverage=None if args.coverage is None else _cli_path(args.coverage))
        if not args.json:
            _print_impact(out, args.limit)
        return out


class Context(Tool):
    name, command = "assemble_context", "context"
    description = (
        "One shot: a token-budgeted context for a task: the best-matching entities' code, their callers' and callees' "
        "signatures, and a focused slice of the repository map, never over max_tokens. Use it when you want one "
        "answer to start from instead of several navigation calls."
    )
    params = P.CONTEXT
    help = "token-budgeted context for a task"
    embeds_query = True

    def answer(self, ctx, req):
        query, max_tokens = req.query, req.max_tokens
        head = f"# context for: {echo(query, 160)}\n# @TOKENS@ of {max_tokens} tokens\n"
        # room for the header and a stale/partial note, so the context itself is never cut
        budget = max(MIN_CONTEXT_TOKENS, max_tokens - count_tokens(head) - (80 if max_tokens > 400 else 8))
        res = ctx.nav.assemble_context(query, budget)
        out = {"query": echo(query), "tokens": res.tokens, "max_tokens": max_tokens, "entities": res.entities}
        ctx.notes(out, [e.split(":", 2)[1] for e in res.entities], answer=res, vectors=True)
        text = (head.replace("@TOKENS@", str(res.tokens), 1) + block(res.context)
                + ("" if res.context.endswith("\n") else "\n"))
        text += note_lines(out)
        out["context"] = res.context
        text, cut = truncate_to_tokens(text, max_tokens)
        if cut:
            out["truncated"] = True
        return text, out

    def run(self, nav, args):
        out = nav.assemble_context(args.query, args.max_tokens)
        if not args.json:
            print(block(out.context))
            print(f"# {out.tokens} of {out.max_tokens} tokens", file=sys.stderr)
            print_notes(out.unresolved)
        return out


class Status(Tool):
    name, command = "index_status", "status"
    description = (
        "What the index holds and how fresh it is: files, entities, edges by relation, vectors done/pending, last "
        "update, files changed on disk but not yet re-indexed, and the pipeline's actor health when served by `nsccn serve`. "
        "Use it when answers look incomplete or stale."
    )
    help = "what the index holds and how fresh it is"
    cli = (option("--syntax-errors", action="store_true", help="list every file whose parse found syntax errors"),)

    def answer(self, ctx, req):
        cap = ctx.cap
        out = ctx.nav.status()
        live = ctx.pipeline_status(fresh=True)
        if live is not None:
            out["pipeline"] = live
        partial = ctx.partial_note()
        if partial:
            out["partial"] = partial
        full = (live or {}).get("disk_full") or ctx.nav.disk_note()
        if full:
            out["disk_full"] = full
        out["server"] = {"nsccn": __version__, "result_token_cap": cap, "query_embedding": ctx.nav.embedder is not None}
        if not out.get("indexed"):
            out["hint"] = f"no index yet: run `nsccn index {ctx.root}` (or `nsccn serve`)"
        text, cut = truncate_to_tokens(render_json(out, max_depth=3), cap)  # one line per actor
        return text, out

    def run(self, nav, args):
        """`args.pipeline_status(nav)`: the live pipeline's status, from the command line's entry
        (which knows the pipeline), or None."""
        out = nav.status()
        if not out.get("indexed"):
            args.exit_code = EXIT_NO_INDEX  # printed all the same: where the index would be, and why not
        live_status = getattr(args, "pipeline_status", None)
        live = live_status(nav) if live_status else None
        if live is not None:
            out["pipeline"] = live
        if getattr(args, "syntax_errors", False) and out.get("indexed"):
            out = {"files_with_syntax_errors": nav.syntax_errors()}
            if not args.json:
                print("\n".join(map(one_line, out["files_with_syntax_errors"])) or "no file with syntax errors")
            return out
        if not args.json:
            for k, v in out.items():
                if k == "configuration" and "settings" in v:
                    print("configuration:")
                    for name, item in v["settings"].items():
                        print(f"  {name} = {json.dumps(item['value'])}  ({item['from']})")
                    for line in v["refused"]:
                        print(f"  refused: {one_line(line)}")
                    continue
                if k == "syntax_errors":
                    shown, n = len(v), out.get("files_with_syntax_errors", len(v))
                    print(f"syntax_errors: ({shown} of {n}; `nsccn status --syntax-errors` lists all)")
                    for line in v:
                        print(f"  {one_line(line)}")
                    continue
                _print_field(k, v)
            clients = ((out.get("pipeline") or {}).get("clients") or {})
            if "attached" in clients:
                who = ", ".join(f"pid {c['pid']} since {c['since']}" for c in clients["attached"])
                left = f"; stops in {clients['stops_in_s']:g} s with none" if "stops_in_s" in clients else ""
                print(f"clients: {len(clients['attached'])} attached" + (f" ({who})" if who else "") + left)
        return out


def _print_field(key: str, value, indent: int = 0) -> None:
    """One field of an answer as readable lines: a dict as indented `key: value` lines (four
    levels; deeper ones as compact JSON), a list of plain values on one line."""
    pad = "  " * indent
    if isinstance(value, dict) and value and indent < 4:
        print(f"{pad}{key}:")
        for k, v in value.items():
            _print_field(str(k), v, indent + 1)
    elif isinstance(value, list) and all(isinstance(x, (str, int, float, bool)) or x is None for x in value):
        print(f"{pad}{key}: {', '.join(one_line(str(x)) for x in value) if value else '(none)'}")
    elif isinstance(value, (dict, list)):
        print(f"{pad}{key}: {one_line(json.dumps(value, default=str))}")
    else:
        print(f"{pad}{key}: {one_line(value)}")


class TrainRanker(Tool):
    command = "train-ranker"
    help = "adapt the learned ranker to this repository's own fix commits"
    params = P.TRAIN_RANKER
    cli = (
        option("--reset", action="store_true", help="remove the repository's model: back to the shipped one"),
        option("--force", action="store_true",
               help="write the adapted model even when it ranks the held-back fixes no better than the shipped one"),
    )

    def run(self, nav, args):
        def progress(done: int, total: int) -> None:
            if done == total or done % 25 == 0:
                print(f"  featurized {done}/{total} fix commits", file=sys.stderr, flush=True)

        out = nav.train_ranker(commits=args.commits, rounds=args.rounds, reset=args.reset,
                               progress=None if args.json else progress, force=args.force)
        if not args.json:
            if args.reset:
                print(f"removed {out['removed']}" if out["removed"] else "no repository model to remove")
            else:
                m = out["measured"]
                print(f"held back the {m['held_back_fixes']} newest of {out['queries']} fix commits; "
                      f"adapted on the other {m['trained_on']}:")
                for name in ("shipped", "adapted"):
                    print(f"  {name:8} " + "  ".join(f"{k} {v:5.1f}" for k, v in m[name].items()))
                print(f"trained on all {out['queries']} -> {out['model']}" if out["model"] else "kept the model in use")
                print(f"note: {out['note']}")
            print(f"ranking: {out['ranking']}")
        return out


# In the MCP server's listing order; the command line's order is `COMMANDS`.
TOOLS: tuple[Tool, ...] = (Search(), Localize(), Skeleton(), Trace(), Window(), RepoMap(), Symbol(), References(),
                           Impact(), Context(), Status(), TrainRanker())
MCP_TOOLS = tuple(t for t in TOOLS if t.name)
COMMANDS = tuple(next(t for t in TOOLS if t.command == c) for c in (
    "search", "localize", "skeleton", "trace", "window", "symbol", "refs", "impact", "map", "context", "status",
    "train-ranker"))

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_NO_INDEX = 0, 1, 2, 3


# -- the command line's side ------------------------------------------------------------------------------


def print_notes(*notes: str | None) -> None:
    """An answer's notes (`stale`, `unresolved`...) as `# note:` lines on stderr; None: no note."""
    for note in notes:
        if note:
            print(f"# note: {one_line(note)}", file=sys.stderr)


def _print_tree(out: TraceAnswer) -> None:
    ents = out.entities
    print(f"{one_line(out.root)}  [{out.direction}, depth {out.depth}, {', '.join(out.relations)}]")
    seen = {out.root}

    def walk(node: str, indent: int) -> None:
        for item in out.adjacency_list.get(node, []):
            other = item.other
            meta = ents.get(other)
            where = "" if meta is None else f"{one_line(meta.file)}:{meta.line}" if meta.file is not None else meta.kind
            arrow = "->" if item.target is not None else "<-"
            print(f"{'  ' * indent}{arrow} {item.relation} {one_line(other)}  ({where}; {item.resolution}, "
                  f"{item.confidence})")
            if other not in seen:
                seen.add(other)
                walk(other, indent + 1)

    walk(out.root, 1)
    if out.truncated:
        print("  ... truncated: narrow with --relation, --min-confidence or a smaller --depth")


def _report_text(args) -> str:
    """The bug report: the argument, a file (--file), or standard input (`-`, or nothing given)."""
    if args.file:
        try:
            return Path(args.file).read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise NavigatorError(f"cannot read the report file {args.file}: {exc.strerror or exc}") from None
    if args.report not in (None, "-"):
        return args.report
    if args.report is None and sys.stdin.isatty():
        raise NavigatorError("no report: give it as an argument, with --file PATH, or on standard input")
    return sys.stdin.read()


def _cli_path(given: str) -> str:
    """A path the command line names, from where it runs (the Navigator reads it from the root)."""
    return given if given.strip().lower() == "off" else os.path.abspath(given)


def _diff_text(given: str) -> str:
    """The diff of `--diff`: a file, or standard input (`-`), read up to the diff cap."""
    from nsccn.reading.diff import MAX_DIFF_BYTES

    try:
        if given == "-":
            data = sys.stdin.buffer.read(MAX_DIFF_BYTES + 1)
        else:
            with open(given, "rb") as f:
                data = f.read(MAX_DIFF_BYTES + 1)
    except OSError as exc:
        raise NavigatorError(f"cannot read the diff {given}: {exc.strerror or exc}") from None
    return data.decode("utf-8", "replace")


def _print_impact(out: ImpactAnswer, limit: int) -> None:
    files = out.files
    print(f"change: {out.source} ({len(files)} file{'s' * (len(files) != 1)})")
    for f in files[:limit]:
        extra = (f" (from {one_line(f.from_)})" if f.from_ else "") + (" [binary]" if f.binary else "")
        print(f"  {f.status:<9}  {one_line(f.path)}{extra}")
    if len(files) > limit:
        print(f"  ... {len(files) - limit} more files")
    print(f"changed ({len(out.changed)}):")
    for c in out.changed[:limit]:
        where = "" if c.in_index else "  [not in the index]"
        was = f"  (was {one_line(c.was)})" if c.was else ""
        print(f"  {c.change:<9}  {one_line(c.id)}  ({one_line(c.file)}:{c.line}){was}{where}")
    print(f"impacted ({len(out.impacted)}, depth {out.depth}):")
    for i in out.impacted[:limit]:
        print(f"  d{i.distance} {i.confidence:.2f}  {one_line(i.id)}")
        print(f"         {one_line(i.path)}")
    print(f"tests ({len(out.tests)}):")
    for t in out.tests[:limit]:
        name = f"{t.file}::{t.qualname}" if t.qualname else t.file
        print(f"  d{t.distance} {t.confidence:.2f}  {one_line(name)}")
        print(f"         {one_line(t.reason)}")
    if out.coverage is not None:
        cov = out.coverage
        print(f"covered tests ({len(out.covered_tests)}: they ran the changed lines (or function) when the suite ran with coverage, "
              f"{one_line(cov.file)}{f' at {one_line(cov.when)}' if cov.when else ''}; in `run`):")
        for t in out.covered_tests[:limit]:
            print(f"  {one_line(f'{t.file}::{t.qualname}')}")
        print(f"  ({cov.answered} changed function{'s' * (cov.answered != 1)} answered by it; the graph walked from "
              f"{cov.walked} changed entit{'ies' if cov.walked != 1 else 'y'} it cannot answer for and from "
              f"{cov.changed_since} dependent{'s' * (cov.changed_since != 1)} changed since it was recorded"
              + (f"; {cov.unknown_tests} test{'s' * (cov.unknown_tests != 1)} it recorded nothing of: the graph's"
                 if cov.unknown_tests else "") + ")")
        if cov.unmapped:
            print(f"# note: changed since the coverage was recorded, not mapped: {', '.join(map(one_line, cov.unmapped))}",
                  file=sys.stderr)
    if out.module_tests:
        print(f"module tests ({len(out.module_tests)}: no edge reaches them; their files import a changed module or one that "
              "loads it by name; in `run`):")
        for t in out.module_tests[:limit]:
            print(f"  {t.confidence:.2f}  {one_line(f'{t.file}::{t.qualname}' if t.qualname else t.file)}")
    if out.test_files:
        print(f"test files run whole ({len(out.test_files)}: the answer reaches a tenth of their tests or more; in `run`):")
        for t in out.test_files[:limit]:  # the reason's first clause: how many of its tests the answer reaches
            print(f"  {one_line(t.file)}: {one_line(t.reason.split(':', 1)[0])}")
    for key, listed in (("impacted", out.impacted), ("tests", out.tests), ("covered tests", out.covered_tests),
                        ("module tests", out.module_tests),
                        ("test files", out.test_files)):
        if len(listed) > limit:
            print(f"  ... {len(listed) - limit} more {key} (--limit, or --json for all)")
    for s in out.suites:  # how much of each suite `run` takes: past WHOLE_SUITE_SHARE, all of it
        share = f"the answer reaches {s.reached} of its {s.tests} tests ({s.reached / s.tests:.0%})"
        print(f"whole suite ({s.runner}): {share}; `run` runs them all" if s.whole else f"suite ({s.runner}): {share}")
    if out.run:
        print(f"run (from the repository root): {one_line(out.run)}")
    risk = out.risk
    by = ", ".join(f"{n} at {d}" for d, n in risk.impacted_by_distance.items()) or "none"
    print(f"risk: {risk.level}; dependents by distance: {by}")
    for listed, label in ((risk.signature_or_removal, "signature changed or removed"), (risk.untested_changes, "untested")):
        if listed:
            print(f"  {label}: {', '.join(map(one_line, listed))}")
    if out.outside_index:
        print(f"# note: not in the index: {', '.join(map(one_line, out.outside_index))}", file=sys.stderr)
    for r in out.refused or ():
        print(f"# note: refused {one_line(r.path)}: {r.why}", file=sys.stderr)
    for note in out.notes or ():
        print(f"# note: {one_line(note)}", file=sys.stderr)
    print_notes(out.stale, out.unresolved)


def from_here(nav: Navigator, args, path: str) -> str:
    """A file path as the user typed it in a subdirectory (`nsccn skeleton models.py` inside
    src/pkg/): relative to where they are, when it is not a path from the repository root."""
    here = getattr(args, "here", None)
    if not here or not isinstance(path, str) or Path(path).is_absolute():
        return path  # (the Navigator takes an absolute path inside the repository)
    climbs = ".." in Path(path).parts
    if (nav.root / path).exists() and not climbs:
        return path
    return posixpath.normpath((here / path).as_posix()) if climbs or (nav.root / here / path).exists() else path


# -- the MCP side ----------------------------------------------------------------------------------------


def norm_path(root: Path, file_path: str) -> str:
    """Agents often pass absolute paths: accept those inside the repository (and `..` that stays
    inside it), by the rule the command line follows (`nsccn.reading.repofile.repository_path`)."""
    from nsccn.reading.repofile import PathOutsideRepository, repository_path

    if not isinstance(file_path, str) or not file_path.strip():
        raise ArgumentError("file_path is empty: give a path relative to the repository root, e.g. pkg/module.py")
    p = file_path.strip()
    try:
        return repository_path(root, p)
    except PathOutsideRepository:
        raise ArgumentError(f"{said(p)} is outside the repository ({root}); give a path relative to its root") from None


def mcp_signature(tool: Tool, cap: int) -> list[tuple[str, Any, Any]]:
    """(name, annotation, default) of each MCP parameter: the input schema fastmcp (pydantic) makes
    from them. Bounds are advertised in the schema but checked by `Tool.request`."""
    import json as _json
    from typing import Annotated

    from pydantic import BeforeValidator, Field

    def json_array(value: Any) -> Any:
        """A list given as a JSON-encoded string (`'["CALLS"]'`, as the MCP Inspector CLI and some
        other clients send every argument) is that list; one plain string (`"class"`) is a list of
        one, as a number given as a string is that number; anything else is left to validation."""
        if isinstance(value, str) and value.lstrip().startswith("["):
            try:
                return _json.loads(value)
            except ValueError:
                return value  # not JSON after all: validation says it should be a list
        if isinstance(value, str):
            return [value]
        return value

    out = []
    for p in tool.mcp_params:
        description = p.description.replace("{cap}", str(cap))
        if p.is_list():
            item = Annotated[str, Field(json_schema_extra={"enum": list(p.items)})] if p.items else str
            ann = Annotated[list[item] | None, BeforeValidator(json_array), Field(description=description)]
        else:
            extra: dict[str, Any] | None = None
            if p.enum is not None:
                extra = {"enum": list(p.enum)}
            elif p.lo is not None:
                lo, hi = p.bounds(cap)
                extra = {"minimum": lo}
                if hi is not None:
                    extra["maximum"] = hi
            ann = Annotated[p.type, Field(description=description, json_schema_extra=extra)] if extra else \
                Annotated[p.type, Field(description=description)]
        out.append((p.name, ann, p.default_for(cap)))
    return out


def tool_named(name: str) -> Tool:
    return next(t for t in TOOLS if t.name == name or t.command == name)


