"""libcst's parse, made quick and safe for deep code: without the check every node constructor
runs, and with room on the stack and in the recursion limit for deeply nested code. (Its
callers pause the cycle collector while a file's million nodes live: `source`'s
`without_cycle_collection`.)

Only what passes the pre-filter reaches here: importing this module imports libcst.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import threading
from collections.abc import Iterator
from typing import TypeVar

import libcst as cst

_Node = TypeVar("_Node", bound=cst.CSTNode)


def parse(text: str) -> cst.Module:
    """libcst's parse, without the check every node constructor runs, which is a sixth of the
    parse: nodes its own parser builds from source hold by construction (libcst's own comment
    there says the work belongs elsewhere, and the check even rejects some valid code,
    LibCST#1061). The check is skipped only for nodes this thread builds during this call; the
    check that the tree gives back the text byte for byte still guards every position and fix."""
    _make_room_for_deep_parses()
    with unchecked_nodes():
        return cst.parse_module(text)


@contextlib.contextmanager
def unchecked_nodes() -> Iterator[None]:
    """libcst's per-node check off for the nodes this thread builds meanwhile."""
    _this_thread.parsing = True
    try:
        yield
    finally:
        _this_thread.parsing = False


_this_thread = threading.local()

# libcst's native parser recurses on the C stack, as do its codegen and visitors through C calls:
# a 10,000-term `a and a and ...` chain, which CPython compiles, overflows the usual 8 MB and
# kills the process (a worker, the run, or flake8 with the plugin). On Linux the main thread's
# stack grows on demand up to RLIMIT_STACK, read at each fault (in practice up to the 128 MB or
# more left below it when the process started).
DEEP_STACK_BYTES = 256 << 20


@functools.cache
def _make_room_for_deep_parses() -> None:
    """Raise this process's soft stack limit to DEEP_STACK_BYTES, within the hard one, before its
    first parse. Parses run on the main thread of whichever process lints; where the limit
    cannot move, nothing changes."""
    try:
        import resource
    except ImportError:  # Windows
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
    wanted = DEEP_STACK_BYTES if hard == resource.RLIM_INFINITY else min(hard, DEEP_STACK_BYTES)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_STACK, (wanted, hard))


def _install_node_check_switch() -> None:
    """Route libcst's per-node check through a per-thread switch, once: other threads, and
    this one outside `parse`, keep the check."""
    checked = cst.CSTNode.__dict__.get("__post_init__")
    if checked is None:  # a libcst that checks elsewhere: the switch does nothing
        return

    def __post_init__(self: cst.CSTNode) -> None:
        if not getattr(_this_thread, "parsing", False):
            checked(self)

    cst.CSTNode.__post_init__ = __post_init__  # type: ignore[method-assign]


_install_node_check_switch()


# libcst's visitors recurse once per level of nesting: long implicit string concatenations and
# huge expressions in generated files go far past Python's default limit of 1,000. Since 3.11,
# Python-to-Python calls do not use the C stack, so a higher limit is safe.
RECURSION_LIMIT = 20_000


@contextlib.contextmanager
def deep_recursion() -> Iterator[None]:
    previous = sys.getrecursionlimit()
    if sys.version_info >= (3, 11):  # on 3.10 deep recursion could overflow the C stack
        sys.setrecursionlimit(max(previous, RECURSION_LIMIT))
    try:
        yield
    finally:
        sys.setrecursionlimit(previous)


def rebuilt(node: _Node, **changes: object) -> _Node:
    """`node.with_changes(**changes)` for a node of a parsed tree, without the check libcst runs
    on every node it builds, for the reason `parse` gives."""
    with unchecked_nodes():
        return node.with_changes(**changes)
