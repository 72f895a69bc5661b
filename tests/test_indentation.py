"""Python 2's indentation: a file that mixes tabs and spaces as Python 2 reads it (a tab to the
next multiple of 8 columns) and Python 3 refuses is checked and fixed whole, through a view, and
keeps its own tabs and spaces."""

from __future__ import annotations

import ast
import json
import os
import random
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import FIXTURES, run_cli
from tfmemlint.checking import engine
from tfmemlint.checking.prefilter import python2_for_python
from tfmemlint.configuration.settings import Settings
from tfmemlint.fixing import fixes
from tfmemlint.model import Finding, Location
from tfmemlint.reading.indentation import IndentationViewError, Python2Indentation, width
from tfmemlint.reading.statements import logical_lines
from tfmemlint.rules import ALL_RULES
from tfmemlint.running import fix_loop

SETTINGS = Settings.default(ALL_RULES)
EXAMPLES = int(os.environ.get("TFMEMLINT_FUZZ_EXAMPLES", "25"))

MIXED = (
    "import tensorflow as tf\n"
    "\n"
    "def main():\n"
    "\tx = tf.constant(1)\n"  # a tab: column 8
    "        config = tf.ConfigProto()\n"  # 8 spaces: the same block, to Python 2
    "\tsess = tf.Session(config=config)\n"
    "\treturn sess.run(x)\n"
)


def _tab_error_row(text: str) -> int:
    with pytest.raises(TabError) as raised:
        compile(text, "t.py", "exec")
    assert raised.value.lineno is not None
    return raised.value.lineno


def _as_python2_reads(text: str) -> str:
    """Each statement's indentation as spaces, the way `str.expandtabs` counts a tab: the
    test's own account of Python 2's reading, not the tool's."""
    pieces, cursor = [], 0
    for line in logical_lines(text)[0]:
        pieces += [text[cursor : line.line_start], line.indent.expandtabs(8)]
        cursor = line.start
    return "".join(pieces) + text[cursor:]


# --- the view -------------------------------------------------------------------------------


def test_width_moves_a_tab_to_the_next_multiple_of_8() -> None:
    assert [width(s) for s in ("", "\t", "   \t", "\t    ", " \t\t", "        ")] == [
        0,
        8,
        8,
        12,
        16,
        8,
    ]


@pytest.mark.parametrize(
    "text",
    [
        MIXED,
        "class A:\n    def f(self):\n\treturn 1\n",  # a tab under 4 spaces: column 8
        "if x:\n\tif y:\n\t    z = 1\n            w = 2\n",  # tab and 4 spaces, then 12 spaces
    ],
)
def test_a_view_where_python3_refuses_only_the_tabs(text: str) -> None:
    view = Python2Indentation.of(text)
    assert view is not None
    assert view.refused_row == _tab_error_row(text)
    ast.parse(view.view)  # Python 3 reads the view
    assert view.view == _as_python2_reads(text)
    assert view.view.count("\n") == text.count("\n")


@pytest.mark.parametrize(
    "text",
    [
        "def f():\n    return 1\n",  # spaces only
        "def f():\n\tx = (1,\n\t     2)\n\treturn x\n",  # tabs, spaces only to align
        'def f():\n    s = """\n\tkept\n"""\n    return s\n',  # a tab inside a string
        "def f():\n    x = 1\n\t# a comment, which no block counts\n    return x\n",
        "if x:\n\t\ty = 1\n    z = 2\n",  # Python 2 refuses this dedent too: recovery's
    ],
)
def test_no_view_where_the_tabs_are_not_the_trouble(text: str) -> None:
    assert Python2Indentation.of(text) is None


def test_indentation_python3_reads_and_libcst_does_not_is_read_through_the_view() -> None:
    # libcst keeps a block's indentation as its enclosing block's string with more after it.
    text = (
        "import tensorflow as tf\n"
        "def run(x):\n"
        "\twith tf.device('/cpu:0'):\n"
        "  \t\tsess = tf.Session()\n"
        "  \t\treturn sess.run(x)\n"
    )
    compile(text, "t.py", "exec")
    view = Python2Indentation.of(text)
    assert view is not None and view.refused_row is None
    found = engine.lint_text("t.py", text, SETTINGS)
    assert [(f.code, f.location.row, f.location.column) for f in found] == [("TFM101", 4, 12)]


