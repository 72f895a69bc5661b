"""TFM205's part of the pre-filter's second stage: TF1 code and modules that are no program,
which the rule never reports, told from CPython's syntax tree (a tenth of libcst's parse). It
asks what `check._tf1_code` asks, of the same spellings, so that a module it sets aside is one
the rule would set aside too; whether a module may be a program, `entry_screen` tells."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from tfmemlint.project.module_summary import dotted, imported_names
from tfmemlint.rules import starters
from tfmemlint.rules.entry_screen import (
    may_be_an_entry,
    may_be_main_guard,
    names_as_written,
    runs_at_import,
)

if TYPE_CHECKING:
    from tfmemlint.checking.prefilter import ScreenedFile

# Turn TF2 into TF1 for the process: ops build a graph, and only a session reserves memory.
GRAPH_MODE = frozenset({"disable_eager_execution", "disable_v2_behavior"})

# Names TF1's top level has and TF2's has not (TF2 moved them under compat.v1, or dropped them):
# code that spells `tf.placeholder` is TF1 code, where ops reserve nothing until a session,
# and where `tf.config.list_physical_devices` of the fix does not exist before TF 2.1.
# A curated few of the 350: tests/test_unconfigured_program.py checks each against the
# installed TensorFlow.
TF1_ONLY_NAMES = frozenset(
    {
        "contrib",
        "Session",
        "InteractiveSession",
        "ConfigProto",
        "GPUOptions",
        "placeholder",
        "placeholder_with_default",
        "get_variable",
        "variable_scope",
        "global_variables_initializer",
        "local_variables_initializer",
        "get_default_graph",
        "reset_default_graph",
        "set_random_seed",
        "app",
        "flags",
        "gfile",
        "logging",
        "layers",
        "python_io",
        "GraphKeys",
        "get_collection",
        "add_to_collection",
        "trainable_variables",
        "global_variables",
        "truncated_normal",
        "random_normal",
        "random_uniform",
        "to_float",
        "to_int32",
        "log",
        "disable_v2_behavior",
        "enable_eager_execution",
    }
)

TENSORFLOW = "tensorflow"
TF1_COMPAT = "tensorflow.compat.v1"
TF2_COMPAT = "tensorflow.compat.v2"
# What a plain TensorFlow is imported as.
_PLAIN = (TENSORFLOW, TF2_COMPAT)
# TF1's add-ons, which TF2 dropped: a module that imports from them runs on TF1.
CONTRIB = "tensorflow.contrib"


def may_find(tree: ast.Module, file: ScreenedFile) -> bool:
    """False for a module with no import of TensorFlow, Keras or a library that starts
    TensorFlow (`starters.py`) in its body, where the rule has no place to start from; for
    TF1 code (see `tf1_code`) that never mentions Keras (TFM212 looks at the rest); and for a
    module that is surely no entry point (see
    `may_be_an_entry`)."""
    text = file.text
    if text is None:
        return True  # the tree may not spell the text the rule reads, or none can be read
    anchored = False
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 0:
            module = node.module or ""
            anchored = anchored or any(
                _anchors(f"{module}.{alias.name}", file.raw) for alias in node.names
            )
        elif isinstance(node, ast.Import):
            anchored = anchored or any(_anchors(alias.name, file.raw) for alias in node.names)
    if not anchored and not (b"tensorflow" in file.raw and _imports_tensorflow_inside(tree)):
        return False
    if not names_as_written(text):
        return True
    # The entry point first: most modules that get this far are libraries, and it looks at
    # less of the tree.
    if not (file.notebook or may_be_an_entry(tree, text, file.project)):
        return False
    # TF1 code: TFM212 looks at it where Keras may make its own session.
    return not tf1_code(tree) or b"keras" in file.raw


def _imports_tensorflow_inside(tree: ast.Module) -> bool:
    """Whether a function of the module imports TensorFlow (`def main(): import tensorflow`):
    the rule's finding is at that import."""
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    for function in (node for node in ast.walk(tree) if isinstance(node, functions)):
        for inner in ast.walk(function):
            if isinstance(inner, ast.ImportFrom) and inner.level == 0:
                imported = [inner.module or ""]
            elif isinstance(inner, ast.Import):
                imported = [alias.name for alias in inner.names]
            else:
                continue
            if any(name.split(".")[0] == TENSORFLOW for name in imported):
                return True
    return False


