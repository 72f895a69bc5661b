"""Python 2's indentation, read through a view that Python 3 and libcst accept.

Python 2 and 3 both move a tab to the next multiple of 8 columns. Python 3 also refuses
(`TabError`) an indentation whose blocks would change were a tab one column wide, so a file
that mixes tabs and spaces, valid Python 2, does not parse; and libcst, which keeps each
block's indentation as a string added to the enclosing block's, refuses even some that Python
3 reads (a block indented `\t` holding one indented `  \t\t`). Such a text is checked
through a view that writes every statement's indentation that holds a tab as spaces of its
width: the same rows, and the same blocks. Findings come back to the real columns. A fixed
view gets each statement's own indentation back, and a statement that a fix adds gets the
indentation of a statement at its depth, so the file keeps its own mix of tabs and spaces and
the session line's indentation is never rewritten. Nothing is given back unless the text it
makes, seen again, is the fixed view.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from tfmemlint.model import Location
from tfmemlint.reading.source import LineIndex, line_origins
from tfmemlint.reading.statements import LogicalLine, logical_lines, tokens

TAB_SIZE = 8
# Cheap signs, before any scan: an indentation with a tab, and one with a space (after any
# line break: a lone CR ends a line too).
_TAB_INDENT = re.compile(r"(?:^|(?<=\r))[ \f]*\t", re.M)
_SPACE_INDENT = re.compile(r"(?:^|(?<=\r))[\t\f]* ", re.M)
_WHITESPACE = re.compile(r"[ \t\f]*")


class IndentationViewError(ValueError):
    """A fixed view whose real text would not read, seen again, as that view."""


def width(indent: str) -> int:
    """The column Python reaches after `indent`: a tab to the next multiple of 8, a form feed
    back to 0."""
    column = 0
    for char in indent:
        if char == "\t":
            column = (column // TAB_SIZE + 1) * TAB_SIZE
        elif char == "\f":
            column = 0
        else:
            column += 1
    return column


def _narrow_width(indent: str) -> int:
    """The column a tab one column wide would reach, as Python 3 also measures it."""
    return len(indent) - indent.rfind("\f") - 1


class Python2Indentation(NamedTuple):
    """A text (`real`) and its view (`view`): the same, but for the indentation of each
    statement that holds a tab, written as spaces."""

    real: str
    view: str
    # For each row (1-based) where a statement starts: its real and its view indentation.
    statements: dict[int, tuple[str, str]]
    # The first row whose indentation Python 3 refuses (TabError): the text is Python 2. None
    # where only libcst refuses it.
    refused_row: int | None

    @classmethod
    def of(cls, text: str) -> Python2Indentation | None:
        """The view of a text whose indentation Python 3 or libcst refuses for its tabs alone;
        None otherwise, and where Python 2 refuses it too (a dedent to a column no open block
        has, an indented statement after no block header), which is recovery's."""
        if "\t" not in text or not _TAB_INDENT.search(text) or not _SPACE_INDENT.search(text):
            return None
        statements, _ = logical_lines(text)
        reading = _read(text, statements)
        if reading.strings_agree or reading.python2_refuses:
            return None
        view, indents = _expanded(text, statements)
        return cls(text, view, indents, _row(text, statements, reading.tab_error))

    def location(self, where: Location) -> Location:
        """A location in the view, in the real text: a column inside a rewritten indentation
        goes to the nearest real one."""
        real, view = self.statements.get(where.row, ("", ""))
        if real == view:
            return where
        column = where.column - 1
        if column >= len(view):
            return Location(where.row, column - len(view) + len(real) + 1)
        return Location(where.row, min(column, len(real)) + 1)

    def inside_indentation(self, where: Location) -> bool:
        """Whether a location of the view falls strictly inside a rewritten indentation, where
        no real column stands for it."""
        real, view = self.statements.get(where.row, ("", ""))
        return real != view and 1 < where.column <= len(view)

    def restored(self, fixed: str) -> Python2Indentation:
        """The real text of `fixed`, a fix of the view, with that view. A statement that was
        there, at the same depth, keeps its own indentation; one that a fix changed, added or
        moved gets that of a statement at its depth that the fix took the place of, else that
        of the nearest statement at its depth in its own block (above first), else that of the
        nearest shallower statement above, with spaces for the rest. Raises
        IndentationViewError where the real text would not read as `fixed`, or where Python 3
        would refuse the fixed text of a file it reads."""
        if fixed == self.view:
            return self
        old_rows, new_rows = _rows(self.view), _rows(fixed)
        origins = line_origins(old_rows, new_rows)
        statements, _ = logical_lines(fixed)
        fixed_lines = LineIndex(fixed)
        rows = [fixed_lines.location(line.start).row for line in statements]
        chosen: dict[int, str] = {}  # row: real indentation, for each statement row
        kept: dict[int, int] = {}  # row: the old row it is, at the same depth
        for row, line in zip(rows, statements, strict=True):
            old = origins[row - 1]
            if old is None:
                continue
            real, view = self.statements.get(old + 1, (None, None))
            if view == line.indent:
                chosen[row], kept[row] = real, old + 1
        taken = set(kept.values())
        for row, line in zip(rows, statements, strict=True):
            if row in chosen or not _pure(line.indent):
                continue
            wanted = width(line.indent)
            for old in _replaced(row, kept, len(old_rows)):
                real, view = self.statements.get(old, (None, None))
                if view is not None and old not in taken and width(view) == wanted:
                    chosen[row] = real
                    taken.add(old)
                    break
        for at, (row, line) in enumerate(zip(rows, statements, strict=True)):
            if row not in chosen and _pure(line.indent):
                chosen[row] = _nearest(rows, statements, chosen, at)
        pieces: list[str] = []
        for row, text_row in enumerate(new_rows, start=1):
            real = chosen.get(row)
            view = text_row[: len(text_row) - len(text_row.lstrip(" \t\f"))]
            pieces.append(text_row if real is None else real + text_row[len(view) :])
        restored = "".join(pieces)
        statements_again, _ = logical_lines(restored)
        view_again, indents = _expanded(restored, statements_again)
        if view_again != fixed:
            raise IndentationViewError("the fixed text would not keep Python 2's indentation")
        reading = _read(restored, statements_again)
        if self.refused_row is None and reading.tab_error is not None:
            raise IndentationViewError(
                "the fixed text would mix tabs and spaces as Python 3 refuses"
            )
        refused_row = _row(restored, statements_again, reading.tab_error)
        return Python2Indentation(restored, fixed, indents, refused_row or self.refused_row)


