"""From what a script's process showed to a verdict: was it memory-aware, and did the GPU agree?

The rules (the README's "Verdicts" section says the same):
- A crash (non-zero exit) or a timeout is "error"; its reason ends with the line that names the
  exception. A bundled fixture that could not import a package not installed here is "skipped".
- Settings decide memory-awareness, first session wins: TF_FORCE_GPU_ALLOW_GROWTH="true", hidden
  GPUs, or a first session / eager runtime with allow_growth, a fraction, a memory limit or no GPU
  devices. A script that starts no TensorFlow runtime at all reserves nothing and is aware too.
  A script that is not memory-aware fails: it preallocates.
- TensorFlow that sees no GPU (set_visible_devices left none, before its runtime started) is aware.
- JAX is judged once it started on a GPU: preallocation off, a memory fraction in (0, 1) or the
  platform allocator make it aware; otherwise it preallocates, and the script fails. JAX on the
  CPU has no GPU memory to judge.
- With a GPU measurement, the peak the process held must also stay within the setting's bound:
  a memory limit: the limit plus CONTEXT_ALLOWANCE (a limit wins over growth, as in TensorFlow);
  a fraction f: f x total plus CONTEXT_ALLOWANCE; growth: twice TensorFlow's own in-use peak
  (the BFC allocator grows in doubling regions) plus CONTEXT_ALLOWANCE, or 90 % of the total when
  TensorFlow's figure is missing; no GPU in use: CONTEXT_ALLOWANCE alone. JAX on a GPU adds its
  fraction of the total (JAX's default of 0.75 with preallocation off; all of it for the platform
  allocator, which has no cap).
- With simulated GPUs (no GPU on this machine), a TF2 program is judged by each simulated GPU's
  settings as the runtime started: every visible one must have memory growth (as TensorFlow
  applies it: TF_FORCE_GPU_ALLOW_GROWTH, and no growth once any device has a logical
  configuration) or a memory limit. A crash after an error that TensorFlow raises on such a
  machine (and the simulation raised) is a "fail", with that error as the reason.
"""

from __future__ import annotations

from typing import Any

from tfmemlint.verify.simulated_gpus import ENV_GROWTH, short_name

MIB = 1024 * 1024
# The CUDA context costs 300-500 MiB per process before any tensor; cuDNN and cuBLAS add more.
CONTEXT_ALLOWANCE_BYTES = 1536 * MIB
GROWTH_SLACK = 2
# Without TensorFlow's own figure, growth must at least stay clear of preallocation, which takes
# the total less a reserve of about 1.8 GB on Hopper (97 % and more of an H200).
GROWTH_FALLBACK_SHARE = 0.9
# JAX's platforms that allocate GPU memory, and the share of it that JAX takes unless told.
JAX_GPU_PLATFORMS = ("cuda", "rocm", "gpu")
JAX_DEFAULT_FRACTION = 0.75
# jaxlib turns preallocation off for exactly these values (xla_client.py); "FALSE" leaves it on.
JAX_PREALLOCATE_OFF = ("false", "False", "0")
# How a passing reason goes on from TensorFlow's part to JAX's (see tensorflow_part).
JAX_PART = ", JAX "


def limits_memory(entry: dict[str, Any]) -> bool:
    """Whether one recorded setting limits GPU memory (or turns the GPU off)."""
    return bool(
        entry.get("allow_growth")
        or entry.get("per_process_gpu_memory_fraction")
        or entry.get("memory_limit_mb")
        or entry.get("gpu_count") == 0
    )


def memory_awareness(report: dict[str, Any]) -> tuple[bool, str, dict[str, Any] | None]:
    """(aware, why, the TensorFlow setting that decided it) for one probe report: TensorFlow's
    part and, once JAX started, JAX's. A failing reason names only what fails."""
    aware, why, decider = tensorflow_awareness(report)
    jax_aware, jax_why = jax_awareness(report)
    if jax_why is None:
        return aware, why, decider
    if aware and jax_aware:
        return True, f"{why}, {jax_why}", decider  # jax_why starts "JAX ": see JAX_PART
    failing = [text for ok, text in ((aware, why), (jax_aware, jax_why)) if not ok]
    return False, " and ".join(failing), decider


def tensorflow_part(reason: str) -> str:
    """A passing reason's TensorFlow part, without JAX's or the runner's notes."""
    return reason.split(";")[0].split(JAX_PART)[0]


def tf_sees_no_gpu(report: dict[str, Any]) -> bool:
    """Whether the script left TensorFlow no GPU to use: its visible GPUs are none, and either
    the machine has some (so the script hid them) or a set_visible_devices call hid them before
    the runtime started (without a GPU that call is let through at any time; with one, a late
    call raises and hides nothing)."""
    visible = report.get("tf_visible_gpus")
    if visible is None or visible:
        return False
    if report.get("gpus_seen"):
        return True
    chosen = _visibility(report.get("memory_settings") or [])
    return chosen is not None and chosen.get("gpu_count") == 0


