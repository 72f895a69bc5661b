"""Property tests: whatever the layout of a session call, its fix keeps every original byte,
parses, leaves no finding and is idempotent."""

from __future__ import annotations

import ast
import itertools
import os

import libcst
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import ROOT, lint_text
from tfmemlint.checking.engine import UnfaithfulParseError
from tfmemlint.configuration.settings import Policy, Settings, select_rules
from tfmemlint.fixing.safety import UnsafeFixError
from tfmemlint.rules import ALL_RULES
from tfmemlint.running.fix_loop import fix_text

EXAMPLES = int(os.environ.get("TFMEMLINT_FUZZ_EXAMPLES", "150"))

SPELLINGS = [
    ("import tensorflow.compat.v1 as tf", "tf."),
    ("import tensorflow as tf", "tf.compat.v1."),
    ("from tensorflow.compat import v1 as tfv1", "tfv1."),
]


@st.composite
def session_programs(draw: st.DrawFn) -> str:
    imports, prefix = draw(st.sampled_from(SPELLINGS))
    keywords = draw(st.lists(st.sampled_from(["target=''", "graph=None"]), unique=True))
    config = draw(st.sampled_from(["", "inline", "variable"]))
    if config == "inline":
        keywords.append(f"config={prefix}ConfigProto(allow_soft_placement=True)")
    elif config == "variable":
        keywords.append("config=cfg")
    multiline = draw(st.booleans())
    trailing = draw(st.booleans()) and bool(keywords)
    comment = draw(st.booleans())
    if multiline and keywords:
        inner = "".join(
            f"\n        {kw}," + ("  # why" if comment and i == 0 else "")
            for i, kw in enumerate(keywords)
        )
        if not trailing:
            inner = inner.rstrip(",")
        args = inner + "\n    "
    else:
        args = ", ".join(keywords) + ("," if trailing else "")
    call = f"{prefix}Session({args})"
    body = f"cfg = {prefix}ConfigProto()\n" if config == "variable" else ""
    body += draw(
        st.sampled_from(
            [
                "sess = {call}\n",
                "with {call} as sess:\n    pass\n",
                "def make():\n    return {call}\n",
                "try:\n    sess = {call}\nexcept Exception:\n    sess = None\n",
            ]
        )
    ).format(call=call)
    return f"{imports}\n\n{body}"


def _is_subsequence(small: str, big: str) -> bool:
    characters = iter(big)
    return all(char in characters for char in small)


@pytest.mark.slow
@settings(max_examples=EXAMPLES, deadline=None)
@given(session_programs())
def test_fix_keeps_every_byte_and_settles(source: str) -> None:
    default = Settings.default(ALL_RULES)
    assert [f.code for f in lint_text("p.py", source, default)] in (["TFM101"], ["TFM102"])
    fixed, count, remaining = fix_text("p.py", source, default)
    assert count == 1 and remaining == []
    assert lint_text("p.py", fixed, default) == []  # a fresh parse agrees: nothing is left
    ast.parse(fixed)
    assert _is_subsequence(source, fixed)  # fixes here only insert
    assert fix_text("p.py", fixed, default)[0] == fixed


SOURCES = sorted(
    p for folder in ("fixtures/before", "tests", "tfmemlint") for p in (ROOT / folder).rglob("*.py")
)


@pytest.mark.parametrize("policy", ["growth", "fraction=0.5"])
def test_remaining_findings_are_what_a_fresh_lint_finds(policy: str) -> None:
    """fix_text reports what is left without parsing its result again when every finding's
    fix went in; a fresh lint of the fixed text must find exactly that."""
    chosen = Settings(Policy.parse(policy), select_rules(ALL_RULES, extend_select=["TFM"]))
    compared = 0
    for path in SOURCES:
        text = path.read_bytes().decode("utf-8", "replace")
        try:
            fixed, count, remaining = fix_text(path.name, text, chosen)
        except (libcst.ParserSyntaxError, UnfaithfulParseError, UnsafeFixError):
            continue
        if count:
            compared += 1
            assert remaining == lint_text(path.name, fixed, chosen), path
    assert compared > 30


def test_a_fix_can_bring_a_finding_of_its_own() -> None:
    """Fixing the second session gives it settings the first, suppressed one makes moot."""
    source = (
        "import tensorflow.compat.v1 as tf\n"
        "a = tf.Session()  # tfmemlint: ignore\n"
        "b = tf.Session()\n"
    )
    default = Settings.default(ALL_RULES)
    fixed, count, remaining = fix_text("p.py", source, default)
    assert count == 1
    assert [f.code for f in remaining] == ["TFM401"]
    assert remaining == lint_text("p.py", fixed, default)


def test_fixture_pairs_leave_what_a_fresh_lint_finds() -> None:
    """Two fixtures in one file: sessions that meet each other's fixes."""
    default = Settings.default(ALL_RULES)
    befores = sorted((ROOT / "fixtures" / "before").glob("*.py"))
    compared = 0
    for first, second in itertools.pairwise(befores):
        text = first.read_text(encoding="utf-8", errors="replace")
        text += "\n" + second.read_text(encoding="utf-8", errors="replace")
        try:
            fixed, count, remaining = fix_text("pair.py", text, default)
        except (libcst.ParserSyntaxError, UnfaithfulParseError, UnsafeFixError):
            continue
        compared += count > 0
        assert remaining == lint_text("pair.py", fixed, default), (first.name, second.name)
    assert compared > 20
