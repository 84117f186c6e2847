"""The tools' parameters, declared once: type, limits, valid values, default, and how the command
line spells each. Everything that checks or advertises an argument derives from these: the MCP
input schema (nsccn.serving.tools.mcp_signature), the MCP call's checks (`Tool.request`), the
command line's options and their checks (`Tool.add_cli` / `Tool.cli_request`) and the Navigator's
own checks (`check`), so one bad value gets one message, whichever front it came through.

Nothing here imports the query stack: the Navigator, the tools' table and the command line's
parser all read this module.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nsccn.errors import ArgumentError, said
from nsccn.vocab import DIRECTIONS, KINDS, MAX_CONTEXT_LINES, MAX_DEPTH, MAX_LOCALIZE, MAX_SEARCH, RELATIONS

REQUIRED = object()
CAP = "cap"  # a bound or default that is the server's result_token_cap
POSITIONAL = "positional"  # a command-line argument without a flag
MAX_REFS_LIMIT = 500
MAX_SYMBOL_LIMIT = 100
MIN_MAP_TOKENS = 64
MIN_CONTEXT_TOKENS = 200


@dataclass(frozen=True)
class Param:
    """One parameter of a tool. `lo`/`hi` bound a number, `items` lists the valid items of a list,
    `enum` a string's valid values, `empty` is the message for a blank string. `check` False: its
    limits are known only once the answer is (checked by the tool itself). `mcp` False: a parameter
    of the command line only; `cli`: the command line's spelling (`""`: `--name-with-dashes`,
    POSITIONAL, a flag, or None: not on the command line); `cli_kw`: argparse's extra keywords
    (help, metavar, nargs)."""

    name: str
    type: Any
    description: str
    default: Any = REQUIRED
    lo: float | None = None
    hi: float | str | None = None
    items: tuple[str, ...] | None = None
    enum: tuple[str, ...] | None = None
    check: bool = True
    empty: str | None = None
    mcp: bool = True
    cli: str | None = ""
    cli_kw: dict = field(default_factory=dict, hash=False, compare=False)

    # -- limits ---------------------------------------------------------------------------------

    def bounds(self, cap: int) -> tuple[float | None, float | None]:
        return self.lo, cap if self.hi == CAP else self.hi

    def default_for(self, cap: int) -> Any:
        return self.default(cap) if callable(self.default) else self.default

    def _range(self, cap: int) -> str:
        lo, hi = (f"{b:g}" if isinstance(b, float) else b for b in self.bounds(cap))
        return f"between {lo} and {hi}" if hi is not None else f"{lo} or more"

    def type_message(self, value: Any, cap: int) -> str:
        """The message for a value that is not of the parameter's type (a word for a number)."""
        kind = {int: "a whole number", float: "a number"}.get(self.type)
        if kind is None or self.lo is None:
            return f"{self.name} must be {kind or 'of another type'}, not {said(value)}"
        return f"{self.name} must be {kind}, {self._range(cap)}, not {said(value)}"

    def validate(self, value: Any, cap: int) -> None:
        """Raise ArgumentError, naming the valid values, when `value` is not one of them."""
        if not self.check:
            return
        if self.empty is not None and (not isinstance(value, str) or not value.strip()):
            raise ArgumentError(self.empty)
        if self.enum is not None and value not in self.enum:
            raise ArgumentError(f"{self.name} must be one of {list(self.enum)}, not {said(value)}")
        if self.items is not None and value:
            bad = [v for v in value if v not in self.items]
            if bad:
                label = "valid kinds" if self.name == "kinds" else "valid"
                raise ArgumentError(f"unknown {self.name} {said(bad)}; {label}: {list(self.items)}")
        if self.lo is None:
            return
        lo, hi = self.bounds(cap)
        number = (int,) if self.type is int else (int, float)
        if isinstance(value, bool) or not isinstance(value, number):
            raise ArgumentError(self.type_message(value, cap))
        if value < lo or (hi is not None and value > hi):
            raise ArgumentError(f"{self.name} must be {self._range(cap)}, not {said(value)}")

    # -- the command line -----------------------------------------------------------------------

    @property
    def flag(self) -> str | None:
        """The command line's flag (None: positional, or not on the command line)."""
        if self.cli is None or self.cli == POSITIONAL:
            return None
        return self.cli or "--" + self.name.replace("_", "-")

    def is_list(self) -> bool:
        return self.type == list[str] | None

    def add_to(self, parser) -> None:
        """This parameter as an argparse argument. Numbers are taken as text and converted by
        `from_cli`, so a bad one gets the same message as through MCP (not argparse's); no
        `choices` either, for the same reason; the default is filled in by `from_cli`."""
        kw = dict(self.cli_kw)
        help_ = kw.pop("help", None) or self.description.replace("{cap}", "result_token_cap")
        if self.cli == POSITIONAL:
            parser.add_argument(self.name, help=help_, **kw)
            return
        if self.type is bool:
            parser.add_argument(self.flag, dest=self.name, action="store_true", help=help_, **kw)
        elif self.is_list():
            kw.setdefault("metavar", self.flag.lstrip("-").upper().replace("-", "_"))
            parser.add_argument(self.flag, dest=self.name, action="append", help=help_ + " (repeatable)", **kw)
        else:
            kw.setdefault("metavar", {int: "N", float: "X"}.get(self.type, self.name.upper()))
            parser.add_argument(self.flag, dest=self.name, default=None, help=help_, **kw)

    def from_cli(self, value: Any, cap: int) -> Any:
        """The command line's text as the parameter's type (its default when not given)."""
        if value is None:
            return None if self.default is REQUIRED else self.default_for(cap)
        if self.type in (int, float) and isinstance(value, str):
            try:
                return self.type(value.strip())
            except ValueError:
                raise ArgumentError(self.type_message(value, cap)) from None
        return value


