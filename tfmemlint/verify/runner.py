"""Runs scripts one at a time under the probe, samples the GPU, ends every process, decides."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tfmemlint.discovery import Missing, discover
from tfmemlint.verify import process
from tfmemlint.verify.sampler import NO_GPU, Gpu, PeakSampler
from tfmemlint.verify.verdict import decide

PROBE = Path(__file__).with_name("probe.py")
POLL_INTERVAL_S = 0.05
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


def _child_env(options: Options) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env["PYTHONUNBUFFERED"] = "1"
    if options.gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = options.gpu.uuid  # the child's GPU:0 is the sampled GPU
    return env


def run_script(script: str, options: Options) -> Outcome:
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
            # One script at a time (the GPU case): orphans we adopt are this script's.
            adopter = os.getpid() if options.adopt_orphans else None
            tree = process.ProcessTree(child.pid, adopter=adopter)
            try:
                while child.poll() is None and not _interrupted.is_set():
                    pids = tree.refresh()
                    if sampler is not None:
                        sampler.sample(pids)
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
    if sampler is not None:
        outcome.gpu_peak_bytes = sampler.peak_bytes
        outcome.gpu_measurement = sampler.method
    total = options.gpu.total_bytes if options.gpu else None
    outcome.verdict, outcome.reason, outcome.memory_aware = decide(
        outcome.exit_code, timed_out, report, outcome.gpu_peak_bytes, total
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
class Job:
    script: str
    baseline: str | None


def plan(paths: Sequence[str], baseline: str | None) -> Iterator[Job | Missing]:
    """Each script with its unfixed counterpart (same relative name under `baseline`), if any.
    In a folder, a module inside a package (a folder with `__init__.py`) is no script: it is
    imported by the scripts beside the package, which run with their own folder on sys.path."""
    for root in paths:
        for item in discover([root]):
            if isinstance(item, Missing):
                yield item
                continue
            if item != root and is_package_module(item):
                continue
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
            yield Job(item, counterpart)


def is_package_module(path: str) -> bool:
    return os.path.isfile(os.path.join(os.path.dirname(path), "__init__.py"))


def run_all(
    jobs: Sequence[Job],
    options: Options,
    on_start: Callable[[str], None] = lambda script: None,
    compared: bool = False,
) -> list[Outcome]:
    """Run every script and its baseline. Without a GPU to sample, runs share the CPU cores;
    with one they go one at a time, so that one script's memory never shows in another's peak.
    Whatever the scripts leave running is ended at the end."""
    scripts = [s for job in jobs for s in (job.baseline, job.script) if s is not None]
    subreaper = process.become_subreaper()
    sequential = options.gpu is not None
    options = replace(options, adopt_orphans=subreaper and sequential)

    def run(script: str) -> Outcome:
        if _interrupted.is_set():
            raise KeyboardInterrupt
        on_start(script)
        return run_script(script, options)

    workers = 1 if sequential else max(1, min(len(scripts), os.cpu_count() or 1))
    _interrupted.clear()
    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        results = list(pool.map(run, scripts))
    except KeyboardInterrupt:
        _interrupted.set()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        process.end_leftovers()
    by_script = iter(results)
    outcomes = []
    for job in jobs:
        baseline = next(by_script) if job.baseline is not None else None
        outcome = next(by_script)
        outcome.baseline = baseline
        outcome.compared = compared
        outcomes.append(outcome)
    return outcomes
