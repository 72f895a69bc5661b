"""The session sites of a file: the calls that make a TF1 session, a server, an Estimator's
session or TF1's eager runtime from a session config (`ENTRY_POINTS`, `entry_point`), and what
the session family found at each, from which every family proves that a fix leaves it nothing
(`fixes_only_configure_sessions`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, NamedTuple

import libcst as cst

from tfmemlint.model import Finding
from tfmemlint.project.names import CallSite
from tfmemlint.rules import command_line, literals
from tfmemlint.rules.runtime import argument

if TYPE_CHECKING:
    from tfmemlint.checking.engine import FileContext


@dataclass(frozen=True)
class EntryPoint:
    """An API that takes a session config, and where the config goes (positions count from 0,
    `self` excluded; None: keyword only). Signatures are TF 2.21's tf.compat.v1 ones."""

    keyword: str
    position: int | None
    # For keyword-only entries whose position moved between versions (slim): with more positional
    # arguments than this, one of them may be the config.
    max_positional: int = 99
    # Without the argument it is memory-aware anyway (InteractiveSession turns allow_growth on
    # itself) or inherits a config that is checked where it was built (RunConfig.replace).
    missing_is_fine: bool = False
    # Also at TF2's top level (tf.estimator.RunConfig): there, `tf.ConfigProto` does not exist.
    in_tf2: bool = False
    # MonitoredSession: the argument is a session creator; without one, its default gets no config.
    creator: bool = False
    # Who reserves the memory, for the message; None: the call creates a session itself.
    holder: str | None = "its session"
    # contrib.learn.RunConfig: a fraction keyword of its own, whose default 1 is the whole GPU.
    fraction_keyword: str | None = None
    # An Estimator: its `config` is a RunConfig, whose `session_config` is the ConfigProto.
    # Given one, that RunConfig is checked where it is made.
    wraps: str | None = None
    # Where it takes the server to run on (`target`, `master`): (keyword, position). On a
    # server's target, that server's config governs the memory, not this call's.
    target: tuple[str, int] | None = None
    # enable_eager_execution: it keeps its config for the runtime, which starts at the first
    # op, so a process-wide setting made after the call and before that op holds too.
    starts_at_first_op: bool = False
    # TPUEstimator and its RunConfig: on a TPU there is no GPU memory to reserve, but with
    # `use_tpu` off they run on this machine's GPUs. Only where the module runs one so by
    # default (`off_the_tpu`) is the session's config this family's.
    off_tpu: bool = False
    # Options the session config the fix writes keeps from the one the call would make itself
    # (TPU's RunConfig: `allow_soft_placement` and `isolate_session_state`).
    kept_options: str = ""


CANNED_ESTIMATORS = (
    "DNNClassifier",
    "DNNRegressor",
    "LinearClassifier",
    "LinearRegressor",
    "DNNLinearCombinedClassifier",
    "DNNLinearCombinedRegressor",
    "BaselineClassifier",
    "BaselineRegressor",
    "BoostedTreesClassifier",
    "BoostedTreesRegressor",
)

# Where TF1 keeps TPUEstimator and its RunConfig: `tf.contrib.tpu`, and from TF 1.14 on
# `tf.compat.v1.estimator.tpu`.
TPU_NAMESPACES = ("contrib.tpu", "estimator.tpu")
TPU_ESTIMATORS = frozenset(f"{namespace}.TPUEstimator" for namespace in TPU_NAMESPACES)
# TPUEstimator(model_fn, model_dir, config, params, use_tpu=True, ...): on the TPU by default.
USE_TPU = ("use_tpu", 4)
# TPUEstimator, as an Estimator: this family's off the TPU alone, and the config its fix writes
# keeps what TPU's RunConfig puts in one of its own (tpu_config.py).
_TPU_ESTIMATOR = EntryPoint(
    "config",
    2,
    holder="the TPUEstimator's session, off the TPU,",
    wraps="RunConfig",
    off_tpu=True,
    kept_options="allow_soft_placement=True, isolate_session_state=True, ",
)
# ...and TPU's RunConfig(tpu_config, evaluation_master, master, cluster, **kwargs).
_TPU_RUN_CONFIG = replace(
    _TPU_ESTIMATOR,
    keyword="session_config",
    position=None,
    max_positional=4,
    wraps=None,
    target=("master", 2),
)

