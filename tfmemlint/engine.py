"""Checks one source text: parse once, resolve names once, run every rule family, filter.

Only files that pass the pre-filter reach `lint_text`; libcst is imported here and nowhere on
the way to it.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import gc
import re
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import cached_property
from typing import NamedTuple, ParamSpec, TypeVar

import libcst as cst

from tfmemlint import fixes, masking, positions, recovery, safety, suppression
from tfmemlint.model import FILE, Edit, Finding, Fix, Layout, Rule
from tfmemlint.names import ModuleNames, Scope
from tfmemlint.prefilter import any_trigger
from tfmemlint.project import FileResolver
from tfmemlint.recovery import Recovery
from tfmemlint.rules import FAMILIES
from tfmemlint.rules.family import RuleFamily, load
from tfmemlint.rules.file_errors import PYTHON2_SYNTAX, SYNTAX_ERROR
from tfmemlint.safety import UnsafeFixError
from tfmemlint.settings import Policy, Settings
from tfmemlint.source import LineIndex, parse_python

_P = ParamSpec("_P")
_R = TypeVar("_R")
_Node = TypeVar("_Node", bound=cst.CSTNode)

# Re-linting after a round of fixes picks up fixes that overlapped; a second pass usually settles.
MAX_FIX_ROUNDS = 10


class UnfaithfulParseError(Exception):
    """libcst's tree does not give back the text it was parsed from."""


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
    ) -> None:
        self.filename = filename
        self.text = text
        self.module = module
        self.policy = policy
        self.layout = layout
        self.lines = LineIndex(text)
        self.names = ModuleNames(module, project)
        # Analyses that several rule families share, computed once per file on first use.
        self.cache: dict[str, object] = {}

    @cached_property
    def _positions(self) -> positions.Positions:
        # Computed only once a rule needs a position.
        measured = positions.measure(self.module)
        if measured.code.rstrip("\r\n") != self.text.rstrip("\r\n"):
            # libcst drops a few rare spellings (a line holding only a `\` continuation):
            # positions would then point at the wrong bytes, and so would any fix. (A final
            # lone CR it also drops moves nothing.)
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
    from tfmemlint.prefilter import too_deep_for_python
    from tfmemlint.source import SourceError, SourceText

    raw, read = project.index.files.read(path)  # once per run, as the index's other answers
    project.read |= read
    if raw is None:
        return None
    try:
        text = SourceText.decode(raw).text
        if too_deep_for_python(raw):  # libcst's parser would overflow the stack on it
            return None
        with _deep_recursion():
            return FileContext(path, text, parse(text), policy, FILE, project)
    except (OSError, SourceError, cst.ParserSyntaxError, RecursionError):
        return None


Checker = Callable[[FileContext], Iterable[Finding]]


@functools.lru_cache(maxsize=8)
def _checkers(selected: frozenset[str]) -> tuple[Checker, ...]:
    """The checkers of the families that have a selected rule, imported on first use."""
    return tuple(load(str(family.checker)) for family in _checked_families(selected))


@functools.lru_cache(maxsize=8)
def _checked_families(selected: frozenset[str]) -> tuple[RuleFamily, ...]:
    """The families that have a checker and a selected rule."""
    return tuple(
        family
        for family in FAMILIES
        if family.checker and any(rule.code in selected for rule in family.rules)
    )


