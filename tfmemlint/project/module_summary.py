"""What a Python module binds at its top level, read with CPython's `ast` (a tenth of libcst's
parse), and the modules its import statements name: what the project index resolves names
through (see `project`).

A name is summarized as the imports and plain aliases it is bound to (`tfv1 = tf.compat.v1`,
`tf if old else tf.compat.v1`); a fallback to `None` or `object()` (`except ImportError: tf =
None`) as a placeholder; anything else as bound otherwise.
"""

from __future__ import annotations

import ast
import re
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field

from tfmemlint.reading.source import lines_holding, parse_python


def member(module: str, name: str) -> str:
    """`module.name`; for a relative module of dots alone (`from .. import x`), `..x`."""
    return f"{module}{name}" if module.endswith(".") else f"{module}.{name}"


def from_module(node: ast.ImportFrom) -> str:
    """The module a `from` import names, a relative one with its dots (`..compat`)."""
    return "." * node.level + (node.module or "")


def imported_names(node: ast.Import | ast.ImportFrom) -> Iterator[tuple[str, str]]:
    """(the name bound, the qualified name it stands for) for each name an import binds:
    `import a.b` binds `a` to `a`; a star import binds none that it names."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                yield alias.asname, alias.name
            else:
                head = alias.name.partition(".")[0]
                yield head, head
        return
    module = from_module(node)
    for alias in node.names:
        if alias.name != "*":
            yield alias.asname or alias.name, member(module, alias.name)


def star_import(node: ast.stmt) -> str | None:
    """The module a `from m import *` takes every public name of; None for any other statement."""
    if isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names):
        return from_module(node)
    return None


@dataclass
class ModuleSummary:
    """A module's module-level bindings. Each name maps to its sources, an imported name
    (`mypkg.compat.tf`, `..compat.tf`) or an alias (`=tf.compat.v1`); None: bound otherwise."""

    bindings: dict[str, list[str] | None] = field(default_factory=dict)
    stars: list[str] = field(default_factory=list)  # the modules it star-imports, in order
    public: frozenset[str] | None = None  # its literal `__all__`, if any
    functions: set[str] = field(default_factory=set)  # names a `def` binds
    bound: dict[str, int] = field(default_factory=dict)  # how many times each name is bound
    # Names an assignment (one name its only target) binds to a call's result.
    bound_to_calls: set[str] = field(default_factory=set)


def imports(raw: bytes) -> Iterator[str]:
    """Every module or imported name a file's import statements spell, relative ones with
    their dots. Where Python 3 cannot parse the file (Python 2), they are read line by line."""
    try:
        tree = parse_python(raw)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        yield from imports_in_lines(raw)
        return
    yield from imports_in_tree(tree)


def imports_in_tree(tree: ast.Module) -> Iterator[str]:
    """`imports`, from a syntax tree already parsed."""
    for node in statements(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            module = from_module(node)
            for alias in node.names:
                yield module if alias.name == "*" else member(module, alias.name)


# What holds statements: statements (a body, an `else`), `except` clauses and `case` blocks.
_HOLDS_STATEMENTS = (ast.stmt, ast.excepthandler, ast.match_case)


def statements(tree: ast.Module) -> Iterator[ast.AST]:
    """The module, then its statements at every depth (and the `except` clauses and `case`
    blocks that hold some), in `ast.walk`'s order. No expression holds a statement, so the
    expressions, most of a tree's nodes, are never visited."""
    pending: deque[ast.AST] = deque([tree])
    while pending:
        node = pending.popleft()
        yield node
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                pending.extend(item for item in value if isinstance(item, _HOLDS_STATEMENTS))


_IMPORT_LINE = re.compile(
    rb"(?:^|;)[ \t]*(?:from[ \t]+(?P<module>\.*[\w.]*)[ \t]+import[ \t]*\(?(?P<names>[\w \t,*]*)"
    rb"|import[ \t]+(?P<modules>[\w. \t,]+))",
    re.MULTILINE,
)


def imports_in_lines(raw: bytes) -> Iterator[str]:
    """The imports of a file read one statement a line, without parsing it: a file CPython
    cannot parse, or one the index only crosses."""
    # Each match lies inside a line that holds `import`: the others are never searched.
    for found in _IMPORT_LINE.finditer(lines_holding(raw, [b"import"])):
        if found["module"] is not None:
            module = found["module"].decode("ascii", "replace")
            names = [
                n.split()[0]
                for n in found["names"].decode("ascii", "replace").split(",")
                if n.split()
            ]
            if not names:  # `from pkg.mod import (` with its names on the lines below
                yield module
            for name in names:
                yield module if name == "*" else member(module, name)
        else:
            for name in found["modules"].decode("ascii", "replace").split(","):
                if name.split():
                    yield name.split()[0]


