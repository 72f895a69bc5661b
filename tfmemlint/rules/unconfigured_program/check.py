"""The logic of TFM205 (its page is in `__init__.py`).

From an entry point, the code that runs is followed in the order it runs: the module's
statements (the `if __name__ == "__main__":` block in its place), the functions of the module
and of the project it calls, the project modules it imports (their import-time code), up to the
first call that starts the runtime. Every branch counts as taken: a setting behind `if gpus:`
is configuration, and so is an op behind `if args.train:`.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import libcst as cst

from tfmemlint.fixing import fixes
from tfmemlint.model import Finding, Fix
from tfmemlint.project.names import Binding, CallSite, dotted_name
from tfmemlint.rules import starters
from tfmemlint.rules.backends import KerasBackend, keras_backend
from tfmemlint.rules.entry_points import (
    Handler,
    Served,
    entry_point,
    is_main_guard,
    project_imports,
    served_program,
    star_imports,
    top_index,
    trains,
)
from tfmemlint.rules.family import holds_a_trigger
from tfmemlint.rules.process_settings import FORCE_GROWTH, VISIBLE_DEVICES, process_wide
from tfmemlint.rules.programs import (
    JAX_MODULES,
    KERAS_ONLY_METHODS,
    SERVER_PROCESSES,
    TORCH_MODULES,
    WEB_WORKERS,
)
from tfmemlint.rules.runtime import GROWTH, LIMIT, hides_all_gpus
from tfmemlint.rules.session_sites import ENTRY_POINTS, fixes_only_configure_sessions
from tfmemlint.rules.tensorflow_api import TF1, TF1_COMPAT, TF2_COMPAT
from tfmemlint.rules.unconfigured_program import (
    FAMILY,
    GUEST_PROGRAM,
    KERAS_SESSION,
    THROUGH_PROJECT_WORDS,
    UNCONFIGURED_PROGRAM,
    flags,
    frameworks,
)
from tfmemlint.rules.unconfigured_program.fix import (
    first_tensorflow_or_keras_import,
    fix_place,
    growth_env_fix,
    growth_env_fix_above,
    is_an_import_line,
    is_an_ipython_line,
    tf_config_fix,
)
from tfmemlint.rules.unconfigured_program.flags import FlagGate
from tfmemlint.rules.unconfigured_program.screen import (
    GRAPH_MODE,
    TF1_ONLY_NAMES,
    in_contrib,
)
from tfmemlint.rules.unconfigured_program.walk import (
    GPU_CHOOSERS,
    Start,
    Walk,
    configuration,
    configures_env,
    module_definition,
    on_cpus,
    runs_on_tensorflow,
    sets_gpu_memory,
)

if TYPE_CHECKING:
    from tfmemlint.checking.engine import FileContext

_TPU = frozenset(
    {
        "distribute.cluster_resolver.TPUClusterResolver",
        "tpu.experimental.initialize_tpu_system",
        "config.experimental_connect_to_cluster",
    }
)
_FORKS = ("multiprocessing", "ProcessPoolExecutor", "os.fork")


def check(ctx: FileContext) -> Iterator[Finding]:
    if not _may_be_an_entry(ctx):
        return
    backend = keras_backend(ctx)
    anchor = _tensorflow_import(ctx, backend)
    if anchor is None:
        # No TensorFlow imported in its body, nor Keras on it, nor a library that starts it:
        # it may import TensorFlow inside a function, or start it through a project module.
        local = list(_started_after_a_local_import(ctx, backend))
        yield from local or _started_through_the_project(ctx, backend)
        return
    program = _program(ctx)
    if program is None:
        return
    entry, served = program
    if _tf1_code(ctx):
        # TF1 code: only TF1-era Keras's own session is this family's (TFM212).
        if "keras" in ctx.text and not _configures(ctx) and not _runs_on_a_tpu(ctx):
            yield from _keras_own_session(ctx)
        return
    if _runs_on_a_tpu(ctx):
        return
    if _configures(ctx, served, caught_late=True):
        yield from _started_at_import_before_the_setting(ctx, entry, anchor, backend, served)
        return
    # A module-level setting whose RuntimeError is caught lets the program run on unset up
    # where the runtime started first: the walk, in order, says whether it did.
    caught = _caught_setting(ctx) if _configures(ctx, served) else None
    if _is_keras(anchor) and backend.by_default and _imported_roots(ctx) & _HOSTS:
        return  # Keras beside JAX or PyTorch, its backend left to the shell: likely theirs
    walk, place = _walked(ctx, entry, anchor, backend, served is not None)
    project = ctx.names.project
    for other in walk.contexts[1:]:  # the entry's result holds while what it read does
        if project is not None and other.names.project is not None:
            project.read |= other.names.project.read
    start = walk.first_start
    if start is None or walk.configured or walk.unsure:
        return
    if start.ctx is not ctx and _tf1_code(start.ctx):
        return
    host = _guest_host(ctx, backend)
    where = f"`{start.what}` ({_place(ctx, start)})"
    if host is not None:
        rule = GUEST_PROGRAM
        message = (
            f"TensorFlow takes the GPU memory that {host} needs: this program starts "
            f"TensorFlow's runtime at {where} with every GPU visible to it, and TensorFlow "
            "reserves nearly all of each"
        )
    else:
        rule = UNCONFIGURED_PROGRAM
        message = (
            f"This TF2 program starts the runtime at {where} with GPU memory unconfigured: it "
            "reserves nearly all of every GPU"
        )
    if _is_keras(anchor) and backend.by_default:
        told = (
            "KERAS_BACKEND is set only after Keras is imported"
            if backend.late or backend.late_lines
            else "no KERAS_BACKEND is set"
        )
        message += f" (Keras runs on TensorFlow, its default backend: {told})"
    assert anchor.statement is not None
    if caught is not None:
        # The setting belongs before the start: TFM203 moves it there where it can. The
        # variable changes nothing else: the setting raises, and is caught, as it was.
        row = ctx.lines.location(ctx.span(caught.node)[0]).row
        message += (
            f"; the GPU setting on {ctx.place(row)} comes after that, and the RuntimeError it "
            "raises is caught"
        )
        hides = host is not None and ctx.policy.guest == "hide"
        fix = None
        if ctx.policy.fraction is None and not hides and not _overrides_growth(ctx):
            fix = _growth_variable_first(ctx)
        tail = (
            _VARIABLE_FIRST if fix is not None else ": set GPU memory up before the runtime starts"
        )
        yield ctx.finding(rule, message + tail, anchor.statement, fix)
        return
    if served is not None:
        message += _served_note(ctx, served)
        imported = first_tensorflow_or_keras_import(ctx)
        first = anchor if imported is None or anchor.order < imported.order else imported
        fix, tail = _env_fix(
            ctx,
            walk,
            start,
            first,
            ": TF_FORCE_GPU_ALLOW_GROWTH, set at the module's top before TensorFlow, holds in "
            "every worker and lists no GPU before the server forks",
        )
        yield ctx.finding(rule, message + tail, anchor.statement, fix)
        return
    hide = host is not None and ctx.policy.guest == "hide"
    without_tf_config = _why_growth_needs_the_variable(ctx, anchor, hide)
    if without_tf_config is not None:
        # Where `tf.config` growth would not hold, the allocator's variable still does.
        why, holds = without_tf_config
        fix, tail = _env_fix(
            ctx, walk, start, None, f": TF_FORCE_GPU_ALLOW_GROWTH, set before TensorFlow, {holds}"
        )
        yield ctx.finding(rule, message + why + tail, anchor.statement, fix)
        return
    gated = _behind_a_flag(ctx)
    if gated is not None:
        what, flag_gate = gated
        message += f" by default: {what} runs only with `{flag_gate.flag}`, which is off"
        yield ctx.finding(rule, message, anchor.statement, flag_gate.fix)
        return
    no_loop = _why_no_fix(ctx, place, walk, start)
    if no_loop is None:
        fix = tf_config_fix(ctx, anchor, place, hide)
        if fix is None and not hide and ctx.policy.fraction is None and not _overrides_growth(ctx):
            # The loop's names are taken (`tf` bound elsewhere in the module): the variable,
            # which binds none, does the same.
            fix = _growth_variable_first(ctx)
            message += _VARIABLE_FIRST if fix is not None else ""
        yield ctx.finding(rule, message, anchor.statement, fix)
        return
    why, advice = no_loop
    # Hiding the GPUs from TensorFlow alone has no variable: CUDA_VISIBLE_DEVICES hides them
    # from the host framework too.
    first = None if hide or _overrides_growth(ctx) else _growth_variable_first(ctx)
    if first is not None:
        yield ctx.finding(rule, message + why + _VARIABLE_FIRST, anchor.statement, first)
        return
    yield ctx.finding(rule, message + why + advice, anchor.statement, None)


def _started_through_the_project(ctx: FileContext, backend: KerasBackend) -> Iterator[Finding]:
    """TFM205 (TFM207 beside JAX or PyTorch) for an entry point whose own file never names
    TensorFlow, where the walk meets the start in a project module: reported at the entry's
    import of the module it comes through. The growth variable, set before the first project
    import, holds wherever in the program TensorFlow starts; the loop could not be placed."""
    project = ctx.names.project
    raw = ctx.text.encode("utf-8", "surrogatepass")
    # As the pre-filter's "program" stage lets a file through: by its words, or a notebook,
    # which is always an entry point.
    words = THROUGH_PROJECT_WORDS
    if ctx.layout.separator is None and not holds_a_trigger(raw, words, FAMILY.inert):
        return
    if project is None or not (imported := project_imports(ctx)):
        return
    program = _program(ctx)
    if program is None:
        return
    entry, served = program
    if _configures(ctx, served) or _runs_on_a_tpu(ctx):
        return
    first = imported[0][0]
    # Only what runs before the first project import is "before the import": the variable
    # goes there, ahead of anything that import runs.
    top = top_index(ctx, first) - 1
    walk = Walk(
        ctx, top, top, backend.is_tensorflow, starts_at_import=True, served=served is not None
    )
    walk.run(entry)
    for other in walk.contexts[1:]:  # the entry's result holds while what it read does
        if other.names.project is not None:
            project.read |= other.names.project.read
    start = walk.first_start
    if walk.unsure or (walk.configured and not walk.turned_tf1):
        return
    if start is None or walk.turned_tf1 or _tf1_code(start.ctx):
        # TF1 code from there on: TF1-era Keras's own session is this family's (TFM212).
        yield from _keras_session_through_the_project(ctx, walk, imported)
        return
    if _keras_backend_elsewhere(ctx, walk, start):
        return
    through, path = _import_it_comes_through(ctx, imported, {start.ctx.filename})
    assert through.statement is not None and through.qualified is not None
    where = f"`{start.what}` ({_place(ctx, start)})"
    if path != start.ctx.filename:
        where += f", through `{through.qualified}`"
    host = _guest_host(ctx, backend)
    if host is not None:
        rule = GUEST_PROGRAM
        message = (
            f"TensorFlow takes the GPU memory that {host} needs: this program starts "
            f"TensorFlow's runtime at {where}, with every GPU visible to it, and TensorFlow "
            "reserves nearly all of each"
        )
    else:
        rule = UNCONFIGURED_PROGRAM
        message = (
            f"This program starts TensorFlow's runtime at {where}"
            f"{',' if path != start.ctx.filename else ''} with GPU memory unconfigured: it "
            "reserves nearly all of every GPU"
        )
    if served is not None:
        message += _served_note(ctx, served)
    fix, tail = _env_fix(
        ctx,
        walk,
        start,
        first,
        ": TF_FORCE_GPU_ALLOW_GROWTH, set before the project's modules are imported, holds "
        "wherever the program starts TensorFlow",
    )
    yield ctx.finding(rule, message + tail, through.statement, fix)


def _started_after_a_local_import(ctx: FileContext, backend: KerasBackend) -> Iterator[Finding]:
    """TFM205 (TFM207 beside JAX or PyTorch) for an entry point that imports TensorFlow only
    inside a function (`def main(): import tensorflow as tf`, a Celery task that does), where
    the walk meets the start with nothing set up first: reported at that import. The loop
    would go inside the function; the growth variable, set before the module's first import,
    holds wherever TensorFlow starts."""
    local = _local_tensorflow_import(ctx)
    if local is None or local.statement is None:
        return
    program = _program(ctx)
    if program is None or _tf1_code(ctx) or _spells_tf1(ctx, local):
        return
    entry, served = program
    if _configures(ctx, served) or _runs_on_a_tpu(ctx):
        return
    # No statement of the module body imports TensorFlow: none is "before the import".
    walk = Walk(ctx, -1, -1, backend.is_tensorflow, served=served is not None)
    walk.run(entry)
    project = ctx.names.project
    for other in walk.contexts[1:]:  # the entry's result holds while what it read does
        if project is not None and other.names.project is not None:
            project.read |= other.names.project.read
    start = walk.first_start
    if start is None or walk.configured or walk.unsure:
        return
    if start.ctx is not ctx and _tf1_code(start.ctx):
        return
    host = _guest_host(ctx, backend)
    where = f"`{start.what}` ({_place(ctx, start)})"
    if host is not None:
        rule = GUEST_PROGRAM
        message = (
            f"TensorFlow takes the GPU memory that {host} needs: this program starts "
            f"TensorFlow's runtime at {where}, with every GPU visible to it, and TensorFlow "
            "reserves nearly all of each"
        )
    else:
        rule = UNCONFIGURED_PROGRAM
        message = (
            f"This program imports TensorFlow inside a function and starts its runtime at "
            f"{where} with GPU memory unconfigured: it reserves nearly all of every GPU"
        )
    if served is not None:
        message += _served_note(ctx, served)
    if ctx.policy.fraction is not None:
        tail = ": limit memory with `tf.config` after this import, before the first op"
        yield ctx.finding(rule, message + tail, local.statement, None)
        return
    if _overrides_growth(ctx):
        tail = ": TF_FORCE_GPU_ALLOW_GROWTH=false here overrides memory growth"
        yield ctx.finding(rule, message + tail, local.statement, None)
        return
    fix = _growth_variable_first(ctx)
    tail = _VARIABLE_FIRST if fix is not None else ": set TF_FORCE_GPU_ALLOW_GROWTH=true first"
    yield ctx.finding(rule, message + tail, local.statement, fix)


def _local_tensorflow_import(ctx: FileContext) -> Binding | None:
    """The first import of TensorFlow (or of a part of it) made in a function's body."""
    found = [
        binding
        for scope in ctx.names.scope_of_node.values()
        if scope.kind == "function"
        for bindings in scope.bindings.values()
        for binding in bindings
        if binding.kind == "import"
        and (binding.qualified == TF1 or (binding.qualified or "").startswith(TF1 + "."))
    ]
    return min(found, key=lambda binding: binding.order) if found else None


