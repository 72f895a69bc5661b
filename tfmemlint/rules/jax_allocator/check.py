"""The logic of TFM208-TFM211 (their pages are in `__init__.py`)."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import libcst as cst

from tfmemlint.fixing import fixes
from tfmemlint.model import Finding, Fix
from tfmemlint.project.module_summary import imported_names
from tfmemlint.project.names import Binding, CallSite
from tfmemlint.rules import literals, starters
from tfmemlint.rules.backends import KerasBackend, keras_backend
from tfmemlint.rules.branches import exclusive_branches
from tfmemlint.rules.entry_points import entry_point, project_imports
from tfmemlint.rules.environment import EnvSetting, env_lines, env_settings
from tfmemlint.rules.jax_allocator import (
    CONFIGURED_AFTER_START,
    INVALID_SETTING,
    PREALLOCATION,
    SHARED_GPU_PREALLOCATION,
)
from tfmemlint.rules.programs import JAX_MODULES, JAX_WORDS, KERAS_IMPORTERS, TORCH_MODULES
from tfmemlint.rules.runtime import hides_all_gpus
from tfmemlint.rules.variables import (
    JAX_ALLOCATOR,
    JAX_CLIENT_MEM_FRACTION,
    JAX_FRACTIONS,
    JAX_MEM_FRACTION,
    JAX_PREALLOCATE,
    JAX_VARIABLES,
    jax_value_problem,
)

if TYPE_CHECKING:
    from tfmemlint.checking.engine import FileContext

# What keeps JAX off the GPU: a platform list without one, or no GPU visible at all.
# (`JAX_PLATFORM_NAME` only picks the default backend: JAX still starts CUDA's.)
_PLATFORM_VARIABLES = ("JAX_PLATFORMS", "CUDA_VISIBLE_DEVICES")
_PLATFORM_OPTIONS = frozenset({"jax_platforms"})
# Calls that start JAX's backend, by qualified name: arrays, random keys, device queries;
# `jax.numpy`'s dtype helpers start nothing.
_STARTING_NAMESPACES = ("jax.numpy.", "jax.random.")
_STARTING_NOTHING = frozenset(
    {
        "jax.numpy.dtype",
        "jax.numpy.issubdtype",
        "jax.numpy.finfo",
        "jax.numpy.iinfo",
        "jax.numpy.result_type",
        "jax.numpy.promote_types",
        "jax.numpy.can_cast",
    }
)
_STARTING_CALLS = frozenset(
    {
        "jax.devices",
        "jax.local_devices",
        "jax.device_count",
        "jax.local_device_count",
        "jax.device_put",
        "jax.default_backend",
    }
)
_SETTING_WORDS = (b"XLA_PYTHON_CLIENT", b"XLA_CLIENT_MEM_FRACTION")
# A project module on the way to JAX that names one of these may set its allocator, or keep it
# off the GPU, before it starts.
_KEEPING_WORDS = (*_SETTING_WORDS, b"JAX_PLATFORM", b"jax_platform", b"CUDA_VISIBLE_DEVICES")


def check(ctx: FileContext) -> Iterator[Finding]:
    settings = tuple(env_settings(ctx.names, JAX_VARIABLES)) if "XLA_" in ctx.text else ()
    yield from _invalid_values(ctx, settings)
    yield from _set_after_start(ctx, settings)
    yield from _preallocation(ctx, settings)


# -- TFM210: values ------------------------------------------------------------------------------
def _invalid_values(ctx: FileContext, settings: Sequence[EnvSetting]) -> Iterator[Finding]:
    for setting in settings:
        text = setting.text
        if text is None or (not text and setting.variable != JAX_ALLOCATOR):
            continue  # computed, or empty, which jaxlib takes for unset (but for the allocator)
        message, fix = _value_problem(ctx, setting, text)
        if message is not None:
            yield ctx.finding(INVALID_SETTING, message, setting.value, fix)
    both = [s for s in settings if s.variable in JAX_FRACTIONS and s.text != ""]
    for setting in both:
        if setting.variable == JAX_MEM_FRACTION and any(
            other.variable == JAX_CLIENT_MEM_FRACTION
            and other.scope is setting.scope
            and not _apart(setting, other)
            for other in both
        ):
            message = (
                f"{JAX_MEM_FRACTION} is set together with {JAX_CLIENT_MEM_FRACTION}: jaxlib raises "
                "ValueError when its GPU backend starts; keep one of them"
            )
            yield ctx.finding(INVALID_SETTING, message, setting.node, None)


def _apart(one: EnvSetting, other: EnvSetting) -> bool:
    """Whether two settings sit in branches of which at most one runs."""
    if one.ancestry is None or other.ancestry is None:
        return False
    return exclusive_branches(one.ancestry, other.ancestry)


def _value_problem(
    ctx: FileContext, setting: EnvSetting, text: str
) -> tuple[str | None, Fix | None]:
    problem = jax_value_problem(setting.variable, text)
    if problem is None:
        return None, None
    message, wanted = problem
    fix = None
    if wanted is not None and isinstance(setting.value, cst.SimpleString):
        quoted = literals.spelled_like(setting.value, wanted)
        fix = Fix(f'Set it to "{wanted}"', (fixes.replace(ctx, setting.value, quoted),))
    return message, fix


# -- TFM211: too late ----------------------------------------------------------------------------
def _set_after_start(ctx: FileContext, settings: Sequence[EnvSetting]) -> Iterator[Finding]:
    module = ctx.names.module_scope
    late = [s for s in settings if s.scope is module]
    # a notebook's `%env` lines, in the cells after the start
    lines = list(env_lines(ctx.layout, JAX_VARIABLES))
    if not late and not lines:
        return
    start = _first_start(ctx)
    if start is None:
        return
    row = ctx.lines.location(ctx.span(start.node)[0]).row

    def message(variable: str) -> str:
        return (
            f"{variable} is set after `{ctx.code(start.node.func)}(...)` ({ctx.place(row)}) "
            "started JAX's backend, which read its allocator's settings once, there: this one "
            "has no effect"
        )

    for setting in late:
        if setting.order > start.order:
            yield ctx.finding(CONFIGURED_AFTER_START, message(setting.variable), setting.node, None)
    for line in lines:
        if line.row > row:
            where = ctx.indented_start(line.row)
            yield ctx.finding_at(CONFIGURED_AFTER_START, message(line.variable), where)


def _first_start(ctx: FileContext) -> CallSite | None:
    """The module body's first call that starts JAX's backend."""
    names = ctx.names
    starts = [
        site
        for site in names.calls
        if site.scope is names.module_scope
        and any(
            qualified in _STARTING_CALLS
            or (qualified.startswith(_STARTING_NAMESPACES) and qualified not in _STARTING_NOTHING)
            for qualified in names.qualified_names(site.node.func, site.scope, site.order) or ()
        )
    ]
    return min(starts, key=lambda site: site.order, default=None)


# -- TFM208, TFM209: preallocation ---------------------------------------------------------------
def _preallocation(ctx: FileContext, settings: Sequence[EnvSetting]) -> Iterator[Finding]:
    backend = keras_backend(ctx)
    anchor = _jax_import(ctx, backend)
    if anchor is None:
        yield from _preallocation_through_the_project(ctx, settings, backend)
        return
    if anchor.ancestry is None or entry_point(ctx) is None:
        return
    if not _calls_jax(ctx, backend) or _configured(ctx, settings, anchor):
        return
    if _off_the_gpu(ctx):
        return
    shares = _shares_the_gpu(ctx, backend)
    rule = PREALLOCATION if shares is None else SHARED_GPU_PREALLOCATION
    imported = ctx.code(anchor.ancestry.node).strip()
    message = (
        f"JAX reserves 75% of every GPU when its backend starts, and nothing sets its "
        f"allocator before `{imported}`"
    )
    if shares is not None:
        message += f": {shares}"
    yield ctx.finding(rule, message, anchor.ancestry.node, _fix(ctx, anchor))


def _jax_import(ctx: FileContext, backend: KerasBackend) -> Binding | None:
    """The module body's first import of JAX, or of Keras where Keras runs on JAX."""
    for binding in ctx.names.module_body_imports():
        root = (binding.qualified or "").split(".")[0]
        if root in JAX_MODULES or (root in KERAS_IMPORTERS and backend.name == "jax"):
            return binding
    return None


