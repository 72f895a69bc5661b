from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from tfmemlint.configuration.settings import Settings
from tfmemlint.model import Finding
from tfmemlint.rules import ALL_RULES

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
# The suite starts hundreds of Pythons: let them cache the package's bytecode, whatever the shell
# says (each would compile every module of tfmemlint again).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
BEFORE = FIXTURES / "before"
AFTER = FIXTURES / "after"
# Single-file fixtures, and the files of multi-module ones (folders: a project, issue 15).
FIXTURE_NAMES = sorted(p.relative_to(BEFORE).as_posix() for p in BEFORE.rglob("*.py"))


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    """With `-p no:xdist`, the option that pyproject.toml's addopts give xdist is accepted and
    does nothing, so the suite runs serially in one process."""
    if not pluginmanager.has_plugin("xdist"):
        group = parser.getgroup("xdist", "stand-ins while xdist is off (-p no:xdist)")
        group.addoption("--numprocesses", default=None, help="ignored: xdist is off")


def built_once(
    tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]
) -> Path:
    """A folder that `build` fills once per run, however many xdist workers ask for it: the
    first builds it under a lock in the folder all workers share, the others wait and read it.
    A build that fails leaves nothing, so the next one tries again."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the workers' basetemps sit side by side in one run's folder
    folder, done = root / f"shared-{name}", root / f"shared-{name}.done"
    with open(root / f"shared-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            build(folder)
            done.touch()
    return folder


def fixture_scripts(root: Path) -> list[Path]:
    """The fixtures' scripts: every file but the modules inside packages, which the scripts
    beside those packages import."""
    return sorted(p for p in root.rglob("*.py") if not (p.parent / "__init__.py").is_file())


def lint_text(filename: str, text: str, settings: Settings) -> list[Finding]:
    """The engine's lint_text, for the rule tests, which also checks that the pre-filter (both
    stages) lets through every text with a finding: each rule test doubles as a test that the
    pre-filter never hides a finding. (File errors, TFM9xx, are the engine's own.)"""
    from tfmemlint.checking import engine
    from tfmemlint.checking.prefilter import code_may_have_findings, may_have_findings

    found = engine.lint_text(filename, text, settings)
    if any(not finding.code.startswith("TFM9") for finding in found):
        raw = text.encode("utf-8", "surrogatepass")
        for stage in (may_have_findings, code_may_have_findings):
            assert stage(raw, settings.selected), f"{stage.__name__} drops:\n{text}"
    return found


def codes(source: str, filename: str = "t.py", settings: Settings | None = None) -> list[str]:
    """The codes of the findings in `source` (dedented), by default under the default settings."""
    chosen = settings if settings is not None else Settings.default(ALL_RULES)
    return [f.code for f in lint_text(filename, textwrap.dedent(source), chosen)]


def fixed(source: str, settings: Settings | None = None, filename: str = "t.py") -> str:
    """What fixing `source` (dedented) makes of it, by default under the default settings."""
    from tfmemlint.running.fix_loop import fix_text

    chosen = settings if settings is not None else Settings.default(ALL_RULES)
    return fix_text(filename, textwrap.dedent(source), chosen)[0]


def run_cli(
    *args: str,
    cwd: Path | str | None = None,
    stdin: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 300,
):
    """Run the real `tfmemlint` in a child process (`env`: variables to add; `timeout`: a
    guard against a hang, never a speed check)."""
    env = {**os.environ, "PYTHONIOENCODING": "utf-8", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "tfmemlint", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )


def write_notebook(path: Path, sources: list[list[str] | str]) -> Path:
    """A notebook of code cells with these sources (nbformat 4), written to `path`."""
    cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": []}
    document = {
        "cells": [{**cell, "source": source} for source in sources],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


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


def on_a_terminal(
    *args: str,
    stream: str = "stdout",
    cwd: Path | str | None = None,
    env: dict[str, str] | None = None,
) -> str:
    """Run the real `tfmemlint` with `stream` ("stdout" or "stderr") on a pseudo-terminal, the
    other one discarded; return what the terminal saw. Fails if it exits with 2."""
    import pty
    import time

    controller, terminal = pty.openpty()
    streams = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, stream: terminal}
    child = subprocess.Popen(
        [sys.executable, "-m", "tfmemlint", *args],
        cwd=cwd,
        env=env if env is not None else dict(os.environ),
        **streams,
    )
    os.close(terminal)
    # Read while the child writes: a pty holds only a few KiB, and a child whose output
    # outgrows it blocks until someone reads.
    seen = b""
    deadline = time.monotonic() + 300
    while True:
        if time.monotonic() > deadline:
            child.kill()
            child.wait()
            os.close(controller)
            raise subprocess.TimeoutExpired(child.args, 300)
        ready, _, _ = select.select([controller], [], [], 1.0)
        if not ready:
            continue
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # the terminal's other end is closed: everything was read
            break
        if not chunk:
            break
        seen += chunk
    os.close(controller)
    done = child.wait(timeout=60)
    assert done != 2
    return seen.decode("utf-8", "replace")
