"""This family's part of the pre-filter's second stage, told from CPython's syntax tree: a
module that sets none of JAX's allocator variables and imports neither JAX nor Keras holds
nothing it reports of its own (its words were `_jaxcode`, `use_jax`, a docstring's). Whether
such a module reaches JAX through the project is the pre-filter's own question, asked of
every module this sets aside (`prefilter.prefilter_verdict`)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from tfmemlint.project.module_summary import imports_in_tree
from tfmemlint.rules.jax_allocator import VARIABLES_PREFIX
from tfmemlint.rules.programs import JAX_MODULES, KERAS_IMPORTERS

if TYPE_CHECKING:
    from tfmemlint.checking.prefilter import ScreenedFile

# TFM208 and TFM209 start from the module's first import of JAX, or of Keras where Keras runs
# on JAX (`check._jax_import`); any import of one, anywhere in the module, lets it through.
_STARTING_ROOTS = JAX_MODULES | KERAS_IMPORTERS


def may_find(tree: ast.Module, file: ScreenedFile) -> bool:
    """False for a module whose text holds no allocator variable's prefix (TFM210 and TFM211
    judge the settings of those variables, and a notebook's `%env` lines) and whose import
    statements name no package of JAX's or Keras's."""
    if VARIABLES_PREFIX in file.raw:
        return True
    return any(name.partition(".")[0] in _STARTING_ROOTS for name in imports_in_tree(tree))