def _program(
    ctx: FileContext,
) -> tuple[tuple[Handler, ...], Served | None] | None:
    """The functions that run beyond the entry module's body, and the server that imports
    it, if one does (its handlers are the functions); None for a library module."""
    served = served_program(ctx)
    if served is not None:
        return served.handlers, served
    entry = entry_point(ctx)
    return None if entry is None else (entry, None)


def _served_note(ctx: FileContext, served: Served) -> str:
    """What a server makes of the start: a runtime per worker process; and a setting the
    module makes only under its `__main__` guard, which never runs there."""
    workers = SERVER_PROCESSES.get(served.server, WEB_WORKERS)
    note = f"; served by {served.server}, {workers} starts a runtime of its own"
    if _configures(ctx):
        note += ', and the setting under `if __name__ == "__main__":` never runs there'
    return note


def _keras_backend_elsewhere(ctx: FileContext, walk: Walk, start: Start) -> bool:
    """Whether a start through Keras itself may run on another backend than the entry's
    reading of it says: a module the walk read chooses KERAS_BACKEND, or the entry computes
    with JAX or PyTorch and leaves the backend to the shell (as `check` treats it)."""
    site = start.ctx.names.call_site(start.node) if isinstance(start.node, cst.Call) else None
    if site is None:
        return False
    spelled = start.ctx.names.qualified_names(site.node.func, site.scope, site.order) or set()
    if not spelled or not all(name.split(".")[0] == "keras" for name in spelled):
        return False  # tf.keras, or no Keras: TensorFlow whatever the backend
    if any("KERAS_BACKEND" in other.text for other in walk.contexts):
        return True
    return bool(_imported_roots(ctx) & _HOSTS)


