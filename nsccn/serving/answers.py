"""The Navigator's answers, typed: what each tool returns before a front end renders it.

Each answer is a `msgspec.Struct` (as the pipeline's messages are, nsccn.messages), so the
renderers read attributes the type declares, and a field read that no answer has fails at once
instead of reading `None` from a misspelt key. The fronts turn an answer into plain data once
(`plain`): the MCP server's structured content and the command line's `--json`.

Field order is the order of the keys in the JSON, and a field that defaults to None is left out
when it is None (`omit_defaults`): a note (`stale`, `unresolved`, `more`...) appears only when it
says something, as it always has. A field that is always present, even when None (`vectors`),
has no default.
"""

from __future__ import annotations

from typing import Any

import msgspec

from nsccn.store import EntityRow


class Answer(msgspec.Struct, kw_only=True, omit_defaults=True, forbid_unknown_fields=True):
    """The base of every answer: keyword fields in JSON order (each subclass says `kw_only`: msgspec
    applies it to a class's own fields), None notes left out."""


# -- entities ----------------------------------------------------------------------------------------


class Entity(Answer, kw_only=True):
    """One entity as an answer lists it: where it is and its signature."""

    id: str
    kind: str
    file: str
    line: int
    end_line: int
    signature: str


def entity(row: EntityRow) -> Entity:
    return Entity(id=row.id, kind=row.kind, file=row.path, line=row.start_line, end_line=row.end_line,
                  signature=row.signature)


class SearchResult(Entity, kw_only=True):
    """A search result: the entity, the probability it is the one sought, and the rank each
    retrieval stream gave it (stream -> 1-based rank)."""

    score: float
    matched_by: dict[str, int]


def search_result(hit) -> SearchResult:
    """A ranked hit (nsccn.query.streams.Hit) as a search answer lists it: its score rounded, as shown."""
    row = hit.entity
    return SearchResult(id=row.id, kind=row.kind, file=row.path, line=row.start_line, end_line=row.end_line,
                        signature=row.signature, score=round(hit.score, 4), matched_by=hit.streams)


# -- the tools' answers ------------------------------------------------------------------------------


class SearchAnswer(Answer, kw_only=True):
    query: str
    results: list[SearchResult]
    signals: list[str]
    ranking: str  # which ranking answered: the learned model (its file) or the hand-tuned fusion
    vectors: str | None  # the model whose vectors answered; None: none did (vectors_note says why)
    vectors_note: str | None = None
    query_capped: str | None = None  # what the caps on query analysis left out
    more: str | None = None
    stale: str | None = None  # the command line's: files of the answer changed on disk


class LocalizedFunction(Entity, kw_only=True):
    """A function `localize` lists: the entity and the probability that the fix changes it, where
    the learned ranker scored it (None, left out: the fusion answered)."""

    score: float | None = None


class LocalizeAnswer(Answer, kw_only=True):
    files: list[str]  # best first, without a score (no curve is fitted for files)
    functions: list[LocalizedFunction]
    signals: list[str]
    ranking: str
    vectors: str | None
    seconds: float
    vectors_note: str | None = None
    query_capped: str | None = None


class SkeletonAnswer(Answer, kw_only=True):
    file: str
    skeleton: str
    tokens: int | None = None  # with the token counts (asked for: loading the tokenizer costs a second)
    source_tokens: int | None = None
    reduction: float | None = None
    entities: list[str]
    stale: str | None = None


class TraceEdge(Answer, kw_only=True):
    """One edge of a trace, from the node it is listed under: to `target` (downstream) or from
    `source` (upstream); every line it is at, merged."""

    target: str | None = None
    source: str | None = None
    relation: str
    confidence: float
    resolution: str
    lines: list[int]

    @property
    def other(self) -> str:
        """The node at the other end."""
        return self.target if self.target is not None else self.source


class TraceNode(Answer, kw_only=True):
    """A node reached: an entity of the repository (file, lines, signature) or another symbol
    (an external name, a variable, a setting: its kind and name); `hops` from the root."""

    kind: str
    file: str | None = None
    line: int | None = None
    end_line: int | None = None
    signature: str | None = None
    name: str | None = None
    hops: int


class TraceAnswer(Answer, kw_only=True):
    root: str
    direction: str
    depth: int
    relations: list[str]
    adjacency_list: dict[str, list[TraceEdge]]
    entities: dict[str, TraceNode]  # breadth-first: nearest first
    truncated: bool
    stale: str | None = None
    unresolved: str | None = None


class WindowAnswer(Answer, kw_only=True):
    entity_id: str
    file: str
    start: int
    end: int
    shown: list[int]  # [first, last] line shown, context included
    code: str
    stale: str | None = None


class SymbolAnswer(Answer, kw_only=True):
    name: str
    definitions: list[Entity]
    total: int


