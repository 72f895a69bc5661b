"""Fixes as text edits: building them from CST nodes, and applying them.

Every fix is a set of insertions or replacements at exact offsets of the original text, so no byte
outside an edit can change. A builder returns None when it cannot place its edit for sure; the rule
then reports without a fix.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

from tfmemlint.model import Edit, Fix

if TYPE_CHECKING:
    import libcst as cst

    from tfmemlint.project.names import Ancestry, Binding, ModuleNames
    from tfmemlint.reading.source import LineIndex


class FileToFix(Protocol):
    """What a fix is built from: the text, its tree, its lines and names, and where each node
    sits (the engine's `FileContext` is one)."""

    @property
    def text(self) -> str: ...

    @property
    def module(self) -> cst.Module: ...

    @property
    def lines(self) -> LineIndex: ...

    @property
    def names(self) -> ModuleNames: ...

    def span(self, node: cst.CSTNode) -> tuple[int, int]:
        """The node's (start, end) offsets in the text."""
        ...

    def edit(self, start: int, end: int, content: str, key: str | None = None) -> Edit:
        """An edit of the text, with its start and end as rows and columns."""
        ...


def _is_blank(text: str) -> bool:
    return text.strip(" \t\f") == ""


def add_keyword(ctx: FileToFix, call: cst.Call, keyword: str, value: str) -> Edit | None:
    """Add `keyword=value` as the call's last argument, in the call's own layout."""
    import libcst as cst

    argument = f"{keyword}={value}"
    if not call.args:
        if call.func.lpar:
            return None
        open_paren = ctx.span(call.func)[1] + len(
            ctx.module.code_for_node(call.whitespace_after_func)
        )
        if ctx.text[open_paren : open_paren + 1] != "(":
            return None
        return ctx.edit(open_paren + 1, open_paren + 1, argument)

    last = call.args[-1]
    if isinstance(last.value, cst.GeneratorExp) and not last.value.lpar:
        return None  # `f(x for x in y)`: a generator without brackets must be the only argument
    if not isinstance(last.comma, cst.Comma):
        end = ctx.span(last)[1]
        return ctx.edit(end, end, f", {argument}")

    comma_end = ctx.span(last.comma)[1]
    comma_row = ctx.lines.location(comma_end).row
    rest_of_line = ctx.text[comma_end : ctx.lines.line_end(comma_row)]
    one_line = "\n" not in rest_of_line and "\r" not in rest_of_line
    if one_line or ctx.lines.location(ctx.span(call)[1]).row == comma_row:
        return ctx.edit(comma_end, comma_end, f" {argument},")
    # One argument per line with a trailing comma: add a line of our own, indented like the last.
    last_start = ctx.lines.location(ctx.span(last)[0])
    indent = ctx.lines.line(last_start.row)[: last_start.column - 1]
    if not _is_blank(indent):
        return ctx.edit(comma_end, comma_end, f" {argument},")
    insert_at = ctx.lines.line_end(comma_row)
    newline = ctx.lines.newline_of(comma_row)
    return ctx.edit(insert_at, insert_at, f"{indent}{argument},{newline}")


def replace(ctx: FileToFix, node: cst.CSTNode, content: str) -> Edit:
    start, end = ctx.span(node)
    return ctx.edit(start, end, content)


def own_lines(
    ctx: FileToFix, statement: cst.CSTNode | None, ancestry: Ancestry | None
) -> tuple[str, int, int] | None:
    """(indentation, first row, last row) of a small statement whose innermost ancestry cell is
    its line, when it stands alone on its lines in a block of its own; None after
    `a = 1; b = 2` or in `if x: a = 1`, where a new line would land in the wrong place."""
    import libcst as cst

    if statement is None or ancestry is None or ancestry.parent is None:
        return None
    holder, block = ancestry.node, ancestry.parent.node
    if not isinstance(holder, cst.SimpleStatementLine) or len(holder.body) != 1:
        return None
    if not isinstance(block, (cst.IndentedBlock, cst.Module)):
        return None
    start, end = ctx.span(statement)
    start_at = ctx.lines.location(start)
    indent = ctx.lines.line(start_at.row)[: start_at.column - 1]
    if not _is_blank(indent):
        return None
    return indent, start_at.row, ctx.lines.location(end).row


def insert_line_after(
    ctx: FileToFix, binding: Binding, line: str, key: str | None = None
) -> Edit | None:
    """Insert `line` after the statement that made `binding`, at the same indentation."""
    placed = own_lines(ctx, binding.statement, binding.ancestry)
    if placed is None:
        return None
    indent, _, end_row = placed
    insert_at = ctx.lines.line_end(end_row)
    newline = ctx.lines.newline_of(end_row)
    if insert_at == len(ctx.text) and not ctx.text.endswith(("\n", "\r")):
        return ctx.edit(insert_at, insert_at, f"{newline}{indent}{line}", key)
    return ctx.edit(insert_at, insert_at, f"{indent}{line}{newline}", key)


def insert_after_statement(ctx: FileToFix, statement: cst.CSTNode, lines: str) -> Edit:
    """Insert `lines` (without a final newline) after a statement of the module body, below a
    blank line: where code after an import block belongs (isort wants the blank line). The
    edit goes at the end of the statement's last line, before its line break, so that it
    starts where the statement ends (the fix's reparse then takes it as one piece with it)."""
    end = ctx.span(statement)[1]
    row = ctx.lines.location(max(end - 1, 0)).row  # a statement's span ends with its newline
    newline = ctx.lines.newline_of(row)
    line_end = ctx.lines.line_end(row)
    at = line_end - len(newline) if ctx.text.endswith(newline, 0, line_end) else line_end
    content = newline.join(("", "", *lines.split("\n")))
    return ctx.edit(at, at, content)


def insert_before_statement(ctx: FileToFix, statement: cst.CSTNode, lines: str) -> Edit:
    """Insert `lines` (without a final newline) at column 0 on the lines just above a statement
    of the module body, below its comments: where a setting that must come before an import
    goes."""
    row = ctx.lines.location(ctx.span(statement)[0]).row
    newline = ctx.lines.newline_of(row)
    at = ctx.lines.starts[row - 1]
    return ctx.edit(at, at, newline.join(lines.split("\n")) + newline)


def set_env_before(ctx: FileToFix, binding: Binding, variable: str, value: str) -> Edit | None:
    """`os.environ.setdefault(variable, value)` on its own line before the module-body
    statement that made `binding` (an import), after a blank line where an import block ends
    there, as isort wants. Where the module has not imported `os` by then, `import os` and the
    setting go before the module's first import instead, a block of their own that leaves the
    user's imports as they were sorted; where it has, as early as it can, right after that
    import (and the settings of the environment that follow it), so that the imports after
    it stay one block. None where `os` is something else, or the statement is not the module
    body's."""
    import libcst as cst

    if binding.ancestry is None or binding.ancestry.parent is None:
        return None
    statement = binding.ancestry.node
    if not isinstance(binding.ancestry.parent.node, cst.Module) or not _imports_only(statement):
        return None  # a line that also holds a docstring or code, or a `__future__` import
    module = ctx.names.module_scope
    # Only a binding made before the import counts: one further down is not there yet.
    bindings = [b for b in module.bindings.get("os", []) if b.order < binding.order]
    if bindings and not all(other.qualified == "os" for other in bindings):
        return None
    # ...and only a line of the module body, above it, surely binds `os` there (not one under
    # `try` or `if`, nor the statement itself: `import os; import tensorflow`).
    above = ctx.span(statement)[0]
    made = [
        b
        for b in bindings
        if b.ancestry is not None
        and b.ancestry.parent is not None
        and isinstance(b.ancestry.parent.node, cst.Module)
        and ctx.span(b.ancestry.node)[1] <= above
    ]
    lines = f'os.environ.setdefault("{variable}", "{value}")'
    if not made:
        lines = "import os\n\n" + lines
        first = _first_import(ctx.module)
        statement = first if first is not None and _imports_only(first) else statement
    else:
        statement = _after_os(ctx, made[0], statement)
    if _follows_an_import(ctx, statement):
        lines = "\n" + lines
    return insert_before_statement(ctx, statement, lines)


def _after_os(ctx: FileToFix, os_import: Binding, statement: cst.CSTNode) -> cst.CSTNode:
    """The first import line after the module-body statement that imports `os`, past the
    settings of the environment there, if it comes no later than `statement`; else
    `statement`."""
    body = list(ctx.module.body)
    ancestry = list(os_import.ancestry or ())
    at = next((i for i, s in enumerate(body) if any(s is a for a in ancestry)), None)
    if at is None:
        return statement
    for candidate in body[at + 1 :]:
        if candidate is statement or not sets_the_environment(ctx, candidate):
            return candidate if candidate is statement or _imports_only(candidate) else statement
    return statement


def sets_the_environment(ctx: FileToFix, statement: cst.CSTNode) -> bool:
    """A line of `os.environ` settings (`os.environ[...] = ...`, `.setdefault(...)`), which
    ruff lets stand among imports and which starts nothing."""
    import libcst as cst

    if not isinstance(statement, cst.SimpleStatementLine):
        return False

    def spelled(small: cst.BaseSmallStatement) -> str:
        start, end = ctx.span(small)
        return ctx.text[start:end]

    return all(
        isinstance(small, (cst.Expr, cst.Assign)) and spelled(small).startswith("os.environ")
        for small in statement.body
    )


def _imports_only(statement: cst.CSTNode) -> bool:
    """A line of imports alone, none of them `from __future__` (which must stay first)."""
    import libcst as cst

    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(small, cst.Import)
        or (
            isinstance(small, cst.ImportFrom)
            and not (isinstance(small.module, cst.Name) and small.module.value == "__future__")
        )
        for small in statement.body
    )


