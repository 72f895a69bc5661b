"""Checks one file, or one buffer: read, decode, pre-filter, lint or fix, write; a notebook's
cells as one module and back. A bad file becomes a finding about it, never an exception.

Nothing here imports libcst until a file passes the pre-filter.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, NamedTuple

from tfmemlint.checking.prefilter import (
    first_stage,
    prefilter_verdict,
    python2_for_python,
    too_deep_for_python,
)
from tfmemlint.configuration.settings import Settings
from tfmemlint.model import FILE, Dependency, Edit, FileResult, Finding, Layout, Location, Rule
from tfmemlint.reading.launch import kind_of
from tfmemlint.reading.source import (
    LineIndex,
    SourceError,
    SourceText,
    minimal_change,
    parse_python,
    without_cycle_collection,
    write_atomically,
)
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

if TYPE_CHECKING:
    from tfmemlint.project.index import FileResolver, ProjectIndex
    from tfmemlint.project.summary_store import SummaryStore
    from tfmemlint.reading.notebook import Notebook, Origin

Mode = Literal["check", "fix", "diff"]


def new_project_index(config_root: str | None, store: SummaryStore | None = None) -> ProjectIndex:
    """A project index for a run, handed the names the rules start from, and the store of
    module summaries it shares with other processes and runs, if any."""
    from tfmemlint.project.index import ProjectIndex
    from tfmemlint.rules import api_names

    return ProjectIndex(config_root, api_names(), store)


_DECODE_ERRORS = {
    "nul-bytes": NUL_BYTES,
    "unknown-encoding": UNKNOWN_ENCODING,
    "invalid-encoding": INVALID_ENCODING,
}


def diagnostic(filename: str, rule: Rule, message: str, row: int = 1, column: int = 1) -> Finding:
    where = Location(row, column)
    return Finding(rule.code, message, filename, where, where)


def _syntax_error(filename: str, text: str, error: Exception) -> Finding:
    """Python's own message and position where it has one: they are what users know."""
    try:
        parse_python(text)
    except SyntaxError as python_error:
        row, column = python_error.lineno or 1, python_error.offset or 1
        message = python_error.msg or "invalid syntax"
        from tfmemlint.reading.recovery import PYTHON2_MESSAGES

        if any(marker in message for marker in PYTHON2_MESSAGES):
            return diagnostic(filename, PYTHON2_SYNTAX, f"Python 2 syntax: {message}", row, column)
        return diagnostic(filename, SYNTAX_ERROR, f"Syntax error: {message}", row, column)
    except ValueError:
        pass  # e.g. NUL bytes: fall back to libcst's account
    row, column = getattr(error, "editor_line", 1), getattr(error, "editor_column", 1)
    message = getattr(error, "message", str(error)).splitlines()[0]
    return diagnostic(filename, SYNTAX_ERROR, f"Syntax error: {message}", row, column)


@without_cycle_collection
def check_file(
    filename: str,
    settings: Settings,
    mode: Mode,
    verbose: bool = False,
    raw: bytes | None = None,
    index: ProjectIndex | None = None,
) -> FileResult:
    """Check one file, and under "fix" write it. `raw`: its bytes, when the caller read them.
    `index`: the run's project index (one of this file's own, if not given). The cycle
    collector waits until the file is done: the trees of its screens, of the project walk and
    of the engine die with the check, and it would walk each of their nodes for nothing."""
    if kind_of(filename, (raw or b"")[:64]) is not None:
        return _check_launch_file(filename, settings, mode, verbose, raw)
    project = (index or new_project_index(settings.config_root)).resolver(filename)
    settings, launched, unlaunched = _launched(settings, project)
    result = _noted(_check_file(filename, settings, mode, verbose, raw, project), launched)
    if unlaunched and any(f.code in _program_codes() for f in result.findings):
        project.read |= unlaunched
    result.depends_on = project.dependencies()
    return result


def _program_codes() -> frozenset[str]:
    from tfmemlint.rules import PROGRAM_RULES

    return frozenset(code for codes in PROGRAM_RULES.values() for code in codes)


def _noted(result: FileResult, notes: dict[str, str]) -> FileResult:
    """The result, each finding of a code in `notes` saying what its note says."""
    if notes:
        result.findings = [
            f._replace(message=f"{f.message} ({notes[f.code]})") if f.code in notes else f
            for f in result.findings
        ]
    return result


