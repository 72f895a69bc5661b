"""The logic of TFM205 (its page is in `__init__.py`).

From an entry point, the code that runs is followed in the order it runs: the module's
statements (the `if __name__ == "__main__":` block in its place), the functions of the module
and of the project it calls, the project modules it imports (their import-time code), up to the
first call that starts the runtime. Every branch counts as taken: a setting behind `if gpus:`
is configuration, and so is an op behind `if args.train:`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from tfmemlint import fixes
from tfmemlint.model import Finding, Fix
from tfmemlint.module_summary import member
from tfmemlint.names import TF1, TF1_COMPAT, TF2_COMPAT, Binding, CallSite, dotted_name
from tfmemlint.project import FileResolver
from tfmemlint.rules import literals, starters
from tfmemlint.rules.backends import KERAS_IMPORTERS, KerasBackend, keras_backend
from tfmemlint.rules.entry_points import entry_point, is_main_guard, runner, trains
from tfmemlint.rules.family import (
    DEVICE_CONFIGURATION_WORDS,
    FORCE_GROWTH_WORD,
    holds_a_trigger,
)
from tfmemlint.rules.process_settings import FORCE_GROWTH, VISIBLE_DEVICES, process_wide
from tfmemlint.rules.programs import JAX_MODULES, TORCH_MODULES
from tfmemlint.rules.runtime import (
    GROWTH,
    LIMIT,
    LIST_GPUS,
    argument,
    hides_all_gpus,
    starts_runtime,
)
from tfmemlint.rules.session_config.check import ENTRY_POINTS
from tfmemlint.rules.session_config.check import settled_by_fixes as session_config_settled
from tfmemlint.rules.unconfigured_program import (
    FAMILY,
    GUEST_PROGRAM,
    KERAS_SESSION,
    UNCONFIGURED_PROGRAM,
    frameworks,
)
from tfmemlint.rules.unconfigured_program.screen import (
    GRAPH_MODE,
    TF1_ONLY_NAMES,
    calls_tensorflow_at_import,
    in_contrib,
    tf1_code,
    tf1_definition,
)

if TYPE_CHECKING:
    from tfmemlint.engine import FileContext

# How many statements the walk follows, over every function and module it enters: a bound on
# its cost in a large program. Past it, what was not reached counts as not there.
MAX_STATEMENTS = 2000
MAX_CALL_DEPTH = 32

_TPU = frozenset(
    {
        "distribute.cluster_resolver.TPUClusterResolver",
        "tpu.experimental.initialize_tpu_system",
        "config.experimental_connect_to_cluster",
    }
)
_GPU_CHOOSERS = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER")
# A module that holds none of these sets no GPU memory up.
_CONFIGURATION_WORDS = (*DEVICE_CONFIGURATION_WORDS, FORCE_GROWTH_WORD)
# What a module that sets GPU memory up or chooses the GPUs at import time holds (the
# frameworks' names: `import merlin.models.tf` in a project module configures too).
_IMPORT_TIME_WORDS = (
    *_CONFIGURATION_WORDS,
    *(word.encode() for word in _GPU_CHOOSERS),
    *{framework.name.split(".")[0].encode() for framework in frameworks.IMPORTS},
)
_TENSORFLOW_WORDS = (b"tensorflow", b"keras")
MAX_MODULES = 200  # project modules one walk may visit (it parses only a few of them)
# How deep the walk looks through modules that cannot configure for ones that do: a setting
# at import time sits in a module the program imports, or one that module imports.
IMPORT_LEVELS = 3
_FORKS = ("multiprocessing", "ProcessPoolExecutor", "os.fork")
_BRANCHES = (cst.Else, cst.Finally, cst.ExceptHandler, cst.ExceptStarHandler, cst.MatchCase)


@dataclass(frozen=True)
class Start:
    """The call that starts the runtime, where the walk met it first."""

    ctx: FileContext
    node: cst.CSTNode
    what: str
    top: int  # which statement of the entry module's body was running


def check(ctx: FileContext) -> Iterator[Finding]:
    if not _may_be_an_entry(ctx):
        return
    backend = keras_backend(ctx)
    anchor = _tensorflow_import(ctx, backend)
    if anchor is None:
        return  # no TensorFlow of its own, nor Keras on it, nor a library that starts it
    entry = entry_point(ctx)
    if entry is None:
        return
    if _tf1_code(ctx):
        # TF1 code: only TF1-era Keras's own session is this family's (TFM212).
        if "keras" in ctx.text and not _configures(ctx) and not _runs_on_a_tpu(ctx):
            yield from _keras_own_session(ctx)
        return
    if _configures(ctx) or _runs_on_a_tpu(ctx):
        return
    if _is_keras(anchor) and backend.by_default and _imported_roots(ctx) & _HOSTS:
        return  # Keras beside JAX or PyTorch, its backend left to the shell: likely theirs
    walk, place = _walked(ctx, entry, anchor, backend)
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
    hide = host is not None and ctx.policy.guest == "hide"
    without_tf_config = _why_growth_needs_the_variable(ctx, anchor, hide)
    if without_tf_config is not None:
        # Where `tf.config` growth would not hold, the allocator's variable still does.
        why, holds = without_tf_config
        why_not = _why_no_env_fix(ctx, walk, start)
        fix = _growth_env_fix(ctx) if why_not is None else None
        message += why + (why_not or f": TF_FORCE_GPU_ALLOW_GROWTH, set before TensorFlow, {holds}")
        yield ctx.finding(rule, message, anchor.statement, fix)
        return
    why_not = _why_no_fix(ctx, place, walk, start)
    fix = _fix(ctx, anchor, place, hide) if why_not is None else None
    yield ctx.finding(rule, message + (why_not or ""), anchor.statement, fix)


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
        names.api_of(site.node.func, site.scope, site.order) in LIMIT and _on_cpus(ctx, site)
        for site in names.calls
    )


def _why_no_env_fix(ctx: FileContext, walk: _Walk, start: Start) -> str | None:
    """Why TF_FORCE_GPU_ALLOW_GROWTH, set before the first import of TensorFlow or Keras, would
    not be sure to work, if it would not."""
    if ctx.policy.fraction is not None:
        return (
            ": set a session up with your fraction, `set_session(Session(config=...))`, "
            "before the model is built (TF1), or limit memory with `tf.config` (TF2)"
        )
    if start.top <= walk.import_top:
        return ": it starts before this import; set TF_FORCE_GPU_ALLOW_GROWTH=true before it"
    if walk.early_start is not None:
        return (
            f": `{walk.early_start}`, imported before, may start it; set "
            "TF_FORCE_GPU_ALLOW_GROWTH=true before that"
        )
    if any(
        setting.variable == FORCE_GROWTH and not _configures_env(setting.variable, setting.text)
        for setting in process_wide(ctx).env
    ):
        return ": TF_FORCE_GPU_ALLOW_GROWTH=false here overrides memory growth"
    return None


def _growth_env_fix(ctx: FileContext) -> Fix | None:
    """`os.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")` before the module body's
    first import of TensorFlow or Keras: TensorFlow's GPU allocator reads it, in TF1 and TF2
    alike, when it starts."""
    first = _first_tensorflow_or_keras_import(ctx)
    edit = None if first is None else fixes.set_env_before(ctx, first, FORCE_GROWTH, "true")
    if edit is None:
        return None
    return Fix(f"Set {FORCE_GROWTH}=true before TensorFlow is imported", (edit,))


def _first_tensorflow_or_keras_import(ctx: FileContext) -> Binding | None:
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
    names = ctx.names
    project = names.project
    first: CallSite | None = None
    uses_keras = False
    for site in names.calls:
        func = site.node.func
        api = names.api_of(func, site.scope, site.order)
        if api in ENTRY_POINTS or (api or "").startswith("estimator."):
            return  # a session of its own, or an Estimator's: the session rules judge it
        if isinstance(func, cst.Attribute) and func.attr.value in _SESSION_METHODS:
            return
        uses_keras = uses_keras or (api or "").startswith("keras.")
        if first is None and (api in _KERAS_SESSION_STARTS or _keras_trains(ctx, site, api)):
            first = site
    if first is None or not uses_keras:
        return
    if project is not None and any(_project_session(ctx, site) for site in names.calls):
        return  # a project helper that may make the session Keras uses
    anchor = _first_tensorflow_or_keras_import(ctx)
    if anchor is None or anchor.statement is None:
        return
    row = ctx.lines.location(ctx.span(first.node)[0]).row
    message = (
        f"Keras makes its own session at `{ctx.code(first.node.func)}()` ({ctx.place(row)}), "
        "with no GPU memory option (TF1-era Keras gives it `allow_soft_placement` alone): it "
        "reserves nearly all of every GPU, as nothing hands Keras a memory-aware session first"
    )
    if ctx.policy.fraction is not None:
        message += (
            "; under the fraction policy, give Keras a session yourself: "
            "`set_session(Session(config=...))` before the model is built"
        )
        yield ctx.finding(KERAS_SESSION, message, anchor.statement, None)
        return
    yield ctx.finding(KERAS_SESSION, message, anchor.statement, _growth_env_fix(ctx))


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


def _why_no_fix(ctx: FileContext, place: int, walk: _Walk, start: Start) -> str | None:
    """Why the fix after the import block would not be sure to work, if it would not."""
    misplaced = _place_problem(ctx, place, walk, start)
    if misplaced is not None:
        return misplaced
    if walk.chooses_gpus:
        return _CHOOSES_GPUS
    if any(
        setting.variable == FORCE_GROWTH and not _configures_env(setting.variable, setting.text)
        for setting in process_wide(ctx).env
    ):
        return "; TF_FORCE_GPU_ALLOW_GROWTH=false here overrides memory growth"
    if any(word in ctx.text for word in _FORKS):
        # Listing the GPUs initializes CUDA, which a process forked after it cannot use.
        return "; it starts processes, which must not inherit CUDA: set it up where they start"
    return None


_CHOOSES_GPUS = "; set it up after the program chooses its GPUs (CUDA_VISIBLE_DEVICES)"


def _place_problem(ctx: FileContext, place: int, walk: _Walk, start: Start) -> str | None:
    """Why the fix, after statement `place` of the module body, would come too late, if it
    would."""
    if start.top <= walk.import_top:
        return "; it starts before this import, so configure it earlier"
    if start.top <= walk.anchor_top:
        return "; it starts among the imports below this one, before the fix's place after them"
    if walk.early_start is not None:
        return f"; `{walk.early_start}`, imported before, may start it: configure it earlier"
    if _chooses_gpus_after(ctx, place):
        # The fix lists the GPUs, and CUDA reads these variables once, then: set after it,
        # they would no longer choose the GPUs. Where the fix belongs is the user's call.
        return _CHOOSES_GPUS
    return None


def _walked(
    ctx: FileContext,
    entry: tuple[cst.FunctionDef, ...],
    anchor: Binding,
    backend: KerasBackend,
) -> tuple[_Walk, int]:
    """The walk from the entry point, and where the fix goes: after the import block, or,
    where something in the block would start the runtime first (code among the imports) or
    choose the GPUs, right after the import itself, when that is sure and no import line
    follows it in the block."""
    top = _top_index(ctx, anchor)
    place = _fix_place(ctx, anchor)
    walk = _Walk(ctx, top, place, backend.is_tensorflow)
    walk.run(entry)
    start = walk.first_start
    if place == top or start is None or _place_problem(ctx, place, walk, start) is None:
        return walk, place
    if any(_is_an_import_line(s) for s in ctx.module.body[top + 1 : place + 1]):
        return walk, place  # code above an import would be E402: no fix, rather than that
    closer = _Walk(ctx, top, top, backend.is_tensorflow)
    closer.run(entry)
    near = closer.first_start
    if near is not None and _place_problem(ctx, top, closer, near) is None:
        # The result holds while what either walk read does.
        closer.contexts += [other for other in walk.contexts if other not in closer.contexts]
        return closer, top
    return walk, place


def _top_index(ctx: FileContext, binding: Binding) -> int:
    """Which statement of the module body made the binding."""
    ancestry = list(binding.ancestry or ())
    return next(i for i, s in enumerate(ctx.module.body) if any(s is a for a in ancestry))


def _chooses_gpus_after(ctx: FileContext, place: int) -> bool:
    """Whether the module may choose the GPUs CUDA shows after the fix's place: every mention
    of the variables that do must be a literal setting in the module body up to there (an
    IPython line, such as `%env`, never is)."""
    if any(word in ctx.layout.set_aside for word in _GPU_CHOOSERS):
        return True
    placed_by = ctx.span(ctx.module.body[place])[1]
    early = [
        setting
        for setting in process_wide(ctx).env
        if setting.variable == VISIBLE_DEVICES
        and setting.scope.kind == "module"
        and ctx.span(setting.node)[1] <= placed_by
    ]
    return sum(ctx.text.count(word) for word in _GPU_CHOOSERS) > len(early)


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
        if computes and _runs_on_tensorflow(ctx, site, api, backend.is_tensorflow):
            return None
        if backend.is_tensorflow and trains(ctx, site.node.func):
            return None
        for qualified in names.qualified_names(site.node.func, site.scope, site.order) or ():
            if starters.builds_a_model(qualified, backend.is_tensorflow):
                return None
    return host


def _runs_on_tensorflow(
    ctx: FileContext, site: CallSite, api: str | None, keras_on_tensorflow: bool
) -> bool:
    """Whether a call of the TF API `api` runs on TensorFlow: a Keras one does through
    `tf.keras` or `tf_keras` always, through Keras itself where its backend is TensorFlow."""
    if api is None or not api.startswith("keras.") or keras_on_tensorflow:
        return True
    qualified = ctx.names.qualified_names(site.node.func, site.scope, site.order) or set()
    return not qualified or not all(name.startswith("keras.") for name in qualified)


def settled_by_fixes(ctx: FileContext, fixed: Sequence[Finding]) -> bool:
    """Whether this rule finds nothing once `fixed` are: the module calls a session entry
    point, so it is TF1 code, of which the rule says nothing (`_tf1_code`), and fixes that the
    session family proves write only a config into those calls keep every call and the API
    it names."""
    names = ctx.names
    return session_config_settled(ctx, fixed) and any(
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


def _configures(ctx: FileContext) -> bool:
    """Whether the module sets GPU memory up anywhere: wherever the walk would place it, the
    rule has nothing sure to say (TFM203 reports a setting that comes too late)."""
    names = ctx.names
    if any(_configures_env(setting.variable, setting.text) for setting in process_wide(ctx).env):
        return True
    if process_wide(ctx).limits:
        return True
    for site in names.calls:
        if _configuration(ctx, site) is not None:
            return True
    return any(
        binding.kind == "import"
        and binding.qualified is not None
        and frameworks.imported(binding.qualified) is not None
        for bindings in names.module_scope.bindings.values()
        for binding in bindings
    )


def _configures_env(variable: str, text: str | None) -> bool:
    """TF_FORCE_GPU_ALLOW_GROWTH set to anything but a plain no (TFM201 checks its spelling),
    or CUDA_VISIBLE_DEVICES set to hide every GPU."""
    if variable == FORCE_GROWTH:
        return text is None or text.strip().lower() not in ("false", "0", "no", "off")
    return variable == VISIBLE_DEVICES and text is not None and text.strip() in ("", "-1")


def _configuration(ctx: FileContext, site: CallSite) -> str | None:
    """What the call sets up, when it sets GPU memory up."""
    names = ctx.names
    api = names.api_of(site.node.func, site.scope, site.order)
    if api in LIMIT and _on_cpus(ctx, site):
        return None  # virtual CPUs, for a distribution strategy's demo: no GPU memory set
    if api in GROWTH or api in LIMIT:
        return api
    if hides_all_gpus(names, site):
        return "set_visible_devices([], 'GPU')"
    for qualified in names.qualified_names(site.node.func, site.scope, site.order) or ():
        if frameworks.called(qualified, site.node) is not None:
            return qualified
    return None


def _on_cpus(ctx: FileContext, site: CallSite) -> bool:
    """Whether a logical-device configuration's device is a CPU: one of
    `list_physical_devices("CPU")`, called there or bound once to a name."""
    device = argument(site.node, 0, "device")
    if isinstance(device, cst.Subscript):
        device = device.value
    if isinstance(device, cst.Name):
        found = ctx.names.lookup(device.value, site.scope, site.order)
        bound = found[1] if found is not None else []
        if len(bound) != 1 or bound[0].kind != "assign" or bound[0].value is None:
            return False
        scope, order = bound[0].scope, bound[0].order
        device = bound[0].value
        if isinstance(device, cst.Subscript):
            device = device.value
    else:
        scope, order = site.scope, site.order
    if not isinstance(device, cst.Call):
        return False
    listed = argument(device, 0, "device_type")
    return (
        ctx.names.api_of(device.func, scope, order) in LIST_GPUS
        and listed is not None
        and (literals.string(listed) or "").upper() == "CPU"
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


# -- the walk ------------------------------------------------------------------------------------
class _Walk:
    """Follows the code an entry point runs, in order, to the first call that starts the
    runtime, noting whether something set GPU memory up before it."""

    def __init__(
        self, entry: FileContext, import_top: int, anchor_top: int, keras_on_tensorflow: bool
    ) -> None:
        self.entry = entry
        self.import_top = import_top  # the statement with the import the finding is at
        # Up to the statement after which the fix goes, a start at import time decides where
        # a fix can go: modules imported there are read for one.
        self.anchor_top = anchor_top
        # Whether Keras itself runs on TensorFlow (its backend, read once for the process).
        self.keras_on_tensorflow = keras_on_tensorflow
        self.first_start: Start | None = None
        self.configured = False  # a setting came first (or TF1 code: no op starts the runtime)
        self.budget = MAX_STATEMENTS
        self.depth = 0
        self.top = 0
        self.followed: set[tuple[int, int]] = set()
        self.modules: set[str] = {entry.filename}
        # The class of each method being followed (None for a plain function): what `self` is.
        self.owners: list[tuple[FileContext, cst.ClassDef] | None] = []
        self.unsure = False  # a call it could not follow may have set GPU memory up
        self.chooses_gpus = False  # a module it entered sets CUDA_VISIBLE_DEVICES
        self.early_start: str | None = None  # a module imported early that may start it
        self.contexts: list[FileContext] = [entry]  # every module it read

    def done(self) -> bool:
        return self.first_start is not None or self.configured or self.unsure or self.budget <= 0

    def enter(self, path: str, runs: str | None = None) -> FileContext | None:
        """Another module of the project, parsed, unless CPython's reading already shows it is
        TF1 code: a start found there would be TF1's, of which TFM205 says nothing, so what
        it runs counts as starting nothing. `runs`: the function or class of it that the
        program is about to run; one that runs TF1 code itself (`make_session()` building a
        `tf.Session`) makes the program a TF1 one from there on, as graph mode does."""
        project = self.entry.names.project
        tree = project.syntax_tree(path) if project is not None else None
        if tree is not None and tf1_code(tree):
            if runs is not None and tf1_definition(tree, runs):
                self.configured = True
            return None
        return self.read(self.entry.other_module(path))

    def read(self, other: FileContext | None) -> FileContext | None:
        """Another module the walk enters, noted: its reads count for the entry's result, and
        a GPU choice made there makes the fix's place unsure."""
        if other is not None and other not in self.contexts:
            self.contexts.append(other)
            if any(word in other.text for word in _GPU_CHOOSERS):
                self.chooses_gpus = True
        return other

    def run(self, functions: Sequence[cst.FunctionDef]) -> None:
        entry = self.entry
        for index, statement in enumerate(entry.module.body):
            if self.done():
                return
            self.top = index
            if isinstance(statement, cst.If) and is_main_guard(statement):
                self.block(entry, statement.body)
            else:
                self.statement(entry, statement)
        self.top = len(entry.module.body)
        for function in functions:
            self.function_body(entry, function)

    def starts(self, ctx: FileContext, node: cst.CSTNode, what: str) -> None:
        if self.first_start is None:
            self.first_start = Start(ctx, node, what, self.top)

    def block(self, ctx: FileContext, suite: cst.BaseSuite | cst.CSTNode | None) -> None:
        statements = getattr(suite, "body", ())
        for statement in statements:
            if self.done():
                return
            self.statement(ctx, statement)

    def statement(self, ctx: FileContext, node: cst.CSTNode) -> None:
        self.budget -= 1
        if isinstance(node, cst.FunctionDef):
            # Its decorators and default values run now; its body when it is called.
            for decorator in node.decorators:
                self.expression(ctx, decorator.decorator)
            for default in _defaults(node.params):
                self.expression(ctx, default)
            return
        if isinstance(node, cst.ClassDef):
            for decorator in node.decorators:
                self.expression(ctx, decorator.decorator)
            for base in (*node.bases, *node.keywords):
                self.expression(ctx, base.value)
            self.block(ctx, node.body)  # a class body runs as the class is defined
            return
        if isinstance(node, cst.If) and is_main_guard(node):
            return  # another module's: it does not run on import
        if isinstance(node, cst.SimpleStatementLine):
            for small in node.body:
                self.small_statement(ctx, small)
            return
        if isinstance(node, cst.BaseSmallStatement):
            self.small_statement(ctx, node)
            return
        for part in _parts(node):
            if self.done():
                return
            if isinstance(part, cst.BaseSuite):
                self.block(ctx, part)
            elif isinstance(part, _BRANCHES):
                self.block(ctx, part.body)
            elif isinstance(part, cst.If):
                self.statement(ctx, part)
            else:
                self.expression(ctx, part)

    def small_statement(self, ctx: FileContext, node: cst.CSTNode) -> None:
        if self.done():
            return
        if isinstance(node, (cst.Import, cst.ImportFrom)):
            self.imports(ctx, node)
            return
        if isinstance(node, cst.Assign):
            setting = _env_setting(ctx, node)
            if setting:
                self.configured = True
                return
        self.expression(ctx, node)

    def expression(self, ctx: FileContext, node: cst.CSTNode) -> None:
        for call in _calls_in_order(node):
            if self.done():
                return
            self.call(ctx, call)

    def call(self, ctx: FileContext, call: cst.Call) -> None:
        names = ctx.names
        site = names.call_site(call)
        if site is None:
            return
        configured = _configuration(ctx, site)
        if configured is None and _env_setting(ctx, call):
            configured = "environment"
        if configured is not None:
            self.configured = True
            return
        api = names.api_of(call.func, site.scope, site.order)
        if api in GRAPH_MODE:
            self.configured = True  # TF1 from here on: no op starts the runtime
            return
        if starts_runtime(api) and _runs_on_tensorflow(ctx, site, api, self.keras_on_tensorflow):
            self.starts(ctx, call, f"{dotted_name(call.func) or api}()")
            return
        func = call.func
        if trains(ctx, func) and api is None and self.keras_on_tensorflow:
            self.starts(ctx, call, f"{dotted_name(func) or 'fit'}()")
            return
        if self._library_start(ctx, site):
            self.starts(ctx, call, f"{dotted_name(func) or 'call'}()")
            return
        run = runner(ctx, site)
        for target in run if run is not None else [func]:
            self.callee(ctx, site, target, every_method=run is not None)

    def _library_start(self, ctx: FileContext, site: CallSite) -> bool:
        """A call into a library that starts TensorFlow's runtime (`starters.py`), directly
        (`tfds.load(...)`) or as a method of what one of its calls made
        (`tfds.builder("mnist").as_dataset()`, also through a name bound once to it)."""
        names = ctx.names
        func = site.node.func
        for qualified in names.qualified_names(func, site.scope, site.order) or ():
            if starters.started_by(qualified, self.keras_on_tensorflow) is not None:
                return True
        if not isinstance(func, cst.Attribute):
            return False
        maker = func.value
        if isinstance(maker, cst.Name):
            found = names.lookup(maker.value, site.scope, site.order)
            bound = found[1] if found is not None else []
            if len(bound) != 1 or bound[0].kind != "assign":
                return False
            maker = bound[0].value  # type: ignore[assignment]
            if not isinstance(maker, cst.Call):
                return False
            maker_names = names.qualified_names(maker.func, bound[0].scope, bound[0].order)
        elif isinstance(maker, cst.Call):
            maker_names = names.qualified_names(maker.func, site.scope, site.order)
        else:
            return False
        return any(
            starters.started_by_method(name, func.attr.value) is not None
            for name in maker_names or ()
        )

    def callee(
        self,
        ctx: FileContext,
        site: CallSite,
        func: cst.BaseExpression,
        every_method: bool = False,
    ) -> None:
        """Follow a call into what it runs: a function of the module's or the project's, a
        class's `__init__`, a method of a class of theirs (`self.run()`, `Trainer().run()`,
        `t.run()` after `t = Trainer()`, `Gpu.setup()`). A class a runner runs
        (`fire.Fire(Trainer)`, `every_method`) runs any of its public methods too, as the
        command line says. A call into a project module that sets GPU memory up somewhere,
        but that cannot be followed, leaves the walk unsure."""
        found = self._definition(ctx, site, func)
        if found is not None:
            where, definition, owner = found
            methods: list[cst.FunctionDef] = []
            if isinstance(definition, cst.ClassDef):
                if every_method:
                    methods = _public_methods(definition)
                owner, definition = definition, _method(definition, "__init__")
            if definition is not None:
                self.function_body(where, definition, owner)
            for method in methods:
                if self.done():
                    return
                self.function_body(where, method, owner)
            return
        if isinstance(func, cst.Attribute):
            owner_found = self._class_of(ctx, site, func.value)
            if owner_found is not None:
                where, owner = owner_found
                method = _method(owner, func.attr.value)
                if method is not None:
                    self.function_body(where, method, owner)
                return
        project = ctx.names.project
        head = _head(func)
        spelled = ctx.names.spelled_names(head, site.scope, site.order) if head else None
        for name in spelled or () if project is not None else ():
            path = project.module(name) or project.module_of(name.rpartition(".")[0])
            if path is not None and project.mentions(path, _CONFIGURATION_WORDS):
                self.unsure = True

    def _definition(
        self, ctx: FileContext, site: CallSite, func: cst.BaseExpression
    ) -> tuple[FileContext, cst.FunctionDef | cst.ClassDef, cst.ClassDef | None] | None:
        """Where `func` is defined, when it is a function, class or static method of this
        module or of a project module: (that module, the definition, its class if a method)."""
        if isinstance(func, cst.Name):
            local = _local_definition(ctx, site, func)
            if local is not None:
                return ctx, local, None
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
            local = _local_definition(ctx, site, func.value)
            if isinstance(local, cst.ClassDef):  # `Gpu.setup()`
                method = _method(local, func.attr.value)
                return (ctx, method, local) if method is not None else None
        project = ctx.names.project
        spelled = ctx.names.spelled_names(func, site.scope, site.order)
        if project is None or spelled is None or len(spelled) != 1:
            return None
        (name,) = spelled
        head, _, last = name.rpartition(".")
        path = project.locate(name)
        if path is not None:
            other = self.enter(path, runs=last)
            function = _module_definition(other, last) if other is not None else None
            return (other, function, None) if other is not None and function else None
        # `mod.Class` or `mod.Class.method`, the class defined in the project module `mod`
        for class_path, method_name in ((name, None), (head, last)):
            module, _, class_name = class_path.rpartition(".")
            path = project.module(module) if module else None
            other = self.enter(path, runs=class_name) if path is not None else None
            definition = _module_definition(other, class_name) if other is not None else None
            if other is None or not isinstance(definition, cst.ClassDef):
                continue
            if method_name is None:
                return other, definition, None
            method = _method(definition, method_name)
            return (other, method, definition) if method is not None else None
        return None

    def _class_of(
        self, ctx: FileContext, site: CallSite, receiver: cst.BaseExpression
    ) -> tuple[FileContext, cst.ClassDef] | None:
        """The class of the module's or the project's whose object `receiver` is, where that
        is plain: `self` in a method being followed, `Trainer()`, a name bound once to it."""
        if isinstance(receiver, cst.Name) and receiver.value == "self":
            return self.owners[-1] if self.owners and self.owners[-1] else None
        if isinstance(receiver, cst.Name):
            found = ctx.names.lookup(receiver.value, site.scope, site.order)
            if found is None or len(found[1]) != 1 or found[1][0].kind != "assign":
                return None
            receiver = found[1][0].value  # type: ignore[assignment]
        if isinstance(receiver, cst.Call):
            found_class = self._definition(ctx, site, receiver.func)
            if found_class is not None and isinstance(found_class[1], cst.ClassDef):
                return found_class[0], found_class[1]
        return None

    def function_body(
        self, ctx: FileContext, function: cst.FunctionDef, owner: cst.ClassDef | None = None
    ) -> None:
        key = (id(ctx), id(function))
        if key in self.followed or self.depth >= MAX_CALL_DEPTH:
            return
        self.followed.add(key)
        self.depth += 1
        self.owners.append((ctx, owner) if owner is not None else None)
        try:
            self.block(ctx, function.body)
        finally:
            self.depth -= 1
            self.owners.pop()

    def imports(self, ctx: FileContext, node: cst.Import | cst.ImportFrom) -> None:
        """An import runs the project modules it names, once: their import-time code."""
        project = ctx.names.project
        for name in _imported_names(node):
            if frameworks.imported(name) is not None:
                self.configured = True
                return
            if name.split(".")[0] in KERAS_IMPORTERS and not self.keras_on_tensorflow:
                # Keras on another backend sets TF_FORCE_GPU_ALLOW_GROWTH=true as it is
                # imported (keras/src/backend/config.py).
                self.configured = True
                return
            path = project.module(name) if project is not None else None
            if path is not None and project is not None:
                self.module(project, path)
            if self.done():
                return

    def module(self, project: FileResolver, path: str, depth: int = 0) -> None:
        """Run a project module's import-time code, as far as it may set GPU memory up or
        choose the GPUs: only a module whose text could is parsed; the others are crossed,
        IMPORT_LEVELS deep, through the modules they import. One imported before the fix's
        place is read with `ast` for a call that may start the runtime. (A runtime started at
        import later on is not seen: the start found after it still makes the finding.)"""
        if path in self.modules:
            return
        self.modules.add(path)
        if len(self.modules) > MAX_MODULES:
            self.unsure = True  # past what a lint may spend on one program
            return
        if project.mentions(path, _IMPORT_TIME_WORDS):
            other = self.enter(path)
            if other is not None:
                self.block(other, other.module)
            return
        if self.top <= self.anchor_top and project.mentions(path, _TENSORFLOW_WORDS):
            # Imported before the fix's place: read cheaply, for a call that may start the
            # runtime there (the fix would then come too late).
            tree = project.syntax_tree(path)
            if tree is None or calls_tensorflow_at_import(tree):
                self.early_start = project.display(path)
        if depth + 1 >= IMPORT_LEVELS:
            return
        for imported in project.imports_of(path):
            self.module(project, imported, depth + 1)
            if self.done():
                return


