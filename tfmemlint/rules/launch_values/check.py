"""The logic of TFM501-TFM503 (their pages are in `__init__.py`); the judgements of each value
are TFM201's and TFM210's, in `rules/variables.py`."""

from __future__ import annotations

from collections.abc import Iterator

from tfmemlint.model import Finding, Fix
from tfmemlint.reading.launch.context import LaunchContext
from tfmemlint.rules.launch_values import (
    GROWTH_FORCED_OFF,
    INVALID_FORCE_GROWTH,
    INVALID_JAX_SETTING,
)
from tfmemlint.rules.variables import (
    FORCE_GROWTH,
    JAX_VARIABLES,
    growth_value_problem,
    jax_value_problem,
)


def check(ctx: LaunchContext) -> Iterator[Finding]:
    for setting in ctx.launch.settings:
        if setting.value is None or setting.yaml_boolean:
            continue  # not written out, or not a string at all (TFM505's)
        if setting.variable == FORCE_GROWTH:
            if setting.value == "false":
                message = (
                    f"{FORCE_GROWTH}=false forces memory growth off in every TensorFlow program "
                    "this file starts: one that asks for growth takes nearly all of every GPU"
                )
                yield ctx.finding(GROWTH_FORCED_OFF, message, setting.span)
                continue
            problem = growth_value_problem(setting.value)
            rule = INVALID_FORCE_GROWTH
        elif setting.variable in JAX_VARIABLES:
            problem = jax_value_problem(setting.variable, setting.value)
            rule = INVALID_JAX_SETTING
        else:
            continue
        if problem is None:
            continue
        message, wanted = problem
        edit = None if wanted is None else ctx.value_edit(setting, wanted)
        fix = None if edit is None else Fix(f"Set it to {wanted}", (edit,))
        yield ctx.finding(rule, message, setting.span, fix)
