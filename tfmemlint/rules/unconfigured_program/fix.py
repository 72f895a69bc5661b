"""TFM205's fixes: where they go (after the import block that holds the TensorFlow import, so
that no import follows the fix's code, E402) and what they write: memory growth on every GPU, the
GPUs hidden from a guest TensorFlow, or TF_FORCE_GPU_ALLOW_GROWTH set before the first import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from tfmemlint.fixing import fixes
from tfmemlint.model import Fix
from tfmemlint.project.names import Binding, dotted_name
from tfmemlint.rules.entry_points import is_main_guard, top_index
from tfmemlint.rules.process_settings import FORCE_GROWTH
from tfmemlint.rules.tensorflow_api import TF1, TF1_COMPAT, TF2_COMPAT

if TYPE_CHECKING:
    from tfmemlint.checking.engine import FileContext


def growth_env_fix(ctx: FileContext, before: Binding | None = None) -> Fix | None:
    """`os.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")` before the module body's
    first import of TensorFlow or Keras (or the import `before`): TensorFlow's GPU allocator
    reads it, in TF1 and TF2 alike, when it starts."""
    first = before if before is not None else first_tensorflow_or_keras_import(ctx)
    edit = None if first is None else fixes.set_env_before(ctx, first, FORCE_GROWTH, "true")
    if edit is None:
        return None
    return Fix(f"Set {FORCE_GROWTH}=true before TensorFlow is imported", (edit,))


def growth_env_fix_above(ctx: FileContext, statement: cst.CSTNode) -> Fix | None:
    """`import os` and TF_FORCE_GPU_ALLOW_GROWTH set just above `statement`, in a module
    whose body imports nothing (its imports are all inside functions): the first thing it runs.
    None where the module binds `os` itself."""
    if ctx.names.module_scope.bindings.get("os") or ctx.names.module_body_imports():
        return None
    # Two blank lines before a definition, one before other code, as black writes them.
    after = "\n\n" if isinstance(statement, (cst.FunctionDef, cst.ClassDef)) else "\n"
    lines = f'import os\n\nos.environ.setdefault("{FORCE_GROWTH}", "true"){after}'
    edit = fixes.insert_before_statement(ctx, statement, lines)
    return Fix(f"Set {FORCE_GROWTH}=true before TensorFlow is imported", (edit,))


def first_tensorflow_or_keras_import(ctx: FileContext) -> Binding | None:
    """The module body's first import of TensorFlow or Keras: where TF_FORCE_GPU_ALLOW_GROWTH
    must be set before."""
    return next(
        (
            binding
            for binding in ctx.names.module_body_imports()
            if (binding.qualified or "").split(".")[0] in ("tensorflow", "keras")
        ),
        None,
    )


# -- the fix -------------------------------------------------------------------------------------
def fix_place(ctx: FileContext, anchor: Binding) -> int:
    """Which statement of the module body the fix goes after: the last import of the import
    block that holds the TensorFlow import, so that no import follows the fix's code (E402).
    The block runs on through what either ruff or pycodestyle lets stand among imports (an
    import after it is E402 for neither, so code put before it would be new to one): `if`,
    `try` and `with` statements, dunder assignments, `os.environ`, `sys.path`,
    `matplotlib.use` and the like; in a notebook, IPython lines, and it ends with the cell."""
    body = ctx.module.body
    top = top_index(ctx, anchor)
    holders = _import_holders(ctx)
    place = top
    for index in range(top + 1, len(body)):
        statement = body[index]
        if not _among_imports(statement) or _new_cell(ctx, body[index - 1], statement):
            break
        if index in holders or is_an_import_line(statement):
            place = index
    return place


def _import_holders(ctx: FileContext) -> set[int]:
    """The statements of the module body (by index) that make an import that binds a name in
    the module's scope: imports, and `if`, `try` or `with` statements around them."""
    index_of = {id(statement): index for index, statement in enumerate(ctx.module.body)}
    holders = set()
    for bindings in ctx.names.module_scope.bindings.values():
        for binding in bindings:
            if binding.kind == "import" and binding.ancestry is not None:
                holders.update(
                    index_of[id(node)] for node in binding.ancestry if id(node) in index_of
                )
    return holders


# Calls that ruff lets stand among imports (its E402 exemptions), by their spelling.
_AMONG_IMPORTS = ("os.environ", "sys.path", "site.addsitedir", "matplotlib.use")

