"""Runs scripts under the probe, side by side up to `--jobs`, samples the GPU, ends every
process, decides."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tfmemlint.configuration.discovery import Missing, discover
from tfmemlint.reading.launch import kind_of
from tfmemlint.verify import process
from tfmemlint.verify.sampler import NO_GPU, Gpu, PeakSampler
from tfmemlint.verify.verdict import decide

PROBE = Path(__file__).with_name("probe.py")
POLL_INTERVAL_S = 0.05
# Without a GPU to sample, the process tree is read (every /proc entry) every few polls only:
# side by side, the readings cost more CPU than the scripts can spare.
TREE_REFRESH_POLLS = 5
# A rise of the device's used memory this large, with no pid of the script in NVML's process
# list, shows that the list holds other pids than ours (a container's): more than any noise, less
# than a CUDA context (300-500 MiB).
PIDS_UNSEEN_BYTES = 64 * 1024**2
PIDS_UNSEEN = (
    "NVML lists GPU processes by pids this machine does not show (a container?), so one "
    "script's peak cannot be told from another's: scripts ran one at a time"
)
PIDS_NEVER_SHOWN = (
    "no script's pids showed in NVML's process list (none used the GPU?), so one script's peak "
    "could not be told from another's: scripts ran one at a time"
)
# Set on Ctrl-C: every running script's tree is ended at once, and no new script starts.
_interrupted = threading.Event()


@dataclass
class Outcome:
    """One run of one script: the fields of the JSON contract."""

    script: str
    exit_code: int | None = None
    duration_s: float = 0.0
    memory_settings: list[dict[str, Any]] = field(default_factory=list)
    memory_aware: bool = False
    gpu_peak_bytes: int | None = None
    gpu_measurement: str | None = None
    tf_peak_bytes: int | None = None
    # What the guest and JAX fixes set, as the process had them (None: not known, or not used).
    tf_visible_gpus: list[str] | None = None
    jax_backend: str | None = None
    jax_environment: dict[str, str | None] | None = None
    keras_backend: str | None = None
    # How many GPUs TensorFlow's device configuration was simulated with (None: none), and
    # each simulated GPU's settings as the runtime started (None: it never started).
    simulated_gpus: int | None = None
    simulated_devices: list[dict[str, Any]] | None = None
    verdict: str = "error"
    reason: str = ""
    output_tail: str = ""
    baseline: Outcome | None = None
    compared: bool = False  # run with --baseline: `baseline` is in the JSON, null if none

    def to_json(self) -> dict[str, Any]:
        data = {
            "script": self.script,
            "exit_code": self.exit_code,
            "duration_s": round(self.duration_s, 3),
            "memory_settings": [
                {
                    k: e.get(k)
                    for k in (
                        "api",
                        "allow_growth",
                        "per_process_gpu_memory_fraction",
                        "memory_limit_mb",
                        "source",
                    )
                }
                for e in self.memory_settings
            ],
            "tf_visible_gpus": self.tf_visible_gpus,
            "jax_backend": self.jax_backend,
            "jax_environment": self.jax_environment,
            "keras_backend": self.keras_backend,
            "simulated_gpus": self.simulated_gpus,
            "simulated_devices": self.simulated_devices,
            "memory_aware": self.memory_aware,
            "gpu_peak_bytes": self.gpu_peak_bytes,
            "gpu_measurement": self.gpu_measurement,
            "tf_peak_bytes": self.tf_peak_bytes,
            "verdict": self.verdict,
            "reason": self.reason,
        }
        if self.compared:
            data["baseline"] = self.baseline.to_json() if self.baseline is not None else None
        return data


@dataclass(frozen=True)
class Options:
    timeout_s: float = 300.0
    python: str = sys.executable
    script_args: Sequence[str] = ()
    gpu: Gpu | None = None
    nvml: Any = None
    adopt_orphans: bool = False
    # GPUs to simulate in each script (a machine without one); 0: none, as on a real GPU.
    simulate_gpus: int = 0
    # How many scripts may run side by side (`--jobs`).
    jobs: int = 1
    # The bundled fixtures run (no PATHS): one whose package is not installed here is skipped.
    bundled: bool = False
    # What a launch file (`--launcher`) gives the scripts' environment.
    environment: Mapping[str, str] = field(default_factory=dict)


def default_jobs(gpu: Gpu | None) -> int:
    """One job per measured GPU (verify measures one); one per core without a GPU."""
    return 1 if gpu is not None else max(1, os.cpu_count() or 1)


def _child_env(options: Options) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env.update(options.environment)
    env["PYTHONUNBUFFERED"] = "1"
    hidden = options.environment.get("CUDA_VISIBLE_DEVICES") in ("", "-1")
    if options.gpu is not None and not hidden:
        env["CUDA_VISIBLE_DEVICES"] = options.gpu.uuid  # the child's GPU:0 is the sampled GPU
    return env


def run_script(
    script: str,
    options: Options,
    on_sample: Callable[[PeakSampler], None] = lambda sampler: None,
    pids_listed: Callable[[], bool] = lambda: False,
) -> Outcome:
    """Run one script to its end, or its timeout. `on_sample` sees the sampler after each poll
    of the GPU. `pids_listed`, asked at the end: whether NVML is known to list this machine's
    pids while the script shared the GPU, so that a script none of whose pids it listed held
    nothing (the device's rise is its neighbours')."""
    outcome = Outcome(script)
    with tempfile.TemporaryDirectory(prefix="tfmemlint-verify-") as work:
        report_path = os.path.join(work, "report.json")
        log_path = os.path.join(work, "output.log")
        simulate = ["--simulate-gpus", str(options.simulate_gpus)] if options.simulate_gpus else []
        command = [options.python, str(PROBE), *simulate, report_path, script]
        command += options.script_args
        timed_out = False
        # Read the device's baseline before the launch, so the script's own use is all delta.
        sampler = PeakSampler(options.nvml, options.gpu) if options.gpu is not None else None
        with open(log_path, "wb") as log:
            started = time.monotonic()
            child = process.launch(command, _child_env(options), log)
            # Set only where the script runs alone on a measured GPU: orphans are its own then.
            adopter = os.getpid() if options.adopt_orphans else None
            tree = process.ProcessTree(child.pid, adopter=adopter)
            try:
                polls = 0
                while child.poll() is None and not _interrupted.is_set():
                    if sampler is not None:
                        sampler.sample(tree.refresh())
                        on_sample(sampler)
                    elif polls % TREE_REFRESH_POLLS == 0:
                        tree.refresh()
                    polls += 1
                    if time.monotonic() - started > options.timeout_s:
                        timed_out = True
                        break
                    time.sleep(POLL_INTERVAL_S)
                if sampler is not None:
                    sampler.sample(tree.refresh())
            finally:
                # Always, even on Ctrl-C: nothing the script started may outlive it.
                process.end_tree(child, tree)
            outcome.duration_s = time.monotonic() - started
        outcome.exit_code = None if timed_out else child.returncode
        report = _read_report(report_path)
        outcome.output_tail = Path(log_path).read_bytes()[-4000:].decode("utf-8", "replace")
    if report is not None:
        outcome.memory_settings = report.get("memory_settings") or []
        outcome.tf_peak_bytes = report.get("tf_peak_bytes")
        outcome.tf_visible_gpus = report.get("tf_visible_gpus")
        outcome.jax_backend = report.get("jax_backend")
        outcome.jax_environment = report.get("jax_environment")
        outcome.keras_backend = report.get("keras_backend")
        simulated = report.get("simulated_gpus")
        if simulated is not None:
            outcome.simulated_gpus = simulated["count"]
            start = simulated.get("at_runtime_start")
            outcome.simulated_devices = start["devices"] if start else None
    if sampler is not None and not sampler.pid_matched and pids_listed():
        outcome.gpu_peak_bytes, outcome.gpu_measurement = 0, "pid"
    elif sampler is not None:
        outcome.gpu_peak_bytes = sampler.peak_bytes
        outcome.gpu_measurement = sampler.method
    total = options.gpu.total_bytes if options.gpu else None
    outcome.verdict, outcome.reason, outcome.memory_aware = decide(
        outcome.exit_code,
        timed_out,
        report,
        outcome.gpu_peak_bytes,
        total,
        skip_when_missing=options.bundled,
    )
    if options.gpu is None and outcome.verdict == "pass":
        outcome.reason += f"; {NO_GPU}, so GPU memory was not measured"
    return outcome


def _read_report(path: str) -> dict[str, Any] | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


@dataclass(frozen=True)
class Pair:
    """A script to run, and its unfixed counterpart (`--baseline`), if any."""

    script: str
    baseline: str | None


def plan(paths: Sequence[str], baseline: str | None) -> Iterator[Pair | Missing]:
    """Each script with its unfixed counterpart (same relative name under `baseline`), if any.
    In a folder, a module inside a package (a folder with `__init__.py`) is no script: it is
    imported by the scripts beside the package, which run with their own folder on sys.path."""
    for root in paths:
        for item in discover([root]):
            if isinstance(item, Missing):
                yield item
                continue
            if (item != root and is_package_module(item)) or kind_of(item) is not None:
                continue  # a package's module, or a launch file: no script to run
            counterpart = None
            if baseline is not None:
                if os.path.isfile(baseline):
                    counterpart = baseline
                else:
                    relative = (
                        os.path.relpath(item, root)
                        if os.path.isdir(root)
                        else os.path.basename(item)
                    )
                    candidate = os.path.join(baseline, relative)
                    counterpart = candidate if os.path.isfile(candidate) else None
            yield Pair(item, counterpart)


def is_package_module(path: str) -> bool:
    return os.path.isfile(os.path.join(os.path.dirname(path), "__init__.py"))


@dataclass(eq=False)
class Scheduled:
    """One script's place in the run."""

    script: str
    alone: bool  # nothing else runs while it does
    shared: bool = False  # another script ran beside it, at some point