def _import_it_comes_through(
    ctx: FileContext, project_imports: list[tuple[Binding, str]], modules: set[str]
) -> tuple[Binding, str]:
    """The entry's project import that the program reaches `modules` through: the import of
    one of them, else the first whose own imports lead to one, else the first that names
    TensorFlow, else the first."""
    project = ctx.names.project
    assert project is not None
    return next(
        (pair for pair in project_imports if pair[1] in modules),
        next((pair for pair in project_imports if project.leads_to(pair[1], modules)), None)
        or next((p for p in project_imports if project.mentions(p[1], FAMILY.modules)), None)
        or project_imports[0],
    )


def _why_growth_needs_the_variable(
    ctx: FileContext, anchor: Binding, hide: bool
) -> tuple[str, str] | None:
    """Why `tf.config` growth would not hold here, and what the variable does instead; None
    where it would."""
    if _is_keras(anchor) and not any(word in ctx.text for word in _KERAS3_WORDS):
        # Keras 2 ran on TensorFlow 1 too, which has no `tf.config.list_physical_devices`.
        return (
            "; this may be Keras 2 on TensorFlow 1, which has no `tf.config` growth",
            "serves both",
        )
    if not hide and _configures_cpus(ctx):
        # TensorFlow passes no memory growth on once any device has a logical configuration
        # (context.py, `_compute_device_options`).
        why = (
            "; its logical-device configuration of the CPU makes TensorFlow drop "
            "`set_memory_growth`"
        )
        return why, "still holds"
    return None


