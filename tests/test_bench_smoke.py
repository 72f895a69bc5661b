"""The benchmark runs (a smoke test on a tiny tree; the timings themselves are never asserted:
speed is measured with bench/, not with timed tests)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT


def test_generator_and_bench_run(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    subprocess.run(
        [sys.executable, str(ROOT / "bench" / "generate.py"), str(tree), "--files", "40"],
        check=True,
    )
    assert len(list(tree.rglob("*.py"))) == 40
    again = tmp_path / "again"
    subprocess.run(
        [sys.executable, str(ROOT / "bench" / "generate.py"), str(again), "--files", "40"],
        check=True,
    )
    assert [p.read_bytes() for p in sorted(tree.rglob("*.py"))] == [
        p.read_bytes() for p in sorted(again.rglob("*.py"))
    ]  # deterministic
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "run.py"), str(tree), "--rounds", "1", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(done.stdout)
    assert result["files"] == 40 and result["rounds"] == 1
    assert result["tfmemlint_median_s"] > 0 and result["ruff_median_s"] > 0 and result["ratio"] > 0
