"""Reports for people: ruff-like text (coloured by rich on a terminal only), concise lines,
and diffs."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from typing import IO, TYPE_CHECKING

from tfmemlint.model import FileResult, Finding
from tfmemlint.reading.source import LineIndex

if TYPE_CHECKING:
    from tfmemlint.running.file_check import NoqaOutcome
    from tfmemlint.running.runner import RunStats


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'s' * (number != 1)}"


def _cell(finding: Finding) -> str:
    return f":cell {finding.cell}" if finding.cell is not None else ""


def place(finding: Finding) -> str:
    """Where a finding is, as every report names it: `path:row:column`, in a notebook
    `path:cell N:row:column`."""
    return f"{finding.filename}{_cell(finding)}:{finding.location.row}:{finding.location.column}"


def write_concise(results: Sequence[FileResult], out: IO[str]) -> None:
    for result in results:
        for finding in result.findings:
            fixable = " [*]" if finding.fix else ""
            out.write(f"{place(finding)}: {finding.code}{fixable} {finding.message}\n")


def write_noqa(outcomes: Sequence[tuple[str, NoqaOutcome]], out: IO[str], err: IO[str]) -> None:
    """`--add-noqa`'s report: each file not rewritten and each finding left, a line each on
    `err`, with why; then how many directives were added."""
    for filename, outcome in outcomes:
        if outcome.error is not None:
            err.write(f"{filename}: no noqa added: {outcome.error}\n")
        for finding, why in outcome.left:
            err.write(f"{place(finding)}: {finding.code} not silenced: {why}\n")
    added = sum(outcome.added for _, outcome in outcomes)
    out.write(f"Added {_count(added, 'noqa directive')}.\n")


def write_statistics(results: Sequence[FileResult], out: IO[str]) -> None:
    """Counts per code, most frequent first, as ruff's --statistics."""
    from tfmemlint.rules import RULES_BY_CODE

    counts: dict[str, list[int]] = {}
    for result in results:
        for finding in result.findings:
            entry = counts.setdefault(finding.code, [0, 0])
            entry[0] += 1
            entry[1] += finding.fix is not None
    for code, (number, fixable) in sorted(counts.items(), key=lambda item: (-item[1][0], item[0])):
        rule = RULES_BY_CODE.get(code)
        marker = "[*]" if fixable else "   "
        out.write(f"{number:5d}\t{code}\t{marker} {rule.name if rule else ''}\n")


def write_diff(results: Sequence[FileResult], out: IO[str]) -> None:
    for result in results:
        if result.original is None or result.fixed_text is None:
            continue
        absolute = os.path.isabs(result.filename)
        out.writelines(
            _unified_diff(
                result.original.splitlines(keepends=True),
                result.fixed_text.splitlines(keepends=True),
                # git's a/ and b/ prefixes, so that `git apply` takes it, on relative paths only
                fromfile=result.filename if absolute else f"a/{result.filename}",
                tofile=result.filename if absolute else f"b/{result.filename}",
            )
        )
        if not result.fixed_text.endswith(("\n", "\r")):
            out.write("\n\\ No newline at end of file\n")