def _configures_cpus(ctx: FileContext) -> bool:
    """Whether the module gives a CPU a logical-device configuration anywhere."""
    names = ctx.names
    return any(
        names.api_of(site.node.func, site.scope, site.order) in LIMIT and on_cpus(ctx, site)
        for site in names.calls
    )


def _env_fix(
    ctx: FileContext, walk: Walk, start: Start, before: Binding | None, holds: str
) -> tuple[Fix | None, str]:
    """TF_FORCE_GPU_ALLOW_GROWTH's fix, set before the import `before` (by default the first
    of TensorFlow or Keras), and what the message says of it (`holds`, where it goes there).
    Where TensorFlow may start before that import, the variable goes before the module's
    first import instead; no fix where it would not be sure to work."""
    if ctx.policy.fraction is not None:
        return None, (
            ": set a session up with your fraction, `set_session(Session(config=...))`, "
            "before the model is built (TF1), or limit memory with `tf.config` (TF2)"
        )
    if _overrides_growth(ctx):
        return None, ": TF_FORCE_GPU_ALLOW_GROWTH=false here overrides memory growth"
    if start.top <= walk.import_top:
        why = "; it starts before this import"
    elif walk.early_start is not None:
        why = f"; `{walk.early_start}`, imported before, may start it"
    else:
        return growth_env_fix(ctx, before), holds
    first = _growth_variable_first(ctx)
    if first is None:
        return None, why + ": set TF_FORCE_GPU_ALLOW_GROWTH=true before that"
    return first, why + _VARIABLE_FIRST


def _behind_a_flag(ctx: FileContext) -> tuple[str, FlagGate] | None:
    """A GPU memory setting of the module's that runs only when a flag off by default is
    passed (what it sets up, as the message names it, and the flag); the first there is."""
    names = ctx.names
    for site in names.calls:
        found = sets_gpu_memory(ctx, site)
        flag_gate = flags.gate(ctx, site) if found is not None else None
        if flag_gate is None:
            continue
        if found in GROWTH:
            return "GPU memory growth", flag_gate
        if found in LIMIT:
            return "the GPU memory limit", flag_gate
        return f"`{found}`", flag_gate
    return None


def _overrides_growth(ctx: FileContext) -> bool:
    """Whether the module sets TF_FORCE_GPU_ALLOW_GROWTH to a no, which overrides growth."""
    return any(
        setting.variable == FORCE_GROWTH and not configures_env(setting.variable, setting.text)
        for setting in process_wide(ctx).env
    )


_VARIABLE_FIRST = (
    ": TF_FORCE_GPU_ALLOW_GROWTH, set before the module's first import, holds wherever "
    "TensorFlow starts, and lists no GPU"
)


def _growth_variable_first(ctx: FileContext) -> Fix | None:
    """TF_FORCE_GPU_ALLOW_GROWTH set before the module body's first import (after an `import
    os` of its own line, where that comes first): before anything the program imports can
    start TensorFlow, choose the GPUs or fork; in a module body that imports nothing, before
    its first statement of code. None where anything else comes before that import but a
    docstring and `from __future__` (it may be code that starts TensorFlow)."""
    imports = ctx.names.module_body_imports()
    for index, statement in enumerate(ctx.module.body):
        simple = isinstance(statement, cst.SimpleStatementLine)
        if simple and all(_docstring_or_future(small) for small in statement.body):
            continue
        if not imports and ctx.layout.separator is None:
            return growth_env_fix_above(ctx, statement)
        if not simple:
            return None
        if _runs_no_python(ctx, statement):
            continue
        if len(statement.body) == 1 and _imports_os(statement.body[0]):
            continue
        if fixes.sets_the_environment(ctx, statement):
            continue
        first = next(
            (b for b in (*imports, *star_imports(ctx, imports)) if top_index(ctx, b) == index),
            None,
        )
        return None if first is None else growth_env_fix(ctx, before=first)
    return None


# A notebook's IPython lines that run no Python of the program's: a shell command, a package
# install, the environment, the plotting backend.
_NO_PYTHON = ("!", "%pip ", "%conda ", "%env ", "%matplotlib ", "%config ")


def _runs_no_python(ctx: FileContext, statement: cst.SimpleStatementLine) -> bool:
    """Whether a statement stands in for a notebook's IPython line that runs no Python."""
    if not is_an_ipython_line(statement):
        return False
    row = ctx.lines.location(ctx.span(statement)[0]).row
    lines = ctx.layout.set_aside.splitlines()
    rows = ctx.layout.set_aside_rows
    said = [line for line, at in zip(lines, rows, strict=False) if at == row]
    return bool(said) and all(line.lstrip().startswith(_NO_PYTHON) for line in said)


def _docstring_or_future(small: cst.BaseSmallStatement) -> bool:
    if isinstance(small, cst.Expr):
        return isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString))
    return (
        isinstance(small, cst.ImportFrom)
        and isinstance(small.module, cst.Name)
        and small.module.value == "__future__"
    )


