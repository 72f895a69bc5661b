"""TFM9xx: files tfmemlint could not check. They count as findings, as ruff counts syntax errors."""

from tfmemlint.model import Rule, RuleDoc
from tfmemlint.rules import RuleFamily

READ_ERROR = Rule(
    code="TFM901",
    name="unreadable-file",
    summary="The file could not be read, decoded or written",
    fixable=False,
    doc=RuleDoc(
        what_it_does="Reports a path that could not be read (missing, no permission), whose bytes "
        "are not valid in its declared encoding (PEP 263; UTF-8 by default), or whose fix could "
        "not be written (read-only, changed on disk meanwhile).",
        why="A file tfmemlint cannot read is a file it cannot vouch for. The run goes on with the "
        "other files, and this diagnostic makes the exit code non-zero.",
        # The example's second line holds a Latin-1 byte in a file that declares UTF-8.
        example="# -*- coding: utf-8 -*-\nname = '\\xe9'",
        use_instead="# -*- coding: latin-1 -*-\nname = '\\xe9'",
        fix_safety="No fix: fix the file's encoding cookie or its bytes.",
    ),
)

SYNTAX_ERROR = Rule(
    code="TFM902",
    name="syntax-error",
    summary="The file is not valid Python 3",
    fixable=False,
    doc=RuleDoc(
        what_it_does="Reports a file that does not parse as Python 3, such as Python 2 code.",
        why="tfmemlint never rewrites a file it cannot parse. The run goes on with the other "
        "files, and this diagnostic makes the exit code non-zero.",
        example='print "hello"',
        use_instead='print("hello")',
        fix_safety="No fix.",
    ),
)

INTERNAL_ERROR = Rule(
    code="TFM903",
    name="internal-error",
    summary="tfmemlint failed on this file; nothing was written to it",
    fixable=False,
    doc=RuleDoc(
        what_it_does="Reports a file on which tfmemlint itself failed, or whose fix did not pass "
        "the safety check (the fixed text must parse). The file is left as it was.",
        why="A fixer must never write a file it is not sure about. The exit code is 2.",
        example="(any file that triggers a bug in tfmemlint)",
        use_instead="(please report it, with the file)",
        fix_safety="No fix.",
    ),
)

FAMILY = RuleFamily(rules=(READ_ERROR, SYNTAX_ERROR, INTERNAL_ERROR))
