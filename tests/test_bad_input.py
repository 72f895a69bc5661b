"""Bad input (issue 7): each kind gets one clear diagnostic with its own code, path and line, and
the run goes on with the other files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_cli

SESSION = b"import tensorflow as tf\nsess = tf.Session()\n"


# Python 2 statements are set aside, and the session after them is still checked: its fix,
# beside a set-aside statement, is written where the safety net proves the statement kept.
GROWTH = b"sess = tf.Session(config=tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True)))"


@pytest.mark.parametrize(
    "raw, code, row",
    [
        (b"import tensorflow as tf\nprint 'x'\nsess = tf.Session()\n", "TFM904", 2),
        (b"import tensorflow as tf\nexec 'x = 1'\nsess = tf.Session()\n", "TFM904", 2),
        (b"import tensorflow as tf\nmode = 0777\nsess = tf.Session()\n", "TFM904", 2),
        # An unclosed bracket takes the rest of the file with it.
        (b"import tensorflow as tf\ndef f(:\n    pass\nsess = tf.Session()\n", "TFM902", 2),
        (b"import tensorflow as tf\nx = 1\x00\nsess = tf.Session()\n", "TFM905", 2),
        (b"import tensorflow as tf\nname = '\xe9'\nsess = tf.Session()\n", "TFM906", 2),
        (
            b"# -*- coding: utf-8 -*-\nimport tensorflow as tf\nname = '\xe9'\nsess = tf.Session()\n",
            "TFM906",
            3,
        ),
        (
            b"# -*- coding: no-such-codec -*-\nimport tensorflow as tf\nsess = tf.Session()\n",
            "TFM907",
            1,
        ),
        # Codecs Python knows that cannot decode source: once an exception that ended the run.
        (b"# coding: undefined\nimport tensorflow as tf\nsess = tf.Session()\n", "TFM907", 1),
        (b"# coding: punycode\nimport tensorflow as tf\nsess = tf.Session()\n", "TFM907", 1),
        # Nested past the limits of CPython's parser, and a little further, libcst's native
        # parser overflows the stack and kills the process: never handed to it.
        (
            b"import tensorflow as tf\nx = " + b"-" * 10_000 + b"1\nsess = tf.Session()\n",
            "TFM902",
            1,
        ),
        (
            b"import tensorflow as tf\nx = "
            + b"[" * 1500
            + b"]" * 1500
            + b"\nsess = tf.Session()\n",
            "TFM902",
            2,
        ),
    ],
)
def test_bad_input_gets_its_own_diagnostic_and_the_run_goes_on(
    tmp_path: Path, raw: bytes, code: str, row: int
) -> None:
    (tmp_path / "bad.py").write_bytes(raw)
    (tmp_path / "good.py").write_bytes(SESSION)
    result = run_cli("--fix", "--output-format", "json", ".", cwd=tmp_path)
    findings = json.loads(result.stdout)
    assert [(Path(f["filename"]).name, f["code"], f["location"]["row"]) for f in findings] == [
        ("bad.py", code, row)
    ]
    assert "\n" not in findings[0]["message"]  # one line
    if code == "TFM904":
        assert (tmp_path / "bad.py").read_bytes() == raw.replace(b"sess = tf.Session()", GROWTH)
    else:
        assert (tmp_path / "bad.py").read_bytes() == raw  # never touched
    assert b"allow_growth=True" in (tmp_path / "good.py").read_bytes()
    assert result.returncode == 1


@pytest.mark.parametrize(
    "deep, code, status",
    [
        # Past the limits of CPython's parser: never handed to libcst.
        (b"x = " + b"-" * 20_000 + b"1\n", "TFM902", 1),
        # CPython compiles it; libcst's parser needs more stack than the usual 8 MB, and its
        # Python side then runs out of recursion: one file's internal error.
        (b"ok = " + b" and ".join([b"a"] * 10_000) + b"\n", "TFM903", 2),
    ],
)
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_file_nested_too_deeply_takes_nothing_down(
    tmp_path: Path, deep: bytes, code: str, status: int, jobs: str
) -> None:
    """Among enough files for worker processes, or in this process: one that would overflow
    the parser's stack (which once killed the run without a word) is reported, and every
    other file is checked."""
    for number in range(10):
        (tmp_path / f"good{number}.py").write_bytes(SESSION)
    (tmp_path / "deep.py").write_bytes(SESSION + deep)
    result = run_cli("-j", jobs, "--output-format", "json", ".", cwd=tmp_path)
    assert result.returncode == status, result.stderr
    found = sorted((Path(f["filename"]).name, f["code"]) for f in json.loads(result.stdout))
    assert found == [("deep.py", code)] + [(f"good{n}.py", "TFM101") for n in range(10)]


def test_paths_that_are_not_plain_files(tmp_path: Path) -> None:
    (tmp_path / "x.py").mkdir()  # a folder with a Python name
    (tmp_path / "x.py" / "inner.py").write_bytes(SESSION)
    (tmp_path / "loop").symlink_to(tmp_path / "loop")  # a symlink loop
    (tmp_path / "empty.py").write_bytes(b"")
    (tmp_path / "empty_dir").mkdir()
    result = run_cli("--output-format", "json", ".", "loop", "empty_dir", "empty.py", cwd=tmp_path)
    found = [
        (os.path.relpath(f["filename"], tmp_path), f["code"]) for f in json.loads(result.stdout)
    ]
    assert found == [("x.py/inner.py", "TFM101"), ("loop", "TFM901")]


def test_a_write_that_fails_is_its_own_diagnostic(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_bytes(SESSION)
    path.chmod(0o444)
    result = run_cli("--fix", "--output-format", "json", "a.py", cwd=tmp_path)
    codes = [f["code"] for f in json.loads(result.stdout)]
    assert codes == ["TFM101", "TFM908"]  # the finding stays, and why it was not fixed
    assert path.read_bytes() == SESSION


def test_a_file_libcst_cannot_reproduce_is_reported_and_left_alone(tmp_path: Path) -> None:
    """libcst drops a line that holds only a backslash continuation: positions would be a line
    off, so the file gets an internal-error diagnostic and is never written."""
    raw = b"\n \\\r\nimport tensorflow.compat.v1 as tf\nsess = tf.Session()\n"
    path = tmp_path / "odd.py"
    path.write_bytes(raw)
    result = run_cli("--fix", "--output-format", "concise", str(path))
    assert result.returncode == 2 and "TFM903" in result.stdout and "byte for byte" in result.stdout
    assert path.read_bytes() == raw


def test_a_file_libcst_cannot_reproduce_is_reported_where_a_finding_needs_its_place(
    tmp_path: Path,
) -> None:
    """libcst drops a form feed that starts a line. A session whose config cannot be told is
    TFM190, off by default: where it is not selected nothing needs a position, and nothing is
    reported; where it is, the finding cannot be placed, and the file is TFM903."""
    raw = b"import tensorflow as tf\n\n\x0cdef run(**kw):\n    return tf.Session(**kw)\n"
    path = tmp_path / "form_feed.py"
    path.write_bytes(raw)
    quiet = run_cli("--no-cache", "--output-format", "concise", str(path))
    assert quiet.returncode == 0 and "TFM" not in quiet.stdout
    asked = run_cli(
        "--no-cache", "--extend-select", "TFM190", "--output-format", "concise", str(path)
    )
    assert asked.returncode == 2 and "TFM903" in asked.stdout and "byte for byte" in asked.stdout
    assert path.read_bytes() == raw


@pytest.mark.parametrize("tail", [b"\n\n        ", b"\t \x0c", b"\n   \n"])
def test_a_last_line_of_only_blanks_is_checked_and_fixed_with_its_blanks_kept(
    tail: bytes, tmp_path: Path
) -> None:
    """libcst leaves out a last line of only spaces (an editor's leftover, with no newline
    after it). Nothing comes after it, so positions hold: the file is checked and fixed like
    any other, and its last bytes stay."""
    raw = b"import tensorflow.compat.v1 as tf\nsess = tf.Session()\nprint(sess)" + tail
    path = tmp_path / "ends_in_blanks.py"
    path.write_bytes(raw)
    result = run_cli("--fix", "--no-cache", "--output-format", "concise", str(path))
    assert result.returncode == 0, result.stdout
    fixed = path.read_bytes()
    assert fixed.endswith(b"print(sess)" + tail)
    assert b"allow_growth=True" in fixed


def test_pythons_warnings_about_the_code_are_not_printed(tmp_path: Path) -> None:
    """The safety net and the table masking parse with CPython, which warns about code such as
    invalid escapes; those warnings are not what the user asked about."""
    path = tmp_path / "a.py"
    table = "ROWS = [" + ", ".join(str(i) for i in range(20_000)) + "]\n"
    path.write_text('import tensorflow as tf\nPATTERN = "\\d+"\n' + table + "sess = tf.Session()\n")
    done = subprocess.run(
        [sys.executable, "-W", "always", "-m", "tfmemlint", "--fix", "--no-cache", str(path)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout
    assert "Warning" not in done.stderr and "Warning" not in done.stdout
    assert "allow_growth=True" in path.read_text()