def _imports_os(small: cst.BaseSmallStatement) -> bool:
    """`import os`, as itself."""
    return (
        isinstance(small, cst.Import)
        and len(small.names) == 1
        and small.names[0].asname is None
        and dotted_name(small.names[0].name) == "os"
    )


# Keras 2's calls that make its session (`get_session()`) and so start the allocator, beside the
# training methods: its models' weights live in that session's variables.
_KERAS_SESSION_STARTS = frozenset(
    {
        "keras.backend.get_session",
        "keras.models.load_model",
        "keras.backend.eval",
        "keras.backend.get_value",
        "keras.backend.set_value",
        "keras.backend.batch_get_value",
    }
)
# How a TF1 program hands Keras a session of its own (the session rules check that session),
# or makes one Keras uses as the default.
_SESSION_METHODS = frozenset(
    {
        "set_session",
        "managed_session",
        "prepare_or_wait_for_session",
        "prepare_session",
        "as_default",
    }
)
_SESSION_WORDS = (b"Session",)


def _keras_own_session(ctx: FileContext) -> Iterator[Finding]:
    """TFM212: TF1-era Keras (Keras 2, or `tf.keras` in graph mode) that builds, loads or
    trains a model, in a program that makes no session of its own nor hands Keras one: Keras
    then makes its own, with no memory option."""
    if _has_a_session(ctx) or not _uses_keras(ctx):
        return
    first = _keras_session_start(ctx)
    anchor = first_tensorflow_or_keras_import(ctx)
    if first is None or anchor is None or anchor.statement is None:
        return
    row = ctx.lines.location(ctx.span(first.node)[0]).row
    where = f"`{ctx.code(first.node.func)}()` ({ctx.place(row)})"
    yield _keras_session_finding(ctx, where, anchor.statement, None)


def _keras_session_through_the_project(
    ctx: FileContext, walk: Walk, project_imports: list[tuple[Binding, str]]
) -> Iterator[Finding]:
    """TFM212 for an entry point whose own file never names TensorFlow, where the program
    runs TF1-era Keras code of a project module (`Detector()` of `frontend.py` building the
    model): reported at the import of that module, when neither the entry, that module, nor
    any module the walk read makes a session or hands Keras one, and what the program runs
    there, or the entry itself, loads or trains a model (where Keras makes its session)."""
    project = ctx.names.project
    assert project is not None
    entered = [
        (other, runs)
        for other, runs in ((ctx.other_module(path), runs) for path, runs in walk.tf1_modules)
        if other is not None and _uses_keras(other)
    ]
    if not entered:
        return
    keras_modules = [other for other, _ in entered]
    if any(_has_a_session(other) for other in (ctx, *keras_modules, *walk.contexts[1:])):
        return
    runs_there = (
        (other, _keras_session_start(other, within=definition))
        for other, runs in entered
        if runs is not None and (definition := module_definition(other, runs)) is not None
    )
    started = next(
        ((other, site) for other, site in runs_there if site is not None),
        None,
    )
    if started is None:
        site = _keras_session_start(ctx, entry=True)
        started = None if site is None else (ctx, site)
    if started is None:
        return
    other, site = started
    row = other.lines.location(other.span(site.node)[0]).row
    place = ctx.place(row) if other is ctx else f"`{project.display(other.filename)}`, line {row}"
    where = f"`{other.code(site.node.func)}()` ({place})"
    keras_paths = {module.filename for module in keras_modules}
    through, path = _import_it_comes_through(ctx, project_imports, keras_paths)
    assert through.statement is not None and through.qualified is not None
    if path not in keras_paths:
        where += f", through `{through.qualified}`"
    yield _keras_session_finding(ctx, where, through.statement, project_imports[0][0])


def _started_at_import_before_the_setting(
    ctx: FileContext,
    entry: tuple[Handler, ...],
    anchor: Binding,
    backend: KerasBackend,
    served: Served | None,
) -> Iterator[Finding]:
    """TFM205 for a program that sets GPU memory up itself, but imports, at its top, a project
    module whose import starts the runtime first (a `tf.constant` default argument): the
    setting then raises RuntimeError. TFM203 sees only one module; this is where the start is
    in another. Reported with no fix: the setting belongs before that import."""
    walk, _ = _walked(ctx, entry, anchor, backend, served is not None)
    project = ctx.names.project
    for other in walk.contexts[1:]:  # the entry's result holds while what it read does
        if project is not None and other.names.project is not None:
            project.read |= other.names.project.read
    start = walk.first_start
    if start is None or walk.configured or walk.unsure or start.ctx is ctx:
        return
    statement = ctx.module.body[start.top] if 0 <= start.top < len(ctx.module.body) else None
    if statement is None or not is_an_import_line(statement) or _tf1_code(start.ctx):
        return
    setting = next((site for site in ctx.names.calls if configuration(ctx, site) is not None), None)
    if setting is None:
        return  # set up by the environment or a framework: a case of its own
    row = ctx.lines.location(ctx.span(setting.node)[0]).row
    message = (
        f"This TF2 program starts the runtime at `{start.what}` ({_place(ctx, start)}), as "
        f"this import runs, before its GPU setting on {ctx.place(row)}: that setting then "
        "raises RuntimeError, and the runtime keeps nearly all of every GPU; set GPU memory "
        "up before this import"
    )
    yield ctx.finding(UNCONFIGURED_PROGRAM, message, statement, None)


