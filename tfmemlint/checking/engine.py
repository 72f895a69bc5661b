"""Checks one source text: parse once, resolve names once, run every rule family, filter.

Only files that pass the pre-filter reach `lint_text`; libcst is imported here (and by
`cst_parse`, which parses for it) and nowhere on the way to it. The fix loop that applies the
findings' fixes is `fix_loop`'s.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator
from functools import cached_property
from typing import TYPE_CHECKING, NamedTuple

import libcst as cst

from tfmemlint.checking import suppression
from tfmemlint.checking.prefilter import any_trigger
from tfmemlint.configuration.settings import Policy, Settings
from tfmemlint.fixing import fixes, safety
from tfmemlint.model import FILE, Edit, Finding, Fix, Layout, Location, Rule
from tfmemlint.project.index import FileResolver
from tfmemlint.project.names import ModuleNames, Scope
from tfmemlint.reading import masking, positions, recovery
from tfmemlint.reading.cst_parse import deep_recursion, parse
from tfmemlint.reading.indentation import IndentationViewError, Python2Indentation
from tfmemlint.reading.recovery import Recovery
from tfmemlint.reading.source import (
    LineIndex,
    minimal_change,
    parse_python,
    without_cycle_collection,
)
from tfmemlint.rules import FAMILIES, tensorflow_api
from tfmemlint.rules.family import RuleFamily, load
from tfmemlint.rules.file_errors import PYTHON2_SYNTAX, SYNTAX_ERROR


class UnfaithfulParseError(Exception):
    """libcst's tree does not give back the text it was parsed from."""


# Whitespace at the end of a file, which libcst's codegen may leave out: no position is after it.
_END_BLANKS = " \t\f\r\n"


