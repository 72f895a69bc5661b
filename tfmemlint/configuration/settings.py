"""What a run was asked to do: the fix policy and the rule selection. The rule table comes from
the caller (the registry, `tfmemlint.rules.ALL_RULES`), which sits above this layer."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from tfmemlint.configuration.config_files import FileConfig
from tfmemlint.model import Rule


class SettingsError(ValueError):
    """A bad option value; the CLI turns it into a usage error (exit 2)."""


GUEST_FIXES = ("hide", "growth")
KERAS_BACKENDS = ("tensorflow", "jax", "torch", "numpy", "openvino")


class Policy(NamedTuple):
    """How a fix limits memory: `growth`, or a cap of `fraction` of the GPU's total memory;
    what it does where TensorFlow is a guest in a JAX or PyTorch program (`hide` its GPUs, or
    the `growth` policy); the Keras backend the environment gives, when the configuration
    says (None: Keras's own default, unless the code sets one); and whether JAX preallocates
    there (False: the shell sets `XLA_PYTHON_CLIENT_PREALLOCATE=false` or a fraction)."""

    fraction: float | None = None
    guest: str = "hide"
    keras_backend: str | None = None
    jax_preallocate: bool = True

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

    def with_environment(
        self, guest: str | None, keras_backend: str | None, jax_preallocate: bool = True
    ) -> Policy:
        """This policy with the guest fix, the Keras backend and JAX's preallocation checked
        and set."""
        if guest is not None and guest not in GUEST_FIXES:
            raise SettingsError(f"unknown guest policy {guest!r}: use 'hide' or 'growth'")
        if keras_backend is not None and keras_backend not in KERAS_BACKENDS:
            known = ", ".join(KERAS_BACKENDS)
            raise SettingsError(f"unknown keras-backend {keras_backend!r}: use one of {known}")
        return self._replace(
            guest=guest or "hide", keras_backend=keras_backend, jax_preallocate=jax_preallocate
        )

    def __str__(self) -> str:
        text = "growth" if self.fraction is None else f"fraction={self.fraction!r}"
        if self.guest != "hide":
            text += f";guest={self.guest}"
        if self.keras_backend is not None:
            text += f";keras-backend={self.keras_backend}"
        if not self.jax_preallocate:
            text += ";jax-preallocate=false"
        return text


def _matches(code: str, selector: str) -> bool:
    return selector == "ALL" or code.startswith(selector)


def _check_selectors(rules: Sequence[Rule], selectors: Iterable[str]) -> list[str]:
    checked = []
    for selector in selectors:
        selector = selector.strip().upper()
        if not selector:
            continue
        if not any(_matches(rule.code, selector) for rule in rules):
            raise SettingsError(f"unknown rule selector {selector!r}")
        checked.append(selector)
    return checked


def codes_matching(rules: Sequence[Rule], selectors: Iterable[str]) -> frozenset[str]:
    """Every code of `rules` that one of the selectors (codes or prefixes) names."""
    chosen = _check_selectors(rules, selectors)
    return frozenset(r.code for r in rules if any(_matches(r.code, s) for s in chosen))


def select_rules(
    rules: Sequence[Rule],
    select: Iterable[str] = (),
    extend_select: Iterable[str] = (),
    ignore: Iterable[str] = (),
) -> frozenset[str]:
    """The codes of `rules` to report: the defaults (or --select), plus --extend-select, minus
    --ignore."""
    chosen = codes_matching(rules, select)
    if not chosen:
        chosen = frozenset(r.code for r in rules if r.enabled_by_default)
    return (chosen | codes_matching(rules, extend_select)) - codes_matching(rules, ignore)


class Settings(NamedTuple):
    policy: Policy = Policy()
    selected: frozenset[str] = frozenset()
    # glob -> codes, relative to `root` (the configuration file's folder).
    per_file_ignores: tuple[tuple[str, frozenset[str]], ...] = ()
    root: str = "."
    # The configuration file's folder, when there is one: where imports stop being looked for.
    config_root: str | None = None
    # Report a program that a launch file configures too (`--show-launched`), naming the file.
    show_launched: bool = False
    # Launch files (absolute paths) whose environment every program of the project runs under.
    launch_environment: tuple[str, ...] = ()

    @classmethod
    def default(cls, rules: Sequence[Rule]) -> Settings:
        """The growth policy and the rules on by default."""
        return cls(Policy(), select_rules(rules))

    def for_file(self, filename: str) -> Settings:
        """The settings for one file, its per-file-ignores taken out of the selection."""
        if not self.per_file_ignores:
            return self
        relative = os.path.relpath(os.path.abspath(filename), self.root).replace(os.sep, "/")
        dropped: set[str] = set()
        for pattern, codes in self.per_file_ignores:
            if fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(
                os.path.basename(relative), pattern
            ):
                dropped |= codes
        return self._replace(selected=self.selected - dropped) if dropped else self


def build(
    file_config: FileConfig,
    rules: Sequence[Rule],
    policy: str | None,
    select: Sequence[str],
    extend_select: Sequence[str],
    ignore: Sequence[str],
    guest_policy: str | None = None,
    show_launched: bool | None = None,
) -> Settings:
    """Command-line options over the configuration file over the defaults. --select replaces the
    file's selection; --extend-select and --ignore add to the file's."""
    where = f"{file_config.path}: " if file_config.path else ""
    try:
        chosen_policy = Policy.parse(
            policy or file_config.get("policy", "growth")
        ).with_environment(
            guest_policy or file_config.get("guest-policy"),
            file_config.get("keras-backend"),
            file_config.get("jax-preallocate", True),
        )
        selected = select_rules(
            rules,
            list(select) or file_config.get("select", []),
            [*file_config.get("extend-select", []), *extend_select],
            [*file_config.get("ignore", []), *ignore],
        )
        per_file = tuple(
            (pattern, codes_matching(rules, codes))
            for pattern, codes in file_config.get("per-file-ignores", {}).items()
        )
    except SettingsError as exc:
        raise SettingsError(f"{where}{exc}") from None
    config_root = file_config.root if file_config.path else None
    launch_environment = tuple(
        os.path.join(file_config.root, path) for path in file_config.get("launch-environment", [])
    )
    return Settings(
        chosen_policy,
        selected,
        per_file,
        file_config.root,
        config_root,
        file_config.get("show-launched", False) if show_launched is None else show_launched,
        launch_environment,
    )
