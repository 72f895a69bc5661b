"""`fixtures/libraries`: programs that reach TensorFlow through a library (TFDS, TF Hub,
transformers, TF1-era Keras as `tf_keras`, `tf.estimator`) or use it as a guest of PyTorch. Their packages are not in the test extra (TFDS,
hub and transformers need the network to load anything, PyTorch's wheel brings CUDA), so
`after` is checked against `--fix` and run only where every package it imports is installed.
`tfmemlint verify fixtures/libraries/after` runs them where they are (see the README)."""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_cli

LIBRARIES = FIXTURES / "libraries"
BEFORE = LIBRARIES / "before"
AFTER = LIBRARIES / "after"
NAMES = sorted(p.name for p in BEFORE.glob("*.py"))


def test_every_library_fixture_has_a_pair() -> None:
    assert sorted(p.name for p in AFTER.glob("*.py")) == NAMES
    assert len(NAMES) >= 6


def test_fix_makes_after_of_before(tmp_path: Path) -> None:
    work = tmp_path / "before"
    shutil.copytree(BEFORE, work)
    result = run_cli("--no-cache", "--fix", str(work))
    assert result.returncode == 0, result.stdout + result.stderr
    for name in NAMES:
        assert (work / name).read_text() == (AFTER / name).read_text(), name


def test_findings_are_exactly_where_after_differs() -> None:
    result = run_cli("--no-cache", "--output-format", "json", str(BEFORE))
    found = {(Path(f["filename"]).name, f["code"]) for f in json.loads(result.stdout)}
    assert found == {
        ("tfds_only.py", "TFM205"),
        ("hub_keras_layer.py", "TFM205"),
        ("transformers_tf.py", "TFM205"),
        ("pytorch_tf_summary.py", "TFM207"),
        ("jax_tfds_builder.py", "TFM207"),
        ("jax_tfds_builder.py", "TFM208"),
        ("keras2_own_session.py", "TFM212"),
        ("keras2_set_session_no_memory.py", "TFM102"),
        ("estimator_without_config.py", "TFM101"),
    }
    changed = {n for n in NAMES if (BEFORE / n).read_bytes() != (AFTER / n).read_bytes()}
    assert {name for name, _ in found} == changed


def test_after_is_clean_and_a_second_fix_changes_nothing(tmp_path: Path) -> None:
    assert run_cli("--no-cache", str(AFTER)).returncode == 0
    work = tmp_path / "after"
    shutil.copytree(AFTER, work)
    assert run_cli("--no-cache", "--fix", str(work)).returncode == 0
    for name in NAMES:
        assert (work / name).read_bytes() == (AFTER / name).read_bytes()


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module.split(".")[0])
    return found


def _tensorflow_has_estimator() -> bool:
    """`tf.estimator` is the tensorflow-estimator package's, and TensorFlow 2.16 dropped it."""
    try:
        version = importlib.metadata.version("tensorflow")
    except importlib.metadata.PackageNotFoundError:
        return False
    major, minor = (int(part) for part in version.split(".")[:2])
    return (major, minor) < (2, 16) and importlib.util.find_spec("tensorflow_estimator") is not None


# What a script needs beyond its imports: each a check, and what it is called when missing.
NEEDS_BEYOND_IMPORTS = {
    "estimator_without_config.py": (_tensorflow_has_estimator, "tf.estimator (TensorFlow < 2.16)"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_after_runs_where_its_packages_are_installed(name: str, tmp_path: Path) -> None:
    missing = sorted(m for m in _imports(AFTER / name) if importlib.util.find_spec(m) is None)
    if name in NEEDS_BEYOND_IMPORTS and not NEEDS_BEYOND_IMPORTS[name][0]():
        missing.append(NEEDS_BEYOND_IMPORTS[name][1])
    if missing:
        pytest.skip(f"not installed here: {', '.join(missing)}")
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run(
        [sys.executable, str(AFTER / name)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
