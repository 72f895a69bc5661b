"""Reporting: every output format, behind one `write`."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from tfmemlint.model import FileResult

FORMATS = ("text", "concise", "json", "json-lines", "github", "sarif", "junit")

# Writers are imported when used: the command line imports this package for FORMATS alone.
_WRITERS = {
    "concise": "text:write_concise",
    "json": "machine:write_json",
    "json-lines": "machine:write_json_lines",
    "github": "machine:write_github",
    "sarif": "machine:write_sarif",
    "junit": "machine:write_junit",
}


def write(output_format: str, results: Sequence[FileResult], out: IO[str]) -> None:
    """Any format but `text`, which needs its options (see TextReport)."""
    module, _, function = _WRITERS[output_format].partition(":")
    getattr(importlib.import_module(f"tfmemlint.faces.report.{module}"), function)(results, out)


__all__ = ["FORMATS", "write"]
