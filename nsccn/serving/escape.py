"""Repository-derived text made safe to print: file names, paths, ids, docstrings and code lines
come from an untrusted repository, and a terminal obeys the escape codes in them (`ESC]0;...BEL`
retitles the window, `ESC[2J` clears it) and a newline in a file name prints a line of its own
that looks like a result.

Every text answer (the CLI's, the MCP server's) passes repository strings through one of these:
`one_line` for a field shown on one line (a name, a path, an id, a signature), `block` for text
that is many lines by nature (code, a skeleton, a map). Controls become visible escapes (`\\x1b`,
`\\n`); JSON answers keep every string exact (JSON escapes its own controls, and `json_text`
escapes the few it leaves raw, which decode to the same value).
"""

from __future__ import annotations

import re

# C0 controls, DEL, C1 controls (U+009B is an 8-bit CSI), the line and paragraph separators, and
# the bidirectional overrides and isolates that reorder what is shown (a "Trojan source").
_UNSAFE = "\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_ONE_LINE = re.compile(f"[{_UNSAFE}]")
# In a block: a newline, a tab and a CR ending a line (CRLF files) are the text's own layout.
_BLOCK = re.compile("\r(?!\n)|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(m: re.Match) -> str:
    c = m.group()
    if c in _NAMED:
        return _NAMED[c]
    return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"


def one_line(text: object) -> str:
    """`text` as one line with no control character in it: every control (newline and tab
    included) shown as an escape."""
    s = text if isinstance(text, str) else str(text)
    return _ONE_LINE.sub(_escaped, s) if _ONE_LINE.search(s) else s


def block(text: str) -> str:
    """Many lines of text (code, a skeleton): newlines, tabs and CRLF line ends stay; every other
    control is shown as an escape."""
    return _BLOCK.sub(_escaped, text) if _BLOCK.search(text) else text


_JSON_RAW = re.compile("[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def json_text(encoded: str) -> str:
    """JSON made with `ensure_ascii=False` (which escapes C0 controls itself) with the other
    unsafe characters written as `\\uXXXX` too: the same JSON value, nothing raw on a terminal."""
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", encoded)