def _without_cycle_collection(function: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run `function` with Python's cycle collector paused. A parse allocates a million
    objects that live until the file is done, and the collector would walk them again and again
    (a sixth of a check). What the name table leaves in cycles goes at the first collection
    after the file, which comes at once: the collector resumes before anything else runs."""

    @functools.wraps(function)
    def paused(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        if not gc.isenabled():
            return function(*args, **kwargs)
        try:
            gc.disable()
            return function(*args, **kwargs)
        finally:
            gc.enable()

    return paused


@_without_cycle_collection
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
    masked = _mask(text).text
    return _lint_masked(filename, masked, settings, layout, recover_first, project).findings


def _mask(text: str) -> masking.Masked:
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


class _Linted(NamedTuple):
    findings: list[Finding]
    recovered: Recovery | None  # the recovery the text needed, if any
    context: FileContext
    parsed: bool  # whether the context's tree is libcst's parse of the whole text, as it is


def _lint_masked(
    filename: str,
    text: str,
    settings: Settings,
    layout: Layout,
    recover_first: bool = False,
    project: FileResolver | None = None,
    tree: cst.Module | None = None,
) -> _Linted:
    """Findings for a text already masked: same offsets, rows and columns as the original.
    `tree`: libcst's parse of the text, where the caller has it."""
    recovered: Recovery | None = None
    found = _recover(text, layout) if recover_first else None
    if found is not None:
        recovered, module = found
    elif tree is not None:
        module = tree
    else:
        try:
            module = parse(text)
        except cst.ParserSyntaxError as error:
            found = None if recover_first else _recover(text, layout)
            if found is None:
                raise error from None
            recovered, module = found
    if recovered is not None and not recovered.set_aside:
        recovered = None  # it all parsed: the tree is the text's own
    # CPython calls it Python 2, recovery could not set that aside, and libcst reads it: the
    # rules run on libcst's reading, but nothing could prove a fix.
    unproven = recover_first and found is None
    with _deep_recursion():
        context = FileContext(
            filename,
            recovered.text if recovered else text,
            module,
            settings.policy,
            layout,
            project,
        )
        findings = [
            finding
            for checker in _checkers(settings.selected)
            for finding in checker(context)
            if finding.code in settings.selected
        ]
    lines = context.lines
    if recovered is not None:
        findings = [_within_recovery(finding, recovered) for finding in findings]
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
    findings = suppression.unsuppressed(findings, lines)
    ordered = sorted(findings, key=lambda f: (f.location, f.code))
    return _Linted(ordered, recovered, context, found is None and not unproven)


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


def _recover(text: str, layout: Layout) -> tuple[Recovery, cst.Module] | None:
    """The text with what does not parse set aside, and its tree; None when it cannot be."""
    try:
        return recovery.recover(text, parse, cst.ParserSyntaxError, layout.separator)
    except recovery.RecoveryError:
        return None


def _within_recovery(finding: Finding, recovered: Recovery) -> Finding:
    """The finding without its fix when the fix would come near a set-aside statement."""
    if finding.fix is None or recovered.allows(
        (edit.start, edit.end, edit.content) for edit in finding.fix.edits
    ):
        return finding
    return finding._replace(fix=None)


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


def parse(text: str) -> cst.Module:
    """libcst's parse, without the check every node constructor runs, which is a sixth of the
    parse: nodes its own parser builds from source hold by construction (libcst's own comment
    there says the work belongs elsewhere, and the check even rejects some valid code,
    LibCST#1061). The check is skipped only for nodes this thread builds during this call; the
    check that the tree gives back the text byte for byte still guards every position and fix."""
    _make_room_for_deep_parses()
    with _unchecked_nodes():
        return cst.parse_module(text)


@contextlib.contextmanager
def _unchecked_nodes() -> Iterator[None]:
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
def _deep_recursion() -> Iterator[None]:
    previous = sys.getrecursionlimit()
    if sys.version_info >= (3, 11):  # on 3.10 deep recursion could overflow the C stack
        sys.setrecursionlimit(max(previous, RECURSION_LIMIT))
    try:
        yield
    finally:
        sys.setrecursionlimit(previous)


@_without_cycle_collection
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
    masked = _mask(text)
    if not masked.regions:
        return _fix_masked(filename, text, settings, layout, recover_first, project)
    try:
        fixed_masked, fixed_count, findings = _fix_masked(
            filename, masked.text, settings, layout, recover_first, project
        )
        return masked.unmask(fixed_masked, text), fixed_count, findings
    except (masking.MaskError, UnsafeFixError):
        # The slow way: nothing masked.
        return _fix_masked(filename, text, settings, layout, recover_first, project)


def _fix_masked(
    filename: str,
    text: str,
    settings: Settings,
    layout: Layout,
    recover_first: bool,
    project: FileResolver | None,
) -> tuple[str, int, list[Finding]]:
    fixed_count = 0
    current = text
    linted = _lint_masked(filename, current, settings, layout, recover_first, project)
    findings, recovered = linted.findings, linted.recovered
    found_first = findings
    fixed_recovered = recovered
    for _ in range(MAX_FIX_ROUNDS):
        applied, new_text = fixes.apply([f.fix for f in findings if f.fix], current)
        if not applied:
            break
        fixed_count += applied
        if _nothing_left(linted, applied, settings):
            current, findings = new_text, []
            break
        tree = _reparse(linted.context, new_text) if linted.parsed else None
        current = new_text
        try:  # a fix can bring a finding of its own (TFM401 on a later session): look again
            linted = _lint_masked(
                filename, current, settings, layout, recovered is not None, project, tree
            )
            findings, fixed_recovered = linted.findings, linted.recovered
        except cst.ParserSyntaxError as exc:
            raise UnsafeFixError(f"the fixed text does not parse: {exc.message}") from None
    if current != text:
        if recovered is None and not safety.check(text, current):
            # libcst reads what this Python does not (newer syntax; `except E, e:`, which
            # Python 3.14 reads): compare what is left once CPython's failures are set aside.
            before, after = _recover(text, layout), _recover(current, layout)
            if before is None:  # nothing to prove the fixes by: report them, write nothing
                return text, 0, [finding._replace(fix=None) for finding in found_first]
            _check_recovered(before[0], after[0] if after else None)
        elif recovered is not None:
            _check_recovered(recovered, fixed_recovered)
    return current, fixed_count, findings


def _nothing_left(linted: _Linted, applied: int, settings: Settings) -> bool:
    """Whether the text that the fixes of every finding of `linted` make is sure to hold no
    finding, so that looking at it again would be wasted: each family with a selected rule
    proves it from the look before (`RuleFamily.settled_by_fixes`). A finding fixed is no
    proof by itself: configuring one session can make another, left alone under `noqa`, a
    TFM401 (tests/test_second_look.py)."""
    if applied != len(linted.findings) or not linted.parsed or linted.context.layout is not FILE:
        return False
    return all(
        family.settled_by_fixes and load(family.settled_by_fixes)(linted.context, linted.findings)
        for family in _checked_families(settings.selected)
    )


def _reparse(before: FileContext, text: str) -> cst.Module | None:
    """libcst's tree of `text`, which is `before.text` after fixes: `before`'s tree, with only
    what the fixes changed parsed again (one line in a block, see `_reparse_line`; else the
    top-level statements around the change). None where that is not sure to give the tree a
    parse of the whole text gives: the caller then parses it all.

    Top-level statements, their leading comment lines included, parse alone as in their module,
    but for what the module's parse takes from elsewhere:
    - the indentation that blocks leave unsaid: the module's first block's, which blocks in the
      piece must share, and which stays where it was where the piece holds none;
    - the line break that line ends leave unsaid: the module's first, in the unchanged first
      statement or header;
    - whose the comment lines between two statements are, which the earlier one decides: a
      change that starts where a statement ends is taken to lie in that statement, the piece
      starts after an unchanged one (a stand-in `pass`) and runs to the end of a statement the
      change stops short of;
    - the module's header, before its first statement, which stays as it is.
    Cheap checks stand guard: the piece must leave nothing to its own header or footer.
    """
    extents = before.statement_extents()
    module = before.module
    old = before.text
    if not extents or len(extents) != len(module.body) or old == text:
        return None
    start = _common_prefix(old, text)
    suffix = _common_prefix(old[::-1], text[::-1], min(len(old), len(text)) - start)
    old_end = len(old) - suffix  # the first unchanged character after the change
    first = bisect.bisect_left(extents, start, key=lambda extent: extent[1])
    last = bisect.bisect_right(extents, old_end, key=lambda extent: extent[1])
    if first == last < len(extents):
        line = _reparse_line(before, module.body[first], text, start, old_end)
        if line is not None:
            return _rebuilt(module, body=(*module.body[:first], line, *module.body[last + 1 :]))
    spans = before._positions.spans
    if 0 < first < len(extents) and start <= spans[module.body[first]][0]:
        first -= 1  # it starts in the lines before a statement: the one above comes too
    if first == 0 or last >= len(extents) or extents[first][0] >= start:
        return None
    if not module.has_trailing_newline and last == len(extents) - 1:
        return None
    # The comment lines before the piece's first statement, and those after its last, belong
    # to whichever block above them is indented as deep: the change must start after the
    # first ones, and the last ones must all start a line's first column.
    if start <= spans[module.body[first]][0]:
        return None
    after = spans[module.body[last + 1]][0] if last + 1 < len(extents) else len(old)
    if any(row[:1] in (" ", "\t", "\f") for row in old[extents[last][1] : after].splitlines()):
        return None
    piece_start, piece_end = extents[first][0], extents[last][1] + len(text) - len(old)
    stand_in = "pass" + module.default_newline
    try:
        piece = parse(stand_in + text[piece_start:piece_end])
    except cst.ParserSyntaxError:
        return None
    if (
        piece.header
        or piece.footer
        or piece.default_newline != module.default_newline
        or not piece.has_trailing_newline
    ):
        return None
    # The module's indentation is its first block's: blocks the piece holds must agree with it,
    # and where the piece holds none, the first block must be where it was.
    if _any_block(piece.body[1:]):
        if piece.default_indent != module.default_indent:
            return None
    elif _any_block(module.body[first : last + 1]) and not _any_block(module.body[:first]):
        return None
    return _rebuilt(module, body=(*module.body[:first], *piece.body[1:], *module.body[last + 1 :]))


def _any_block(statements: Sequence[cst.BaseStatement]) -> bool:
    """Whether any of these top-level statements opens an indented block: in any clause of a
    compound statement (blocks nested deeper lie in one)."""
    return any(_opens_a_block(statement) for statement in statements)


def _opens_a_block(node: cst.CSTNode | None) -> bool:
    if node is None:
        return False
    if isinstance(node, cst.Match):  # a `match` indents its cases
        return True
    if isinstance(getattr(node, "body", None), cst.IndentedBlock):
        return True
    clauses = [getattr(node, "orelse", None), getattr(node, "finalbody", None)]
    return any(_opens_a_block(c) for c in (*clauses, *getattr(node, "handlers", ())))


def _rebuilt(node: _Node, **changes: object) -> _Node:
    """`node.with_changes(**changes)` for a node of a parsed tree, without the check libcst runs
    on every node it builds, for the reason `parse` gives."""
    with _unchecked_nodes():
        return node.with_changes(**changes)


def _reparse_line(
    before: FileContext, statement: cst.CSTNode, text: str, start: int, old_end: int
) -> cst.CSTNode | None:
    """`statement`, a top-level one, as a parse of `text` gives it, where the change between
    `start` and `old_end` (offsets into `before.text`) lies within one line of simple
    statements right inside its block (a session made in a function): that line is parsed
    again alone, under a stand-in `if 1:` indented as it is. Such a line holds no block, so
    nothing in its tree depends on the module's indentation, and all it holds of its own
    indentation is relative to its block's, which the stand-in gives. None where this does
    not apply.
    """
    block = getattr(statement, "body", None)
    if not isinstance(block, cst.IndentedBlock):
        return None
    spans, lines, old = before._positions.spans, before.lines, before.text
    # The change must start after the line's first token: its indentation may be the module's.
    around = [i for i, s in enumerate(block.body) if spans[s][0] < start and old_end <= spans[s][1]]
    if not around:
        return None
    index = around[0]
    line = block.body[index]
    line_start, line_end = spans[line]
    if not isinstance(line, cst.SimpleStatementLine) or line.leading_lines:
        return None
    row = lines.location(line_start).row
    piece_start = lines.starts[row - 1]
    piece_end = lines.line_end(lines.location(line_end).row)
    indent = old[piece_start:line_start]
    if indent.strip(" \t") or old[piece_end - 1 : piece_end] not in ("\n", "\r"):
        return None
    newline = before.module.default_newline
    shift = len(text) - len(old)
    try:
        piece = parse(f"if 1:{newline}{text[piece_start : piece_end + shift]}")
    except cst.ParserSyntaxError:
        return None
    stand_in = piece.body[0] if len(piece.body) == 1 else None
    if (
        piece.header
        or piece.footer
        or piece.default_newline != newline
        or not isinstance(stand_in, cst.If)
        or stand_in.orelse is not None
        or not isinstance(stand_in.body, cst.IndentedBlock)
        or stand_in.body.footer
        or not all(isinstance(s, cst.SimpleStatementLine) for s in stand_in.body.body)
    ):
        return None
    body = (*block.body[:index], *stand_in.body.body, *block.body[index + 1 :])
    return _rebuilt(statement, body=_rebuilt(block, body=body))


def _common_prefix(a: str, b: str, at_most: int | None = None) -> int:
    """The length of the longest common prefix, at most `at_most`; found by halving, so that
    the comparing runs in C."""
    same, limit = 0, min(len(a), len(b)) if at_most is None else at_most
    while same < limit:  # a[:same] == b[:same]; the first difference lies in a[same:limit]
        middle = (same + limit + 1) // 2
        if a[same:middle] == b[same:middle]:
            same = middle
        else:
            limit = middle - 1
    return same


def _check_recovered(before: Recovery, after: Recovery | None) -> None:
    """The safety net for a text that needed recovery: every set-aside statement comes back
    byte for byte and is set aside again, and the rest changed only by fixes."""
    if after is None or [s.source for s in after.set_aside] != [s.source for s in before.set_aside]:
        raise UnsafeFixError("a statement that was set aside did not come back as it was")
    safety.check(before.text, after.text)


__all__ = [
    "FileContext",
    "UnfaithfulParseError",
    "fix_text",
    "lint_text",
    "parse",
]
