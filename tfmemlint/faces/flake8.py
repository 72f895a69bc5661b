"""The flake8 extension: `flake8 --select TFM` reports what `tfmemlint` reports, from the same
engine. Nothing heavy is imported until a file passes the pre-filter."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from tfmemlint import __version__

if TYPE_CHECKING:
    from tfmemlint.project.index import ProjectIndex


@functools.cache
def _project_index() -> ProjectIndex:
    """One index for all the files this flake8 process checks (see tfmemlint.project.index)."""
    from tfmemlint.project.index import ProjectIndex
    from tfmemlint.rules import api_names

    return ProjectIndex(api_names=api_names())


class Plugin:
    name = "tfmemlint"
    version = __version__

    def __init__(self, tree: Any, filename: str, lines: Sequence[str]) -> None:
        # flake8 hands over the decoded lines; `tree` is asked for only to be an AST plugin.
        self.filename = filename
        self.lines = lines

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        from tfmemlint.checking.prefilter import prefilter_verdict
        from tfmemlint.configuration.settings import Settings
        from tfmemlint.rules import ALL_RULES

        settings = Settings.default(ALL_RULES)
        text = "".join(self.lines)
        raw = text.encode("utf-8", "surrogatepass")
        selected = settings.selected
        project = _project_index().resolver(self.filename)
        if prefilter_verdict(raw, selected, lambda: project) != "parse":
            return
        import libcst as cst

        from tfmemlint.checking.engine import lint_text
        from tfmemlint.rules.file_errors import INTERNAL_ERROR

        try:
            findings = lint_text(self.filename, text, settings, project=project)
        except cst.ParserSyntaxError:
            return  # flake8 reports syntax errors itself (E999)
        except Exception as exc:  # one file's failure must not end flake8's run
            detail = " ".join(f"{type(exc).__name__}: {exc}".split())  # flake8 prints one line
            message = f"{INTERNAL_ERROR.code} Internal error: {detail}"
            yield 1, 0, message, type(self)
            return
        for finding in findings:
            where = finding.location
            yield where.row, where.column - 1, f"{finding.code} {finding.message}", type(self)
