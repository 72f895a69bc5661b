"""Reporting: every output format, behind one `write`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import IO

from tfmemlint.model import FileResult
from tfmemlint.report import machine, text

FORMATS = ("text", "concise", "json", "json-lines", "github", "sarif", "junit")

_WRITERS: dict[str, Callable[[Sequence[FileResult], IO[str]], None]] = {
    "concise": text.write_concise,
    "json": machine.write_json,
    "json-lines": machine.write_json_lines,
    "github": machine.write_github,
    "sarif": machine.write_sarif,
    "junit": machine.write_junit,
}


def write(output_format: str, results: Sequence[FileResult], out: IO[str]) -> None:
    """Any format but `text`, which needs its options (see TextReport)."""
    _WRITERS[output_format](results, out)


__all__ = ["FORMATS", "write"]