def _launched(
    settings: Settings, project: FileResolver
) -> tuple[Settings, dict[str, str], frozenset[Dependency]]:
    """The settings for a program that a launch file runs with its GPU memory set up: its
    program rules taken out of the selection; or, with `show_launched`, kept, with what to
    add to their messages; and what a program finding depends on where no launcher runs it.
    A program counts as set up by a framework where every launch file that runs it sets it
    up, or where a `launch-environment` file does."""
    from tfmemlint.rules import PROGRAM_RULES
    from tfmemlint.rules.variables import configured_frameworks

    if not _program_codes() & settings.selected:
        return settings, {}, frozenset()
    launched, depends = project.launch_environments(settings.launch_environment)
    if not launched:
        # A launcher added later could set such a program up: its program findings, if it
        # has any, depend on the folders looked in (see `check_file`).
        return settings, {}, depends
    project.read |= depends
    runners = [each for each in launched if not each.everywhere]
    by_framework: dict[str, str] = {}
    for each in launched:
        for framework in configured_frameworks(each.environment):
            if each.everywhere or all(
                framework in configured_frameworks(other.environment) for other in runners
            ):
                by_framework.setdefault(framework, each.launcher)
    notes = {
        code: f"`{launcher}` runs it with its GPU memory set up; this holds where it runs "
        "without that file"
        for framework, launcher in by_framework.items()
        for code in PROGRAM_RULES[framework]
    }
    if not notes or settings.show_launched:
        return settings, notes, frozenset()
    return settings._replace(selected=settings.selected - set(notes)), {}, frozenset()


def _check_file(
    filename: str,
    settings: Settings,
    mode: Mode,
    verbose: bool,
    raw: bytes | None,
    project: FileResolver,
) -> FileResult:
    try:
        if raw is None:
            raw = read_file(filename)
    except OSError as exc:
        message = f"Cannot read file: {exc.strerror or exc}"
        return FileResult(filename, [diagnostic(filename, READ_ERROR, message)])
    if filename.endswith(".ipynb"):
        return _check_notebook(filename, raw, settings, mode, verbose, project)
    result, source = check_bytes(filename, raw, settings, mode, verbose, project=project)
    if mode != "fix" or source is None or result.fixed_text is None:
        return result
    from tfmemlint.checking.engine import lint_text
    from tfmemlint.fixing.safety import UnsafeFixError

    try:
        new_bytes = source.encode(result.fixed_text)
        if source.encode(source.text) != raw:
            raise UnsafeFixError(f"the file does not round-trip through {source.encoding}")
        write_atomically(filename, new_bytes, expected_old=raw)
    except (OSError, UnicodeEncodeError, UnsafeFixError) as exc:
        first = python2_for_python(raw)
        result.findings = lint_text(
            filename, source.text, settings, recover_first=first, project=project
        )
        result.text = source.text
        result.findings.append(diagnostic(filename, WRITE_FAILED, f"Fix not written: {exc}"))
        result.original = result.fixed_text = None
        result.fixed = 0
    return result


def _check_launch_file(
    filename: str, settings: Settings, mode: Mode, verbose: bool, raw: bytes | None
) -> FileResult:
    """A launch file (a Dockerfile, a Compose file, a script): checked, and under "fix"
    written, as a Python file is; it is UTF-8, as the tools that read it want."""
    try:
        if raw is None:
            raw = read_file(filename)
    except OSError as exc:
        message = f"Cannot read file: {exc.strerror or exc}"
        return FileResult(filename, [diagnostic(filename, READ_ERROR, message)])
    result, _ = check_launch_bytes(filename, raw, settings, mode, verbose)
    if mode != "fix" or result.fixed_text is None:
        return result
    try:
        write_atomically(filename, result.fixed_text.encode("utf-8"), expected_old=raw)
    except OSError as exc:
        result.findings.append(diagnostic(filename, WRITE_FAILED, f"Fix not written: {exc}"))
        result.original = result.fixed_text = None
        result.fixed = 0
    return result


