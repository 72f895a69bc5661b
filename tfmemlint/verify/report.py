"""How `tfmemlint verify` shows its results: a rich table, or one JSON object."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import IO, Any

from tfmemlint.verify.runner import Outcome, Result
from tfmemlint.verify.sampler import NO_GPU, Gpu
from tfmemlint.verify.simulated_gpus import short_name
from tfmemlint.verify.verdict import (
    holders,
    jax_settings,
    limits_memory,
    simulated_setting,
    tensorflow_part,
)

VERDICT_STYLE = {"pass": "bold green", "fail": "bold red", "error": "bold yellow", "skipped": "dim"}


def write_json(gpu: Gpu | None, result: Result, out: IO[str]) -> None:
    document = {
        "gpu": gpu.to_json() if gpu else None,
        "jobs": result.jobs,
        "results": [outcome.to_json() for outcome in result.outcomes],
    }
    json.dump(document, out, indent=2)
    out.write("\n")


def size(value: int | None) -> str:
    if value is None:
        return "-"
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if value >= scale:
            return f"{value / scale:.1f} {unit}"
    return f"{value} B"


def describe_settings(outcome: Outcome) -> str:
    """The setting that counted, in a few words: the first session's (or server's), or the
    eager ones; then JAX's, once JAX started."""
    described = _describe_tensorflow(outcome)
    if outcome.jax_backend is None:
        return described
    jax = ", ".join(jax_settings(outcome.jax_environment or {})) or "defaults"
    return f"{described}; JAX on {outcome.jax_backend}: {jax}"


def _describe_tensorflow(outcome: Outcome) -> str:
    entries = outcome.memory_settings
    if outcome.simulated_devices is not None and not holders(entries):
        return _describe_simulated(outcome.simulated_devices)
    shown = holders(entries)[:1] or entries
    if outcome.memory_aware and not any(limits_memory(e) for e in shown):
        return tensorflow_part(outcome.reason)  # e.g. hidden GPUs, TF_FORCE_GPU_ALLOW_GROWTH
    if not shown:
        return "none"
    words = []
    for entry in shown:
        if entry.get("allow_growth"):
            words.append("allow_growth")
        if entry.get("per_process_gpu_memory_fraction"):
            words.append(f"fraction {entry['per_process_gpu_memory_fraction']:g}")
        if entry.get("memory_limit_mb"):
            words.append(f"limit {entry['memory_limit_mb']:g} MB")
        if entry.get("gpu_count") == 0:
            words.append("no GPU")
    source = shown[0]["source"]
    return f"{', '.join(dict.fromkeys(words)) or 'none'} ({source})"


def _describe_simulated(devices: list[dict[str, Any]]) -> str:
    """Each simulated GPU's setting as the runtime started: "GPU:0 growth, GPU:1 none"."""
    visible = [d for d in devices if d["visible"]]
    if not visible:
        return "GPUs hidden (simulated)"
    words = ", ".join(f"{short_name(d['name'])} {simulated_setting(d)}" for d in visible)
    return f"{words} (simulated)"


def _peak(outcome: Outcome, gpu: Gpu | None) -> str:
    if outcome.gpu_peak_bytes is None or gpu is None:
        return "-"
    share = 100 * outcome.gpu_peak_bytes / gpu.total_bytes
    return f"{size(outcome.gpu_peak_bytes)} ({share:.0f}%)"


def _verdict(outcome: Outcome) -> Any:
    from rich.text import Text

    return Text(outcome.verdict, style=VERDICT_STYLE.get(outcome.verdict, ""))


def write_table(gpu: Gpu | None, outcomes: Sequence[Outcome], out: IO[str], color: bool) -> None:
    from rich.console import Console
    from rich.table import Table

    width = None if out.isatty() else 160  # a log or a pipe has no width of its own
    console = Console(file=out, force_terminal=color, no_color=not color, width=width)
    with_baseline = any(o.baseline is not None for o in outcomes)
    table = Table(title="tfmemlint verify", show_lines=False)
    table.add_column("script", overflow="fold")
    if with_baseline:
        table.add_column("before: settings")
        table.add_column("after: settings")
        table.add_column("GPU peak before → after")
        table.add_column("saving", justify="right")
    else:
        table.add_column("settings")
        table.add_column("GPU peak", justify="right")
    table.add_column("verdict")
    table.add_column("reason", overflow="fold")
    for outcome in outcomes:
        row: list[Any] = [outcome.script]
        if with_baseline:
            before = outcome.baseline
            row.append(describe_settings(before) if before else "-")
            row.append(describe_settings(outcome))
            row.append(f"{_peak(before, gpu) if before else '-'} → {_peak(outcome, gpu)}")
            saving = "-"
            if before and before.gpu_peak_bytes is not None and outcome.gpu_peak_bytes is not None:
                saving = size(max(before.gpu_peak_bytes - outcome.gpu_peak_bytes, 0))
            row.append(saving)
        else:
            row += [describe_settings(outcome), _peak(outcome, gpu)]
        # The footer says once what "no GPU" means; the rows keep the reason proper.
        row += [_verdict(outcome), outcome.reason.split("; ")[0]]
        table.add_row(*row)
    console.print(table)
    simulated = sorted({o.simulated_gpus for o in outcomes if o.simulated_gpus})
    if gpu is None and simulated:
        count = "/".join(str(n) for n in simulated)
        console.print(
            f"{NO_GPU}: each script ran under TensorFlow with {count} simulated GPUs; the "
            "verdicts judge its device configuration, and GPU memory was not measured."
        )
    elif gpu is None:
        console.print(
            f"{NO_GPU}: the settings were verified by running each script under TensorFlow; "
            "GPU memory was not measured."
        )
    else:
        console.print(f"GPU {gpu.index}: {gpu.name}, {size(gpu.total_bytes)}")
    counts = {v: sum(o.verdict == v for o in outcomes) for v in VERDICT_STYLE}
    skipped = f", {counts['skipped']} skipped" if counts["skipped"] else ""
    suffix = f" (on {'/'.join(map(str, simulated))} simulated GPUs)" if simulated else ""
    console.print(
        f"verdicts: {counts['pass']} pass, {counts['fail']} fail, {counts['error']} error"
        f"{skipped}{suffix}"
    )
