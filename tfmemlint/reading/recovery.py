"""Recovery for text that does not parse: the statements that fail are set aside as same-length
stand-ins, so that every other statement keeps its offsets, rows and columns, and the rules run
on the rest.

Statements with a Python 2 spelling that Python 3 never reads (a print statement, backticks,
`0777`) are set aside at once. Then the parsers say where they stop; the statement there is
replaced, and the text parsed again, while that makes progress and at most MAX_ROUNDS times. A
simple statement becomes `pass` (or `0`) padded with spaces; a block header keeps its block
with a neutral header of its own kind that binds the same names where it can (`except E, e:`
becomes `except():`, `def f((a, b)):` becomes `def f(a,b):`), so that its body is still read.
Every line break stays where it was; the later lines of a set-aside statement become comment
lines, which fit any indentation. Text split into units (a notebook's cells) is recovered unit
by unit, and a unit that cannot be recovered is set aside whole.

Fixes are applied to the real text, never to the stand-ins: `Recovery.allows` keeps them off
every set-aside statement's bytes, and away from its neighbours unless the safety net proves the
fix there (`safety.check_recovered`: the fixed text recovered again, each set-aside statement
back byte for byte, the rest changed only by the fix).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple, TypeVar

from tfmemlint.reading.source import LineIndex, parse_python
from tfmemlint.reading.statements import LogicalLine, logical_lines, tokens

Tree = TypeVar("Tree")

# A hopeless file costs at most this many parses of each kind.
MAX_ROUNDS = 100

_CLAUSES = ("elif", "else", "except", "finally")
_HEADER = re.compile(r"(?:async\s+)?(if|elif|while|for|with|def|class|try|except|else|finally)\b")
_NAMED = re.compile(r"(?:async\s+)?(?:def|class)\s+(\w+)")
_EXPECTED_BLOCK = re.compile(r"expected an indented block after .* on line (\d+)")
_LOST_INDENT = ("unexpected indent", "unindent does not match", "inconsistent use of tabs")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
# Python's messages for the Python 2 constructs that TF1-era code holds.
PYTHON2_MESSAGES = (
    "Missing parentheses in call to",
    "multiple exception types must be parenthesized",
    "leading zeros in decimal integer literals",
    "inconsistent use of tabs and spaces",
    "parameters cannot be parenthesized",
)
# A `print` or `exec` statement that Python 3 can never read: the word, then a string, a
# backtick, a number or a name that no operator joins to it.
_PRINT_STATEMENT = re.compile(
    r"\s*(print|exec)[ \t]+(?:['\"`0-9]|(?!(?:in|not|is|and|or|if|else|for)\b)[A-Za-z_])"
)
# Python 2 spellings that Python 3 never reads, looked for in a statement's code with its
# strings and comments taken out.
_PYTHON2_SPELLINGS = (
    (re.compile(r"`"), "backticks"),
    (re.compile(r"<>"), "the <> operator"),
    # (Not the exponent of 1e-07.)
    (
        re.compile(r"(?<![\w.])(?<![eE][+-])0[0-7]*[1-7][0-7]*[lL]?(?![\w.])"),
        "an octal literal such as 0777",
    ),
    (re.compile(r"(?<![\w.])(?:0[xX][0-9a-fA-F]+|\d+)[lL](?![\w.])"), "a long literal such as 10L"),
    (re.compile(r"\blambda\s*\("), "parenthesized lambda parameters"),
)
_UR_PREFIX = re.compile(r"(?<![\w'\"])[uU][rR]$")
_COMMA_STATEMENT = re.compile(r"\s*(raise|except)\b")
# What a fix must not write into a file that needed recovery: Python 3-only syntax.
_PYTHON3_ONLY = re.compile(
    r"(?<![\w'\"])[fF][rR]?['\"]|(?<![\w'\"])[rR][fF]['\"]|:=|\bnonlocal\b|\basync\b|\bawait\b"
    r"|->|\byield\s+from\b"
)
# The message of a notebook cell that could not be recovered statement by statement.
WHOLE_UNIT = "nothing in it could be read statement by statement"


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
    # Each set-aside statement's span, widened to the statements just before and after it.
    neighbourhoods: tuple[tuple[int, int], ...]

    def allows(self, edits: Iterable[tuple[int, int, str]], beside: bool = False) -> bool:
        """Whether a fix with these (start, end, content) edits leaves every set-aside
        statement's bytes alone, and (unless `beside`) the statements just before and after
        it too, and writes nothing Python 2 could not read. A fix `beside` one still needs the
        safety net's proof (`safety.check_recovered`)."""
        for start, end, content in edits:
            if not python2_reads(content):
                return False
            if beside:
                if any(_overlaps(start, end, s.start, s.end) for s in self.set_aside):
                    return False
            elif any(start <= last and end >= first for first, last in self.neighbourhoods):
                return False
        return True


