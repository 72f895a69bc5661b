"""Reading literal values out of CST expressions; None wherever the value is not a literal."""

from __future__ import annotations

import libcst as cst


def number(expr: cst.BaseExpression) -> float | None:
    if isinstance(expr, (cst.Integer, cst.Float)):
        return float(expr.evaluated_value)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        inner = number(expr.expression)
        return None if inner is None else -inner
    return None


def is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


def boolean(expr: cst.BaseExpression) -> bool | None:
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return expr.value == "True"
    return None


def string(expr: cst.BaseExpression) -> str | None:
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    return None


def spelled_like(node: cst.SimpleString, text: str) -> str:
    """The source of a string literal holding `text` (plain text, needing no escapes), with
    `node`'s prefix and quotes: a fix that changes a value keeps the user's style."""
    return f"{node.prefix}{node.quote}{text}{node.quote}"
