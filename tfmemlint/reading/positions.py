"""Where each node of a libcst tree lies in the text, as character offsets.

libcst's PositionProvider computes rows and columns in a codegen pass that splits every token on
line breaks and builds two position objects per node. Offsets need only a running length, which
costs a quarter as much, and a finding needs offsets anyway. The spans are the PositionProvider's
(its "syntactic" ones, without the whitespace a node owns only by layout): a test holds them to it.

The same pass gives back the code, so the check that libcst reproduces the text costs nothing
more. It runs on libcst's codegen protocol (`_codegen` and `CodegenState`); should that change,
the public provider takes over.

A finding needs the spans of a few nodes, not of the whole module: `ByStatement` measures only
the statement that holds a node, and finds that statement's code in the text.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

import libcst as cst

from tfmemlint.reading.cst_walk import walk

Span = tuple[int, int]


class Positions(NamedTuple):
    spans: dict[cst.CSTNode, Span]
    code: str
    # Each top-level statement's whole extent, from its leading comment lines to its line break,
    # in order; None where the pass could not tell.
    statements: list[Span] | None


try:
    from libcst._nodes.internal import CodegenState
except ImportError:  # a libcst without it: the public provider below
    CodegenState = None


class _SyntacticSpan:
    """What libcst enters around the tokens that make a node's syntactic extent; a class is
    cheaper than the generator-based context manager libcst's own states use."""

    __slots__ = ("end_node", "node", "start", "start_node", "state")

    def __init__(self, state: Any, node: cst.CSTNode, start_node: Any, end_node: Any) -> None:
        self.state, self.node = state, node
        self.start_node, self.end_node = start_node, end_node

    def __enter__(self) -> None:
        self.start = self.state.offset

    def __exit__(self, *_: object) -> bool:
        spans = self.state.spans
        start = self.start if self.start_node is None else spans[self.start_node][0]
        end = self.state.offset if self.end_node is None else spans[self.end_node][1]
        spans[self.node] = (start, end)
        return False


if CodegenState is not None:

    class _OffsetState(CodegenState):  # type: ignore[misc,valid-type]
        def __init__(self, module: cst.Module, indents: tuple[str, ...] = ()) -> None:
            super().__init__(
                default_indent=module.default_indent, default_newline=module.default_newline
            )
            self.indent_tokens = list(indents)  # those of the blocks around a statement
            self.offset = 0
            self.spans: dict[cst.CSTNode, Span] = {}
            self.statements: list[Span] = []
            self._starts: list[int] = []

        def add_indent_tokens(self) -> None:
            self.tokens.extend(self.indent_tokens)
            for token in self.indent_tokens:
                self.offset += len(token)

        def add_token(self, value: str) -> None:
            self.tokens.append(value)
            self.offset += len(value)

        def before_codegen(self, node: cst.CSTNode) -> None:
            self._starts.append(self.offset)

        def after_codegen(self, node: cst.CSTNode) -> None:
            start = self._starts.pop()
            if len(self._starts) == 1 and type(node) is not cst.EmptyLine:
                self.statements.append((start, self.offset))  # the module's own child
            if node not in self.spans:  # a syntactic span recorded inside stands
                self.spans[node] = (start, self.offset)

        def record_syntactic_position(
            self,
            node: cst.CSTNode,
            *,
            start_node: cst.CSTNode | None = None,
            end_node: cst.CSTNode | None = None,
        ) -> _SyntacticSpan:
            return _SyntacticSpan(self, node, start_node, end_node)


def measure(module: cst.Module) -> Positions:
    """Every node's (start, end) offsets in the module's code, that code, and where each
    top-level statement lies, in one codegen pass."""
    if CodegenState is not None:
        try:
            state = _OffsetState(module)
            module._codegen(state)
        except (AttributeError, TypeError):
            return Positions(*provider_spans(module), None)  # libcst's codegen protocol changed
        code = "".join(state.tokens)
        if state.offset > len(code):
            # The module dropped the line break it ends with after the last nodes counted it.
            end = len(code)
            clamped = {n: (min(s, end), min(e, end)) for n, (s, e) in state.spans.items()}
            return Positions(clamped, code, None)
        return Positions(state.spans, code, state.statements)
    return Positions(*provider_spans(module), None)


