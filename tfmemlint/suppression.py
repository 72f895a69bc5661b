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
from tfmemlint.source import LineIndex

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
        from tfmemlint.statements import tokens

        index = LineIndex(text)
        for token in tokens(text):
            row = index.location(token.start).row
            if token.kind == "comment" and row not in comments:
                comments[row] = text[token.start : token.end]
    return comments


def unsuppressed(findings: list[Finding], lines: LineIndex) -> list[Finding]:
    if not findings or not DIRECTIVE.search(lines.text):
        return findings  # no directive anywhere: spare tokenizing the whole file
    comments = _comments_by_row(lines.text)
    kept = []
    for finding in findings:
        rows = {finding.location.row, finding.end_location.row}
        silenced = set().union(*(_codes(comments.get(row, "")) for row in rows))
        if ALL not in silenced and finding.code not in silenced:
            kept.append(finding)
    return kept
