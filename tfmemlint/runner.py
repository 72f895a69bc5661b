"""Runs a check over files: read, pre-filter, lint or fix, write. One bad file never stops the run.

Nothing here imports libcst until a file passes the pre-filter.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Literal

from tfmemlint.discovery import Exclusions, Missing, discover
from tfmemlint.model import FileResult, Finding, Location, Rule
from tfmemlint.prefilter import may_have_findings
from tfmemlint.rules.file_errors import (
    INTERNAL_ERROR,
    INVALID_ENCODING,
    NUL_BYTES,
    PYTHON2_SYNTAX,
    READ_ERROR,
    SYNTAX_ERROR,
    UNKNOWN_ENCODING,
    WRITE_FAILED,
)
from tfmemlint.settings import Settings
from tfmemlint.source import SourceError, SourceText, write_atomically

Mode = Literal["check", "fix", "diff"]

_DECODE_ERRORS = {
    "nul-bytes": NUL_BYTES,
    "unknown-encoding": UNKNOWN_ENCODING,
    "invalid-encoding": INVALID_ENCODING,
}
# Python's messages for the Python 2 constructs that TF1-era repositories hold.
_PYTHON2_MESSAGES = (
    "Missing parentheses in call to",
    "multiple exception types must be parenthesized",
    "leading zeros in decimal integer literals",
)


def _diagnostic(filename: str, rule: Rule, message: str, row: int = 1, column: int = 1) -> Finding:
    where = Location(row, column)
    return Finding(rule.code, message, filename, where, where)


def _syntax_error(filename: str, text: str, error: Exception) -> Finding:
    """Python's own message and position where it has one: they are what users know."""
    import ast

    try:
        ast.parse(text)
    except SyntaxError as python_error:
        row, column = python_error.lineno or 1, python_error.offset or 1
        message = python_error.msg or "invalid syntax"
        if any(marker in message for marker in _PYTHON2_MESSAGES):
            return _diagnostic(filename, PYTHON2_SYNTAX, f"Python 2 syntax: {message}", row, column)
        return _diagnostic(filename, SYNTAX_ERROR, f"Syntax error: {message}", row, column)
    except ValueError:
        pass  # e.g. NUL bytes: fall back to libcst's account
    row, column = getattr(error, "editor_line", 1), getattr(error, "editor_column", 1)
    message = getattr(error, "message", str(error)).splitlines()[0]
    return _diagnostic(filename, SYNTAX_ERROR, f"Syntax error: {message}", row, column)


def check_file(filename: str, settings: Settings, mode: Mode, verbose: bool = False) -> FileResult:
    try:
        with open(filename, "rb") as handle:
            raw = handle.read()
    except OSError as exc:
        message = f"Cannot read file: {exc.strerror or exc}"
        return FileResult(filename, [_diagnostic(filename, READ_ERROR, message)])
    if filename.endswith(".ipynb"):
        return _check_notebook(filename, raw, settings, mode, verbose)
    result, source = check_bytes(filename, raw, settings, mode, verbose)
    if mode != "fix" or source is None or result.fixed_text is None:
        return result
    from tfmemlint.engine import lint_text
    from tfmemlint.safety import UnsafeFixError

    try:
        new_bytes = source.encode(result.fixed_text)
        if source.encode(source.text) != raw:
            raise UnsafeFixError(f"the file does not round-trip through {source.encoding}")
        write_atomically(filename, new_bytes, expected_old=raw)
    except (OSError, UnicodeEncodeError, UnsafeFixError) as exc:
        result.findings = lint_text(filename, source.text, settings)
        result.text = source.text
        result.findings.append(_diagnostic(filename, WRITE_FAILED, f"Fix not written: {exc}"))
        result.original = result.fixed_text = None
        result.fixed = 0
    return result


def check_stdin(
    name: str, raw: bytes, settings: Settings, mode: Mode, verbose: bool = False
) -> tuple[FileResult, bytes]:
    """A source read from stdin (editors): its result, and the bytes to hand back, fixed or as
    they came, never nothing, even for a file without findings or one that does not parse."""
    result, source = check_bytes(name, raw, settings.for_file(name), mode, verbose)
    if source is None or result.fixed_text is None:
        return result, raw
    return result, source.encode(result.fixed_text)