def _imported_names(node: cst.Import | cst.ImportFrom) -> Iterator[str]:
    """The modules an import may run, outermost first (`a`, `a.b` for `import a.b`), and for a
    `from` import the names it takes, which may be submodules."""
    if isinstance(node, cst.Import):
        for alias in node.names:
            full = dotted_name(alias.name)
            parts = full.split(".") if full else []
            for length in range(1, len(parts) + 1):
                yield ".".join(parts[:length])
        return
    module = dotted_name(node.module) if node.module is not None else ""
    if module is None:
        return
    dots = "." * len(node.relative)
    parts = module.split(".") if module else []
    for length in range(1, len(parts) + 1):
        yield dots + ".".join(parts[:length])
    base = dots + module
    if isinstance(node.names, cst.ImportStar):
        return
    for alias in node.names:
        imported = dotted_name(alias.name)
        if imported is not None:
            yield member(base, imported)


def _env_setting(ctx: FileContext, node: cst.CSTNode) -> str | None:
    """The environment variable a statement or call sets to configure GPU memory."""
    for setting in process_wide(ctx).env:
        if setting.node is node and _configures_env(setting.variable, setting.text):
            return setting.variable
    return None


def _parts(node: cst.CSTNode) -> list[cst.CSTNode]:
    """A compound statement's expressions and blocks, in the order they run."""
    if isinstance(node, cst.If):
        return [node.test, node.body, *([node.orelse] if node.orelse is not None else [])]
    if isinstance(node, (cst.For, cst.While)):
        head = node.iter if isinstance(node, cst.For) else node.test
        return [head, node.body, *([node.orelse] if node.orelse is not None else [])]
    if isinstance(node, cst.With):
        return [*(item.item for item in node.items), node.body]
    if isinstance(node, (cst.Try, cst.TryStar)):
        tail = [p for p in (node.orelse, node.finalbody) if p is not None]
        return [node.body, *node.handlers, *tail]
    if isinstance(node, cst.Match):
        return [node.subject, *node.cases]
    return []


