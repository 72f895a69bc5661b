"""The tree of a text after fixes, from the tree before them: only what the fixes changed is
parsed again (one line in a block, or the top-level statements around the change), so that
each round of the fix loop (see `fix_loop`) need not parse the whole text again.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import TYPE_CHECKING

import libcst as cst

from tfmemlint.reading.cst_parse import parse, rebuilt

if TYPE_CHECKING:
    from tfmemlint.checking.engine import FileContext


def reparse(before: FileContext, text: str) -> cst.Module | None:
    """libcst's tree of `text`, which is `before.text` after fixes: `before`'s tree, with only
    what the fixes changed parsed again (one line in a block, see `_reparse_line`; else the
    top-level statements around the change). None where that is not sure to give the tree a
    parse of the whole text gives: the caller then parses it all.

    Top-level statements, their leading comment lines included, parse alone as in their module,
    but for what the module's parse takes from elsewhere:
    - the indentation that blocks leave unsaid: the module's first block's, which blocks in the
      piece must share, and which stays where it was where the piece holds none;
    - the line break that line ends leave unsaid: the module's first, in the unchanged first
      statement or header;
    - whose the comment lines between two statements are, which the earlier one decides: a
      change that starts where a statement ends is taken to lie in that statement, the piece
      starts after an unchanged one (a stand-in `pass`) and runs to the end of a statement the
      change stops short of;
    - the module's header, before its first statement, which stays as it is.
    Cheap checks stand guard: the piece must leave nothing to its own header or footer.
    """
    extents = before.statement_extents()
    module = before.module
    old = before.text
    if not extents or len(extents) != len(module.body) or old == text:
        return None
    start = _common_prefix(old, text)
    suffix = _common_prefix(old[::-1], text[::-1], min(len(old), len(text)) - start)
    old_end = len(old) - suffix  # the first unchanged character after the change
    first = bisect.bisect_left(extents, start, key=lambda extent: extent[1])
    last = bisect.bisect_right(extents, old_end, key=lambda extent: extent[1])
    if first == last < len(extents):
        line = _reparse_line(before, module.body[first], text, start, old_end)
        if line is not None:
            return rebuilt(module, body=(*module.body[:first], line, *module.body[last + 1 :]))
    if 0 < first < len(extents) and start <= before.span(module.body[first])[0]:
        first -= 1  # it starts in the lines before a statement: the one above comes too
    if first == 0 or last >= len(extents) or extents[first][0] >= start:
        return None
    if not module.has_trailing_newline and last == len(extents) - 1:
        return None
    # The comment lines before the piece's first statement, and those after its last, belong
    # to whichever block above them is indented as deep: the change must start after the
    # first ones, and the last ones must all start a line's first column.
    if start <= before.span(module.body[first])[0]:
        return None
    after = before.span(module.body[last + 1])[0] if last + 1 < len(extents) else len(old)
    if any(row[:1] in (" ", "\t", "\f") for row in old[extents[last][1] : after].splitlines()):
        return None
    piece_start, piece_end = extents[first][0], extents[last][1] + len(text) - len(old)
    stand_in = "pass" + module.default_newline
    try:
        piece = parse(stand_in + text[piece_start:piece_end])
    except cst.ParserSyntaxError:
        return None
    if (
        piece.header
        or piece.footer
        or piece.default_newline != module.default_newline
        or not piece.has_trailing_newline
    ):
        return None
    # The module's indentation is its first block's: blocks the piece holds must agree with it,
    # and where the piece holds none, the first block must be where it was.
    if _any_block(piece.body[1:]):
        if piece.default_indent != module.default_indent:
            return None
    elif _any_block(module.body[first : last + 1]) and not _any_block(module.body[:first]):
        return None
    return rebuilt(module, body=(*module.body[:first], *piece.body[1:], *module.body[last + 1 :]))


def _any_block(statements: Sequence[cst.BaseStatement]) -> bool:
    """Whether any of these top-level statements opens an indented block: in any clause of a
    compound statement (blocks nested deeper lie in one)."""
    return any(_opens_a_block(statement) for statement in statements)


def _opens_a_block(node: cst.CSTNode | None) -> bool:
    if node is None:
        return False
    if isinstance(node, cst.Match):  # a `match` indents its cases
        return True
    if isinstance(getattr(node, "body", None), cst.IndentedBlock):
        return True
    clauses = [getattr(node, "orelse", None), getattr(node, "finalbody", None)]
    return any(_opens_a_block(c) for c in (*clauses, *getattr(node, "handlers", ())))


def _reparse_line(
    before: FileContext, statement: cst.CSTNode, text: str, start: int, old_end: int
) -> cst.CSTNode | None:
    """`statement`, a top-level one, as a parse of `text` gives it, where the change between
    `start` and `old_end` (offsets into `before.text`) lies within one line of simple
    statements right inside its block (a session made in a function): that line is parsed
    again alone, under a stand-in `if 1:` indented as it is. Such a line holds no block, so
    nothing in its tree depends on the module's indentation, and all it holds of its own
    indentation is relative to its block's, which the stand-in gives. None where this does
    not apply.
    """
    block = getattr(statement, "body", None)
    if not isinstance(block, cst.IndentedBlock):
        return None
    lines, old = before.lines, before.text
    # The change must start after the line's first token: its indentation may be the module's.
    around = [
        i
        for i, s in enumerate(block.body)
        if before.span(s)[0] < start and old_end <= before.span(s)[1]
    ]
    if not around:
        return None
    index = around[0]
    line = block.body[index]
    line_start, line_end = before.span(line)
    if not isinstance(line, cst.SimpleStatementLine) or line.leading_lines:
        return None
    row = lines.location(line_start).row
    piece_start = lines.starts[row - 1]
    piece_end = lines.line_end(lines.location(line_end).row)
    indent = old[piece_start:line_start]
    if indent.strip(" \t") or old[piece_end - 1 : piece_end] not in ("\n", "\r"):
        return None
    newline = before.module.default_newline
    shift = len(text) - len(old)
    try:
        piece = parse(f"if 1:{newline}{text[piece_start : piece_end + shift]}")
    except cst.ParserSyntaxError:
        return None
    stand_in = piece.body[0] if len(piece.body) == 1 else None
    if (
        piece.header
        or piece.footer
        or piece.default_newline != newline
        or not isinstance(stand_in, cst.If)
        or stand_in.orelse is not None
        or not isinstance(stand_in.body, cst.IndentedBlock)
        or stand_in.body.footer
        or not all(isinstance(s, cst.SimpleStatementLine) for s in stand_in.body.body)
    ):
        return None
    body = (*block.body[:index], *stand_in.body.body, *block.body[index + 1 :])
    return rebuilt(statement, body=rebuilt(block, body=body))


def _common_prefix(a: str, b: str, at_most: int | None = None) -> int:
    """The length of the longest common prefix, at most `at_most`; found by halving, so that
    the comparing runs in C."""
    same, limit = 0, min(len(a), len(b)) if at_most is None else at_most
    while same < limit:  # a[:same] == b[:same]; the first difference lies in a[same:limit]
        middle = (same + limit + 1) // 2
        if a[same:middle] == b[same:middle]:
            same = middle
        else:
            limit = middle - 1
    return same
