"""The code base's own gates: ruff's lint and format checks, and a README whose rule table lists
every rule code the tool can emit."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tfmemlint.docs import splice
from tfmemlint.rules import ALL_RULES


def _ruff(*args: str) -> subprocess.CompletedProcess:
    if importlib.util.find_spec("ruff") is None:
        pytest.fail("ruff is part of the test extra: pip install -e '.[test]'")
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args], cwd=ROOT, capture_output=True, text=True
    )


def test_ruff_check_is_clean() -> None:
    result = _ruff("check", "tfmemlint", "tests", "bench")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_is_clean() -> None:
    result = _ruff("format", "--check", "tfmemlint", "tests", "bench")
    assert result.returncode == 0, result.stdout + result.stderr


def test_readme_rule_section_is_generated_from_the_rule_pages() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert splice(readme) == readme, "run `python -m tfmemlint.docs` to refresh README.md"
    for rule in ALL_RULES:
        assert f"| [{rule.code}]({rule.url}) |" in readme
