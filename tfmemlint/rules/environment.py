"""What a module writes into its own process environment (`os.environ[...] = ...`,
`setdefault`, `update`, `os.putenv`, and a notebook's `%env` lines), as literal settings the
rules read: TensorFlow's variables, CUDA's, Keras's and JAX's. Shared by the families; it reads
only `names`."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import NamedTuple

import libcst as cst

from tfmemlint.model import Layout
from tfmemlint.project.names import Ancestry, ModuleNames, Scope
from tfmemlint.rules import literals

# `%env NAME=value`, `%env NAME value`, `%set_env ...`: IPython's lines, one per line.
_ENV_LINE = re.compile(r"^[ \t]*%(?:env|set_env)[ \t]+(\w+)[ \t]*[= \t][ \t]*(\S*)")


class EnvLine(NamedTuple):
    variable: str
    value: str  # unquoted
    row: int  # the row of the checked text that stands in for the line


def env_lines(layout: Layout, wanted: Collection[str]) -> Iterator[EnvLine]:
    """Each `%env` line among a notebook's IPython lines that sets one of the `wanted`
    variables, in order."""
    lines = layout.set_aside.split("\n") if layout.set_aside else []
    for line, row in zip(lines, layout.set_aside_rows, strict=True):
        match = _ENV_LINE.match(line)
        if match is not None and match[1] in wanted:
            yield EnvLine(match[1], match[2].strip("'\""), row)


@dataclass(frozen=True)
class EnvSetting:
    variable: str
    value: cst.BaseExpression
    node: cst.CSTNode  # the assignment or the call that makes the setting
    scope: Scope
    order: int
    # `os.environ.setdefault`: a value the shell already gave wins over this one.
    default_only: bool = False
    # Where the setting sits, for telling branches apart (None: not known).
    ancestry: Ancestry | None = None

    @property
    def text(self) -> str | None:
        return literals.string(self.value)


def _is_environ(names: ModuleNames, expr: cst.BaseExpression, scope: Scope, order: int) -> bool:
    return names.qualified_names(expr, scope, order) == {"os.environ"}


def env_settings(names: ModuleNames, wanted: Collection[str]) -> Iterator[EnvSetting]:
    """Every setting of one of the `wanted` variables that the module makes, by a literal key,
    in the order of the two ways: item assignments first, then calls."""
    for assign in names.subscript_assigns:
        target = assign.target
        element = target.slice[0].slice if len(target.slice) == 1 else None
        key = literals.string(element.value) if isinstance(element, cst.Index) else None
        if key in wanted and _is_environ(names, target.value, assign.scope, assign.order):
            yield EnvSetting(
                key,
                assign.node.value,
                assign.node,
                assign.scope,
                assign.order,
                ancestry=assign.ancestry,
            )
    for site in names.calls:
        call, func = site.node, site.node.func
        pairs: list[tuple[cst.BaseExpression, cst.BaseExpression]] = []
        positional = [arg.value for arg in call.args if arg.keyword is None and not arg.star]
        default_only = False
        if isinstance(func, cst.Attribute) and _is_environ(
            names, func.value, site.scope, site.order
        ):
            if func.attr.value == "setdefault" and len(positional) == 2:
                pairs.append((positional[0], positional[1]))
                default_only = True
            elif func.attr.value == "update":
                for arg in call.args:
                    if arg.keyword is not None:
                        pairs.append((cst.SimpleString(f'"{arg.keyword.value}"'), arg.value))
                    elif isinstance(arg.value, cst.Dict):
                        pairs += [
                            (e.key, e.value)
                            for e in arg.value.elements
                            if isinstance(e, cst.DictElement)
                        ]
        elif (
            names.qualified_names(func, site.scope, site.order) == {"os.putenv"}
            and len(positional) == 2
        ):
            pairs.append((positional[0], positional[1]))
        for key, value in pairs:
            variable = literals.string(key)
            if variable in wanted:
                yield EnvSetting(
                    variable, value, call, site.scope, site.order, default_only, site.ancestry
                )