class Gate:
    """How many scripts run at once. Without a GPU to measure, up to `jobs`. With one, each
    script's peak is the sum of its own pids in NVML's process list, so scripts share the GPU
    only once a script's pids were seen there; a script that raised the device's use with none of
    its pids listed shows that they never will be, and from then on scripts run one at a time."""

    def __init__(self, jobs: int, measured: bool) -> None:
        self.jobs = jobs
        self.pids_seen = not measured or jobs == 1
        self.serial_reason: str | None = None
        self.running: list[Scheduled] = []
        self.stopping = threading.Event()  # a script's run failed: start no more
        self._condition = threading.Condition()

    @property
    def capacity(self) -> int:
        return self.jobs if self.pids_seen and self.serial_reason is None else 1

    def enter(self, run: Scheduled) -> bool:
        """Wait for `run`'s turn; False when the run is being stopped instead."""
        with self._condition:
            while self.running and (
                run.alone or len(self.running) >= self.capacity or self.running[0].alone
            ):
                self._condition.wait(timeout=0.2)
                if self.stopping.is_set():
                    return False
            for other in self.running:
                other.shared = True
            run.shared = bool(self.running)
            self.running.append(run)
            return True

    def seen(self, sampler: PeakSampler) -> None:
        if sampler.pid_matched and not self.pids_seen:
            with self._condition:
                self.pids_seen = True
                self._condition.notify_all()

    def leave(self, run: Scheduled, outcome: Outcome | None) -> None:
        with self._condition:
            self.running.remove(run)
            unseen = (
                outcome is not None
                and outcome.gpu_measurement == "device-delta"
                and (outcome.gpu_peak_bytes or 0) >= PIDS_UNSEEN_BYTES
            )
            if unseen and not self.pids_seen:  # only measured runs of jobs > 1 wait for pids
                self.serial_reason = PIDS_UNSEEN
            self._condition.notify_all()

    def serial_note(self, scripts: int) -> str | None:
        """Why the scripts ran one at a time though more jobs were asked for, if they did."""
        if self.serial_reason is None and not self.pids_seen and scripts > 1:
            return PIDS_NEVER_SHOWN
        return self.serial_reason


