"""The logic of TFM201: TF_FORCE_GPU_ALLOW_GROWTH set to a value TensorFlow ignores (the
process-wide settings themselves are read by `rules/process_settings.py`, for every family)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import libcst as cst

from tfmemlint.fixing import fixes
from tfmemlint.model import Finding, Fix
from tfmemlint.rules import literals
from tfmemlint.rules.environment import EnvSetting
from tfmemlint.rules.process_settings import FORCE_GROWTH, process_wide
from tfmemlint.rules.process_wide import INVALID_FORCE_GROWTH
from tfmemlint.rules.session_sites import fixes_only_configure_sessions
from tfmemlint.rules.variables import growth_value_problem

if TYPE_CHECKING:
    from tfmemlint.checking.engine import FileContext


def _stringified(value: cst.BaseExpression) -> cst.Call | None:
    """`str(flag)`: a bool, it seems, turned into "True" or "False" (`str(1)` is another
    matter: a literal that the value check has no text for)."""
    if (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Name)
        and value.func.value == "str"
        and len(value.args) == 1
        and value.args[0].keyword is None
        and not value.args[0].star
        and not isinstance(value.args[0].value, (cst.BaseNumber, cst.BaseString))
    ):
        return value
    return None


def check(ctx: FileContext) -> Iterator[Finding]:
    for setting in process_wide(ctx).env:
        text = setting.text
        stringified = _stringified(setting.value) if setting.variable == FORCE_GROWTH else None
        if stringified is not None and _is_builtin_str(ctx, setting):
            message = (
                f'`{ctx.code(stringified)}` makes "True" or "False" of a bool, which '
                f'{FORCE_GROWTH} ignores: TensorFlow accepts exactly "true" or "false"'
            )
            end = ctx.span(stringified)[1]
            fix = Fix("Lower-case it: `.lower()`", (ctx.edit(end, end, ".lower()"),))
            yield ctx.finding(INVALID_FORCE_GROWTH, message, setting.value, fix)
            continue
        problem = None
        if setting.variable == FORCE_GROWTH and text is not None:
            problem = growth_value_problem(text)
        if problem is None:
            continue
        message, wanted = problem
        fix = None
        if wanted is not None and isinstance(setting.value, cst.SimpleString):
            quoted = literals.spelled_like(setting.value, wanted)
            fix = Fix(f'Set it to "{wanted}"', (fixes.replace(ctx, setting.value, quoted),))
        yield ctx.finding(INVALID_FORCE_GROWTH, message, setting.value, fix)


def settled_by_fixes(ctx: FileContext, fixed: Sequence[Finding]) -> bool:
    """Whether this family finds nothing once `fixed` are: where the session family proves
    that they only write the growth config into session calls, they set no environment
    variable and hide no GPU, so it finds in the fixed text what it found here, which was
    nothing, since every finding here was fixed (one it suppressed stays suppressed: its line
    moves with the comment on it)."""
    return fixes_only_configure_sessions(ctx, fixed)


def _is_builtin_str(ctx: FileContext, setting: EnvSetting) -> bool:
    """Whether `str` in the setting is Python's own, bound nowhere in the module."""
    return ctx.names.lookup("str", setting.scope, setting.order) is None and not (
        setting.scope.module().star_imports
    )