def python2_reads(content: str) -> bool:
    """Whether text a fix writes holds nothing that only Python 3 reads (an f-string, `:=`,
    `nonlocal`, ...), so that a Python 2 file stays Python 2."""
    return _PYTHON3_ONLY.search(content) is None


def _overlaps(start: int, end: int, first: int, last: int) -> bool:
    """Whether the edit [start, end) changes a byte of [first, last): an insertion where the
    span starts or ends does not."""
    if start == end:
        return first < start < last
    return start < last and end > first


class _Unit(NamedTuple):
    start: int
    end: int
    lines: list[LogicalLine]  # in text offsets
    starts: list[int]  # each line's `start`, for bisection
    line_starts: list[int]  # each line's `line_start`


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
    inside: set[int] = set()  # statements within a set-aside span that does not start there
    lines = LineIndex(text)
    for index, unit in enumerate(units):
        if not _recover_with_python(text, chars, unit, index, set_aside, inside, lines):
            if separator is None:
                raise RecoveryError("no statement left to set aside")
            _blank(chars, unit.start, unit.end, comment_first=True)
            set_aside = {k: v for k, v in set_aside.items() if not unit.start <= k < unit.end}
            whole = text[unit.start : unit.end]
            python2 = _python2_spelling(text, unit.start, unit.end) is not None
            set_aside[unit.start] = SetAside(
                unit.start, unit.end, whole, WHOLE_UNIT, python2, index
            )
    for _ in range(MAX_ROUNDS):
        current = "".join(chars)
        try:
            tree = parse(current)
        except syntax_error as error:
            row = min(getattr(error, "raw_line", 1), len(lines.starts))
            offset = min(lines.offset(row, 0) + getattr(error, "raw_column", 0), len(text))
            message = str(getattr(error, "message", error)).splitlines()[0]
            index = max(bisect.bisect_right([u.start for u in units], offset) - 1, 0)
            unit = units[index]
            if not _set_aside(text, chars, unit, index, offset, message, set_aside, inside):
                raise RecoveryError(f"libcst still fails: {message}") from None
            continue
        # (A final lone CR libcst drops moves no offset: the engine's check allows it too.)
        if getattr(tree, "code", current).rstrip("\r\n") != current.rstrip("\r\n"):
            raise RecoveryError("libcst does not give the recovered text back byte for byte")
        ordered = tuple(sorted(set_aside.values()))
        return Recovery(current, ordered, _neighbourhoods(ordered, units)), tree
    raise RecoveryError(f"still does not parse after {MAX_ROUNDS} rounds")


def _units(text: str, separator: str | None) -> list[_Unit]:
    bounds = [(0, len(text))]
    if separator is not None:
        found = list(re.finditer(rf"^{re.escape(separator)}\r?$", text, re.M))
        starts = [0] + [m.end() + 1 for m in found]
        ends = [m.start() for m in found] + [len(text)]
        bounds = list(zip(starts, ends, strict=True))
    units = []
    for start, end in bounds:
        found, _ = logical_lines(text[start:end])
        shifted = [
            LogicalLine(ll.start + start, ll.end + start, ll.line_start + start, ll.indent)
            for ll in found
        ]
        units.append(
            _Unit(
                start,
                end,
                shifted,
                [ll.start for ll in shifted],
                [ll.line_start for ll in shifted],
            )
        )
    return units


