"""The probe that runs inside each verified script's process.

Usage: python probe.py [--simulate-gpus N] REPORT_PATH SCRIPT [ARGS...]

It runs SCRIPT as `__main__` (as `python SCRIPT ARGS...` would) after hooking TensorFlow's entry
points, and the start of JAX's backends, as they are imported, and at exit writes what it saw to
REPORT_PATH as JSON. It uses the standard library only, because `verify --python` may run it under
an interpreter that has no tfmemlint installed, and it never changes what the script computes:
each hook calls the original and only records. With `--simulate-gpus N` (a machine without a
GPU), tf.config's device functions answer as on a machine with N GPUs instead
(simulated_gpus.py, beside this file, loaded by path for the same reason).
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import runpy
import sys
import threading
import traceback
from typing import Any

_SESSION_MODULE = "tensorflow.python.client.session"
_CONTEXT_MODULE = "tensorflow.python.eager.context"
_CONFIG_MODULE = "tensorflow.python.framework.config"
_SERVER_MODULE = "tensorflow.python.training.server_lib"
_XLA_BRIDGE_MODULE = "jax._src.xla_bridge"
_ENV_GROWTH = "TF_FORCE_GPU_ALLOW_GROWTH"
_ENV_VISIBLE = "CUDA_VISIBLE_DEVICES"
# What JAX's GPU client reads as it starts (jaxlib/xla_client.py, generate_pjrt_gpu_plugin_options).
JAX_VARIABLES = (
    "XLA_PYTHON_CLIENT_PREALLOCATE",
    "XLA_PYTHON_CLIENT_MEM_FRACTION",
    "XLA_CLIENT_MEM_FRACTION",
    "XLA_PYTHON_CLIENT_ALLOCATOR",
)

_settings: list[dict[str, Any]] = []
_state: dict[str, Any] = {
    "tensorflow_imported": False,
    "environment": None,
    "jax_environment": None,
    "tf_visible_gpus": None,
    "report": None,
    "simulate_gpus": 0,
    # The simulated GPUs (a SimulatedGpus), once TensorFlow's eager context is imported.
    "simulation": None,
    # The exception that ended the script, if one did.
    "escaped": None,
}


def _entry(api: str, source: str, **values: Any) -> dict[str, Any]:
    entry = {
        "api": api,
        "allow_growth": None,
        "per_process_gpu_memory_fraction": None,
        "memory_limit_mb": None,
        "gpu_count": None,
        "source": source,
    }
    entry.update(values)
    return entry


def _snapshot_environment() -> None:
    """The environment in force when TensorFlow first reaches for a GPU."""
    if _state["environment"] is not None:
        return
    _state["environment"] = {name: os.environ.get(name) for name in (_ENV_GROWTH, _ENV_VISIBLE)}
    forced = _state["environment"][_ENV_GROWTH]
    if forced is not None:
        # TensorFlow honours exactly "true" and "false"; any other value is ignored.
        growth = {"true": True, "false": False}.get(forced)
        _settings.append(_entry("environment", _ENV_GROWTH, allow_growth=growth))


def _runtime_started() -> bool:
    context = sys.modules.get(_CONTEXT_MODULE)
    return context is not None and getattr(context.context(), "_context_handle", None) is not None


def _save(final: bool = False) -> None:
    """Write what was seen so far, so that even `os._exit` leaves a report behind."""
    path = _state["report"]
    if path is None:
        return
    report = {
        "complete": final,
        "tensorflow_imported": _state["tensorflow_imported"] or "tensorflow" in sys.modules,
        "eager_runtime_started": _runtime_started(),
        "environment": _state["environment"],
        "memory_settings": _settings,
        "tf_peak_bytes": _tensorflow_peak() if final else None,
        "gpus_seen": _gpus_seen() if final else None,
        "tf_visible_gpus": _tf_visible_gpus() if final else _state["tf_visible_gpus"],
        # As JAX read them when it started; until then (and if it never does), as they stand.
        "jax_environment": _state["jax_environment"] or _jax_variables(),
        "jax_backend": _jax_backend(),
        "keras_backend": _keras_backend(),
        "simulated_gpus": _simulation_report(),
        **_ending(_state["escaped"]),
    }
    temporary = f"{path}.tmp"
    try:
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump(report, handle, default=_plain)
        os.replace(temporary, path)
    except (OSError, TypeError, ValueError):
        pass  # the probe must never break the script; the last report written stands


def _ending(escaped: BaseException | None) -> dict[str, str | None]:
    """What ended the script, in the words of its traceback's last line, and the top-level
    module it could not import, if that was it."""
    if escaped is None or (isinstance(escaped, SystemExit) and not isinstance(escaped.code, str)):
        return {"exception": None, "missing_module": None}
    if isinstance(escaped, SystemExit):  # sys.exit("message") prints the message alone
        last = str(escaped.code).strip().splitlines()[-1:] or [""]
        return {"exception": last[0], "missing_module": None}
    kind = type(escaped)
    spelled = kind.__qualname__
    if kind.__module__ not in ("builtins", "__main__"):
        spelled = f"{kind.__module__}.{spelled}"
    # Its own line, as Python prints it: not a SyntaxError's source lines nor a note after it.
    lines = [
        line.strip()
        for text in traceback.format_exception_only(kind, escaped)
        for line in text.splitlines()
    ]
    exception = next((line for line in reversed(lines) if line.startswith(spelled)), spelled)
    name = escaped.name if isinstance(escaped, ModuleNotFoundError) else None
    return {"exception": exception, "missing_module": _not_installed(name)}


def _not_installed(name: str | None) -> str | None:
    """The top-level package of a module that could not be imported, where that package is
    nowhere to be found: not installed. A missing submodule of one that is (a typo in a project
    module's name) is the script's own bug, and so is TensorFlow missing, which verify needs."""
    top = name.split(".")[0] if name else None
    if not top or top == "tensorflow":
        return None
    try:
        found = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    return top if found is None else None


def _plain(value: Any) -> Any:
    """A value JSON has no type for, as one it has: numpy's numbers among them."""
    for kind in (int, float):
        try:
            return kind(value)
        except (TypeError, ValueError):
            continue
    return repr(value)


def _record(entry: dict[str, Any]) -> None:
    _settings.append(entry)
    _save()


def _target(target: Any) -> str:
    """A session's or server's target as text: "" for this process."""
    if isinstance(target, bytes):
        return target.decode("utf-8", "replace")
    return str(target or "")


def _config_values(config: Any, source: str) -> dict[str, Any]:
    """The memory fields of a ConfigProto (none of them for None)."""
    if config is None:
        return {}
    gpu = config.gpu_options
    limits = [
        limit for device in gpu.experimental.virtual_devices for limit in device.memory_limit_mb
    ]
    return {
        "allow_growth": bool(gpu.allow_growth),
        "per_process_gpu_memory_fraction": float(gpu.per_process_gpu_memory_fraction) or None,
        "memory_limit_mb": sum(limits) if limits else None,
        # The eager context's default lists the GPUs the machine has, not a user's choice.
        "gpu_count": config.device_count["GPU"]
        if source != "eager context default" and "GPU" in config.device_count
        else None,
    }


def _record_session(
    session: Any,
    given: Any,
    target: Any,
    runtime_started: bool,
    module: Any,
    simulated: dict[str, Any] | None = None,
) -> None:
    """Record the config the session really holds; `given` is what the caller passed."""
    config = getattr(session, "_config", None)
    api = "InteractiveSession" if isinstance(session, module.InteractiveSession) else "Session"
    if getattr(session, "_tfmemlint_bare_interactive", False):
        source = "InteractiveSession default"
    elif given is None:
        source = "eager context default"
    else:
        source = "ConfigProto"
    values = _config_values(config, source)
    if simulated is not None:
        values["simulated_options"] = simulated
    _record(
        _entry(
            api, source, runtime_started_before=runtime_started, target=_target(target), **values
        )
    )


def _patch_session(module: Any) -> None:
    base, interactive = module.BaseSession, module.InteractiveSession
    original_base, original_interactive = base.__init__, interactive.__init__

    def base_init(self: Any, target: Any = "", graph: Any = None, config: Any = None) -> None:
        _snapshot_environment()
        # An eager runtime started earlier already holds the GPU with its own options.
        started = _runtime_started()
        # Without a config, TF2 hands the session the eager context's GPU options (session.py):
        # on simulated GPUs, theirs, computed as TensorFlow computes them (and raising as it does).
        simulated = _simulated_options() if config is None and _simulating() else None
        original_base(self, target, graph, config)
        try:
            _record_session(self, config, target, started, module, simulated)
        except Exception as exc:  # the probe must never break the script
            _record(_entry(type(self).__name__, f"unreadable config: {exc}"))

    def interactive_init(
        self: Any, target: Any = "", graph: Any = None, config: Any = None
    ) -> None:
        # TensorFlow swaps a falsy config for its own allow_growth default before BaseSession.
        self._tfmemlint_bare_interactive = not config
        original_interactive(self, target, graph, config)

    base.__init__ = base_init
    interactive.__init__ = interactive_init


def _patch_context(module: Any) -> None:
    context_class = module.Context
    set_growth = context_class.set_memory_growth
    set_logical = context_class.set_logical_device_configuration
    set_visible = context_class.set_visible_devices
    ensure_initialized = context_class.ensure_initialized

    def set_memory_growth(self: Any, dev: Any, enable: bool) -> Any:
        result = set_growth(self, dev, enable)
        _snapshot_environment()
        device = getattr(dev, "name", None)
        _record(
            _entry(
                "set_memory_growth", "set_memory_growth", allow_growth=bool(enable), device=device
            )
        )
        return result

    def set_logical_device_configuration(self: Any, dev: Any, virtual_devices: Any) -> Any:
        result = set_logical(self, dev, virtual_devices)
        _snapshot_environment()
        limits = [d.memory_limit for d in virtual_devices if d.memory_limit is not None]
        api = "set_logical_device_configuration"
        _record(_entry(api, api, memory_limit_mb=sum(limits) if limits else None))
        return result

    def set_visible_devices(self: Any, devices: Any, device_type: Any = None) -> Any:
        if _simulating():  # the simulated GPUs record the call, real devices and all
            return set_visible(self, devices, device_type)
        # Without a GPU the call changes nothing, so TensorFlow lets it through even after the
        # runtime started (with one it raises): note the order, for the verdict to judge.
        started = _runtime_started()
        result = set_visible(self, devices, device_type)
        listed = devices if isinstance(devices, (list, tuple)) else [devices]
        gpus = [d for d in listed if getattr(d, "device_type", None) == "GPU"]
        if device_type in (None, "GPU"):
            names = [getattr(d, "name", None) for d in gpus]
            api = "set_visible_devices"
            _state["tf_visible_gpus"] = _visible_gpu_names(self)
            entry = _entry(api, api, gpu_count=len(gpus), devices=names)
            _record({**entry, "runtime_started_before": started})
        return result

    def initialize(self: Any) -> Any:
        _snapshot_environment()  # the runtime reads the environment as it starts
        simulation = _state["simulation"]
        starting = (
            getattr(self, "_context_handle", None) is None
            and getattr(self, "_is_global_context", True)
            and _simulating()
        )
        if not starting:
            return ensure_initialized(self)
        at_start = simulation.runtime_starting(self)  # raises where TensorFlow would
        result = ensure_initialized(self)
        if simulation.at_runtime_start is None:
            simulation.at_runtime_start = at_start
            _save()
        return result

    context_class.set_memory_growth = set_memory_growth
    context_class.set_logical_device_configuration = set_logical_device_configuration
    context_class.set_visible_devices = set_visible_devices
    context_class.ensure_initialized = initialize
    if _state["simulate_gpus"]:
        _state["simulation"] = _load_simulation().SimulatedGpus(
            _state["simulate_gpus"],
            module,
            lambda api, values: _record(_entry(api, api, **values)),
            _runtime_started,
        )


def _patch_config(module: Any) -> None:
    """tf.config's device functions, before the API modules import them by name."""
    if _state["simulation"] is not None:
        _state["simulation"].install(module)


def _load_simulation() -> Any:
    """simulated_gpus.py, by path: the probe runs where tfmemlint may not be importable."""
    name = "_tfmemlint_simulated_gpus"
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "simulated_gpus.py")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _simulated_options() -> dict[str, Any] | None:
    """The simulated GPUs' options as the eager context would compute them now; it raises only
    what TensorFlow raises there (None where the probe itself failed)."""
    simulation = _state["simulation"]
    try:
        context = sys.modules[_CONTEXT_MODULE].context()
        return simulation.runtime_starting(context)  # type: ignore[no-any-return]
    except Exception as exc:
        if any(exc is raised for raised in simulation.raised):
            raise  # TensorFlow's own error, as its `context.config` raises it
        return None  # the probe must never break the script