class Reference(Answer, kw_only=True, rename={"from_": "from"}):
    from_: str  # the entity that uses it
    relation: str
    file: str
    line: int
    confidence: float
    resolution: str


class ReferencesAnswer(Answer, kw_only=True):
    entity_id: str
    references: list[Reference]
    total: int
    more: str | None = None
    unresolved: str | None = None


class RepoMapAnswer(Answer, kw_only=True):
    map: str
    tokens: int
    files_shown: int
    files_total: int
    truncated: bool
    hint: str  # what to do to see the rest ("" when nothing was left out)
    unresolved: str | None = None


class ContextAnswer(Answer, kw_only=True):
    query: str
    context: str
    tokens: int
    max_tokens: int
    entities: list[str]
    unresolved: str | None = None


# -- a change's impact (nsccn.graph.impact) ------------------------------------------------------------


class ChangedFile(Answer, kw_only=True, rename={"from_": "from"}):
    path: str
    status: str  # added, modified, deleted, renamed
    from_: str | None = None  # a renamed file's old path
    binary: bool = False
    mapped_on: str | None = None  # why its entities were read from the index, not from its text


class ChangedEntity(Answer, kw_only=True):
    id: str
    kind: str
    change: str  # added, deleted, signature, body, docstring, moved
    file: str
    line: int
    was: str | None = None  # its id before the change, when that differs
    in_index: str | None  # the id the index knows it by (None: not in the index)


class Impacted(Answer, kw_only=True):
    """An entity that depends on the change: how far, how surely, through what."""

    id: str
    distance: int
    confidence: float
    via: str  # the last step: `RELATION entity`
    path: str  # the whole path, from the dependent to the change
    file: str | None = None
    line: int | None = None


class TestToRun(Answer, kw_only=True):
    id: str
    file: str
    qualname: str | None  # None: the whole file is the test unit
    distance: int
    confidence: float
    reason: str


class Refused(Answer, kw_only=True):
    path: str
    why: str


class Risk(Answer, kw_only=True):
    level: str  # low, medium, high
    impacted_by_distance: dict[str, int]
    public_api_changed: list[str]
    signature_or_removal: list[str]
    untested_changes: list[str]


class SuiteShare(Answer, kw_only=True):
    runner: str  # pytest, go, jest, ...
    tests: int  # the tests (or test files, where the file is the unit) the index holds for it
    reached: int  # how many of them `run` runs by name or file
    whole: bool  # `run` runs its whole suite: the answer reaches most of it (WHOLE_SUITE_SHARE)


class CoverageUsed(Answer, kw_only=True):
    """The recorded per-test coverage an impact answer used (`nsccn.graph.recorded`)."""

    file: str  # the data file
    when: str | None  # when it was written, as it says
    tests: int  # the tests it records
    answered: int  # changed functions it names the tests of
    walked: int  # changed entities the graph answers for instead: new since, not measured, run at import
    changed_since: int  # entities the change reaches that changed since the suite ran: the tests that ran them then, or the graph from them
    unmapped: list[str] | None = None  # measured files whose text then is unknown (changed since it was written)
    unknown_tests: int | None = None  # tests the run recorded nothing of (skipped, not collected, added since): the graph alone answers for them


class ImpactAnswer(Answer, kw_only=True):
    source: str  # which change: the working tree, staged, since a base, a commit, a diff
    files: list[ChangedFile]
    changed: list[ChangedEntity]
    impacted: list[Impacted]
    tests: list[TestToRun]  # the tests the graph reaches from the change
    run: str | None  # a command that runs the tests, the module tests and the test files (None: none to run)
    risk: Risk
    depth: int
    test_depth: int
    min_confidence: float
    wide: bool = False  # module tests even where the graph reaches tests from the change
    outside_index: list[str] | None = None
    refused: list[Refused] | None = None
    notes: list[str] | None = None
    stale: str | None = None
    # tests that ran a changed function when the suite last ran with per-test coverage (`coverage`)
    covered_tests: list[TestToRun] = msgspec.field(default_factory=list)
    coverage: CoverageUsed | None = None
    # tests no edge reaches, in test files importing a changed module by its own name, when the graph
    # reaches no test from the change (always with `wide`): run too, to be safe
    module_tests: list[TestToRun] = msgspec.field(default_factory=list)
    # test files run whole (`qualname` None): the answer reaches a tenth of their tests or more
    test_files: list[TestToRun] = msgspec.field(default_factory=list)
    # per runner: the share of its suite the answer reaches; where it is most of it, `run` runs it whole
    suites: list[SuiteShare] = msgspec.field(default_factory=list)
    unresolved: str | None = None


def plain(answer: Any) -> Any:
    """An answer (or a list of its parts) as plain JSON-able data: a dict for a Struct; anything
    else (an answer that stays a dict: status, train_ranker) as it is."""
    if isinstance(answer, (msgspec.Struct, list)):
        return msgspec.to_builtins(answer)
    return answer
