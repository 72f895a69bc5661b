"""Where nodes lie: positions.measure must give every node the span libcst's own PositionProvider
gives it (fixes are edits at those offsets), and LineIndex must count Python's line breaks."""

from __future__ import annotations

import contextlib
import re
import sys

import hypothesmith
import libcst as cst
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.test_fuzz import GENERATED_PROGRAMS
from tests.test_walk import EXTRA, SOURCES
from tfmemlint.reading import positions
from tfmemlint.reading.source import LineIndex

LAYOUTS = [
    "x = 1",  # no final line break: libcst drops the one it counted
    "def f():\n    return g(a,\n             b)",
    "a = 1\r\nif a:\r\n\tb = (1 +\r\n\t     2)\r\n",
    "x = 1\rprint(x)\r",
    "if x:\n    y\n\n# the end",
    "",
    "# only a comment",
    "s = '''\nmany\nlines'''; t = f'{s!r:>{10}}'\n",
    "\ufeffx = 'ünïcödé'  # 😀\n\u03c3 = x\n",
]


def _same_spans(text: str) -> None:
    module = cst.parse_module(text)
    fast, fast_code = positions.measure(module)[:2]
    slow, slow_code = positions.provider_spans(module)
    assert fast_code == slow_code == module.code
    assert fast == slow


@pytest.mark.parametrize("text", LAYOUTS)
def test_spans_match_the_position_provider_on_layouts(text: str) -> None:
    _same_spans(text)


def test_spans_match_the_position_provider_on_real_files() -> None:
    compared = 0
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))  # libcst's codegen recurses per level
    try:
        for text in [EXTRA, *(p.read_bytes().decode("utf-8", "replace") for p in SOURCES)]:
            try:
                _same_spans(text)
            except cst.ParserSyntaxError:
                continue
            compared += 1
    finally:
        sys.setrecursionlimit(limit)
    assert compared > 100


@pytest.mark.slow
@GENERATED_PROGRAMS
@given(hypothesmith.from_grammar())
def test_spans_match_the_position_provider_on_generated_programs(program: str) -> None:
    with contextlib.suppress(cst.ParserSyntaxError):
        _same_spans(program)


def test_without_libcsts_codegen_protocol_the_provider_serves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = cst.parse_module(EXTRA)
    fast = positions.measure(module)[:2]
    monkeypatch.setattr(positions, "CodegenState", None)
    assert positions.measure(module)[:2] == fast


@given(st.text(alphabet=st.sampled_from(list("ab \t\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029é"))))
def test_line_starts_are_pythons_line_breaks(text: str) -> None:
    expected = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]
    assert LineIndex(text).starts == expected


@pytest.mark.parametrize("text", [t for t in LAYOUTS if t.endswith(("\n", "\r"))])
def test_each_top_level_statement_extent_is_its_own_code(text: str) -> None:
    module = cst.parse_module(text)
    measured = positions.measure(module)
    if measured.statements is None:  # only where libcst drops the final line break (a lone CR)
        assert module.code != text
        return
    start = len("".join(module.code_for_node(line) for line in module.header))
    for statement, (begin, end) in zip(module.body, measured.statements, strict=True):
        assert (begin, end) == (start, start + len(module.code_for_node(statement)))
        start = end
