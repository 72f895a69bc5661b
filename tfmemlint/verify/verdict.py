"""From what a script's process showed to a verdict: was it memory-aware, and did the GPU agree?

The rules (the README's "Verdicts" section says the same):
- A crash (non-zero exit) or a timeout is "error".
- Settings decide memory-awareness, first session wins: TF_FORCE_GPU_ALLOW_GROWTH="true", hidden
  GPUs, or a first session / eager runtime with allow_growth, a fraction, a memory limit or no GPU
  devices. A script that starts no TensorFlow runtime at all reserves nothing and is aware too.
  A script that is not memory-aware fails: it preallocates.
- With a GPU measurement, the peak the process held must also stay within the setting's bound:
  a memory limit: the limit plus CONTEXT_ALLOWANCE (a limit wins over growth, as in TensorFlow);
  a fraction f: f x total plus CONTEXT_ALLOWANCE; growth: twice TensorFlow's own in-use peak
  (the BFC allocator grows in doubling regions) plus CONTEXT_ALLOWANCE, or 90 % of the total when
  TensorFlow's figure is missing; no GPU in use: CONTEXT_ALLOWANCE alone.
"""

from __future__ import annotations

from typing import Any

MIB = 1024 * 1024
# The CUDA context costs 300-500 MiB per process before any tensor; cuDNN and cuBLAS add more.
CONTEXT_ALLOWANCE_BYTES = 1536 * MIB
GROWTH_SLACK = 2
# Without TensorFlow's own figure, growth must at least stay clear of preallocation, which takes
# the total less a reserve of about 1.8 GB on Hopper (97 % and more of an H200).
GROWTH_FALLBACK_SHARE = 0.9


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

    def aware(entry: dict[str, Any]) -> bool:
        # TF_FORCE_GPU_ALLOW_GROWTH=false turns growth off, whatever the config says.
        if forced == "false" and not (
            entry.get("per_process_gpu_memory_fraction")
            or entry.get("memory_limit_mb")
            or entry.get("gpu_count") == 0
        ):
            return False
        return limits_memory(entry)

    sessions = holders(settings)
    eager = [
        e
        for e in settings
        if e["api"] not in ("Session", "InteractiveSession", "train.Server", "environment")
    ]
    eager_aware = any(aware(e) for e in eager)
    if sessions:
        first = sessions[0]
        if first.get("runtime_started_before") and not eager_aware:
            return False, "the eager runtime took the GPU before the first session", first
        what = "server" if first["api"] == "train.Server" else "session"
        if aware(first):
            return True, f"first {what} limits GPU memory", first
        if forced == "false" and limits_memory(first):
            return False, "TF_FORCE_GPU_ALLOW_GROWTH=false overrides allow_growth", first
        return False, f"first {what} preallocates", first
    if eager_aware:
        return _every_gpu(eager, report.get("gpus_seen"))
    if forced == "false" and any(limits_memory(e) for e in eager):
        return False, "TF_FORCE_GPU_ALLOW_GROWTH=false overrides memory growth", None
    if not report.get("eager_runtime_started"):
        return True, "starts no TensorFlow runtime", None
    return False, "eager runtime started with default options: it preallocates", None


def _every_gpu(
    eager: list[dict[str, Any]], seen: list[str] | None
) -> tuple[bool, str, dict[str, Any] | None]:
    """An eager runtime set up before use: by growth alone, it must reach every GPU the
    runtime sees, the visible ones (TensorFlow raises ValueError when growth differs between
    them)."""
    configured = "eager runtime configured before use"
    if not seen or any(limits_memory(e) and e["api"] != "set_memory_growth" for e in eager):
        return True, configured, None
    visible = [e for e in eager if e["api"] == "set_visible_devices" and e.get("devices")]
    if visible:  # TensorFlow compares growth across the visible GPUs only
        seen = [name for name in seen if name in visible[-1]["devices"]]
    grown = {
        e.get("device") for e in eager if e["api"] == "set_memory_growth" and e["allow_growth"]
    }
    missing = [name for name in seen if name not in grown]
    if missing:
        return False, f"memory growth on {len(seen) - len(missing)} of {len(seen)} GPUs", None
    return True, f"{configured}: growth on every GPU ({len(seen)})", None


def holders(settings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The sessions and servers that take GPU memory in this process, in order. A session on an
    in-process server's target runs in that server, under the server's config; one on any other
    target runs on another machine's server, which this process's memory owes nothing to."""
    servers: dict[str, dict[str, Any]] = {}
    holders = []
    for entry in settings:
        if entry["api"] == "train.Server":
            servers.setdefault(entry.get("target") or "", entry)
            holders.append(entry)
        elif entry["api"] in ("Session", "InteractiveSession"):
            target = entry.get("target") or ""
            if target and target in servers:
                holders.append(servers[target])
            elif not target:
                holders.append(entry)
    return holders


def gpu_bound(decider: dict[str, Any] | None, report: dict[str, Any], total_bytes: int) -> int:
    """The most GPU memory the settings allow the process, CUDA context included."""
    environment = report.get("environment") or {}
    visible = environment.get("CUDA_VISIBLE_DEVICES")
    settings = [decider] if decider else (report.get("memory_settings") or [])
    if (visible is not None and visible.strip() in ("", "-1")) or any(
        e.get("gpu_count") == 0 for e in settings
    ):
        return CONTEXT_ALLOWANCE_BYTES  # no GPU in use: at most a context
    # A memory limit wins over growth (TensorFlow drops growth on a GPU with virtual devices).
    limits = [e["memory_limit_mb"] * MIB for e in settings if e.get("memory_limit_mb")]
    if limits:
        return int(min(limits) + CONTEXT_ALLOWANCE_BYTES)
    fractions = [
        e["per_process_gpu_memory_fraction"] * total_bytes
        for e in settings
        if e.get("per_process_gpu_memory_fraction")
    ]
    if fractions:
        return int(min(fractions) + CONTEXT_ALLOWANCE_BYTES)
    tf_peak = report.get("tf_peak_bytes")
    if tf_peak is not None:
        return int(GROWTH_SLACK * tf_peak + CONTEXT_ALLOWANCE_BYTES)
    # Growth, but TensorFlow's own figure is missing: "far below the total" is what is left.
    return int(GROWTH_FALLBACK_SHARE * total_bytes)


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
    if gpu_peak > bound:
        return "fail", f"{why}, but held {gpu_peak / MIB:.0f} MiB > {bound / MIB:.0f} MiB", aware
    return "pass", why, aware
