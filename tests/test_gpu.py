"""Checks that need an NVIDIA GPU; each skips itself without one."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tfmemlint.verify.sampler import load_nvml, open_gpu


def _gpu_present() -> bool:
    nvml = load_nvml()
    return nvml is not None and open_gpu(nvml, 0) is not None


@pytest.mark.gpu
@pytest.mark.skipif(not _gpu_present(), reason="no NVIDIA GPU visible")
def test_sampler_measures_a_known_allocation() -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "gpu-selfcheck"),
            "--sampler-only",
            "--bytes",
            str(2 * 1024**3),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_selfcheck_says_when_there_is_no_gpu() -> None:
    if _gpu_present():
        pytest.skip("a GPU is present")
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gpu-selfcheck")], capture_output=True, text=True
    )
    assert done.returncode == 2
    assert "no NVIDIA GPU visible" in done.stderr
