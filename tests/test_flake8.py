"""The flake8 extension, through flake8 itself in a child process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def _flake8(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "flake8", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,  # a worker that dies hangs flake8's pool
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


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_flake8_outlives_a_file_nested_too_deeply(tmp_path: Path, jobs: str) -> None:
    """CPython compiles a 10,000-term `and` chain, so flake8 hands it to the plugin; libcst's
    parser then overflowed the usual 8 MB stack: flake8 died (-j 1) or hung (-j 2)."""
    session = "import tensorflow as tf\nsess = tf.Session()\n"
    (tmp_path / "deep.py").write_text(session + "ok = " + " and ".join(["a"] * 10_000) + "\n")
    (tmp_path / "good.py").write_text(session)
    result = _flake8("-j", jobs, "--select", "TFM", ".", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    deep, good = sorted(result.stdout.splitlines())
    assert deep.startswith("./deep.py:1:1: TFM903 Internal error: RecursionError")
    assert good.startswith("./good.py:2:8: TFM101 ")


def test_flake8_follows_the_project_s_own_compat_module(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "compat.py").write_text("import tensorflow as _tf\ntfv1 = _tf.compat.v1\n")
    (tmp_path / "train.py").write_text("from compat import tfv1\nsess = tfv1.Session()\n")
    result = _flake8("--select", "TFM", ".", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert "./train.py:2:8: TFM101" in result.stdout
    assert "through `compat.py`" in result.stdout


def test_flake8_finds_a_script_entry_whatever_its_words(tmp_path: Path) -> None:
    """The module a `[project.scripts]` entry runs is an entry point for TFM205 with none of
    its words: flake8 must not set it aside where the CLI does not."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "p"\n[project.scripts]\nrun = "cli:main"\n'
    )
    (tmp_path / "cli.py").write_text("import tensorflow as tf\ndef main():\n    tf.ones([1])\n")
    result = _flake8("--select", "TFM", ".", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith("./cli.py:1:1: TFM205 "), result.stdout
