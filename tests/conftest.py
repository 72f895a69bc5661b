from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
BEFORE = FIXTURES / "before"
AFTER = FIXTURES / "after"
FIXTURE_NAMES = sorted(p.name for p in BEFORE.glob("*.py"))


def run_cli(*args: str, cwd: Path | str | None = None, stdin: str | None = None):
    """Run the real `tfmemlint` in a child process."""
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    return subprocess.run(
        [sys.executable, "-m", "tfmemlint", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


@pytest.fixture
def write(tmp_path: Path):
    """Write a file under tmp_path (text, or bytes kept exact) and return its path."""

    def _write(name: str, content: str | bytes) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_bytes(content.encode("utf-8"))
        return path

    return _write