def _calls_jax(ctx: FileContext, backend: KerasBackend) -> bool:
    """Whether the module calls into JAX (or into Keras on it) anywhere."""
    roots = JAX_MODULES | (KERAS_IMPORTERS if backend.name == "jax" else frozenset())
    names = ctx.names
    for site in names.calls:
        for qualified in names.qualified_names(site.node.func, site.scope, site.order) or ():
            if qualified.split(".")[0] in roots:
                return True
    return False


def _configured(ctx: FileContext, settings: Sequence[EnvSetting], anchor: Binding) -> bool:
    """A setting anywhere in the module (TFM210 and TFM211 judge it), a notebook's `%env`
    line, the configuration, or a project module imported before JAX that sets one."""
    if settings or not ctx.policy.jax_preallocate:
        return True
    if any(env_lines(ctx.layout, JAX_VARIABLES)):
        return True
    project = ctx.names.project
    if project is None:
        return False
    for binding in ctx.names.module_body_imports():
        if binding.order >= anchor.order:
            break
        path = project.module_of(binding.qualified or "")
        if path is not None and project.mentions(path, _SETTING_WORDS):
            return True
    return False


def _off_the_gpu(ctx: FileContext) -> bool:
    """JAX kept to the CPU or a TPU, or no GPU visible: anywhere in the module, as a branch
    that keeps it off may be the one that runs."""
    for setting in env_settings(ctx.names, _PLATFORM_VARIABLES):
        if _keeps_off(setting.variable, setting.text):
            return True
    for variable, value, _ in env_lines(ctx.layout, _PLATFORM_VARIABLES):
        if _keeps_off(variable, value):
            return True
    names = ctx.names
    for site in names.calls:
        if names.qualified_names(site.node.func, site.scope, site.order) != {"jax.config.update"}:
            continue
        args = [arg.value for arg in site.node.args if arg.keyword is None and not arg.star]
        option = literals.string(args[0]) if len(args) == 2 else None
        if option in _PLATFORM_OPTIONS and _keeps_off("JAX_PLATFORMS", literals.string(args[1])):
            return True
    return False


