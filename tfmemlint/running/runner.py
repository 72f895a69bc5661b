"""Runs a check over files: each file checked (`file_check`), in worker processes where there are
enough of them, the results in order. One bad file never stops the run.

Nothing here imports libcst until a file passes the pre-filter.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, NamedTuple, TypeVar

from tfmemlint.checking.prefilter import first_stage, launch_file_may_have_findings
from tfmemlint.configuration.discovery import Exclusions, Missing, discover
from tfmemlint.configuration.settings import Settings
from tfmemlint.model import Dependency, FileResult
from tfmemlint.reading.launch import kind_of
from tfmemlint.reading.source import SourceError, SourceText, without_cycle_collection
from tfmemlint.rules.family import searched_already, words_searched
from tfmemlint.rules.file_errors import READ_ERROR
from tfmemlint.running.file_check import Mode, check_file, diagnostic, new_project_index, read_file

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor

    from tfmemlint.project.index import FileResolver, ProjectIndex
    from tfmemlint.project.summary_store import SummaryStore
    from tfmemlint.running.cache import ResultCache


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
# From this many files that the cache cannot answer, the workers run their pre-filter's first
# stage too, FIRST_STAGE_BATCH files a task, and each file that passes is handed over alone,
# as any other: in this process the first stage is the run's critical path while the workers
# wait (a monorepo's 3,500 files: 2.2 s, against 1.5 s of parsing in all). Below it, a pool's
# start costs more than the first stage it would take over.
FIRST_STAGE_IN_WORKERS = 256
FIRST_STAGE_BATCH = 32
# ...and no file past the one that brings a task to this many bytes. Once every file is read,
# the waiting ones go biggest first: a large module found last would otherwise end the run alone.
FIRST_STAGE_BATCH_BYTES = 256 * 1024
# The batches handed to each worker at a time: enough that none waits for its next, few enough
# that the rest wait here, to go biggest first.
BATCHES_PER_WORKER = 2
# How long the pool's end may wait for its workers once their tasks are done or cancelled.
POOL_END_S = 30.0


class RunStats:
    """What a run did and where its time went, for --verbose."""

    def __init__(self, walked: int = 0) -> None:
        self.walked = walked
        self.from_cache = 0
        self.filtered_out = 0
        self.parsed = 0
        self.fixed = 0
        self.workers = 0
        # stat, cache, read and, unless the workers run it, the pre-filter's first stage
        self.prepare_s = 0.0
        # The rest, wall time, in this process or the workers: waiting for the workers' first
        # stage too, during which they also check the files it passed.
        self.engine_s = 0.0


class _Pending(NamedTuple):
    """A file the engine must see; `raw` and `stat` are what the pre-filter saw, read after
    `read_ns`."""

    path: str
    settings: Settings
    raw: bytes | None
    stat: os.stat_result | None
    read_ns: int = 0
    # A launch file: read in this process, never by a worker (its readers cost less than
    # handing it over, and a pool's start more than a thousand of them).
    launch: bool = False
    # The pre-filter's first stage is still to run: a worker runs it, in a batch.
    unfiltered: bool = False
    # What the first stage found of each word it searched in `raw`: the second stage, in the
    # process that checks the file, asks about the same words.
    words: dict[bytes, bool] | None = None


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
        self._unfiltered: list[int] = []  # the slots whose first stage is still to run
        # The workers' first stages under way, each with its batch's slots.
        self._batches: dict[Future[list[Verdict]], list[int]] = {}
        self._pool_broken = False
        self._slots: list[FileResult | _Pending] = []
        self._python = 0  # the Python files and notebooks among them that need parsing
        self._first_stage_here = jobs < 2 or len(items) < FIRST_STAGE_IN_WORKERS
        started = time.perf_counter()
        try:
            for item in items:
                slot = self._prepare(item, settings)
                self._slots.append(slot)
                if isinstance(slot, _Pending) and slot.unfiltered:
                    self._unfiltered.append(len(self._slots) - 1)
                    self._hand_over_batches(len(items))
                elif isinstance(slot, _Pending):
                    self.stats.parsed += 1
                    if not slot.launch:
                        self._python += 1
                        self._hand_over(len(self._slots) - 1, len(items))
            self._last_batches(len(items))
        except BaseException:
            self._stop_pool()
            raise
        self.stats.prepare_s = time.perf_counter() - started - self.stats.engine_s

    def _hand_over(self, index: int, total: int) -> None:
        """Start workers once enough files need parsing, and give them each such file as soon
        as it is found: their start (libcst's import) overlaps the rest of the pre-filter.
        A file left without a worker is checked in this process when its turn comes."""
        if self._pool_broken:
            return
        if self._pool is None:
            if self._jobs < 2 or self._python < MIN_FILES_FOR_WORKERS:
                return
            # Enough workers for every file that may still need parsing: fork makes them all
            # now, and an idle one costs little (it imports libcst only for its first file).
            at_most = self._python + total - len(self._slots)
            self.stats.workers = min(self._jobs, at_most // (MIN_FILES_FOR_WORKERS // 2))
            self._pool = self._new_pool(self.stats.workers)
            # Those found so far; a file whose first stage is still to run goes in its batch.
            waiting = [
                i
                for i, slot in enumerate(self._slots[: index + 1])
                if isinstance(slot, _Pending) and not (slot.launch or slot.unfiltered)
            ]
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

    def _hand_over_batches(self, total: int) -> None:
        """Once FIRST_STAGE_IN_WORKERS files wait for their first stage, start the workers if
        need be and give them the waiting files, FIRST_STAGE_BATCH a task; then settle the
        batches that came back."""
        if self._pool is None and not self._pool_broken:
            if len(self._unfiltered) < FIRST_STAGE_IN_WORKERS:
                return
            self.stats.workers = self._jobs
            self._pool = self._new_pool(self._jobs)
        if len(self._unfiltered) >= FIRST_STAGE_BATCH:
            self._settle_batches(total, wait=False)  # once a batch: what the workers have done
            self._hand_over_waiting(total, whole_batches=True)

    def _hand_over_waiting(self, total: int, whole_batches: bool) -> None:
        """The files waiting for their first stage, a batch a task, while the workers have room
        for one (with `whole_batches`, a smaller rest keeps waiting)."""
        while self._unfiltered and self._room_for_a_batch():
            size, whole = self._next_batch()
            if whole_batches and not whole:
                return
            batch = self._unfiltered[:size]
            del self._unfiltered[:size]
            self._hand_over_batch(batch, total)

    def _room_for_a_batch(self) -> bool:
        """Whether a batch goes now: the workers hold fewer than BATCHES_PER_WORKER each, or
        there are none (the batch is filtered here)."""
        if self._pool is None or self._pool_broken:
            return True
        return len(self._batches) < BATCHES_PER_WORKER * self.stats.workers

    def _next_batch(self) -> tuple[int, bool]:
        """How many of the waiting files make the next batch (FIRST_STAGE_BATCH at most, and
        none past the one that brings it to FIRST_STAGE_BATCH_BYTES), and whether it is whole:
        that many files, or that many bytes."""
        size = taken = 0
        for i in self._unfiltered[:FIRST_STAGE_BATCH]:
            size, taken = size + 1, taken + self._bytes(i)
            if taken >= FIRST_STAGE_BATCH_BYTES:
                return size, True
        return size, size == FIRST_STAGE_BATCH

    def _bytes(self, index: int) -> int:
        """The size of a waiting file."""
        slot = self._slots[index]
        return len(slot.raw) if isinstance(slot, _Pending) and slot.raw is not None else 0

    def _hand_over_batch(self, batch: list[int], total: int) -> None:
        if self._pool is not None and not self._pool_broken:
            from concurrent.futures.process import BrokenProcessPool

            pendings = [slot for i in batch if isinstance(slot := self._slots[i], _Pending)]
            try:
                self._batches[self._pool.submit(_first_stage_in_worker, pendings)] = batch
                return
            except BrokenProcessPool:  # a worker died: no more submits
                self._pool_broken = True
        self._filter_here(batch, total)

    def _last_batches(self, total: int) -> None:
        """The files still waiting for their first stage, once every file is read: to the
        workers where they run, biggest first, a batch as one comes back; else filtered here
        (a cached run where few files changed starts no worker for them). Then every batch
        settled."""
        if self._pool is not None and not self._pool_broken:
            self._unfiltered.sort(key=self._bytes, reverse=True)
        else:
            batch, self._unfiltered = self._unfiltered, []
            self._filter_here(batch, total)
        while self._unfiltered or self._batches:
            self._hand_over_waiting(total, whole_batches=False)
            self._settle_batches(total, wait=True)

    def _settle_batches(self, total: int, wait: bool) -> None:
        """Take the verdicts of the batches done (with `wait`, once one is): a file ruled out
        is settled, one that passes is handed over. A batch whose worker died is filtered
        here."""
        if not self._batches:
            return
        from concurrent.futures import FIRST_COMPLETED, CancelledError
        from concurrent.futures import wait as wait_for
        from concurrent.futures.process import BrokenProcessPool

        if wait:
            waiting = time.perf_counter()
            done: Iterable[Future[list[Verdict]]] = wait_for(
                self._batches, return_when=FIRST_COMPLETED
            ).done
            self.stats.engine_s += time.perf_counter() - waiting
        else:
            done = [future for future in self._batches if future.done()]
        for future in done:
            batch = self._batches.pop(future)
            try:
                verdicts = future.result()
            except (BrokenProcessPool, CancelledError):
                self._pool_broken = True
                self._filter_here(batch, total)
                continue
            for i, verdict in zip(batch, verdicts, strict=True):
                slot = self._slots[i]
                assert isinstance(slot, _Pending)
                self._settle(i, self._filtered(slot._replace(unfiltered=False), verdict), total)

    def _filter_here(self, batch: list[int], total: int) -> None:
        """Run the first stage of the batch's files here, and settle them."""
        for i in batch:
            slot = self._slots[i]
            assert isinstance(slot, _Pending)
            self._settle(i, self._first_stage(slot._replace(unfiltered=False)), total)

    def _settle(self, index: int, slot: FileResult | _Pending, total: int) -> None:
        """A file's slot once its first stage has run: its result, or the file, handed over."""
        self._slots[index] = slot
        if isinstance(slot, FileResult):
            self.stats.filtered_out += 1
        else:
            self.stats.parsed += 1
            self._python += 1
            self._hand_over(index, total)

    def _first_stage(self, pending: _Pending) -> FileResult | _Pending:
        """The first stage, here."""
        return self._filtered(pending, _passes_first_stage(pending, self.index))

    def _filtered(self, pending: _Pending, verdict: Verdict) -> FileResult | _Pending:
        """The file's result where the first stage rules out a finding (remembered in the
        cache, with the project files its verdict read), else the file, for the engine."""
        if verdict.passes:
            return pending._replace(words=verdict.words)
        assert pending.raw is not None and pending.stat is not None
        if self.cache is not None:
            self.cache.store(
                pending.path,
                pending.settings,
                pending.stat,
                pending.raw,
                [],
                pending.read_ns,
                verdict.read,
            )
        return FileResult(pending.path)

    def index(self) -> ProjectIndex:
        """The run's project index, made when a file first needs it (a cached run never does).
        Workers forked after that start from what it has learnt."""
        global _run_index
        if self._index is None:
            self._index = new_project_index(self._config_root, self._store())
        _run_index = self._index  # this run's, even after another run in this process began
        return self._index

    def _store(self) -> SummaryStore | None:
        """The module summaries this run shares with its workers and later runs, in the cache;
        none under --no-cache."""
        return self.cache.summary_store() if self.cache is not None else None

    def _new_pool(self, workers: int) -> ProcessPoolExecutor:
        return _start_pool(workers, self._config_root, self._store())

    def _stop_pool(self) -> None:
        if self._pool is not None:
            _shut_down(self._pool)

    def __len__(self) -> int:
        return len(self._slots)

    def _prepare(self, item: str | Missing, settings: Settings) -> FileResult | _Pending:
        if isinstance(item, Missing):
            message = "No such file or directory"
            return FileResult(item.path, [diagnostic(item.path, READ_ERROR, message)])
        file_settings = settings.for_file(item)
        contents: list[bytes] = []

        def read_once() -> bytes:  # a cache hit on an unchanged stat reads nothing
            if not contents:
                contents.append(read_file(item))
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
        launch = kind_of(item, raw[:64]) is not None
        pending = _Pending(item, file_settings, raw, stat, read_ns, launch)
        if launch:
            if launch_file_may_have_findings(raw, file_settings.selected):
                return pending
            self.stats.filtered_out += 1
            if self.cache is not None:
                self.cache.store(item, file_settings, stat, raw, [], read_ns, ())
            return FileResult(item)
        if not self._first_stage_here:
            return pending._replace(unfiltered=True)
        slot = self._first_stage(pending)
        if isinstance(slot, FileResult):
            self.stats.filtered_out += 1
        return slot

    def __iter__(self) -> Iterator[FileResult]:
        started = time.perf_counter()
        try:
            for index, slot in enumerate(self._slots):
                if isinstance(slot, _Pending):
                    checked, result = self._finish(index, slot)
                    self._remember(checked, result)
                    if result.screened_out:
                        self.stats.parsed -= 1
                        self.stats.filtered_out += 1
                    slot = result
                yield slot
        finally:
            self._stop_pool()
            self.stats.engine_s += time.perf_counter() - started
            if self.cache is not None:
                self.cache.save()

    def _finish(self, index: int, pending: _Pending) -> tuple[_Pending, FileResult]:
        """The file's result, and the file as it was checked (the bytes read again from disk
        where a worker died on it: such a result is not remembered)."""
        future = self._futures.get(index)
        if future is not None:
            from concurrent.futures import CancelledError
            from concurrent.futures.process import BrokenProcessPool

            try:
                return pending, future.result()
            except (BrokenProcessPool, CancelledError):
                # A worker died (killed, out of memory), maybe after writing this very file:
                # check it again here, from what is on disk now.
                pending = pending._replace(raw=None, stat=None)
        self.index()  # one for all the files checked in this process
        return pending, _check_pending(pending, self.mode, self.verbose)

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


# The project index of the run in progress: workers, forked, inherit it.
_run_index: ProjectIndex | None = None


def _check_pending(pending: _Pending, mode: Mode, verbose: bool) -> FileResult:
    if pending.raw is not None and pending.words:
        searched_already(pending.raw, pending.words)
    return check_file(pending.path, pending.settings, mode, verbose, pending.raw, _run_index)


def _index() -> ProjectIndex:
    assert _run_index is not None  # made by the worker's start, or by `Run.index` here
    return _run_index


class Verdict(NamedTuple):
    """The first stage's verdict on a file."""

    passes: bool
    # The project files the verdict read: the cache's dependencies for a file ruled out.
    read: tuple[Dependency, ...] = ()
    # What it found of each word it searched, for a file that passes.
    words: dict[bytes, bool] | None = None


@without_cycle_collection
def _passes_first_stage(pending: _Pending, index: Callable[[], ProjectIndex]) -> Verdict:
    """The first stage's verdict on the file (the cycle collector waits, as for
    `check_file`: the project walk's trees die with the verdict)."""
    assert pending.raw is not None
    asked: list[FileResolver] = []

    def resolver() -> FileResolver:
        asked.append(index().resolver(pending.path))
        return asked[0]

    if first_stage(pending.raw, pending.settings.selected, resolver):
        return Verdict(True, words=words_searched(pending.raw))
    return Verdict(False, asked[0].dependencies() if asked else ())


def _first_stage_in_worker(pendings: list[_Pending]) -> list[Verdict]:
    """The first stage of a batch of files, in a worker: a worker that dies in it costs its
    batch's first stages, run again in the main process. It writes only module summaries, as a
    task (see `_as_task`)."""
    return _as_task(lambda: [_passes_first_stage(pending, _index) for pending in pendings])


def _shut_down(pool: ProcessPoolExecutor) -> None:
    """Shut the pool down, its running tasks finished. Where a worker missed the pool's SIGTERM
    (one that a dead worker's pool ended while it was still starting, under the handler it
    inherited), the pool would wait for it forever: after POOL_END_S it is killed."""
    manager = getattr(pool, "_executor_manager_thread", None)
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    if manager is None:
        return
    manager.join(POOL_END_S)
    if manager.is_alive():
        for process in processes:
            with contextlib.suppress(Exception):
                process.kill()
        manager.join()


def _start_pool(
    workers: int, config_root: str | None, store: SummaryStore | None
) -> ProcessPoolExecutor:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # fork is the quickest start, and safe here: no thread runs yet in this process.
    method = "fork" if sys.platform == "linux" else "spawn"
    context = multiprocessing.get_context(method)
    return ProcessPoolExecutor(
        workers,
        mp_context=context,
        initializer=_start_worker,
        initargs=(os.getpid(), config_root, store),
    )


class _WorkerEnded(SystemExit):
    """SIGTERM in a worker's task: unwinds it, so that a write in progress removes its
    temporary file, and is never taken for the task's own failure."""


# In a worker: whether a task runs, so that SIGTERM unwinds it rather than ending at once.
_in_task = False


def _check_in_worker(pending: _Pending, mode: Mode, verbose: bool) -> FileResult:
    return _as_task(lambda: _check_pending(pending, mode, verbose))


Done = TypeVar("Done")


def _as_task(work: Callable[[], Done]) -> Done:
    """`work()`, in a worker, as a task: SIGTERM unwinds it, so that a write in progress
    removes its temporary file, and then ends the worker."""
    global _in_task
    _in_task = True
    try:
        try:
            return work()
        finally:
            _in_task = False
    except _WorkerEnded as ended:  # also one raised as the flag is cleared
        os._exit(ended.code if isinstance(ended.code, int) else 1)


def _start_worker(
    parent: int, config_root: str | None = None, store: SummaryStore | None = None
) -> None:
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
        _run_index = new_project_index(config_root, store)
    if sys.platform == "linux":
        import ctypes

        pr_set_pdeathsig = 1
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None).prctl(pr_set_pdeathsig, signal.SIGTERM)
        if os.getppid() != parent:  # the parent went before the request
            raise SystemExit(0)
