"""The safety net before any write, black's habit: the fixed text must parse, and its syntax tree
must equal the original's once the things a fix adds are set aside. Any other difference means
a fix went wrong, and nothing is written.

What a fix may add or change, and what is set aside on both sides before comparing:
- the keywords fixes pass (`config=`, `session_config=`, `gpu_options=`, `session_creator=`,
  `allow_growth=`, `per_process_gpu_memory_fraction=`, `gpu_memory_fraction=`);
- statements that set `allow_growth` or a memory fraction on a variable;
- `from tensorflow.core.protobuf import config_pb2`, and `import tensorflow as tf` (TFM205's
  fix, in a module that imports only parts of TensorFlow);
- statements that call `set_memory_growth` (the growth loops, which may hold the
  `import tensorflow as tf` that comes with them), and TFM207's `try` that hides every GPU
  from TensorFlow, exactly as that fix writes it;
- the value given to TF_FORCE_GPU_ALLOW_GROWTH or XLA_PYTHON_CLIENT_PREALLOCATE;
- a command-line flag's boolean default (`DEFINE_bool`, `add_argument`, click's `option`), which
  the fix of a setting behind an off-by-default flag turns on;
- at module level only, and only as statements the fixed text has more of than the original:
  `import os`, and `os.environ.setdefault(...)` of one of the variables the fixes set before an
  import (JAX's preallocation and fraction, TF_FORCE_GPU_ALLOW_GROWTH), to a literal. A fix
  never removes one, nor adds one in a function.
Statement order inside a block is not compared, since TFM203's fix moves configuration up; every
statement must still be there, once, and unchanged.
"""

from __future__ import annotations

import ast
import functools
from collections import Counter
from collections.abc import Callable, Iterable, Iterator

from tfmemlint.reading.recovery import Recovery
from tfmemlint.reading.source import LineIndex, parse_python

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
# The variables whose values a fix may change.
_FIXED_VALUES = ("TF_FORCE_GPU_ALLOW_GROWTH", "XLA_PYTHON_CLIENT_PREALLOCATE")
# The variables a fix may set, with `os.environ.setdefault`, before an import.
_SET_BEFORE_IMPORTS = frozenset(
    {"TF_FORCE_GPU_ALLOW_GROWTH", "XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_PYTHON_CLIENT_MEM_FRACTION"}
)
_BLOCK_FIELDS = ("body", "orelse", "finalbody", "handlers")


class UnsafeFixError(Exception):
    """The fixed text failed the safety check; nothing may be written."""


def _mentions(node: ast.AST, values: tuple[str, ...]) -> bool:
    return any(isinstance(n, ast.Constant) and n.value in values for n in ast.walk(node))


def _sets_before_imports(statement: ast.stmt) -> bool:
    """`os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")`, as the fixes write it."""
    call = statement.value if isinstance(statement, ast.Expr) else None
    return (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr == "setdefault"
        and isinstance(call.func.value, ast.Attribute)
        and call.func.value.attr == "environ"
        and isinstance(call.func.value.value, ast.Name)
        and call.func.value.value.id == "os"
        and not call.keywords
        and len(call.args) == 2
        and all(isinstance(arg, ast.Constant) and isinstance(arg.value, str) for arg in call.args)
        and call.args[0].value in _SET_BEFORE_IMPORTS  # type: ignore[attr-defined]
    )


def _added_by_a_fix(statement: ast.stmt, growth_calls: bool, hide_calls: bool = False) -> bool:
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        target = statement.targets[0]
        if isinstance(target, ast.Attribute) and target.attr in (
            "allow_growth",
            "per_process_gpu_memory_fraction",
        ):
            return True
    if isinstance(statement, ast.ImportFrom) and statement.module == "tensorflow.core.protobuf":
        return [alias.name for alias in statement.names] == ["config_pb2"]
    if isinstance(statement, ast.Import):
        return [(alias.name, alias.asname) for alias in statement.names] == [("tensorflow", "tf")]
    if hide_calls and _hides_gpus(statement):
        return True
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return False  # no fix adds one; its body's blocks are compared, growth loops aside
    return growth_calls and any(
        isinstance(node, ast.Attribute) and node.attr == "set_memory_growth"
        for node in ast.walk(statement)
    )