def _keeps_off(variable: str, value: str | None) -> bool:
    if value is None:
        return False
    if variable == "CUDA_VISIBLE_DEVICES":
        return value.strip() in ("", "-1")
    platforms = [name.strip() for name in value.lower().split(",") if name.strip()]
    return bool(platforms) and all(name in ("cpu", "tpu") for name in platforms)


def _shares_the_gpu(ctx: FileContext, backend: KerasBackend) -> str | None:
    """Why the GPU JAX takes is shared within the program, if it is. TensorFlow with every GPU
    hidden from it (TFM207's fix, JAX's advice) shares none."""
    names = ctx.names
    tensorflow_hidden = any(hides_all_gpus(names, site) for site in names.calls)
    roots = set()
    for binding in ctx.names.module_body_imports():
        qualified = binding.qualified or ""
        root = qualified.split(".")[0]
        roots.add(root)
        keras_on_tensorflow = (
            root in KERAS_IMPORTERS and backend.is_tensorflow and not backend.by_default
        )
        if not tensorflow_hidden and (
            root == "tensorflow"
            or starters.imports_tensorflow(qualified, ctx.text)
            or keras_on_tensorflow
        ):
            return "the same program starts TensorFlow, which reserves nearly all of what is left"
    through = None if tensorflow_hidden else _tensorflow_through_the_project(ctx)
    if through is not None:
        return (
            f"the same program imports TensorFlow through `{through}`, which reserves nearly "
            "all of what is left once it starts"
        )
    if backend.name == "jax" and roots & KERAS_IMPORTERS:
        return f"Keras runs on JAX here ({backend.how})"
    if roots & TORCH_MODULES and "cuda" in ctx.text:
        return "the same program runs PyTorch on the GPU, which then runs out of memory"
    return None


