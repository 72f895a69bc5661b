"""The rule registry. Importing it is cheap: rule logic (and libcst) loads only for files that
pass the pre-filter, through each family's `checker` module path. What a family is lives in
`family.py`, which the families import instead of this module."""

from __future__ import annotations

import functools
import importlib

from tfmemlint.model import Rule
from tfmemlint.rules import jax_allocator, unconfigured_program
from tfmemlint.rules.family import RuleFamily, share_words

# The families, by their folders under `rules/`, in the order they run. Adding a family is
# adding its folder and one line here.
FAMILY_FOLDERS = (
    "session_config",
    "process_wide",
    "eager",
    "unconfigured_program",
    "keras_backend",
    "jax_allocator",
    "values",
    "whole_script",
    "file_errors",
)


# The families that read launch files (Dockerfiles, Compose, Kubernetes, shell, `.env`): their
# checkers take a `launch.context.LaunchContext`, never a Python file.
LAUNCH_FAMILY_FOLDERS = (
    "launch_values",
    "lookalike_variables",
    "settings_never_arrive",
    "tf_serving",
)


def _families(folders: tuple[str, ...]) -> tuple[RuleFamily, ...]:
    """Each folder's `FAMILY`: its rule pages and where its logic is (imported only for files
    that pass the pre-filter)."""
    return tuple(importlib.import_module(f"{__name__}.{folder}").FAMILY for folder in folders)


FAMILIES = _families(FAMILY_FOLDERS)
LAUNCH_FAMILIES = _families(LAUNCH_FAMILY_FOLDERS)
share_words(word for family in FAMILIES for word in (*family.triggers, *family.modules))
# In the order of their codes (a family's rules need not be neighbours: TFM206 is Keras's).
ALL_RULES: tuple[Rule, ...] = tuple(
    sorted(
        (rule for family in (*FAMILIES, *LAUNCH_FAMILIES) for rule in family.rules),
        key=lambda rule: rule.code,
    )
)
RULES_BY_CODE = {rule.code: rule for rule in ALL_RULES}
# The rules that say a program reserves the GPU, by the framework whose memory a launch file's
# environment may set up for it (`variables.configured_frameworks`).
PROGRAM_RULES = {
    "tensorflow": frozenset(
        rule.code
        for rule in (
            unconfigured_program.UNCONFIGURED_PROGRAM,
            unconfigured_program.GUEST_PROGRAM,
            unconfigured_program.KERAS_SESSION,
        )
    ),
    "jax": frozenset(
        rule.code for rule in (jax_allocator.SHARED_GPU_PREALLOCATION, jax_allocator.PREALLOCATION)
    ),
}


@functools.cache
def api_names() -> frozenset[str]:
    """The last component of every API a rule starts from (`Session`, `set_memory_growth`), and
    of the protos a config is built from: what the project index is handed."""
    names = {name.rpartition(".")[2] for family in FAMILIES for name in family.names}
    return frozenset({*names, "ConfigProto", "GPUOptions"})