def _hides_gpus(statement: ast.stmt) -> bool:
    """TFM207's fix as it writes it, and nothing more: a `try` that hides every GPU from
    TensorFlow (after `import tensorflow as tf`, where it brings one), and passes on
    `RuntimeError` (and on `ImportError`, where it brings the import)."""
    if not isinstance(statement, ast.Try) or statement.orelse or statement.finalbody:
        return False
    *imports, call = statement.body
    [handler] = statement.handlers if len(statement.handlers) == 1 else [None]
    return (
        all(
            isinstance(i, ast.Import)
            and [(a.name, a.asname) for a in i.names] == [("tensorflow", "tf")]
            for i in imports
        )
        and len(imports) <= 1
        and isinstance(call, ast.Expr)
        and _hide_call(call.value)
        and handler is not None
        and _caught(handler.type) in (_CAUGHT_WITH_IMPORT if imports else _CAUGHT)
        and len(handler.body) == 1
        and isinstance(handler.body[0], ast.Pass)
    )


_CAUGHT = (("RuntimeError",),)
_CAUGHT_WITH_IMPORT = (("RuntimeError",), ("ImportError", "RuntimeError"))


def _caught(kind: ast.expr | None) -> tuple[str, ...] | None:
    """The names an `except` clause catches, where it names them plainly."""
    if isinstance(kind, ast.Name):
        return (kind.id,)
    if isinstance(kind, ast.Tuple) and all(isinstance(e, ast.Name) for e in kind.elts):
        return tuple(e.id for e in kind.elts)  # type: ignore[attr-defined]
    return None


