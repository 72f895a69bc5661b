"""The logic of TFM301-TFM304: literal memory values, wherever they are written."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import libcst as cst

from tfmemlint.model import Finding
from tfmemlint.rules import literals
from tfmemlint.rules.session_sites import fixes_only_configure_sessions
from tfmemlint.rules.values import (
    FRACTION_OUT_OF_RANGE,
    FRACTION_UNIFIED_MEMORY,
    FRACTION_WHOLE_GPU,
    MEMORY_LIMIT_NOT_POSITIVE,
)

if TYPE_CHECKING:
    from tfmemlint.checking.engine import FileContext

FRACTION = "per_process_gpu_memory_fraction"
# The constructors whose `memory_limit` (MB, first positional) caps a logical GPU.
_LIMIT_APIS = frozenset(
    {
        "config.LogicalDeviceConfiguration",
        "config.experimental.LogicalDeviceConfiguration",
        "config.experimental.VirtualDeviceConfiguration",
    }
)


def check(ctx: FileContext) -> Iterator[Finding]:
    names = ctx.names
    for site in names.calls:
        call = site.node
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == FRACTION:
                yield from _fraction(ctx, arg.value)
            elif arg.keyword is not None and arg.keyword.value == "memory_limit_mb":
                yield from _limits(ctx, arg.value, "memory_limit_mb")
            elif isinstance(arg.value, cst.Dict):
                for element in arg.value.elements:
                    if (
                        isinstance(element, cst.DictElement)
                        and literals.string(element.key) == FRACTION
                    ):
                        yield from _fraction(ctx, element.value)
        if names.api_of(call.func, site.scope, site.order) in _LIMIT_APIS:
            for position, arg in enumerate(call.args):
                named = arg.keyword is not None and arg.keyword.value == "memory_limit"
                if named or (arg.keyword is None and position == 0 and not arg.star):
                    yield from _limits(ctx, arg.value, "memory_limit")
    for assign in names.attribute_assigns:
        if assign.target.attr.value == FRACTION:
            yield from _fraction(ctx, assign.node.value)


def settled_by_fixes(ctx: FileContext, fixed: Sequence[Finding]) -> bool:
    """Whether this family finds nothing once `fixed` are: where the session family proves
    that they only write the growth config into session calls, they add the keywords
    `config`, `gpu_options` and `allow_growth` and calls to ConfigProto and GPUOptions,
    none of which this family reads, and change no API a call names: it finds in the fixed
    text what it found here, which was nothing, since every finding here was fixed (one it
    suppressed stays suppressed: its line moves with the comment on it)."""
    return fixes_only_configure_sessions(ctx, fixed)


def _fraction(ctx: FileContext, value: cst.BaseExpression) -> Iterator[Finding]:
    fraction = literals.number(value)
    if fraction is None or fraction == 0:
        return  # 0 means "the default" and is the session rules' business (TFM103)
    written = ctx.code(value)
    setting = f"`{FRACTION}={written}`"
    if fraction < 0:
        yield ctx.finding(FRACTION_OUT_OF_RANGE, f"{setting} must be in (0, 1]", value, None)
    elif fraction > 1 and (isinstance(value, cst.Integer) or fraction >= 2):
        message = (
            f"{setting} is not a fraction: it must be in (0, 1]; a percentage such as 40 % is 0.4"
        )
        yield ctx.finding(FRACTION_OUT_OF_RANGE, message, value, None)
    elif fraction > 1:
        message = (
            f"{setting} turns on unified memory: "
            "the process takes the whole GPU and spills into host RAM"
        )
        yield ctx.finding(FRACTION_UNIFIED_MEMORY, message, value, None)
    elif fraction == 1:
        message = (
            f"{setting} asks for the GPU's whole memory, more than is ever free; "
            "use allow_growth or a smaller fraction"
        )
        yield ctx.finding(FRACTION_WHOLE_GPU, message, value, None)


def _limits(ctx: FileContext, value: cst.BaseExpression, what: str) -> Iterator[Finding]:
    values = (
        [e.value for e in value.elements] if isinstance(value, (cst.List, cst.Tuple)) else [value]
    )
    for item in values:
        limit = literals.number(item)
        if limit is not None and limit <= 0:
            message = f"`{what}={ctx.code(item)}` must be a positive number of megabytes"
            yield ctx.finding(MEMORY_LIMIT_NOT_POSITIVE, message, item, None)