ENTRY_POINTS = {
    "Session": EntryPoint("config", 2, holder=None, target=("target", 0)),
    "InteractiveSession": EntryPoint(
        "config", 2, missing_is_fine=True, holder=None, target=("target", 0)
    ),
    "train.MonitoredTrainingSession": EntryPoint("config", 9, target=("master", 0)),
    "train.SingularMonitoredSession": EntryPoint("config", 3, target=("master", 2)),
    "train.ChiefSessionCreator": EntryPoint("config", 2, target=("master", 1)),
    "train.WorkerSessionCreator": EntryPoint("config", 2, target=("master", 1)),
    "train.MonitoredSession": EntryPoint("session_creator", 0, creator=True),
    # In distributed TF the server process owns the GPUs: its config is the one that counts.
    "train.Server": EntryPoint("config", 4, holder="the server"),
    "train.Server.create_local_server": EntryPoint("config", 0, holder="the server"),
    # The same class under its TF 1.14+ (and TF2) name.
    "distribute.Server": EntryPoint("config", 4, in_tf2=True, holder="the server"),
    "distribute.Server.create_local_server": EntryPoint(
        "config", 0, in_tf2=True, holder="the server"
    ),
    "estimator.RunConfig": EntryPoint(
        "session_config", 5, in_tf2=True, holder="the Estimator's session"
    ),
    # Made with no `config`, an Estimator's default RunConfig passes no session config.
    "estimator.Estimator": EntryPoint(
        "config", 2, in_tf2=True, holder="the Estimator's session", wraps="RunConfig"
    ),
    **{
        # The canned estimators' configs sit further down, and moved between versions: with
        # more than two positional arguments, one of them may be it.
        f"estimator.{canned}": EntryPoint(
            "config",
            None,
            max_positional=2,
            in_tf2=True,
            holder="the Estimator's session",
            wraps="RunConfig",
        )
        for canned in CANNED_ESTIMATORS
    },
    "contrib.slim.learning.train": EntryPoint("session_config", None, max_positional=22),
    "contrib.slim.evaluation.evaluate_once": EntryPoint("session_config", None, max_positional=13),
    "contrib.slim.evaluation.evaluation_loop": EntryPoint(
        "session_config", None, max_positional=13
    ),
    "enable_eager_execution": EntryPoint(
        "config", 0, holder="the eager runtime", starts_at_first_op=True
    ),
    # TF 1.5 to 1.7 spelled it `tfe.enable_eager_execution()`, `tfe` being tf.contrib.eager.
    "contrib.eager.enable_eager_execution": EntryPoint(
        "config", 0, holder="the eager runtime", starts_at_first_op=True
    ),
    **{f"{namespace}.RunConfig": _TPU_RUN_CONFIG for namespace in TPU_NAMESPACES},
    **{f"{namespace}.TPUEstimator": _TPU_ESTIMATOR for namespace in TPU_NAMESPACES},
    "contrib.learn.RunConfig": EntryPoint(
        "session_config",
        None,
        max_positional=3,
        holder="the Estimator's session",
        fraction_keyword="gpu_memory_fraction",
        target=("master", 0),
    ),
}


def off_the_tpu(ctx: FileContext) -> bool:
    """Whether the module makes a TPUEstimator that runs off the TPU by default: `use_tpu` given
    as `False`, or as a flag that is off by default (BERT's `FLAGS.use_tpu`)."""
    cached = ctx.cache.get("off_the_tpu")
    if isinstance(cached, bool):
        return cached
    names = ctx.names
    found = any(
        _off_by_default(ctx, argument(site.node, USE_TPU[1], USE_TPU[0]))
        for site in names.calls
        if names.api_of(site.node.func, site.scope, site.order) in TPU_ESTIMATORS
    )
    ctx.cache["off_the_tpu"] = found
    return found


def _off_by_default(ctx: FileContext, value: cst.BaseExpression | None) -> bool:
    """`False`, or a flag that is off by default; not an argument left out (TPUEstimator's
    `use_tpu` then is on)."""
    if value is None:
        return False
    if isinstance(value, cst.Attribute):
        return command_line.off_by_default(ctx, value.attr.value) is not None
    return literals.boolean(value) is False


