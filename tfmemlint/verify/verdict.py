"""From what a script's process showed to a verdict: was it memory-aware, and did the GPU agree?

The rules (the README's "Verdicts" section says the same):
- A crash (non-zero exit) or a timeout is "error".
- Settings decide memory-awareness, first session wins: TF_FORCE_GPU_ALLOW_GROWTH="true", hidden
  GPUs, or a first session / eager runtime with allow_growth, a fraction, a memory limit or no GPU
  devices. A script that starts no TensorFlow runtime at all reserves nothing and is aware too.
  A script that is not memory-aware fails: it preallocates.
- With a GPU measurement, the peak the process held must also stay within the setting's bound:
  growth: at most twice TensorFlow's own in-use peak (the BFC allocator grows in doubling
  regions) plus CONTEXT_ALLOWANCE; a fraction f: f x total plus CONTEXT_ALLOWANCE; a memory limit:
  the limit plus CONTEXT_ALLOWANCE.
"""

from __future__ import annotations

from typing import Any

MIB = 1024 * 1024
# The CUDA context costs 300-500 MiB per process before any tensor; cuDNN and cuBLAS add more.
CONTEXT_ALLOWANCE_BYTES = 1536 * MIB
GROWTH_SLACK = 2


def limits_memory(entry: dict[str, Any]) -> bool:
    """Whether one recorded setting limits GPU memory (or turns the GPU off)."""
    return bool(
        entry.get("allow_growth")
        or entry.get("per_process_gpu_memory_fraction")
        or entry.get("memory_limit_mb")
        or entry.get("gpu_count") == 0
    )


def memory_awareness(report: dict[str, Any]) -> tuple[bool, str, dict[str, Any] | None]:
    """(aware, why, the setting that decided it) for one probe report."""
    environment = report.get("environment") or {}
    forced = environment.get("TF_FORCE_GPU_ALLOW_GROWTH")
    visible = environment.get("CUDA_VISIBLE_DEVICES")
    settings = report.get("memory_settings") or []
    if visible is not None and visible.strip() in ("", "-1"):
        return True, "GPUs hidden by CUDA_VISIBLE_DEVICES", None
    if forced == "true":
        return True, "TF_FORCE_GPU_ALLOW_GROWTH=true", None
    if not report.get("tensorflow_imported"):
        return True, "does not import TensorFlow", None
    sessions = [e for e in settings if e["api"] in ("Session", "InteractiveSession")]
    eager = [e for e in settings if e not in sessions]
    if sessions:
        first = sessions[0]
        aware = limits_memory(first)
        if forced == "false" and not (
            first.get("per_process_gpu_memory_fraction") or first.get("memory_limit_mb")
        ):
            return False, "TF_FORCE_GPU_ALLOW_GROWTH=false overrides allow_growth", first
        why = "first session limits GPU memory" if aware else "first session preallocates"
        return aware, why, first
    if any(limits_memory(e) for e in eager):
        return True, "eager runtime configured before use", None
    if not report.get("eager_runtime_started"):
        return True, "starts no TensorFlow runtime", None
    return False, "eager runtime started with default options: it preallocates", None


def gpu_bound(
    decider: dict[str, Any] | None, report: dict[str, Any], total_bytes: int
) -> int | None:
    """The most GPU memory the settings allow the process, or None when they set no bound."""
    settings = [decider] if decider else (report.get("memory_settings") or [])
    bounds = []
    for entry in settings:
        if entry.get("per_process_gpu_memory_fraction"):
            bounds.append(entry["per_process_gpu_memory_fraction"] * total_bytes)
        if entry.get("memory_limit_mb"):
            bounds.append(entry["memory_limit_mb"] * MIB)
    tf_peak = report.get("tf_peak_bytes")
    growth = any(entry.get("allow_growth") for entry in settings)
    if growth and tf_peak is not None:
        bounds.append(GROWTH_SLACK * tf_peak)
    if not bounds:
        return None
    return int(min(bounds) + CONTEXT_ALLOWANCE_BYTES)


def decide(
    exit_code: int | None,
    timed_out: bool,
    report: dict[str, Any] | None,
    gpu_peak: int | None,
    total_bytes: int | None,
) -> tuple[str, str, bool]:
    """(verdict, reason, memory_aware)."""
    if report is None:
        reason = "timed out" if timed_out else f"exited {exit_code} before the probe could report"
        return "error", reason, False
    aware, why, decider = memory_awareness(report)
    if timed_out:
        return "error", "timed out", aware
    if exit_code != 0:
        return "error", f"exited with status {exit_code}", aware
    if not aware:
        return "fail", why, aware
    if gpu_peak is None or total_bytes is None:
        return "pass", why, aware
    bound = gpu_bound(decider, report, total_bytes)
    if bound is not None and gpu_peak > bound:
        return "fail", f"{why}, but held {gpu_peak / MIB:.0f} MiB > {bound / MIB:.0f} MiB", aware
    return "pass", why, aware