def _recover_with_python(
    text: str,
    chars: list[str],
    unit: _Unit,
    index: int,
    set_aside: dict[int, SetAside],
    inside: set[int],
    lines: LineIndex,
) -> bool:
    """CPython's parse of the unit alone (a tenth of libcst's) until it passes: False when it
    cannot be made to. A unit that parses is left as it is."""
    base_row = lines.location(unit.start).row
    spelled = False
    for _ in range(MAX_ROUNDS):
        try:
            parse_python("".join(chars[unit.start : unit.end]))
            return True
        except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
            row = getattr(error, "lineno", None) or 1
            column = getattr(error, "offset", None) or 1
            message = getattr(error, "msg", None) or str(error) or "invalid syntax"
        if not spelled:
            # Python 2 spellings are found at once: a parse for each would cost a file each.
            spelled = True
            if _set_aside_python2(text, chars, unit, index, set_aside, inside):
                continue
        expected = _EXPECTED_BLOCK.search(message)
        if expected:  # the header whose block is missing, not the line after it
            row, column = int(expected.group(1)), 1
        row = min(base_row + row - 1, len(lines.starts))
        offset = min(lines.offset(row, 0) + max(column - 1, 0), unit.end)
        headless = bool(expected)
        if not _set_aside(text, chars, unit, index, offset, message, set_aside, inside, headless):
            return False
    return False


def _set_aside_python2(
    text: str,
    chars: list[str],
    unit: _Unit,
    index: int,
    set_aside: dict[int, SetAside],
    inside: set[int],
) -> bool:
    """Set aside every statement of the unit with a Python 2 spelling: whether any was."""
    found = False
    for line in unit.lines:
        if line.start not in set_aside and line.start not in inside:
            spelling = _python2_spelling(text, line.start, line.end)
            if spelling is not None:
                found |= _set_aside(
                    text, chars, unit, index, line.start, spelling, set_aside, inside
                )
    return found


def _set_aside(
    text: str,
    chars: list[str],
    unit: _Unit,
    index: int,
    offset: int,
    message: str,
    set_aside: dict[int, SetAside],
    inside: set[int],
    headless: bool = False,
) -> bool:
    """Replace the statement at `offset` with a stand-in: False when that makes no progress
    (or the statement is already inside a set-aside span)."""
    if not unit.lines:
        return False
    at = max(bisect.bisect_right(unit.line_starts, offset) - 1, 0)
    line = unit.lines[at]
    if line.start in inside:
        return False
    previous = set_aside.get(line.start) or set_aside.get(line.line_start)
    if any(message.startswith(lost) for lost in _LOST_INDENT):
        # Wrong indentation: the statement and those indented like it become comment lines,
        # which no indentation can upset.
        end = at + 1
        while end < len(unit.lines) and len(unit.lines[end].indent) >= len(line.indent):
            end += 1
        if previous is not None and previous.end >= unit.lines[end - 1].end:
            return False
        _blank(chars, line.line_start, unit.lines[end - 1].end, comment_first=True)
        span = (line.line_start, unit.lines[end - 1].end)
    else:
        found = _stand_in(text, chars, unit, at, previous, headless)
        if found is None:
            return False
        at, last = found
        span = (unit.lines[at].start, unit.lines[last].end)
        end = last + 1
    python2 = (
        any(marker in message for marker in PYTHON2_MESSAGES)
        or _python2_spelling(text, line.start, line.end) is not None
        or _python2_spelling(text, span[0], span[1]) is not None
    )
    for covered in unit.lines[at:end]:
        set_aside.pop(covered.start, None)
        set_aside.pop(covered.line_start, None)
    inside.update(covered.start for covered in unit.lines[at + 1 : end])
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
    """Write the stand-in for unit.lines[at]; the indexes of the first and last lines it
    covers, or None when there is nothing new to try: a header that was already stood in goes
    with its whole block (with its decorators, and the clauses that follow it), then nothing
    more."""
    line = unit.lines[at]
    header = None if headless else _HEADER.match(text, line.start, line.end)
    if previous is None and header is not None:
        colon = _header_colon(text, line)
        if colon is not None and _write_header(text, chars, line, header, colon):
            return at, at
    if header is not None and not headless and header.group(1) in _CLAUSES:
        return None  # `except` and the rest cannot go without their `try`
    end = at + 1
    if header is not None and header.group(1) in ("def", "class"):
        while at > 0 and text.startswith("@", unit.lines[at - 1].start):
            if unit.lines[at - 1].indent != line.indent:
                break
            at -= 1
    if header is not None:  # the header, its block, and the clauses after it with theirs
        while end < len(unit.lines):
            following = unit.lines[end]
            deeper = len(following.indent) > len(line.indent)
            clause = following.indent == line.indent and _is_clause(text, following)
            if not deeper and not clause:
                break
            end += 1
    first, last = unit.lines[at], unit.lines[end - 1]
    if previous is not None and previous.end >= last.end:
        return None
    _blank(chars, first.start, last.end)
    _write_statement(chars, first.start, last.end, text)
    return at, end - 1