def _first_import(module: cst.Module) -> cst.CSTNode | None:
    """The module body's first line of imports, `from __future__` aside."""
    import libcst as cst

    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        imports = [s for s in statement.body if isinstance(s, (cst.Import, cst.ImportFrom))]
        if imports and not any(
            isinstance(s, cst.ImportFrom)
            and isinstance(s.module, cst.Name)
            and s.module.value == "__future__"
            for s in imports
        ):
            return statement
    return None


def _follows_an_import(ctx: FileToFix, statement: cst.CSTNode) -> bool:
    """Whether a module-body statement comes on the line right after an import."""
    import libcst as cst

    body = list(ctx.module.body)
    index = next((i for i, other in enumerate(body) if other is statement), 0)
    previous = body[index - 1] if index else None
    if not isinstance(previous, cst.SimpleStatementLine) or not all(
        isinstance(small, (cst.Import, cst.ImportFrom)) for small in previous.body
    ):
        return False
    row = ctx.lines.location(ctx.span(statement)[0]).row
    return ctx.lines.location(max(ctx.span(previous)[1] - 1, 0)).row == row - 1


def insert_line_before(
    ctx: FileToFix, binding: Binding, line: str, key: str | None = None
) -> Edit | None:
    """Insert `line` before the statement that made `binding`, at the same indentation."""
    placed = own_lines(ctx, binding.statement, binding.ancestry)
    if placed is None:
        return None
    indent, start_row, _ = placed
    insert_at = ctx.lines.starts[start_row - 1]
    return ctx.edit(insert_at, insert_at, f"{indent}{line}{ctx.lines.newline_of(start_row)}", key)