def check_launch_bytes(
    filename: str, raw: bytes, settings: Settings, mode: Mode, verbose: bool = False
) -> tuple[FileResult, bytes]:
    """Check (and with "fix" or "diff", fix in memory) a launch file's bytes: its result, and
    the bytes to hand back, fixed or as they came. Nothing is written."""
    from tfmemlint.checking.prefilter import launch_file_may_have_findings

    result = FileResult(filename)
    if not launch_file_may_have_findings(raw, settings.selected):
        return result, raw
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        row = raw.count(b"\n", 0, exc.start) + 1
        message = f"The file is not UTF-8 (byte {exc.start}); it was not checked"
        result.findings.append(diagnostic(filename, INVALID_ENCODING, message, row))
        return result, raw
    from tfmemlint.checking.launch_check import fix_launch, lint_launch

    kind = kind_of(filename, raw[:64])
    assert kind is not None
    try:
        if mode == "check":
            result.findings, result.text = lint_launch(filename, kind, text, settings), text
            return result, raw
        fixed_text, fixed, remaining = fix_launch(filename, kind, text, settings)
    except Exception:  # one file's failure must not stop the run
        result.findings.append(_internal_error(filename, verbose))
        result.internal_error = True
        return result, raw
    result.findings = remaining
    result.text = fixed_text if mode == "fix" else text
    if fixed_text == text:
        return result, raw
    result.original, result.fixed_text, result.fixed = text, fixed_text, fixed
    return result, fixed_text.encode("utf-8")


def check_stdin(
    name: str,
    raw: bytes,
    settings: Settings,
    mode: Mode,
    verbose: bool = False,
    in_cells: bool = True,
    store: SummaryStore | None = None,
) -> tuple[FileResult, bytes]:
    """A source read from stdin, or an editor's buffer: its result, and the bytes to hand back,
    fixed or as they came, never nothing, even for a file without findings or one that does not
    parse. A name ending in `.ipynb` takes the bytes for a notebook's JSON, whose findings point
    at cells unless `in_cells` is False: then their rows (and their fixes') are those of the
    module of its code cells (`Notebook.module`). Nothing is written but the summaries of
    project modules, in `store`."""
    settings = settings.for_file(name)
    if kind_of(name, raw[:64]) is not None:
        result, fixed = check_launch_bytes(name, raw, settings, mode, verbose)
        return result, (fixed if mode == "fix" else raw)
    project = new_project_index(settings.config_root, store).resolver(name)
    settings, launched, _ = _launched(settings, project)
    result, fixed = _check_stdin(name, raw, settings, mode, verbose, in_cells, project)
    return _noted(result, launched), fixed


def _check_stdin(
    name: str,
    raw: bytes,
    settings: Settings,
    mode: Mode,
    verbose: bool,
    in_cells: bool,
    project: FileResolver,
) -> tuple[FileResult, bytes]:
    if name.endswith(".ipynb"):
        # "diff" fixes in memory as "fix" does, and never writes.
        in_memory: Mode = "diff" if mode == "fix" else mode
        result = _check_notebook(name, raw, settings, in_memory, verbose, project, in_cells)
        if mode != "fix" or result.fixed_text is None:
            return result, raw
        return result, result.fixed_text.encode("utf-8")
    result, source = check_bytes(name, raw, settings, mode, verbose, project=project)
    if source is None or result.fixed_text is None:
        return result, raw
    return result, source.encode(result.fixed_text)


def _check_notebook(
    filename: str,
    raw: bytes,
    settings: Settings,
    mode: Mode,
    verbose: bool,
    project: FileResolver,
    in_cells: bool = True,
) -> FileResult:
    """A notebook's code cells are linted as one module; findings point at cells (with
    `in_cells`); a fix rewrites only the `source` of the cells it changed."""
    from tfmemlint.reading.notebook import Notebook, NotebookError

    if not first_stage(raw, settings.selected, lambda: project):
        return FileResult(filename)
    try:
        notebook = Notebook.parse(raw.decode("utf-8"))
    except (UnicodeDecodeError, NotebookError) as exc:
        return FileResult(
            filename, [diagnostic(filename, READ_ERROR, f"Cannot read notebook: {exc}")]
        )
    module, origin = notebook.module()
    layout = notebook.layout(origin)
    result, _ = check_bytes(
        filename, module.encode("utf-8"), settings, mode, verbose, layout, project
    )
    if in_cells and mode == "check":
        result.findings = [_in_cells(f, notebook, module, origin) for f in result.findings]
    elif in_cells:  # what is left after fixing: its edits are the fixed module's
        result.findings = [in_cell(finding, origin) for finding in result.findings]
    result.text = None  # rows count within cells, or the cells' module: no one text to quote
    if result.fixed_text is None:
        result.original = None
        return result
    try:
        new_text = notebook.with_module(result.fixed_text)
    except NotebookError as exc:
        # Nothing is written: report what the notebook holds, none of it fixed.
        found, _ = check_bytes(
            filename, module.encode("utf-8"), settings, "check", verbose, layout, project
        )
        placed = [in_cell(f, origin) if in_cells else f for f in found.findings]
        result.findings = [finding._replace(fix=None) for finding in placed]
        result.findings.append(diagnostic(filename, INTERNAL_ERROR, f"Internal error: {exc}"))
        result.internal_error = True
        result.original = result.fixed_text = None
        result.fixed = 0
        return result
    result.original, result.fixed_text = notebook.text, new_text
    if mode == "fix":
        try:
            write_atomically(filename, new_text.encode("utf-8"), expected_old=raw)
        except OSError as exc:
            result.findings.append(diagnostic(filename, WRITE_FAILED, f"Fix not written: {exc}"))
            result.original = result.fixed_text = None
            result.fixed = 0
    return result