def _is_clause(text: str, line: LogicalLine) -> bool:
    header = _HEADER.match(text, line.start, line.end)
    return header is not None and header.group(1) in _CLAUSES


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


def _neutral_header(text: str, line: LogicalLine, header: re.Match[str], colon: int) -> str:
    """A header of the same kind that Python 3 reads, keeping the names it binds where it can:
    the function's parameters (`def f((a, b)):` becomes `def f(a,b):`), a loop's target."""
    keyword = header.group(1)
    if not text[header.end() : colon].strip():
        return text[line.start : colon + 1]  # `else:`, a bare `except:`: already fine
    if keyword in ("def", "class"):
        named = _NAMED.match(text, line.start, colon)
        if named is None:
            return ""
        if keyword == "class":
            return f"class {named.group(1)}:"
        return f"def {named.group(1)}({','.join(_parameter_names(text, named.end(), colon))}):"
    if keyword == "for":
        target = re.match(r"for\s+([\w\s,()\[\]]+?)\s+in\b", text[line.start : colon])
        if target and "\n" not in target.group(1) and "\r" not in target.group(1):
            return f"for {' '.join(target.group(1).split())} in():"
        return "for()in():"
    return {
        "if": "if 1:",
        "elif": "elif 1:",
        "while": "while 1:",
        "with": "with 1:",
        "except": "except():",  # `except E, e:` loses `e`: Python 3 needs more room for it
    }[keyword]


def _parameter_names(text: str, start: int, end: int) -> list[str]:
    """The names a parameter list binds, Python 2's tuple parameters included: each name
    that follows `(`, `,` or `*` in the list or in a parenthesized parameter, never one in a
    default value."""
    names: list[str] = []
    groups: list[bool] = []  # for each open bracket: is it the list or a tuple parameter?
    default = False  # after `=`, until the next comma of the list
    previous = ""
    for token in tokens(text, start, end):
        piece = text[token.start : token.end]
        if token.kind in ("newline", "continuation", "comment"):
            continue
        if token.kind == "open":
            parameter = not default and (not groups or (groups[-1] and previous in "(,"))
            groups.append(piece == "(" and parameter)
            previous = "("
            continue
        if token.kind == "close":
            if groups:
                groups.pop()
            previous = ")"
            continue
        if token.kind != "word" or not groups:
            previous = piece[-1:] if piece else previous
            continue
        for word in re.finditer(r"\w+|\S", piece):
            value = word.group()
            if groups[-1] and value == "=":
                default = True
            elif groups[-1] and value == ",":
                default = False
            binds = groups[-1] and not default and previous in ("(", ",", "*")
            if binds and value.isidentifier() and value not in names:
                names.append(value)
            previous = value
    return names


