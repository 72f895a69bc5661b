"""The logic of TFM202, TFM203 and TFM204 (their pages are in `__init__.py`)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from tfmemlint.fixing import fixes
from tfmemlint.model import Finding, Fix
from tfmemlint.project.names import Ancestry, Binding, CallSite, dotted_name, target_names
from tfmemlint.rules import literals, starters
from tfmemlint.rules.branches import exclusive_branches, paths
from tfmemlint.rules.eager import (
    CONFIGURED_AFTER_INITIALIZATION,
    GROWTH_AND_LIMIT,
    GROWTH_ON_SOME_GPUS,
)
from tfmemlint.rules.process_settings import VISIBLE_DEVICES, process_wide
from tfmemlint.rules.runtime import (
    GROWTH,
    LIMIT,
    LIST_GPUS,
    VISIBILITY,
    argument,
    growth_enabled,
    starts_runtime,
)
from tfmemlint.rules.session_sites import fixes_only_configure_sessions

if TYPE_CHECKING:
    from tfmemlint.checking.engine import FileContext

# A device drawn from every physical GPU (`gpus[0]` of `gpus = list_physical_devices("GPU")`).
_ALL_GPUS = "<every GPU>"


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
            configs.append(DeviceCall(site, api, argument(site.node, 0, "device", "devices")))
        elif starts_runtime(api) or _library_start(ctx, site):
            initializers.append((site, api or ""))
    late: list[DeviceCall] = []  # they raise RuntimeError, whatever else they set
    for config in configs:
        found = list(_after_initialization(ctx, config, initializers))
        if found:
            late.append(config)
        yield from found
    for config in configs:
        if (
            config.api in GROWTH
            and growth_enabled(config.site.node)
            and not _restricted(ctx, config, configs)
        ):
            yield from _growth_on_some(ctx, config)
    yield from _growth_and_limit(ctx, [c for c in configs if c not in late])


def _library_start(ctx: FileContext, site: CallSite) -> bool:
    """A direct call into a library that starts TensorFlow's runtime (`tfds.load(...)`,
    `hub.load(...)`; see `starters.py`). Keras's own libraries count only where the rule knows
    Keras runs on TensorFlow, which it does not ask here: they are left out."""
    qualified = ctx.names.qualified_names(site.node.func, site.scope, site.order) or set()
    return any(starters.started_by(name, keras_on_tensorflow=False) for name in qualified)


def _restricted(ctx: FileContext, growth: DeviceCall, configs: list[DeviceCall]) -> bool:
    """Whether the GPUs visible may be chosen where growth is set on some of them: by
    `set_visible_devices` or CUDA_VISIBLE_DEVICES, anywhere but in another branch of an `if`
    or `try` than the growth call's (only one of the two runs)."""
    place = growth.site.ancestry
    if any(c.api in VISIBILITY and not exclusive_branches(c.site.ancestry, place) for c in configs):
        return True
    return any(
        s.variable == VISIBLE_DEVICES
        and (s.ancestry is None or not exclusive_branches(s.ancestry, place))
        for s in process_wide(ctx).env
    )


def settled_by_fixes(ctx: FileContext, fixed: Sequence[Finding]) -> bool:
    """Whether this family finds nothing once `fixed` are: where the session family proves
    that they only write the growth config into session calls, the calls they add
    (ConfigProto, GPUOptions) neither set devices up nor start the runtime, every other call
    names the API it did, in the same order and blocks, and the environment is as it was: it
    finds in the fixed text what it found here, which was nothing, since every finding here
    was fixed (one it suppressed stays suppressed: its line moves with the comment on it)."""
    return fixes_only_configure_sessions(ctx, fixed)


def _short(api: str) -> str:
    return api.rpartition(".")[2]


def _loop_around_both(a: Ancestry, b: Ancestry) -> cst.For | cst.While | None:
    """The innermost loop of one function whose body holds both places."""
    path_a, _, common = paths(a, b)
    for depth in range(common - 1, -1, -1):
        node = path_a[depth]
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return None
        in_body = depth + 1 < common and path_a[depth + 1] is getattr(node, "body", None)
        if isinstance(node, (cst.For, cst.While)) and in_body:  # not its `else:`
            return node
    return None


def _breaks(loop: cst.For | cst.While) -> bool:
    """Whether the loop's own body may `break` out of it (a retry loop: no next pass)."""
    found = False

    class Breaks(cst.CSTVisitor):
        def visit_Break(self, node: cst.Break) -> None:
            nonlocal found
            found = True

        def visit_For(self, node: cst.For) -> bool:
            return False  # its `break` leaves that loop

        def visit_While(self, node: cst.While) -> bool:
            return False

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

    loop.body.visit(Breaks())
    return found


def _after_initialization(
    ctx: FileContext, config: DeviceCall, initializers: list[tuple[CallSite, str]]
) -> Iterator[Finding]:
    site = config.site
    for earlier, api in initializers:
        if earlier.scope is not site.scope or exclusive_branches(earlier.ancestry, site.ancestry):
            continue
        if earlier.order < site.order:
            row = ctx.lines.location(ctx.span(earlier.node)[0]).row
            message = (
                f"`{_short(config.api)}` comes after `{dotted_name(earlier.node.func) or api}()` "
                f"on {ctx.place(row)} initialized the runtime: TensorFlow raises RuntimeError"
            )
            fix = _move_up(ctx, site, earlier)
            yield ctx.finding(CONFIGURED_AFTER_INITIALIZATION, message, site.node, fix)
            return
    for later, api in initializers:
        if later.scope is not site.scope or later.order < site.order:
            continue
        if exclusive_branches(later.ancestry, site.ancestry):
            continue
        loop = _loop_around_both(later.ancestry, site.ancestry)
        if loop is not None and not _breaks(loop):
            row = ctx.lines.location(ctx.span(later.node)[0]).row
            message = (
                f"`{dotted_name(later.node.func) or api}()` on {ctx.place(row)}, in the same "
                f"loop, starts the runtime after the first pass: the next `{_short(config.api)}` "
                "raises RuntimeError"
            )
            yield ctx.finding(CONFIGURED_AFTER_INITIALIZATION, message, site.node, None)
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
    separator = ctx.layout.separator
    if separator and separator in ctx.text[ctx.span(init_statement)[0] : ctx.span(target)[1]]:
        return None  # never from one notebook cell into another
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
    return isinstance(value, cst.Call) and _lists_every_gpu(ctx, binding, value)


