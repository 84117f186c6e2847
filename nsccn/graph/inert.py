"""The code of a file's lines with what runs nothing left out: comments (each grammar's comment
nodes), and in Python the annotations of a signature (a parameter's or the return's: stored, never
run), an `if TYPE_CHECKING:` block with no `else` (never entered at run time) and `typing.overload`'s
stubs (replaced by the definition after them; never called); a Python string counts as its value
(`'a'`, `"a"` and `"\x61"` are one string). Two versions of
some lines whose code reads the same changed no behaviour (`nsccn.graph.impact` walks nothing from
such a change); code that reads annotations at run time (`typing.get_type_hints`) is the exception,
as reflection is for every static test selection.

Only the nodes that overlap the lines asked about are visited, so a one-line change in a long
file costs a few nodes, not the file."""

from __future__ import annotations

import ast
import bisect
import re

import tree_sitter as ts

from nsccn import languages

# Python: a signature's annotation, and the punctuation that introduces it (`x: int`, `-> str`)
_ANNOTATED = ("typed_parameter", "typed_default_parameter", "function_definition")
_ANNOTATION_MARKS = {":": ("typed_parameter", "typed_default_parameter"), "->": ("function_definition",)}
# the same, as a query (`CodeLines.code_by_line`): what runs nothing, and what may (an `if`, a decorated
# definition) for `_inert` to decide; strings, read as their values
_PYTHON_QUERY = """
(comment) @inert
(typed_parameter ":" @inert type: (type) @inert)
(typed_default_parameter ":" @inert type: (type) @inert)
(function_definition "->" @inert return_type: (type) @inert)
(if_statement) @maybe
(decorated_definition) @maybe
(string) @string
"""
_QUERIES: dict[object, ts.Query] = {}
_TOKEN = re.compile(rb"\w+|[^\w\s]")
_INDENT = re.compile(rb"[ \t]*")


class CodeLines:
    """One side of a file, parsed once; `tokens(lines)`: the code tokens on those lines."""

    def __init__(self, path: str, data: bytes, other: CodeLines | None = None):
        """`other`: the file's other side, parsed: tree-sitter parses again only what the edit
        between the two touched and reuses the rest (a one-line change in a 4,700-line file: 1 ms,
        not 10), into the tree a parse from nothing gives."""
        self.tree: ts.Tree | None = None
        self.comments: frozenset[str] = frozenset()
        self.python = False
        self.data = data
        try:
            self.language = languages.language_for(path, data[:256])
        except Exception:  # noqa: BLE001 - an unknown file: no tokens, every change counts
            self.language = None
        if self.language == "python":
            from nsccn.languages.python import parser

            self.python, self.comments, ts_parser = True, frozenset(("comment",)), parser()
        elif self.language is not None:
            try:
                lang = languages.query_language(self.language)
            except KeyError:
                return
            self.comments, ts_parser = frozenset(lang.comment_types), lang.parser
        else:
            return
        self._ts_language = ts_parser.language
        old = other.tree.copy() if other is not None and other.tree is not None and other.language == self.language else None
        if old is not None:
            _edit(old, other.data, data)
        self.tree = ts_parser.parse(data, old) if old is not None else ts_parser.parse(data)

    def tokens(self, lines: list[int]) -> list[str] | None:
        """The text of every code token on `lines` (1-based, sorted), in order; None: not parsed."""
        if self.tree is None:
            return None
        out: list[tuple[int, str]] = []
        if lines:
            self._collect(self.tree.root_node, [n - 1 for n in lines], out)
        return [text for _row, text in out]

    def code_by_line(self, first: int, last: int) -> dict[int, bytes] | None:
        """Line -> its code, lines `first`..`last` (1-based): the line less what runs nothing (as `tokens`
        reads it), a string as its value, tokens apart by a 0 byte, after the line's indentation (in
        Python, its block); a line of none is absent. None: not parsed. What a query finds, read a line
        at a time: a whole file's lines in a few milliseconds a thousand lines, not a walk of every node."""
        if self.tree is None:
            return None
        query = _QUERIES.get(self._ts_language)
        if query is None:
            query = _QUERIES[self._ts_language] = ts.Query(self._ts_language, _PYTHON_QUERY if self.python else "".join(
                f"({t}) @inert\n" for t in sorted(self.comments)))
        cursor = ts.QueryCursor(query)
        cursor.set_point_range((first - 1, 0), (last, 0))
        cuts: list[tuple[int, int, int, bytes]] = []  # (start byte, end byte, end row, what stands there)
        for name, nodes in cursor.captures(self.tree.root_node).items():
            for n in nodes:
                if name == "string":
                    value = _string_value(n)
                    if value is not None:
                        cuts.append((n.start_byte, n.end_byte, n.end_point[0], value.encode("utf-8", "replace")))
                elif name == "inert" or self._inert(n):
                    cuts.append((n.start_byte, n.end_byte, n.end_point[0], b""))
        data = self.data
        starts = [0] + [m.end() for m in re.finditer(rb"\n", data)]
        if first > len(starts):
            return {}
        rows: dict[int, list[bytes]] = {}
        row, pos = first - 1, starts[first - 1]
        end = starts[last] if last < len(starts) else len(data)

        def emit(text: bytes) -> None:
            nonlocal row
            parts = text.split(b"\n")
            rows.setdefault(row, []).append(parts[0])
            for part in parts[1:]:
                row += 1
                rows.setdefault(row, []).append(part)

        for start, stop, stop_row, instead in sorted(cuts):
            if stop <= pos:
                continue  # inside a cut already (a comment in a stub, a string in a block that never runs)
            if start >= end:
                break
            if start >= pos:
                emit(data[pos:start])
                rows.setdefault(row, []).append(b" " + instead + b" ")
            # else a cut begun above these lines (a block that never runs around them): on from here
            row, pos = stop_row, stop
        if pos < end:
            emit(data[pos:end])
        out: dict[int, bytes] = {}
        for r, parts in rows.items():
            if first - 1 <= r < last:
                tokens = _TOKEN.findall(b"".join(parts))
                if tokens:
                    out[r + 1] = _INDENT.match(data, starts[r]).group() + b"\x00".join(tokens)
        return out

    def _collect(self, node: ts.Node, rows: list[int], out: list[tuple[int, str]]) -> None:
        first, last = node.start_point[0], node.end_point[0]
        i = bisect.bisect_left(rows, first)
        if i == len(rows) or rows[i] > last or self._inert(node):
            return
        if node.child_count == 0:
            out.append((first, node.text.decode("utf-8", "replace") if node.text is not None else ""))
            return
        if self.python and node.type == "string":
            value = _string_value(node)
            if value is not None:
                out.append((first, value))
                return
        for child in node.children:
            self._collect(child, rows, out)

    def _inert(self, node: ts.Node) -> bool:
        if node.type in self.comments:
            return True
        if not self.python:
            return False
        parent = node.parent
        if parent is None:
            return False
        if node.type == "type" and parent.type in _ANNOTATED:
            return True
        if node.type in _ANNOTATION_MARKS and parent.type in _ANNOTATION_MARKS[node.type]:
            return True
        if node.type == "decorated_definition":
            return any(d.type == "decorator" and _is_overload(d) for d in node.children)
        if node.type == "if_statement" and node.child_by_field_name("alternative") is None:
            cond = node.child_by_field_name("condition")
            text = cond.text.decode("utf-8", "replace") if cond is not None and cond.text else ""
            return text == "TYPE_CHECKING" or text.endswith(".TYPE_CHECKING")
        return False


