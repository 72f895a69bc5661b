"""`tfmemlint verify --jobs`: scripts side by side in real processes, the report in the input's
order, and, against an NVML whose process list is what real child processes write, per-script
peaks on a shared GPU, the fall back to one job at a time where NVML's pids are not ours, and
baselines that run alone."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.conftest import run_cli
from tfmemlint.verify import runner
from tfmemlint.verify.sampler import Gpu

MIB = 1024**2

# Each script notes when it started and ended, and, while it runs, holds `size` bytes of the
# fake GPU (a file named by its pid, which the fake NVML reads). `fail_if_shared`: it exits 1
# when another script is running beside it.
SCRIPT = """\
import os, sys, time
log, gpu, name, size, hold, fail_if_shared = {log!r}, {gpu!r}, {name!r}, {size}, {hold}, {fail_if_shared}
running = os.path.join(log, "running")
os.makedirs(running, exist_ok=True)
open(os.path.join(running, name), "w").close()
with open(os.path.join(log, name + ".start"), "w") as out:
    out.write(repr(time.time()))
if size:
    with open(os.path.join(gpu, str(os.getpid())), "w") as out:
        out.write(str(size))
time.sleep(hold)
shared = len(os.listdir(running)) > 1
if size:
    os.remove(os.path.join(gpu, str(os.getpid())))
os.remove(os.path.join(running, name))
with open(os.path.join(log, name + ".end"), "w") as out:
    out.write(repr(time.time()))
sys.exit(1 if fail_if_shared and shared else 0)
"""


@dataclass
class Scripts:
    folder: Path
    log: Path
    gpu: Path

    def add(
        self, name: str, size: int = 0, hold: float = 1.0, fail_if_shared: bool = False
    ) -> Path:
        path = self.folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        body = SCRIPT.format(
            log=str(self.log),
            gpu=str(self.gpu),
            name=path.relative_to(self.folder).as_posix().replace("/", "_"),
            size=size,
            hold=hold,
            fail_if_shared=fail_if_shared,
        )
        path.write_text(body)
        return path

    def span(self, name: str) -> tuple[float, float]:
        key = name.replace("/", "_")
        return (
            float((self.log / f"{key}.start").read_text()),
            float((self.log / f"{key}.end").read_text()),
        )

    def overlapped(self, a: str, b: str) -> bool:
        (start_a, end_a), (start_b, end_b) = self.span(a), self.span(b)
        return start_a < end_b and start_b < end_a


@pytest.fixture
def scripts(tmp_path: Path) -> Scripts:
    made = Scripts(tmp_path / "scripts", tmp_path / "log", tmp_path / "gpu")
    for folder in (made.folder, made.log, made.gpu):
        folder.mkdir()
    return made


class ChildrenNvml:
    """An NVML whose one GPU holds what the running scripts wrote to `folder`. `pid_offset`:
    the pids it lists are the scripts' plus this, as a driver outside a container lists them."""

    def __init__(self, folder: Path, pid_offset: int = 0) -> None:
        self.folder = folder
        self.pid_offset = pid_offset

    def _held(self) -> dict[int, int]:
        """What each live process holds (a process that was killed frees its memory)."""
        held = {}
        for entry in self.folder.iterdir():
            try:
                if Path(f"/proc/{entry.name}").exists():
                    held[int(entry.name)] = int(entry.read_text() or 0)
            except (OSError, ValueError):
                continue  # being written or removed: the next poll sees it
        return held

    def nvmlDeviceGetMemoryInfo(self, handle: str) -> SimpleNamespace:
        return SimpleNamespace(total=80 * 1024 * MIB, used=sum(self._held().values()))

    def nvmlDeviceGetComputeRunningProcesses(self, handle: str) -> list[SimpleNamespace]:
        return [
            SimpleNamespace(pid=pid + self.pid_offset, usedGpuMemory=used)
            for pid, used in self._held().items()
        ]


def _on_gpu(nvml: ChildrenNvml, jobs: int) -> runner.Options:
    gpu = Gpu("Fake GPU", 0, "GPU-fake", 80 * 1024 * MIB, "GPU-fake")
    return runner.Options(timeout_s=60, gpu=gpu, nvml=nvml, jobs=jobs)


# Without a GPU, whatever this machine has: the CLI tests are about the CPU's defaults.
NO_GPU = {"CUDA_VISIBLE_DEVICES": ""}


def _pairs(folder: Path, baseline: Path | None = None) -> list[runner.Pair]:
    planned = runner.plan([str(folder)], str(baseline) if baseline else None)
    return [pair for pair in planned if isinstance(pair, runner.Pair)]


