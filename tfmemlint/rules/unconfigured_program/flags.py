"""GPU memory settings that run only when a command-line flag is passed: `if FLAGS.allow_growth:`
around the growth loop, where the flag's default is off. By default such a program reserves every
GPU, so the setting counts as missing. Flags are read as absl, argparse, click and typer define
them; a default of on, or one the module does not spell as a literal, counts as configured."""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING, NamedTuple

import libcst as cst

from tfmemlint.model import Edit, Fix
from tfmemlint.project.names import CallSite, dotted_name
from tfmemlint.rules import command_line, literals
from tfmemlint.rules.runtime import argument

if TYPE_CHECKING:
    from tfmemlint.checking.engine import FileContext

_CLICK_OPTIONS = frozenset({"click.option"})


class FlagGate(NamedTuple):
    """A setting behind a flag that is off by default: the flag as the command line spells it,
    and the fix that turns its default on (None where that is not provably its sole use)."""

    flag: str
    fix: Fix | None


def gate(ctx: FileContext, site: CallSite) -> FlagGate | None:
    """The off-by-default flag whose `if` the call runs under, if there is one."""
    for node in site.ancestry:
        if not isinstance(node, cst.If) or not _within(ctx, site.node, node.body):
            continue
        test = node.test
        if isinstance(test, cst.Attribute) and isinstance(test.value, cst.Name):
            found = _defined_off(ctx, test.attr.value)
        elif isinstance(test, cst.Name):
            found = _parameter_off(ctx, site, test.value)
        else:
            continue
        if found is not None:
            return found
    return None


def _within(ctx: FileContext, inner: cst.CSTNode, outer: cst.CSTNode) -> bool:
    start, end = ctx.span(inner)
    first, last = ctx.span(outer)
    return first <= start and end <= last


def _defined_off(ctx: FileContext, dest: str) -> FlagGate | None:
    """`FLAGS.dest` or `args.dest`: an absl boolean or an argparse option of the module's, off
    by default."""
    off = command_line.off_by_default(ctx, dest)
    if off is None:
        return None
    if off.default is not None:
        return FlagGate(off.flag, _turn_on(ctx, dest, off.default))
    assert off.action is not None
    end = ctx.span(off.action)[1]
    return FlagGate(off.flag, _fix(ctx, dest, ctx.edit(end, end, ", default=True")))


def _parameter_off(ctx: FileContext, site: CallSite, name: str) -> FlagGate | None:
    """A parameter of the enclosing click or typer command, off by default: `allow_growth:
    bool = False` (typer), or `@click.option("--allow-growth", is_flag=True)`."""
    function = next((n for n in site.ancestry if isinstance(n, cst.FunctionDef)), None)
    if function is None:
        return None
    for decorator in function.decorators:
        call = decorator.decorator
        if not isinstance(call, cst.Call):
            continue
        spelled = ctx.names.qualified_names(call.func, ctx.names.module_scope, sys.maxsize)
        if not (spelled or set()) & _CLICK_OPTIONS:
            continue
        options = [literals.string(arg.value) for arg in call.args if arg.keyword is None]
        longs = [option for option in options if option and option.startswith("--")]
        if not longs or longs[0][2:].replace("-", "_") != name:
            continue
        flag = argument(call, command_line.KEYWORD_ONLY, "is_flag")
        default = argument(call, command_line.KEYWORD_ONLY, "default")
        if flag is None or literals.boolean(flag) is not True:
            return None
        if default is not None and literals.boolean(default) is not False:
            return None
        fix = None if default is None else _turn_on(ctx, name, default, parameter=True)
        return FlagGate(longs[0], fix)
    for param in (*function.params.params, *function.params.kwonly_params):
        if param.name.value != name or param.default is None:
            continue
        default = param.default
        if isinstance(default, cst.Call) and dotted_name(default.func) in ("typer.Option",):
            default = argument(default, 0, "default") or default
        if literals.boolean(default) is not False:
            return None
        # No fix: a parameter's default is the function's, whoever else calls it.
        return FlagGate(f"--{name.replace('_', '-')}", None)
    return None


def _turn_on(
    ctx: FileContext, dest: str, default: cst.BaseExpression, parameter: bool = False
) -> Fix | None:
    start, end = ctx.span(default)
    return _fix(ctx, dest, ctx.edit(start, end, "True"), parameter)


def _fix(ctx: FileContext, dest: str, edit: Edit, parameter: bool = False) -> Fix | None:
    """The default turned on, where the flag has no other use in the module: read once, as an
    attribute (`.allow_growth`, the setting's `if`), or for a command's `parameter` as a name
    where it is defined and there; and named as a string at most where it is defined."""
    word = re.escape(dest)
    if parameter:
        read = len(re.findall(rf"(?<![\w.\"'-]){word}(?![\w\"'-])", ctx.text)) - 1
    else:
        read = len(re.findall(rf"\.{word}(?!\w)", ctx.text))
    named = len(re.findall(rf"[\"']{word}[\"']", ctx.text))
    if read != 1 or named > 1:
        return None
    return Fix(f"Turn `{dest}` on by default", (edit,))