def _replaced(row: int, kept: dict[int, int], old_count: int) -> range:
    """The old rows (1-based) between the nearest rows kept above and below `row`: what the
    fix took the place of there."""
    above = max((old for new, old in kept.items() if new < row), default=0)
    below = min((old for new, old in kept.items() if new > row), default=old_count + 1)
    return range(above + 1, below)


def _rows(text: str) -> list[str]:
    """The text's lines with their breaks, split where Python splits them (not at a form
    feed, as str.splitlines would)."""
    starts = LineIndex(text).starts
    return [text[start:end] for start, end in zip(starts, [*starts[1:], len(text)], strict=True)]


def _pure(indent: str) -> bool:
    return _WHITESPACE.fullmatch(indent) is not None


def _nearest(
    rows: list[int], statements: list[LogicalLine], chosen: dict[int, str], at: int
) -> str:
    """The real indentation for the statement `statements[at]`, which a fix added: that of the
    nearest statement of the same width in its own block whose own is known, above it first;
    else that of the nearest shallower one above, with spaces for the rest. (Never one from
    another block: two blocks may indent alike in Python 2's columns, and not as strings.)"""
    wanted = width(statements[at].indent)
    for direction in (range(at - 1, -1, -1), range(at + 1, len(statements))):
        for index in direction:
            depth = width(statements[index].indent)
            if depth < wanted:
                break  # the block's end
            real = chosen.get(rows[index])
            if real is not None and depth == wanted:
                return real
    for index in range(at - 1, -1, -1):
        real = chosen.get(rows[index])
        if real is not None and width(real) < wanted:
            return real + " " * (wanted - width(real))
    return " " * wanted


class _Reading(NamedTuple):
    """How a text's statements are indented, to libcst, Python 3 and Python 2."""

    strings_agree: bool  # each is its block's string, or its enclosing block's and more
    tab_error: int | None  # the first statement Python 3 refuses with TabError (its index)
    python2_refuses: bool  # a dedent to no open block's column, an indent after no header


def _read(text: str, statements: list[LogicalLine]) -> _Reading:
    stack = [(0, 0, "")]  # for each open block: its column, its column with narrow tabs, its string
    agree, tab_error, refuses = True, None, False
    previous: LogicalLine | None = None
    for index, line in enumerate(statements):
        if not _pure(line.indent):
            previous = line
            continue
        column, narrow = width(line.indent), _narrow_width(line.indent)
        if column > stack[-1][0]:
            if previous is None or not _opens_block(text, previous):
                refuses = True
            if narrow <= stack[-1][1] and tab_error is None:
                tab_error = index
            agree = agree and line.indent.startswith(stack[-1][2])
            stack.append((column, narrow, line.indent))
        else:
            while len(stack) > 1 and column < stack[-1][0]:
                stack.pop()
            top, top_narrow, top_indent = stack[-1]
            if column != top:
                refuses = True
            elif narrow != top_narrow and tab_error is None:
                tab_error = index
            agree = agree and line.indent == top_indent
        previous = line
    return _Reading(agree, tab_error, refuses)


def _opens_block(text: str, line: LogicalLine) -> bool:
    """Whether the statement ends with a colon: a header whose block comes on the next line."""
    found = [
        token
        for token in tokens(text, line.start, line.end)
        if token.kind not in ("comment", "newline", "continuation")
        and (token.kind != "word" or text[token.start : token.end].strip())
    ]
    return bool(found) and found[-1].kind == "colon"


def _row(text: str, statements: list[LogicalLine], index: int | None) -> int | None:
    if index is None:
        return None
    return LineIndex(text).location(statements[index].start).row


def _expanded(text: str, statements: list[LogicalLine]) -> tuple[str, dict[int, tuple[str, str]]]:
    """The text with each statement's indentation that holds a tab or a form feed written as
    spaces, and each statement row's (real, view) indentation."""
    lines = LineIndex(text)
    pieces: list[str] = []
    indents: dict[int, tuple[str, str]] = {}
    cursor = 0
    for line in statements:
        indent = line.indent
        if not _pure(indent):
            continue
        view = " " * width(indent) if "\t" in indent or "\f" in indent else indent
        pieces.append(text[cursor : line.line_start])
        pieces.append(view)
        cursor = line.start
        indents[lines.location(line.line_start).row] = (indent, view)
    pieces.append(text[cursor:])
    return "".join(pieces), indents


__all__ = ["IndentationViewError", "Python2Indentation", "width"]
