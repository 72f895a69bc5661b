"""The logic of TFM101, TFM102, TFM103 and TFM190 (their pages are in `__init__.py`).

For every call that resolves to a session entry point, find the config it is given and work out
(`config_dataflow`) whether that config limits GPU memory: AWARE (no finding), MISSING (a
finding with a fix), DISABLED (a finding, never fixed) or UNKNOWN (the off-by-default TFM190).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import libcst as cst

from tfmemlint.fixing import fixes
from tfmemlint.model import Finding, Fix
from tfmemlint.project.names import CallSite, dotted_name
from tfmemlint.rules import literals
from tfmemlint.rules.config_dataflow import SessionConfig, State
from tfmemlint.rules.session_config import (
    CONFIG_WITHOUT_MEMORY_OPTION,
    MEMORY_OPTION_DISABLED,
    NO_CONFIG,
    UNRESOLVED_CONFIG,
)
from tfmemlint.rules.session_sites import SeenSession, entry_point, remember
from tfmemlint.rules.tensorflow_api import TF1, TF1_COMPAT

if TYPE_CHECKING:
    from tfmemlint.checking.engine import FileContext


def check(ctx: FileContext) -> Iterator[Finding]:
    seen: list[SeenSession] = []
    for site in ctx.names.calls:
        found = entry_point(ctx, site)
        if found is not None:
            findings = list(SessionCheck(ctx, site, *found).findings())
            seen.append(SeenSession(found[0], site.node, _config_fix(findings)))
            yield from findings
        elif (
            ctx.names.api_of(site.node.func, site.scope, site.order) == "keras.backend.set_session"
        ):
            findings = list(_keras_session(ctx, site))
            seen.append(SeenSession(None, site.node, None))
            yield from findings
    remember(ctx, seen)


def _config_fix(findings: list[Finding]) -> Finding | None:
    """A call's one finding when it is a TFM101 with a fix: the one kind of fix from which
    `fixes_only_configure_sessions` proves that nothing is left."""
    if len(findings) != 1 or findings[0].code != NO_CONFIG.code or findings[0].fix is None:
        return None
    return findings[0]


def _keras_session(ctx: FileContext, site: CallSite) -> Iterator[Finding]:
    """`set_session(sess)`: the session is checked where it is created; only one created out of
    sight (another module, a parameter) is worth a word, under the off-by-default TFM190."""
    argument = site.node.args[0].value if site.node.args else None
    created: cst.BaseExpression | None = argument
    scope, order = site.scope, site.order
    if isinstance(argument, cst.Name):
        found = ctx.names.lookup(argument.value, scope, order)
        binding = found[1][0] if found is not None and len(found[1]) == 1 else None
        created = binding.value if binding is not None and binding.kind == "assign" else None
        if binding is not None:
            scope, order = binding.scope, binding.order
    if isinstance(created, cst.Call):
        returned = ctx.names.single_return(created.func, scope, order)
        if returned is not None and isinstance(returned.node.value, cst.Call):
            created = returned.node.value
    if isinstance(created, cst.Call):
        inner = ctx.names.call_site(created)
        if inner is not None and entry_point(ctx, inner) is not None:
            return  # checked where it is created
    if not ctx.reports(UNRESOLVED_CONFIG):
        return
    label = dotted_name(site.node.func) or "set_session"
    message = (
        f"Cannot tell whether the session given to `{label}()` limits GPU memory: "
        "it is created out of sight"
    )
    yield ctx.finding(UNRESOLVED_CONFIG, message, site.node, None)


class SessionCheck(SessionConfig):
    """A session site's findings, from its verdict."""

    def findings(self) -> Iterator[Finding]:
        if self.entry.wraps is not None and self.config_argument() != (None, False):
            return  # its RunConfig is checked where it is made; or * and ** may hold it
        verdict, config = self.assess()
        if verdict.state is State.AWARE or (self.entry.creator and config is not None):
            return
        if verdict.state is State.MISSING and (config is None or literals.is_none(config.value)):
            yield self._missing_config(config)
        elif verdict.state is State.UNKNOWN:
            if self.ctx.reports(UNRESOLVED_CONFIG):  # off by default
                yield self._unresolved(verdict.reason)
        elif verdict.state is State.DISABLED:
            message = (
                f"{self.label} gets a config that turns GPU memory limits off ({verdict.reason})"
            )
            yield self.ctx.finding(MEMORY_OPTION_DISABLED, message, self.call, None)
        else:
            detail = f"; {verdict.reason}" if verdict.reason else ""
            message = f"{self.label} gets a config with no GPU memory option{detail}"
            fix = Fix(verdict.fix[0], verdict.fix[1]) if verdict.fix else None
            yield self.ctx.finding(CONFIG_WITHOUT_MEMORY_OPTION, message, self.call, fix)

    def _unresolved(self, reason: str) -> Finding:
        message = f"Cannot tell whether {self.label} limits GPU memory: {reason}"
        return self.ctx.finding(UNRESOLVED_CONFIG, message, self.call, None)

    def _missing_config(self, config: cst.Arg | None) -> Finding:
        if self.entry.creator:
            message = (
                f"{self.label} gets no session creator; its default one passes no config, "
                "so the session reserves nearly all GPU memory"
            )
        elif self.entry.fraction_keyword:
            message = (
                f"{self.label} keeps its default `{self.entry.fraction_keyword}=1`: "
                f"{self.entry.holder} takes the whole GPU"
            )
        elif self.entry.holder is None:
            message = (
                f"{self.label} is created without a GPU memory option "
                "and reserves nearly all GPU memory"
            )
        else:
            message = (
                f"{self.label} gets no `{self.entry.keyword}` with a GPU memory option; "
                f"{self.entry.holder} reserves nearly all GPU memory"
            )
        if self._config_as_target():
            message += "; its config is passed as `target`, the first argument: use `config=`"
            return self.ctx.finding(NO_CONFIG, message, self.call, None)
        if self._deliberately_bare():
            message += " (the other branch of its `if` passes a config: not fixed, left to you)"
            return self.ctx.finding(NO_CONFIG, message, self.call, None)
        fix = None
        if self.entry.creator:
            # Only TF1's namespace holds train.ChiefSessionCreator as well as the protos.
            head = self.namespace_head(self.spelling)
            in_tf1 = head is not None and head[1] <= {TF1, TF1_COMPAT}
            prefix_edits = (f"{head[0]}.", ()) if head is not None and in_tf1 else None
        else:
            prefix_edits = self.proto_prefix(self.spelling, self.entry.in_tf2)
        if self.entry.fraction_keyword and self.ctx.policy.fraction is not None and config is None:
            keyword, fraction = self.entry.fraction_keyword, repr(self.ctx.policy.fraction)
            edit = fixes.add_keyword(self.ctx, self.call, keyword, fraction)
            fix = Fix(f"Pass `{keyword}={fraction}`", (edit,)) if edit else None
            return self.ctx.finding(NO_CONFIG, message, self.call, fix)
        if prefix_edits is not None:
            prefix, import_edits = prefix_edits
            field, value = self.ctx.policy.gpu_option
            kept = self.entry.kept_options
            new_config = (
                f"{prefix}ConfigProto({kept}gpu_options={prefix}GPUOptions({field}={value}))"
            )
            if self.entry.creator:
                new_config = f"{prefix}train.ChiefSessionCreator(config={new_config})"
            if self.entry.wraps is not None:
                # The RunConfig from where the module spells the Estimator (`tf.estimator.`).
                namespace = (dotted_name(self.spelling) or "").rpartition(".")[0]
                wrapper = f"{namespace}.{self.entry.wraps}" if namespace else None
                new_config = f"{wrapper}(session_config={new_config})" if wrapper else ""
            if not new_config:
                edit = None
            elif config is None:
                edit = fixes.add_keyword(self.ctx, self.call, self.entry.keyword, new_config)
            else:
                edit = fixes.replace(self.ctx, config.value, new_config)
            if edit is not None:
                fix = Fix(f"Pass `{self.entry.keyword}={new_config}`", (edit, *import_edits))
        return self.ctx.finding(NO_CONFIG, message, self.call, fix)

    def _deliberately_bare(self) -> bool:
        """`if allow_growth: Session(config=cfg) else: Session()`: the bare one is a choice the
        code makes on purpose, so a fix would override it."""
        branch_if = next((n for n in self.site.ancestry if isinstance(n, cst.If)), None)
        if branch_if is None:
            return False
        own_branch = next(
            (n for n in self.site.ancestry if n is branch_if.body or n is branch_if.orelse), None
        )
        for other in self.names.calls:
            if other is self.site or not any(n is branch_if for n in other.ancestry):
                continue
            if any(n is own_branch for n in other.ancestry):
                continue
            found = entry_point(self.ctx, other)
            if found is None or found[0] is not self.entry:
                continue
            config, _ = SessionConfig(self.ctx, other, *found).config_argument()
            if config is not None and not literals.is_none(config.value):
                return True
        return False

    def _config_as_target(self) -> bool:
        """`Session(cfg)`: TensorFlow raises TypeError; adding `config=` would not help."""
        first = self.call.args[0] if self.call.args else None
        if first is None or first.keyword is not None or first.star:
            return False
        value, _, _ = self.bound_value(first.value, self.site.scope, self.site.order)
        return isinstance(value, cst.Call) and self.api(value.func) == "ConfigProto"