def _calls_in_order(node: cst.CSTNode) -> list[cst.Call]:
    """The calls in an expression or small statement in the order they complete: arguments
    before the call. Not those in a lambda, which runs later if at all."""
    found: list[cst.Call] = []

    class Calls(cst.CSTVisitor):
        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

        def leave_Call(self, original_node: cst.Call) -> None:
            found.append(original_node)

    node.visit(Calls())
    return found


def _local_definition(
    ctx: FileContext, site: CallSite, name: cst.Name
) -> cst.FunctionDef | cst.ClassDef | None:
    """The one `def` or `class` of this module that `name` is bound to where it is called."""
    found = ctx.names.lookup(name.value, site.scope, site.order)
    if found is None or len(found[1]) != 1:
        return None
    definition = found[1][0].statement
    if isinstance(definition, (cst.FunctionDef, cst.ClassDef)):
        return definition if definition.name.value == name.value else None
    return None


def _defaults(params: cst.Parameters) -> Iterator[cst.BaseExpression]:
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        if param.default is not None:
            yield param.default


def _public_methods(definition: cst.ClassDef) -> list[cst.FunctionDef]:
    """A class's methods whose names do not start with `_`, in order."""
    body = definition.body.body if isinstance(definition.body, cst.IndentedBlock) else ()
    return [
        statement
        for statement in body
        if isinstance(statement, cst.FunctionDef) and not statement.name.value.startswith("_")
    ]