def check(params: tuple[Param, ...], cap: int, **values: Any) -> None:
    """Check the values given against their declarations, in the declared order."""
    for p in params:
        if p.name in values:
            p.validate(values[p.name], cap)


def named(params: tuple[Param, ...], name: str) -> Param:
    return next(p for p in params if p.name == name)


# -- each tool's parameters ------------------------------------------------------------------------

ENTITY_ID = Param("entity_id", str, "entity id, e.g. func:pkg/auth.py:validate_token, or any unambiguous name "
                  "(validate_token, auth.validate_token, pkg/auth.py:validate_token)", cli=POSITIONAL)

SEARCH = (
    Param("query", str, "a name, a phrase, or a whole bug report / traceback", cli=POSITIONAL,
          empty="query is empty: give a name, a phrase or a bug report"),
    Param("limit", int, f"results to return (1-{MAX_SEARCH})", 10, lo=1, hi=MAX_SEARCH),
    Param("offset", int, "skip this many results (paging)", 0, lo=0),
    Param("kinds", list[str] | None, "only these kinds: module, class, func, method", None, items=KINDS, cli="--kind"),
    Param("diversity", float, "0: plain ranking; up to 1: near-duplicates of results already listed give way "
          "to other places (MMR)", 0.0, lo=0, hi=1),
)

LOCALIZE = (
    Param("report", str, "the issue / bug report / traceback / task, as written", cli=POSITIONAL,
          empty="report is empty: paste the bug report, traceback or task description",
          cli_kw={"nargs": "?", "help": "the report's text; `-` or nothing: read standard input"}),
    Param("limit", int, f"files and functions to list (1-{MAX_LOCALIZE})", 10, lo=1, hi=MAX_LOCALIZE),
)

SKELETON = (
    Param("file_path", str, "path relative to the repository root, e.g. pkg/models.py (an absolute path inside it "
          "is taken too)", cli=POSITIONAL, cli_kw={"metavar": "file", "help": None}),
    Param("offset", int, "skip this many skeleton lines (to continue a cut skeleton)", 0, lo=0,
          cli=None),  # the command line prints the whole skeleton
)

