"""Logical lines of source that may not parse: Python 2, a broken notebook cell, half-typed code.

Neither CPython's tokenizer nor libcst's can be trusted on such text (a backtick, `0777` or an
unclosed quote stops them), so this is a scanner of its own that knows only what decides where a
statement ends: strings, comments, brackets and backslash continuations. It never fails: a stray
closing bracket is ignored, an unclosed one runs to the end of the text.
"""

from __future__ import annotations

import re
from typing import NamedTuple

# One token at a time. Triple quotes are found first and their ends searched for separately;
# `word` never holds a quote, a bracket, a colon, `#`, `\` or a line break.
_TOKEN = re.compile(
    r"""(?P<triple>'''|\"\"\")
    |(?P<string>'(?:\\\r\n|\\.|[^\\'\r\n])*'|"(?:\\\r\n|\\.|[^\\"\r\n])*")
    |(?P<comment>\#[^\r\n]*)
    |(?P<continuation>\\(?:\r\n|\r|\n))
    |(?P<newline>\r\n|\r|\n)
    |(?P<open>[(\[{])
    |(?P<close>[)\]}])
    |(?P<colon>:)
    |(?P<word>[^'"\#\\\r\n()\[\]{}:]+)
    |(?P<other>.)""",
    re.VERBOSE | re.DOTALL,
)
_TRIPLE_END = {
    "'''": re.compile(r"(?:\\\r\n|\\.|[^\\])*?'''", re.DOTALL),
    '"""': re.compile(r'(?:\\\r\n|\\.|[^\\])*?"""', re.DOTALL),
}
_LINE_END = re.compile(r"\r\n|\r|\n|$")


class Token(NamedTuple):
    kind: str
    start: int
    end: int


class LogicalLine(NamedTuple):
    """One statement's line, as Python's tokenizer would end it: from its first token to the
    end of its last physical line (comments included, the final line break not)."""

    start: int
    end: int
    line_start: int  # where the physical line of `start` begins
    indent: str  # the whitespace before `start` on its line


def tokens(text: str, start: int = 0, end: int | None = None) -> list[Token]:
    """The scanner's tokens of text[start:end]; a string that does not close runs to `end`."""
    stop = len(text) if end is None else end
    found = []
    at = start
    while at < stop:
        found.append(_token_at(text, at, stop))
        at = found[-1].end
    return found


def _token_at(text: str, at: int, stop: int) -> Token:
    """The token at `at` (< stop); a triple-quoted string is one token, to its end or `stop`."""
    match = _TOKEN.match(text, at, stop)
    assert match is not None and match.lastgroup is not None  # `other` takes any character
    kind, end = match.lastgroup, match.end()
    if kind == "triple":
        closing = _TRIPLE_END[match.group()].match(text, end, stop)
        kind, end = "string", closing.end() if closing else stop
    return Token(kind, at, end)


def logical_lines(
    text: str, skip_line: re.Pattern[str] | None = None
) -> tuple[list[LogicalLine], list[tuple[int, int]]]:
    """The text's logical lines, and the (start, end) of the physical lines matching
    `skip_line` where a statement could start (IPython's `%magic` lines), which are not read:
    one inside brackets or a string is part of its statement."""
    lines: list[LogicalLine] = []
    skipped: list[tuple[int, int]] = []
    depth = 0
    first: int | None = None  # the current logical line's first token
    at = 0
    at_line_start = True
    while at < len(text):
        if at_line_start and skip_line is not None and first is None:
            line_end = _LINE_END.search(text, at).start()  # type: ignore[union-attr]
            if skip_line.match(text, at, line_end):
                # IPython continues a magic or shell line that ends with a backslash.
                while text[line_end - 1 : line_end] == "\\" and line_end < len(text):
                    skipped.append((at, line_end))
                    at = _LINE_END.match(text, line_end).end()  # type: ignore[union-attr]
                    line_end = _LINE_END.search(text, at).start()  # type: ignore[union-attr]
                skipped.append((at, line_end))
                at = line_end
        at_line_start = False
        if at >= len(text):
            break  # a skipped line ended the text
        kind, _, end = _token_at(text, at, len(text))
        if kind == "newline":
            at_line_start = True
            if depth == 0 and first is not None:
                lines.append(_logical_line(text, first, at))
                first = None
        elif kind == "open":
            depth += 1
        elif kind == "close":
            depth = max(depth - 1, 0)
        elif kind == "continuation":
            at_line_start = False
        significant = kind not in ("newline", "comment", "continuation", "word")
        if first is None and (significant or (kind == "word" and text[at:end].strip(" \t\f"))):
            first = at + len(text[at:end]) - len(text[at:end].lstrip(" \t\f"))
        at = end
    if first is not None:  # the text ends inside a statement (an unclosed bracket?)
        lines.append(_logical_line(text, first, max(first, len(text.rstrip()))))
    return lines, skipped


def _logical_line(text: str, start: int, end: int) -> LogicalLine:
    line_start = max(text.rfind("\n", 0, start), text.rfind("\r", 0, start)) + 1
    return LogicalLine(start, end, line_start, text[line_start:start])