def test_columns_come_back_to_the_real_line() -> None:
    view = Python2Indentation.of(MIXED)
    assert view is not None
    real_row = MIXED.splitlines()[5]  # "\tsess = ..."
    view_row = view.view.splitlines()[5]
    column = view_row.index("tf.Session") + 1
    back = view.location(Location(6, column))
    assert real_row[back.column - 1 :] == view_row[column - 1 :]
    assert view.location(Location(6, 1)) == Location(6, 1)
    assert view.location(Location(6, 4)) == Location(6, 2)  # inside: its end


def test_a_fixed_view_keeps_each_statements_indentation_and_an_added_one_takes_its_blocks() -> None:
    view = Python2Indentation.of(MIXED)
    assert view is not None
    fixed_view = view.view.replace(
        "        config = tf.ConfigProto()\n",
        "        config = tf.ConfigProto()\n        config.gpu_options.allow_growth = True\n",
    )
    after = view.restored(fixed_view)
    assert after.real == MIXED.replace(
        "        config = tf.ConfigProto()\n",
        "        config = tf.ConfigProto()\n        config.gpu_options.allow_growth = True\n",
    )  # the nearest statement above, in its block, is the config's: 8 spaces
    # A statement moved to another depth gets that depth's indentation; the rest keep theirs.
    moved = view.restored(
        view.view.replace("        return sess", "        if x:\n            return sess")
    )
    assert moved.real == MIXED.replace("\treturn sess", "\tif x:\n\t    return sess")


def test_a_fixed_view_python2_would_read_otherwise_is_refused() -> None:
    view = Python2Indentation.of(MIXED)
    assert view is not None
    with pytest.raises(IndentationViewError):
        # A statement indented with a tab in the view: its real indentation would be a
        # neighbour's, which expands to spaces.
        view.restored(view.view.replace("        return", "\treturn"))


# --- the checks and fixes through it ----------------------------------------------------------


def test_a_mixed_file_is_checked_and_fixed_whole(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(MIXED)
    found = json.loads(
        run_cli("--no-cache", "--output-format", "json", "--exit-zero", str(path)).stdout
    )
    assert [(f["code"], f["location"]["row"]) for f in found] == [
        ("TFM904", 5),
        ("TFM102", 6),
    ]
    assert "Python 2 indentation" in found[0]["message"]
    assert "the whole file checked" in found[0]["message"]
    assert found[1]["location"]["column"] == MIXED.splitlines()[5].index("tf.Session") + 1
    run_cli("--no-cache", "--fix", str(path))
    fixed = path.read_text()
    assert fixed == MIXED.replace(
        "        config = tf.ConfigProto()\n",
        "        config = tf.ConfigProto()\n        config.gpu_options.allow_growth = True\n",
    )


def test_json_fix_edits_make_what_fix_writes() -> None:
    path = FIXTURES / "python2" / "before" / "mixed_tabs_spaces.py"
    text = path.read_text()
    findings = engine.lint_text(
        str(path), text, SETTINGS, recover_first=python2_for_python(text.encode())
    )
    fixable = [f.fix for f in findings if f.fix]
    assert len(fixable) == 2
    applied, fixed = fixes.apply(fixable, text)
    assert applied == 2
    assert fixed == (FIXTURES / "python2" / "after" / "mixed_tabs_spaces.py").read_text()


def test_a_notebook_cell_that_mixes_tabs_and_spaces(tmp_path: Path) -> None:
    cells = [
        "import tensorflow as tf\n",
        "def run(x):\n        y = x * 2\n\tsess = tf.Session()\n\treturn sess.run(y)\n",
    ]
    notebook = {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "metadata": {},
                "outputs": [],
                "source": source,
            }
            for source in cells
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 2,
    }
    path = tmp_path / "course.ipynb"
    path.write_text(json.dumps(notebook, indent=1) + "\n")
    found = json.loads(
        run_cli("--no-cache", "--output-format", "json", "--exit-zero", str(path)).stdout
    )
    session = next(f for f in found if f["code"] == "TFM101")
    assert (session["cell"], session["location"]) == (2, {"row": 3, "column": 9})
    run_cli("--no-cache", "--fix", str(path))
    fixed = json.loads(path.read_text())["cells"][1]["source"]
    assert fixed == cells[1].replace(
        "tf.Session()",
        "tf.Session(config=tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True)))",
    )


