"""Where two places of a module stand to each other: the ancestries they share, and whether
they sit in branches of which at most one runs. Shared by the families that weigh a setting
against another."""

from __future__ import annotations

import libcst as cst

from tfmemlint.project.names import Ancestry


def paths(a: Ancestry, b: Ancestry) -> tuple[list[cst.CSTNode], list[cst.CSTNode], int]:
    """Both places' ancestries, outermost first, and how many nodes they share."""
    path_a, path_b = list(a)[::-1], list(b)[::-1]
    common = 0
    while common < min(len(path_a), len(path_b)) and path_a[common] is path_b[common]:
        common += 1
    return path_a, path_b, common


def exclusive_branches(a: Ancestry, b: Ancestry) -> bool:
    """Whether two places sit in different branches of one `if`, `try` or `match`, so that at
    most one of them runs: an `if` body and its `else`/`elif`, a `try` body and a handler, two
    handlers, a handler and the `else`, two `case`s."""
    path_a, path_b, depth = paths(a, b)
    if depth == 0 or depth >= len(path_a) or depth >= len(path_b):
        return False
    common, one, other = path_a[depth - 1], path_a[depth], path_b[depth]
    if isinstance(common, cst.If):
        branches: tuple[cst.CSTNode | None, ...] = (common.body, common.orelse)
        return one in branches and other in branches
    if isinstance(common, (cst.Try, cst.TryStar)):
        handlers = tuple(common.handlers)
        if one in handlers or other in handlers:
            return all(
                n is common.body or n in handlers or n is common.orelse for n in (one, other)
            )
        return False
    if isinstance(common, cst.Match):
        return one in common.cases and other in common.cases
    return False
