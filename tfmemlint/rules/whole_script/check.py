"""The logic of TFM401 and TFM402 (their pages are in `__init__.py`)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import libcst as cst

from tfmemlint.model import Finding
from tfmemlint.project.names import CallSite, dotted_name
from tfmemlint.rules import literals
from tfmemlint.rules.config_dataflow import SessionConfig, State
from tfmemlint.rules.session_sites import entry_point, fixes_only_configure_sessions
from tfmemlint.rules.whole_script import HIDDEN_GPU_INITIALIZATION, LATER_SESSION_IGNORED

if TYPE_CHECKING:
    from tfmemlint.checking.engine import FileContext

_SESSIONS = ("Session", "InteractiveSession")
_DEVICE_LISTINGS = frozenset(
    {"python.client.device_lib.list_local_devices", "test.is_gpu_available"}
)


def check(ctx: FileContext) -> Iterator[Finding]:
    names = ctx.names
    sessions: list[tuple[CallSite, SessionConfig]] = []
    for site in names.calls:
        found = entry_point(ctx, site)
        if found is not None and names.api_of(site.node.func, site.scope, site.order) in _SESSIONS:
            session = SessionConfig(ctx, site, *found)
            if not session.on_another_machine():  # its allocator is that machine's
                sessions.append((site, session))
    yield from _later_sessions(ctx, sessions)
    for site in names.calls:
        if names.api_of(site.node.func, site.scope, site.order) in _DEVICE_LISTINGS:
            yield from _hidden_initialization(ctx, site, sessions)


def settled_by_fixes(ctx: FileContext, fixed: Sequence[Finding]) -> bool:
    """Whether this family finds nothing once `fixed` are: TFM402 needs a device listing, and
    the file has none (the fixes add only ConfigProto and GPUOptions calls, and bind no name);
    TFM401 compares sessions, and every session is an entry point whose fix the session
    family proves leaves it memory-aware, so they all agree."""
    if not fixes_only_configure_sessions(ctx, fixed):
        return False
    names = ctx.names
    return not any(
        names.api_of(site.node.func, site.scope, site.order) in _DEVICE_LISTINGS
        for site in names.calls
    )


def _row(ctx: FileContext, site: CallSite) -> int:
    return ctx.lines.location(ctx.span(site.node)[0]).row


def _later_sessions(
    ctx: FileContext, sessions: list[tuple[CallSite, SessionConfig]]
) -> Iterator[Finding]:
    first_in_scope: dict[int, tuple[CallSite, bool]] = {}
    for site, session in sessions:
        state = session.assess()[0].state
        if state is State.UNKNOWN:
            continue
        aware = state is State.AWARE
        first = first_in_scope.setdefault(id(site.scope), (site, aware))
        if first[0] is site or first[1] == aware or not _runs_before(first[0], site):
            continue
        row = _row(ctx, first[0])
        if aware:
            message = (
                f"These memory settings have no effect: the session on {ctx.place(row)} already "
                "created the GPU allocator without them"
            )
        else:
            message = (
                f"This session gets the memory settings of the session on {ctx.place(row)}, which "
                "created the GPU allocator first"
            )
        yield ctx.finding(LATER_SESSION_IGNORED, message, site.node, None)


def _runs_before(earlier: CallSite, later: CallSite) -> bool:
    """Whether `earlier` runs on every path to `later`: its block encloses `later` (not so for
    the two branches of an `if`)."""
    block = next(
        (n for n in earlier.ancestry if isinstance(n, (cst.IndentedBlock, cst.Module))), None
    )
    return block is not None and any(node is block for node in later.ancestry)


def _hidden_initialization(
    ctx: FileContext, listing: CallSite, sessions: list[tuple[CallSite, SessionConfig]]
) -> Iterator[Finding]:
    if any(
        arg.keyword is not None and arg.keyword.value == "session_config"
        for arg in listing.node.args
    ):
        return  # list_local_devices(session_config=...) creates the devices with that config
    for site, session in sessions:
        if site.scope is not listing.scope or site.order < listing.order:
            continue
        if not _runs_before(listing, site):
            continue
        config, _ = session.config_argument()
        if config is None or literals.is_none(config.value):
            continue
        name = dotted_name(listing.node.func) or "the device listing"
        message = (
            f"`{name}()` creates the GPU allocator with default options before the session on "
            f"{ctx.place(_row(ctx, site))}, whose memory options then come too late"
        )
        yield ctx.finding(HIDDEN_GPU_INITIALIZATION, message, listing.node, None)
        return
