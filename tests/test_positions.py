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

from tests.conftest import fixed, lint_text
from tests.test_fuzz import GENERATED_PROGRAMS
from tests.test_walk import EXTRA, SOURCES
from tfmemlint.configuration.settings import Settings
from tfmemlint.reading import positions
from tfmemlint.reading.source import LineIndex
from tfmemlint.rules import ALL_RULES
from tfmemlint.running.file_check import check_bytes

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


class _Expressions(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found: list[cst.BaseExpression] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.BaseExpression):
            self.found.append(node)
        return True


def test_an_expressions_code_alone_is_its_text_in_the_module() -> None:
    """A message may quote an expression before any rule needs positions: its own codegen
    gives what the module's span of it holds, or nothing where it leans on its block's
    indentation."""
    alone = leaning = 0
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))  # libcst's codegen recurses per level
    try:
        for text in [EXTRA, *(p.read_bytes().decode("utf-8", "replace") for p in SOURCES)]:
            try:
                module = cst.parse_module(text)
            except cst.ParserSyntaxError:
                continue
            spans, code = positions.measure(module)[:2]
            expressions = _Expressions()
            module.visit(expressions)
            for node in expressions.found[::7]:  # a sample: every node is a codegen each
                quoted = positions.code_alone(module, node)
                if quoted is None:
                    leaning += 1
                    continue
                start, end = spans[node]
                assert quoted == code[start:end]
                alone += 1
    finally:
        sys.setrecursionlimit(limit)
    assert alone > 10_000 and leaning > 10


def test_an_expression_continued_in_a_block_is_quoted_from_the_module() -> None:
    module = cst.parse_module("def run(opts):\n    return f(opts.\n             config)\n")
    call = module.body[0].body.body[0].body[0].value  # type: ignore[attr-defined]
    assert positions.code_alone(module, call.args[0].value) is None
    assert positions.code_alone(module, call.func) == "f"


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


# Two identical sessions, where the statement that holds the second, generated without its
# module, differs from its text there: a position must come from the whole module's layout,
# never from where the same code appears first (the positions by statement an independent
# review caught, see docs/performance.md).
_TWINS = {
    "elif": "import tensorflow as tf\nif a:\n    pass\nelif b:\n    sess = tf.Session()\n"
    "if b:\n    sess = tf.Session()\n",
    "match": "import tensorflow as tf\nmatch x:\n    case 1:\n        sess = tf.Session()\n"
    "def f():\n    sess = tf.Session()\n",
    "no final line break": "import tensorflow as tf\nsess = tf.Session()\nsess = tf.Session()",
}


@pytest.mark.parametrize("text", _TWINS.values(), ids=list(_TWINS))
def test_twin_sessions_are_each_found_where_they_are(text: str) -> None:
    found = lint_text("t.py", text, Settings.default(ALL_RULES))
    sessions = [f for f in found if f.code == "TFM101"]
    rows = [row + 1 for row, line in enumerate(text.splitlines()) if "tf.Session()" in line]
    assert [(f.location.row, f.location.column) for f in sessions] == [
        (row, text.splitlines()[row - 1].index("tf.Session()") + 1) for row in rows
    ]
    once = fixed(text)
    assert lint_text("t.py", once, Settings.default(ALL_RULES)) == []


def test_a_form_feed_libcst_drops_is_reported_not_fixed() -> None:
    text = (
        "import tensorflow as tf\ndef f():\n    sess = tf.Session()\n    return sess\n"
        "def g():\n    x = 1\n\x0c    sess = tf.Session()\n    return sess\n"
    )
    default = Settings.default(ALL_RULES)
    checked, _ = check_bytes("t.py", text.encode(), default, "check")
    assert [f.code for f in checked.findings] == ["TFM903"]  # the engine's internal error
    fixing, _ = check_bytes("t.py", text.encode(), default, "fix")
    assert fixing.fixed_text is None
