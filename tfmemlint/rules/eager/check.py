"""The logic of TFM202, TFM203, TFM204 and TFM205 (their pages are in `__init__.py`)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from tfmemlint import fixes
from tfmemlint.engine import FileContext
from tfmemlint.model import Finding, Fix
from tfmemlint.names import TF1, Binding, CallSite, dotted_name, target_names
from tfmemlint.rules import literals
from tfmemlint.rules.eager import (
    CONFIGURED_AFTER_INITIALIZATION,
    GROWTH_AND_LIMIT,
    GROWTH_ON_SOME_GPUS,
    UNCONFIGURED_ENTRY_SCRIPT,
)
from tfmemlint.rules.process_wide.check import VISIBLE_DEVICES, process_wide

GROWTH = frozenset({"config.experimental.set_memory_growth"})
LIMIT = frozenset(
    {
        "config.set_logical_device_configuration",
        "config.experimental.set_logical_device_configuration",
        "config.experimental.set_virtual_device_configuration",
    }
)
VISIBILITY = frozenset({"config.set_visible_devices", "config.experimental.set_visible_devices"})
LIST_GPUS = frozenset({"config.list_physical_devices", "config.experimental.list_physical_devices"})

# Calls that start the runtime. A curated list: a false alarm here would be worse than a miss.
_INITIALIZERS = frozenset(
    {
        "constant",
        "zeros",
        "ones",
        "zeros_like",
        "ones_like",
        "fill",
        "eye",
        "range",
        "linspace",
        "Variable",
        "convert_to_tensor",
        "identity",
        "matmul",
        "add",
        "subtract",
        "multiply",
        "divide",
        "reduce_sum",
        "reduce_mean",
        "reduce_max",
        "cast",
        "reshape",
        "concat",
        "stack",
        "one_hot",
        "config.list_logical_devices",
        "config.experimental.list_logical_devices",
        "config.experimental.get_memory_info",
        "config.experimental.get_memory_usage",
        "test.is_gpu_available",
        "test.gpu_device_name",
        "keras.Sequential",
        "keras.Model",
        "keras.Input",
        "keras.models.Sequential",
        "keras.models.Model",
        "keras.models.load_model",
        "keras.layers.Input",
        "python.client.device_lib.list_local_devices",
        "random.normal",
        "random.uniform",
        "random.truncated_normal",
        "random.shuffle",
    }
)
_INITIALIZER_NAMESPACES = ("math.", "linalg.", "nn.", "image.", "keras.applications.")

# Names TF1's top level has and TF2's has not (TF2 moved them under compat.v1, or dropped them):
# code that spells `tf.placeholder` is TF1 code, where ops reserve nothing until a session,
# and where `tf.config.list_physical_devices` of TFM205's fix does not exist before TF 2.1.
# A curated few of the 350: tests/test_eager.py checks each against the installed TensorFlow.
TF1_ONLY_NAMES = frozenset(
    {
        "contrib",
        "Session",
        "InteractiveSession",
        "ConfigProto",
        "GPUOptions",
        "placeholder",
        "placeholder_with_default",
        "get_variable",
        "variable_scope",
        "global_variables_initializer",
        "local_variables_initializer",
        "get_default_graph",
        "reset_default_graph",
        "set_random_seed",
        "app",
        "flags",
        "gfile",
        "logging",
        "layers",
        "python_io",
        "GraphKeys",
        "get_collection",
        "add_to_collection",
        "trainable_variables",
        "global_variables",
        "truncated_normal",
        "random_normal",
        "random_uniform",
        "to_float",
        "to_int32",
        "log",
        "disable_v2_behavior",
        "enable_eager_execution",
    }
)


def _initializes(api: str | None) -> bool:
    return api is not None and (api in _INITIALIZERS or api.startswith(_INITIALIZER_NAMESPACES))


@dataclass(frozen=True)
class DeviceCall:
    site: CallSite
    api: str
    device: cst.BaseExpression | None


def check(ctx: FileContext) -> Iterator[Finding]:
    names = ctx.names
    configs: list[DeviceCall] = []
    initializers: list[tuple[CallSite, str]] = []
    for site in names.calls:
        api = names.api_of(site.node.func, site.scope, site.order)
        if api in GROWTH or api in LIMIT or api in VISIBILITY:
            configs.append(DeviceCall(site, api, _argument(site.node, 0, "device", "devices")))
        elif _initializes(api):
            initializers.append((site, api or ""))
    for config in configs:
        yield from _after_initialization(ctx, config, initializers)
    restricted = any(c.api in VISIBILITY for c in configs) or any(
        s.variable == VISIBLE_DEVICES for s in process_wide(ctx).env
    )
    for config in configs:
        if config.api in GROWTH and _growth_enabled(config) and not restricted:
            yield from _growth_on_some(ctx, config)
    yield from _growth_and_limit(ctx, configs)
    if not configs and not process_wide(ctx).limits and not _creates_sessions(ctx):
        yield from _unconfigured_script(ctx)


def _creates_sessions(ctx: FileContext) -> bool:
    from tfmemlint.rules.session_config.check import ENTRY_POINTS

    names = ctx.names
    return any(names.api_of(s.node.func, s.scope, s.order) in ENTRY_POINTS for s in names.calls)


def _is_main_guard(statement: cst.CSTNode) -> bool:
    if not isinstance(statement, cst.If) or not isinstance(statement.test, cst.Comparison):
        return False
    test = statement.test
    sides = [test.left, *(c.comparator for c in test.comparisons)]
    return any(isinstance(s, cst.Name) and s.value == "__name__" for s in sides) and any(
        literals.string(s) == "__main__" for s in sides
    )


def _unconfigured_script(ctx: FileContext) -> Iterator[Finding]:
    """TFM205: an entry-point script that imports TF2 and sets nothing about GPU memory."""
    if not any(_is_main_guard(statement) for statement in ctx.module.body):
        return
    imports = [b for b in ctx.names.top_level_imports() if b.qualified == TF1]
    if not imports:
        return
    anchor = imports[0]
    alias = anchor.name
    if _spells_tf1(ctx, anchor):
        return
    variable = next((v for v in ("gpu", "_gpu") if v not in ctx.names.all_names), None)
    fix = None
    if variable is not None:
        unit = ctx.module.default_indent
        row = ctx.lines.location(ctx.span(anchor.statement)[0]).row if anchor.statement else 1
        newline = ctx.lines.newline_of(row)
        block = newline.join(
            [
                f'for {variable} in {alias}.config.list_physical_devices("GPU"):',
                f"{unit}try:",
                f"{unit}{unit}{alias}.config.experimental.set_memory_growth({variable}, True)",
                f"{unit}except RuntimeError:",
                f"{unit}{unit}pass  # the runtime already started",
            ]
        )
        edit = fixes.insert_line_after(ctx, anchor, block)
        if edit is not None:
            fix = Fix("Turn on memory growth on every GPU right after the import", (edit,))
    message = (
        "This TF2 script never configures GPU memory: its first op reserves nearly all of every GPU"
    )
    if anchor.statement is not None:
        yield ctx.finding(UNCONFIGURED_ENTRY_SCRIPT, message, anchor.statement, fix)


def _spells_tf1(ctx: FileContext, tensorflow: Binding) -> bool:
    """Whether the module names, through its `import tensorflow`, something only TF1 has."""
    for reference in ctx.names.references(tensorflow.name, tensorflow.scope):
        parent = reference.parents.node  # `tf` in `tf.placeholder`: the attribute around it
        if isinstance(parent, cst.Attribute) and parent.attr.value in TF1_ONLY_NAMES:
            return True
    return False


def _argument(call: cst.Call, position: int, *keywords: str) -> cst.BaseExpression | None:
    positional = [a for a in call.args if a.keyword is None and not a.star]
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value in keywords:
            return arg.value
    return positional[position].value if len(positional) > position else None


def _short(api: str) -> str:
    return api.rpartition(".")[2]


def _after_initialization(
    ctx: FileContext, config: DeviceCall, initializers: list[tuple[CallSite, str]]
) -> Iterator[Finding]:
    site = config.site
    for earlier, api in initializers:
        if earlier.scope is site.scope and earlier.order < site.order:
            row = ctx.lines.location(ctx.span(earlier.node)[0]).row
            message = (
                f"`{_short(config.api)}` comes after `{dotted_name(earlier.node.func) or api}()` "
                f"on {ctx.place(row)} initialized the runtime: TensorFlow raises RuntimeError"
            )
            fix = _move_up(ctx, site, earlier)
            yield ctx.finding(CONFIGURED_AFTER_INITIALIZATION, message, site.node, fix)
            return


def _statement_in(block: cst.CSTNode, site: CallSite) -> cst.CSTNode | None:
    """The statement of `block` that holds the call."""
    previous = None
    for node in site.ancestry:
        if node is block:
            return previous
        previous = node
    return None


def _names_used(node: cst.CSTNode) -> tuple[set[str], set[str]]:
    """(names read, names bound) inside a statement."""
    used: set[str] = set()
    bound: set[str] = set()

    class Collector(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            used.add(name.value)

        def visit_Attribute(self, attribute: cst.Attribute) -> bool:
            attribute.value.visit(self)  # `x.y` reads x, never y
            return False

        def visit_Arg(self, arg: cst.Arg) -> bool:
            arg.value.visit(self)  # a keyword is no name
            return False

        def visit_For(self, loop: cst.For) -> None:
            bound.update(n.value for n in target_names(loop.target))

        def visit_AssignTarget(self, target: cst.AssignTarget) -> None:
            bound.update(n.value for n in target_names(target.target))

    node.visit(Collector())
    return used - bound, bound


def _move_up(ctx: FileContext, config: CallSite, initializer: CallSite) -> Fix | None:
    """Move the statement holding the configuration (with the `gpus = list_physical_devices`
    line it reads, if that sits between them) to just before the statement that initializes
    the runtime. Only when both statements share a block, stand on lines of their own, and
    everything the moved lines read is bound before the new place."""
    names = ctx.names
    block = next(
        (
            n
            for n in config.ancestry
            if isinstance(n, (cst.IndentedBlock, cst.Module))
            and any(m is n for m in initializer.ancestry)
        ),
        None,
    )
    if block is None:
        return None
    target, init_statement = _statement_in(block, config), _statement_in(block, initializer)
    body = list(block.body)
    if target is None or init_statement is None or target is init_statement:
        return None
    moved = [target]
    used, _ = _names_used(target)
    first_init = ctx.span(init_statement)[0]
    for name in sorted(used):
        found = names.lookup(name, config.scope, config.order)
        if found is None:
            continue  # a builtin, or not bound in this module: nothing to move for it
        _, bindings = found
        late = [
            b
            for b in bindings
            if b.statement is not None and ctx.span(b.statement)[0] >= first_init
        ]
        if not late:
            continue
        binding = late[0]
        line = next((n for n in body if any(n is a for a in (binding.ancestry or ()))), None)
        if len(late) > 1 or binding.kind != "assign" or not isinstance(binding.value, cst.Call):
            return None
        if names.api_of(binding.value.func, binding.scope, binding.order) not in LIST_GPUS:
            return None
        # The moved `gpus = ...` line may read only modules imported above its new place.
        imported_before = {
            b.name
            for b in names.top_level_imports()
            if b.statement is not None and ctx.span(b.statement)[0] < first_init
        }
        if line is None or _names_used(line)[0] - imported_before:
            return None
        moved.insert(0, line)
    pieces = []
    edits = []
    for statement in moved:
        lines = _full_lines(ctx, statement)
        if lines is None:
            return None
        start, end = lines
        pieces.append(ctx.text[start:end])
        edits.append(ctx.edit(start, end, ""))
    init_lines = _full_lines(ctx, init_statement)
    if init_lines is None:
        return None
    text = "".join(pieces)
    if not text.endswith(("\n", "\r")):
        return None
    edits.append(ctx.edit(init_lines[0], init_lines[0], text))
    return Fix("Move the GPU configuration before the runtime starts", tuple(edits))


def _full_lines(ctx: FileContext, statement: cst.CSTNode) -> tuple[int, int] | None:
    """The offsets of the whole lines a statement covers, when it has them to itself."""
    start, end = ctx.span(statement)
    first, last = ctx.lines.location(start), ctx.lines.location(end)
    if ctx.lines.line(first.row)[: first.column - 1].strip():
        return None
    line_start = ctx.lines.starts[first.row - 1]
    line_end = ctx.lines.line_end(last.row)
    if ctx.text[end:line_end].strip() and not ctx.text[end:line_end].lstrip().startswith("#"):
        return None
    return line_start, line_end


def _gpu_list(ctx: FileContext, site: CallSite, name: cst.Name) -> bool:
    """Whether `name` holds every physical GPU: `name = tf.config.list_physical_devices("GPU")`."""
    found = ctx.names.lookup(name.value, site.scope, site.order)
    if found is None or len(found[1]) != 1 or found[1][0].kind != "assign":
        return False
    binding = found[1][0]
    value = binding.value
    if not isinstance(value, cst.Call):
        return False
    if ctx.names.api_of(value.func, binding.scope, binding.order) not in LIST_GPUS:
        return False
    device_type = _argument(value, 0, "device_type")
    return device_type is not None and literals.string(device_type) == "GPU"


def _growth_on_some(ctx: FileContext, config: DeviceCall) -> Iterator[Finding]:
    device = config.device
    if not (
        isinstance(device, cst.Subscript)
        and isinstance(device.value, cst.Name)
        and _gpu_list(ctx, config.site, device.value)
    ):
        return
    gpus = device.value.value
    message = (
        f"Memory growth is set on `{ctx.code(device)}` only: on a machine with more GPUs, "
        "TensorFlow raises `ValueError: Memory growth cannot differ between GPU devices`"
    )
    yield ctx.finding(GROWTH_ON_SOME_GPUS, message, config.site.node, _loop_fix(ctx, config, gpus))


def _loop_fix(ctx: FileContext, config: DeviceCall, gpus: str) -> Fix | None:
    """`set_memory_growth(gpus[0], True)` -> `for gpu in gpus: set_memory_growth(gpu, True)`."""
    site = config.site
    statement = site.ancestry.node
    expression = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) else None
    if not isinstance(expression, cst.Expr) or expression.value is not site.node:
        return None
    placed = fixes.own_lines(ctx, expression, site.ancestry)
    variable = next((v for v in ("gpu", "_gpu") if v not in ctx.names.all_names), None)
    if placed is None or variable is None or config.device is None:
        return None
    indent, first_row, last_row = placed
    start, end = ctx.lines.starts[first_row - 1], ctx.lines.line_end(last_row)
    device_start, device_end = ctx.span(config.device)
    call = ctx.text[start + len(indent) : device_start] + variable + ctx.text[device_end:end]
    newline = ctx.lines.newline_of(first_row)
    unit = ctx.module.default_indent
    loop = f"{indent}for {variable} in {gpus}:{newline}{indent}{unit}{call}"
    return Fix(
        f"Set growth on every GPU: `for {variable} in {gpus}: ...`", (ctx.edit(start, end, loop),)
    )


def _device_key(ctx: FileContext, call: DeviceCall) -> tuple[str, str] | None:
    """(the list it is drawn from, the device's text): `gpus[0]` is ("gpus", "gpus[0]"), a loop
    variable over `gpus` is ("gpus", "*"), anything else ("", its text)."""
    device = call.device
    if device is None:
        return None
    if isinstance(device, cst.Subscript):
        return ctx.code(device.value), ctx.code(device)
    if isinstance(device, cst.Name):
        for node in call.site.ancestry:
            if (
                isinstance(node, cst.For)
                and isinstance(node.target, cst.Name)
                and node.target.value == device.value
            ):
                return ctx.code(node.iter), "*"
    return "", ctx.code(device)


def _same_gpu(a: tuple[str, str], b: tuple[str, str]) -> bool:
    """Equal devices, or a loop over a list and any device of that list."""
    return a == b or (a[0] == b[0] != "" and "*" in (a[1], b[1]))


def _growth_and_limit(ctx: FileContext, configs: list[DeviceCall]) -> Iterator[Finding]:
    growths = [c for c in configs if c.api in GROWTH and _growth_enabled(c)]
    limits = [c for c in configs if c.api in LIMIT]
    for growth in growths:
        for limit in limits:
            a, b = _device_key(ctx, growth), _device_key(ctx, limit)
            if a is None or b is None:
                continue
            if not _same_gpu(a, b):
                continue
            later, earlier = (
                (growth, limit) if growth.site.order > limit.site.order else (limit, growth)
            )
            row = ctx.lines.location(ctx.span(earlier.site.node)[0]).row
            if later is growth:
                message = (
                    f"Memory growth on a GPU that has a memory limit ({ctx.place(row)}): "
                    "TensorFlow raises ValueError"
                )
            else:
                message = (
                    f"A memory limit on a GPU with memory growth ({ctx.place(row)}): the growth is "
                    "silently dropped"
                )
            yield ctx.finding(GROWTH_AND_LIMIT, message, later.site.node, None)


def _growth_enabled(call: DeviceCall) -> bool:
    enable = _argument(call.site.node, 1, "enable")
    return enable is not None and literals.boolean(enable) is True
