"""This family's part of the pre-filter's second stage, told from CPython's syntax tree: a
module whose JAX words are no import and no allocator variable (`_jaxcode`, `use_jax`, a
docstring's "jax") holds nothing the family reports, unless a project module it imports leads
to JAX."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import TYPE_CHECKING

from tfmemlint.project.module_summary import imports_in_tree
from tfmemlint.reading.source import SourceError, SourceText
from tfmemlint.rules.jax_allocator import VARIABLES_PREFIX
from tfmemlint.rules.programs import JAX_MODULES, JAX_WORDS, KERAS_IMPORTERS

if TYPE_CHECKING:
    from tfmemlint.checking.prefilter import ScreenedFile
    from tfmemlint.project.index import FileResolver

# TFM208 and TFM209 start from the module's first import of JAX, or of Keras where Keras runs
# on JAX (`check._jax_import`); any import of one, anywhere in the module, lets it through.
_STARTING_ROOTS = JAX_MODULES | KERAS_IMPORTERS


def may_find(tree: ast.Module, file: ScreenedFile) -> bool:
    """False for a Python module (not a notebook, whose `%env` lines are no longer in its
    code's bytes) whose text holds no allocator variable's prefix (TFM210 and TFM211 judge
    those variables' settings), whose import statements name no package of JAX's or Keras's,
    and none of whose imports of project modules leads to a module that imports JAX."""
    if file.notebook or _holds_a_variable(file.raw):
        return True
    imported = set(imports_in_tree(tree))
    if any(name.partition(".")[0] in _STARTING_ROOTS for name in imported):
        return True
    project = file.project()
    return project is not None and _leads_to_jax(project, imported)


def _holds_a_variable(raw: bytes) -> bool:
    """Whether the module's text holds an allocator variable's prefix, read in its declared
    encoding too (UTF-7 spells `_` otherwise); one that cannot be read goes on, for the
    engine to report."""
    if VARIABLES_PREFIX in raw:
        return True
    try:
        return VARIABLES_PREFIX.decode() in SourceText.decode(raw).text
    except SourceError:
        return True


def _leads_to_jax(project: FileResolver, imported: Iterable[str]) -> bool:
    """TFM208 follows a program into each project module it imports, as far as the modules
    that one imports in turn (`check._preallocation_through_the_project`): a walk from each
    module an import runs (`pkg/__init__.py`, then `pkg/mod.py`), each its own, and from the
    module the rule itself starts at for that import (`module_of`, which for a relative name
    may be none of those), covers the rule's."""
    starts: set[str] = set()
    for name in imported:
        starts.update(project.modules_run(name))
        start = project.module_of(name)
        if start is not None:
            starts.add(start)
    return any(project.leads_to_words(path, JAX_WORDS) for path in sorted(starts))