def summarize(tree: ast.Module) -> ModuleSummary | None:
    summary = ModuleSummary()
    try:
        _collect(tree.body, summary)
    except RecursionError:
        return None
    return summary


def _bind(summary: ModuleSummary, name: str, source: str | None) -> None:
    summary.bound[name] = summary.bound.get(name, 0) + 1
    if source is None:
        summary.bindings[name] = None
        return
    sources = summary.bindings.setdefault(name, [])
    if sources is not None:
        sources.append(source)


def dotted(node: ast.expr) -> str | None:
    """`a.b.c` for a chain of names and attributes, else None (iterative: chains run long)."""
    attributes = []
    while isinstance(node, ast.Attribute):
        attributes.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(attributes)])


def _bind_targets(summary: ModuleSummary, target: ast.expr) -> None:
    """The names a target binds, as something unknown (`x.attr = v` and `x[k] = v` bind none)."""
    if isinstance(target, ast.Name):
        _bind(summary, target.id, None)
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            _bind_targets(summary, element)
    elif isinstance(target, ast.Starred):
        _bind_targets(summary, target.value)


def _collect(body: list[ast.stmt], summary: ModuleSummary) -> None:
    """The module-level bindings of `body`, into `summary`; blocks at module level (`if`, `try`,
    `with`, loops) bind there too."""
    for statement in body:
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            star = star_import(statement)
            if star is not None:
                summary.stars.append(star)
            for name, qualified in imported_names(statement):
                _bind(summary, name, qualified)
        elif isinstance(statement, (ast.Assign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            value = statement.value
            if len(targets) == 1 and isinstance(targets[0], ast.Name) and value is not None:
                name = targets[0].id
                if isinstance(value, ast.Call):
                    summary.bound_to_calls.add(name)
                if name == "__all__":
                    _public(summary, value)
                if _placeholder(value):
                    _bind(summary, name, PLACEHOLDER)
                    continue
                # `tf if old else tf.compat.v1` may stand for either.
                choices = [value.body, value.orelse] if isinstance(value, ast.IfExp) else [value]
                spelled = [dotted(choice) for choice in choices]
                if None in spelled:
                    _bind(summary, name, None)
                for each in spelled if None not in spelled else ():
                    _bind(summary, name, f"={each}")
            elif value is not None or isinstance(statement, ast.Assign):
                for target in targets:
                    _bind_targets(summary, target)
        elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            _bind(summary, statement.name, None)
            if isinstance(statement, ast.FunctionDef):
                summary.functions.add(statement.name)
        elif isinstance(statement, (ast.AugAssign, ast.Delete)):
            for target in (
                statement.targets if isinstance(statement, ast.Delete) else [statement.target]
            ):
                _bind_targets(summary, target)
        elif isinstance(statement, (ast.For, ast.AsyncFor)):
            _bind_targets(summary, statement.target)
            _collect(statement.body, summary)
            _collect(statement.orelse, summary)
        elif isinstance(statement, (ast.While, ast.If)):
            _collect(statement.body, summary)
            _collect(statement.orelse, summary)
        elif isinstance(statement, (ast.With, ast.AsyncWith)):
            for item in statement.items:
                if item.optional_vars is not None:
                    _bind_targets(summary, item.optional_vars)
            _collect(statement.body, summary)
        elif isinstance(statement, ast.Try) or type(statement).__name__ == "TryStar":
            _collect(statement.body, summary)  # type: ignore[attr-defined]
            for handler in statement.handlers:  # type: ignore[attr-defined]
                if handler.name:
                    _bind(summary, handler.name, None)
                _collect(handler.body, summary)
            _collect(statement.orelse, summary)  # type: ignore[attr-defined]
            _collect(statement.finalbody, summary)  # type: ignore[attr-defined]
        elif isinstance(statement, ast.Match):
            for case in statement.cases:
                _collect(case.body, summary)


# A binding to `None` or `object()`, the fallback of a `try: import tensorflow ... except`.
PLACEHOLDER = "!"


def _placeholder(value: ast.expr) -> bool:
    if isinstance(value, ast.Constant) and value.value is None:
        return True
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "object"
        and not value.args
        and not value.keywords
    )


def _public(summary: ModuleSummary, value: ast.expr) -> None:
    if isinstance(value, (ast.List, ast.Tuple)) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts
    ):
        summary.public = frozenset(e.value for e in value.elts)  # type: ignore[attr-defined]