def _keras_session_finding(
    ctx: FileContext, where: str, statement: cst.CSTNode, before: Binding | None
) -> Finding:
    """TFM212's finding at `statement`, for Keras's own session made at `where`; fixed with
    the growth variable set before the import `before` (by default, TensorFlow's or Keras's)."""
    message = (
        f"Keras makes its own session at {where}, with no GPU memory option (TF1-era Keras "
        "gives it `allow_soft_placement` alone): it reserves nearly all of every GPU, as "
        "nothing hands Keras a memory-aware session first"
    )
    if ctx.policy.fraction is not None:
        message += (
            "; under the fraction policy, give Keras a session yourself: "
            "`set_session(Session(config=...))` before the model is built"
        )
        return ctx.finding(KERAS_SESSION, message, statement, None)
    if _overrides_growth(ctx):
        message += ": TF_FORCE_GPU_ALLOW_GROWTH=false here overrides memory growth"
        return ctx.finding(KERAS_SESSION, message, statement, None)
    return ctx.finding(KERAS_SESSION, message, statement, growth_env_fix(ctx, before))


def _has_a_session(ctx: FileContext) -> bool:
    """Whether the module makes a session of its own, an Estimator (whose session the session
    rules judge), hands Keras a session, or calls a project helper that may make one."""
    names = ctx.names
    for site in names.calls:
        func = site.node.func
        api = names.api_of(func, site.scope, site.order)
        if api in ENTRY_POINTS or (api or "").startswith("estimator."):
            return True
        if isinstance(func, cst.Attribute) and func.attr.value in _SESSION_METHODS:
            return True
    return names.project is not None and any(_project_session(ctx, site) for site in names.calls)


def _uses_keras(ctx: FileContext) -> bool:
    """Whether the module calls Keras's API (Keras itself or `tf.keras`)."""
    names = ctx.names
    return any(
        (names.api_of(site.node.func, site.scope, site.order) or "").startswith("keras.")
        for site in names.calls
    )


def _keras_session_start(
    ctx: FileContext, entry: bool = False, within: cst.CSTNode | None = None
) -> CallSite | None:
    """The module's first call (in the definition `within`, if given) where Keras makes its
    session: one that reads or writes its variables, a training method, or a model's
    `load_weights`. In an `entry` that never names Keras (its model comes from a project
    module), only a `load_weights` or a method that Keras alone has."""
    names = ctx.names
    first, last = ctx.span(within) if within is not None else (0, sys.maxsize)
    for site in names.calls:
        if not first <= ctx.span(site.node)[0] < last:
            continue
        api = names.api_of(site.node.func, site.scope, site.order)
        if api in _KERAS_SESSION_STARTS or _keras_trains(ctx, site, api):
            return site
        func = site.node.func
        if entry and isinstance(func, cst.Attribute) and func.attr.value in KERAS_ONLY_METHODS:
            return site
    return None


def _project_session(ctx: FileContext, site: CallSite) -> bool:
    """Whether the call goes into a project module that speaks of sessions."""
    project = ctx.names.project
    assert project is not None
    for name in ctx.names.qualified_names(site.node.func, site.scope, site.order) or ():
        path = project.module_of(name.rpartition(".")[0])
        if path is not None and project.mentions(path, _SESSION_WORDS):
            return True
    return False


def _keras_trains(ctx: FileContext, site: CallSite, api: str | None) -> bool:
    """`model.fit(...)` and the other training methods, in a module that uses Keras, or a
    model's `load_weights`."""
    func = site.node.func
    if trains(ctx, func):
        return True
    return isinstance(func, cst.Attribute) and func.attr.value == "load_weights" and api is None


# What only Keras 3 spells (or a Keras 3 library): Keras beside them runs on TF2.
_KERAS3_WORDS = (
    "keras.ops",
    "keras.random",
    "keras.config",
    "keras.src",
    "from keras import ops",
    "from keras import random",
    "KERAS_BACKEND",
    "keras_hub",
    "keras_nlp",
    "keras_cv",
)


def _why_no_fix(ctx: FileContext, place: int, walk: Walk, start: Start) -> tuple[str, str] | None:
    """Why the loop after the import block would not be sure to work, if it would not, and
    what to do instead: (why, advice)."""
    misplaced = _place_problem(ctx, place, walk, start)
    if misplaced is not None:
        return misplaced
    if walk.chooses_gpus:
        return _CHOOSES_GPUS
    if _overrides_growth(ctx):
        return "; TF_FORCE_GPU_ALLOW_GROWTH=false here overrides memory growth", ""
    if any(word in ctx.text for word in _FORKS):
        # Listing the GPUs initializes CUDA, which a process forked after it cannot use.
        return "; it starts processes, which must not inherit CUDA", ": set it up where they start"
    return None


_CHOOSES_GPUS = (
    "; the program chooses its GPUs (CUDA_VISIBLE_DEVICES) after the loop's place",
    ": set it up after that",
)


def _place_problem(
    ctx: FileContext, place: int, walk: Walk, start: Start
) -> tuple[str, str] | None:
    """Why the loop, after statement `place` of the module body, would come too late, if it
    would, and what to do instead."""
    if start.top <= walk.import_top:
        return "; it starts before this import", ", so configure it earlier"
    if start.top <= walk.anchor_top:
        return "; it starts among the imports below this one, before the fix's place after them", ""
    if walk.early_start is not None:
        return f"; `{walk.early_start}`, imported before, may start it", ": configure it earlier"
    if _chooses_gpus_after(ctx, place):
        # The fix lists the GPUs, and CUDA reads these variables once, then: set after it,
        # they would no longer choose the GPUs. Where the fix belongs is the user's call.
        return _CHOOSES_GPUS
    return None