class NoqaOutcome(NamedTuple):
    """What `--add-noqa` did to one file: lines that got a directive, the findings it left,
    each with why, and the reason the file was not rewritten, if it was not."""

    added: int = 0
    left: tuple[tuple[Finding, str], ...] = ()
    error: str | None = None


def add_noqa(result: FileResult) -> NoqaOutcome:
    """Silence each finding of a checked file with a `# noqa:` comment on its line, written
    atomically; in a notebook, only the cells' sources change."""
    from tfmemlint.checking.suppression import with_noqa

    if not result.findings:
        return NoqaOutcome()
    if kind_of(result.filename) is not None:
        # A Dockerfile reads a comment after an instruction as part of it: the comment goes on
        # a line of its own there, and is the user's to write.
        why = "a launch file: add `# tfmemlint: ignore[CODE]` by hand"
        return NoqaOutcome(left=tuple((finding, why) for finding in result.findings))
    try:
        raw = read_file(result.filename)
        if result.filename.endswith(".ipynb"):
            new_bytes, added, left = _notebook_with_noqa(raw, result.findings)
        else:
            source = SourceText.decode(raw)
            if source.encode(source.text) != raw:
                return NoqaOutcome(error=f"it does not round-trip through {source.encoding}")
            if result.text is not None and source.text != result.text:
                return NoqaOutcome(error="it changed while it was checked")
            new_text, added, left = with_noqa(source.text, result.findings)
            new_bytes = source.encode(new_text)
        if added:
            write_atomically(result.filename, new_bytes, expected_old=raw)
    except (OSError, SourceError, UnicodeError, ValueError) as exc:  # NotebookError too
        return NoqaOutcome(error=getattr(exc, "strerror", None) or str(exc))
    return NoqaOutcome(added, tuple(left))


def _notebook_with_noqa(
    raw: bytes, findings: list[Finding]
) -> tuple[bytes, int, list[tuple[Finding, str]]]:
    """`add_noqa` on a notebook: the comments go into the module of its cells, and back."""
    from tfmemlint.checking.suppression import with_noqa
    from tfmemlint.reading.notebook import Notebook

    notebook = Notebook.parse(raw.decode("utf-8"))
    module, origin = notebook.module()
    module_row = {(place.cell, place.row): row for row, place in enumerate(origin) if place.cell}
    in_module: dict[Finding, Finding] = {}
    left: list[tuple[Finding, str]] = []
    for finding in findings:
        first = module_row.get((finding.cell or 0, finding.location.row))
        if first is None:
            left.append((finding, "it is not on a line of a code cell"))
            continue
        last = module_row.get((finding.cell or 0, finding.end_location.row), first)
        end = finding.end_location
        moved = finding._replace(
            location=Location(first, finding.location.column - origin[first].shift),
            end_location=Location(last, end.column - origin[last].shift),
        )
        in_module[moved] = finding
    new_module, added, not_placed = with_noqa(module, list(in_module))
    left += [(in_module[moved], why) for moved, why in not_placed]
    return notebook.with_module(new_module).encode("utf-8"), added, left


