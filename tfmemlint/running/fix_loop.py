"""The fix loop: apply every fix, look at the fixed text again until no fix is left (unless
every rule family proves there is nothing left to find), then prove the fixed text safe to
write (see `safety`).
"""

from __future__ import annotations

import libcst as cst

from tfmemlint.checking.engine import (
    Linted,
    checked_families,
    from_view,
    lint_masked,
    mask,
    recover,
)
from tfmemlint.configuration.settings import Settings
from tfmemlint.fixing import fixes, safety
from tfmemlint.fixing.safety import UnsafeFixError
from tfmemlint.model import FILE, Finding, Layout
from tfmemlint.project.index import FileResolver
from tfmemlint.reading import masking
from tfmemlint.reading.indentation import IndentationViewError, Python2Indentation
from tfmemlint.reading.source import without_cycle_collection
from tfmemlint.rules.family import load
from tfmemlint.running.reparse import reparse

# Re-linting after a round of fixes picks up fixes that overlapped; a second pass usually settles.
MAX_FIX_ROUNDS = 10


@without_cycle_collection
def fix_text(
    filename: str,
    text: str,
    settings: Settings,
    layout: Layout = FILE,
    *,
    recover_first: bool = False,
    project: FileResolver | None = None,
) -> tuple[str, int, list[Finding]]:
    """Apply every available fix until none is left: (new text, fixes applied, remaining).
    `recover_first` and `project` as for `lint_text`.

    Raises libcst.ParserSyntaxError when `text` itself cannot be recovered, and
    UnsafeFixError when the fixed text fails the safety check: then nothing may be written.
    """
    view = Python2Indentation.of(text)
    if view is None:
        return _fix_unmasked(filename, text, settings, layout, recover_first, project)
    # Tabs and spaces mixed as Python 2 (or only CPython) reads them: fixed as it reads them.
    python2 = view.refused_row is not None
    fixed, count, remaining = _fix_unmasked(
        filename, view.view, settings, layout, recover_first or python2, project, python2
    )
    try:
        after = view.restored(fixed)
    except IndentationViewError as exc:
        raise UnsafeFixError(str(exc)) from None
    return after.real, count, from_view(filename, after, remaining, settings, layout)


def _fix_unmasked(
    filename: str,
    text: str,
    settings: Settings,
    layout: Layout,
    recover_first: bool,
    project: FileResolver | None,
    python2: bool = False,
) -> tuple[str, int, list[Finding]]:
    masked = mask(text)
    if not masked.regions:
        return _fix_masked(filename, text, settings, layout, recover_first, project, python2)
    try:
        fixed_masked, fixed_count, findings = _fix_masked(
            filename, masked.text, settings, layout, recover_first, project, python2
        )
        return masked.unmask(fixed_masked, text), fixed_count, findings
    except (masking.MaskError, UnsafeFixError):
        # The slow way: nothing masked.
        return _fix_masked(filename, text, settings, layout, recover_first, project, python2)


def _fix_masked(
    filename: str,
    text: str,
    settings: Settings,
    layout: Layout,
    recover_first: bool,
    project: FileResolver | None,
    python2: bool = False,
    beside_set_aside: bool = True,
) -> tuple[str, int, list[Finding]]:
    fixed_count = 0
    current = text
    linted = lint_masked(
        filename,
        current,
        settings,
        layout,
        recover_first,
        project,
        beside_set_aside=beside_set_aside,
        python2=python2,
    )
    findings, recovered = linted.findings, linted.recovered
    found_first = findings
    fixed_recovered = recovered
    beside = linted.proved_beside
    for _ in range(MAX_FIX_ROUNDS):
        applied, new_text = fixes.apply([f.fix for f in findings if f.fix], current)
        if not applied:
            break
        fixed_count += applied
        if _nothing_left(linted, applied, settings):
            current, findings = new_text, []
            break
        tree = reparse(linted.context, new_text) if linted.parsed else None
        linted.context.names.release()  # done with this round (the next tree shares its nodes)
        current = new_text
        try:  # a fix can bring a finding of its own (TFM401 on a later session): look again
            linted = lint_masked(
                filename,
                current,
                settings,
                layout,
                recovered is not None,
                project,
                tree,
                beside_set_aside=beside_set_aside,
                python2=python2,
            )
            findings, fixed_recovered = linted.findings, linted.recovered
            beside = beside or linted.proved_beside
        except cst.ParserSyntaxError as exc:
            if beside:
                return _again_clear_of_set_aside(filename, text, settings, layout, project, python2)
            raise UnsafeFixError(f"the fixed text does not parse: {exc.message}") from None
    if current != text:
        if recovered is None and not safety.check(text, current):
            # libcst reads what this Python does not (newer syntax; `except E, e:`, which
            # Python 3.14 reads): compare what is left once CPython's failures are set aside.
            before, after = recover(text, layout), recover(current, layout)
            if before is None:  # nothing to prove the fixes by: report them, write nothing
                return text, 0, [finding._replace(fix=None) for finding in found_first]
            safety.check_recovered(before[0], after[0] if after else None)
        elif recovered is not None:
            try:
                safety.check_recovered(recovered, fixed_recovered)
            except UnsafeFixError:
                if beside:
                    return _again_clear_of_set_aside(
                        filename, text, settings, layout, project, python2
                    )
                raise
    return current, fixed_count, findings


def _again_clear_of_set_aside(
    filename: str,
    text: str,
    settings: Settings,
    layout: Layout,
    project: FileResolver | None,
    python2: bool,
) -> tuple[str, int, list[Finding]]:
    """Fixes beside set-aside statements, proved as each round found them, that the safety
    net cannot prove at the end: fix again, every fix clear of their neighbours."""
    return _fix_masked(
        filename, text, settings, layout, True, project, python2, beside_set_aside=False
    )


def _nothing_left(linted: Linted, applied: int, settings: Settings) -> bool:
    """Whether the text that the fixes of every finding of `linted` make is sure to hold no
    finding, so that looking at it again would be wasted: each family with a selected rule
    proves it from the look before (`RuleFamily.settled_by_fixes`). A finding fixed is no
    proof by itself: configuring one session can make another, left alone under `noqa`, a
    TFM401 (tests/test_second_look.py)."""
    if applied != len(linted.findings) or not linted.parsed or linted.context.layout is not FILE:
        return False
    return all(
        family.settled_by_fixes and load(family.settled_by_fixes)(linted.context, linted.findings)
        for family in checked_families(settings.selected)
    )