def _walked(
    ctx: FileContext,
    entry: tuple[Handler, ...],
    anchor: Binding,
    backend: KerasBackend,
    served: bool,
) -> tuple[Walk, int]:
    """The walk from the entry point, and where the fix goes: after the import block, or,
    where something in the block would start the runtime first (code among the imports) or
    choose the GPUs, right after the import itself, when that is sure and no import line
    follows it in the block."""
    top = top_index(ctx, anchor)
    place = fix_place(ctx, anchor)
    walk = Walk(ctx, top, place, backend.is_tensorflow, served=served)
    walk.run(entry)
    start = walk.first_start
    if place == top or start is None or _place_problem(ctx, place, walk, start) is None:
        return walk, place
    if any(is_an_import_line(s) for s in ctx.module.body[top + 1 : place + 1]):
        return walk, place  # code above an import would be E402: no fix, rather than that
    closer = Walk(ctx, top, top, backend.is_tensorflow, served=served)
    closer.run(entry)
    near = closer.first_start
    if near is not None and _place_problem(ctx, top, closer, near) is None:
        # The result holds while what either walk read does.
        closer.contexts += [other for other in walk.contexts if other not in closer.contexts]
        return closer, top
    return walk, place


def _chooses_gpus_after(ctx: FileContext, place: int) -> bool:
    """Whether the module may choose the GPUs CUDA shows after the fix's place: every mention
    of the variables that do must be a literal setting in the module body up to there (an
    IPython line, such as `%env`, never is)."""
    if any(word in ctx.layout.set_aside for word in GPU_CHOOSERS):
        return True
    placed_by = ctx.span(ctx.module.body[place])[1]
    early = [
        setting
        for setting in process_wide(ctx).env
        if setting.variable == VISIBLE_DEVICES
        and setting.scope.kind == "module"
        and ctx.span(setting.node)[1] <= placed_by
    ]
    return sum(ctx.text.count(word) for word in GPU_CHOOSERS) > len(early)


def _place(ctx: FileContext, event: Start) -> str:
    row = event.ctx.lines.location(event.ctx.span(event.node)[0]).row
    if event.ctx is ctx:
        return ctx.place(row)
    project = ctx.names.project
    assert project is not None
    return f"`{project.display(event.ctx.filename)}`, line {row}"


# -- what the entry module is --------------------------------------------------------------------
def _tensorflow_import(ctx: FileContext, backend: KerasBackend) -> Binding | None:
    """The first `import tensorflow` made directly in the module body (in a notebook, the first
    cell's that has one), else its first import of a part of TensorFlow; without one, its
    first import of Keras on the TensorFlow backend or of a library that starts TensorFlow
    (`starters.py`): where the fix goes."""
    imports = [b for b in ctx.names.module_body_imports() if b.qualified is not None]
    found = [
        binding
        for binding in imports
        if binding.qualified == TF1 or (binding.qualified or "").startswith(TF1 + ".")
    ]
    plain = [binding for binding in found if binding.qualified in (TF1, TF2_COMPAT)]
    if found:
        return min(plain or found, key=lambda binding: binding.order)
    others = [
        binding
        for binding in imports
        if starters.imports_tensorflow(binding.qualified or "", ctx.text)
        or (_is_keras(binding) and backend.is_tensorflow)
    ]
    return min(others, key=lambda binding: binding.order) if others else None


def _is_keras(binding: Binding) -> bool:
    """An import of Keras itself (`import keras`, `from keras import layers`)."""
    return binding.qualified is not None and binding.qualified.split(".")[0] == "keras"


# TensorFlow APIs that compute with it: where one is used, TensorFlow is no guest.
_COMPUTES = frozenset({"GradientTape", "function", "Module", "Variable", "saved_model.save"})
_COMPUTE_NAMESPACES = ("keras.", "distribute.", "optimizers.", "losses.")
# ...but not Keras's data helpers, which a guest may use for its input.
_DATA_NAMESPACES = ("keras.utils.", "keras.preprocessing.", "keras.datasets.")


_HOSTS = JAX_MODULES | TORCH_MODULES


def _imported_roots(ctx: FileContext) -> set[str]:
    """The top-level packages the module body imports."""
    return {(binding.qualified or "").split(".")[0] for binding in ctx.names.module_body_imports()}


def _guest_host(ctx: FileContext, backend: KerasBackend) -> str | None:
    """ "JAX" or "PyTorch" when the program computes with that framework and uses TensorFlow
    only around it (data, logging, preprocessing): the entry module imports the framework, and
    neither builds, trains nor runs a TensorFlow model (no Keras on TensorFlow, `tf.function`,
    `GradientTape`, variable, optimizer, distribution strategy, nor a library's TF model)."""
    roots = _imported_roots(ctx)
    if backend.name == "jax" and "keras" in roots:
        host = "JAX"
    elif backend.name == "torch" and "keras" in roots:
        host = "PyTorch"
    elif roots & JAX_MODULES:
        host = "JAX"
    elif roots & TORCH_MODULES:
        host = "PyTorch"
    else:
        return None
    if "GradientTape" in ctx.text or "tf.function" in ctx.text:
        return None
    names = ctx.names
    for site in names.calls:
        api = names.api_of(site.node.func, site.scope, site.order)
        computes = api is not None and (
            api in _COMPUTES
            or (api.startswith(_COMPUTE_NAMESPACES) and not api.startswith(_DATA_NAMESPACES))
        )
        if computes and runs_on_tensorflow(ctx, site, api, backend.is_tensorflow):
            return None
        if backend.is_tensorflow and trains(ctx, site.node.func):
            return None
        for qualified in names.qualified_names(site.node.func, site.scope, site.order) or ():
            if starters.builds_a_model(qualified, backend.is_tensorflow):
                return None
    return host


def settled_by_fixes(ctx: FileContext, fixed: Sequence[Finding]) -> bool:
    """Whether this rule finds nothing once `fixed` are: the module calls a session entry
    point, so it is TF1 code, of which the rule says nothing (`_tf1_code`), and fixes that the
    session family proves write only a config into those calls keep every call and the API
    it names."""
    names = ctx.names
    return fixes_only_configure_sessions(ctx, fixed) and any(
        names.api_of(site.node.func, site.scope, site.order) in ENTRY_POINTS for site in names.calls
    )