# --- property: tabs Python 2 reads alike change nothing but the columns --------------------

# The fixtures with an indented statement, in plain UTF-8 with LF (encodings and line endings
# have fixtures of their own).
INDENTED_SOURCES = sorted(
    path
    for path in (FIXTURES / "before").glob("*.py")
    if not path.read_bytes().startswith((b"\xef\xbb\xbf", b"# -*- coding"))
    and b"\r" not in path.read_bytes()
    and any(line.indent for line in logical_lines(path.read_text(encoding="utf-8"))[0])
)


def _mixed_indentation(column: int, draw: random.Random | None) -> str:
    """Some string of tabs and spaces that reaches `column`, as Python 2 counts (spaces
    alone without `draw`)."""
    indent, at = "", 0
    while at < column:
        stop = (at // 8 + 1) * 8
        if draw is not None and stop <= column and draw.random() < 0.5:
            indent, at = indent + "\t", stop
        else:
            indent, at = indent + " ", at + 1
    return indent


def _reindented(text: str, draw: random.Random | None, scale: int = 1) -> str:
    """Each statement's indentation `scale` times as deep, with tabs and spaces mixed at
    random by `draw`."""
    pieces, cursor = [], 0
    for line in logical_lines(text)[0]:
        if line.indent and line.indent.strip(" ") == "":
            indent = _mixed_indentation(scale * len(line.indent), draw)
            pieces += [text[cursor : line.line_start], indent]
            cursor = line.start
    return "".join(pieces) + text[cursor:]


def _lint(text: str) -> list[Finding]:
    first = python2_for_python(text.encode("utf-8"))
    found = engine.lint_text("p.py", text, SETTINGS, recover_first=first)
    return [f for f in found if f.code != "TFM904"]


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(INDENTED_SOURCES), draw=st.randoms(use_true_random=False))
def test_tabs_python2_reads_alike_change_only_columns(path: Path, draw: random.Random) -> None:
    spaces = _reindented(path.read_text(encoding="utf-8"), None, scale=2)  # room for a tab
    mixed = _reindented(spaces, draw)
    assert _as_python2_reads(mixed) == _as_python2_reads(spaces)
    expected, got = _lint(spaces), _lint(mixed)
    assert [(f.code, f.location.row, f.message) for f in got] == [
        (f.code, f.location.row, f.message) for f in expected
    ]
    for old, new in zip(expected, got, strict=True):
        space_line = spaces.splitlines()[old.location.row - 1]
        mixed_line = mixed.splitlines()[new.location.row - 1]
        if old.location.column - 1 >= len(space_line) - len(space_line.lstrip()):
            assert mixed_line[new.location.column - 1 :] == space_line[old.location.column - 1 :]
    fixed_spaces, count, _ = fix_loop.fix_text("p.py", spaces, SETTINGS)
    fixed_mixed, mixed_count, _ = fix_loop.fix_text(
        "p.py", mixed, SETTINGS, recover_first=python2_for_python(mixed.encode())
    )
    assert mixed_count == count
    assert _as_python2_reads(fixed_mixed) == _as_python2_reads(fixed_spaces)
    # Every line the fixes left alone keeps its tabs and spaces; a line they changed keeps
    # its indentation (the session line's).
    gone = Counter(mixed.splitlines()) - Counter(fixed_mixed.splitlines())
    assert sum(gone.values()) == sum(
        (Counter(spaces.splitlines()) - Counter(fixed_spaces.splitlines())).values()
    )
    added = Counter(fixed_mixed.splitlines()) - Counter(mixed.splitlines())
    indents = {line[: len(line) - len(line.lstrip())] for line in added}
    assert all(line[: len(line) - len(line.lstrip())] in indents for line in gone)


