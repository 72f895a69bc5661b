"""The runner's safety net, on real files: a fix that would not parse is never written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tfmemlint import fixes, runner
from tfmemlint.settings import Settings

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
    result = runner.check_file(str(path), Settings.default(), "fix")
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
    result = runner.check_file(str(path), Settings.default(), "fix")
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
    result = runner.check_file(str(path), Settings.default(), "check")
    assert [f.code for f in result.findings] == ["TFM101"]
    assert sys.getrecursionlimit() == limit  # restored