# Methods whose receiver must be built in reach: (the receiver's API, the method) -> entry point.
METHOD_ENTRY_POINTS = {
    ("train.Supervisor", "managed_session"): EntryPoint("config", 1, target=("master", 0)),
    ("train.Supervisor", "prepare_or_wait_for_session"): EntryPoint(
        "config", 1, target=("master", 0)
    ),
    ("train.SessionManager", "prepare_session"): EntryPoint("config", 7, target=("master", 0)),
    ("train.SessionManager", "recover_session"): EntryPoint("config", 6, target=("master", 0)),
    ("train.SessionManager", "wait_for_session"): EntryPoint("config", 1, target=("master", 0)),
    ("estimator.RunConfig", "replace"): EntryPoint("session_config", None, missing_is_fine=True),
}


def entry_point(ctx: FileContext, site: CallSite) -> tuple[EntryPoint, cst.BaseExpression] | None:
    """The entry point a call is, and the expression whose module spelling a fix follows (the
    callee, or for a method, the callee that built its receiver)."""
    func = site.node.func
    entry = ENTRY_POINTS.get(ctx.names.api_of(func, site.scope, site.order) or "")
    if entry is not None:
        return (entry, func) if not entry.off_tpu or off_the_tpu(ctx) else None
    if not isinstance(func, cst.Attribute):
        return None
    receiver = func.value
    scope, order = site.scope, site.order
    if isinstance(receiver, cst.Name):
        found = ctx.names.lookup(receiver.value, scope, order)
        if found is None or len(found[1]) != 1 or found[1][0].kind != "assign":
            return None
        binding = found[1][0]
        receiver, scope, order = binding.value, binding.scope, binding.order
    if not isinstance(receiver, cst.Call):
        return None
    api = ctx.names.api_of(receiver.func, scope, order)
    entry = METHOD_ENTRY_POINTS.get((api or "", func.attr.value))
    return (entry, receiver.func) if entry is not None else None


class SeenSession(NamedTuple):
    """A call the session family checked: an entry point (None for Keras's `set_session`), and
    its one finding when that finding's fix writes the memory config into the call as a new
    argument (None for anything else). It holds no context: in the context's own cache, one
    would keep it alive in a cycle, out of reach of reference counting."""

    entry: EntryPoint | None
    call: cst.Call
    config_fix: Finding | None


# Where the session family leaves what it saw of a file, once it has seen it all.
_SEEN = "session_sites.seen"


def remember(ctx: FileContext, seen: list[SeenSession]) -> None:
    """Keep what the session family saw of the file, for `fixes_only_configure_sessions`."""
    ctx.cache[_SEEN] = seen


def fixes_only_configure_sessions(ctx: FileContext, fixed: Sequence[Finding]) -> bool:
    """Whether the session family finds nothing once `fixed` are: every entry point of the file
    had one finding, and `fixed` are those, each fixed by writing the growth config into its
    call, and nothing outside it. So the fixed text differs from this one only by
    `config=...ConfigProto(gpu_options=...GPUOptions(allow_growth=True))` inside those calls:
    that binds no name, and each entry point keeps its other arguments, the names it sees and
    the process-wide settings before it, all its verdict rests on but the config, which it now
    gets, memory-aware; the calls it adds are no entry points. (Under a fraction policy the
    values family would judge what the fix writes: only growth counts here.)

    The other families build on this: what such an edit can change for each is on its own
    `settled_by_fixes`. False where the session family did not look."""
    seen = ctx.cache.get(_SEEN)
    if not isinstance(seen, list) or not seen or ctx.policy.fraction is not None:
        return False
    return len(fixed) == len(seen) and all(_fixed_in_the_call(ctx, call, fixed) for call in seen)


def _fixed_in_the_call(ctx: FileContext, seen: SeenSession, fixed: Sequence[Finding]) -> bool:
    entry = seen.entry
    if entry is None or entry.creator or entry.fraction_keyword is not None:
        return False
    finding = seen.config_fix
    if finding is None or finding.fix is None or finding not in fixed:
        return False
    start, end = ctx.span(seen.call)
    return all(start < edit.start and edit.end < end for edit in finding.fix.edits)