def _simulating() -> bool:
    simulation = _state["simulation"]
    return simulation is not None and simulation.active()


def _simulation_report() -> dict[str, Any] | None:
    """What the simulated GPUs saw; None without them, or where TensorFlow saw a real GPU."""
    if not _state["simulate_gpus"]:
        return None
    simulation = _state["simulation"]
    if simulation is None:  # TensorFlow never imported: a machine with N GPUs all the same
        return {"count": _state["simulate_gpus"], "at_runtime_start": None, "errors": []}
    if simulation.real_gpus:
        return None
    return simulation.report(_state.get("escaped"))


def _patch_server(module: Any) -> None:
    """A server in this process holds the GPUs with its own config; the sessions that run on its
    target do not (create_local_server builds one too)."""
    server = module.Server
    original = server.__init__

    def server_init(self: Any, *args: Any, **kwargs: Any) -> None:
        _snapshot_environment()
        original(self, *args, **kwargs)
        try:
            config = kwargs["config"] if "config" in kwargs else (args[4:5] or [None])[0]
            values = _config_values(config, "train.Server")
            target = _target(getattr(self, "target", ""))
            _record(_entry("train.Server", "train.Server", target=target, **values))
        except Exception as exc:  # the probe must never break the script
            _record(_entry("train.Server", f"unreadable config: {exc}"))

    server.__init__ = server_init


