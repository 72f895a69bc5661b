"""A read-only walk of libcst trees: what `root.visit(visitor)` does for `on_visit` and
`on_leave`, in libcst's own order, without rebuilding the nodes it passes and without the
layout nodes (whitespace, brackets, operators: two thirds of a tree, which hold no name, call or
binding). tests/test_walk.py holds it to libcst's own walk.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from collections.abc import Iterator

import libcst as cst


def walk(root: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """What `root.visit(visitor)` does for on_visit and on_leave, in the same order, children
    skipped when on_visit says False, but without the layout nodes (see LAYOUT): two thirds of
    a tree, and the name table reads none of them. libcst's own walk also rebuilds every node
    it passes, which is most of its cost; this one only reads. It is iterative, so a deep tree
    needs no recursion. (The per-attribute hooks, visit_<Node>_<field>, are not called.)"""
    pending: list[tuple[cst.CSTNode, bool]] = [(root, False)]
    while pending:
        node, leaving = pending.pop()
        if leaving:
            visitor.on_leave(node)
            continue
        if not visitor.on_visit(node):
            visitor.on_leave(node)
            continue
        pending.append((node, True))
        for name in _walked_fields(type(node)):
            value = getattr(node, name)
            if type(value) is tuple or type(value) is list:
                for child in reversed(value):
                    if type(child) not in _UNWALKED:
                        pending.append((child, False))
            elif type(value) not in _UNWALKED:
                pending.append((value, False))


def _layout_classes() -> frozenset[type]:
    from libcst._nodes import op, whitespace

    brackets = (cst.LeftParen, cst.RightParen, cst.LeftSquareBracket, cst.RightSquareBracket)
    braces = (cst.LeftCurlyBrace, cst.RightCurlyBrace)
    return frozenset(
        value
        for module in (op, whitespace)
        for value in vars(module).values()
        if isinstance(value, type)
        and issubclass(value, cst.CSTNode)
        and value.__module__ == module.__name__  # not what the module imports
    ).union(brackets, braces)


# Whitespace, comments, brackets, commas, dots and operators: they hold no name, call or
# binding, only other layout nodes.
LAYOUT = _layout_classes()
_UNWALKED = LAYOUT | {type(None), type(cst.MaybeSentinel.DEFAULT)}


@functools.cache
def _child_fields(node_type: type[cst.CSTNode]) -> tuple[str, ...]:
    """The fields of a node class that libcst visits, in the order it visits them.

    Each class's _visit_and_replace_children passes the field names it visits, as string
    constants, to libcst's visit helpers, in visiting order; the compiler keeps constants in
    order of first use. tests/test_walk.py checks the result against libcst's own walk.
    """
    fields = {f.name for f in dataclasses.fields(node_type)}
    constants = node_type._visit_and_replace_children.__code__.co_consts
    return tuple(dict.fromkeys(c for c in constants if isinstance(c, str) and c in fields))


@functools.cache
def _walked_fields(node_type: type[cst.CSTNode]) -> tuple[str, ...]:
    """The child fields the walk must look into, last first (it pushes them on a stack): those
    whose declared type admits something other than layout (a Name's `lpar` and `rpar` admit
    only brackets, so a Name has none). A field whose type cannot be read is looked into."""
    try:
        declared = typing.get_type_hints(node_type)
    except Exception:  # a libcst whose annotations do not resolve: every field
        declared = {}
    fields = _child_fields(node_type)
    return tuple(f for f in reversed(fields) if f not in declared or not _only_layout(declared[f]))


def _only_layout(declared: object) -> bool:
    """Whether a field declared so can hold only layout nodes, sentinels or None."""
    if typing.get_origin(declared) is not None:  # a Union, an Optional, a Sequence
        arguments = typing.get_args(declared)  # none in a bare `Sequence`: it admits anything
        return bool(arguments) and all(_only_layout(argument) for argument in arguments)
    if declared in (type(None), cst.MaybeSentinel):
        return True
    return declared in LAYOUT and all(
        sub.__module__ == declared.__module__  # type: ignore[attr-defined]
        for sub in _subclasses(declared)  # type: ignore[arg-type]
    )


def _subclasses(kind: type) -> Iterator[type]:
    for sub in kind.__subclasses__():
        yield sub
        yield from _subclasses(sub)