def _anchors(imported: str, raw: bytes) -> bool:
    """Whether importing `imported` may be where the rule's fix goes: TensorFlow itself, Keras
    (on whichever backend: the rule reads it), or a library that starts TensorFlow."""
    root = imported.split(".")[0]
    if root in (TENSORFLOW, "keras"):
        return True
    # Only transformers' answer reads the text, and only its TF classes' spelling.
    return starters.imports_tensorflow(imported, ".TF" if b".TF" in raw else "")


def tf1_code(tree: ast.Module) -> bool:
    """A name only TF1's top level has, on a plain `import tensorflow` or on `import
    tensorflow.compat.v1 as tf` (or as the module's only TensorFlow), an import from
    `tensorflow.contrib`, or a call that turns TF2 off. Said only
    where `check._tf1_code` says it too: a name stands for TensorFlow only where nothing else
    binds it anywhere in the module (a parameter, an assignment, another import), and every
    import of TensorFlow counts against "the module's only TensorFlow", wherever it is."""
    plain, compat = _aliases(tree)
    if _imports_contrib(tree):
        return True
    aliases = plain | set(compat)
    # `compat.v1` as the module's TensorFlow runs eagerly under TF2 unless the module builds a
    # graph: its TF1-only names count as those on a plain import do.
    spelled = plain | set(compat) if _tf1_imports(plain, compat) else plain
    # The walk for bindings only where the answer may be yes: most modules that get here
    # are TF2 code.
    if not _runs_tf1(tree, spelled, aliases):
        return False
    elsewhere, _ = _other_bindings(tree)
    sure = aliases - elsewhere
    return _runs_tf1(tree, spelled & sure, sure)


def _imports_contrib(tree: ast.Module) -> bool:
    """A name of `tensorflow.contrib` bound in the module's body: `from tensorflow.contrib.x
    import y`, `import tensorflow.contrib.slim as slim` (a bare `import tensorflow.contrib`
    binds only `tensorflow`, and a star import binds no name the rule could see)."""
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 0:
            module = node.module or ""
            if in_contrib(module) and all(alias.name != "*" for alias in node.names):
                return True
        elif isinstance(node, ast.Import) and any(
            alias.asname and in_contrib(alias.name) for alias in node.names
        ):
            return True
    return False


def in_contrib(module: str) -> bool:
    return module == CONTRIB or module.startswith(CONTRIB + ".")


def tf1_definition(tree: ast.Module, name: str) -> bool:
    """Whether the module's top-level function or class `name` runs TF1 code: it spells a
    name only TF1 has, turns TF2 off, or, in a module whose TensorFlow is TF1's, uses it."""
    plain, compat = _aliases(tree)
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    found = next((n for n in tree.body if isinstance(n, kinds) and n.name == name), None)
    if found is None:
        return False
    if _tf1_imports(plain, compat):
        tf1 = set(compat) | plain
        return any(isinstance(n, ast.Name) and n.id in tf1 for n in ast.walk(found))
    return _runs_tf1(found, plain, plain | set(compat))


def tf1_at_import(tree: ast.Module) -> bool:
    """Whether importing a module of TF1 code (`tf1_code`) runs it: its import-time code makes
    a session, turns TF2 off, or calls a function or class of its own that runs TF1 code
    (`load_session()`, which hands Keras a `tf.Session`)."""
    plain, compat = _aliases(tree)
    tensorflow = plain | set(compat)
    # What runs as it is imported: not its `__main__` guard.
    imported = ast.Module([s for s in tree.body if not may_be_main_guard(s)], [])
    called: set[str] = set()
    for node in runs_at_import(imported):
        if not isinstance(node, ast.Call):
            continue
        spelled = (dotted(node.func) or "").split(".")
        if spelled[0] in tensorflow and spelled[-1] in _TF1_AT_IMPORT:
            return True  # `tf.Session()`, `tf.compat.v1.disable_eager_execution()`
        if isinstance(node.func, ast.Name):
            called.add(node.func.id)
    return any(tf1_definition(tree, name) for name in sorted(called))