_MAGIC = "# tfmemlint: IPython magic"  # the comment on the stand-in of a notebook's `%` line


def _among_imports(statement: cst.CSTNode) -> bool:
    """What ruff or pycodestyle lets stand among imports without making the imports after it
    E402: pycodestyle looks only at lines at the left margin and lets `if`, `try` and `with`
    headers (and so their blocks) and dunder assignments pass; ruff also lets `os.environ`,
    `sys.path` and `matplotlib.use` changes and compound statements pass."""
    if isinstance(statement, (cst.If, cst.Try, cst.TryStar, cst.With)):
        return not is_main_guard(statement)
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    if is_an_ipython_line(statement):
        return True  # a notebook's IPython line, which neither linter counts as code
    return all(_small_among_imports(small) for small in statement.body)


def is_an_ipython_line(statement: cst.SimpleStatementLine) -> bool:
    """Whether the statement stands in for a notebook's IPython line (`%env`, `!pip`)."""
    comment = statement.trailing_whitespace.comment
    return comment is not None and comment.value == _MAGIC


def _small_among_imports(small: cst.BaseSmallStatement) -> bool:
    if isinstance(small, (cst.Import, cst.ImportFrom)):
        return True
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        target = small.targets[0].target
        if isinstance(target, cst.Name):
            return target.value.startswith("__") and target.value.endswith("__")
        return isinstance(target, cst.Subscript) and dotted_name(target.value) == "os.environ"
    if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
        spelled = dotted_name(small.value.func) or ""
        return spelled.startswith(_AMONG_IMPORTS)
    return False


def is_an_import_line(statement: cst.CSTNode) -> bool:
    """A line of imports at the module's top level: the statements E402 looks at."""
    return isinstance(statement, cst.SimpleStatementLine) and any(
        isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body
    )


def _new_cell(ctx: FileContext, before: cst.CSTNode, statement: cst.CSTNode) -> bool:
    """Whether a notebook cell ends between two statements of the module body."""
    separator = ctx.layout.separator
    if separator is None:
        return False
    return separator in ctx.text[ctx.span(before)[1] - 1 : ctx.span(statement)[0] + 1]


def tf_config_fix(ctx: FileContext, anchor: Binding, place: int, hide: bool) -> Fix | None:
    """After the import block: the GPUs hidden from TensorFlow (`hide`, for a guest), or
    memory growth on every GPU. Where the module has no `import tensorflow` of its own, one
    comes inside the `try`, where isort and E402 leave it be."""
    if not hide and ctx.policy.fraction is not None:
        return None  # TF2 has no fraction to set: the message's user decides the limit
    alias = anchor.name
    # `compat.v1` running eagerly has TF2's `config` too (`check._tf1_code`: it is TF2 here).
    add_import = anchor.qualified not in (TF1, TF2_COMPAT, TF1_COMPAT)
    if add_import:
        if "tf" in ctx.names.all_names:
            return None
        alias = "tf"
    variable = next((v for v in ("gpu", "_gpu") if v not in ctx.names.all_names), None)
    if variable is None:
        return None
    unit = ctx.module.default_indent
    listing = f'for {variable} in {alias}.config.list_physical_devices("GPU"):'
    growth = f"{alias}.config.experimental.set_memory_growth({variable}, True)"
    handler = ["except RuntimeError:", f"{unit}pass  # the runtime already started"]
    if add_import:
        # The program may run without TensorFlow (Keras on another backend, a library that
        # needs it only for some of its work): the import it never made must not fail it.
        handler = [
            "except (ImportError, RuntimeError):",
            f"{unit}pass  # no TensorFlow here, or its runtime already started",
        ]
    if hide:
        body = [f'{unit}{alias}.config.set_visible_devices([], "GPU")']
    elif add_import:
        body = [f"{unit}{listing}", f"{unit}{unit}{growth}"]
    else:
        body = []
    if add_import:
        body = [f"{unit}import tensorflow as tf", "", *body]
    if body:
        lines = ["try:", *body, *handler]
    else:
        lines = [listing, f"{unit}try:", f"{unit}{unit}{growth}"] + [
            f"{unit}{line}" for line in handler
        ]
    edit = fixes.insert_after_statement(ctx, ctx.module.body[place], "\n".join(lines))
    if hide:
        return Fix("Hide the GPUs from TensorFlow right after the imports", (edit,))
    return Fix("Turn on memory growth on every GPU right after the imports", (edit,))