def _in_cells(finding: Finding, notebook: Notebook, module: str, origin: list[Origin]) -> Finding:
    """`in_cell`, with a fix that changes only the finding's own cell given as the one edit of
    that cell's source that `--fix` makes (a line it adds keeps the cell's indentation and
    prompts)."""
    from tfmemlint.fixing import fixes
    from tfmemlint.reading.notebook import NotebookError

    placed = in_cell(finding, origin)
    if finding.fix is None or placed.cell is None:
        return placed
    if not any(where.shift for where in origin if where.cell == placed.cell):
        return placed  # the cell's lines as they are: the module's edits, re-pointed
    applied, fixed = fixes.apply([finding.fix], module)
    try:
        changed = notebook.changed_sources(fixed)
    except NotebookError:
        return placed._replace(fix=None)  # --fix would not write it either
    if not applied or [cell.number for cell, _ in changed] != [placed.cell]:
        return placed  # an edit in another cell keeps the module's rows
    [(cell, source)] = changed
    start, end, content = minimal_change(cell.source, source)
    lines = LineIndex(cell.source)
    edit = Edit(start, end, content, lines.location(start), lines.location(end))
    return placed._replace(fix=finding.fix._replace(edits=(edit,)))


def in_cell(finding: Finding, origin: list[Origin]) -> Finding:
    """A finding whose rows count in the notebook's module, re-pointed at its cell's rows and
    columns (and its fix's edits in that cell; an edit in another cell keeps the module's)."""
    if finding.location.row >= len(origin) or origin[finding.location.row].cell == 0:
        return finding
    cell = origin[finding.location.row].cell

    def move(where: Location) -> Location:
        if where.row >= len(origin) or origin[where.row].cell != cell:
            return where
        return Location(origin[where.row].row, where.column + origin[where.row].shift)

    fix = finding.fix
    if fix is not None:
        edits = tuple(
            e._replace(location=move(e.location), end_location=move(e.end_location))
            for e in fix.edits
        )
        fix = fix._replace(edits=edits)
    return finding._replace(
        location=move(finding.location),
        end_location=move(finding.end_location),
        fix=fix,
        cell=cell,
    )


def check_bytes(
    filename: str,
    raw: bytes,
    settings: Settings,
    mode: Mode,
    verbose: bool = False,
    layout: Layout = FILE,
    project: FileResolver | None = None,
) -> tuple[FileResult, SourceText | None]:
    """Check (and with "fix" or "diff", fix in memory) one file's bytes; nothing is written but
    the summaries of project modules, in the index's store.
    `project`: how names imported from the project's other modules resolve.

    Returns the result and the decoded source, or None where the bytes never got that far.
    """
    result = FileResult(filename)
    notebook = layout.separator is not None
    verdict = prefilter_verdict(raw, settings.selected, lambda: project, notebook)
    if verdict != "parse":
        result.screened_out = verdict == "screened"
        return result, None
    try:
        source = SourceText.decode(raw)
    except SourceError as exc:
        result.findings.append(diagnostic(filename, _DECODE_ERRORS[exc.kind], str(exc), exc.row))
        return result, None
    too_deep = too_deep_for_python(raw)
    if too_deep is not None:
        message, row, column = too_deep
        result.findings.append(
            diagnostic(filename, SYNTAX_ERROR, f"Syntax error: {message}", row, column)
        )
        return result, source

    import libcst as cst

    from tfmemlint.checking.engine import lint_text
    from tfmemlint.running.fix_loop import fix_text

    first = python2_for_python(raw)
    try:
        if mode == "check":
            result.findings = lint_text(
                filename, source.text, settings, layout, recover_first=first, project=project
            )
            result.text = source.text
            return result, source
        fixed_text, fixed, remaining = fix_text(
            filename, source.text, settings, layout, recover_first=first, project=project
        )
    except cst.ParserSyntaxError as exc:
        result.findings.append(_syntax_error(filename, source.text, exc))
        return result, source
    except Exception:  # one file's failure must not stop the run
        result.findings.append(_internal_error(filename, verbose))
        result.internal_error = True
        return result, source

    result.findings = remaining
    result.text = fixed_text if mode == "fix" else source.text
    if fixed_text != source.text:
        result.original, result.fixed_text = source.text, fixed_text
        result.fixed = fixed
    return result, source


def _internal_error(filename: str, verbose: bool) -> Finding:
    """The finding for the exception being handled: its traceback under --verbose."""
    import sys
    import traceback

    if verbose:
        detail = traceback.format_exc()
    else:
        exc = sys.exc_info()[1]
        detail = f"{type(exc).__name__}: {exc}"
    message = f"Internal error; file left unchanged. {detail}"
    return diagnostic(filename, INTERNAL_ERROR, message)


def read_file(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()