def apply(fixes: Iterable[Fix], text: str) -> tuple[int, str]:
    """Apply the fixes whose edits don't clash with an earlier fix: (fixes applied, new text).

    Identical edits (two sessions sharing one config line or one import) are applied once.
    A clashing fix, or one whose keyed edit differs from one already taken, is left for the
    next round, after re-linting the new text.
    """
    taken, edits = accepted(fixes)
    return len(taken), applied_edits(edits, text)


def accepted(fixes: Iterable[Fix]) -> tuple[list[int], list[Edit]]:
    """The indexes of the fixes `apply` takes, and their edits, each once, in text order."""
    edits: list[Edit] = []
    keyed: dict[str, Edit] = {}
    taken: list[int] = []
    for index, fix in enumerate(fixes):
        new_edits = [edit for edit in fix.edits if edit not in edits]
        if any(_clash(edit, other) for edit in new_edits for other in edits):
            continue
        if any(e.key in keyed and keyed[e.key] != e for e in fix.edits if e.key is not None):
            continue
        edits.extend(new_edits)
        keyed.update((e.key, e) for e in new_edits if e.key is not None)
        taken.append(index)
    return taken, sorted(edits, key=lambda e: (e.start, e.end))


def applied_edits(edits: list[Edit], text: str) -> str:
    """The text with `edits` (in text order, none overlapping) made."""
    pieces = []
    cursor = 0
    for edit in edits:
        pieces.append(text[cursor : edit.start])
        pieces.append(edit.content)
        cursor = edit.end
    pieces.append(text[cursor:])
    return "".join(pieces)


def _clash(a: Edit, b: Edit) -> bool:
    if a.start == a.end == b.start == b.end:
        return True  # Two different insertions at one point: their order would be a guess.
    return a.start < b.end and b.start < a.end
