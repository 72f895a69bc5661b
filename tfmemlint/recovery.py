"""Recovery for text that does not parse: the statements that fail are set aside as same-length
stand-ins, so that every other statement keeps its offsets, rows and columns, and the rules run
on the rest.

The parsers say where they stopped; the statement there is replaced, and the text parsed again,
while that makes progress and at most MAX_ROUNDS times. A simple statement becomes `pass` (or
`0`) padded with spaces; a block header keeps its block with a neutral header of its own kind
(`except E, e:` becomes `except():`), so that its body is still read; every line break stays
where it was. Text split into units (a notebook's cells) is recovered unit by unit, and a unit
that cannot be recovered is set aside whole.

Fixes are applied to the real text, never to the stand-ins: `Recovery.allows` keeps them away
from every set-aside statement and its neighbours, and `check_fixed` proves afterwards that each
set-aside statement came back byte for byte.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple, TypeVar

from tfmemlint.source import LineIndex, parse_python
from tfmemlint.statements import LogicalLine, logical_lines, tokens

Tree = TypeVar("Tree")

# A hopeless file costs at most this many parses of each kind.
MAX_ROUNDS = 100

_CLAUSES = ("elif", "else", "except", "finally")
_HEADER = re.compile(r"(?:async\s+)?(if|elif|while|for|with|def|class|try|except|else|finally)\b")
_NAMED = re.compile(r"(?:async\s+)?(?:def|class)\s+(\w+)")
_EXPECTED_BLOCK = re.compile(r"expected an indented block after .* on line (\d+)")
_LOST_INDENT = ("unexpected indent", "unindent does not match", "inconsistent use of tabs")
# Python's messages for the Python 2 constructs that TF1-era code holds.
PYTHON2_MESSAGES = (
    "Missing parentheses in call to",
    "multiple exception types must be parenthesized",
    "leading zeros in decimal integer literals",
    "inconsistent use of tabs and spaces",
)
# Python 2 spellings, looked for in a set-aside statement's code with its strings and comments
# taken out (a `ur` prefix is looked for before its string).
_PYTHON2_CODE = re.compile(
    r"`|<>|^\s*(?:print|exec)\b\s*[^\s(=.,;)\]}]|^\s*raise\b[^,]+,|^\s*except\b[^:]*,[^:]*:"
    r"|\b0[0-7]*[1-7][0-7]*[lL]?\b|\b\d+[lL]\b|\bdef\s+\w+\s*\(\s*\(|\blambda\s*\("
)
# A `print` or `exec` statement that Python 3 can never read: the word, then a string, a
# backtick, a number or a name that no operator joins to it.
_PRINT_STATEMENT = re.compile(
    r"(print|exec)[ \t]+(?:['\"`0-9]|(?!(?:in|not|is|and|or|if|else|for)\b)[A-Za-z_])"
)
_UR_PREFIX = re.compile(r"(?<![\w'\"])[uU][rR]$")
# What a fix must not write into a file that needed recovery: Python 3-only syntax.
_PYTHON3_ONLY = re.compile(
    r"(?<![\w'\"])[fF][rR]?['\"]|(?<![\w'\"])[rR][fF]['\"]|:=|\bnonlocal\b|\basync\b|\bawait\b"
    r"|->|\byield\s+from\b"
)


class RecoveryError(Exception):
    """The text could not be recovered within MAX_ROUNDS, or not at all."""


class SetAside(NamedTuple):
    start: int  # the statement's span in the text
    end: int
    source: str  # its text, as it was
    message: str  # what the parser said there
    python2: bool
    unit: int  # 0-based: which unit (notebook cell) it is in


class Recovery(NamedTuple):
    text: str  # the same length and line breaks as the original, stand-ins in place
    set_aside: tuple[SetAside, ...]  # in text order
    guarded: tuple[tuple[int, int], ...]  # spans no edit may touch

    def allows(self, edits: Iterable[tuple[int, int, str]]) -> bool:
        """Whether a fix with these (start, end, content) edits stays clear of every set-aside
        statement and the statements just before and after it, and writes nothing Python 2
        could not read."""
        for start, end, content in edits:
            if _PYTHON3_ONLY.search(content):
                return False
            if any(
                start <= zone_end and end >= zone_start for zone_start, zone_end in self.guarded
            ):
                return False
        return True


class _Unit(NamedTuple):
    start: int
    end: int
    lines: list[LogicalLine]  # in text offsets


def recover(
    text: str,
    parse: Callable[[str], Tree],
    syntax_error: type[Exception],
    separator: str | None = None,
) -> tuple[Recovery, Tree]:
    """Set aside what fails to parse until CPython's parser, then `parse` (libcst's), take the
    rest.

    `syntax_error` is the exception `parse` raises, with libcst's `raw_line` and `raw_column`.
    With a `separator`, the lines equal to it split the text into units, each parsed on its
    own by CPython. Raises RecoveryError when nothing more can be set aside and the text still
    does not parse.
    """
    units = _units(text, separator)
    chars = list(text)
    set_aside: dict[int, SetAside] = {}
    lines = LineIndex(text)
    for index, unit in enumerate(units):
        for line in unit.lines:
            statement = _PRINT_STATEMENT.match(text, line.start, line.end)
            if statement:  # found at once: one parse for each would cost a file's length each
                message = f"Missing parentheses in call to '{statement.group(1)}'"
                _set_aside(text, chars, unit, index, line.start, message, set_aside)
        if not _recover_with_python(text, chars, unit, index, set_aside, lines):
            if separator is None:
                raise RecoveryError("no statement left to set aside")
            _blank(chars, unit.start, unit.end)
            set_aside = {k: v for k, v in set_aside.items() if not unit.start <= k < unit.end}
            message = "the cell cannot be read, even statement by statement"
            whole = text[unit.start : unit.end]
            set_aside[unit.start] = SetAside(unit.start, unit.end, whole, message, False, index)
    for _ in range(MAX_ROUNDS):
        current = "".join(chars)
        try:
            tree = parse(current)
        except syntax_error as error:
            row = min(getattr(error, "raw_line", 1), len(lines.starts))
            offset = min(lines.offset(row, 0) + getattr(error, "raw_column", 0), len(text))
            message = str(getattr(error, "message", error)).splitlines()[0]
            index = max(bisect.bisect_right([u.start for u in units], offset) - 1, 0)
            if not _set_aside(text, chars, units[index], index, offset, message, set_aside):
                raise RecoveryError(f"libcst still fails: {message}") from None
            continue
        ordered = tuple(sorted(set_aside.values()))
        return Recovery(current, ordered, _guarded(ordered, units)), tree
    raise RecoveryError(f"still does not parse after {MAX_ROUNDS} rounds")


def _units(text: str, separator: str | None) -> list[_Unit]:
    bounds = [(0, len(text))]
    if separator is not None:
        pattern = re.compile(rf"^{re.escape(separator)}\r?$", re.M)
        starts = [0] + [m.end() + 1 for m in pattern.finditer(text)]
        ends = [m.start() for m in pattern.finditer(text)] + [len(text)]
        bounds = list(zip(starts, ends, strict=True))
    units = []
    for start, end in bounds:
        found, _ = logical_lines(text[start:end])
        shifted = [
            LogicalLine(ll.start + start, ll.end + start, ll.line_start + start, ll.indent)
            for ll in found
        ]
        units.append(_Unit(start, end, shifted))
    return units


def _recover_with_python(
    text: str,
    chars: list[str],
    unit: _Unit,
    index: int,
    set_aside: dict[int, SetAside],
    lines: LineIndex,
) -> bool:
    """CPython's parse of the unit alone (a tenth of libcst's) until it passes: False when it
    cannot be made to."""
    base_row = lines.location(unit.start).row
    for _ in range(MAX_ROUNDS):
        try:
            parse_python("".join(chars[unit.start : unit.end]))
            return True
        except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
            row = getattr(error, "lineno", None) or 1
            column = getattr(error, "offset", None) or 1
            message = getattr(error, "msg", None) or str(error) or "invalid syntax"
        expected = _EXPECTED_BLOCK.search(message)
        if expected:  # the header whose block is missing, not the line after it
            row, column = int(expected.group(1)), 1
        row = min(base_row + row - 1, len(lines.starts))
        offset = min(lines.offset(row, 0) + max(column - 1, 0), unit.end)
        if not _set_aside(text, chars, unit, index, offset, message, set_aside, bool(expected)):
            return False
    return False


def _set_aside(
    text: str,
    chars: list[str],
    unit: _Unit,
    index: int,
    offset: int,
    message: str,
    set_aside: dict[int, SetAside],
    headless: bool = False,
) -> bool:
    """Replace the statement at `offset` with a stand-in: False when that makes no progress."""
    if not unit.lines:
        return False
    at = max(bisect.bisect_right([ll.line_start for ll in unit.lines], offset) - 1, 0)
    line = unit.lines[at]
    previous = set_aside.get(line.start)
    if any(message.startswith(lost) for lost in _LOST_INDENT):
        # Wrong indentation: the statement and those indented like it go, as blank lines.
        end = at + 1
        while end < len(unit.lines) and len(unit.lines[end].indent) >= len(line.indent):
            end += 1
        if previous is not None and previous.end >= unit.lines[end - 1].end:
            return False
        _blank(chars, line.line_start, unit.lines[end - 1].end)
        span = (line.start, unit.lines[end - 1].end)
    else:
        span = _stand_in(text, chars, unit, at, previous, headless)
        if span is None:
            return False
    python2 = _is_python2(text, span[0], span[1], message)
    for key in [k for k in set_aside if span[0] <= k < span[1]]:
        del set_aside[key]
    source = text[span[0] : span[1]]
    set_aside[span[0]] = SetAside(span[0], span[1], source, message, python2, index)
    return True


def _stand_in(
    text: str,
    chars: list[str],
    unit: _Unit,
    at: int,
    previous: SetAside | None,
    headless: bool,
) -> tuple[int, int] | None:
    """Write the stand-in for unit.lines[at]; its span, or None when there is nothing new to
    try: a header that was already stood in goes with its whole block, then nothing more."""
    line = unit.lines[at]
    header = None if headless else _HEADER.match(text, line.start, line.end)
    if previous is None and header is not None:
        colon = _header_colon(text, line)
        written = colon is not None and _write_header(text, chars, line, header.group(1), colon)
        if written:
            return line.start, line.end
    if header is not None and not headless and header.group(1) in _CLAUSES:
        return None  # `except` and the rest cannot go without their `try`
    end = at + 1
    if header is not None:  # the header and its whole block
        while end < len(unit.lines) and len(unit.lines[end].indent) > len(line.indent):
            end += 1
    last = unit.lines[end - 1]
    if previous is not None and previous.end >= last.end:
        return None
    _blank(chars, line.start, last.end)
    _write_statement(chars, line.start, last.end, text)
    return line.start, last.end


def _header_colon(text: str, line: LogicalLine) -> int | None:
    """The offset of the colon that ends the header: the first one outside brackets that no
    `lambda` before it claims."""
    depth = lambdas = 0
    for token in tokens(text, line.start, line.end):
        if token.kind == "open":
            depth += 1
        elif token.kind == "close":
            depth = max(depth - 1, 0)
        elif depth == 0 and token.kind == "word":
            lambdas += len(re.findall(r"\blambda\b", text[token.start : token.end]))
        elif depth == 0 and token.kind == "colon":
            if text[token.end : token.end + 1] == "=":
                continue  # `:=`
            if lambdas:
                lambdas -= 1
                continue
            return token.start
    return None


def _write_header(text: str, chars: list[str], line: LogicalLine, keyword: str, colon: int) -> bool:
    if keyword in ("def", "class"):
        named = _NAMED.match(text, line.start, colon)
        if named is None:
            return False
        header = f"def {named.group(1)}():" if keyword == "def" else f"class {named.group(1)}:"
    else:
        header = {
            "if": "if 1:",
            "elif": "elif 1:",
            "while": "while 1:",
            "for": "for()in():",
            "with": "with 1:",
            "except": "except():",
        }.get(keyword, f"{keyword}:")
    if len(header) > colon + 1 - line.start or "\n" in text[line.start : colon]:
        return False
    body = [t for t in tokens(text, colon + 1, line.end) if t.kind not in ("comment", "newline")]
    body = [t for t in body if t.kind != "word" or text[t.start : t.end].strip()]
    _blank(chars, line.start, line.end)
    chars[line.start : line.start + len(header)] = header
    if body:  # a body on the header's line: `if x <> y: z = 1`
        _write_statement(chars, body[0].start, line.end, text)
    return True


def _write_statement(chars: list[str], start: int, end: int, text: str) -> None:
    """`pass` (or `0` where `pass` does not fit on the line) at `start`; the rest is blank."""
    line_end = re.compile(r"\r|\n").search(text, start, end)
    room = (line_end.start() if line_end else end) - start
    word = "pass" if room >= 4 else "0"
    chars[start : start + len(word)] = word


def _blank(chars: list[str], start: int, end: int) -> None:
    for i in range(start, end):
        if chars[i] not in "\r\n":
            chars[i] = " "


def _is_python2(text: str, start: int, end: int, message: str) -> bool:
    if any(marker in message for marker in PYTHON2_MESSAGES):
        return True
    code = []
    for token in tokens(text, start, end):
        piece = text[token.start : token.end]
        if token.kind == "string":
            if _UR_PREFIX.search("".join(code[-1:])):
                return True
            code.append('""')
        elif token.kind != "comment":
            code.append(piece)
    return bool(_PYTHON2_CODE.search("".join(code)))


def _guarded(set_aside: Sequence[SetAside], units: Sequence[_Unit]) -> tuple[tuple[int, int], ...]:
    """Each set-aside statement's span, widened to the statements just before and after it."""
    zones = []
    for statement in set_aside:
        lines = units[statement.unit].lines
        starts = [ll.start for ll in lines]
        first = bisect.bisect_left(starts, statement.start)
        last = bisect.bisect_left(starts, statement.end) - 1
        zone_start = lines[first - 1].start if first > 0 else statement.start
        zone_end = lines[last + 1].end if 0 <= last + 1 < len(lines) else statement.end
        zones.append((min(zone_start, statement.start), max(zone_end, statement.end)))
    return tuple(zones)


__all__ = [
    "MAX_ROUNDS",
    "PYTHON2_MESSAGES",
    "Recovery",
    "RecoveryError",
    "SetAside",
    "recover",
]
