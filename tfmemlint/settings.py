"""What a run was asked to do: the fix policy and the rule selection."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tfmemlint.rules import ALL_RULES


class SettingsError(ValueError):
    """A bad option value; the CLI turns it into a usage error (exit 2)."""


@dataclass(frozen=True)
class Policy:
    """How a fix limits memory: `growth`, or a cap of `fraction` of the GPU's total memory."""

    fraction: float | None = None

    @classmethod
    def parse(cls, text: str) -> Policy:
        text = text.strip()
        if text == "growth":
            return cls()
        key, sep, value = text.partition("=")
        if key.strip() != "fraction" or not sep:
            raise SettingsError(f"unknown policy {text!r}: use 'growth' or 'fraction=F'")
        try:
            fraction = float(value)
        except ValueError:
            raise SettingsError(f"policy fraction {value.strip()!r} is not a number") from None
        if not 0 < fraction <= 1:
            raise SettingsError(f"policy fraction {fraction:g} is outside (0, 1]")
        return cls(fraction)

    @property
    def gpu_option(self) -> tuple[str, str]:
        """The GPUOptions field to set and the source text of its value."""
        if self.fraction is None:
            return "allow_growth", "True"
        return "per_process_gpu_memory_fraction", repr(self.fraction)

    def __str__(self) -> str:
        return "growth" if self.fraction is None else f"fraction={self.fraction!r}"


def _matches(code: str, selector: str) -> bool:
    return selector == "ALL" or code.startswith(selector)


def _check_selectors(selectors: Iterable[str]) -> list[str]:
    checked = []
    for selector in selectors:
        selector = selector.strip().upper()
        if not selector:
            continue
        if not any(_matches(rule.code, selector) for rule in ALL_RULES):
            raise SettingsError(f"unknown rule selector {selector!r}")
        checked.append(selector)
    return checked


def select_rules(
    select: Iterable[str] = (), extend_select: Iterable[str] = (), ignore: Iterable[str] = ()
) -> frozenset[str]:
    """The codes to report: the defaults (or --select), plus --extend-select, minus --ignore."""
    chosen = _check_selectors(select)
    extra = _check_selectors(extend_select)
    dropped = _check_selectors(ignore)
    if chosen:
        codes = {r.code for r in ALL_RULES if any(_matches(r.code, s) for s in chosen)}
    else:
        codes = {r.code for r in ALL_RULES if r.enabled_by_default}
    codes |= {r.code for r in ALL_RULES if any(_matches(r.code, s) for s in extra)}
    codes -= {r.code for r in ALL_RULES if any(_matches(r.code, s) for s in dropped)}
    return frozenset(codes)


@dataclass(frozen=True)
class Settings:
    policy: Policy = Policy()
    selected: frozenset[str] = frozenset()

    @classmethod
    def default(cls) -> Settings:
        return cls(Policy(), select_rules())