def _hide_call(node: ast.AST) -> bool:
    """`....set_visible_devices([], "GPU")`."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "set_visible_devices"
        and len(node.args) == 2
        and isinstance(node.args[0], ast.List)
        and not node.args[0].elts
        and isinstance(node.args[1], ast.Constant)
        and node.args[1].value == "GPU"
    )


class _Normalizer:
    """Sets aside, in place, what a fix may add (see the module's docstring). A block loses
    such statements before its contents are visited: a growth loop goes whole."""

    def __init__(self, *texts: str) -> None:
        # Words neither text holds need no search through every statement's subtree.
        self.growth_calls = any("set_memory_growth" in text for text in texts)
        self.force_growth = any(name in text for text in texts for name in _FIXED_VALUES)
        self.hide_calls = any("set_visible_devices" in text for text in texts)

    def kept(self, node: ast.AST, block: list[ast.stmt]) -> list[ast.stmt]:
        """The statements of one of `node`'s blocks that no fix added, as they stand before
        they are visited."""
        kept = [s for s in block if not _added_by_a_fix(s, self.growth_calls, self.hide_calls)]
        # An emptied block (`if gpus:` around a growth call) keeps one placeholder; a module
        # needs none (its unchanged statements are set aside before this).
        return kept or ([] if isinstance(node, ast.Module) else [ast.Pass()])

    def visit(self, node: ast.AST) -> ast.AST:
        for name in _blocks(node):
            setattr(node, name, self.kept(node, getattr(node, name)))
        for name in node._fields:
            value = getattr(node, name, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, ast.AST):
                        self.visit(item)
            elif isinstance(value, ast.AST):
                self.visit(value)
        if isinstance(node, ast.Call):
            node.keywords, node.args = _call_kept(node)
        elif isinstance(node, ast.Assign):
            if self.force_growth and any(_mentions(t, _FIXED_VALUES) for t in node.targets):
                node.value = ast.Constant(None)
        elif isinstance(node, ast.Dict):
            node.values = _dict_values_kept(node)
        return node

    def same_once_visited(self, a: ast.AST, b: ast.AST) -> bool:
        """What `_same(self.visit(a), self.visit(b))` says, at half the cost: nothing
        is rebuilt, and the safety check's usual case needs no more. Each rule of `visit`
        rewrites a node's own fields from what lies below it, in place, so the trees can be
        compared top-down with each rule applied to a pair of nodes as it is reached. The one
        rule that reads children already visited (an assignment to TF_FORCE_GPU_ALLOW_GROWTH,
        once its targets' calls lost their constants) visits that pair whole; a later `visit`
        of the same nodes changes nothing more (tests/test_safety.py holds both to it)."""
        return _same(a, b, self._children_once_visited)

    def _children_once_visited(self, x: ast.AST, y: ast.AST) -> Iterable[tuple[object, object]]:
        """The pairs to compare below two nodes of one type, once `visit`'s rule for them ran."""
        kind = type(x)
        if kind is ast.Call:
            assert isinstance(x, ast.Call) and isinstance(y, ast.Call)
            return [(x.func, y.func), *zip(_call_kept(x), _call_kept(y), strict=True)]
        if kind is ast.Dict:
            assert isinstance(x, ast.Dict) and isinstance(y, ast.Dict)
            return [(x.keys, y.keys), (_dict_values_kept(x), _dict_values_kept(y))]
        if kind is ast.Assign and self.force_growth:
            self.visit(x)  # the rules then applied below it change nothing more
            self.visit(y)
            return _fields(x, y)
        if not _block_fields(kind):
            return _fields(x, y)
        # A block on one side may be empty, and so not a block, on the other.
        blocks_x, blocks_y = _blocks(x), _blocks(y)
        return [
            (
                self.kept(x, first) if name in blocks_x else first,  # type: ignore[arg-type]
                self.kept(y, second) if name in blocks_y else second,  # type: ignore[arg-type]
            )
            for name, (first, second) in zip(x._fields, _fields(x, y), strict=True)
        ]


def _call_kept(call: ast.Call) -> tuple[list[ast.keyword], list[ast.expr]]:
    """A call's keywords and arguments once what a fix may pass is set aside. Visiting leaves
    an argument's type and a constant's value as they were, so it may come before or after."""
    keywords = [
        ast.keyword(arg=k.arg, value=ast.Constant(None)) if k.arg in _FIXED_VALUES else k
        for k in call.keywords
        if k.arg not in FIX_KEYWORDS
    ]
    args = call.args
    if any(isinstance(a, ast.Constant) and a.value in _FIXED_VALUES for a in args):
        args = [a for a in args if not isinstance(a, ast.Constant)]
    if _spelled_last(call.func) in _FLAG_DEFINERS:
        # A flag's boolean default, which the fix of a setting behind it turns on.
        keywords = [k for k in keywords if not (k.arg == "default" and _a_boolean(k.value))]
        args = [ast.Constant(None) if _a_boolean(a) else a for a in args]
    return keywords, args


# What defines a command-line flag: absl's booleans, argparse's options, click's.
_FLAG_DEFINERS = frozenset({"DEFINE_bool", "DEFINE_boolean", "add_argument", "option"})


def _spelled_last(func: ast.expr) -> str | None:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else None


def _a_boolean(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, bool)


def _dict_values_kept(node: ast.Dict) -> list[ast.expr]:
    return [
        ast.Constant(None)
        if isinstance(key, ast.Constant) and key.value in _FIXED_VALUES
        else value
        for key, value in zip(node.keys, node.values, strict=True)
    ]


def _blocks(node: ast.AST) -> list[str]:
    return [
        name
        for name in _block_fields(type(node))
        if isinstance(getattr(node, name, None), list)
        and getattr(node, name)
        and isinstance(getattr(node, name)[0], ast.stmt)
    ]


@functools.cache
def _block_fields(kind: type[ast.AST]) -> tuple[str, ...]:
    return tuple(name for name in _BLOCK_FIELDS if name in kind._fields)


def _same(
    a: object,
    b: object,
    children: Callable[[ast.AST, ast.AST], Iterable[tuple[object, object]]] | None = None,
) -> bool:
    """Whether two syntax trees are equal as their `ast.dump`s would be (positions aside), for
    a fraction of the cost: constants from source code are equal by type and value exactly
    when their reprs are. Iterative, so that no depth is too deep to compare. `children`: the
    pairs to compare below two nodes of one type (else theirs, field by field)."""
    pending: list[tuple[object, object]] = [(a, b)]
    while pending:
        x, y = pending.pop()
        if type(x) is not type(y):
            return False
        if isinstance(x, ast.AST):
            assert isinstance(y, ast.AST)
            pending.extend(children(x, y) if children else _fields(x, y))
        elif isinstance(x, list):
            assert isinstance(y, list)
            if len(x) != len(y):
                return False
            pending.extend(zip(x, y, strict=True))
        elif x != y:
            return False
    return True


def _fields(x: ast.AST, y: ast.AST) -> Iterator[tuple[object, object]]:
    """Two nodes of one type, field by field."""
    return ((getattr(x, f, None), getattr(y, f, None)) for f in x._fields)


def _sort_blocks(tree: ast.AST) -> ast.AST:
    """Every block's statements in a canonical order, innermost blocks first."""
    for node in reversed(list(ast.walk(tree))):  # children before their parents
        for name in _blocks(node):
            setattr(node, name, sorted(getattr(node, name), key=ast.dump))
    return tree


def _statement_texts(tree: ast.Module, text: str) -> list[str]:
    """Each top-level statement's own source, decorators included: from its first token to its
    last, since a line can hold parts of two statements (`x = \\` then `1; y = 3`)."""
    lines = LineIndex(text)
    texts = []
    for statement in tree.body:
        decorators = getattr(statement, "decorator_list", [])
        # A decorator's @ starts its line: a top-level statement starts at column 0.
        start = lines.starts[decorators[0].lineno - 1] if decorators else None
        if start is None:
            start = lines.utf8_offset(statement.lineno, statement.col_offset)
        end_row = statement.end_lineno or statement.lineno
        texts.append(text[start : lines.utf8_offset(end_row, statement.end_col_offset or 0)])
    return texts


def _set_aside_unchanged(before: ast.Module, original: str, after: ast.Module, fixed: str) -> None:
    """Drop the top-level statements whose source reads the same on both sides: the same text
    parses to the same tree, and a fix touches a statement or two, so the slow comparison below
    sees only those. Counted as a multiset, like the sorted comparison."""
    texts_before = _statement_texts(before, original)
    texts_after = _statement_texts(after, fixed)
    common = Counter(texts_before) & Counter(texts_after)
    before.body = _without(before.body, texts_before, common.copy())
    after.body = _without(after.body, texts_after, common)


def _without(statements: list[ast.stmt], texts: list[str], common: Counter[str]) -> list[ast.stmt]:
    kept = []
    for statement, text in zip(statements, texts, strict=True):
        if common[text]:
            common[text] -= 1
        else:
            kept.append(statement)
    return kept


def _is_os_import(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Import) and [
        (alias.name, alias.asname) for alias in statement.names
    ] == [("os", None)]


def _set_aside_added_settings(before: ast.Module, after: ast.Module) -> None:
    """Drop from the fixed module's body the `import os` and `os.environ.setdefault(...)`
    statements it has more of than the original's: what the fixes that set a variable before
    an import add, and nothing a fix could remove or move."""
    kinds = (_is_os_import, _sets_before_imports)
    counts = Counter(ast.dump(s) for s in before.body if any(kind(s) for kind in kinds))
    kept = []
    for statement in after.body:
        if any(kind(statement) for kind in kinds):
            dump = ast.dump(statement)
            if counts[dump]:
                counts[dump] -= 1
            else:
                continue  # added by a fix
        kept.append(statement)
    after.body = kept


def check(original: str, fixed: str) -> bool:
    """Raise UnsafeFixError unless `fixed` parses and differs from `original` only by fixes.

    Returns False, having compared nothing, when this Python calls the original a syntax error
    (newer syntax, or Python 2 that libcst reads): the caller must compare another way.
    """
    try:
        before = parse_python(original)
    except SyntaxError:
        return False
    except (ValueError, RecursionError):
        return True  # NUL bytes or too deep for this parser; libcst re-parsed it
    try:
        after = parse_python(fixed)
    except (SyntaxError, ValueError) as exc:
        raise UnsafeFixError(f"the fixed text does not parse: {exc}") from None
    except RecursionError:
        return True
    _set_aside_unchanged(before, original, after, fixed)
    _set_aside_added_settings(before, after)
    try:
        normalizer = _Normalizer(original, fixed)
        if normalizer.same_once_visited(before, after):
            return True  # the usual case: no fix moved a statement
        before, after = normalizer.visit(before), normalizer.visit(after)
        if ast.dump(_sort_blocks(before)) == ast.dump(_sort_blocks(after)):
            return True
    except RecursionError:
        return True
    raise UnsafeFixError("the fix changed code outside the nodes it meant to change")


def check_recovered(before: Recovery, after: Recovery | None) -> None:
    """The safety net for a text that needed recovery: every set-aside statement comes back
    byte for byte and is set aside again, and the rest changed only by fixes. Raises
    UnsafeFixError otherwise."""
    if after is None or [s.source for s in after.set_aside] != [s.source for s in before.set_aside]:
        raise UnsafeFixError("a statement that was set aside did not come back as it was")
    check(before.text, after.text)
