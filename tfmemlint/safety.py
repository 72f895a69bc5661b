"""The safety net before any write, black's habit: the fixed text must parse, and its syntax tree
must equal the original's once the things a fix adds are set aside. Any other difference means
a fix went wrong, and nothing is written.

What a fix may add or change, and what is set aside on both sides before comparing:
- the keywords fixes pass (`config=`, `session_config=`, `gpu_options=`, `session_creator=`,
  `allow_growth=`, `per_process_gpu_memory_fraction=`, `gpu_memory_fraction=`);
- statements that set `allow_growth` or a memory fraction on a variable;
- `from tensorflow.core.protobuf import config_pb2`;
- statements that call `set_memory_growth` (the growth loops);
- the value given to TF_FORCE_GPU_ALLOW_GROWTH.
Statement order inside a block is not compared, since TFM203's fix moves configuration up; every
statement must still be there, once, and unchanged.
"""

from __future__ import annotations

import ast

FIX_KEYWORDS = frozenset(
    {
        "config",
        "session_config",
        "gpu_options",
        "session_creator",
        "allow_growth",
        "per_process_gpu_memory_fraction",
        "gpu_memory_fraction",
    }
)
_FORCE_GROWTH = "TF_FORCE_GPU_ALLOW_GROWTH"
_BLOCK_FIELDS = ("body", "orelse", "finalbody", "handlers")


class UnsafeFixError(Exception):
    """The fixed text failed the safety check; nothing may be written."""


def _mentions(node: ast.AST, value: str) -> bool:
    return any(isinstance(n, ast.Constant) and n.value == value for n in ast.walk(node))


def _added_by_a_fix(statement: ast.stmt) -> bool:
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        target = statement.targets[0]
        if isinstance(target, ast.Attribute) and target.attr in (
            "allow_growth",
            "per_process_gpu_memory_fraction",
        ):
            return True
    if isinstance(statement, ast.ImportFrom) and statement.module == "tensorflow.core.protobuf":
        return [alias.name for alias in statement.names] == ["config_pb2"]
    return any(
        isinstance(node, ast.Attribute) and node.attr == "set_memory_growth"
        for node in ast.walk(statement)
    )


class _Normalizer(ast.NodeTransformer):
    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        node.keywords = [k for k in node.keywords if k.arg not in FIX_KEYWORDS]
        if any(isinstance(a, ast.Constant) and a.value == _FORCE_GROWTH for a in node.args):
            node.args = [a for a in node.args if not isinstance(a, ast.Constant)]
        return node

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        self.generic_visit(node)
        if any(_mentions(target, _FORCE_GROWTH) for target in node.targets):
            node.value = ast.Constant(None)
        return node

    def visit_Dict(self, node: ast.Dict) -> ast.AST:
        self.generic_visit(node)
        node.values = [
            ast.Constant(None)
            if isinstance(key, ast.Constant) and key.value == _FORCE_GROWTH
            else value
            for key, value in zip(node.keys, node.values, strict=True)
        ]
        return node

    def generic_visit(self, node: ast.AST) -> ast.AST:
        blocks = _blocks(node)
        for name in blocks:  # before descending: a growth loop is set aside whole
            kept = [s for s in getattr(node, name) if not _added_by_a_fix(s)]
            # An emptied block (`if gpus:` around a growth call) keeps one placeholder.
            setattr(node, name, kept or [ast.Pass()])
        return super().generic_visit(node)


def _blocks(node: ast.AST) -> list[str]:
    return [
        name
        for name in _BLOCK_FIELDS
        if isinstance(getattr(node, name, None), list)
        and getattr(node, name)
        and isinstance(getattr(node, name)[0], ast.stmt)
    ]


def _sort_blocks(tree: ast.AST) -> ast.AST:
    """Every block's statements in a canonical order, innermost blocks first."""
    for node in reversed(list(ast.walk(tree))):  # children before their parents
        for name in _blocks(node):
            setattr(node, name, sorted(getattr(node, name), key=ast.dump))
    return tree


def _normalized(text: str) -> ast.AST:
    return _Normalizer().visit(ast.parse(text))


def check(original: str, fixed: str) -> None:
    """Raise UnsafeFixError unless `fixed` parses and differs from `original` only by fixes."""
    try:
        before = _normalized(original)
    except (SyntaxError, ValueError, RecursionError):
        return  # this Python cannot parse the original (newer syntax); libcst re-parsed it
    try:
        after = _normalized(fixed)
    except (SyntaxError, ValueError) as exc:
        raise UnsafeFixError(f"the fixed text does not parse: {exc}") from None
    except RecursionError:
        return
    try:
        if ast.dump(before) == ast.dump(after):
            return  # the usual case: no fix moved a statement
        if ast.dump(_sort_blocks(before)) == ast.dump(_sort_blocks(after)):
            return
    except RecursionError:
        return
    raise UnsafeFixError("the fix changed code outside the nodes it meant to change")