def test_jobs_run_side_by_side_and_report_in_the_input_order(scripts: Scripts) -> None:
    # The first script in the input's order ends last.
    scripts.add("a_slow.py", hold=3.0)
    scripts.add("b_quick.py", hold=0.5)
    scripts.add("c_quick.py", hold=0.5)
    result = run_cli(
        "verify", "--output-format", "json", "--jobs", "3", str(scripts.folder), env=NO_GPU
    )
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["jobs"] == 3
    assert [Path(r["script"]).name for r in document["results"]] == [
        "a_slow.py",
        "b_quick.py",
        "c_quick.py",
    ]
    assert scripts.overlapped("a_slow.py", "b_quick.py")
    assert scripts.overlapped("a_slow.py", "c_quick.py")
    assert scripts.overlapped("b_quick.py", "c_quick.py")  # three at once, not two
    assert scripts.span("b_quick.py")[1] < scripts.span("a_slow.py")[1]


def test_one_job_runs_one_script_at_a_time(scripts: Scripts) -> None:
    for name in ("a.py", "b.py", "c.py"):
        scripts.add(name, hold=0.3)
    result = run_cli(
        "verify", "--output-format", "json", "-j", "1", str(scripts.folder), env=NO_GPU
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["jobs"] == 1
    for a, b in (("a.py", "b.py"), ("b.py", "c.py"), ("a.py", "c.py")):
        assert not scripts.overlapped(a, b)


def test_jobs_must_be_a_positive_count(scripts: Scripts) -> None:
    scripts.add("a.py", hold=0)
    for bad in ("0", "-2", "many"):
        result = run_cli("verify", "--jobs", bad, str(scripts.folder))
        assert result.returncode == 2, bad
        assert "--jobs" in result.stderr


def test_the_default_is_one_job_per_core_without_a_gpu_and_one_on_a_gpu(
    scripts: Scripts,
) -> None:
    scripts.add("a.py", hold=0)
    result = run_cli("verify", "--output-format", "json", str(scripts.folder), env=NO_GPU)
    assert json.loads(result.stdout)["jobs"] == (os.cpu_count() or 1)
    gpu = Gpu("Fake GPU", 0, "GPU-fake", 1, "GPU-fake")
    assert runner.default_jobs(gpu) == 1


def test_on_a_shared_gpu_each_script_gets_its_own_peak(scripts: Scripts) -> None:
    sizes = {"a.py": 700 * MIB, "b.py": 300 * MIB, "c.py": 500 * MIB, "d.py": 900 * MIB}
    for name, size in sizes.items():
        scripts.add(name, size=size, hold=1.5)
    result = runner.run_all(_pairs(scripts.folder), _on_gpu(ChildrenNvml(scripts.gpu), jobs=4))
    assert (result.jobs, result.note) == (4, None)
    peaks = {Path(o.script).name: (o.gpu_peak_bytes, o.gpu_measurement) for o in result.outcomes}
    assert peaks == {name: (size, "pid") for name, size in sizes.items()}
    # a's pids were seen in NVML's list while it ran alone; then the rest shared the GPU.
    for a, b in (("a.py", "b.py"), ("b.py", "c.py"), ("c.py", "d.py"), ("b.py", "d.py")):
        assert scripts.overlapped(a, b), (a, b)


def test_a_script_none_of_whose_pids_nvml_lists_held_nothing_beside_others(
    scripts: Scripts,
) -> None:
    """Once NVML has listed this machine's pids, a script that shared the GPU and had none
    listed held nothing: the device's rise while it ran was its neighbours'."""
    scripts.add("a.py", size=300 * MIB, hold=0.5)  # runs alone until its pids are listed
    scripts.add("b.py", size=3 * 1024 * MIB, hold=2.0)
    scripts.add("c_cpu_only.py", size=0, hold=1.5)
    result = runner.run_all(_pairs(scripts.folder), _on_gpu(ChildrenNvml(scripts.gpu), jobs=2))
    assert scripts.overlapped("b.py", "c_cpu_only.py")
    peaks = {Path(o.script).name: (o.gpu_peak_bytes, o.gpu_measurement) for o in result.outcomes}
    assert peaks["c_cpu_only.py"] == (0, "pid")
    assert peaks["b.py"] == (3 * 1024 * MIB, "pid")


DAEMON = """\
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        with open(os.path.join({gpu!r}, str(os.getpid())), "w") as out:
            out.write(str(2 * 1024**3))
        time.sleep(60)
    os._exit(0)
os.wait()
time.sleep(1.0)
"""


def test_what_a_shared_script_left_behind_is_ended_before_a_script_runs_alone(
    scripts: Scripts, tmp_path: Path
) -> None:
    """A daemon that escaped a fixed script's tree on a shared GPU never counts in the peak of
    the baseline that runs alone after it."""
    (scripts.folder / "after").mkdir()
    (scripts.folder / "after" / "x.py").write_text(DAEMON.format(gpu=str(scripts.gpu)))
    scripts.add("after/y.py", size=100 * MIB, hold=1.0)
    before = Scripts(tmp_path / "before", scripts.log, scripts.gpu)
    before.folder.mkdir()
    before.add("before/x.py", size=0, hold=0.5)
    result = runner.run_all(
        _pairs(scripts.folder / "after", before.folder / "before"),
        _on_gpu(ChildrenNvml(scripts.gpu), jobs=2),
        compared=True,
    )
    [x, _] = result.outcomes
    assert x.baseline is not None and x.baseline.gpu_peak_bytes == 0


def test_where_nvml_lists_other_pids_scripts_run_one_at_a_time(scripts: Scripts) -> None:
    sizes = {"a.py": 700 * MIB, "b.py": 300 * MIB, "c.py": 500 * MIB}
    for name, size in sizes.items():
        scripts.add(name, size=size, hold=0.8)
    nvml = ChildrenNvml(scripts.gpu, pid_offset=1_000_000)  # a container's view of host pids
    result = runner.run_all(_pairs(scripts.folder), _on_gpu(nvml, jobs=3))
    assert result.jobs == 1 and result.note == runner.PIDS_UNSEEN
    for a, b in (("a.py", "b.py"), ("b.py", "c.py"), ("a.py", "c.py")):
        assert not scripts.overlapped(a, b)
    peaks = {Path(o.script).name: (o.gpu_peak_bytes, o.gpu_measurement) for o in result.outcomes}
    assert peaks == {name: (size, "device-delta") for name, size in sizes.items()}


def test_scripts_that_never_use_the_gpu_prove_nothing_and_run_one_at_a_time(
    scripts: Scripts,
) -> None:
    for name in ("a.py", "b.py"):
        scripts.add(name, size=0, hold=0.5)
    result = runner.run_all(_pairs(scripts.folder), _on_gpu(ChildrenNvml(scripts.gpu), jobs=2))
    assert not scripts.overlapped("a.py", "b.py")
    assert (result.jobs, result.note) == (1, runner.PIDS_NEVER_SHOWN)


def test_on_a_gpu_baselines_run_alone_after_the_fixed_scripts(
    scripts: Scripts, tmp_path: Path
) -> None:
    before = Scripts(tmp_path / "before", scripts.log, scripts.gpu)
    before.folder.mkdir()
    for name in ("a.py", "b.py"):
        before.add(f"before/{name}", size=70 * 1024 * MIB, hold=0.5)
        scripts.add(f"after/{name}", size=200 * MIB, hold=1.5)
    result = runner.run_all(
        _pairs(scripts.folder / "after", before.folder / "before"),
        _on_gpu(ChildrenNvml(scripts.gpu), jobs=2),
        compared=True,
    )
    assert [Path(o.script).name for o in result.outcomes] == ["a.py", "b.py"]
    assert [o.baseline.gpu_peak_bytes for o in result.outcomes] == [70 * 1024 * MIB] * 2
    assert scripts.overlapped("after/a.py", "after/b.py")
    after_end = max(scripts.span(f"after/{n}")[1] for n in ("a.py", "b.py"))
    assert all(before.span(f"before/{n}")[0] >= after_end for n in ("a.py", "b.py"))
    assert not before.overlapped("before/a.py", "before/b.py")


def test_a_script_that_errs_beside_another_on_a_gpu_runs_again_alone(scripts: Scripts) -> None:
    scripts.add("a.py", size=100 * MIB, hold=1.5)
    scripts.add("b.py", size=100 * MIB, hold=1.5, fail_if_shared=True)
    scripts.add("c.py", size=100 * MIB, hold=2.5)
    result = runner.run_all(_pairs(scripts.folder), _on_gpu(ChildrenNvml(scripts.gpu), jobs=3))
    by_name = {Path(o.script).name: o for o in result.outcomes}
    assert by_name["b.py"].exit_code == 0, by_name["b.py"].output_tail
    assert [Path(o.script).name for o in result.outcomes] == ["a.py", "b.py", "c.py"]
    start, _ = scripts.span("b.py")  # its second run: after both others ended
    assert start >= max(scripts.span(name)[1] for name in ("a.py", "c.py"))


def test_a_failing_script_keeps_its_error_without_a_gpu(scripts: Scripts) -> None:
    """Without a GPU, no script is run twice: an error is the script's own."""
    scripts.add("a.py", hold=2.0)
    scripts.add("b.py", hold=1.0, fail_if_shared=True)
    result = runner.run_all(_pairs(scripts.folder), runner.Options(timeout_s=60, jobs=2))
    by_name = {Path(o.script).name: o for o in result.outcomes}
    assert by_name["b.py"].verdict == "error" and by_name["b.py"].exit_code == 1
