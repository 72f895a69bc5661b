"""`--add-noqa` (issue 17): every finding silenced on its own line, so that a gate can start on old
code from "no new findings"; afterwards a check finds nothing, and a second run changes nothing."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from tests.conftest import run_cli
from tests.test_notebooks import write_notebook

SOURCE = (
    "import tensorflow.compat.v1 as tf\r\n"
    "s = tf.Session()   \r\n"  # trailing blanks give way to the comment
    "t = tf.Session(config=tf.ConfigProto())  # keep  # noqa: E501\r\n"
    "u = tf.Session(\r\n"
    "    target='')\r\n"
    'v = tf.Session(graph=load("""\r\n'  # ends in a string: the call's last line takes it
    '"""))\r\n'
)
SILENCED = (
    "import tensorflow.compat.v1 as tf\r\n"
    "s = tf.Session()  # noqa: TFM101\r\n"
    "t = tf.Session(config=tf.ConfigProto())  # keep  # noqa: E501, TFM102\r\n"
    "u = tf.Session(  # noqa: TFM101\r\n"
    "    target='')\r\n"
    'v = tf.Session(graph=load("""\r\n'
    '"""))  # noqa: TFM101\r\n'
)


def test_every_finding_is_silenced_and_every_other_byte_kept(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_bytes(SOURCE.encode())
    path.chmod(0o640)
    added = run_cli("--isolated", "--select", "TFM1", "--add-noqa", str(path))
    assert added.returncode == 0, added.stdout + added.stderr
    assert "Added 4 noqa directives." in added.stdout
    assert path.read_bytes() == SILENCED.encode()
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    after = run_cli("--isolated", "--select", "TFM1", "--output-format", "json", str(path))
    assert (after.returncode, json.loads(after.stdout)) == (0, [])
    again = run_cli("--isolated", "--select", "TFM1", "--add-noqa", str(path))
    assert "Added 0 noqa directives." in again.stdout
    assert path.read_bytes() == SILENCED.encode()


def test_the_encoding_is_kept(tmp_path: Path) -> None:
    source = "# -*- coding: latin-1 -*-\nimport tensorflow as tf\nsess = tf.Session()  # café\n"
    path = tmp_path / "latin.py"
    path.write_bytes(source.encode("latin-1"))
    assert run_cli("--isolated", "--add-noqa", str(path)).returncode == 0
    expected = source.replace("# café\n", "# café  # noqa: TFM101\n")
    assert path.read_bytes() == expected.encode("latin-1")


def test_what_no_comment_can_silence_is_said_and_left(tmp_path: Path) -> None:
    stuck = tmp_path / "stuck.py"
    # The call's only line ends inside a string: a comment there would be part of it.
    stuck.write_text('import tensorflow as tf\ns = tf.Session() or """\n"""\n')
    broken = tmp_path / "broken.py"
    broken.write_text("import tensorflow as tf\ndef f(:\n    tf.Session()\n")
    result = run_cli("--isolated", "--add-noqa", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "Added 0 noqa directives." in result.stdout
    assert f"{stuck}:2:5: TFM101 not silenced: its lines end inside a string" in result.stderr
    assert f"{broken}:2:1: TFM902 not silenced: a problem of the whole file" in result.stderr
    assert stuck.read_text() == 'import tensorflow as tf\ns = tf.Session() or """\n"""\n'


def test_a_file_that_cannot_be_written_is_an_error_and_the_run_goes_on(tmp_path: Path) -> None:
    locked = tmp_path / "a_locked.py"
    locked.write_text("import tensorflow as tf\nsess = tf.Session()\n")
    locked.chmod(0o444)
    other = tmp_path / "b_other.py"
    other.write_text("import tensorflow as tf\nsess = tf.Session()\n")
    result = run_cli("--isolated", "--add-noqa", str(tmp_path))
    assert result.returncode == 2
    assert f"{locked}: no noqa added:" in result.stderr
    assert "read-only" in result.stderr
    assert other.read_text().endswith("sess = tf.Session()  # noqa: TFM101\n")
    assert "Added 1 noqa directive." in result.stdout


def test_in_a_notebook_only_the_cells_sources_change(tmp_path: Path) -> None:
    path = tmp_path / "train.ipynb"
    before = json.loads(write_notebook(path))
    result = run_cli("--isolated", "--add-noqa", str(path))
    assert result.returncode == 0, result.stderr
    assert "Added 2 noqa directives." in result.stdout
    after = json.loads(path.read_bytes())
    changed = [
        i for i, (a, b) in enumerate(zip(before["cells"], after["cells"], strict=True)) if a != b
    ]
    assert changed == [2, 4]
    assert after["cells"][2]["source"][1] == "sess = tf.Session(config=config)  # noqa: TFM102\n"
    assert after["cells"][4]["source"] == "# 显存\nother = tf.Session()  # noqa: TFM101"
    for key in ("metadata", "outputs", "execution_count"):
        assert after["cells"][2][key] == before["cells"][2][key]
    assert run_cli("--isolated", str(path)).returncode == 0


def test_add_noqa_refuses_what_it_cannot_mean(tmp_path: Path) -> None:
    for extra in (["--fix"], ["--diff"], ["-"]):
        result = run_cli("--isolated", "--add-noqa", *extra, str(tmp_path))
        assert result.returncode == 2
        assert "--add-noqa" in result.stderr
