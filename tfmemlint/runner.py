"""Runs a check over files: read, pre-filter, lint or fix, write. One bad file never stops the run.

Nothing here imports libcst until a file passes the pre-filter.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, NamedTuple

from tfmemlint.discovery import Exclusions, Missing, discover
from tfmemlint.model import FILE, FileResult, Finding, Layout, Location, Rule
from tfmemlint.prefilter import (
    first_stage,
    may_have_findings,
    needs_project,
    prefilter_verdict,
    python2_for_python,
    too_deep_for_python,
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
from tfmemlint.settings import Settings
from tfmemlint.source import SourceError, SourceText, parse_python, write_atomically

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor

    from tfmemlint.cache import ResultCache
    from tfmemlint.notebook import Origin
    from tfmemlint.project import FileResolver, ProjectIndex

Mode = Literal["check", "fix", "diff"]


def new_project_index(config_root: str | None) -> ProjectIndex:
    """A project index for a run, handed the names the rules start from."""
    from tfmemlint.project import ProjectIndex
    from tfmemlint.rules import api_names

    return ProjectIndex(config_root, api_names())


_DECODE_ERRORS = {
    "nul-bytes": NUL_BYTES,
    "unknown-encoding": UNKNOWN_ENCODING,
    "invalid-encoding": INVALID_ENCODING,
}


def _diagnostic(filename: str, rule: Rule, message: str, row: int = 1, column: int = 1) -> Finding:
    where = Location(row, column)
    return Finding(rule.code, message, filename, where, where)


def _syntax_error(filename: str, text: str, error: Exception) -> Finding:
    """Python's own message and position where it has one: they are what users know."""
    try:
        parse_python(text)
    except SyntaxError as python_error:
        row, column = python_error.lineno or 1, python_error.offset or 1
        message = python_error.msg or "invalid syntax"
        from tfmemlint.recovery import PYTHON2_MESSAGES

        if any(marker in message for marker in PYTHON2_MESSAGES):
            return _diagnostic(filename, PYTHON2_SYNTAX, f"Python 2 syntax: {message}", row, column)
        return _diagnostic(filename, SYNTAX_ERROR, f"Syntax error: {message}", row, column)
    except ValueError:
        pass  # e.g. NUL bytes: fall back to libcst's account
    row, column = getattr(error, "editor_line", 1), getattr(error, "editor_column", 1)
    message = getattr(error, "message", str(error)).splitlines()[0]
    return _diagnostic(filename, SYNTAX_ERROR, f"Syntax error: {message}", row, column)


def check_file(
    filename: str,
    settings: Settings,
    mode: Mode,
    verbose: bool = False,
    raw: bytes | None = None,
    index: ProjectIndex | None = None,
) -> FileResult:
    """Check one file, and under "fix" write it. `raw`: its bytes, when the caller read them.
    `index`: the run's project index (one of this file's own, if not given)."""
    project = (index or new_project_index(settings.config_root)).resolver(filename)
    result = _check_file(filename, settings, mode, verbose, raw, project)
    result.depends_on = project.dependencies()
    return result


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
            raw = _read(filename)
    except OSError as exc:
        message = f"Cannot read file: {exc.strerror or exc}"
        return FileResult(filename, [_diagnostic(filename, READ_ERROR, message)])
    if filename.endswith(".ipynb"):
        return _check_notebook(filename, raw, settings, mode, verbose, project)
    result, source = check_bytes(filename, raw, settings, mode, verbose, project=project)
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
        first = python2_for_python(raw)
        result.findings = lint_text(
            filename, source.text, settings, recover_first=first, project=project
        )
        result.text = source.text
        result.findings.append(_diagnostic(filename, WRITE_FAILED, f"Fix not written: {exc}"))
        result.original = result.fixed_text = None
        result.fixed = 0
    return result