class FileContext:
    """What a rule sees of one file."""

    def __init__(
        self,
        filename: str,
        text: str,
        module: cst.Module,
        policy: Policy,
        layout: Layout = FILE,
        project: FileResolver | None = None,
        reported: frozenset[str] | None = None,
    ) -> None:
        self.filename = filename
        self.text = text
        self.module = module
        self.policy = policy
        self.layout = layout
        self.lines = LineIndex(text)
        self.names = ModuleNames(module, tensorflow_api, project)
        # Analyses that several rule families share, computed once per file on first use.
        self.cache: dict[str, object] = {}
        # The codes whose findings are kept (None: every code).
        self._reported = reported

    def reports(self, rule: Rule) -> bool:
        """Whether findings of `rule` are kept. A rule builds no finding that is not: its
        position may cost a codegen of the whole module."""
        return self._reported is None or rule.code in self._reported

    @cached_property
    def _positions(self) -> positions.Positions:
        # Computed only once a rule needs a position.
        measured = positions.measure(self.module)
        if measured.code.rstrip(_END_BLANKS) != self.text.rstrip(_END_BLANKS):
            # libcst drops a few rare spellings (a line holding only a `\` continuation):
            # positions would then point at the wrong bytes, and so would any fix. (What it
            # drops at the very end, a final lone CR or a last line of only spaces, moves
            # nothing.)
            raise UnfaithfulParseError(
                "libcst does not reproduce this file byte for byte (a line that holds only a "
                "backslash continuation?), so no position or fix would be right"
            )
        return measured

    def statement_extents(self) -> list[positions.Span] | None:
        """Where each top-level statement lies (see `positions.Positions`), if the positions
        were worked out for a rule already; None otherwise."""
        measured = self.__dict__.get("_positions")
        return measured.statements if measured is not None else None

    def other_module(self, path: str) -> FileContext | None:
        """Another module of the project, parsed, for a rule that follows a call into it (a
        config helper); None when it cannot be read or parsed. What its names were resolved
        through counts for this file's result too."""
        if self.names.project is None:
            return None
        project = self.names.project
        parsed = project.index.parsed
        key = (path, self.policy)
        if key not in parsed:
            parsed[key] = _parse_other(path, self.policy, project.index.resolver(path))
        other = parsed[key]
        assert other is None or isinstance(other, FileContext)
        if other is not None and other.names.project is not None:
            project.read |= other.names.project.read
        return other

    def origin_note(self, expr: cst.BaseExpression, scope: Scope, order: int) -> str:
        """ " (tf is `tensorflow.compat.v1`, through `mypkg/compat.py`)" when the head name of
        `expr` was imported from another module of the project, else ""."""
        found = self.names.origin(expr, scope, order)
        if found is None:
            return ""
        head, stands_for, through = found
        return f" ({head} is `{stands_for}`, through `{through}`)"

    def place(self, row: int) -> str:
        """A row as a message names it: "line 12", or in a notebook "cell 3, line 4"."""
        return self.layout.place(row) if self.layout.place else f"line {row}"

    def span(self, node: cst.CSTNode) -> positions.Span:
        """The node's (start, end) offsets in the text."""
        return self._positions.spans[node]

    def code(self, node: cst.CSTNode) -> str:
        """The node's text. An expression's comes from its own codegen until a rule needs
        positions: a message may quote one where no finding is kept."""
        if "_positions" not in self.__dict__ and isinstance(node, cst.BaseExpression):
            alone = positions.code_alone(self.module, node)
            if alone is not None:
                return alone
        start, end = self.span(node)
        return self.text[start:end]

    def edit(self, start: int, end: int, content: str, key: str | None = None) -> Edit:
        where, end_where = self.lines.location(start), self.lines.location(end)
        return Edit(start, end, content, where, end_where, key)

    def indented_start(self, row: int) -> int:
        """The offset of the row's first character after its indentation."""
        line = self.lines.line(row)
        return self.lines.offset(row, len(line) - len(line.lstrip()))

    def finding_at(self, rule: Rule, message: str, offset: int) -> Finding:
        """A finding with no extent and no fix, such as a file diagnostic."""
        where = self.lines.location(offset)
        return Finding(rule.code, message, self.filename, where, where)

    def finding(self, rule: Rule, message: str, node: cst.CSTNode, fix: Fix | None) -> Finding:
        start, end = self.span(node)
        return Finding(
            code=rule.code,
            message=message,
            filename=self.filename,
            location=self.lines.location(start),
            end_location=self.lines.location(end),
            fix=fix,
        )


def _parse_other(path: str, policy: Policy, project: FileResolver) -> FileContext | None:
    from tfmemlint.checking.prefilter import too_deep_for_python
    from tfmemlint.reading.source import SourceError, SourceText

    raw, read = project.index.files.read(path)  # once per run, as the index's other answers
    project.read |= read
    if raw is None:
        return None
    try:
        text = SourceText.decode(raw).text
        if too_deep_for_python(raw):  # libcst's parser would overflow the stack on it
            return None
        view = Python2Indentation.of(text)
        if view is not None:  # its indentation as Python 2 reads it (see `indentation`)
            text = view.view
        with deep_recursion():
            return FileContext(path, text, parse(text), policy, FILE, project)
    except (OSError, SourceError, cst.ParserSyntaxError, RecursionError):
        return None


Checker = Callable[[FileContext], Iterable[Finding]]


@functools.lru_cache(maxsize=8)
def _checkers(selected: frozenset[str]) -> tuple[Checker, ...]:
    """The checkers of the families that have a selected rule, imported on first use."""
    return tuple(load(str(family.checker)) for family in checked_families(selected))


@functools.lru_cache(maxsize=8)
def checked_families(selected: frozenset[str]) -> tuple[RuleFamily, ...]:
    """The families that have a checker and a selected rule."""
    return tuple(
        family
        for family in FAMILIES
        if family.checker and any(rule.code in selected for rule in family.rules)
    )