def _preallocation_through_the_project(
    ctx: FileContext, settings: Sequence[EnvSetting], backend: KerasBackend
) -> Iterator[Finding]:
    """TFM208 where the entry reaches JAX only through a project module that imports it and
    calls into it (`datasets.py` asks `jax.device_count()`), in a program that shares the GPU.
    Reported at the entry's import of the project module it comes through, and fixed before
    it. A setting of JAX's allocator or platform anywhere on the way counts as one: that module
    may set it before JAX starts."""
    project = ctx.names.project
    if project is None or settings or any(env_lines(ctx.layout, JAX_VARIABLES)):
        return
    if not ctx.policy.jax_preallocate or entry_point(ctx) is None or _off_the_gpu(ctx):
        return
    through: tuple[Binding, str] | None = None
    for binding, path in project_imports(ctx):
        for module in project.program_modules(path):
            if project.mentions(module, _KEEPING_WORDS):
                return
            if (
                through is None
                and project.mentions(module, JAX_WORDS)
                and project.tree_answer(module, _calls_into_jax)
            ):
                through = binding, module
    if through is None:
        return
    binding, module = through
    ancestry = binding.ancestry
    shares = _shares_the_gpu(ctx, backend)
    if ancestry is None or shares is None:
        return
    imported = ctx.code(ancestry.node).strip()
    message = (
        "JAX reserves 75% of every GPU when its backend starts, and nothing sets its allocator "
        f"before `{imported}`, through which the program reaches JAX "
        f"(`{project.display(module)}`): {shares}"
    )
    yield ctx.finding(SHARED_GPU_PREALLOCATION, message, ancestry.node, _fix(ctx, binding))


def _calls_into_jax(tree: ast.Module) -> bool:
    """Whether a project module imports JAX and calls into it (in any function: which of
    them runs is not followed)."""
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for name, qualified in imported_names(node):
                if qualified.split(".")[0] in JAX_MODULES:
                    bound.add(name)
    if not bound:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            while isinstance(func, ast.Attribute):
                func = func.value
            if isinstance(func, ast.Name) and func.id in bound:
                return True
    return False


def _tensorflow_through_the_project(ctx: FileContext) -> str | None:
    """The first project module the module body imports that imports TensorFlow itself, or a
    library that starts it (a dataset pipeline in `dataset.py`), as a path from the root."""
    project = ctx.names.project
    if project is None:
        return None
    for _, path in project_imports(ctx):
        if not project.mentions(path, (b"tensorflow",)):
            continue
        if project.tree_answer(path, _imports_tensorflow):
            return project.display(path)
    return None


def _imports_tensorflow(tree: ast.Module) -> bool:
    """Whether a module's body imports TensorFlow or a library that starts it (not in a
    function, which may never run; not `tensorflow_probability`'s JAX substrate)."""
    for node in tree.body:
        branches = [*node.body, *node.orelse] if isinstance(node, (ast.Try, ast.If)) else []
        if branches and _imports_tensorflow(ast.Module(branches, [])):
            return True
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        for _, qualified in imported_names(node):
            root = qualified.split(".")[0]
            if root == "tensorflow" or starters.imports_tensorflow(qualified, ""):
                return True
    return False


def _fix(ctx: FileContext, anchor: Binding) -> Fix | None:
    assert anchor.ancestry is not None
    if ctx.policy.fraction is None:
        variable, value = JAX_PREALLOCATE, "false"
    else:
        variable, value = JAX_MEM_FRACTION, repr(ctx.policy.fraction)
    edit = fixes.set_env_before(ctx, anchor, variable, value)
    return None if edit is None else Fix(f"Set {variable}={value} before JAX starts", (edit,))


def settled_by_fixes(ctx: FileContext, fixed: Sequence[Finding]) -> bool:
    """Whether this family finds in the fixed text what it found here. What it finds rests on
    the module's JAX imports and calls, its allocator, platform and Keras settings, whether it
    imports TensorFlow, and whether it hides every GPU from it. Its own fixes set a variable
    before the first import of JAX (the program then counts as configured, and no start comes
    before it) or make a value one JAX reads as meant. The other families' fixes add memory
    options, growth loops, and `import tensorflow` only where a TensorFlow import was there
    already (TFM205 and TFM207 anchor on one, or on a library or Keras on TensorFlow, each of
    which counts here as starting it); but TFM207's hiding of the GPUs turns TFM208's reason
    away: then look again."""
    return all(finding.code != "TFM207" for finding in fixed)
