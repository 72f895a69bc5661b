"""The NVML sampler's logic against a fake NVML: pid matching over the process tree, the
device-level fallback for containers, the peak, and GPUs matched by UUID."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest

from tfmemlint.verify.process import ProcessTree, descendants, list_processes
from tfmemlint.verify.sampler import PeakSampler, open_gpu

GIB = 1024**3


@dataclass
class FakeNvml:
    """Per-GPU: (processes as (pid, used bytes)), device used bytes. Advance with `step`."""

    uuids: list[str]
    total: int = 80 * GIB
    frames: list[tuple[list[tuple[int, int | None]], int]] = field(default_factory=list)
    frame: int = 0

    def nvmlDeviceGetCount(self) -> int:
        return len(self.uuids)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> str:
        return self.uuids[index]

    def nvmlDeviceGetHandleByUUID(self, uuid: str) -> str:
        if uuid not in self.uuids:
            raise LookupError(uuid)
        return uuid

    def nvmlDeviceGetName(self, handle: str) -> bytes:
        return f"Fake GPU {handle}".encode()

    def nvmlDeviceGetUUID(self, handle: str) -> str:
        return handle

    def nvmlDeviceGetMemoryInfo(self, handle: str) -> SimpleNamespace:
        used = self.frames[min(self.frame, len(self.frames) - 1)][1] if self.frames else 0
        return SimpleNamespace(total=self.total, used=used)

    def nvmlDeviceGetComputeRunningProcesses(self, handle: str) -> list[SimpleNamespace]:
        processes = self.frames[min(self.frame, len(self.frames) - 1)][0]
        return [SimpleNamespace(pid=pid, usedGpuMemory=used) for pid, used in processes]


def tree_of(table: dict[int, tuple[int, int]], root: int) -> ProcessTree:
    return ProcessTree(root, lister=lambda: table)


# pid -> (parent, start time): 100 is the script, 101 its worker, 102 a grandchild, 7 a stranger.
TABLE = {1: (0, 1), 100: (1, 5), 101: (100, 6), 102: (101, 7), 7: (1, 2)}


def test_descendants_walks_the_whole_tree() -> None:
    assert descendants(100, TABLE) == {100, 101, 102}
    assert descendants(7, TABLE) == {7}


def test_peak_sums_the_tree_by_pid_and_ignores_strangers() -> None:
    nvml = FakeNvml(["GPU-a"])
    nvml.frames = [([], 10 * GIB)]
    gpu = open_gpu(nvml, 0, visible=None)
    sampler, tree = PeakSampler(nvml, gpu), tree_of(TABLE, 100)
    nvml.frames = [
        ([(7, 10 * GIB), (100, 1 * GIB)], 11 * GIB),
        ([(7, 10 * GIB), (100, 2 * GIB), (102, 3 * GIB)], 15 * GIB),
        ([(7, 10 * GIB), (100, 1 * GIB)], 11 * GIB),
    ]
    for nvml.frame in range(3):
        sampler.sample(tree.refresh())
    assert sampler.method == "pid"
    assert sampler.peak_bytes == 5 * GIB


def test_device_delta_fallback_when_pids_are_not_visible() -> None:
    nvml = FakeNvml(["GPU-a"])
    nvml.frames = [([(4242, 10 * GIB)], 10 * GIB)]  # another job, under a host pid
    gpu = open_gpu(nvml, 0, visible=None)
    sampler, tree = PeakSampler(nvml, gpu), tree_of(TABLE, 100)
    nvml.frames = [
        ([(4242, 10 * GIB), (9001, 3 * GIB)], 13 * GIB),  # ours, but under a host pid
        ([(4242, 10 * GIB), (9001, 6 * GIB)], 16 * GIB),
        ([(4242, 10 * GIB)], 10 * GIB),
    ]
    for nvml.frame in range(3):
        sampler.sample(tree.refresh())
    assert sampler.method == "device-delta"
    assert sampler.peak_bytes == 6 * GIB


def test_missing_per_process_figures_fall_back_too() -> None:
    nvml = FakeNvml(["GPU-a"])
    nvml.frames = [([], 1 * GIB)]
    sampler, tree = PeakSampler(nvml, open_gpu(nvml, 0, visible=None)), tree_of(TABLE, 100)
    nvml.frames = [([(100, None)], 3 * GIB)]  # Windows (WDDM) reports no per-process figure
    sampler.sample(tree.refresh())
    assert sampler.method == "device-delta" and sampler.peak_bytes == 2 * GIB


def test_gpus_are_matched_by_uuid_through_cuda_visible_devices() -> None:
    nvml = FakeNvml(["GPU-a", "GPU-b", "GPU-c"])
    assert open_gpu(nvml, 0, visible="2").uuid == "GPU-c"
    assert open_gpu(nvml, 1, visible="GPU-c,GPU-a").uuid == "GPU-a"
    assert open_gpu(nvml, 1, visible=None).uuid == "GPU-b"
    assert open_gpu(nvml, 0, visible="") is None  # every GPU hidden
    assert open_gpu(nvml, 3, visible=None) is None
    assert open_gpu(nvml, 0, visible="GPU-zzz") is None
    assert open_gpu(nvml, 0, visible="GPU-c").uuid == "GPU-c"
    nvml.uuids = ["GPU-1234-aa", "GPU-5678-bb"]
    assert open_gpu(nvml, 0, visible="GPU-56").uuid == "GPU-5678-bb"  # a unique prefix
    assert open_gpu(nvml, 0, visible="GPU-") is None  # ambiguous
    gpu = open_gpu(nvml, 0, visible="1")
    assert gpu.to_json() == {"name": "Fake GPU GPU-5678-bb", "index": 0, "total_bytes": 80 * GIB}


def test_tree_remembers_a_child_that_escaped_and_skips_reused_pids() -> None:
    table = dict(TABLE)
    tree = tree_of(table, 100)
    tree.refresh()
    table[102] = (1, 7)  # reparented to init: no longer below the root, still ours
    assert 102 in tree.survivors()
    table[101] = (1, 99)  # the pid now belongs to a process started later: not ours
    assert 101 not in tree.survivors()


def test_escaped_processes_are_still_sampled() -> None:
    table = dict(TABLE)
    nvml = FakeNvml(["GPU-a"])
    nvml.frames = [([], 0)]
    sampler, tree = PeakSampler(nvml, open_gpu(nvml, 0, visible=None)), tree_of(table, 100)
    tree.refresh()
    table[102] = (1, 7)  # daemonized: reparented away from the script
    nvml.frames = [([(102, 80 * GIB)], 80 * GIB)]
    sampler.sample(tree.refresh())
    assert sampler.method == "pid" and sampler.peak_bytes == 80 * GIB


def test_orphans_adopted_by_a_subreaper_count() -> None:
    table = {1: (0, 1), 50: (1, 2), 100: (50, 5), 300: (50, 9), 301: (300, 10)}
    tree = ProcessTree(100, adopter=50, lister=lambda: table)
    assert tree.refresh() == {100, 300, 301}


def test_real_process_tree_is_seen() -> None:
    if sys.platform != "linux":
        pytest.skip("reads /proc")
    script = "import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)']); print(p.pid, flush=True); time.sleep(30)"
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    try:
        assert {parent.pid, child} <= descendants(parent.pid, list_processes())
    finally:
        os.kill(child, signal.SIGKILL)
        parent.kill()
        parent.wait()
