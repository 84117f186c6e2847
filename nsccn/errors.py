"""What a tool says when it cannot answer: the Navigator's errors, typed, so each front end can
tell a bad argument from a missing index without reading the message."""

from __future__ import annotations


def said(value, limit: int = 120) -> str:
    """`repr(value)` for an error message, cut to `limit` characters: a message that echoes a
    100 kB argument back would bury the message itself."""
    try:
        r = repr(value)
    except ValueError:  # an int of more than 4,300 digits has no repr
        return f"an integer of about {int(value.bit_length() * 0.30103):,} digits"
    return r if len(r) <= limit else f"{r[: limit - 30]}... ({len(r):,} characters)"


class NavigatorError(ValueError):
    def __init__(self, message: str, suggestions: list[str] | None = None):
        super().__init__(message)
        self.message = message
        self.suggestions = suggestions or []

    def as_dict(self) -> dict:
        d = {"error": self.message}
        if self.suggestions:
            d["did_you_mean"] = self.suggestions
        return d


class ArgumentError(NavigatorError):
    """An argument out of its range or of the wrong kind: the message names the valid values."""


class ResolveFailed(RuntimeError):
    """A child resolving a partition failed; nothing of the resolution was kept (the marker stays:
    the next index session resolves everything)."""


class NoIndex(NavigatorError):
    """There is no index to answer from (none yet, being created, not this user's, of another
    schema): `nsccn index` makes one. The command line exits with 3."""
