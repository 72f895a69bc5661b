"""Command-line flags whose default is off: an absl boolean (`flags.DEFINE_bool("use_tpu",
False, ...)`, TensorFlow's `tf.compat.v1.flags` too) or an argparse option (`default=False`, or
`action="store_true"`), as the module defines them. Read where a setting, or a device, depends
on a flag: by default the program runs as if it were never passed."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, NamedTuple

import libcst as cst

from tfmemlint.rules import literals
from tfmemlint.rules.runtime import argument

if TYPE_CHECKING:
    from tfmemlint.checking.engine import FileContext

# absl's boolean flags, also as TensorFlow passes them on (`tf.compat.v1.flags`).
_ABSL_BOOLEANS = (".flags.DEFINE_bool", ".flags.DEFINE_boolean")
KEYWORD_ONLY = sys.maxsize  # the position of an argument given only by keyword


class OffFlag(NamedTuple):
    """A flag that is off by default: as the command line spells it (`--use_tpu`); its literal
    default where it has one, else the `store_true` action that makes it off."""

    flag: str
    default: cst.BaseExpression | None
    action: cst.BaseExpression | None


def off_by_default(ctx: FileContext, dest: str) -> OffFlag | None:
    """The module's flag read as `FLAGS.dest` or `args.dest`, where it is off by default: an
    absl boolean or an argparse option. None where the module defines it otherwise, on by
    default, with a default it does not spell as a literal, or not at all."""
    names = ctx.names
    for site in names.calls:
        qualified = names.qualified_names(site.node.func, site.scope, site.order) or set()
        if any(name.endswith(_ABSL_BOOLEANS) for name in qualified):
            name = argument(site.node, 0, "name")
            if name is None or literals.string(name) != dest:
                continue
            default = argument(site.node, 1, "default")
            if default is None or literals.boolean(default) is not False:
                return None
            return OffFlag(f"--{dest}", default, None)
        func = site.node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "add_argument":
            options = [literals.string(arg.value) for arg in site.node.args if arg.keyword is None]
            longs = [option for option in options if option and option.startswith("--")]
            spelled = literals.string(argument(site.node, KEYWORD_ONLY, "dest") or cst.Name("_"))
            if (spelled or (longs[0][2:].replace("-", "_") if longs else None)) != dest:
                continue
            return _argparse_off(site.node, longs[0] if longs else dest)
    return None


def _argparse_off(call: cst.Call, flag: str) -> OffFlag | None:
    action = argument(call, KEYWORD_ONLY, "action")
    default = argument(call, KEYWORD_ONLY, "default")
    if default is not None:
        return OffFlag(flag, default, None) if literals.boolean(default) is False else None
    if action is None or literals.string(action) != "store_true":
        return None
    return OffFlag(flag, None, action)