def _tf1_code(ctx: FileContext) -> bool:
    """Whether the module is TF1 code, which the session rules cover: it makes sessions, turns
    TF2 off, imports from `tensorflow.contrib` (which TF2 dropped), or spells a name that only
    TF1's top level has (on `tensorflow`, or on `tensorflow.compat.v1` as its TensorFlow,
    which without one runs eagerly under TF2).
    (`tf.enable_eager_execution()` is TF1's: the session rules check its config.)"""
    names = ctx.names
    for site in names.calls:
        api = names.api_of(site.node.func, site.scope, site.order)
        if api in ENTRY_POINTS or api in GRAPH_MODE:
            return True
    imports = [
        binding
        for bindings in names.module_scope.bindings.values()
        for binding in bindings
        if binding.kind == "import"
    ]
    plain = [binding for binding in imports if binding.qualified in (TF1, TF2_COMPAT)]
    if any(in_contrib(binding.qualified) for binding in imports):
        return True
    for binding in imports:
        # `import tensorflow.compat.v1 as tf`: TF1's API is the module's TensorFlow (beside a
        # plain `import tensorflow`, as `tf1` or `v1`, it is a migration's other half). Under
        # TF2 it still runs eagerly, unless the module turns TF2 off (above) or builds a
        # graph, with a name only TF1's API has (`tf.placeholder`, `tf.Session`).
        if (
            binding.qualified == TF1_COMPAT
            and (binding.name == "tf" or not plain)
            and _spells_tf1(ctx, binding)
        ):
            return True
    return any(_spells_tf1(ctx, binding) for binding in plain)


def _runs_on_a_tpu(ctx: FileContext) -> bool:
    """Whether the module connects to a TPU in its body, unconditionally: a TPU program, whose
    ops run there and whose GPU memory is no one's concern."""
    names = ctx.names
    for site in names.calls:
        parent = site.ancestry.parent
        at_module_level = parent is not None and isinstance(parent.node, cst.Module)
        if at_module_level and names.api_of(site.node.func, site.scope, site.order) in _TPU:
            return True
    return False


def _spells_tf1(ctx: FileContext, tensorflow: Binding) -> bool:
    for reference in ctx.names.references(tensorflow.name, tensorflow.scope):
        parent = reference.parents.node  # `tf` in `tf.placeholder`: the attribute around it
        if isinstance(parent, cst.Attribute) and parent.attr.value in TF1_ONLY_NAMES:
            return True
    return False


def _configures(ctx: FileContext, served: Served | None = None, caught_late: bool = False) -> bool:
    """Whether the module sets GPU memory up anywhere: wherever the walk would place it, the
    rule has nothing sure to say (TFM203 reports a setting that comes too late). Where a
    server imports the module, anywhere but under its `__main__` guard, which never runs.
    With `caught_late`, a module-level setting whose RuntimeError is caught is left to the
    walk: if the runtime starts before it, the program runs on with nothing set up."""
    names = ctx.names
    guards = [
        ctx.span(statement)
        for statement in ctx.module.body
        if served is not None and is_main_guard(statement)
    ]

    def runs(node: cst.CSTNode) -> bool:
        start, end = ctx.span(node)
        return not any(first <= start and end <= last for first, last in guards)

    if any(
        configures_env(setting.variable, setting.text) and runs(setting.node)
        for setting in process_wide(ctx).env
    ):
        return True
    for site in names.calls:
        if not runs(site.node) or (caught_late and _caught_at_module_level(ctx, site)):
            continue
        if configuration(ctx, site) is not None or (guards and hides_all_gpus(names, site)):
            return True
    return any(
        binding.kind == "import"
        and binding.qualified is not None
        and frameworks.imported(binding.qualified) is not None
        for bindings in names.module_scope.bindings.values()
        for binding in bindings
    )


# What a handler names that catches the RuntimeError of a setting made too late.
_CATCHES_RUNTIME_ERROR = frozenset({"RuntimeError", "Exception", "BaseException"})


def _caught_at_module_level(ctx: FileContext, site: CallSite) -> bool:
    """Whether the call runs in module-level code (a notebook's cell), in the body of a `try`
    whose handler catches RuntimeError (or bare `except:`)."""
    if site.scope is not ctx.names.module_scope:
        return False
    inner: cst.CSTNode | None = None
    for node in site.ancestry:
        if isinstance(node, cst.Try) and inner is node.body:
            return any(
                handler.type is None
                or {dotted_name(t) for t in _handled(handler.type)} & _CATCHES_RUNTIME_ERROR
                for handler in node.handlers
            )
        inner = node
    return False


def _handled(expression: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The exception types an `except` clause names: one, or a tuple of them."""
    if isinstance(expression, cst.Tuple):
        return [element.value for element in expression.elements]
    return [expression]


def _caught_setting(ctx: FileContext) -> CallSite | None:
    """The first module-level setting of GPU memory whose RuntimeError is caught."""
    return next(
        (
            site
            for site in ctx.names.calls
            if _caught_at_module_level(ctx, site) and configuration(ctx, site) is not None
        ),
        None,
    )


def _may_be_an_entry(ctx: FileContext) -> bool:
    """The cheap part of `_entry_point`, first: every checker runs on every file parsed. Its
    words count as the pre-filter's first stage counts them (not in a test module's guard),
    or a module the first stage sets aside could be found here."""
    if ctx.layout.separator is not None:
        return True
    raw = ctx.text.encode("utf-8", "surrogatepass")
    if holds_a_trigger(raw, FAMILY.triggers, FAMILY.inert):
        return True
    project = ctx.names.project
    return project is not None and bool(project.script_functions())