@dataclass
class Result:
    """Every pair's outcomes in the input's order, and the jobs the run kept to."""

    outcomes: list[Outcome]
    jobs: int
    note: str | None = None  # why it ran fewer jobs than asked, if it did


def run_all(
    pairs: Sequence[Pair],
    options: Options,
    on_start: Callable[[str], None] = lambda script: None,
    compared: bool = False,
) -> Result:
    """Run every script and its baseline, up to `options.jobs` at a time, each in its own
    process tree, and give the outcomes in the input's order whatever the finishing order.

    On a measured GPU, an unfixed baseline runs alone (it reserves nearly all of the GPU, which
    would starve its neighbours and shrink its own peak), after the fixed scripts; a script that
    ended in error while it shared the GPU (its neighbour may have taken the memory it needed)
    runs again alone, and that run is reported. Whatever the scripts leave running is ended at
    the end."""
    measured = options.gpu is not None
    runs = [
        Scheduled(script, alone=measured and is_baseline)
        for pair in pairs
        for script, is_baseline in ((pair.baseline, True), (pair.script, False))
        if script is not None
    ]
    gate = Gate(max(1, options.jobs), measured)
    subreaper = process.become_subreaper()
    results: list[Outcome | None] = [None] * len(runs)

    def run(index: int) -> Outcome:
        item = runs[index]
        # Orphans reparented to us count as the script's only while it is the only one running
        # for good; what earlier scripts left behind is ended first, so it never counts.
        alone_for_good = item.alone or gate.jobs == 1 or gate.serial_reason is not None
        adopt = subreaper and measured and alone_for_good
        outcome = None
        try:
            if _interrupted.is_set():
                raise KeyboardInterrupt
            if adopt:
                process.end_leftovers()
            on_start(item.script)
            outcome = run_script(
                item.script,
                replace(options, adopt_orphans=adopt),
                gate.seen,
                lambda: item.shared and gate.pids_seen,
            )
            return outcome
        except BaseException:
            gate.stopping.set()
            raise
        finally:
            gate.leave(item, outcome)

    # The fixed scripts first, then the baselines that must run alone.
    order = sorted(range(len(runs)), key=lambda i: runs[i].alone)
    _interrupted.clear()
    pool = ThreadPoolExecutor(max_workers=gate.jobs)
    try:
        futures = {}
        for index in order:
            if not gate.enter(runs[index]):
                break
            futures[index] = pool.submit(run, index)
        for index, future in futures.items():
            results[index] = future.result()
        for index, outcome in enumerate(results):
            item = runs[index]
            # A timeout is the script's own: it would only take its whole time again.
            crashed = outcome is not None and outcome.exit_code is not None
            if measured and item.shared and crashed and outcome.verdict == "error":
                item.alone, item.shared = True, False
                gate.enter(item)
                results[index] = run(index)
    except BaseException:
        _interrupted.set()  # the running scripts end now, whatever stopped the run
        raise
    finally:
        try:
            pool.shutdown(wait=True, cancel_futures=True)
        finally:
            process.end_leftovers()
    done = iter(results)
    outcomes = []
    for pair in pairs:
        baseline = next(done) if pair.baseline is not None else None
        outcome = next(done)
        assert outcome is not None
        outcome.baseline = baseline
        outcome.compared = compared
        outcomes.append(outcome)
    note = gate.serial_note(len(runs))
    return Result(outcomes, 1 if note is not None else gate.jobs, note)