def _patch_xla_bridge(module: Any) -> None:
    """JAX reads its allocator's variables once, as its first backend starts: `backends()` starts
    them all, on the first call that finds none (jax._src.xla_bridge)."""
    original = getattr(module, "backends", None)
    if original is None:  # a JAX this probe does not know: its backend is still read at exit
        return

    @functools.wraps(original)
    def backends() -> Any:
        starting = not getattr(module, "_backends", None)
        if starting and _state["jax_environment"] is None:
            _state["jax_environment"] = _jax_variables()
        result = original()
        if starting:  # once: JAX asks for its backends often, and an os._exit loses nothing
            _save()
        return result

    module.backends = backends


_PATCHES = {
    _SESSION_MODULE: _patch_session,
    _CONTEXT_MODULE: _patch_context,
    _CONFIG_MODULE: _patch_config,
    _SERVER_MODULE: _patch_server,
    _XLA_BRIDGE_MODULE: _patch_xla_bridge,
}


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, inner: importlib.abc.Loader, name: str) -> None:
        self.inner = inner
        self.name = name

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Any:
        return self.inner.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self.inner.exec_module(module)  # type: ignore[attr-defined]
        if self.name.startswith("tensorflow."):
            _state["tensorflow_imported"] = True
        _PATCHES[self.name](module)


