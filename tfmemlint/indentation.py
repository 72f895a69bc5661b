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
from tfmemlint.source import LineIndex, line_origins
from tfmemlint.statements import LogicalLine, logical_lines

TAB_SIZE = 8
# Cheap signs, before any scan: an indentation with a tab, and one with a space.
_TAB_INDENT = re.compile(r"^[ \f]*\t", re.M)
_SPACE_INDENT = re.compile(r"^[\t\f]* ", re.M)
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
    # For each row whose indentation the view writes otherwise: (real, view) indentation.
    indents: dict[int, tuple[str, str]]
    # The first row whose indentation Python 3 refuses (TabError): the text is Python 2. None
    # where only libcst refuses it.
    refused_row: int | None

    @classmethod
    def of(cls, text: str) -> Python2Indentation | None:
        """The view of a text whose indentation Python 3 or libcst refuses for its tabs alone
        (an indentation that Python 2 refuses too is recovery's); None otherwise."""
        if "\t" not in text or not _TAB_INDENT.search(text) or not _SPACE_INDENT.search(text):
            return None
        statements, _ = logical_lines(text)
        if _consistent(statements):
            return None
        view, indents = _expanded(text, statements)
        return cls(text, view, indents, _refused_row(text, statements))

    def location(self, where: Location) -> Location:
        """A location in the view, in the real text: a column inside a rewritten indentation
        goes to the nearest real one."""
        indents = self.indents.get(where.row)
        if indents is None:
            return where
        real, view = indents
        column = where.column - 1
        if column >= len(view):
            return Location(where.row, column - len(view) + len(real) + 1)
        return Location(where.row, min(column, len(real)) + 1)

    def inside_indentation(self, where: Location) -> bool:
        """Whether a location of the view falls strictly inside a rewritten indentation, where
        no real column stands for it."""
        indents = self.indents.get(where.row)
        return indents is not None and 1 < where.column <= len(indents[1])

    def restored(self, fixed: str) -> Python2Indentation:
        """The real text of `fixed`, a fix of the view, with that view. A statement that was
        there, at the same depth, keeps its own indentation; one that a fix changed, added or
        moved gets that of a statement at its depth that the fix took the place of, else that
        of the nearest statement at its depth (in its own block first, above first), else
        that of the nearest shallower one above, with spaces for the rest. Raises
        IndentationViewError where the real text would not read as `fixed`."""
        if fixed == self.view:
            return self
        old_rows, new_rows = _rows(self.view), _rows(fixed)
        origins = line_origins(old_rows, new_rows)
        old_statements = self._statement_indents()
        statements, _ = logical_lines(fixed)
        fixed_lines = LineIndex(fixed)
        rows = [fixed_lines.location(line.start).row for line in statements]
        chosen: dict[int, str] = {}  # row: real indentation, for each statement row
        kept: dict[int, int] = {}  # row: the old row (0-based) it is, at the same depth
        for row, line in zip(rows, statements, strict=True):
            old = origins[row - 1]
            if old in old_statements and old_statements[old][1] == line.indent:
                chosen[row], kept[row] = old_statements[old][0], old
        taken = set(kept.values())
        for row, line in zip(rows, statements, strict=True):
            if row in chosen or not _pure(line.indent):
                continue
            replaced = _replaced(row, kept, len(old_rows))
            wanted = width(line.indent)
            for old in replaced:
                if old not in taken and old in old_statements:
                    real, view = old_statements[old]
                    if width(view) == wanted:
                        chosen[row] = real
                        taken.add(old)
                        break
        for at, (row, line) in enumerate(zip(rows, statements, strict=True)):
            if row not in chosen and _pure(line.indent):
                chosen[row] = _nearest(rows, statements, chosen, at)
        pieces: list[str] = []
        indents: dict[int, tuple[str, str]] = {}
        for row, text_row in enumerate(new_rows, start=1):
            real = chosen.get(row)
            if real is None:
                pieces.append(text_row)
                continue
            view = text_row[: len(text_row) - len(text_row.lstrip(" \t\f"))]
            pieces.append(real + text_row[len(view) :])
            if real != view:
                indents[row] = (real, view)
        restored = "".join(pieces)
        statements_again, _ = logical_lines(restored)
        if _expanded(restored, statements_again)[0] != fixed:
            raise IndentationViewError("the fixed text would not keep Python 2's indentation")
        refused_row = _refused_row(restored, statements_again)
        return Python2Indentation(restored, fixed, indents, refused_row or self.refused_row)

    def _statement_indents(self) -> dict[int, tuple[str, str]]:
        """For each row (0-based) where a statement of the view starts: its real and its view
        indentation."""
        statements, _ = logical_lines(self.view)
        lines = LineIndex(self.view)
        found = {}
        for line in statements:
            row = lines.location(line.start).row
            found[row - 1] = self.indents.get(row, (line.indent, line.indent))
        return found


