"""The probe that runs inside each verified script's process.

Usage: python probe.py REPORT_PATH SCRIPT [ARGS...]

It runs SCRIPT as `__main__` (as `python SCRIPT ARGS...` would) after hooking TensorFlow's entry
points as they are imported, and at exit writes what it saw to REPORT_PATH as JSON. It uses the
standard library only, because `verify --python` may run it under an interpreter that has no
tfmemlint installed, and it never changes what the script computes: each hook calls the original
and only records.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import json
import os
import runpy
import sys
from typing import Any

_SESSION_MODULE = "tensorflow.python.client.session"
_CONTEXT_MODULE = "tensorflow.python.eager.context"
_ENV_GROWTH = "TF_FORCE_GPU_ALLOW_GROWTH"
_ENV_VISIBLE = "CUDA_VISIBLE_DEVICES"

_settings: list[dict[str, Any]] = []
_state: dict[str, Any] = {"tensorflow_imported": False, "environment": None}


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
    if _state["environment"] is None:
        _state["environment"] = {name: os.environ.get(name) for name in (_ENV_GROWTH, _ENV_VISIBLE)}


def _record_session(session: Any, given: Any) -> None:
    """Record the config the session really holds; `given` is what the caller passed."""
    config = getattr(session, "_config", None)
    api = type(session).__name__
    if getattr(session, "_tfmemlint_bare_interactive", False):
        source = "InteractiveSession default"
    elif given is None:
        source = "eager context default"
    else:
        source = "ConfigProto"
    if config is None:
        _settings.append(_entry(api, source))
        return
    gpu = config.gpu_options
    limits = [
        limit for device in gpu.experimental.virtual_devices for limit in device.memory_limit_mb
    ]
    _settings.append(
        _entry(
            api,
            source,
            allow_growth=bool(gpu.allow_growth),
            per_process_gpu_memory_fraction=float(gpu.per_process_gpu_memory_fraction) or None,
            memory_limit_mb=sum(limits) if limits else None,
            # The eager context's default lists the GPUs the machine has, not a user's choice.
            gpu_count=config.device_count["GPU"]
            if source == "ConfigProto" and "GPU" in config.device_count
            else None,
        )
    )


def _patch_session(module: Any) -> None:
    base, interactive = module.BaseSession, module.InteractiveSession
    original_base, original_interactive = base.__init__, interactive.__init__

    def base_init(self: Any, target: Any = "", graph: Any = None, config: Any = None) -> None:
        _snapshot_environment()
        original_base(self, target, graph, config)
        try:
            _record_session(self, config)
        except Exception as exc:  # the probe must never break the script
            _settings.append(_entry(type(self).__name__, f"unreadable config: {exc}"))

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

    def set_memory_growth(self: Any, dev: Any, enable: bool) -> Any:
        result = set_growth(self, dev, enable)
        _snapshot_environment()
        _settings.append(
            _entry("set_memory_growth", "set_memory_growth", allow_growth=bool(enable))
        )
        return result

    def set_logical_device_configuration(self: Any, dev: Any, virtual_devices: Any) -> Any:
        result = set_logical(self, dev, virtual_devices)
        _snapshot_environment()
        limits = [d.memory_limit for d in virtual_devices if d.memory_limit is not None]
        _settings.append(
            _entry(
                "set_logical_device_configuration",
                "set_logical_device_configuration",
                memory_limit_mb=sum(limits) if limits else None,
            )
        )
        return result

    context_class.set_memory_growth = set_memory_growth
    context_class.set_logical_device_configuration = set_logical_device_configuration


_PATCHES = {_SESSION_MODULE: _patch_session, _CONTEXT_MODULE: _patch_context}


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, inner: importlib.abc.Loader, name: str) -> None:
        self.inner = inner
        self.name = name

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Any:
        return self.inner.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self.inner.exec_module(module)  # type: ignore[attr-defined]
        _state["tensorflow_imported"] = True
        _PATCHES[self.name](module)


class _Finder(importlib.abc.MetaPathFinder):
    """Wraps the loaders of the two TensorFlow modules the probe hooks; others pass through."""

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


def _tensorflow_peak() -> tuple[int | None, bool]:
    """TensorFlow's own peak of in-use GPU memory, and whether its eager runtime ever started."""
    context = sys.modules.get(_CONTEXT_MODULE)
    if context is None:
        return None, False
    started = getattr(context.context(), "_context_handle", None) is not None
    tensorflow = sys.modules.get("tensorflow")
    if tensorflow is None or not (started or _settings):
        return None, started
    try:
        if not tensorflow.config.list_physical_devices("GPU"):
            return None, started
        return int(tensorflow.config.experimental.get_memory_info("GPU:0")["peak"]), started
    except Exception:  # no GPU runtime, or an old TensorFlow: not measured
        return None, started


def _write_report(path: str) -> None:
    peak, started = _tensorflow_peak()
    _snapshot_environment()
    report = {
        "tensorflow_imported": _state["tensorflow_imported"] or "tensorflow" in sys.modules,
        "eager_runtime_started": started,
        "environment": _state["environment"],
        "memory_settings": _settings,
        "tf_peak_bytes": peak,
    }
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(report, handle)


def main() -> None:
    report_path, script, *arguments = sys.argv[1:]
    sys.meta_path.insert(0, _Finder())
    sys.argv = [script, *arguments]
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    try:
        runpy.run_path(script, run_name="__main__")
    finally:
        # Here, not in atexit: TensorFlow's own exit handlers may already have torn it down.
        _write_report(report_path)


if __name__ == "__main__":
    main()
