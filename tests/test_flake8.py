"""The flake8 extension, through flake8 itself in a child process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def _flake8(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "flake8", *args], cwd=cwd, capture_output=True, text=True
    )


def test_flake8_reports_the_same_findings(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(
        "import tensorflow.compat.v1 as tf\n"
        "sess = tf.Session()\n"
        "quiet = tf.Session()  # noqa: TFM101\n"
    )
    (tmp_path / "other.py").write_text("import os\n")
    result = _flake8("--select", "TFM", ".", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert result.stdout.splitlines() == [
        "./train.py:2:8: TFM101 `tf.Session()` is created without a GPU memory option and reserves nearly all GPU memory"
    ]


def test_flake8_leaves_syntax_errors_to_itself(tmp_path: Path) -> None:
    (tmp_path / "py2.py").write_text("import tensorflow as tf\nprint 'x'\nsess = tf.Session()\n")
    result = _flake8("--select", "TFM,E999", "py2.py", cwd=tmp_path)
    assert "E999" in result.stdout and "TFM" not in result.stdout
