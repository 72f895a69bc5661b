"""The logic of TFM504 (its page is in `__init__.py`)."""

from __future__ import annotations

from collections.abc import Iterator

from tfmemlint.model import Finding
from tfmemlint.reading.launch.context import LaunchContext
from tfmemlint.rules.lookalike_variables import LOOKALIKE_VARIABLE
from tfmemlint.rules.variables import meant_instead


def check(ctx: LaunchContext) -> Iterator[Finding]:
    for setting in ctx.launch.settings:
        instead = meant_instead(setting.variable)
        if instead is not None:
            message = (
                f"Neither TensorFlow nor JAX reads {setting.variable}: it does nothing; "
                f"use {instead}"
            )
            yield ctx.finding(LOOKALIKE_VARIABLE, message, setting.span)