def _replaced(row: int, kept: dict[int, int], old_count: int) -> range:
    """The old rows (0-based) between the nearest rows kept above and below `row`: what the
    fix took the place of there."""
    above = max((old for new, old in kept.items() if new < row), default=-1)
    below = min((old for new, old in kept.items() if new > row), default=old_count)
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
    nearest statement of the same width whose own is known, in its own block first, above it
    first; else the nearest shallower one's above, with spaces for the rest."""
    wanted = width(statements[at].indent)
    for direction in (range(at - 1, -1, -1), range(at + 1, len(statements))):
        for index in direction:
            depth = width(statements[index].indent)
            if depth < wanted:
                break  # the block's end
            real = chosen.get(rows[index])
            if real is not None and depth == wanted:
                return real
    for index in (*range(at - 1, -1, -1), *range(at + 1, len(statements))):
        real = chosen.get(rows[index])
        if real is not None and width(real) == wanted:
            return real
    for index in range(at - 1, -1, -1):
        real = chosen.get(rows[index])
        if real is not None and width(real) < wanted:
            return real + " " * (wanted - width(real))
    return " " * wanted


def _consistent(statements: list[LogicalLine]) -> bool:
    """Whether each statement's indentation is, as a string, its block's, or its enclosing
    block's with more after it: what libcst reads (and then Python 3 too)."""
    stack = [(0, "")]
    for line in statements:
        if not _pure(line.indent):
            continue
        column = width(line.indent)
        while len(stack) > 1 and column < stack[-1][0]:
            stack.pop()
        top, top_indent = stack[-1]
        if column == top and line.indent != top_indent:
            return False
        if column > top:
            if not line.indent.startswith(top_indent):
                return False
            stack.append((column, line.indent))
    return True


def _refused_row(text: str, statements: list[LogicalLine]) -> int | None:
    refused = _first_tab_error(statements)
    if refused is None:
        return None
    return LineIndex(text).location(statements[refused].start).row


def _first_tab_error(statements: list[LogicalLine]) -> int | None:
    """The index of the first statement whose indentation Python 3 refuses with TabError: one
    that a tab one column wide would put in another block. A dedent to a column no open block
    has, which Python 2 refuses too, is left to recovery."""
    stack = [(0, 0)]
    for index, line in enumerate(statements):
        if not _pure(line.indent):
            continue
        column, narrow = width(line.indent), _narrow_width(line.indent)
        while len(stack) > 1 and column < stack[-1][0]:
            stack.pop()
        top, top_narrow = stack[-1]
        if column == top:
            if narrow != top_narrow:
                return index
        elif column > top:
            if narrow <= top_narrow:
                return index
            stack.append((column, narrow))
    return None


def _expanded(text: str, statements: list[LogicalLine]) -> tuple[str, dict[int, tuple[str, str]]]:
    """The text with each statement's indentation that holds a tab or a form feed written as
    spaces, and those rows' (real, view) indentation."""
    pieces: list[str] = []
    indents: dict[int, tuple[str, str]] = {}
    cursor = 0
    row = 1
    for line in statements:
        indent = line.indent
        if ("\t" not in indent and "\f" not in indent) or not _pure(indent):
            continue
        row += _rows_between(text, cursor, line.line_start)
        spaces = " " * width(indent)
        pieces.append(text[cursor : line.line_start])
        pieces.append(spaces)
        cursor = line.start
        indents[row] = (indent, spaces)
    pieces.append(text[cursor:])
    return "".join(pieces), indents


def _rows_between(text: str, start: int, end: int) -> int:
    """How many line breaks text[start:end] holds (CRLF once)."""
    piece = text[start:end]
    return piece.count("\n") + piece.count("\r") - piece.count("\r\n")


__all__ = ["IndentationViewError", "Python2Indentation", "width"]
