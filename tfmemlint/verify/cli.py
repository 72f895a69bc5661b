"""`tfmemlint verify`: from options to an exit status. The click layer is tfmemlint.faces.cli."""

from __future__ import annotations

import os
import shutil
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

import click

from tfmemlint.configuration.discovery import Missing
from tfmemlint.verify import report, runner
from tfmemlint.verify.sampler import NO_GPU, load_nvml, open_gpu

EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it


def _default_paths() -> tuple[str, ...]:
    """The bundled fixtures: here, or beside the package in a source checkout."""
    for root in (Path.cwd(), Path(__file__).resolve().parents[2]):
        candidate = root / "fixtures" / "after"
        if candidate.is_dir():
            return (os.path.relpath(candidate) if root == Path.cwd() else str(candidate),)
    raise click.UsageError("no PATHS given and no fixtures/after folder found")


def _launch_environment(path: str) -> dict[str, str]:
    """The variables a launch file gives the process it starts, where it writes them out: a
    Dockerfile's image, a script's exports, a `.env` file, the one container of a Compose
    file or manifest."""
    from tfmemlint.reading.launch import kind_of, read_launch_text
    from tfmemlint.reading.launch.model import LaunchError

    raw = Path(path).read_bytes()
    kind = kind_of(path, raw[:64])
    if kind is None:
        raise click.UsageError(f"--launcher {path}: no launch file tfmemlint reads")
    try:
        launch = read_launch_text(kind, raw.decode("utf-8"))
    except (UnicodeDecodeError, LaunchError) as exc:
        raise click.UsageError(f"--launcher {path}: {exc}") from None
    settings = launch.environment()
    if settings is None:
        found = len(launch.processes)
        raise click.UsageError(f"--launcher {path}: it starts {found} containers, not one")
    return {s.variable: s.value for s in settings if s.value is not None}


def main(
    *,
    paths: Sequence[str],
    baseline: str | None,
    timeout: float,
    output_format: str,
    require_gpu: bool,
    gpu_index: int,
    python: str,
    script_args: Sequence[str],
    simulate_gpus: int = 0,
    jobs: int | None = None,
    launcher: str | None = None,
) -> int:
    if shutil.which(python) is None and not os.path.isfile(python):
        raise click.UsageError(f"--python {python!r} is not an interpreter that can be run")
    environment = _launch_environment(launcher) if launcher is not None else {}
    pairs, missing = [], []
    for item in runner.plan(paths or _default_paths(), baseline):
        (missing if isinstance(item, Missing) else pairs).append(item)
    if missing:
        raise click.UsageError(f"no such file or directory: {missing[0].path}")
    if not pairs:
        raise click.UsageError("no Python scripts found in the paths given")

    nvml = load_nvml()
    gpu = open_gpu(nvml, gpu_index) if nvml is not None else None
    if nvml is not None and gpu is None and open_gpu(nvml, 0) is not None:
        raise click.UsageError(f"--gpu {gpu_index}: there is no such visible GPU")
    if gpu is None and require_gpu:
        click.echo(f"tfmemlint verify: {NO_GPU}, and --require-gpu was given", err=True)
        return 1

    options = runner.Options(
        timeout_s=timeout,
        python=python,
        script_args=tuple(script_args),
        gpu=gpu,
        nvml=nvml,
        # On a real GPU nothing is simulated (the probe also stands down where TF sees one).
        simulate_gpus=simulate_gpus if gpu is None else 0,
        jobs=jobs if jobs is not None else runner.default_jobs(gpu),
        bundled=not paths,
        environment=environment,
    )
    compared = baseline is not None
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP)}
    for sig in previous:
        signal.signal(sig, _interrupt)  # a kill or a closed terminal ends the scripts too
    try:
        if sys.stdout.isatty() and output_format == "table":
            from rich.console import Console

            status = Console(stderr=True).status("starting")
            with status:
                result = runner.run_all(
                    pairs,
                    options,
                    on_start=lambda script: status.update(f"running {script}"),
                    compared=compared,
                )
        else:
            result = runner.run_all(pairs, options, compared=compared)
    except KeyboardInterrupt:
        click.echo("tfmemlint verify: interrupted; every script's processes were ended", err=True)
        return EXIT_INTERRUPTED
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    if result.note is not None:
        click.echo(f"tfmemlint verify: {result.note}", err=True)
    if output_format == "json":
        report.write_json(gpu, result, sys.stdout)
    else:
        report.write_table(gpu, result.outcomes, sys.stdout, color=sys.stdout.isatty())
    return 1 if any(o.verdict not in ("pass", "skipped") for o in result.outcomes) else 0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