@without_cycle_collection
def lint_text(
    filename: str,
    text: str,
    settings: Settings,
    layout: Layout = FILE,
    *,
    recover_first: bool = False,
    project: FileResolver | None = None,
) -> list[Finding]:
    """Findings for one text, selected and unsuppressed, in source order. Statements that do
    not parse are set aside (see `recovery`), and reported as one TFM904 or TFM902 finding.
    `recover_first`: CPython found Python 2 in the text, which libcst may read (`except E,
    e:`): recover it without trying libcst on it first. `project`: how names imported from the
    project's other modules resolve (see `project`).

    Raises libcst.ParserSyntaxError for text that cannot be recovered.
    """
    view = Python2Indentation.of(text)
    if view is not None:  # tabs and spaces mixed as Python 2 (or only CPython) reads them
        python2 = view.refused_row is not None
        first = recover_first or python2
        masked = mask(view.view).text
        linted = lint_masked(filename, masked, settings, layout, first, project, python2=python2)
        linted.context.names.release()
        return from_view(filename, view, linted.findings, settings, layout)
    masked = mask(text).text
    tree = _parsed_before(masked, settings.policy, project)
    linted = lint_masked(filename, masked, settings, layout, recover_first, project, tree)
    linted.context.names.release()
    return linted.findings


def _parsed_before(text: str, policy: Policy, project: FileResolver | None) -> cst.Module | None:
    """libcst's tree of this very text, where a rule parsed the file earlier in this process as
    another module of the project (a program's walk enters it): the same parse, not made
    twice."""
    if project is None:
        return None
    other = project.index.parsed.get((project.importer, policy))
    return other.module if isinstance(other, FileContext) and other.text == text else None


def mask(text: str) -> masking.Masked:
    return masking.mask(text, forbidden=_unmaskable)


def _unmaskable(region: str) -> bool:
    """Whether a region holds what a masked one must not: a trigger word in any case, or a
    suppression comment (which may silence a finding on the region's first or last line)."""
    if "#" in region and suppression.DIRECTIVE.search(region):
        return True
    if region.isascii():
        # Exact for ASCII, and 25 times quicker than re.IGNORECASE on a megabyte table.
        return _triggers_lowered().search(region.lower()) is not None
    return _triggers_in_any_case().search(region) is not None


@functools.lru_cache(maxsize=1)
def _triggers_lowered() -> re.Pattern[str]:
    return re.compile(any_trigger().pattern.lower())


@functools.lru_cache(maxsize=1)
def _triggers_in_any_case() -> re.Pattern[str]:
    return re.compile(any_trigger().pattern, re.IGNORECASE)


class Linted(NamedTuple):
    findings: list[Finding]
    recovered: Recovery | None  # the recovery the text needed, if any
    context: FileContext
    parsed: bool  # whether the context's tree is libcst's parse of the whole text, as it is
    # Whether a fix beside a set-aside statement is offered on the safety net's proof.
    proved_beside: bool = False


