"""Suppression comments: `# tfmemlint: ignore`, `# tfmemlint: ignore[TFM101, TFM102]`, `# noqa`.

A comment silences a finding when it sits on the finding's first or last line, so it can follow a
one-line call or the closing bracket of a long one. Bare `# noqa` silences everything, as flake8
and ruff do.
"""

from __future__ import annotations

import io
import re
import tokenize

from tfmemlint.model import Finding
from tfmemlint.reading.source import LineIndex
from tfmemlint.rules.file_errors import FAMILY as FILE_ERRORS

DIRECTIVE = re.compile(
    r"#\s*(?:tfmemlint\s*:\s*ignore(?P<bracket>\[(?P<listed>[^\]]*)\])?"
    r"|noqa(?P<colon>\s*:\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?)",
    re.IGNORECASE,
)
ALL = "*"


def _codes(comment: str) -> set[str]:
    """The codes a comment silences; {"*"} for all, empty for none."""
    codes: set[str] = set()
    for match in DIRECTIVE.finditer(comment):
        listed = match.group("listed") if match.group("bracket") else match.group("codes")
        if listed is None:
            if match.group("bracket") or match.group("colon"):
                continue  # `ignore[]` or a malformed `noqa:` silences nothing
            codes.add(ALL)
        else:
            codes.update(code.upper() for code in re.split(r"[\s,]+", listed.strip()) if code)
    return codes


def _comments_by_row(text: str) -> dict[int, str]:
    comments: dict[int, str] = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                comments[token.start[0]] = token.string
    except (tokenize.TokenError, SyntaxError):
        # Code that needed recovery (Python 2, a bad indent): the rows read so far count, and
        # the scanner that never fails finds the comments of the rest.
        from tfmemlint.reading.statements import tokens

        index = LineIndex(text)
        for token in tokens(text):
            row = index.location(token.start).row
            if token.kind == "comment" and row not in comments:
                comments[row] = text[token.start : token.end]
    return comments


def unsuppressed(findings: list[Finding], lines: LineIndex) -> list[Finding]:
    if not findings or not DIRECTIVE.search(lines.text):
        return findings  # no directive anywhere: spare tokenizing the whole file
    return unsuppressed_by(findings, _comments_by_row(lines.text))


def unsuppressed_by(findings: list[Finding], comments: dict[int, str]) -> list[Finding]:
    """The findings that no comment silences, given each row's comment (a launch file's reader
    says which comment counts for which row)."""
    kept = []
    for finding in findings:
        rows = {finding.location.row, finding.end_location.row}
        silenced = set().union(*(_codes(comments.get(row, "")) for row in rows))
        if ALL not in silenced and finding.code not in silenced:
            kept.append(finding)
    return kept


def with_noqa(text: str, findings: list[Finding]) -> tuple[str, int, list[tuple[Finding, str]]]:
    """`--add-noqa`: the text with each finding silenced by `# noqa: CODE` on its first line (on
    its last where the first cannot take a comment), its code merged into the line's own
    `# noqa:` list where there is one; how many lines got a directive; and the findings left as
    they were, each with why. Every other byte stays."""
    lines = LineIndex(text)
    open_rows, comments = _comment_places(text, lines)
    codes_by_row: dict[int, list[str]] = {}
    left: list[tuple[Finding, str]] = []
    for finding in findings:
        if finding.code in _LINE_FREE:
            left.append((finding, "a problem of the whole file, which no comment silences"))
            continue
        rows = (finding.location.row, finding.end_location.row)
        row = next((r for r in rows if r in open_rows), None)
        if row is None:
            left.append((finding, "its lines end inside a string or a `\\` continuation"))
            continue
        codes = codes_by_row.setdefault(row, [])
        if finding.code not in codes:
            codes.append(finding.code)
    pieces: list[str] = []
    cursor = 0
    for row in sorted(codes_by_row):
        codes = sorted(codes_by_row[row])
        comment = comments.get(row)
        listed = _noqa_list(comment[1]) if comment else None
        if comment and listed:  # a noqa list already: the codes join it
            at = end = comment[0] + listed.end("codes")
            insertion = "".join(f", {code}" for code in codes)
        else:  # a comment of its own at the end of the line; trailing blanks give way to it
            start, content = lines.offset(row, 0), lines.line(row)
            at, end = start + len(content.rstrip(" \t\f")), start + len(content)
            insertion = f"  # noqa: {', '.join(codes)}"
        pieces += [text[cursor:at], insertion]
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces), len(codes_by_row), left


# File problems (unreadable, undecodable, not Python), which no line's comment silences.
_LINE_FREE = frozenset(rule.code for rule in FILE_ERRORS.rules)


_TRIPLES = ('"""', "'''")


def _noqa_list(comment: str) -> re.Match[str] | None:
    """The comment's `# noqa: CODES` directive, if it has one."""
    for match in DIRECTIVE.finditer(comment):
        if match.group("codes"):
            return match
    return None


def _comment_places(text: str, lines: LineIndex) -> tuple[set[int], dict[int, tuple[int, str]]]:
    """(the rows whose end a comment can follow: not inside a string, not continued by a
    backslash; each row's comment, with its offset). The scanner that never fails reads them,
    so Python 2 and broken cells get their comments too."""
    from tfmemlint.reading.statements import tokens

    closed: set[int] = set()
    comments: dict[int, tuple[int, str]] = {}
    for token in tokens(text):
        if token.kind == "comment":
            row = lines.location(token.start).row
            comments[row] = (token.start, text[token.start : token.end])
        elif token.kind == "continuation":
            closed.add(lines.location(token.start).row)
        elif token.kind == "string":
            first, last = lines.location(token.start).row, lines.location(token.end).row
            piece = text[token.start : token.end]
            if piece[:3] in _TRIPLES and (len(piece) < 6 or not piece.endswith(piece[:3])):
                last += 1  # a triple-quoted string that never closes: its last line too
            closed.update(range(first, last))
    return set(range(1, len(lines.starts) + 1)) - closed, comments