def check_stdin(
    name: str,
    raw: bytes,
    settings: Settings,
    mode: Mode,
    verbose: bool = False,
    in_cells: bool = True,
) -> tuple[FileResult, bytes]:
    """A source read from stdin, or an editor's buffer: its result, and the bytes to hand back,
    fixed or as they came, never nothing, even for a file without findings or one that does not
    parse. A name ending in `.ipynb` takes the bytes for a notebook's JSON, whose findings point
    at cells unless `in_cells` is False: then their rows (and their fixes') are those of the
    module of its code cells (`Notebook.module`). Nothing is written."""
    settings = settings.for_file(name)
    project = new_project_index(settings.config_root).resolver(name)
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
    from tfmemlint.notebook import Notebook, NotebookError

    if not may_have_findings(raw, settings.selected) and not needs_project(raw, settings.selected):
        return FileResult(filename)
    try:
        notebook = Notebook.parse(raw.decode("utf-8"))
    except (UnicodeDecodeError, NotebookError) as exc:
        return FileResult(
            filename, [_diagnostic(filename, READ_ERROR, f"Cannot read notebook: {exc}")]
        )
    module, origin = notebook.module()
    layout = notebook.layout(origin)
    result, _ = check_bytes(
        filename, module.encode("utf-8"), settings, mode, verbose, layout, project
    )
    if in_cells:
        result.findings = [in_cell(finding, origin) for finding in result.findings]
    result.text = None  # rows count within cells, or the cells' module: no one text to quote
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


class NoqaOutcome(NamedTuple):
    """What `--add-noqa` did to one file: lines that got a directive, the findings it left,
    each with why, and the reason the file was not rewritten, if it was not."""

    added: int = 0
    left: tuple[tuple[Finding, str], ...] = ()
    error: str | None = None