def _check_notebook(
    filename: str, raw: bytes, settings: Settings, mode: Mode, verbose: bool
) -> FileResult:
    """A notebook's code cells are linted as one module; findings point at cells; a fix
    rewrites only the `source` of the cells it changed."""
    from tfmemlint.notebook import Notebook, NotebookError

    if not may_have_findings(raw, settings.selected):
        return FileResult(filename)
    try:
        notebook = Notebook.parse(raw.decode("utf-8"))
    except (UnicodeDecodeError, NotebookError) as exc:
        return FileResult(
            filename, [_diagnostic(filename, READ_ERROR, f"Cannot read notebook: {exc}")]
        )
    module, origin = notebook.module()
    result, _ = check_bytes(filename, module.encode("utf-8"), settings, mode, verbose)
    result.findings = [_in_cell(finding, origin) for finding in result.findings]
    result.text = None  # rows now count within cells; there is no one text to quote
    if result.fixed_text is None:
        result.original = None
        return result
    try:
        new_text = notebook.with_module(result.fixed_text)
    except NotebookError as exc:
        result.findings.append(_diagnostic(filename, INTERNAL_ERROR, f"Internal error: {exc}"))
        result.internal_error = True
        result.original = result.fixed_text = None
        result.fixed = 0
        return result
    result.original, result.fixed_text = notebook.text, new_text
    if mode == "fix":
        try:
            write_atomically(filename, new_text.encode("utf-8"), expected_old=raw)
        except OSError as exc:
            result.findings.append(_diagnostic(filename, WRITE_FAILED, f"Fix not written: {exc}"))
            result.original = result.fixed_text = None
            result.fixed = 0
    return result


def _in_cell(finding: Finding, origin: list[tuple[int, int]]) -> Finding:
    """A finding whose rows count in the notebook's module, re-pointed at its cell."""
    if finding.location.row >= len(origin) or origin[finding.location.row][0] == 0:
        return finding
    cell, row = origin[finding.location.row]

    def move(where: Location) -> Location:
        same_cell = where.row < len(origin) and origin[where.row][0] == cell
        return Location(origin[where.row][1], where.column) if same_cell else where

    fix = finding.fix
    if fix is not None:
        edits = tuple(
            replace(e, location=move(e.location), end_location=move(e.end_location))
            for e in fix.edits
        )
        fix = replace(fix, edits=edits)
    return replace(
        finding,
        location=Location(row, finding.location.column),
        end_location=move(finding.end_location),
        fix=fix,
        cell=cell,
    )


def check_bytes(
    filename: str, raw: bytes, settings: Settings, mode: Mode, verbose: bool = False
) -> tuple[FileResult, SourceText | None]:
    """Check (and with "fix" or "diff", fix in memory) one file's bytes; nothing is written.

    Returns the result and the decoded source, or None where the bytes never got that far.
    """
    result = FileResult(filename)
    if not may_have_findings(raw, settings.selected):
        return result, None
    try:
        source = SourceText.decode(raw)
    except SourceError as exc:
        result.findings.append(_diagnostic(filename, _DECODE_ERRORS[exc.kind], str(exc), exc.row))
        return result, None

    import libcst as cst

    from tfmemlint.engine import fix_text, lint_text

    try:
        if mode == "check":
            result.findings = lint_text(filename, source.text, settings)
            result.text = source.text
            return result, source
        fixed_text, fixed, remaining = fix_text(filename, source.text, settings)
    except cst.ParserSyntaxError as exc:
        result.findings.append(_syntax_error(filename, source.text, exc))
        return result, source
    except Exception as exc:  # one file's failure must not stop the run
        detail = traceback.format_exc() if verbose else f"{type(exc).__name__}: {exc}"
        result.findings.append(
            _diagnostic(filename, INTERNAL_ERROR, f"Internal error; file left unchanged. {detail}")
        )
        result.internal_error = True
        return result, source

    result.findings = remaining
    result.text = fixed_text if mode == "fix" else source.text
    if fixed_text != source.text:
        result.original, result.fixed_text = source.text, fixed_text
        result.fixed = fixed
    return result, source


def run(
    paths: Iterable[str],
    settings: Settings,
    mode: Mode,
    verbose: bool = False,
    exclusions: Exclusions | None = None,
) -> Iterator[FileResult]:
    yield from run_items(discover(paths, exclusions), settings, mode, verbose)


def run_items(
    items: Iterable[str | Missing], settings: Settings, mode: Mode, verbose: bool = False
) -> Iterator[FileResult]:
    """Check discovered items one by one, as they come (a caller may count them first)."""
    for item in items:
        if isinstance(item, Missing):
            message = "No such file or directory"
            yield FileResult(item.path, [_diagnostic(item.path, READ_ERROR, message)])
        else:
            yield check_file(item, settings.for_file(item), mode, verbose)