def _visibility(settings: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The set_visible_devices call that stands: the last one before the runtime started (a
    GPU makes a later one raise; without a GPU it changes nothing)."""
    calls = [
        e
        for e in settings
        if e["api"] == "set_visible_devices" and not e.get("runtime_started_before")
    ]
    return calls[-1] if calls else None


def jax_fraction(environment: dict[str, Any]) -> float | None:
    """The memory fraction JAX reads: XLA_CLIENT_MEM_FRACTION, else the older name."""
    text = environment.get("XLA_CLIENT_MEM_FRACTION") or environment.get(
        "XLA_PYTHON_CLIENT_MEM_FRACTION"
    )
    try:
        return float(text) if text else None
    except ValueError:  # JAX's GPU backend fails to start on it: no fraction
        return None


def jax_settings(environment: dict[str, Any]) -> list[str]:
    """What limits JAX's GPU memory in these variables, in words."""
    words = []
    if environment.get("XLA_PYTHON_CLIENT_PREALLOCATE") in JAX_PREALLOCATE_OFF:
        words.append("preallocation off")
    fraction = jax_fraction(environment)
    if fraction is not None and 0 < fraction < 1:
        words.append(f"memory fraction {fraction:g}")
    if (environment.get("XLA_PYTHON_CLIENT_ALLOCATOR") or "").lower() == "platform":
        words.append("allocator platform")
    return words


def jax_awareness(report: dict[str, Any]) -> tuple[bool, str | None]:
    """(aware, why) for JAX; why is None while JAX never started."""
    backend = report.get("jax_backend")
    if backend is None:
        return True, None
    if backend not in JAX_GPU_PLATFORMS:
        return True, f"JAX runs on {backend}: no GPU memory to judge"
    environment = report.get("jax_environment") or {}
    words = jax_settings(environment)
    if words:
        return True, "JAX " + ", ".join(words)
    share = jax_fraction(environment) or JAX_DEFAULT_FRACTION
    return False, f"JAX preallocation on: it reserves {share:.0%} of the GPU as it starts"


def tensorflow_awareness(report: dict[str, Any]) -> tuple[bool, str, dict[str, Any] | None]:
    """(aware, why, the setting that decided it) for TensorFlow alone."""
    environment = report.get("environment") or {}
    forced = environment.get("TF_FORCE_GPU_ALLOW_GROWTH")
    visible = environment.get("CUDA_VISIBLE_DEVICES")
    settings = report.get("memory_settings") or []
    simulated = report.get("simulated_gpus")
    started = simulated.get("at_runtime_start") if simulated is not None else None
    # Simulated GPUs took CUDA_VISIBLE_DEVICES as CUDA does, when they were first listed: a
    # later setting hides nothing, and the GPUs as the runtime started say what it hid.
    hidden = visible is not None and visible.strip() in ("", "-1")
    if hidden and started is None:
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
    visibility = _visibility(settings)
    eager = [
        e
        for e in settings
        if e["api"] not in ("Session", "InteractiveSession", "train.Server", "environment")
        and (e["api"] != "set_visible_devices" or e is visibility)
    ]
    eager_aware = any(aware(e) for e in eager)
    if sessions:
        first = sessions[0]
        if simulated is not None and first.get("simulated_options") is not None:
            # TF2 gave the session without a config the eager context's GPU options.
            aware_now, why, _ = simulated_awareness(
                {"at_runtime_start": first["simulated_options"]}
            )
            held = "limits GPU memory" if aware_now else "preallocates"
            return (
                aware_now,
                f"first session {held}, with the eager context's options: {why}",
                first,
            )
        if started is not None and first.get("runtime_started_before"):
            # The runtime holds the GPUs with the options it started with, GPU by GPU.
            aware_now, why, _ = simulated_awareness(simulated)
            if aware_now:
                return aware_now, why, None
            return False, f"the eager runtime took the GPU before the first session: {why}", first
        if first.get("runtime_started_before") and not eager_aware:
            return False, "the eager runtime took the GPU before the first session", first
        what = "server" if first["api"] == "train.Server" else "session"
        if aware(first):
            return True, f"first {what} limits GPU memory", first
        if forced == "false" and limits_memory(first):
            return False, "TF_FORCE_GPU_ALLOW_GROWTH=false overrides allow_growth", first
        return False, f"first {what} preallocates", first
    if simulated is not None:
        return simulated_awareness(simulated)
    if tf_sees_no_gpu(report):
        return True, "TF sees no GPU", None
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


def simulated_setting(device: dict[str, Any]) -> str:
    """One simulated GPU's setting as the runtime started, in a word or two."""
    if device["memory_limit_mb"]:
        return f"limit {sum(device['memory_limit_mb']):g} MB"
    return "growth" if device["growth_applied"] else "none"


def simulated_awareness(simulated: dict[str, Any]) -> tuple[bool, str, None]:
    """Every GPU visible to the runtime as it started must grow or have a limit."""
    start = simulated.get("at_runtime_start")
    if start is None:
        return True, "starts no TensorFlow runtime", None
    devices = start["devices"]
    visible = [d for d in devices if d["visible"]]
    if not devices:
        return True, "TF sees no GPU: CUDA_VISIBLE_DEVICES hides them all", None
    if not visible:
        return True, f"TF sees no GPU: all {len(devices)} simulated GPUs hidden", None
    bare = [d for d in visible if simulated_setting(d) == "none"]
    if not bare:
        settings = ", ".join(f"{short_name(d['name'])} {simulated_setting(d)}" for d in visible)
        return True, f"configured before use, on {len(visible)} simulated GPUs: {settings}", None
    names = ", ".join(short_name(d["name"]) for d in bare)
    why = ""
    if any(d["memory_growth"] for d in bare):
        if start.get(ENV_GROWTH) == "false":
            why = f" ({ENV_GROWTH}=false overrides its growth)"
        elif start["logical_configuration"]:
            why = " (TensorFlow drops growth once any device has a logical configuration)"
    return (
        False,
        f"simulated {names}: neither memory growth nor a memory limit as the runtime started, "
        f"so it preallocates{why}",
        None,
    )


def simulated_error(report: dict[str, Any]) -> str | None:
    """The last error the simulated GPUs raised, as TensorFlow raises it, in words."""
    simulated = report.get("simulated_gpus") or {}
    # Only one that ended the script: one it caught and went on from is no bug of its own.
    escaped = [error for error in simulated.get("errors") or () if error.get("escaped")]
    if not escaped:
        return None
    error = escaped[-1]
    return (
        f"{error['api']} raised {error['type']}: {error['message']} "
        f"(as TensorFlow does on {simulated['count']} GPUs; simulated)"
    )


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
    """The most GPU memory the settings allow the process, CUDA context included: TensorFlow's
    share and, when JAX runs on the GPU beside it, JAX's."""
    return _tensorflow_bound(decider, report, total_bytes) + jax_bound(report, total_bytes)


def jax_bound(report: dict[str, Any], total_bytes: int) -> int:
    """JAX's share of the GPU under its variables; nothing when it does not run on the GPU."""
    if report.get("jax_backend") not in JAX_GPU_PLATFORMS:
        return 0
    environment = report.get("jax_environment") or {}
    if "allocator platform" in jax_settings(environment):
        return total_bytes  # allocates on demand, with no cap of its own
    fraction = jax_fraction(environment)
    if fraction is None or not 0 < fraction < 1:
        fraction = JAX_DEFAULT_FRACTION
    return int(fraction * total_bytes)


def _tensorflow_bound(
    decider: dict[str, Any] | None, report: dict[str, Any], total_bytes: int
) -> int:
    environment = report.get("environment") or {}
    visible = environment.get("CUDA_VISIBLE_DEVICES")
    settings = [decider] if decider else (report.get("memory_settings") or [])
    if (
        (visible is not None and visible.strip() in ("", "-1"))
        or tf_sees_no_gpu(report)
        or any(e.get("gpu_count") == 0 for e in settings)
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
    skip_when_missing: bool = False,
) -> tuple[str, str, bool]:
    """(verdict, reason, memory_aware). `skip_when_missing`: a script that ended because a package
    is not installed is skipped (the bundled fixtures, which need more than verify installs)."""
    if report is None:
        reason = "timed out" if timed_out else f"exited {exit_code} before the probe could report"
        return "error", reason, False
    aware, why, decider = memory_awareness(report)
    if timed_out:
        return "error", "timed out", aware
    if exit_code != 0:
        raised = simulated_error(report)
        if raised is not None:  # a bug that a machine with GPUs shows: the script's own
            return "fail", f"exited with status {exit_code} after {raised}", False
        missing = report.get("missing_module")
        if skip_when_missing and missing:
            return "skipped", f"needs `{missing}`, which is not installed here", aware
        exception = report.get("exception")
        return (
            "error",
            f"exited with status {exit_code}" + (f": {exception}" if exception else ""),
            aware,
        )
    if not aware:
        return "fail", why, aware
    if gpu_peak is None or total_bytes is None:
        return "pass", why, aware
    bound = gpu_bound(decider, report, total_bytes)
    if gpu_peak > bound:
        return "fail", f"{why}, but held {gpu_peak / MIB:.0f} MiB > {bound / MIB:.0f} MiB", aware
    return "pass", why, aware