def _string_value(node: ts.Node) -> str | None:
    """A Python string literal as its value (its kind and what it holds); None: an f-string, or unreadable."""
    if node.text is None or any(c.type == "interpolation" for c in node.children):
        return None
    try:
        value = ast.literal_eval(node.text.decode("utf-8"))
    except (ValueError, SyntaxError, UnicodeDecodeError, MemoryError, RecursionError):
        return None
    return repr(value)


def _is_overload(decorator: ts.Node) -> bool:
    text = decorator.text.decode("utf-8", "replace").lstrip("@").strip() if decorator.text else ""
    return text == "overload" or text.endswith(".overload")


def _edit(tree: ts.Tree, old: bytes, new: bytes) -> None:
    """Tell `tree`, parsed from `old`, that its text is now `new`: the one span between what the
    two begin and end with alike (found by halving: each step a comparison of two byte strings)."""
    n = min(len(old), len(new))
    lo, hi = 0, n  # the longest common beginning
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if old[:mid] == new[:mid] else (lo, mid - 1)
    start = lo
    lo, hi = 0, n - start  # the longest common end after it
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if old[len(old) - mid:] == new[len(new) - mid:] else (lo, mid - 1)
    old_end, new_end = len(old) - lo, len(new) - lo
    tree.edit(start, old_end, new_end, _point(old, start), _point(old, old_end), _point(new, new_end))


def _point(data: bytes, offset: int) -> tuple[int, int]:
    """(row, byte column) of a byte offset."""
    return data.count(b"\n", 0, offset), offset - (data.rfind(b"\n", 0, offset) + 1)


def inert_lines(old: CodeLines, new: CodeLines, blocks: list[tuple[list[int], list[int]]]) -> tuple[set[int], set[int]]:
    """Of each block of a diff (old lines removed, new lines added, side by side), the lines of
    those whose code reads the same on both sides: (old lines, new lines)."""
    old_out: set[int] = set()
    new_out: set[int] = set()
    for removed, added in blocks:
        before, after = old.tokens(removed), new.tokens(added)
        if before is not None and after is not None and before == after:
            old_out.update(removed)
            new_out.update(added)
    return old_out, new_out
