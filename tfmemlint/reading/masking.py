"""Large literal tables are masked before libcst sees a file: libcst needs seconds for a 1.6 MB
table that no rule can ever look inside, while CPython's own parser finds it in a fraction of that.

A mask keeps the text's length and every line break where it was, so every offset, row and column
the rules compute is the same as in the original. The table `[(1, "a"), ...]` becomes a list that
holds one triple-quoted string of spaces and line breaks, and in it a marker unique to the file.
The marker names each masked region, so that after fixing, each region is found again, checked
to be intact, and restored; anything unexpected (a region moved, copied or cut) makes the caller
start over on the unmasked text.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass

from tfmemlint.reading.digest import digest
from tfmemlint.reading.source import LineIndex, parse_python

# Below this size a plain libcst parse costs less than looking for tables first.
MIN_TEXT_CHARS = 64 * 1024
# A value smaller than this is not worth masking.
MIN_REGION_CHARS = 2048

_LITERAL_NODES = (ast.Constant, ast.List, ast.Tuple, ast.Set, ast.Dict, ast.UnaryOp, ast.Load)
_OPENERS = {"[": "]", "(": ")", "{": "}"}
_NOT_A_LINE_BREAK = re.compile(r"[^\r\n]")


class MaskError(Exception):
    """The masked regions did not come through fixing intact; start over without a mask."""


@dataclass(frozen=True)
class Region:
    start: int
    end: int
    stand_in: str
    marker: str


@dataclass(frozen=True)
class Masked:
    text: str
    regions: tuple[Region, ...]

    def unmask(self, fixed: str, original: str) -> str:
        """`fixed` (the masked text after fixes) with every region's original text back."""
        pieces = []
        cursor = 0
        for region in self.regions:
            at = fixed.find(region.marker, cursor)
            if at < 0 or fixed.find(region.marker, at + 1) >= 0:
                raise MaskError("a masked region was cut or copied")
            start = at - region.stand_in.index(region.marker)
            end = start + len(region.stand_in)
            if start < cursor or fixed[start:end] != region.stand_in:
                raise MaskError("a masked region was changed")
            pieces.append(fixed[cursor:start])
            pieces.append(original[region.start : region.end])
            cursor = end
        pieces.append(fixed[cursor:])
        return "".join(pieces)


def mask(text: str, forbidden: Callable[[str], bool] | None = None) -> Masked:
    """The text with its large pure-literal values masked; unchanged when it has none.

    A value is masked only if it is a bracketed list, tuple, set or dict of constants, spans at
    least MIN_REGION_CHARS, and (when given) is not `forbidden`, e.g. for holding a trigger word.
    """
    if len(text) < MIN_TEXT_CHARS:
        return Masked(text, ())
    try:
        tree = parse_python(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return Masked(text, ())  # libcst gives the diagnostic
    token = digest(text.encode("utf-8", "surrogatepass"), 4)
    lines = LineIndex(text)
    pieces: list[str] = []
    regions: list[Region] = []
    cursor = 0
    for value in _large_literals(tree):
        start = lines.utf8_offset(value.lineno, value.col_offset)
        end = lines.utf8_offset(value.end_lineno or value.lineno, value.end_col_offset or 0)
        original = text[start:end]
        if _OPENERS.get(original[:1]) != original[-1:] or len(original) < MIN_REGION_CHARS:
            continue  # an unbracketed tuple, or one shorter than it looked in lines
        if forbidden is not None and forbidden(original):
            continue
        marker = f"tfmemlint-mask-{len(regions)}-{token}"
        if marker in text:
            continue
        stand_in = _stand_in(original, marker)
        if stand_in is None:
            continue
        pieces.append(text[cursor:start])
        pieces.append(stand_in)
        cursor = end
        regions.append(Region(start, end, stand_in, marker))
    if not regions:
        return Masked(text, ())
    pieces.append(text[cursor:])
    return Masked("".join(pieces), tuple(regions))


def _large_literals(tree: ast.Module) -> list[ast.expr]:
    """Values of assignments and expression statements, in source order, that are pure
    literals spanning many lines. Only statements are walked, never expressions, so this is cheap
    until a candidate is found."""
    found = []
    statements: list[ast.stmt] = list(reversed(tree.body))
    while statements:
        statement = statements.pop()
        if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.Expr)):
            value = statement.value
            if (
                value is not None
                and isinstance(value, (ast.List, ast.Tuple, ast.Set, ast.Dict))
                and (value.end_lineno or 0) - value.lineno >= 8
                and _is_pure_literal(value)
            ):
                found.append(value)
            continue
        for field in ("body", "orelse", "finalbody"):
            block = getattr(statement, field, None)
            if isinstance(block, list):
                statements.extend(reversed(block))
        for handler in getattr(statement, "handlers", ()):
            statements.extend(reversed(handler.body))
    return found


def _is_pure_literal(value: ast.expr) -> bool:
    pending: list[ast.AST | None] = [value]
    while pending:
        node = pending.pop()
        if node is None:
            continue  # a `**mapping` key in a dict
        if type(node) not in _LITERAL_NODES:
            return False
        if isinstance(node, ast.Dict):
            pending.extend(node.keys)
            pending.extend(node.values)
        elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            pending.extend(node.elts)
        elif isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, (ast.USub, ast.UAdd)):
                return False
            pending.append(node.operand)
    return True


def _stand_in(original: str, marker: str) -> str | None:
    """The bracket pair kept, one triple-quoted string inside it, and every line break in place.

    The string opens on the first line with room for its quotes, so that few blank lines (each
    one a node for libcst) come before it; the marker goes on the first line inside it with room.
    """
    inner = _NOT_A_LINE_BREAK.sub(" ", original[1:-1])
    segments = [(m.start(), m.end()) for m in re.finditer(r"[^\r\n]+", inner)]
    opening = next((s for s in segments if s[1] - s[0] >= 3), None)
    closing = next((s for s in reversed(segments) if s[1] - s[0] >= 3), None)
    if opening is None or closing is None:
        return None
    open_at, close_at = opening[0], closing[1] - 3
    marker_at = next(
        (
            max(start, open_at + 3)
            for start, end in segments
            if end > open_at and end - max(start, open_at + 3) >= len(marker)
        ),
        None,
    )
    if marker_at is None or marker_at + len(marker) > close_at:
        return None  # no room for the marker inside the string
    body = (
        inner[:open_at]
        + '"""'
        + inner[open_at + 3 : marker_at]
        + marker
        + inner[marker_at + len(marker) : close_at]
        + '"""'
        + inner[close_at + 3 :]
    )
    return original[0] + body + original[-1]