_TF1_AT_IMPORT = GRAPH_MODE | {"Session", "InteractiveSession"}


def _aliases(tree: ast.Module) -> tuple[set[str], list[str]]:
    """The names the module's body binds to TensorFlow (or its `compat.v2`), and to
    `compat.v1`, by an `import` statement."""
    plain: set[str] = set()
    compat: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            for name, qualified in imported_names(node):  # `import tensorflow.x` too
                if qualified in _PLAIN:
                    plain.add(name)
                elif qualified == TF1_COMPAT:
                    compat.append(name)
    return plain, compat


# Type parameters (Python 3.12), which bind names too.
_TYPE_PARAMS = tuple(
    getattr(ast, kind) for kind in ("TypeVar", "ParamSpec", "TypeVarTuple") if hasattr(ast, kind)
)


def _other_bindings(tree: ast.Module) -> tuple[set[str], set[str]]:
    """(the names bound anywhere by anything but the imports `_aliases` counts, the names any
    import anywhere binds to TensorFlow or its `compat.v2`)."""
    counted = {id(node) for node in tree.body if isinstance(node, ast.Import)}  # `_aliases`
    elsewhere: set[str] = set()
    plain: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if not isinstance(node.ctx, ast.Load):
                elsewhere.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for name, qualified in imported_names(node):
                if qualified in _PLAIN:
                    plain.add(name)
                if id(node) not in counted or qualified not in (*_PLAIN, TF1_COMPAT):
                    elsewhere.add(name)
        elif isinstance(node, ast.arg):
            elsewhere.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            elsewhere.add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            elsewhere.update(node.names)
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar, *_TYPE_PARAMS)):
            if node.name is not None:
                elsewhere.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest is not None:
            elsewhere.add(node.rest)
    return elsewhere, plain


def _tf1_imports(plain: set[str], compat: list[str]) -> bool:
    """TF1's API as the module's `tf`, or as its only TensorFlow."""
    return "tf" in compat or bool(compat and not plain)


def _runs_tf1(node: ast.AST, plain: set[str], aliases: set[str]) -> bool:
    for child in ast.walk(node):
        if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute):
            if child.func.attr in GRAPH_MODE and _top_level_of(child.func.value, aliases):
                return True
        elif _spells_tf1(child, plain):
            return True
    return False


def _top_level_of(receiver: ast.expr, aliases: set[str]) -> bool:
    """`tf` or `tf.compat.v1`, with `tf` one of `aliases`: where the calls of GRAPH_MODE
    are (`tensorflow_api.canonical_api` reads `tf.random.disable_v2_behavior` as another API)."""
    if (
        isinstance(receiver, ast.Attribute)
        and receiver.attr == "v1"
        and isinstance(receiver.value, ast.Attribute)
        and receiver.value.attr == "compat"
    ):
        receiver = receiver.value.value
    return isinstance(receiver, ast.Name) and receiver.id in aliases


def _spells_tf1(node: ast.AST, plain: set[str]) -> bool:
    """`tf.placeholder` on a plain `import tensorflow as tf`."""
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in plain
        and node.attr in TF1_ONLY_NAMES
    )


def _rooted_in(node: ast.expr, names: set[str]) -> bool:
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name) and node.id in names


def calls_tensorflow_at_import(tree: ast.Module) -> bool:
    """Whether a module may call TensorFlow as it is imported: a call, outside any function
    body, of a name under one of its TensorFlow or Keras imports. (A module imported before
    the program's own `import tensorflow` that does may start the runtime there, where a fix
    after that import would come too late.)"""
    roots = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            module = node.module or "" if isinstance(node, ast.ImportFrom) else ""
            for alias in node.names:
                name = alias.name if isinstance(node, ast.Import) else module
                if name.split(".")[0] in (TENSORFLOW, "keras"):
                    roots.add(alias.asname or alias.name.split(".")[0])
    return any(
        isinstance(node, ast.Call) and _rooted_in(node.func, roots) for node in runs_at_import(tree)
    )