def lint_masked(
    filename: str,
    text: str,
    settings: Settings,
    layout: Layout,
    recover_first: bool = False,
    project: FileResolver | None = None,
    tree: cst.Module | None = None,
    *,
    beside_set_aside: bool = True,
    python2: bool = False,
) -> Linted:
    """Findings for a text already masked: same offsets, rows and columns as the original.
    `tree`: libcst's parse of the text, where the caller has it. `beside_set_aside`: a fix
    may edit the statements just before and after a set-aside one, where the safety net
    proves it (else it is reported without its fix). `python2`: the text is Python 2 even
    where nothing had to be set aside (its indentation, see `indentation`), so a fix that
    writes what only Python 3 reads is reported without it."""
    recovered: Recovery | None = None
    found = recover(text, layout) if recover_first else None
    if found is not None:
        recovered, module = found
    elif tree is not None:
        module = tree
    else:
        try:
            module = parse(text)
        except cst.ParserSyntaxError as error:
            found = None if recover_first else recover(text, layout)
            if found is None:
                raise error from None
            recovered, module = found
    if recovered is not None and not recovered.set_aside:
        recovered = None  # it all parsed: the tree is the text's own
    # CPython calls it Python 2, recovery could not set that aside, and libcst reads it: the
    # rules run on libcst's reading, but nothing could prove a fix.
    unproven = recover_first and found is None
    with deep_recursion():
        context = FileContext(
            filename,
            recovered.text if recovered else text,
            module,
            settings.policy,
            layout,
            project,
            settings.selected,
        )
        findings = [
            finding
            for checker in _checkers(settings.selected)
            for finding in checker(context)
            if finding.code in settings.selected
        ]
    lines = context.lines
    proved_beside = False
    if recovered is not None:
        findings, proved_beside = _within_recovery(
            findings, recovered, text, layout, beside_set_aside
        )
        findings += [
            finding
            for finding in _recovery_findings(context, recovered)
            if finding.code in settings.selected
        ]
        lines = LineIndex(text)  # suppression comments in set-aside statements count too
    elif unproven:
        findings = [finding._replace(fix=None) for finding in findings]
        if PYTHON2_SYNTAX.code in settings.selected:
            findings.append(_python2_finding(context))
    elif python2:
        findings = [f if _writes_python2(f.fix) else f._replace(fix=None) for f in findings]
    findings = suppression.unsuppressed(findings, lines)
    ordered = sorted(findings, key=lambda f: (f.location, f.code))
    return Linted(ordered, recovered, context, found is None and not unproven, proved_beside)


def _writes_python2(fix: Fix | None) -> bool:
    return fix is None or all(recovery.python2_reads(edit.content) for edit in fix.edits)


def from_view(
    filename: str,
    view: Python2Indentation,
    findings: list[Finding],
    settings: Settings,
    layout: Layout,
) -> list[Finding]:
    """Findings in a Python 2 text's view (see `indentation`), in the real text: at its
    columns, each fix's edits made in it, and the file's TFM904 saying how its indentation was
    read."""
    fixes_back = _fixes_from_view(view, [finding.fix for finding in findings])
    placed = [
        finding._replace(
            location=view.location(finding.location),
            end_location=view.location(finding.end_location),
            fix=fix,
        )
        for finding, fix in zip(findings, fixes_back, strict=True)
    ]
    row = view.refused_row
    if row is None or PYTHON2_SYNTAX.code not in settings.selected:
        return placed
    place = layout.place(row) if layout.place else f"line {row}"
    note = (
        f"tabs and spaces mixed in its indentation as only Python 2 reads them (from {place}), "
        "read as Python 2 does: a tab to the next multiple of 8 columns"
    )
    first = next((i for i, f in enumerate(placed) if f.code == PYTHON2_SYNTAX.code), None)
    if first is not None:  # one line per file: recovery's says what else is Python 2
        placed[first] = placed[first]._replace(message=f"{placed[first].message}; {note}")
        return placed
    where = "cells" if layout.separator else "file"
    message = f"Python 2 indentation: {note}; the whole {where} checked"
    at = Location(row, 1)
    found = Finding(PYTHON2_SYNTAX.code, message, filename, at, at)
    return sorted(
        suppression.unsuppressed([*placed, found], LineIndex(view.real)),
        key=lambda f: (f.location, f.code),
    )


def _fixes_from_view(view: Python2Indentation, wanted: list[Fix | None]) -> list[Fix | None]:
    """Each fix of the view as edits of the real text. The fixes that `--fix` makes together
    in its first round are restored together, once, and each takes its edits from what that
    writes; any other is restored on its own. None where a fix cannot be made in the real
    text."""
    present = [(index, fix) for index, fix in enumerate(wanted) if fix is not None]
    result = list(wanted)
    if not present:
        return result
    taken, edits = fixes.accepted([fix for _, fix in present])
    together = _edits_back(view, edits)
    chosen = set(taken)
    for position, (index, fix) in enumerate(present):
        if together is not None and position in chosen:
            result[index] = fix._replace(edits=tuple(together[e] for e in dict.fromkeys(fix.edits)))
        else:
            result[index] = _fix_from_view(view, fix)
    return result


