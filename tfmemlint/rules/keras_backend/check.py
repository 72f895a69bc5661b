"""The logic of TFM206 (its page is in `__init__.py`)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from tfmemlint.model import Finding
from tfmemlint.rules.backends import KERAS_BACKEND, keras_backend
from tfmemlint.rules.keras_backend import BACKEND_SET_TOO_LATE

if TYPE_CHECKING:
    from tfmemlint.checking.engine import FileContext


def check(ctx: FileContext) -> Iterator[Finding]:
    backend = keras_backend(ctx)
    first = backend.keras_import
    if first is None or first.statement is None:
        return
    imported = ctx.code(first.statement)
    row = ctx.lines.location(ctx.span(first.statement)[0]).row
    runs_on = (
        f"it runs on {backend.name} ({backend.how})"
        if backend.name is not None
        else "it runs on the backend Keras read then"
    )
    message = (
        f"{KERAS_BACKEND} is set after `{imported}` ({ctx.place(row)}), and Keras read "
        f"its backend once, there: this setting has no effect, and {runs_on}"
    )
    for setting in backend.late:
        if not _same(setting.text, backend.name):
            yield ctx.finding(BACKEND_SET_TOO_LATE, message, setting.node, None)
    for line in backend.late_lines:
        if not _same(line.value, backend.name):
            # the row holds a placeholder, indented as the line was
            yield ctx.finding_at(BACKEND_SET_TOO_LATE, message, ctx.indented_start(line.row))


def _same(value: str | None, backend: str | None) -> bool:
    """The backend Keras already runs on: setting it again changes nothing."""
    return value is not None and value.strip().lower() == backend


def settled_by_fixes(ctx: FileContext, fixed: Sequence[Finding]) -> bool:
    """True: this rule has no fix, so every finding fixed is another family's, and none of
    their fixes sets KERAS_BACKEND, imports Keras or moves an import or a setting; the fixed
    text holds what this rule found before, which was nothing (a finding of its own, never
    fixed, keeps the engine looking again)."""
    return True