def provider_spans(module: cst.Module) -> tuple[dict[cst.CSTNode, Span], str]:
    """The same through libcst's public PositionProvider: slower, and the yardstick."""
    from libcst.metadata import MetadataWrapper, PositionProvider

    from tfmemlint.reading.source import LineIndex

    code = module.code
    lines = LineIndex(code)
    ranges = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)

    def offset(line: int, column: int) -> int:
        # Past the last line: the end of a module that ends without a line break.
        return len(code) if line > len(lines.starts) else lines.offset(line, column)

    return {
        node: (offset(r.start.line, r.start.column), offset(r.end.line, r.end.column))
        for node, r in ranges.items()
    }, code


# A line that holds only a backslash continuation: libcst's tree leaves it out (see
# `engine.FileContext`), and a text that holds one is measured whole, so that it is told so.
_CONTINUATION = re.compile(r"\\(?:\r\n?|\n)")


class ByStatement:
    """The spans of a module's nodes, measured one statement at a time, as rules ask for them:
    the innermost statement that holds the node is generated alone, under the indentation of
    the blocks around it, and its code must lie at a line's start in the text at exactly one
    place (else its enclosing statement is tried). The spans are those `measure` gives: a test
    holds them to it. None where this cannot tell: the caller then measures the whole module."""

    def __init__(self, module: cst.Module, text: str) -> None:
        self.module, self.text = module, text
        self.spans: dict[cst.CSTNode, Span] = {}
        self._statements: _Statements | None = None
        self._tried: set[cst.CSTNode] = set()
        self._whole_only = CodegenState is None or any(
            _alone_on_its_line(text, match.start()) for match in _CONTINUATION.finditer(text)
        )

    def span(self, node: cst.CSTNode) -> Span | None:
        found = self.spans.get(node)
        if found is not None or self._whole_only:
            return found
        if self._statements is None:
            self._statements = _Statements(self.module)
        statement = self._statements.owner.get(node)
        while statement is not None and statement not in self._tried:
            self._tried.add(statement)
            start, spans = self._place(statement)
            if spans is not None:
                self.spans.update({n: (start + s, start + e) for n, (s, e) in spans.items()})
                return self.spans.get(node)
            if start is None:
                return None  # its code is nowhere in the text
            statement = self._statements.parent.get(statement)  # found at several places
        return None

    def _place(self, statement: cst.CSTNode) -> tuple[int | None, dict[cst.CSTNode, Span] | None]:
        """(where the statement's code starts, its nodes' spans from there); (-1, None) where
        that code lies at several places, (None, None) where it lies nowhere."""
        assert self._statements is not None
        state = _OffsetState(self.module, self._statements.indents[statement])
        try:
            statement._codegen(state)
        except (AttributeError, TypeError):
            return None, None  # libcst's codegen protocol changed
        code = "".join(state.tokens)
        start = _only_place(self.text, code)
        if start is None:
            return None, None
        return (start, state.spans) if start >= 0 else (-1, None)


class _Statements:
    """Each node's innermost statement (a statement's is itself), each statement's enclosing
    one, and the indentation of the blocks around it, from one walk of the tree."""

    def __init__(self, module: cst.Module) -> None:
        self.owner: dict[cst.CSTNode, cst.CSTNode] = {}
        self.parent: dict[cst.CSTNode, cst.CSTNode | None] = {}
        self.indents: dict[cst.CSTNode, tuple[str, ...]] = {}
        self._default_indent = module.default_indent
        self._around: list[cst.CSTNode] = []
        self._blocks: list[str] = []
        walk(module, self)

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.BaseStatement):
            self.parent[node] = self._around[-1] if self._around else None
            self.indents[node] = tuple(self._blocks)
            self._around.append(node)
        elif type(node) is cst.IndentedBlock:
            self._blocks.append(self._default_indent if node.indent is None else node.indent)
        if self._around:
            self.owner[node] = self._around[-1]
        return True

    def on_leave(self, node: cst.CSTNode) -> None:
        if isinstance(node, cst.BaseStatement):
            self._around.pop()
        elif type(node) is cst.IndentedBlock:
            self._blocks.pop()


def _only_place(text: str, code: str) -> int | None:
    """Where `code` starts a line of `text`, when it does at one place only; -1 where it does
    at several, None where at none."""
    found = None
    at = text.find(code) if code else -1
    while at != -1:
        if at == 0 or text[at - 1] in "\r\n":
            if found is not None:
                return -1
            found = at
        at = text.find(code, at + 1)
    return found


def _alone_on_its_line(text: str, backslash: int) -> bool:
    line_start = max(text.rfind("\n", 0, backslash), text.rfind("\r", 0, backslash)) + 1
    return not text[line_start:backslash].strip(" \t\f")