def _method(definition: cst.ClassDef, name: str) -> cst.FunctionDef | None:
    body = definition.body.body if isinstance(definition.body, cst.IndentedBlock) else ()
    return next((s for s in body if isinstance(s, cst.FunctionDef) and s.name.value == name), None)


def _module_definition(ctx: FileContext, name: str) -> cst.FunctionDef | cst.ClassDef | None:
    """The function or class the module defines at its top level as `name`."""
    definitions = (cst.FunctionDef, cst.ClassDef)
    return next(
        (s for s in ctx.module.body if isinstance(s, definitions) and s.name.value == name),
        None,
    )


def _head(expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """The dotted name a call's target starts from: `gpu.setup` of `gpu.setup()`, `gpu.REGISTRY`
    of `gpu.REGISTRY["setup"]()`, `gpu.make` of `gpu.make().run()`."""
    while not isinstance(expr, (cst.Name, cst.Attribute)) or dotted_name(expr) is None:
        if isinstance(expr, (cst.Subscript, cst.Attribute)):
            expr = expr.value
        elif isinstance(expr, cst.Call):
            expr = expr.func
        else:
            return None
    return expr


# -- the fix -------------------------------------------------------------------------------------
def _fix_place(ctx: FileContext, anchor: Binding) -> int:
    """Which statement of the module body the fix goes after: the last import of the import
    block that holds the TensorFlow import, so that no import follows the fix's code (E402).
    The block runs on through what either ruff or pycodestyle lets stand among imports (an
    import after it is E402 for neither, so code put before it would be new to one): `if`,
    `try` and `with` statements, dunder assignments, `os.environ`, `sys.path`,
    `matplotlib.use` and the like; in a notebook, IPython lines, and it ends with the cell."""
    body = ctx.module.body
    top = _top_index(ctx, anchor)
    holders = _import_holders(ctx)
    place = top
    for index in range(top + 1, len(body)):
        statement = body[index]
        if not _among_imports(statement) or _new_cell(ctx, body[index - 1], statement):
            break
        if index in holders or _is_an_import_line(statement):
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
    comment = statement.trailing_whitespace.comment
    if comment is not None and comment.value == _MAGIC:
        return True  # a notebook's IPython line, which neither linter counts as code
    return all(_small_among_imports(small) for small in statement.body)


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


def _is_an_import_line(statement: cst.CSTNode) -> bool:
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


def _fix(ctx: FileContext, anchor: Binding, place: int, hide: bool) -> Fix | None:
    """After the import block: the GPUs hidden from TensorFlow (`hide`, for a guest), or
    memory growth on every GPU. Where the module has no `import tensorflow` of its own, one
    comes inside the `try`, where isort and E402 leave it be."""
    if not hide and ctx.policy.fraction is not None:
        return None  # TF2 has no fraction to set: the message's user decides the limit
    alias = anchor.name
    # `compat.v1` running eagerly has TF2's `config` too (`_tf1_code`: it is TF2 here).
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
