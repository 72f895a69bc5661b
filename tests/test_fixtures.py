"""The golden fixtures: `fixtures/after/NAME.py` is exactly what `tfmemlint --fix` makes of
`fixtures/before/NAME.py`. A folder is a project of several modules: its scripts import its
packages. That every `after` script really runs under TensorFlow, with its settings, is
test_verify's one run of them all."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import AFTER, BEFORE, FIXTURE_NAMES, run_cli


def test_every_fixture_has_a_pair() -> None:
    assert len(FIXTURE_NAMES) >= 25
    assert sorted(p.relative_to(AFTER).as_posix() for p in AFTER.rglob("*.py")) == FIXTURE_NAMES
    assert any("/" in name for name in FIXTURE_NAMES)


@dataclass
class FixedCopy:
    folder: Path
    inodes_before: dict[str, int]
    result: subprocess.CompletedProcess


@pytest.fixture(scope="module")
def fixed_copy(tmp_path_factory: pytest.TempPathFactory) -> FixedCopy:
    """One real `tfmemlint --fix` over a copy of every `before` file."""
    work = tmp_path_factory.mktemp("fixed") / "before"
    shutil.copytree(BEFORE, work)
    inodes = {name: (work / name).stat().st_ino for name in FIXTURE_NAMES}
    return FixedCopy(work, inodes, run_cli("--fix", str(work)))


def test_fix_run_succeeds(fixed_copy: FixedCopy) -> None:
    assert fixed_copy.result.returncode == 0, fixed_copy.result.stdout + fixed_copy.result.stderr
    assert "fixed, 0 remaining" in fixed_copy.result.stdout


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_golden_fix(name: str, fixed_copy: FixedCopy) -> None:
    assert (fixed_copy.folder / name).read_bytes() == (AFTER / name).read_bytes()


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_only_files_with_fixes_are_rewritten(name: str, fixed_copy: FixedCopy) -> None:
    # A rewrite goes through a temporary file and a rename, so it always changes the inode.
    rewritten = (fixed_copy.folder / name).stat().st_ino != fixed_copy.inodes_before[name]
    assert rewritten == ((BEFORE / name).read_bytes() != (AFTER / name).read_bytes())


def test_after_is_clean() -> None:
    result = run_cli(str(AFTER))
    assert result.returncode == 0, result.stdout
    assert "All checks passed!" in result.stdout


def test_before_has_findings_wherever_after_differs() -> None:
    result = run_cli("--output-format", "json", str(BEFORE))
    reported = {
        Path(f["filename"]).relative_to(BEFORE).as_posix() for f in json.loads(result.stdout)
    }
    changed = {n for n in FIXTURE_NAMES if (BEFORE / n).read_bytes() != (AFTER / n).read_bytes()}
    assert reported == changed
    assert result.returncode == 1


def test_second_fix_changes_nothing(tmp_path: Path) -> None:
    work = tmp_path / "after"
    shutil.copytree(AFTER, work)
    result = run_cli("--fix", str(work))
    assert result.returncode == 0
    for name in FIXTURE_NAMES:
        assert (work / name).read_bytes() == (AFTER / name).read_bytes()
