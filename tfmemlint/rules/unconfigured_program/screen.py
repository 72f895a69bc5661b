"""TFM205's part of the pre-filter's second stage: TF1 code, which the rule never reports, told
from CPython's syntax tree (a tenth of libcst's parse). It asks what `check._tf1_code` asks, of
the same spellings, so that a module it sets aside is one the rule would set aside too."""

from __future__ import annotations

import ast

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
# TF1's add-ons, which TF2 dropped: a module that imports from them runs on TF1.
CONTRIB = "tensorflow.contrib"


def may_find(tree: ast.Module) -> bool:
    """False for a module with no import of TensorFlow in its body, where the rule has no
    place to start from, and for TF1 code (see `tf1_code`)."""
    anchored = False
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 0:
            anchored = anchored or (node.module or "").split(".")[0] == TENSORFLOW
        elif isinstance(node, ast.Import):
            anchored = anchored or any(a.name.split(".")[0] == TENSORFLOW for a in node.names)
    return anchored and not tf1_code(tree)


def tf1_code(tree: ast.Module) -> bool:
    """`import tensorflow.compat.v1 as tf` (or as the module's only TensorFlow), a name only
    TF1's top level has on a plain `import tensorflow`, or a call that turns TF2 off."""
    plain, compat = _aliases(tree)
    return (
        _tf1_imports(plain, compat)
        or _imports_contrib(tree)
        or _runs_tf1(tree, plain, plain | set(compat))
    )


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


def _aliases(tree: ast.Module) -> tuple[set[str], list[str]]:
    """The names the module binds to TensorFlow (or its `compat.v2`), and to `compat.v1`."""
    plain: set[str] = set()
    compat: list[str] = []
    for node in tree.body:
        if not isinstance(node, ast.Import):
            continue
        for alias in node.names:
            if alias.asname is None and alias.name.split(".")[0] == TENSORFLOW:
                plain.add(TENSORFLOW)  # `import tensorflow.x` binds `tensorflow`
            elif alias.asname is not None and alias.name in (TENSORFLOW, TF2_COMPAT):
                plain.add(alias.asname)
            elif alias.asname is not None and alias.name == TF1_COMPAT:
                compat.append(alias.asname)
    return plain, compat


def _tf1_imports(plain: set[str], compat: list[str]) -> bool:
    """TF1's API as the module's `tf`, or as its only TensorFlow."""
    return "tf" in compat or bool(compat and not plain)


def _runs_tf1(node: ast.AST, plain: set[str], aliases: set[str]) -> bool:
    for child in ast.walk(node):
        if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute):
            if child.func.attr in GRAPH_MODE and _rooted_in(child.func, aliases):
                return True
        elif _spells_tf1(child, plain):
            return True
    return False


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
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            # Its body runs when called; its decorators and defaults run now.
            pending.extend(getattr(node, "decorator_list", []))
            pending.extend(node.args.defaults)
            pending.extend(d for d in node.args.kw_defaults if d is not None)
            continue
        if isinstance(node, ast.Call) and _rooted_in(node.func, roots):
            return True
        pending.extend(ast.iter_child_nodes(node))
    return False
