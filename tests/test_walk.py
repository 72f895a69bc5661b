"""cst_walk.walk must visit exactly what libcst's own visit does, in the same order, less the layout
nodes (which must hold nothing else): the name table's notion of "before" depends on it."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import libcst as cst
import pytest

from tests.conftest import ROOT
from tfmemlint.reading.cst_walk import LAYOUT, walk

SOURCES = sorted(
    p
    for folder in ("fixtures", "tests", "tfmemlint", "bench")
    for p in (ROOT / folder).rglob("*.py")
)
EXTRA = """
@decorator(arg)
async def f(a, /, b: int = 1, *args, c, d=2, **kw) -> "T":
    x = [y async for y in z if y] + {k: v for k, v in w} + (lambda q=1: q)(b)
    match x:
        case [1, *rest] | {"k": v, **others} if rest:
            return f"{x!r:>{b}}" if x else x[1:2, ::3]
    with open(a) as (g, h), other():
        global gg
        del x.y, x[0]
    try:
        pass
    except* (E1, E2) as e:
        raise X from e
    finally:
        yield from (await a)
class C(Base, metaclass=M):
    t: int
    u = v = w @ x ** -y if not z else ~z
"""


class Recorder(cst.CSTVisitor):
    def __init__(self, skip: type | None = None) -> None:
        self.events: list[tuple[str, int]] = []
        self.skip = skip

    def on_visit(self, node: cst.CSTNode) -> bool:
        if type(node) in LAYOUT:
            return False  # cst_walk.walk leaves layout out
        self.events.append(("visit", id(node)))
        return not (self.skip and isinstance(node, self.skip))

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if type(original_node) not in LAYOUT:
            self.events.append(("leave", id(original_node)))


class LayoutHoldsOnlyLayout(cst.CSTVisitor):
    """Fails on any node that is not layout but sits inside a layout node."""

    def __init__(self) -> None:
        self.inside: list[bool] = [False]

    def on_visit(self, node: cst.CSTNode) -> bool:
        layout = type(node) in LAYOUT
        assert layout or not self.inside[-1], type(node).__name__
        self.inside.append(layout or self.inside[-1])
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.inside.pop()


def events(module: cst.Module, skip: type | None, fast: bool) -> list[tuple[str, int]]:
    recorder = Recorder(skip)
    if fast:
        walk(module, recorder)
    else:
        module.visit(recorder)
    return recorder.events


@pytest.mark.parametrize("skip", [None, cst.FunctionDef])
def test_walk_matches_libcst_visit(skip: type | None) -> None:
    texts = [EXTRA]
    for path in SOURCES:
        texts.append(path.read_bytes().decode("utf-8", "replace"))
    compared = 0
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))  # libcst's own walk recurses per level
    try:
        for text in texts:
            try:
                module = cst.parse_module(text)
            except cst.ParserSyntaxError:
                continue
            assert events(module, skip, fast=True) == events(module, skip, fast=False)
            module.visit(LayoutHoldsOnlyLayout())
            compared += 1
    finally:
        sys.setrecursionlimit(limit)
    assert compared > 100


def test_the_walk_skips_fields_that_hold_only_layout() -> None:
    """What makes the walk cheap: a field declared to hold only layout is never read. The test
    above holds the result to libcst's own walk."""
    from tfmemlint.reading.cst_walk import _only_layout, _walked_fields

    assert _walked_fields(cst.Name) == ()
    assert set(_walked_fields(cst.Call)) == {"func", "args"}
    assert set(_walked_fields(cst.Attribute)) == {"value", "attr"}
    # A field whose declared type admits a node that is not layout stays, and so does one
    # declared a bare Sequence, which admits anything.
    assert "asynchronous" in _walked_fields(cst.FunctionDef)
    assert _only_layout(Sequence[cst.Comma]) and not _only_layout(Sequence)


class _LibcstCalls(cst.CSTVisitor):
    """TFM205's calls in order, as libcst's own walk finds them."""

    def __init__(self) -> None:
        self.found: list[cst.Call] = []

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def leave_Call(self, original_node: cst.Call) -> None:
        self.found.append(original_node)


def test_the_program_walk_finds_calls_as_libcst_would_without_rebuilding_a_node(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """TFM205's walk takes the calls of each statement in the order they complete, none inside
    a lambda. It reads the tree: libcst's walk would rebuild every node it passes, and the
    calls it finds are the same objects, in the same order."""
    from tfmemlint.rules.unconfigured_program.walk import _calls_in_order

    module = cst.parse_module(
        EXTRA + "g(h(1), k=j(2))(3)\nsort(key=lambda v: v.size(), x=[f(y) for y in z()])\n"
    )
    statements = [
        *module.body,
        *(s for c in module.body if isinstance(c.body, cst.IndentedBlock) for s in c.body.body),
    ]
    expected = []
    for statement in statements:
        libcsts = _LibcstCalls()
        statement.visit(libcsts)
        expected.append([id(call) for call in libcsts.found])
    assert sum(map(len, expected)) > 10

    rebuilt: list[str] = []  # libcst's walk visits (and rebuilds) each node through this
    visit = cst.CSTNode.visit

    def counting(self: cst.CSTNode, visitor: cst.CSTVisitor) -> cst.CSTNode:
        rebuilt.append(type(self).__name__)
        return visit(self, visitor)

    monkeypatch.setattr(cst.CSTNode, "visit", counting)
    found = [[id(call) for call in _calls_in_order(statement)] for statement in statements]
    assert found == expected
    assert rebuilt == []


def test_the_program_walk_takes_code_that_libcsts_own_check_rejects() -> None:
    """libcst's walk rebuilds each node, and its node check rejects a keyword followed by a
    bracketed lambda (LibCST#1061): the program's walk failed there, and the file was reported
    as an internal error. Reading the tree, it finds the program's start."""
    from tests.conftest import lint_text
    from tfmemlint.configuration.settings import Settings
    from tfmemlint.rules import ALL_RULES

    text = (
        "import tensorflow as tf\n\n"
        'if __name__ == "__main__":\n'
        "    pick = f(1 if flag else(lambda: 2))\n"
        "    tf.ones([1])\n"
    )
    findings = lint_text("a.py", text, Settings.default(ALL_RULES))
    assert [(f.code, f.location.row) for f in findings] == [("TFM205", 1)]
    assert "`tf.ones()` (line 5)" in findings[0].message
