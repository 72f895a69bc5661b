"""The logic of TFM505-TFM506 (their pages are in `__init__.py`)."""

from __future__ import annotations

from collections.abc import Iterator

from tfmemlint.model import Finding, Fix
from tfmemlint.reading.launch.context import LaunchContext
from tfmemlint.rules.settings_never_arrive import ENDED_BY_COMMENT, NOT_A_STRING
from tfmemlint.rules.variables import (
    FORCE_GROWTH,
    JAX_READS,
    MEANS_NO,
    MEANS_YES,
    TENSORFLOW_READS,
    meant_instead,
)


def _about_memory(variable: str) -> bool:
    """A variable TensorFlow or JAX reads about memory, or one meant to be (TFM504's)."""
    return variable in TENSORFLOW_READS or variable in JAX_READS or bool(meant_instead(variable))


def check(ctx: LaunchContext) -> Iterator[Finding]:
    launch = ctx.launch
    for setting in launch.settings:
        if not setting.yaml_scalar or not _about_memory(setting.variable):
            continue
        kubernetes = launch.kind == "kubernetes"
        what: str | None
        if setting.yaml_boolean:
            what = "a YAML boolean"
        elif kubernetes and setting.quote == "" and setting.value_span is not None:
            what = "a YAML number" if _number(setting.value) else None
        else:
            what = None
        if what is None or setting.value is None:
            continue
        if kubernetes:
            consequence = "Kubernetes refuses an `env` value that is no string"
        else:
            consequence = (
                'podman-compose passes it as "True" or "False", which TensorFlow ignores, and '
                "docker-compose v1 rejects it"
            )
        message = f"{setting.variable}: {setting.value} is {what}, not a string: {consequence}"
        value = setting.value
        if setting.variable == FORCE_GROWTH and value.lower() in MEANS_YES | MEANS_NO:
            value = "true" if value.lower() in MEANS_YES else "false"
        edit = ctx.value_edit(setting, value)
        fix = None if edit is None else Fix(f'Quote it: "{value}"', (edit,))
        yield ctx.finding(NOT_A_STRING, message, setting.span, fix)
    for dropped in launch.dropped:
        cut = [s.variable for s in dropped.settings if _about_memory(s.variable)]
        if cut:
            listed = ", ".join(dict.fromkeys(cut))
            message = (
                f"This comment ends the continued `{dropped.command}` command above it: the "
                f"lines after it, which set {listed}, run as a command of their own, and the "
                "process never gets them"
            )
            yield ctx.finding(ENDED_BY_COMMENT, message, dropped.comment)


def _number(text: str | None) -> bool:
    try:
        float(text or "")
    except ValueError:
        return False
    return True
