"""Property and fuzz tests (issue 7), bounded in time: generated programs (hypothesmith) and the
project's own files, each with a session planted in it. TFMEMLINT_FUZZ_EXAMPLES raises the count.

Every time: no crash, the fixed text parses, a second --fix changes nothing, the planted session
is reported and fixed, and nothing outside it changed."""

from __future__ import annotations

import ast
import os
import random
import textwrap
from pathlib import Path

import hypothesmith
import libcst
import pytest
from hypothesis import HealthCheck, example, given, settings

from tests.conftest import ROOT
from tfmemlint.configuration.settings import Settings
from tfmemlint.rules import ALL_RULES
from tfmemlint.running import file_check

pytestmark = pytest.mark.slow  # the fuzzers

EXAMPLES = int(os.environ.get("TFMEMLINT_FUZZ_EXAMPLES", "25"))
IMPORT = "import tensorflow.compat.v1 as _tf\n"
GROWTH = "config=_tf.ConfigProto(gpu_options=_tf.GPUOptions(allow_growth=True))"


def _is_subsequence(small: str, big: str) -> bool:
    characters = iter(big)
    return all(char in characters for char in small)


def _check_planted(source: str) -> None:
    """The whole contract, on one text that holds exactly one planted bare session."""
    default = Settings.default(ALL_RULES)
    result, _ = file_check.check_bytes("p.py", source.encode("utf-8"), default, "fix")
    if libcst.parse_module(source).code.rstrip("\r\n") != source.rstrip("\r\n") and (
        result.internal_error
    ):
        # libcst drops a few rare spellings; then the file is reported, never touched. (A text
        # read through Python 2's indentation view, which libcst gives back byte for byte, is
        # fixed as any other: below.)
        assert result.fixed_text is None
        assert "byte for byte" in result.findings[-1].message
        return
    assert not result.internal_error, result.findings
    assert result.fixed == 1, (result.findings, source)
    fixed = result.fixed_text
    assert fixed is not None and GROWTH in fixed
    ast.parse(fixed)
    assert _is_subsequence(source, fixed)  # nothing removed: the fix only added
    again, _ = file_check.check_bytes("p.py", fixed.encode("utf-8"), default, "fix")
    assert again.fixed_text is None and not again.internal_error  # a second --fix: nothing


# For properties over hypothesmith's generated programs: slow to make, and many are filtered.
GENERATED_PROGRAMS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


@GENERATED_PROGRAMS
@given(hypothesmith.from_grammar())
# libcst drops `\t \x0c` before the second `pass`; Python 2's indentation view keeps it.
@example(program="globalmatch,match;pass\n\t \x0cpass\n")
def test_generated_programs_with_a_session_planted(program: str) -> None:
    try:
        ast.parse(program)
    except (SyntaxError, ValueError):
        return  # the grammar is Python's, but not every program compiles (e.g. `return` outside a def)
    if "_tf" in program or "Session" in program or "\\" in program.splitlines()[-1:][0:1]:
        return
    body = program if program.endswith("\n") else program + "\n"
    planted = body + IMPORT + "_sess = _tf.Session()\n"
    _check_planted(planted)


# Where a session can hide: each is planted at a random statement position in real files.
SNIPPETS = [
    "_sess = _tf.Session()",
    "_make = lambda: _tf.Session()",
    "_all = [_tf.Session() for _ in range(1)]",
    "_text = f'{_tf.Session()}'",
    "with _tf.Session() as _s:\n    pass",
    "try:\n    _sess = _tf.Session()\nexcept Exception:\n    pass",
    "@staticmethod\ndef _make():\n    return _tf.Session()",
    "class _Holder:\n    sess = _tf.Session()",
    "def _outer():\n    def _inner():\n        return _tf.Session()\n    return _inner",
]


def _statement_lines(tree: ast.AST) -> list[tuple[int, int]]:
    """(line, indentation) where a statement starts, alone on its line, outside strings."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and not isinstance(node, ast.ImportFrom):
            found.append((node.lineno, node.col_offset))
    return found


def _project_files() -> list[Path]:
    files = sorted((ROOT / "tests").glob("*.py")) + sorted(
        (ROOT / "fixtures" / "after").glob("*.py")
    )
    # Files that hide the GPU or force growth for the whole process make any session fine.
    process_wide = (
        b"__future__",
        b"\r",
        b"TF_FORCE_GPU_ALLOW_GROWTH",
        b"CUDA_VISIBLE",
        b"visible_devices",
    )
    usable = []
    for path in files:
        raw = path.read_bytes()
        if any(marker in raw for marker in process_wide) or raw.startswith(b"\xef\xbb\xbf"):
            continue
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            continue  # the Latin-1 fixture: its own test covers it
        usable.append(path)
    return usable


@pytest.mark.parametrize("seed", range(max(1, EXAMPLES // 5)))
def test_sessions_planted_in_the_projects_own_files(seed: int) -> None:
    chance = random.Random(seed)
    for path in chance.sample(_project_files(), 3):
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines(keepends=True)
        tree = ast.parse(text)
        candidates = [
            (row, column)
            for row, column in _statement_lines(tree)
            if lines[row - 1][:column].strip() == "" and not lines[row - 1].rstrip().endswith("\\")
        ]
        if not candidates:
            continue
        row, column = chance.choice(candidates)
        snippet = textwrap.indent(chance.choice(SNIPPETS), " " * column) + "\n"
        planted_lines = [IMPORT, *lines[: row - 1], snippet, *lines[row - 1 :]]
        planted = "".join(planted_lines)
        try:
            ast.parse(planted)
        except SyntaxError:
            continue  # e.g. between an `if` and its `elif`: not a place a statement can go
        # Only the planted session may be a finding: the file itself is clean (or a fixture).
        baseline, _ = file_check.check_bytes(
            "p.py", (IMPORT + text).encode(), Settings.default(ALL_RULES), "check"
        )
        if baseline.findings:
            continue
        _check_planted(planted)
