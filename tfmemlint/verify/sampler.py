"""GPU memory held by a process tree, polled through NVML (nvidia-ml-py's `pynvml`).

The peak is summed over the tree's processes by pid. Inside a container the driver reports host
pids, which match nothing here: then the sampler falls back to the change in the device's used
memory since just before the launch, and says so. GPUs are matched by UUID, so a
CUDA_VISIBLE_DEVICES that renumbers them cannot point the sampler at the wrong card.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

NO_GPU = "no NVIDIA GPU visible"


@dataclass(frozen=True)
class Gpu:
    name: str
    index: int
    uuid: str
    total_bytes: int
    handle: Any

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "index": self.index, "total_bytes": self.total_bytes}


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def load_nvml() -> Any | None:
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # no package, no driver, no GPU: all mean "not measured"
        return None
    return pynvml


def open_gpu(nvml: Any, index: int, visible: str | None = None) -> Gpu | None:
    """The GPU that a child sees as GPU:`index`, honouring CUDA_VISIBLE_DEVICES (`visible`)."""
    if visible is None:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    try:
        if visible is None:
            entries: list[str] = [str(i) for i in range(nvml.nvmlDeviceGetCount())]
        else:
            entries = [e.strip() for e in visible.split(",") if e.strip()]
        if not 0 <= index < len(entries):
            return None
        entry = entries[index]
        if entry.isdigit():
            handle = nvml.nvmlDeviceGetHandleByIndex(int(entry))
        else:
            handle = _by_uuid_prefix(nvml, entry)
        return Gpu(
            name=_text(nvml.nvmlDeviceGetName(handle)),
            index=index,
            uuid=_text(nvml.nvmlDeviceGetUUID(handle)),
            total_bytes=int(nvml.nvmlDeviceGetMemoryInfo(handle).total),
            handle=handle,
        )
    except Exception:
        return None


def _by_uuid_prefix(nvml: Any, prefix: str) -> Any:
    """CUDA accepts any unique prefix of a GPU's UUID in CUDA_VISIBLE_DEVICES."""
    matches = []
    for index in range(nvml.nvmlDeviceGetCount()):
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        if _text(nvml.nvmlDeviceGetUUID(handle)).startswith(prefix):
            matches.append(handle)
    if len(matches) != 1:
        raise LookupError(f"{prefix!r} names {len(matches)} GPUs")
    return matches[0]


class PeakSampler:
    """Create it just before the launch (it reads the device's baseline then); call `sample()`
    with the tree's live pids every few tens of milliseconds; read `peak_bytes`."""

    def __init__(self, nvml: Any, gpu: Gpu) -> None:
        self.nvml = nvml
        self.gpu = gpu
        self.baseline_used = self._device_used()
        self.pid_peak = 0
        self.delta_peak = 0
        self.pid_matched = False

    def _device_used(self) -> int:
        return int(self.nvml.nvmlDeviceGetMemoryInfo(self.gpu.handle).used)

    def sample(self, pids: set[int]) -> None:
        try:
            processes = self.nvml.nvmlDeviceGetComputeRunningProcesses(self.gpu.handle)
            used = self._device_used()
        except Exception:
            return  # one failed poll is one missed sample, not a failed run
        ours = [p for p in processes if p.pid in pids]
        if ours and all(p.usedGpuMemory is not None for p in ours):
            self.pid_matched = True
            self.pid_peak = max(self.pid_peak, sum(int(p.usedGpuMemory) for p in ours))
        self.delta_peak = max(self.delta_peak, used - self.baseline_used)

    @property
    def method(self) -> str:
        return "pid" if self.pid_matched else "device-delta"

    @property
    def peak_bytes(self) -> int:
        return self.pid_peak if self.pid_matched else max(self.delta_peak, 0)
