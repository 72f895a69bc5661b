"""Checks a launch file's text, as the engine and the fix loop check Python's: read with its
kind's reader (`launch/`), looked at by the launch families, fixed in rounds, each fixed text
read again with the same reader. Nothing here reads or writes a file."""

from __future__ import annotations

from tfmemlint.checking.suppression import unsuppressed_by
from tfmemlint.configuration.settings import Settings
from tfmemlint.fixing import fixes
from tfmemlint.model import Finding, Location
from tfmemlint.reading.launch import read_launch_text
from tfmemlint.reading.launch.context import LaunchContext
from tfmemlint.reading.launch.model import LaunchError, LaunchFile
from tfmemlint.rules import LAUNCH_FAMILIES
from tfmemlint.rules.family import RuleFamily, load
from tfmemlint.rules.file_errors import SYNTAX_ERROR

# Fixes of different settings never clash, and each fix settles its finding: two rounds do;
# the bound only stops a fix that would undo another.
MAX_FIX_ROUNDS = 5


def _families(selected: frozenset[str]) -> list[RuleFamily]:
    return [f for f in LAUNCH_FAMILIES if any(rule.code in selected for rule in f.rules)]


def lint_launch(filename: str, kind: str, text: str, settings: Settings) -> list[Finding]:
    """The findings in a launch file's text, read as `kind`, in their order in it."""
    try:
        launch = read_launch_text(kind, text)
    except LaunchError as exc:
        if kind == "yaml" and "{{" in text:
            return []  # a template (Helm's): what it holds is known once it is rendered
        where = Location(exc.row, exc.column)
        message = f"Not checked: {exc}"
        return [Finding(SYNTAX_ERROR.code, message, filename, where, where)]
    return _findings(filename, text, launch, settings)


def _findings(filename: str, text: str, launch: LaunchFile, settings: Settings) -> list[Finding]:
    ctx = LaunchContext(filename, text, launch, settings.policy)
    selected = settings.selected
    found = [
        finding
        for family in _families(selected)
        for finding in load(str(family.checker))(ctx)
        if finding.code in selected
    ]
    found = unsuppressed_by(found, launch.comments)
    return sorted(found, key=lambda f: (f.location, f.code))


def fix_launch(
    filename: str, kind: str, text: str, settings: Settings
) -> tuple[str, int, list[Finding]]:
    """(the fixed text, how many findings were fixed, what is left in it). A round whose fixed
    text its reader cannot read is not taken."""
    fixed = 0
    findings = lint_launch(filename, kind, text, settings)
    for _ in range(MAX_FIX_ROUNDS):
        wanted = [finding.fix for finding in findings if finding.fix is not None]
        if not wanted:
            break
        applied, new_text = fixes.apply(wanted, text)
        if new_text == text:
            break
        try:
            launch = read_launch_text(kind, new_text)
        except LaunchError:
            break
        text, fixed = new_text, fixed + applied
        findings = _findings(filename, text, launch, settings)
    return text, fixed, findings
