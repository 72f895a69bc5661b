"""Fixes keep the user's other linters quiet: on every fixture pair, ruff (E, F and isort's I)
and flake8's E402 report nothing after `--fix` that they did not report before. E501 is left
out: a keyword added to a session call can make its line longer, which is the formatter's
business (and not among ruff's default rules)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import FIXTURES

RUFF = (
    sys.executable,
    "-m",
    "ruff",
    "check",
    "--isolated",
    "--select",
    "E,F,I",
    "--ignore",
    "E501",
)
FLAKE8 = (sys.executable, "-m", "flake8", "--isolated", "--select", "E402", "--exit-zero")
PAIRS = [
    ("before", "after"),
    ("libraries/before", "libraries/after"),
    ("notebooks/before", "notebooks/after"),
]


def _ruff(root: Path) -> Counter[tuple[str, str, str]]:
    done = subprocess.run(
        [*RUFF, "--output-format", "json", "--exit-zero", str(root)],
        capture_output=True,
        text=True,
        check=True,
    )
    return Counter(
        (os.path.relpath(r["filename"], root), r["code"], r["message"])
        for r in json.loads(done.stdout)
    )


def _flake8_e402(root: Path) -> Counter[str]:
    done = subprocess.run(
        [*FLAKE8, "--format", "%(path)s", str(root)],
        capture_output=True,
        text=True,
        check=True,
    )
    return Counter(os.path.relpath(line, root) for line in done.stdout.splitlines())


# ruff reads a notebook cell without IPython's clean-up: each pasted `In [n]:` prompt line is a
# syntax error to it, before the fix and after, so a line a fix adds among them, prompt and
# all, is one more. tfmemlint re-reads such a cell as IPython does before writing it.
PASTED_PROMPTS = ("ipython_cleanup.ipynb", "invalid-syntax")


@pytest.mark.parametrize(("before", "after"), PAIRS)
def test_ruff_reports_nothing_new_after_the_fix(before: str, after: str) -> None:
    new = _ruff(FIXTURES / after) - _ruff(FIXTURES / before)
    assert not {key: count for key, count in new.items() if key[:2] != PASTED_PROMPTS}, sorted(new)


# The fixes that must come before an import (JAX reads its allocator's variables, TF1 Keras's
# session reads TF_FORCE_GPU_ALLOW_GROWTH, before anything else could set them): an
# `os.environ.setdefault(...)` line, which ruff exempts from E402 and pycodestyle does not.
ENV_FIX = "os.environ.setdefault("


def _env_fixed(before: Path, after: Path) -> set[str]:
    """The files whose fix added a setting before an import."""
    return {
        os.path.relpath(path, after)
        for path in after.rglob("*.py")
        if (before / path.relative_to(after)).exists()
        and path.read_bytes().count(ENV_FIX.encode())
        > (before / path.relative_to(after)).read_bytes().count(ENV_FIX.encode())
    }


@pytest.mark.parametrize(("before", "after"), PAIRS[:2])
def test_flake8_reports_no_new_e402_after_the_fix(before: str, after: str) -> None:
    """...but where a fix sets a variable before an import, on those imports alone (the
    README says so to flake8's users)."""
    new = _flake8_e402(FIXTURES / after) - _flake8_e402(FIXTURES / before)
    env_fixed = _env_fixed(FIXTURES / before, FIXTURES / after)
    assert env_fixed  # the exemption below is no blanket one: it names files
    assert not {name: count for name, count in new.items() if name not in env_fixed}


def test_the_comparison_sees_an_import_after_code(tmp_path: Path) -> None:
    """The check can fail: a growth loop put between two imports is E402 for both."""
    before, after = tmp_path / "before", tmp_path / "after"
    before.mkdir()
    after.mkdir()
    (before / "t.py").write_text("import tensorflow as tf\nimport numpy as np\n\nprint(tf, np)\n")
    (after / "t.py").write_text(
        "import tensorflow as tf\n\nfor gpu in []:\n    pass\nimport numpy as np\n\nprint(tf, np)\n"
    )
    assert [code for _, code, _ in _ruff(after) - _ruff(before)] == ["E402"]
    assert _flake8_e402(after) - _flake8_e402(before) == Counter({"t.py": 1})