class TextReport:
    """`path:row:col: CODE [*] message`, the source line with a caret, the fix as help."""

    def __init__(self, out: IO[str], color: bool, show_fixes: bool = False) -> None:
        self.out = out
        self.show_fixes = show_fixes
        self.console = None
        if color:
            from rich.console import Console

            self.console = Console(file=out, highlight=False, soft_wrap=True)

    def _emit(self, *parts: tuple[str, str]) -> None:
        if self.console is None:
            self.out.write("".join(text for text, _ in parts) + "\n")
            return
        from rich.text import Text

        self.console.print(Text.assemble(*parts))

    def findings(self, results: Sequence[FileResult]) -> None:
        for result in results:
            if not result.findings:
                continue
            lines = LineIndex(result.text) if result.text is not None else None
            for finding in result.findings:
                self._finding(finding, lines)

    def _finding(self, finding: Finding, lines: LineIndex | None) -> None:
        where = finding.location
        self._emit(
            (finding.filename, "bold"),
            (_cell(finding), ""),
            (f":{where.row}:{where.column}: ", ""),
            (finding.code, "bold red"),
            (" [*]" if finding.fix else "", "cyan"),
            (f" {finding.message}", ""),
        )
        if lines is not None and where.row <= len(lines.starts):
            source = lines.line(where.row).expandtabs(1)
            gutter = " " * len(str(where.row))
            width = len(source) - (where.column - 1)
            if finding.end_location.row == where.row:
                width = finding.end_location.column - where.column
            self._emit((f"{gutter} |", "blue"))
            self._emit((f"{where.row} | ", "blue"), (source, ""))
            self._emit(
                (f"{gutter} | ", "blue"),
                (" " * (where.column - 1) + "^" * max(width, 1), "bold red"),
            )
            if finding.fix:
                self._emit((f"{gutter} = ", "blue"), ("help: ", "bold"), (finding.fix.message, ""))
                if self.show_fixes:
                    self._fix_diff(finding, lines)
        self._emit(("", ""))

    def _fix_diff(self, finding: Finding, lines: LineIndex) -> None:
        """The lines this one fix changes, before and after."""
        from tfmemlint.fixing import fixes

        assert finding.fix is not None
        _, fixed = fixes.apply([finding.fix], lines.text)
        changed = _unified_diff(lines.text.splitlines(), fixed.splitlines(), lineterm="", n=0)
        for line in list(changed)[2:]:  # past the ---/+++ header
            if line.startswith("@@"):
                continue
            style = "red" if line.startswith("-") else "green"
            self._emit(("    ", ""), (line, style))

    def summary(self, results: Sequence[FileResult], mode: str) -> None:
        remaining = sum(len(r.findings) for r in results)
        fixed = sum(r.fixed for r in results)
        fixable = sum(1 for r in results for f in r.findings if f.fix)
        if mode == "fix" and fixed:
            total = fixed + remaining
            self._emit(
                (f"Found {_count(total, 'finding')} ({fixed} fixed, {remaining} remaining).", "")
            )
        elif remaining:
            self._emit(
                (f"Found {_count(remaining, 'finding')} ", ""),
                (f"({fixable} fixable with `--fix`).", "cyan" if fixable else ""),
            )
        else:
            self._emit(("All checks passed!", "bold green"))

    @staticmethod
    def diff_summary(results: Sequence[FileResult], out: IO[str]) -> None:
        fixed = sum(r.fixed for r in results)
        remaining = sum(len(r.findings) for r in results)
        files = sum(1 for r in results if r.fixed_text is not None)
        line = f"Would fix {_count(fixed, 'finding')} in {_count(files, 'file')}"
        if remaining:
            line += f"; {remaining} would remain"
        out.write(line + ".\n")


# Below this many seconds a run shows no progress bar: it would only flicker.
PROGRESS_AFTER_S = 0.5


def _progress_after_s() -> float:
    """TFMEMLINT_PROGRESS_AFTER (seconds) when it is a number: 0 shows the bar at once."""
    try:
        return float(os.environ.get("TFMEMLINT_PROGRESS_AFTER", PROGRESS_AFTER_S))
    except ValueError:
        return PROGRESS_AFTER_S


def with_progress(results: Iterable[FileResult], total: int) -> Iterator[FileResult]:
    """Yield the results; after a moment, show files done / total and findings so far on
    stderr. For a person at a terminal only: the caller decides that."""
    import time

    started, after_s = time.monotonic(), _progress_after_s()
    progress = task = None
    findings = 0
    try:
        for done, result in enumerate(results, 1):
            findings += len(result.findings)
            if progress is None and time.monotonic() - started >= after_s:
                from rich.console import Console
                from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

                progress = Progress(
                    TextColumn("checking"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TextColumn("{task.fields[findings]} findings"),
                    transient=True,
                    console=Console(stderr=True),  # stdout is the report's
                )
                progress.start()
                task = progress.add_task("check", total=total, findings=0)
            if progress is not None and task is not None:
                progress.update(task, completed=done, findings=findings)
            yield result
    finally:
        if progress is not None:
            progress.stop()


def _unified_diff(*args: object, **kwargs: object) -> Iterator[str]:
    import difflib  # only diffs need it; a plain check does not pay for the import

    return difflib.unified_diff(*args, **kwargs)  # type: ignore[arg-type]


def write_timing(stats: RunStats, walked_s: float, total_s: float, out: IO[str]) -> None:
    """--verbose: how many files each stage saw, and the seconds it took."""
    workers = f"{stats.workers} worker processes" if stats.workers else "in this process"
    rows = [
        ("walked", f"{stats.walked} files", walked_s),
        ("served from the cache", f"{stats.from_cache} files", None),
        ("pre-filtered out", f"{stats.filtered_out} files", stats.prepare_s),
        (f"parsed ({workers})", f"{stats.parsed} files", stats.engine_s),
        ("fixed", f"{stats.fixed} files", None),
        ("total", "", total_s),
    ]
    out.write("tfmemlint timing:\n")
    for stage, count, seconds in rows:
        took = f"{seconds:8.3f} s" if seconds is not None else ""
        out.write(f"  {stage:<36}{count:>12}{took}\n")