def _lists_every_gpu(ctx: FileContext, where: CallSite | Binding, call: cst.Call) -> bool:
    """`tf.config.list_physical_devices("GPU")`, in either namespace."""
    if ctx.names.api_of(call.func, where.scope, where.order) not in LIST_GPUS:
        return False
    device_type = argument(call, 0, "device_type")
    return device_type is not None and literals.string(device_type) == "GPU"


def _growth_on_some(ctx: FileContext, config: DeviceCall) -> Iterator[Finding]:
    device = config.device
    key = _devices(ctx, config)
    if key is None or key[0] != _ALL_GPUS or key[1] == "*":
        return
    if not (isinstance(device, cst.Subscript) and isinstance(device.value, cst.Name)):
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


def _devices(ctx: FileContext, call: DeviceCall) -> tuple[str, str] | None:
    """(the list a device is drawn from, which of it): `gpus[0]` is ("gpus", "gpus[0]"); a loop
    variable over `gpus`, or `gpus[i]` with `i` running over all of it (`range(len(gpus))`,
    `enumerate(gpus)`), is ("gpus", "*"); anything else ("", its text). A list of every
    physical GPU is _ALL_GPUS, whatever its name."""
    device, site = call.device, call.site
    if device is None:
        return None
    if isinstance(device, cst.Subscript):
        index = device.slice[0].slice if len(device.slice) == 1 else None
        value = index.value if isinstance(index, cst.Index) else None
        every = False
        if isinstance(value, cst.Name):
            loop = _loop_binding(ctx, site, value.value)
            every = (
                loop is not None
                and loop[0] == "index"
                and ctx.code(loop[1]) == ctx.code(device.value)
            )
        return _list_key(ctx, site, device.value), "*" if every else ctx.code(device)
    if isinstance(device, cst.Name):
        loop = _loop_binding(ctx, site, device.value)
        if loop is not None and loop[0] == "element":
            return _list_key(ctx, site, loop[1]), "*"
    return "", ctx.code(device)


def _list_key(ctx: FileContext, site: CallSite, expr: cst.BaseExpression) -> str:
    if isinstance(expr, cst.Name) and _gpu_list(ctx, site, expr):
        return _ALL_GPUS
    if isinstance(expr, cst.Call) and _lists_every_gpu(ctx, site, expr):
        return _ALL_GPUS
    return ctx.code(expr)


def _loop_binding(
    ctx: FileContext, site: CallSite, name: str
) -> tuple[str, cst.BaseExpression] | None:
    """What a `for` around the call, or a comprehension in its statement, binds `name` to:
    ("element", X) in `for name in X` or `for i, name in enumerate(X)`; ("index", X) in
    `for name in range(len(X))` or `for name, _ in enumerate(X)`."""
    loops: list[tuple[cst.BaseExpression, cst.BaseExpression]] = [
        (node.target, node.iter) for node in site.ancestry if isinstance(node, cst.For)
    ]

    class Comprehensions(cst.CSTVisitor):
        def visit_CompFor(self, node: cst.CompFor) -> None:
            loops.append((node.target, node.iter))

    site.ancestry.node.visit(Comprehensions())
    for target, iterated in loops:
        if isinstance(target, cst.Name) and target.value == name:
            counted = _call_of(iterated, "range")
            if counted is not None and len(counted.args) == 1:
                length = _call_of(counted.args[0].value, "len")
                if length is not None and len(length.args) == 1:
                    return "index", length.args[0].value
            return "element", iterated
        numbered = _call_of(iterated, "enumerate")
        if isinstance(target, cst.Tuple) and numbered is not None and numbered.args:
            parts = [element.value for element in target.elements]
            if len(parts) == 2 and all(isinstance(part, cst.Name) for part in parts):
                first, second = parts
                assert isinstance(first, cst.Name) and isinstance(second, cst.Name)
                if first.value == name:
                    return "index", numbered.args[0].value
                if second.value == name:
                    return "element", numbered.args[0].value
    return None


def _call_of(expr: cst.BaseExpression, builtin: str) -> cst.Call | None:
    """`expr` when it calls the builtin `builtin` by its name."""
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name):
        return expr if expr.func.value == builtin else None
    return None


def _same_gpu(a: tuple[str, str], b: tuple[str, str]) -> bool:
    """Equal devices, or a loop over a list and any device of that list."""
    return a == b or (a[0] == b[0] != "" and "*" in (a[1], b[1]))


def _growth_and_limit(ctx: FileContext, configs: list[DeviceCall]) -> Iterator[Finding]:
    # Each call's device once: `_devices` walks the loop around it.
    growths = [
        (c, _devices(ctx, c)) for c in configs if c.api in GROWTH and growth_enabled(c.site.node)
    ]
    limits = [(c, _devices(ctx, c)) for c in configs if c.api in LIMIT]
    for growth, a in growths:
        for limit, b in limits:
            if a is None or b is None or not _same_gpu(a, b):
                continue
            if exclusive_branches(growth.site.ancestry, limit.site.ancestry):
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