TRACE = (
    ENTITY_ID,
    Param("direction", str, " | ".join(DIRECTIONS), "downstream", enum=DIRECTIONS),
    Param("depth", int, f"max hops (1-{MAX_DEPTH})", 3, lo=1, hi=MAX_DEPTH),
    Param("relations", list[str] | None, "follow only these relations: " + ", ".join(RELATIONS), None,
          items=RELATIONS, cli="--relation"),
    Param("min_confidence", float, "drop edges below this confidence (0-1)", 0.0, lo=0, hi=1),
)

WINDOW = (
    Param("entity_id", str, "entity id, e.g. method:pkg/models.py:User.save, or any unambiguous name "
          "(User.save, pkg.models.User.save)", cli=POSITIONAL),
    Param("context_lines", int, f"lines of context above and below (0-{MAX_CONTEXT_LINES})", 5, lo=0,
          hi=MAX_CONTEXT_LINES, cli="--context"),
    Param("from_line", int | None, "start showing at this line number (to continue a cut window)", None, lo=1,
          check=False, cli=None),  # its upper bound is the entity's last line: checked once it is known
)

REPO_MAP = (
    Param("max_tokens", int, f"token budget ({MIN_MAP_TOKENS}-{{cap}})", 1024, lo=MIN_MAP_TOKENS, hi=CAP),
    Param("focus", list[str] | None, "entity ids or file paths to personalize the ranking toward", None),
)

SYMBOL = (
    Param("name", str, "a function, class or method name, bare or qualified", cli=POSITIONAL,
          empty="name is empty: give a function, class or method name"),
    Param("limit", int, f"definitions to return (1-{MAX_SYMBOL_LIMIT})", 20, lo=1, hi=MAX_SYMBOL_LIMIT),
)

REFERENCES = (
    ENTITY_ID,
    Param("limit", int, f"references to return (1-{MAX_REFS_LIMIT})", 50, lo=1, hi=MAX_REFS_LIMIT),
    Param("offset", int, "skip this many references (paging)", 0, lo=0),
)

IMPACT = (  # one change at a time: checked by the Navigator
    Param("staged", bool, "the staged changes against HEAD", False),
    Param("base", str | None, "the working tree against where it left this revision (e.g. main)", None,
          cli_kw={"metavar": "REV"}),
    Param("commit", str | None, "one commit against its first parent", None, cli_kw={"metavar": "REV"}),
    Param("diff", str | None, "a unified diff (git diff, diff -u) to analyze instead of git's", None,
          cli=None),  # the command line's --diff names a file (or - for standard input): its own option
    Param("depth", int, f"hops of dependents listed (1-{MAX_DEPTH})", 3, lo=1, hi=MAX_DEPTH),
    Param("test_depth", int, f"hops a selected test may be from the change (0-{MAX_DEPTH})", 9, lo=0, hi=MAX_DEPTH,
          mcp=False),
    Param("min_confidence", float, "follow no edge below this confidence (0-1)", 0.0, lo=0, hi=1),
    Param("wide", bool, "also the tests of every file importing a changed module, not only when the graph "
          "reaches no test", False),
    Param("coverage", str | None, "a coverage.py data file with per-test contexts (pytest --cov-context=test) "
          "inside the repository, to select the tests that ran the changed lines (or function); default: .coverage at the "
          "root when it is there; off: the graph alone", None, cli_kw={"metavar": "FILE"}),
    Param("offset", int, "skip this many impacted entities and tests (paging)", 0, lo=0, cli=None),
)

CONTEXT = (
    Param("query", str, "the task, question or bug report", cli=POSITIONAL,
          empty="query is empty: describe the task or paste the bug report"),
    Param("max_tokens", int, f"token budget ({MIN_CONTEXT_TOKENS}-{{cap}})", lambda cap: min(8000, cap),
          lo=MIN_CONTEXT_TOKENS, hi=CAP),
)

TRAIN_RANKER = (  # the command line's only
    Param("commits", int, "newest fix commits to train on (10-5000)", 300, lo=10, hi=5000, mcp=False),
    Param("rounds", int, "trees added to the shipped model (1-1000)", 60, lo=1, hi=1000, mcp=False),
)