class _Finder(importlib.abc.MetaPathFinder):
    """Wraps the loaders of the modules the probe hooks; others pass through."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name not in _PATCHES:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _PatchingLoader(spec.loader, name)
                return spec
        return None


def _tensorflow_peak() -> int | None:
    """TensorFlow's own peak of in-use GPU memory, read only where reading it cannot start a
    GPU allocator that the script never started (that would take the GPU at exit)."""
    tensorflow = sys.modules.get("tensorflow")
    if tensorflow is None or _simulating():  # simulated GPUs hold no memory to read
        return None
    sessions = [
        e for e in _settings if e["api"] in ("Session", "InteractiveSession", "train.Server")
    ]
    gpu_in_use = _runtime_started() or (sessions and sessions[0].get("gpu_count") != 0)
    visible = (_state["environment"] or {}).get(_ENV_VISIBLE)
    if not gpu_in_use or (visible is not None and visible.strip() in ("", "-1")):
        return None
    try:
        if not tensorflow.config.list_physical_devices("GPU"):
            return None
        return int(tensorflow.config.experimental.get_memory_info("GPU:0")["peak"])
    except Exception:  # no GPU runtime, or an old TensorFlow: not measured
        return None


def _gpus_seen() -> list[str] | None:
    """The physical GPUs the script's TensorFlow lists (listing starts no runtime); None when
    it never imported TensorFlow."""
    tensorflow = sys.modules.get("tensorflow")
    if tensorflow is None:
        return None
    if _simulating():
        return [device.name for device in _state["simulation"].gpus]
    try:
        return [device.name for device in tensorflow.config.list_physical_devices("GPU")]
    except Exception:  # an old or partly imported TensorFlow: not known
        return None


def _visible_gpu_names(context: Any) -> list[str] | None:
    """The GPUs an eager context lets its runtime use (reading the list starts nothing)."""
    try:
        return [device.name for device in context.get_visible_devices("GPU")]
    except Exception:  # an old or partly imported TensorFlow: not known
        return None


def _tf_visible_gpus() -> list[str] | None:
    """The GPUs left visible to the script's TensorFlow at the end; None when it never
    imported TensorFlow."""
    context = sys.modules.get(_CONTEXT_MODULE)
    if "tensorflow" not in sys.modules or context is None:
        return None
    if _simulating():
        return [device.name for device in _state["simulation"].visible_in_order()]
    try:
        return _visible_gpu_names(context.context())
    except Exception:  # the context cannot be had: not known
        return None


def _jax_variables() -> dict[str, str | None]:
    return {name: os.environ.get(name) for name in JAX_VARIABLES}


def _jax_backend() -> str | None:
    """The platform of JAX's default backend, once the script started JAX; None before, or
    without JAX. Read from the backends JAX already holds: asking JAX would start them."""
    bridge = sys.modules.get(_XLA_BRIDGE_MODULE)
    if bridge is None or not getattr(bridge, "_backends", None):
        return None
    try:
        return str(bridge._default_backend.platform)
    except Exception:  # a JAX that keeps its backends otherwise: not known
        return None


def _keras_backend() -> str | None:
    """The backend Keras chose at its import; None when the script never imported Keras."""
    keras = sys.modules.get("keras")
    if keras is None:
        return None
    for owner in ("config", "backend"):  # Keras 3 has keras.config; Keras 2 only keras.backend
        backend = getattr(getattr(keras, owner, None), "backend", None)
        if callable(backend):
            try:
                return str(backend())
            except Exception:  # a Keras still being imported: try the other
                continue
    return None


def main() -> None:
    arguments = sys.argv[1:]
    if arguments[:1] == ["--simulate-gpus"]:
        _state["simulate_gpus"] = int(arguments[1])
        arguments = arguments[2:]
    report_path, script, *arguments = arguments
    _state["report"] = report_path
    sys.meta_path.insert(0, _Finder())
    sys.argv = [script, *arguments]
    # As `python script` does: the folder of the real file, a symbolic link resolved.
    sys.path[0] = os.path.dirname(os.path.realpath(script))
    _save()
    try:
        runpy.run_path(script, run_name="__main__")
    except BaseException as escaped:
        _state["escaped"] = escaped  # what ended the script, for the simulation's report
        raise
    finally:
        # Threads the script left running may still create sessions: wait for them, as Python
        # itself does at exit. Then report, before TensorFlow's own exit handlers tear it down.
        for thread in threading.enumerate():
            if thread is not threading.main_thread() and not thread.daemon:
                thread.join()
        _snapshot_environment()
        _save(final=True)


if __name__ == "__main__":
    main()
