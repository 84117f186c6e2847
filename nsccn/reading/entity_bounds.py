"""What one entity stores, in characters: each text field's bound, applied by the extractor
(`bounded`) and by the languages' body heads (`head_lines`)."""

from __future__ import annotations

import msgspec

from nsccn.model import Entity

# What one entity stores, in characters, whatever its file looks like. Each was a number of lines
# (body_head: 12), and in a one-line minified file a line is the file: 200 kB of JavaScript stored
# 796 MB of body_head (every entity's "first 12 lines" were the rest of the file). These bounds
# keep the index linear in its input: the embedding text, the signature shown and the words
# searched are made of them.
MAX_SIGNATURE = 1_000
MAX_DOCSTRING = 8_000
MAX_BODY_HEAD = 2_000
MAX_BODY_TERMS = 16_000
MAX_DECORATOR = 400


def head_lines(lines: list[str], start: int, count: int) -> str:
    """Lines `start`.. `start + count` joined, at most MAX_BODY_HEAD characters: made cut, not cut
    after (a minified file's one line is the whole file, for each of its thousands of entities)."""
    out, room = [], MAX_BODY_HEAD
    for line in lines[start:start + count]:
        out.append(line[:room])
        room -= len(out[-1]) + 1
        if room <= 0:
            break
    return "\n".join(out)


def _cut_words(text: str, limit: int) -> str:
    """`text` cut at a space before `limit` characters (a word is never cut in two)."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit + 1)
    return text[:cut if cut > 0 else limit]


def bounded(entities: list[Entity]) -> list[Entity]:
    """The entities with each text field within its bound (most are already: returned as they are)."""
    out = []
    for e in entities:
        if (len(e.signature) > MAX_SIGNATURE or len(e.docstring) > MAX_DOCSTRING or len(e.body_head) > MAX_BODY_HEAD
                or len(e.body_terms) > MAX_BODY_TERMS or any(len(d) > MAX_DECORATOR for d in e.decorators)):
            e = msgspec.structs.replace(
                e, signature=e.signature[:MAX_SIGNATURE], docstring=e.docstring[:MAX_DOCSTRING],
                body_head=e.body_head[:MAX_BODY_HEAD], body_terms=_cut_words(e.body_terms, MAX_BODY_TERMS),
                decorators=[d[:MAX_DECORATOR] for d in e.decorators])
        out.append(e)
    return out
