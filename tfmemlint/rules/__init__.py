"""The rule registry. Importing it is cheap: rule logic (and libcst) loads only for files that
pass the pre-filter, through each family's `checker` module path."""

from __future__ import annotations

from dataclasses import dataclass

from tfmemlint.model import Rule


@dataclass(frozen=True)
class RuleFamily:
    rules: tuple[Rule, ...]
    # Byte strings of which a file must contain at least one before this family can find anything.
    triggers: tuple[bytes, ...] = ()
    # "module:function" run on every parsed file; None for families the engine reports itself.
    checker: str | None = None


def _families() -> tuple[RuleFamily, ...]:
    from tfmemlint.rules import (
        eager,
        file_errors,
        process_wide,
        session_config,
        values,
        whole_script,
    )

    return (
        session_config.FAMILY,
        process_wide.FAMILY,
        eager.FAMILY,
        values.FAMILY,
        whole_script.FAMILY,
        file_errors.FAMILY,
    )


FAMILIES = _families()
ALL_RULES: tuple[Rule, ...] = tuple(rule for family in FAMILIES for rule in family.rules)
RULES_BY_CODE = {rule.code: rule for rule in ALL_RULES}
