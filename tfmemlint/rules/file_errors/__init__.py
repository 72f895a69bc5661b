"""TFM9xx: files tfmemlint could not check. They count as findings, as ruff counts syntax errors."""

from tfmemlint.model import Rule, RuleDoc
from tfmemlint.rules.family import LOOKS_AT, RuleFamily

_NOT_READ = "Does not apply: the file is not read as Python, so nothing in it is set aside."

_GOES_ON = (
    "The run goes on with the other files, and this diagnostic counts as a finding for the "
    "exit code, as ruff counts syntax errors."
)

READ_ERROR = Rule(
    code="TFM901",
    name="unreadable-file",
    summary="The file could not be read",
    fixable=False,
    doc=RuleDoc(
        what_it_does="Reports a path that could not be read: missing, a symbolic link loop, no "
        "permission, a notebook that is not valid JSON.",
        why="A file tfmemlint cannot read is a file it cannot vouch for. " + _GOES_ON,
        example="tfmemlint does-not-exist.py",
        use_instead="tfmemlint src/",
        fix_safety="No fix.",
        recovery=_NOT_READ,
    ),
)

INVALID_ENCODING = Rule(
    code="TFM906",
    name="invalid-encoding",
    summary="The file's bytes are not valid in its encoding",
    fixable=False,
    doc=RuleDoc(
        what_it_does="Reports a file whose bytes cannot be decoded in its declared encoding "
        "(PEP 263), or in UTF-8 when it declares none.",
        why="Python would refuse to import it, and a rewrite could not keep its bytes. " + _GOES_ON,
        # The example's second line holds a Latin-1 byte in a file that declares UTF-8.
        example="# -*- coding: utf-8 -*-\nname = '\\xe9'",
        use_instead="# -*- coding: latin-1 -*-\nname = '\\xe9'",
        fix_safety="No fix: fix the encoding cookie or the bytes.",
        recovery=_NOT_READ,
    ),
)

UNKNOWN_ENCODING = Rule(
    code="TFM907",
    name="unknown-encoding-cookie",
    summary="The file declares an encoding Python does not know",
    fixable=False,
    doc=RuleDoc(
        what_it_does="Reports a coding cookie that names no codec, such as `# coding: latin-9`.",
        why="Python refuses to read such a file. " + _GOES_ON,
        example="# -*- coding: utf8mb4 -*-",
        use_instead="# -*- coding: utf-8 -*-",
        fix_safety="No fix.",
        recovery=_NOT_READ,
    ),
)

NUL_BYTES = Rule(
    code="TFM905",
    name="nul-bytes",
    summary="The file contains NUL bytes",
    fixable=False,
    doc=RuleDoc(
        what_it_does="Reports a `.py` file with NUL bytes in it: usually a binary file with the "
        "wrong name, or a file saved as UTF-16.",
        why="Python cannot compile source with NUL bytes. " + _GOES_ON,
        example="(a file saved as UTF-16)",
        use_instead="(the same file saved as UTF-8)",
        fix_safety="No fix.",
        recovery=_NOT_READ,
    ),
)

