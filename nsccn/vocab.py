"""The words and bounds every part shares: entity kinds, edge relations, trace directions and the
tools' limits. Nothing here imports anything, so the command line can build its parser from the
tools' table (nsccn.serving.tools) without loading the query stack."""

# Entity kinds, in the id prefix: `{kind}:{path}:{qualname}`.
KINDS = ("module", "class", "func", "method")
RELATIONS = ("CALLS", "INHERITS", "IMPORTS", "MUTATES", "READS_CONFIG", "PROPAGATES_ERROR", "CONTAINS")

# Which relations each trace direction follows when the caller names none.
DIRECTION_RELATIONS = {
    "downstream": ("CALLS",),
    "upstream": ("CALLS",),
    "state": ("MUTATES", "READS_CONFIG"),
    "all": ("CALLS", "INHERITS", "IMPORTS", "MUTATES", "READS_CONFIG", "PROPAGATES_ERROR"),
}
DIRECTIONS = tuple(DIRECTION_RELATIONS)

MAX_DEPTH = 10  # hops one trace follows at most
MAX_CONTEXT_LINES = 200  # lines of context around a window
MAX_SEARCH = 100  # results one search lists at most
MAX_LOCALIZE = 50  # files and functions one localization lists at most
