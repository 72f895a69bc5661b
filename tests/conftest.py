from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tfmemlint.model import Finding
from tfmemlint.rules import ALL_RULES
from tfmemlint.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
BEFORE = FIXTURES / "before"
AFTER = FIXTURES / "after"
# Single-file fixtures, and the files of multi-module ones (folders: a project, issue 15).
FIXTURE_NAMES = sorted(p.relative_to(BEFORE).as_posix() for p in BEFORE.rglob("*.py"))


def fixture_scripts(root: Path) -> list[Path]:
    """The fixtures' scripts: every file but the modules inside packages, which the scripts
    beside those packages import."""
    return sorted(p for p in root.rglob("*.py") if not (p.parent / "__init__.py").is_file())


def lint_text(filename: str, text: str, settings: Settings) -> list[Finding]:
    """The engine's lint_text, for the rule tests, which also checks that the pre-filter (both
    stages) lets through every text with a finding: each rule test doubles as a test that the
    pre-filter never hides a finding. (File errors, TFM9xx, are the engine's own.)"""
    from tfmemlint import engine
    from tfmemlint.prefilter import code_may_have_findings, may_have_findings

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


def fixed(source: str, settings: Settings | None = None) -> str:
    """What fixing `source` (dedented) makes of it, by default under the default settings."""
    from tfmemlint.fix_loop import fix_text

    chosen = settings if settings is not None else Settings.default(ALL_RULES)
    return fix_text("t.py", textwrap.dedent(source), chosen)[0]


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
