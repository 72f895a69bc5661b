"""This family's part of the pre-filter's second stage, told from CPython's syntax tree: a
module whose JAX words are no import and no allocator variable (`_jaxcode`, `use_jax`, a
docstring's "jax") holds nothing the family reports, unless a project module it imports leads
to JAX; nor does one that sets no allocator variable and is no program (a library's module),
since TFM208 and TFM209 report programs only."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import TYPE_CHECKING

from tfmemlint.project.module_summary import imports_in_tree
from tfmemlint.rules.jax_allocator import VARIABLES_PREFIX
from tfmemlint.rules.programs import JAX_MODULES, JAX_WORDS, KERAS_IMPORTERS
from tfmemlint.rules.variables import JAX_VARIABLES

if TYPE_CHECKING:
    from tfmemlint.checking.prefilter import ScreenedFile
    from tfmemlint.project.index import FileResolver

# TFM208 and TFM209 start from the module's first import of JAX, or of Keras where Keras runs
# on JAX (`check._jax_import`); any import of one, anywhere in the module, lets it through.
_STARTING_ROOTS = JAX_MODULES | KERAS_IMPORTERS
_VARIABLES_PREFIX = VARIABLES_PREFIX.decode()


def may_find(tree: ast.Module, file: ScreenedFile) -> bool:
    """False for a Python module (not a notebook, whose `%env` lines are no longer in its
    code's bytes, and which is always a program) that sets none of JAX's allocator variables
    (TFM210 and TFM211 judge those settings), and either is surely no program (TFM208 and
    TFM209 start only from one: `check._preallocation`), or has no import statement that names
    a package of JAX's or Keras's and no import of a project module that leads to a module
    that imports JAX."""
    if file.notebook:
        return True
    text = file.text
    if text is None or _may_set_a_variable(tree, text):
        return True  # the tree may not spell the text the rule reads, or none can be read
    imported = set(imports_in_tree(tree))
    if not any(name.partition(".")[0] in _STARTING_ROOTS for name in imported):
        project = file.project()
        if project is None or not _leads_to_jax(project, imported):
            return False
    return _may_be_a_program(tree, text, file)


def _may_be_a_program(tree: ast.Module, text: str, file: ScreenedFile) -> bool:
    """Whether `entry_points.entry_point` may take the module for an entry point: as the
    screen of entry points tells (`entry_screen.may_be_an_entry`), or where a script entry
    of pyproject.toml runs one of its functions, which that screen leaves to its caller."""
    # Here, not at the top: a module with no way to JAX never needs it.
    from tfmemlint.rules.entry_screen import may_be_an_entry, names_as_written

    if not names_as_written(text):
        return True  # CPython's tree may spell a name otherwise than the rule reads it
    if may_be_an_entry(tree, text, file.project):
        return True
    project = file.project()
    return project is not None and bool(project.script_functions())


def _may_set_a_variable(tree: ast.Module, text: str) -> bool:
    """Whether the module may set an allocator variable as the rule reads a setting: by a
    string literal or a keyword that is the variable's name, in a text that holds its prefix
    (`check.check` looks no further without it). TensorFlow's `XLA_FLAGS` and `"XLA_COMPILE"`
    set none. Where the prefix is there but no name is spelled out, a literal may still spell
    one with escapes: CPython's tree, whose strings are their values, has the last word."""
    if _VARIABLES_PREFIX not in text:
        return False
    if any(name in text for name in JAX_VARIABLES):
        return True
    return any(
        (isinstance(node, ast.Constant) and node.value in JAX_VARIABLES)
        or (isinstance(node, ast.keyword) and node.arg in JAX_VARIABLES)
        for node in ast.walk(tree)
    )


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
