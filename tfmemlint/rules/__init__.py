"""The rule registry. Importing it is cheap: rule logic (and libcst) loads only for files that
pass the pre-filter, through each family's `checker` module path. What a family is lives in
`family.py`, which the families import instead of this module."""

from __future__ import annotations

import functools

from tfmemlint.model import Rule
from tfmemlint.rules.family import RuleFamily


def _families() -> tuple[RuleFamily, ...]:
    from tfmemlint.rules import (
        eager,
        file_errors,
        jax_allocator,
        keras_backend,
        process_wide,
        session_config,
        unconfigured_program,
        values,
        whole_script,
    )

    return (
        session_config.FAMILY,
        process_wide.FAMILY,
        eager.FAMILY,
        unconfigured_program.FAMILY,
        keras_backend.FAMILY,
        jax_allocator.FAMILY,
        values.FAMILY,
        whole_script.FAMILY,
        file_errors.FAMILY,
    )


FAMILIES = _families()
# In the order of their codes (a family's rules need not be neighbours: TFM206 is Keras's).
ALL_RULES: tuple[Rule, ...] = tuple(
    sorted((rule for family in FAMILIES for rule in family.rules), key=lambda rule: rule.code)
)
RULES_BY_CODE = {rule.code: rule for rule in ALL_RULES}


@functools.cache
def api_names() -> frozenset[str]:
    """The last component of every API a rule starts from (`Session`, `set_memory_growth`), and
    of the protos a config is built from: what the project index is handed."""
    names = {name.rpartition(".")[2] for family in FAMILIES for name in family.names}
    return frozenset({*names, "ConfigProto", "GPUOptions"})