PYTHON2_SYNTAX = Rule(
    code="TFM904",
    name="python2-syntax",
    summary="Python 2 statements were set aside, or Python 2 indentation read; the rest was "
    "checked",
    fixable=False,
    doc=RuleDoc(
        what_it_does="Reports Python 2 statements in a file or a notebook cell: each is set aside, "
        "and the rest of the file is checked and fixed as usual.",
        details=(
            (
                LOOKS_AT,
                "Reports a file, or a notebook cell, with statements that are Python 2: a `print` "
                'or `exec` statement, `except E, e:`, `raise E, "msg"`, backticks, `<>`, `0777`, '
                '`10L`, `ur""`, tuple parameters. Each such statement is set aside as a '
                "same-length stand-in (a block header keeps its block), and the rest of the file "
                "is checked and fixed as usual. One line per file or cell names the first "
                "statement set aside and how many were, and any set-aside line that names a "
                "TensorFlow API, since a session there is not seen. A file whose indentation mixes "
                "tabs and spaces as Python 2 reads it (a tab to the next multiple of 8 columns) "
                "and Python 3 refuses (`TabError`) is read as Python 2 reads it and checked whole; "
                "its line says so, from the first row Python 3 refuses.",
            ),
        ),
        why="TF1-era repositories often still hold Python 2 files, and their sessions are "
        "exactly what this tool is for. Lint a Python 2 codebase with `--ignore TFM904` to keep "
        "the gate on the session rules. " + _GOES_ON,
        example='print "hello"',
        use_instead='print("hello")',
        fix_safety="No fix: the Python 2 statements stay as they are (port them with 2to3 or "
        "pyupgrade). Fixes elsewhere in the file stay away from them and write only what Python "
        "2 reads, so the file stays Python 2. In a file that mixes tabs and spaces, every line "
        "keeps its own indentation, and a line a fix adds takes that of a statement at its "
        "depth, so Python 2 reads the same blocks.",
        recovery="This is recovery's report. When set-aside statements are not all Python 2, "
        "the file gets TFM902 instead, so that `--ignore TFM904` never hides a real syntax "
        "error.",
    ),
)

WRITE_FAILED = Rule(
    code="TFM908",
    name="fix-not-written",
    summary="A fix could not be written; the file is left as it was",
    fixable=False,
    doc=RuleDoc(
        what_it_does="Reports a file whose fix was not written: it is read-only, it changed on "
        "disk while tfmemlint was fixing it, or its fixed text cannot be written in its own "
        "encoding.",
        why="tfmemlint never changes a file's permissions and never overwrites changes it did "
        "not see. The findings that the fix would have removed are reported too.",
        example="chmod a-w train.py && tfmemlint --fix train.py",
        use_instead="chmod u+w train.py && tfmemlint --fix train.py",
        fix_safety="No fix.",
        recovery=_NOT_READ,
    ),
)

SYNTAX_ERROR = Rule(
    code="TFM902",
    name="syntax-error",
    summary="Statements that are not valid Python 3 were set aside, or the file was not checked",
    fixable=False,
    doc=RuleDoc(
        what_it_does="Reports code that does not parse as Python 3 and is not Python 2: the "
        "statements that fail are set aside and the rest is checked, or, where nothing "
        "can be set aside, the file is not checked.",
        details=(
            (
                LOOKS_AT,
                "Reports code that does not parse as Python 3 and is not Python 2 (that is "
                "TFM904), with Python's own message: a half-typed exercise (`W = ???`), IPython "
                "syntax inside a statement (`files = !ls`), a block with no body. The statements "
                "that fail are set aside and the rest of the file, or notebook cell, is checked "
                "and fixed as usual; the line names the first statement set aside and how many "
                "were. Where nothing can be set aside to make the rest parse (an `else:` with no "
                "`if`), or the code is nested deeper than Python's parser allows (thousands of "
                "unary minus signs, 200 brackets, which is never handed to libcst: its parser "
                "would overflow its stack), the file is not checked at all, and the line gives "
                "Python's message and position.",
            ),
        ),
        why="tfmemlint never rewrites code it cannot parse. " + _GOES_ON,
        example="def f(:\n    pass",
        use_instead="def f():\n    pass",
        fix_safety="No fix. Fixes elsewhere in the file stay away from the set-aside "
        "statements and the statements just before and after them.",
        recovery="This is recovery's report, together with TFM904. A notebook cell that "
        "cannot be recovered statement by statement is set aside whole, and the other cells "
        "are still checked.",
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
        recovery=_NOT_READ,
    ),
)

FAMILY = RuleFamily(
    rules=(
        READ_ERROR,
        SYNTAX_ERROR,
        INTERNAL_ERROR,
        PYTHON2_SYNTAX,
        NUL_BYTES,
        INVALID_ENCODING,
        UNKNOWN_ENCODING,
        WRITE_FAILED,
    )
)
