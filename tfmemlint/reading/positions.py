"""Where each node of a libcst tree lies in the text, as character offsets.

libcst's PositionProvider computes rows and columns in a codegen pass that splits every token on
line breaks and builds two position objects per node. Offsets need only a running length, which
costs a quarter as much, and a finding needs offsets anyway. The spans are the PositionProvider's
(its "syntactic" ones, without the whitespace a node owns only by layout): a test holds them to it.

The same pass gives back the code, so the check that libcst reproduces the text costs nothing
more. It runs on libcst's codegen protocol (`_codegen` and `CodegenState`); should that change,
the public provider takes over.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import libcst as cst

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
        def __init__(self, module: cst.Module) -> None:
            super().__init__(
                default_indent=module.default_indent, default_newline=module.default_newline
            )
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


if CodegenState is not None:

    class _NeedsIndentation(Exception):
        """The node's code holds the indentation of the blocks around it: the code of the
        node alone would leave it out."""

    class _AloneState(_OffsetState):
        def add_indent_tokens(self) -> None:
            raise _NeedsIndentation


def code_alone(module: cst.Module, node: cst.BaseExpression) -> str | None:
    """The text of an expression's span (see `measure`), from its own codegen rather than the
    module's: what the module's code holds there, wherever that code gives back the text.
    None where the expression's code depends on the blocks around it (a line continued inside
    brackets, indented as its block is), or libcst's codegen protocol changed."""
    if CodegenState is None:
        return None
    state = _AloneState(module)
    try:
        node._codegen(state)
    except (_NeedsIndentation, AttributeError, TypeError):
        return None
    start, end = state.spans[node]
    return "".join(state.tokens)[start:end]


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
