"""Property tests: whatever the layout of a session call, its fix keeps every original byte,
parses, leaves no finding and is idempotent."""

from __future__ import annotations

import ast
import os

from hypothesis import given, settings
from hypothesis import strategies as st

from tfmemlint.engine import fix_text, lint_text
from tfmemlint.settings import Settings

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


@settings(max_examples=EXAMPLES, deadline=None)
@given(session_programs())
def test_fix_keeps_every_byte_and_settles(source: str) -> None:
    default = Settings.default()
    assert [f.code for f in lint_text("p.py", source, default)] in (["TFM101"], ["TFM102"])
    fixed, count, remaining = fix_text("p.py", source, default)
    assert count == 1 and remaining == []
    ast.parse(fixed)
    assert _is_subsequence(source, fixed)  # fixes here only insert
    assert fix_text("p.py", fixed, default)[0] == fixed
