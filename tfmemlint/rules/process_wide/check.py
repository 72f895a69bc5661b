"""Process-wide memory settings: TF_FORCE_GPU_ALLOW_GROWTH, hidden GPUs. The logic of TFM201, and
the analysis the session rules consult before reporting a session."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import libcst as cst

from tfmemlint import fixes
from tfmemlint.engine import FileContext
from tfmemlint.model import Finding, Fix
from tfmemlint.names import CallSite, Scope
from tfmemlint.rules import literals
from tfmemlint.rules.environment import MEANS_NO, MEANS_YES, EnvSetting, env_settings
from tfmemlint.rules.process_wide import INVALID_FORCE_GROWTH
from tfmemlint.rules.runtime import hides_all_gpus

FORCE_GROWTH = "TF_FORCE_GPU_ALLOW_GROWTH"
VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"


@dataclass(frozen=True)
class ProcessWide:
    env: tuple[EnvSetting, ...]
    # Where the settings that limit every session's GPU memory are made, and why they do.
    limits: tuple[tuple[Scope, int, str], ...]

    def limits_memory_for(self, site: CallSite) -> str | None:
        """Why the process's settings make `site`'s session memory-aware, if they do: set at
        module level (before the call, when the call is at module level too), or earlier in the
        call's own scope."""
        for scope, order, reason in self.limits:
            module_level = scope.kind == "module" and site.scope is not scope
            if module_level or (scope is site.scope and order < site.order):
                return reason
        return None


def process_wide(ctx: FileContext) -> ProcessWide:
    cached = ctx.cache.get("process_wide")
    if isinstance(cached, ProcessWide):
        return cached
    wanted = (FORCE_GROWTH, VISIBLE_DEVICES)
    env = tuple(env_settings(ctx.names, wanted)) if _mentions_env(ctx.text) else ()
    limits = []
    for setting in env:
        if setting.variable == FORCE_GROWTH and setting.text == "true":
            limits.append((setting.scope, setting.order, f"{FORCE_GROWTH}=true"))
        hidden = setting.text is not None and setting.text.strip() in ("", "-1")
        if setting.variable == VISIBLE_DEVICES and hidden:
            limits.append((setting.scope, setting.order, f"{VISIBLE_DEVICES} hides every GPU"))
    for site in ctx.names.calls:
        if hides_all_gpus(ctx.names, site):
            limits.append((site.scope, site.order, "set_visible_devices([], 'GPU')"))
    result = ProcessWide(env, tuple(limits))
    ctx.cache["process_wide"] = result
    return result


def _mentions_env(text: str) -> bool:
    return FORCE_GROWTH in text or VISIBLE_DEVICES in text


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
        if setting.variable != FORCE_GROWTH or text is None or text in ("true", "false"):
            continue
        meant = text.strip().lower()
        wanted = "true" if meant in MEANS_YES else "false" if meant in MEANS_NO else None
        message = (
            f'{FORCE_GROWTH}={text!r} is ignored: TensorFlow accepts exactly "true" or "false"'
        )
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
    # Imported here: the session family's logic imports this module.
    from tfmemlint.rules.session_config.check import settled_by_fixes as session_config_settled

    return session_config_settled(ctx, fixed)


def _is_builtin_str(ctx: FileContext, setting: EnvSetting) -> bool:
    """Whether `str` in the setting is Python's own, bound nowhere in the module."""
    return ctx.names.lookup("str", setting.scope, setting.order) is None and not (
        setting.scope.module().star_imports
    )
