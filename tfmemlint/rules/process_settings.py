"""Process-wide memory settings, read once per file for every family: TF_FORCE_GPU_ALLOW_GROWTH
and hidden GPUs (`CUDA_VISIBLE_DEVICES`, `set_visible_devices([], "GPU")`), and where they limit
every session's memory. The session rules consult them before reporting a session; TFM201
checks their values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tfmemlint.project.names import CallSite, Scope
from tfmemlint.rules.environment import EnvSetting, env_settings
from tfmemlint.rules.runtime import hides_all_gpus
from tfmemlint.rules.variables import FORCE_GROWTH

if TYPE_CHECKING:
    from tfmemlint.checking.engine import FileContext

VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"


@dataclass(frozen=True)
class ProcessWide:
    env: tuple[EnvSetting, ...]
    # Where the settings that limit every session's GPU memory are made, and why they do.
    limits: tuple[tuple[Scope, int, str], ...]

    def limits_memory_for(self, site: CallSite, until: int | None = None) -> str | None:
        """Why the process's settings make `site`'s session memory-aware, if they do: set at
        module level (before the call, when the call is at module level too), or earlier in the
        call's own scope. `until`: where the call's runtime really starts in its scope, when
        that is later than the call (the first op after `enable_eager_execution`)."""
        last = until if until is not None else site.order
        for scope, order, reason in self.limits:
            module_level = scope.kind == "module" and site.scope is not scope
            if module_level or (scope is site.scope and order < last):
                return reason
        return None


def process_wide(ctx: FileContext) -> ProcessWide:
    cached = ctx.cache.get("process_wide")
    if isinstance(cached, ProcessWide):
        return cached
    wanted = (FORCE_GROWTH, VISIBLE_DEVICES)
    env = tuple(env_settings(ctx.names, wanted)) if _mentions_env(ctx.text) else ()
    limits = []
    for setting in env:
        if setting.variable == FORCE_GROWTH and setting.text == "true":
            limits.append((setting.scope, setting.order, f"{FORCE_GROWTH}=true"))
        hidden = setting.text is not None and setting.text.strip() in ("", "-1")
        if setting.variable == VISIBLE_DEVICES and hidden:
            limits.append((setting.scope, setting.order, f"{VISIBLE_DEVICES} hides every GPU"))
    for site in ctx.names.calls:
        if hides_all_gpus(ctx.names, site):
            limits.append((site.scope, site.order, "set_visible_devices([], 'GPU')"))
    result = ProcessWide(env, tuple(limits))
    ctx.cache["process_wide"] = result
    return result


def _mentions_env(text: str) -> bool:
    return FORCE_GROWTH in text or VISIBLE_DEVICES in text