def _fix_from_view(view: Python2Indentation, fix: Fix) -> Fix | None:
    """One fix of the view as edits of the real text: the same edits at the real columns, or
    where that cannot be, the one edit between the two texts."""
    taken, edits = fixes.accepted([fix])
    if not taken:
        return None
    back = _edits_back(view, edits)
    if back is not None:
        return fix._replace(edits=tuple(back[e] for e in dict.fromkeys(fix.edits)))
    try:
        after = view.restored(fixes.applied_edits(edits, view.view))
    except IndentationViewError:
        return None
    start, end, content = minimal_change(view.real, after.real)
    real = LineIndex(view.real)
    return fix._replace(
        edits=(Edit(start, end, content, real.location(start), real.location(end)),)
    )


def _edits_back(view: Python2Indentation, edits: list[Edit]) -> dict[Edit, Edit] | None:
    """Edits of the view (in text order, none overlapping), each as the edit of the real text
    that makes what `--fix` writes for them all; None where one starts or ends inside a
    rewritten indentation, or they would not make that text together."""
    fixed = fixes.applied_edits(edits, view.view)
    try:
        after = view.restored(fixed)
    except IndentationViewError:
        return None
    real, before, now = LineIndex(view.real), LineIndex(view.view), LineIndex(fixed)
    restored = LineIndex(after.real)
    back: dict[Edit, Edit] = {}
    delta = 0
    for edit in edits:
        ends = [before.location(edit.start), before.location(edit.end)]
        fixed_ends = [now.location(edit.start + delta)]
        delta += len(edit.content) - (edit.end - edit.start)
        fixed_ends.append(now.location(edit.end + delta))
        if any(map(view.inside_indentation, ends)) or any(
            map(after.inside_indentation, fixed_ends)
        ):
            return None
        start, end = (real.offset(*_row_column0(view.location(at))) for at in ends)
        first, last = (restored.offset(*_row_column0(after.location(at))) for at in fixed_ends)
        content = after.real[first:last]
        back[edit] = Edit(start, end, content, real.location(start), real.location(end), edit.key)
    if fixes.applied_edits(list(back.values()), view.real) != after.real:
        return None
    return back


def _row_column0(where: Location) -> tuple[int, int]:
    return where.row, where.column - 1


def _python2_finding(ctx: FileContext) -> Finding:
    """TFM904 where CPython stops, for Python 2 that recovery could not set aside."""
    try:
        parse_python(ctx.text)
    except SyntaxError as error:
        row = min(error.lineno or 1, len(ctx.lines.starts))
        offset = ctx.lines.offset(row, 0) + max((error.offset or 1) - 1, 0)
        reason = (error.msg or "invalid syntax").split(". Did you mean")[0]
    else:  # not reached: CPython said Python 2 before
        offset, reason = 0, "Python 2"
    message = (
        f"Python 2 syntax ({reason}) that no statement could be set aside for: the file is "
        "checked as libcst reads it, and no fix is offered"
    )
    return ctx.finding_at(PYTHON2_SYNTAX, message, min(offset, len(ctx.text)))


def recover(text: str, layout: Layout) -> tuple[Recovery, cst.Module] | None:
    """The text with what does not parse set aside, and its tree; None when it cannot be."""
    try:
        return recovery.recover(text, parse, cst.ParserSyntaxError, layout.separator)
    except recovery.RecoveryError:
        return None


