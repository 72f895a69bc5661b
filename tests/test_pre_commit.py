"""The hooks in .pre-commit-hooks.yaml, run by the real pre-commit in a real git repository that
points at this repository's committed HEAD."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow  # a real pre-commit

BARE = "import tensorflow.compat.v1 as tf\nsess = tf.Session()\n"


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    if shutil.which("git") is None:
        pytest.skip("git is needed")
    head = _git("rev-parse", "HEAD", cwd=ROOT)
    work = tmp_path_factory.mktemp("precommit") / "project"
    work.mkdir()
    _git("init", "-q", cwd=work)
    _git("config", "user.email", "test@example.invalid", cwd=work)
    _git("config", "user.name", "test", cwd=work)
    (work / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {ROOT}\n    rev: {head}\n    hooks:\n"
        "      - id: tfmemlint\n      - id: tfmemlint-fix\n"
    )
    env = {**os.environ, "PRE_COMMIT_HOME": str(work.parent / "cache")}
    return work, env


def _pre_commit(work: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_hooks_check_fix_and_pass(hook_repo: tuple[Path, dict[str, str]]) -> None:
    work, env = hook_repo
    (work / "train.py").write_text(BARE)
    _git("add", "train.py", ".pre-commit-config.yaml", cwd=work)

    check = _pre_commit(work, env, "run", "tfmemlint", "--files", "train.py")
    assert check.returncode == 1, check.stdout + check.stderr
    assert "train.py:2:8: TFM101" in check.stdout

    fix = _pre_commit(work, env, "run", "tfmemlint-fix", "--files", "train.py")
    assert fix.returncode == 1  # pre-commit fails a hook that changed files
    assert "files were modified by this hook" in fix.stdout
    assert "allow_growth=True" in (work / "train.py").read_text()

    _git("add", "train.py", cwd=work)
    again = _pre_commit(work, env, "run", "--files", "train.py")
    assert again.returncode == 0, again.stdout


def test_the_hooks_take_launch_files(hook_repo: tuple[Path, dict[str, str]]) -> None:
    """A Dockerfile, and a script known only by its `#!` line (identify tags it `shell`)."""
    work, env = hook_repo
    (work / "Dockerfile").write_text("FROM x\nENV TF_FORCE_GPU_ALLOW_GROWTH=1\n")
    job = work / "job"
    job.write_text("#!/bin/bash\nexport TF_FORCE_GPU_ALLOW_GROWTH=True\n")
    job.chmod(0o755)
    _git("add", "Dockerfile", "job", ".pre-commit-config.yaml", cwd=work)
    fix = _pre_commit(work, env, "run", "tfmemlint-fix", "--files", "Dockerfile", "job")
    assert fix.returncode == 1, fix.stdout + fix.stderr
    assert (work / "Dockerfile").read_text() == "FROM x\nENV TF_FORCE_GPU_ALLOW_GROWTH=true\n"
    assert job.read_text() == "#!/bin/bash\nexport TF_FORCE_GPU_ALLOW_GROWTH=true\n"


def test_a_commit_without_python_files_passes(hook_repo: tuple[Path, dict[str, str]]) -> None:
    work, env = hook_repo
    installed = _pre_commit(work, env, "install")
    assert installed.returncode == 0, installed.stderr

    def commit(message: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["git", "commit", "-q", "-m", message],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
        )

    (work / "setup.cfg").write_text("[metadata]\n")
    _git("add", "-A", cwd=work)
    assert commit("everything so far").returncode == 0
    (work / "notes.txt").write_text("no code here\n")
    _git("add", "notes.txt", cwd=work)
    notes = commit("notes only")
    assert notes.returncode == 0, notes.stdout + notes.stderr
    assert "(no files to check)Skipped" in notes.stdout + notes.stderr
