"""Simulated GPUs: TensorFlow's device configuration API, as on a machine with N GPUs.

The probe loads this module by path, inside the verified script's process, when `verify` runs on
a machine without an NVIDIA GPU. It replaces the device functions of `tf.config` (and so of
`tf.config.experimental`, whose names are the same function objects) for the script's own code:
the script lists N GPUs, configures them, and meets TensorFlow's own errors where TensorFlow
raises them. TensorFlow's and Keras's internals keep the real, CPU-only answers, so nothing is
ever placed on a GPU that does not exist: every op still runs on the CPU.

Standard library only (like the probe), and every rule here is TensorFlow's own, read from
tensorflow/python/eager/context.py (TF 2.21): `set_memory_growth`, `set_visible_devices`,
`set_logical_device_configuration` and `_compute_device_options`, which runs as the runtime
starts.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import Any

# TensorFlow's messages, word for word (tensorflow/python/eager/context.py).
PHYSICAL_AFTER_INIT = "Physical devices cannot be modified after being initialized"
VISIBLE_AFTER_INIT = "Visible devices cannot be modified after being initialized"
VIRTUAL_AFTER_INIT = "Virtual devices cannot be modified after being initialized"
GROWTH_DIFFERS = "Memory growth cannot differ between GPU devices"
GROWTH_WITH_VIRTUAL = "Cannot set memory growth on device when virtual devices configured"
LIMIT_REQUIRED = "Setting memory limit is required for GPU virtual devices"
UNRECOGNIZED = "Unrecognized device: %s"
# What the runtime start is called in the errors the simulation records.
RUNTIME_START = "runtime start"
ENV_GROWTH = "TF_FORCE_GPU_ALLOW_GROWTH"
# Code in these packages sees the real machine: TensorFlow's own placement (MirroredStrategy's
# default devices, Keras's cuDNN and XLA choices) must never pick a GPU that does not exist.
LIBRARY_PACKAGES = frozenset(
    {"tensorflow", "keras", "tf_keras", "keras_hub", "keras_nlp", "keras_cv"}
)
# tensorflow_hub, tensorflow_datasets, ...: installed ones (a project's own `tensorflow_utils.py`
# is the program's code, and sees the simulated GPUs).
LIBRARY_PREFIXES = ("tensorflow_",)
INSTALLED = ("site-packages", "dist-packages")
# The tf.config functions that answer from the simulated machine.
SIMULATED_FUNCTIONS = (
    "list_physical_devices",
    "get_visible_devices",
    "set_visible_devices",
    "list_logical_devices",
    "get_memory_growth",
    "set_memory_growth",
    "get_logical_device_configuration",
    "set_logical_device_configuration",
    "get_device_details",
    "get_memory_info",
    "reset_memory_stats",
    "get_memory_usage",
)


def is_library(module_name: str, path: str | None = None) -> bool:
    """Whether code of this module (from the file `path`) is a library's, which sees the real
    machine."""
    top = module_name.split(".", 1)[0]
    if top in LIBRARY_PACKAGES:
        return True
    parts = os.path.normpath(path or "").split(os.sep)
    return top.startswith(LIBRARY_PREFIXES) and any(part in INSTALLED for part in parts)


def visible_count(machine: int, cuda_visible_devices: str | None) -> int:
    """How many of the machine's GPUs a process sees under CUDA_VISIBLE_DEVICES: CUDA stops at
    the first entry that names no GPU ("" and "-1" hide them all)."""
    if cuda_visible_devices is None:
        return machine
    seen: set[str] = set()
    for entry in (e.strip() for e in cuda_visible_devices.split(",")):
        named = (entry.isdigit() and int(entry) < machine) or entry.startswith(("GPU-", "MIG-"))
        if not named or entry in seen or len(seen) == machine:
            break
        seen.add(entry)
    return len(seen)


def short_name(name: str) -> str:
    """ "/physical_device:GPU:1" -> "GPU:1"."""
    return name.split("device:", 1)[-1]


class SimulatedGpus:
    """N GPUs, their settings as the script makes them, and a snapshot at runtime start.

    `record(api, values)` adds a setting to the probe's report; `runtime_started()` says whether
    TensorFlow's eager runtime has started (its context handle exists).
    """

    def __init__(
        self,
        machine_gpus: int,
        context_module: Any,
        record: Callable[[str, dict[str, Any]], None],
        runtime_started: Callable[[], bool],
    ) -> None:
        self.machine_gpus = machine_gpus
        self.context_module = context_module
        self.record = record
        self.runtime_started = runtime_started
        self.real: dict[str, Callable[..., Any]] = {}
        self.gpus: list[Any] = []
        self.visible: list[Any] = []
        self.growth: dict[Any, Any] = {}
        self.virtual: dict[Any, Any] = {}
        self.at_runtime_start: dict[str, Any] | None = None
        self.errors: list[dict[str, Any]] = []
        self.raised: list[BaseException] = []  # the exceptions behind `errors`, in order
        self.real_gpus: bool | None = None  # None: not looked yet

    # -- set-up -----------------------------------------------------------------------------
    def install(self, config_module: Any) -> None:
        """Replace tf.config's device functions; the API modules import them after this."""
        for name in SIMULATED_FUNCTIONS:
            original = getattr(config_module, name, None)
            if original is not None:
                self.real[name] = original
                setattr(config_module, name, self._dispatch(original, getattr(self, name)))

    def _dispatch(self, original: Callable[..., Any], simulated: Callable[..., Any]) -> Any:
        @functools.wraps(original)
        def api(*args: Any, **kwargs: Any) -> Any:
            caller = sys._getframe(1).f_globals
            if is_library(caller.get("__name__") or "", caller.get("__file__")) or not (
                self.active()
            ):
                return original(*args, **kwargs)
            return simulated(*args, **kwargs)

        return api

    def active(self) -> bool:
        """Whether the simulation stands: never where TensorFlow sees a real GPU. The GPUs are
        made when first needed, as TensorFlow lists physical devices (CUDA reads
        CUDA_VISIBLE_DEVICES then)."""
        if self.real_gpus is None:
            context = self.context_module.context()
            self.real_gpus = bool(context.list_physical_devices("GPU"))
            count = visible_count(self.machine_gpus, os.environ.get("CUDA_VISIBLE_DEVICES"))
            device = self.context_module.PhysicalDevice
            self.gpus = [
                device(name=f"/physical_device:GPU:{i}", device_type="GPU") for i in range(count)
            ]
            self.visible = list(self.gpus)
            self.growth = {gpu: None for gpu in self.gpus}
        return not self.real_gpus

    def _raise(self, kind: type[Exception], message: str, api: str) -> None:
        error = kind(message)
        self.errors.append({"api": api, "type": kind.__name__, "message": message})
        self.raised.append(error)
        raise error

    def _unrecognized(self, device: Any, api: str) -> None:
        self._raise(ValueError, UNRECOGNIZED % repr(device), api)

    # -- tf.config --------------------------------------------------------------------------
    def list_physical_devices(self, device_type: str | None = None) -> list[Any]:
        if device_type == "GPU":
            return list(self.gpus)
        real = self.real["list_physical_devices"](device_type)
        return real + list(self.gpus) if device_type is None else real

    def get_visible_devices(self, device_type: str | None = None) -> list[Any]:
        if device_type == "GPU":
            return list(self.visible)
        real = self.real["get_visible_devices"](device_type)
        return real + list(self.visible) if device_type is None else real

    def list_logical_devices(self, device_type: str | None = None) -> list[Any]:
        # The real call starts the runtime, as in TensorFlow (and may raise at the start).
        real = self.real["list_logical_devices"](device_type)
        if device_type not in (None, "GPU"):
            return real
        logical, index = [], 0
        for gpu in self.visible_in_order():
            for _ in self.virtual.get(gpu) or [None]:
                name = f"/device:GPU:{index}"
                logical.append(self.context_module.LogicalDevice(name=name, device_type="GPU"))
                index += 1
        return real + logical

    def set_visible_devices(self, devices: Any, device_type: str | None = None) -> None:
        api = "set_visible_devices"
        listed = devices if isinstance(devices, list) else [devices]
        physical = self.list_physical_devices()
        for device in listed:
            if device not in physical:
                self._unrecognized(device, api)
            if device_type is not None and device.device_type != device_type:
                self._unrecognized(device, api)
        gpus = [d for d in listed if d in self.gpus]
        chosen = gpus if device_type in (None, "GPU") else self.visible
        started = self.runtime_started()
        if chosen != self.visible and started:
            self._raise(RuntimeError, VISIBLE_AFTER_INIT, api)
        if device_type != "GPU":  # the real devices: TensorFlow's own rules and errors
            self.real["set_visible_devices"]([d for d in listed if d not in self.gpus], device_type)
        self.visible = chosen
        if device_type in (None, "GPU"):
            names = [d.name for d in gpus]
            values = {"gpu_count": len(gpus), "devices": names, "runtime_started_before": started}
            self.record(api, values)

    def get_memory_growth(self, device: Any) -> Any:
        if device not in self.growth:
            return self.real["get_memory_growth"](device)
        return self.growth[device]

    def set_memory_growth(self, device: Any, enable: Any) -> None:
        api = "set_memory_growth"
        if device not in self.growth:  # a CPU, or no device: TensorFlow's own answer
            self.real[api](device, enable)
            return
        if device in self.virtual:
            self._raise(ValueError, GROWTH_WITH_VIRTUAL, api)
        if self.growth[device] != enable:
            if self.runtime_started():
                self._raise(RuntimeError, PHYSICAL_AFTER_INIT, api)
            self.growth[device] = enable
        self.record(api, {"allow_growth": bool(enable), "device": device.name})

    def get_logical_device_configuration(self, device: Any) -> Any:
        if device not in self.growth:
            return self.real["get_logical_device_configuration"](device)
        return self.virtual.get(device)

    def set_logical_device_configuration(self, device: Any, logical_devices: Any) -> None:
        api = "set_logical_device_configuration"
        if device not in self.growth:
            self.real[api](device, logical_devices)
            return
        if any(d.memory_limit is None for d in logical_devices):
            self._raise(ValueError, LIMIT_REQUIRED, api)
        if self.virtual.get(device) != logical_devices:
            if self.runtime_started():
                self._raise(RuntimeError, VIRTUAL_AFTER_INIT, api)
            self.virtual[device] = logical_devices
        limits = [d.memory_limit for d in logical_devices]
        self.record(api, {"memory_limit_mb": sum(limits) or None, "device": device.name})

    def get_device_details(self, device: Any) -> dict[str, Any]:
        if device not in self.growth:
            return self.real["get_device_details"](device)
        # A GPU's details hold its compute capability, which mixed-precision checks read: that
        # of a data-centre GPU (8.0), so they take their GPU branch.
        return {
            "device_name": f"simulated {short_name(device.name)} (tfmemlint verify)",
            "compute_capability": (8, 0),
        }

    def _logical_gpu(self, device: Any) -> bool:
        """Whether `device` ("GPU:1", "/device:GPU:1") names a simulated logical GPU; the
        runtime starts first, as TensorFlow's own call starts it."""
        self.real["list_logical_devices"]()
        name = str(device).split("device:", 1)[-1].upper()
        logical = self.list_logical_devices("GPU")
        return name.startswith("GPU:") and any(short_name(d.name) == name for d in logical)

    def get_memory_info(self, device: Any) -> dict[str, int]:
        if not self._logical_gpu(device):
            return self.real["get_memory_info"](device)  # type: ignore[no-any-return]
        return {"current": 0, "peak": 0}  # simulated: nothing is ever allocated on it

    def reset_memory_stats(self, device: Any) -> None:
        if not self._logical_gpu(device):
            self.real["reset_memory_stats"](device)

    def get_memory_usage(self, device: Any) -> int:
        if not self._logical_gpu(device):
            return self.real["get_memory_usage"](device)  # type: ignore[no-any-return]
        return 0

    # -- the runtime start ------------------------------------------------------------------
    def visible_in_order(self) -> list[Any]:
        return [gpu for gpu in self.gpus if gpu in self.visible]

    def runtime_starting(self, context: Any) -> dict[str, Any]:
        """What TensorFlow's `_compute_device_options` makes of the settings as the runtime
        starts: it raises where growth differs between visible GPUs, and passes growth on only
        where no device (a CPU included) has a logical configuration."""
        visible = self.visible_in_order()
        configured = bool(self.virtual) or bool(getattr(context, "_virtual_device_map", None))
        growths = {self.growth[gpu] for gpu in visible}
        if not configured and len(growths) > 1:
            self._raise(ValueError, GROWTH_DIFFERS, RUNTIME_START)
        allow_growth = growths.pop() if growths and not configured else None
        forced = os.environ.get(ENV_GROWTH)
        # gpu_bfc_allocator.cc reads exactly "true" and "false"; any other value is ignored.
        applied = {"true": True, "false": False}.get(forced or "", bool(allow_growth))
        devices = []
        for gpu in self.gpus:
            limits = [d.memory_limit for d in self.virtual.get(gpu) or []]
            devices.append(
                {
                    "name": gpu.name,
                    "visible": gpu in visible,
                    "memory_growth": None if self.growth[gpu] is None else bool(self.growth[gpu]),
                    "growth_applied": applied and gpu in visible,
                    "memory_limit_mb": limits or None,
                }
            )
        return {
            "devices": devices,
            "logical_configuration": configured,
            ENV_GROWTH: forced,
        }

    def report(self, escaped: BaseException | None = None) -> dict[str, Any]:
        """What was simulated; each error says whether it ended the script (`escaped`, the
        exception that did, or one it was raised from or during)."""
        chain = []
        while escaped is not None and all(escaped is not seen for seen in chain):
            chain.append(escaped)
            escaped = escaped.__cause__ or escaped.__context__
        errors = [
            {**error, "escaped": any(raised is seen for seen in chain)}
            for error, raised in zip(self.errors, self.raised, strict=True)
        ]
        return {
            "count": self.machine_gpus,
            "at_runtime_start": self.at_runtime_start,
            "errors": errors,
        }