def _within_recovery(
    findings: list[Finding], recovered: Recovery, text: str, layout: Layout, beside: bool
) -> tuple[list[Finding], bool]:
    """The findings, without the fix of each that would touch a set-aside statement, or edit
    the statement just before or after one without the safety net's proof (see
    `safety.check_recovered`) that every set-aside statement comes back as it was; and whether
    a fix beside one is kept on that proof. The fixes beside set-aside statements are proved
    together, with one recovery of the fixed text, and one by one only where that fails."""
    kept: list[Finding] = []
    to_prove: list[int] = []
    for finding in findings:
        edits = [(e.start, e.end, e.content) for e in finding.fix.edits] if finding.fix else []
        if finding.fix is None or recovered.allows(edits):
            kept.append(finding)
            continue
        if beside and recovered.allows(edits, beside=True):
            to_prove.append(len(kept))
        kept.append(finding._replace(fix=None))
    if not to_prove:
        return kept, False
    candidates = [findings[index] for index in to_prove]
    if _proved(candidates, recovered, text, layout):
        proved = to_prove
    else:
        proved = [
            i
            for i, f in zip(to_prove, candidates, strict=True)
            if _proved([f], recovered, text, layout)
        ]
    for index in proved:
        kept[index] = findings[index]
    return kept, bool(proved)


def _proved(findings: list[Finding], recovered: Recovery, text: str, layout: Layout) -> bool:
    """Whether the fixes of `findings`, all applied, pass the safety net of a recovered text."""
    fixes_wanted = [finding.fix for finding in findings if finding.fix is not None]
    applied, fixed = fixes.apply(fixes_wanted, text)
    if applied != len(fixes_wanted):
        return False
    again = recover(fixed, layout)
    try:
        safety.check_recovered(recovered, again[0] if again else None)
    except safety.UnsafeFixError:
        return False
    return True


def _recovery_findings(ctx: FileContext, recovered: Recovery) -> Iterator[Finding]:
    """One TFM904 (every statement set aside is Python 2) or TFM902 per file or notebook cell
    that needed recovery, at the first statement set aside (the first that is not Python 2,
    for TFM902)."""
    units: dict[int, list[recovery.SetAside]] = {}
    for statement in recovered.set_aside:
        units.setdefault(statement.unit, []).append(statement)
    where = "cell" if ctx.layout.separator else "file"
    for statements in units.values():
        python2 = all(s.python2 for s in statements)
        first = statements[0] if python2 else next(s for s in statements if not s.python2)
        rule, kind = (
            (PYTHON2_SYNTAX, "Python 2 syntax") if python2 else (SYNTAX_ERROR, "Syntax error")
        )
        if first.message == recovery.WHOLE_UNIT:
            message = f"{kind}: {recovery.WHOLE_UNIT}, so the whole {where} is set aside"
        else:
            quoted = first.source.strip().splitlines()[0] if first.source.strip() else ""
            if len(quoted) > 40:
                quoted = quoted[:37] + "..."
            reason = first.message.split(". Did you mean")[0].split(";")[0].rstrip(".")
            count = f"{len(statements)} statements" if len(statements) > 1 else "1 statement"
            message = (
                f"{kind} at `{quoted}` ({reason}): {count} set aside, the rest of the {where} "
                "checked"
            )
        # A session there is not seen: say where each set-aside TensorFlow name is.
        rows = sorted(
            {
                ctx.lines.location(s.start + found.start()).row
                for s in statements
                for found in any_trigger().finditer(s.source)
            }
        )
        if rows:
            places = ", ".join(ctx.place(row) for row in rows)
            message += f"; the set-aside code on {places} names a TensorFlow API and is not checked"
        yield ctx.finding_at(rule, message, first.start)


if TYPE_CHECKING:  # the type checker holds FileContext to the interface fixes are built on

    def _fixes_build_on(context: FileContext) -> fixes.FileToFix:
        return context


__all__ = [
    "FileContext",
    "UnfaithfulParseError",
    "from_view",
    "lint_text",
]
