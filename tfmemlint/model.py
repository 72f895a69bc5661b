"""The data that flows from the rules to the fixer and the reporters.

Positions are 1-based rows and columns (columns count code points), as in ruff's JSON. Edits also
carry offsets into the decoded text, which is what the fixer applies.

Immutable records that every run defines at start-up are NamedTuples, here and in settings,
source, discovery and the rule registry: Python defines a NamedTuple class about six times
faster than a frozen dataclass, and a pre-commit call pays for each one. The mutable records on
every run's path (`FileResult`, the runner's `RunStats`) are plain classes, for the same reason.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, NamedTuple

Applicability = Literal["safe", "unsafe"]


class Dependency(NamedTuple):
    """A module file an answer was read from, as it was read: its stat and content hash; or,
    with an empty hash, a path where a module was looked for and none was."""

    path: str
    stat: tuple[int, int, int, int]  # mtime_ns, ctime_ns, size, inode
    read_ns: int
    hash: str


class Location(NamedTuple):
    row: int
    column: int


class Edit(NamedTuple):
    """Replace text[start:end] with content.

    Edits that share a `key` (say, one import line) are made once per file and round: the
    same edit from several fixes is applied once, a different one waits for the next round.
    """

    start: int
    end: int
    content: str
    location: Location
    end_location: Location
    key: str | None = None


class Fix(NamedTuple):
    message: str
    edits: tuple[Edit, ...]
    applicability: Applicability = "safe"


class Finding(NamedTuple):
    code: str
    message: str
    filename: str
    location: Location
    end_location: Location
    fix: Fix | None = None
    cell: int | None = None  # in a notebook: the cell the location's row belongs to


class RuleDoc(NamedTuple):
    """A rule's page, in ruff's order: what (one or two sentences, at most 60 words), why,
    example, use instead, fix safety; then the detail, under headings a reader can skip to."""

    what_it_does: str
    why: str
    example: str
    use_instead: str
    fix_safety: str
    # What recovery means here: statements that do not parse, set aside (see reading.recovery).
    recovery: str = ""
    # The language of the example and its fix, for their code blocks.
    language: str = "python"
    # The detail, under headings that the long pages share (`rules.family`): (heading, text).
    details: tuple[tuple[str, str], ...] = ()


Level = Literal["error", "warning", "info"]

# The documentation site; every link to a rule's page is built from it (mkdocs.yml's `site_url`
# must match, and a test checks that it does).
DOCS_URL = "https://tfmemlint.github.io/tfmemlint/"


class Rule(NamedTuple):
    code: str
    name: str
    summary: str
    doc: RuleDoc
    enabled_by_default: bool = True
    fixable: bool = True
    level: Level = "error"

    @property
    def url(self) -> str:
        """The rule's page on the documentation site: a stable address, by code."""
        return f"{DOCS_URL}rules/{self.code.lower()}/"


class Layout(NamedTuple):
    """What a checked text's rows are to the user: one file's, or a notebook's cells joined by
    `separator` lines, with `place` naming a row of the text as "cell 3, line 4"."""

    separator: str | None = None
    place: Callable[[int], str] | None = None
    # The text of what the checked text stands in for and does not hold: a notebook's IPython
    # lines (`%env CUDA_VISIBLE_DEVICES=1`), one per line.
    set_aside: str = ""
    # The row of the checked text that stands in for each line of `set_aside`, in order.
    set_aside_rows: tuple[int, ...] = ()


FILE = Layout()


class FileResult:
    """What checking (and maybe fixing) one file produced."""

    __slots__ = (
        "depends_on",
        "filename",
        "findings",
        "fixed",
        "fixed_text",
        "internal_error",
        "original",
        "screened_out",
        "text",
    )

    def __init__(
        self,
        filename: str,
        findings: list[Finding] | None = None,
        fixed: int = 0,
        text: str | None = None,
        original: str | None = None,
        fixed_text: str | None = None,
        internal_error: bool = False,
        screened_out: bool = False,
        depends_on: tuple[Dependency, ...] = (),
    ) -> None:
        self.filename = filename
        self.findings: list[Finding] = [] if findings is None else findings
        self.fixed = fixed
        self.text = text  # the text the findings point into (after fixing, under --fix)
        self.original = original  # set, with fixed_text, when fixing changed the text
        self.fixed_text = fixed_text
        self.internal_error = internal_error
        self.screened_out = screened_out  # the pre-filter's second stage found nothing to parse
        # The project modules its names were resolved through: the result holds while they do.
        self.depends_on = depends_on

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"FileResult({shown})"