def _write_header(
    text: str, chars: list[str], line: LogicalLine, header: re.Match[str], colon: int
) -> bool:
    stand_in = _neutral_header(text, line, header, colon)
    first_break = _LINE_BREAK.search(text, line.start, colon)
    room = (first_break.start() if first_break else colon + 1) - line.start
    if not stand_in or len(stand_in) > room:
        # Without its parameters' names a body would resolve them elsewhere: the whole
        # function is set aside instead.
        return False
    body = [t for t in tokens(text, colon + 1, line.end) if t.kind not in ("comment", "newline")]
    body = [t for t in body if t.kind != "word" or text[t.start : t.end].strip()]
    if body and first_break is not None:
        # A body after a header of several lines would land in a comment line: it goes on the
        # first line, after the stand-in header.
        stand_in += " pass"
        if len(stand_in) > room:
            return False
    _blank(chars, line.start, line.end)
    chars[line.start : line.start + len(stand_in)] = stand_in
    if body and first_break is None:  # a body on the header's line: `if x <> y: z = 1`
        _write_statement(chars, body[0].start, line.end, text)
    return True


def _write_statement(chars: list[str], start: int, end: int, text: str) -> None:
    """`pass` (or `0` where `pass` does not fit on the line) at `start`."""
    line_end = _LINE_BREAK.search(text, start, end)
    room = (line_end.start() if line_end else end) - start
    word = "pass" if room >= 4 else "0"
    chars[start : start + len(word)] = word


def _blank(chars: list[str], start: int, end: int, comment_first: bool = False) -> None:
    """Spaces over text[start:end], line breaks kept, and a `#` opening every line after the
    first (and the first too, with `comment_first`): a line of spaces alone at the end of a
    block is one libcst does not give back, and a comment line fits any indentation."""
    line_start = comment_first
    for i in range(start, end):
        if chars[i] in "\r\n":
            line_start = True
            continue
        chars[i] = "#" if line_start else " "
        line_start = False


def _python2_spelling(text: str, start: int, end: int) -> str | None:
    """What in text[start:end] is Python 2 that Python 3 never reads, if anything."""
    pieces: list[str] = []
    for token in tokens(text, start, end):
        if token.kind == "string":
            if pieces and _UR_PREFIX.search(pieces[-1]):
                return "a ur'' string"
            pieces.append('""')
        elif token.kind != "comment":
            pieces.append(text[token.start : token.end])
    code = "".join(pieces)
    statement = _PRINT_STATEMENT.match(code)
    if statement:
        return f"Missing parentheses in call to '{statement.group(1)}'"
    for pattern, what in _PYTHON2_SPELLINGS:
        if pattern.search(code):
            return what
    comma = _COMMA_STATEMENT.match(code)
    if comma and _comma_outside_brackets(code, comma.end()):
        return "raise E, value" if comma.group(1) == "raise" else "except E, name"
    if re.match(r"\s*(?:async\s+)?def\b", code) and _tuple_parameter(code):
        return "tuple parameters"
    return None


def _comma_outside_brackets(code: str, start: int) -> bool:
    """A comma before the statement's first colon, both outside brackets."""
    depth = 0
    for char in code[start:]:
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif depth == 0 and char in ":;":
            return False
        elif depth == 0 and char == ",":
            return True
    return False


def _tuple_parameter(code: str) -> bool:
    """A parenthesized parameter, `def f(a, (b, c)):`, as opposed to a default's brackets."""
    depth = 0
    previous = ""
    for char in code:
        if char.isspace():
            continue
        if char == "(":
            if depth == 1 and previous in ("(", ","):
                return True
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return False
        previous = char
    return False


def _neighbourhoods(
    set_aside: Sequence[SetAside], units: Sequence[_Unit]
) -> tuple[tuple[int, int], ...]:
    """Each set-aside statement's span, widened to the statements just before and after it."""
    zones = []
    for statement in set_aside:
        unit = units[statement.unit]
        first = bisect.bisect_left(unit.starts, statement.start)
        last = bisect.bisect_left(unit.starts, statement.end) - 1
        zone_start = unit.lines[first - 1].start if first > 0 else statement.start
        zone_end = unit.lines[last + 1].end if 0 <= last + 1 < len(unit.lines) else statement.end
        zones.append((min(zone_start, statement.start), max(zone_end, statement.end)))
    return tuple(zones)


__all__ = [
    "MAX_ROUNDS",
    "PYTHON2_MESSAGES",
    "WHOLE_UNIT",
    "Recovery",
    "RecoveryError",
    "SetAside",
    "python2_reads",
    "recover",
]
