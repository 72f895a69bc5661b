"""The runner's safety net, on real files: a fix that would not parse is never written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tfmemlint.configuration.settings import Settings
from tfmemlint.fixing import fixes
from tfmemlint.rules import ALL_RULES
from tfmemlint.running import file_check

BARE = "import tensorflow.compat.v1 as tf\nsess = tf.Session()\n"


def test_unparseable_fix_is_an_internal_error_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "a.py"
    path.write_text(BARE)
    real_apply = fixes.apply

    def broken_apply(found, text):
        applied, new_text = real_apply(found, text)
        return applied, new_text + "def (:\n"

    monkeypatch.setattr(fixes, "apply", broken_apply)
    result = file_check.check_file(str(path), Settings.default(ALL_RULES), "fix")
    assert result.internal_error
    assert [f.code for f in result.findings] == ["TFM903"]
    assert "does not parse" in result.findings[0].message
    assert path.read_text() == BARE


def test_file_changed_on_disk_meanwhile_is_not_overwritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "a.py"
    path.write_text(BARE)
    real_apply = fixes.apply

    def apply_while_someone_edits(found, text):
        path.write_text(BARE + "# edited by someone else\n")
        return real_apply(found, text)

    monkeypatch.setattr(fixes, "apply", apply_while_someone_edits)
    result = file_check.check_file(str(path), Settings.default(ALL_RULES), "fix")
    assert path.read_text().endswith("# edited by someone else\n")
    assert "changed on disk" in result.findings[-1].message
    assert result.fixed == 0


def test_deeply_nested_generated_code_is_checked(tmp_path: Path) -> None:
    """A long implicit string concatenation nests libcst nodes far past Python's default
    recursion limit of 1,000 (pydoc_data/topics.py is such a file)."""
    import sys

    if sys.version_info < (3, 11):
        pytest.skip("3.10 keeps the default limit and reports an internal error instead")
    path = tmp_path / "generated.py"
    strings = "\n".join(f"    'part {i} '" for i in range(1500))
    path.write_text(
        f"import tensorflow.compat.v1 as tf\nTEXT = (\n{strings}\n)\nsess = tf.Session()\n"
    )
    limit = sys.getrecursionlimit()
    result = file_check.check_file(str(path), Settings.default(ALL_RULES), "check")
    assert [f.code for f in result.findings] == ["TFM101"]
    assert sys.getrecursionlimit() == limit  # restored


def test_a_fix_that_changes_other_code_is_never_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The syntax trees must agree outside what fixes add, as black checks its output."""
    path = tmp_path / "a.py"
    path.write_text(BARE + "steps = 10\n")
    real_apply = fixes.apply

    def sloppy_apply(found, text):
        applied, new_text = real_apply(found, text)
        return applied, new_text.replace("steps = 10", "steps = 11")  # parses, but is wrong

    monkeypatch.setattr(fixes, "apply", sloppy_apply)
    result = file_check.check_file(str(path), Settings.default(ALL_RULES), "fix")
    assert result.internal_error
    assert [f.code for f in result.findings] == ["TFM903"]
    assert "changed code outside" in result.findings[0].message
    assert path.read_text() == BARE + "steps = 10\n"


def test_the_safety_net_accepts_every_kind_of_fix() -> None:
    from tfmemlint.fixing import safety

    original = (
        "import os\nimport tensorflow as tf\nx = tf.constant(1)\n"
        'os.environ["TF_FORCE_GPU_ALLOW_GROWTH"] = "True"\n'
        'gpus = tf.config.list_physical_devices("GPU")\n'
        "tf.config.experimental.set_memory_growth(gpus[0], True)\n"
        "c = tf.ConfigProto()\ns = tf.Session(config=c)\nt = tf.Session()\n"
    )
    fixed = (
        "import os\nimport tensorflow as tf\n"
        'gpus = tf.config.list_physical_devices("GPU")\n'
        "for gpu in gpus:\n    tf.config.experimental.set_memory_growth(gpu, True)\n"
        "x = tf.constant(1)\n"
        'os.environ["TF_FORCE_GPU_ALLOW_GROWTH"] = "true"\n'
        "c = tf.ConfigProto()\nc.gpu_options.allow_growth = True\ns = tf.Session(config=c)\n"
        "t = tf.Session(config=tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True)))\n"
    )
    safety.check(original, fixed)  # moved, added, re-valued: all allowed
    with pytest.raises(safety.UnsafeFixError):
        safety.check(original, fixed.replace("x = tf.constant(1)", "x = tf.constant(2)"))
    with pytest.raises(safety.UnsafeFixError):
        safety.check(original, fixed.replace("t = tf.Session", "t = tf.InteractiveSession"))


@pytest.mark.parametrize(
    "original, changed",
    [
        # The same line holds a different statement after a continuation line.
        ("x = \\\n1; y = 3\ny = 3\n", "x = 1\n1; y = 3\n"),
        # The same line under another decorator.
        ("@a\ndef f():\n    pass\n", "@b\ndef f():\n    pass\n"),
        # Identical statements, one of them dropped.
        ("import os\nf()\nf()\n", "import os\nf()\n"),
        ("s = 'é'; t = 1\n", "s = 'é'; t = 2\n"),
    ],
)
def test_the_safety_net_rejects_changes_hidden_in_look_alike_lines(
    original: str, changed: str
) -> None:
    from tfmemlint.fixing import safety

    with pytest.raises(safety.UnsafeFixError):
        safety.check(original, changed)
