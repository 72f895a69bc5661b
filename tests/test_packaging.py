"""The distributions a release publishes: the sdist and the wheel build (from the installed
build backend, offline), pass `twine check`, and the wheel holds the package and nothing of the
repository's tests, fixtures or bench."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT, built_once

pytestmark = pytest.mark.slow  # builds of the sdist and the wheel


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist and the wheel, built once for all workers (a build writes into the checkout)."""
    pytest.importorskip("build", reason="build is in the test extra")

    def build(out: Path) -> None:
        # --no-isolation: the test extra holds the backend, and a test never needs the network
        built = subprocess.run(
            [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]

    return built_once(tmp_path_factory, "dist", build)


def test_twine_accepts_the_sdist_and_the_wheel(dist: Path) -> None:
    pytest.importorskip("twine", reason="twine is in the test extra")
    files = sorted(str(path) for path in dist.iterdir())
    assert sorted(Path(name).suffix for name in files) == [".gz", ".whl"]
    checked = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *files],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_wheel_holds_the_package_and_nothing_else(dist: Path) -> None:
    [wheel] = dist.glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    package = {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "tfmemlint").rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    assert package <= names  # every module, and any data beside them
    others = {name for name in names if not name.startswith("tfmemlint/")}
    assert all(name.startswith("tfmemlint-") and ".dist-info/" in name for name in others), others
    assert not any(
        part in ("tests", "fixtures", "bench", "docs", "scripts")
        for name in names
        for part in name.split("/")
    )
    metadata = zipfile.ZipFile(wheel).read(
        next(name for name in names if name.endswith(".dist-info/METADATA"))
    )
    text = metadata.decode()
    assert "License-Expression: MIT" in text
    assert "Project-URL: Documentation, https://tfmemlint.github.io/tfmemlint/" in text
    assert any(name.endswith("licenses/LICENSE") for name in names)