def add_noqa(result: FileResult) -> NoqaOutcome:
    """Silence each finding of a checked file with a `# noqa:` comment on its line, written
    atomically; in a notebook, only the cells' sources change."""
    from tfmemlint.suppression import with_noqa

    if not result.findings:
        return NoqaOutcome()
    try:
        raw = _read(result.filename)
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
    from tfmemlint.notebook import Notebook
    from tfmemlint.suppression import with_noqa

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
    """Check (and with "fix" or "diff", fix in memory) one file's bytes; nothing is written.
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
        result.findings.append(_diagnostic(filename, _DECODE_ERRORS[exc.kind], str(exc), exc.row))
        return result, None
    too_deep = too_deep_for_python(raw)
    if too_deep is not None:
        message, row, column = too_deep
        result.findings.append(
            _diagnostic(filename, SYNTAX_ERROR, f"Syntax error: {message}", row, column)
        )
        return result, source

    import libcst as cst

    from tfmemlint.engine import lint_text
    from tfmemlint.fix_loop import fix_text

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
    except Exception as exc:  # one file's failure must not stop the run
        if verbose:
            import traceback

            detail = traceback.format_exc()
        else:
            detail = f"{type(exc).__name__}: {exc}"
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
    yield from Run(list(discover(paths, exclusions)), settings, mode, verbose)


# Below this many files to parse, starting worker processes costs more than it saves.
MIN_FILES_FOR_WORKERS = 8


@dataclass
class RunStats:
    """What a run did and where its time went, for --verbose."""

    walked: int = 0
    from_cache: int = 0
    filtered_out: int = 0
    parsed: int = 0
    fixed: int = 0
    workers: int = 0
    prepare_s: float = 0.0  # stat, cache, read and pre-filter, in this process
    engine_s: float = 0.0  # parse, lint and fix, wall time, in this process or the workers


class _Pending(NamedTuple):
    """A file the engine must see; `raw` and `stat` are what the pre-filter saw, read after
    `read_ns`."""

    path: str
    settings: Settings
    raw: bytes | None
    stat: os.stat_result | None
    read_ns: int = 0


class Run:
    """Checks discovered items. Creating it does the cheap part at once: stat, cache look-up,
    reading and the pre-filter; once enough files need parsing it starts worker processes and
    hands each such file over as soon as it is found. Iterating yields each item's result in
    order, as the engine finishes it."""

    def __init__(
        self,
        items: Sequence[str | Missing],
        settings: Settings,
        mode: Mode,
        verbose: bool = False,
        jobs: int = 1,
        cache: ResultCache | None = None,
    ) -> None:
        self.mode, self.verbose, self.cache = mode, verbose, cache
        self.stats = RunStats(walked=len(items))
        self._config_root = settings.config_root
        self._index: ProjectIndex | None = None
        global _run_index
        _run_index = None  # an earlier run's, in this process, knows an older project
        self._jobs = jobs
        self._pool: ProcessPoolExecutor | None = None
        self._futures: dict[int, Future[FileResult]] = {}
        self._pool_broken = False
        self._slots: list[FileResult | _Pending] = []
        started = time.perf_counter()
        try:
            for item in items:
                slot = self._prepare(item, settings)
                self._slots.append(slot)
                if isinstance(slot, _Pending):
                    self.stats.parsed += 1
                    self._hand_over(len(self._slots) - 1, len(items))
        except BaseException:
            self._stop_pool()
            raise
        self.stats.prepare_s = time.perf_counter() - started

    def _hand_over(self, index: int, total: int) -> None:
        """Start workers once enough files need parsing, and give them each such file as soon
        as it is found: their start (libcst's import) overlaps the rest of the pre-filter.
        A file left without a worker is checked in this process when its turn comes."""
        if self._pool_broken:
            return
        if self._pool is None:
            if self._jobs < 2 or self.stats.parsed < MIN_FILES_FOR_WORKERS:
                return
            # Enough workers for every file that may still need parsing: fork makes them all
            # now, and an idle one costs little (it imports libcst only for its first file).
            at_most = self.stats.parsed + total - len(self._slots)
            self.stats.workers = min(self._jobs, at_most // (MIN_FILES_FOR_WORKERS // 2))
            self._pool = _start_pool(self.stats.workers, self._config_root)
            waiting = [i for i, slot in enumerate(self._slots) if isinstance(slot, _Pending)]
        else:
            waiting = [index]
        from concurrent.futures.process import BrokenProcessPool

        for i in waiting:
            slot = self._slots[i]
            assert isinstance(slot, _Pending)
            try:
                self._futures[i] = self._pool.submit(
                    _check_in_worker, slot, self.mode, self.verbose
                )
            except BrokenProcessPool:  # a worker died (killed, out of memory): no more submits
                self._pool_broken = True
                return

    def index(self) -> ProjectIndex:
        """The run's project index, made when a file first needs it (a cached run never does).
        Workers forked after that start from what it has learnt."""
        global _run_index
        if self._index is None:
            self._index = _run_index = new_project_index(self._config_root)
        return self._index

    def _stop_pool(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)

    def __len__(self) -> int:
        return len(self._slots)

    def _prepare(self, item: str | Missing, settings: Settings) -> FileResult | _Pending:
        if isinstance(item, Missing):
            message = "No such file or directory"
            return FileResult(item.path, [_diagnostic(item.path, READ_ERROR, message)])
        file_settings = settings.for_file(item)
        contents: list[bytes] = []

        def read_once() -> bytes:  # a cache hit on an unchanged stat reads nothing
            if not contents:
                contents.append(_read(item))
            return contents[0]

        read_ns = time.time_ns()  # before the stat and the read: a change after it may not show
        try:
            stat = os.stat(item)
            if self.cache is not None:
                cached = self.cache.lookup(item, file_settings, stat, read_once)
                if cached is not None and (not cached.findings or self.mode == "check"):
                    self.stats.from_cache += 1
                    if cached.findings and not item.endswith(".ipynb"):
                        with contextlib.suppress(SourceError):  # for the report's excerpts
                            cached.text = SourceText.decode(read_once()).text
                    self.cache.served(item)
                    return cached
            raw = read_once()
        except OSError:
            return _Pending(item, file_settings, None, None)  # check_file reports it
        asked: list[FileResolver] = []

        def resolver() -> FileResolver:
            asked.append(self.index().resolver(item))
            return asked[0]

        if not first_stage(raw, file_settings.selected, resolver):
            self.stats.filtered_out += 1
            if self.cache is not None:
                read = asked[0].dependencies() if asked else ()
                self.cache.store(item, file_settings, stat, raw, [], read_ns, read)
            return FileResult(item)
        return _Pending(item, file_settings, raw, stat, read_ns)

    def __iter__(self) -> Iterator[FileResult]:
        started = time.perf_counter()
        try:
            for index, slot in enumerate(self._slots):
                if isinstance(slot, _Pending):
                    result = self._finish(slot, self._futures.get(index))
                    self._remember(slot, result)
                    if result.screened_out:
                        self.stats.parsed -= 1
                        self.stats.filtered_out += 1
                    slot = result
                yield slot
        finally:
            self._stop_pool()
            self.stats.engine_s = time.perf_counter() - started
            if self.cache is not None:
                self.cache.save()

    def _finish(self, pending: _Pending, future: Future[FileResult] | None) -> FileResult:
        if future is not None:
            from concurrent.futures import CancelledError
            from concurrent.futures.process import BrokenProcessPool

            try:
                return future.result()
            except (BrokenProcessPool, CancelledError):
                # A worker died (killed, out of memory), maybe after writing this very file:
                # check it again here, from what is on disk now.
                pending = pending._replace(raw=None, stat=None)
        self.index()  # one for all the files checked in this process
        return _check_pending(pending, self.mode, self.verbose)

    def _remember(self, pending: _Pending, result: FileResult) -> None:
        if self.mode == "fix" and result.fixed:
            self.stats.fixed += 1
        if self.cache is None or pending.raw is None or pending.stat is None:
            return
        if result.internal_error:
            return  # it may be transient, and is reported with its traceback under --verbose
        # Under --fix or --diff, only a clean file is remembered: the cache keeps no fixes.
        if self.mode == "check" or (not result.findings and result.fixed_text is None):
            self.cache.store(
                pending.path,
                pending.settings,
                pending.stat,
                pending.raw,
                result.findings,
                pending.read_ns,
                result.depends_on,
            )


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


# The project index of the run in progress: workers, forked, inherit it.
_run_index: ProjectIndex | None = None


def _check_pending(pending: _Pending, mode: Mode, verbose: bool) -> FileResult:
    return check_file(pending.path, pending.settings, mode, verbose, pending.raw, _run_index)


def _start_pool(workers: int, config_root: str | None) -> ProcessPoolExecutor:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # fork is the quickest start, and safe here: no thread runs yet in this process.
    method = "fork" if sys.platform == "linux" else "spawn"
    context = multiprocessing.get_context(method)
    return ProcessPoolExecutor(
        workers,
        mp_context=context,
        initializer=_start_worker,
        initargs=(os.getpid(), config_root),
    )


class _WorkerEnded(SystemExit):
    """SIGTERM in a worker's task: unwinds it, so that a write in progress removes its
    temporary file, and is never taken for the task's own failure."""


# In a worker: whether a task runs, so that SIGTERM unwinds it rather than ending at once.
_in_task = False


def _check_in_worker(pending: _Pending, mode: Mode, verbose: bool) -> FileResult:
    global _in_task
    _in_task = True
    try:
        try:
            return _check_pending(pending, mode, verbose)
        finally:
            _in_task = False
    except _WorkerEnded as ended:  # also one raised as the flag is cleared
        os._exit(ended.code if isinstance(ended.code, int) else 1)


def _start_worker(parent: int, config_root: str | None = None) -> None:
    """The pool ends its workers with SIGTERM when one of them dies, and so does Linux when the
    parent is killed outright (SIGKILL, the out-of-memory killer): otherwise the worker would
    wait for work forever.

    Outside a task the worker ends at once. There it waits for work or sends a result, and the
    pool's own code takes any exception for a result to send again: with the pipe full and
    nobody reading, it would block forever, and so would the parent's shutdown. Inside a task,
    an exception unwinds it first, so that a write in progress removes its temporary file."""
    import signal

    def leave(signum: int, frame: object) -> None:
        if os.getppid() != parent and hasattr(signal, "alarm"):
            # The parent is gone: whatever the unwinding below runs into, the alarm's default
            # action ends the process once a write in progress had time to clean up.
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            signal.alarm(2)
        if not _in_task:
            os._exit(128 + signum)
        raise _WorkerEnded(128 + signum)

    signal.signal(signal.SIGTERM, leave)
    global _run_index
    if _run_index is None:  # spawned, or forked before the parent needed one: one for this worker
        _run_index = new_project_index(config_root)
    if sys.platform == "linux":
        import ctypes

        pr_set_pdeathsig = 1
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None).prctl(pr_set_pdeathsig, signal.SIGTERM)
        if os.getppid() != parent:  # the parent went before the request
            raise SystemExit(0)