@pytest.mark.parametrize("name", ["mixed_tabs_spaces.py", "tabs_only_python2.py"])
def test_the_fixtures_with_tabs_keep_their_own_tabs(name: str) -> None:
    """Python 3 refuses them for their tabs, and their fix only adds text (the golden and
    fissix checks are test_recovery's, for every Python 2 fixture)."""
    from tests.test_fuzz import _is_subsequence as is_subsequence

    before = (FIXTURES / "python2" / "before" / name).read_text()
    after = (FIXTURES / "python2" / "after" / name).read_text()
    assert Python2Indentation.of(before) is not None
    assert is_subsequence(before, after)


# --- found in review: each of these once went wrong ----------------------------------------

GROWTH_ON_FIRST_GPU = (
    'gpus = tf.config.list_physical_devices("GPU")\n'
    "if gpus:\n"
    "    tf.config.experimental.set_memory_growth(gpus[0], True)\n"
)


def test_a_file_python3_reads_stays_one_it_reads() -> None:
    # libcst refuses `f`'s indentation and CPython reads it. The fix's new block must not
    # borrow `\t` from `f` for its body under a header indented with spaces.
    text = (
        "import tensorflow as tf\n\ndef g():\n    return 2\n\ndef f(x):\n\tif x:\n"
        "  \t\treturn 1\n\n" + GROWTH_ON_FIRST_GPU
    )
    compile(text, "t.py", "exec")
    fixed, count, _ = fix_loop.fix_text("t.py", text, SETTINGS)
    assert count == 1 and "for gpu in gpus:\n        tf.config" in fixed
    compile(fixed, "t.py", "exec")


def test_json_edits_of_fixes_in_two_blocks_make_what_fix_writes() -> None:
    text = (
        "import tensorflow as tf\n\n\ndef a():\n"
        + "".join("\t" + line + "\n" for line in GROWTH_ON_FIRST_GPU.splitlines())
        + "        print(1)\n\n\ndef b():\n"
        + "".join("        " + line + "\n" for line in GROWTH_ON_FIRST_GPU.splitlines())
    )
    first = python2_for_python(text.encode())
    fixed, count, _ = fix_loop.fix_text("t.py", text, SETTINGS, recover_first=first)
    found = engine.lint_text("t.py", text, SETTINGS, recover_first=first)
    assert count == 2
    assert fixes.apply([f.fix for f in found if f.fix], text) == (2, fixed)
    body_of_b = fixed.split("def b():\n")[1]
    assert "\t" not in body_of_b  # b() was spaces only, and stays so


def test_lone_carriage_returns_end_lines_for_the_view_too() -> None:
    text = MIXED.replace("\n", "\r")
    view = Python2Indentation.of(text)
    assert view is not None and view.refused_row == 5
    found = engine.lint_text("t.py", text, SETTINGS, recover_first=True)
    assert ("TFM102", 6) in [(f.code, f.location.row) for f in found]


@pytest.mark.parametrize(
    "text",
    [
        "  \tx = 1\n\ty = 2\nimport tensorflow as tf\nsess = tf.Session()\n",  # unexpected indent
        "import tensorflow as tf\nif x:\n    if y:\n\t\tz=1\n      \tw=2\nsess = tf.Session()\n",
    ],
)
def test_indentation_python2_refuses_too_is_recoverys_alone(text: str) -> None:
    assert Python2Indentation.of(text) is None
    found = engine.lint_text("t.py", text, SETTINGS, recover_first=True)
    assert not any("tabs and spaces" in f.message for f in found)
    assert "TFM101" in [f.code for f in found]
