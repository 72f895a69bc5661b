"""Large literal tables are masked before libcst parses a file (issue 6: a 1.6 MB table checked
and fixed in under 2 s; issue 7: no hang on it). A mask must never change a result."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import lint_text, run_cli
from tfmemlint.checking import engine
from tfmemlint.configuration.settings import Settings
from tfmemlint.reading import masking
from tfmemlint.rules import ALL_RULES
from tfmemlint.running.fix_loop import fix_text

FIXED_SESSION = "tf.Session(config=tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True)))"


def table_script(rows: int, newline: str = "\n", prefix: str = "TABLE") -> str:
    body = "".join(f'    ({i}, "r{i:05d}", {i * 0.25:.2f}),{newline}' for i in range(rows))
    return newline.join(
        [
            '"""Generated lookup table."""',
            "import tensorflow as tf",
            "",
            f"{prefix} = [",
            body + "]",
            "",
            "def lookup(key):",
            f"    return {prefix}[key]",
            "",
            "sess = tf.Session()",
            "",
        ]
    )


def line_breaks(text: str) -> list[int]:
    return [m.start() for m in re.finditer(r"\r\n|\r|\n", text)]


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_a_mask_keeps_every_offset_and_line_break(newline: str) -> None:
    text = table_script(3000, newline)
    masked = engine.mask(text)
    assert len(masked.regions) == 1
    assert len(masked.text) == len(text) and line_breaks(masked.text) == line_breaks(text)
    assert "(2999," not in masked.text and masked.unmask(masked.text, text) == text


def test_the_50000_row_table_is_checked_and_fixed_byte_for_byte(tmp_path: Path) -> None:
    """The issue's 1.6 MB file; its speed is measured by bench/, not here."""
    text = table_script(50_000)
    assert 1_500_000 < len(text) < 1_700_000
    path = tmp_path / "table.py"
    path.write_text(text)
    checked = run_cli("--isolated", "--output-format", "concise", str(path))
    assert checked.returncode == 1
    assert f"table.py:{text.count(chr(10))}:8: TFM101" in checked.stdout
    assert run_cli("--isolated", "--fix", str(path)).returncode == 0
    assert path.read_text() == text.replace("tf.Session()", FIXED_SESSION)


def test_masked_and_unmasked_results_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    text = table_script(3000).replace("lookup(key):", "lookup(key):\n    s = tf.Session()")
    masked_findings = lint_text("t.py", text, Settings.default(ALL_RULES))
    masked_fix = fix_text("t.py", text, Settings.default(ALL_RULES))
    monkeypatch.setattr(masking, "MIN_TEXT_CHARS", 10**9)
    assert lint_text("t.py", text, Settings.default(ALL_RULES)) == masked_findings
    assert fix_text("t.py", text, Settings.default(ALL_RULES)) == masked_fix
    assert len(masked_findings) == 2 and masked_fix[1] == 2


@pytest.mark.parametrize(
    "value",
    [
        "[" + ", ".join(f"f({i})" for i in range(2000)) + "]",  # calls: not a literal
        "[" + ", ".join(f"x{i}" for i in range(2000)) + "]",  # names
        '{"TF_FORCE_GPU_ALLOW_GROWTH": "true", '
        + ", ".join(f'"k{i}": {i}' for i in range(3000))
        + "}",
        ", ".join(str(i) for i in range(3000)),  # an unbracketed tuple has no brackets to keep
    ],
)
def test_what_is_never_masked(value: str) -> None:
    rows = value.replace(", ", ",\n    ")
    text = f"import tensorflow as tf\nX = {rows}\n" + "# padding\n" * 8000
    assert engine.mask(text).regions == ()


def test_non_ascii_before_a_table_on_its_line() -> None:
    """ast counts columns in UTF-8 bytes; the mask must land on the same characters."""
    text = table_script(3000, prefix="ÉTÉ_TABLE")
    masked = engine.mask(text)
    [region] = masked.regions
    assert text[region.start] == "[" and text[region.end - 1] == "]"
    assert masked.text.splitlines()[3] == "ÉTÉ_TABLE = ["


def test_a_fix_that_copies_a_masked_region_falls_back_to_the_plain_parse(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = table_script(3000)
    masked = engine.mask(text)
    [region] = masked.regions
    copied = masked.text + masked.text[region.start : region.end]
    with pytest.raises(masking.MaskError):
        masked.unmask(copied, text)
    changed = masked.text[: region.start + 1] + "1" + masked.text[region.start + 2 :]
    with pytest.raises(masking.MaskError):
        masked.unmask(changed, text)
    # In fix_text, a MaskError means starting over unmasked: the result is still right.
    monkeypatch.setattr(masking.Masked, "unmask", _always_fails)
    fixed, count, remaining = fix_text("t.py", text, Settings.default(ALL_RULES))
    assert fixed == text.replace("tf.Session()", FIXED_SESSION) and count == 1 and remaining == []


def _always_fails(self: masking.Masked, fixed: str, original: str) -> str:
    raise masking.MaskError("simulated")


@pytest.mark.parametrize("comment", ["# noqa: TFM101", "# tfmemlint: ignore", "# NOQA"])
def test_a_table_holding_a_suppression_comment_is_not_masked(comment: str) -> None:
    """The comment may silence a finding on the table's first line: it must stay visible."""
    rows = "".join(f'    ({i}, "row-{i:05d}", {i * 0.25:.2f}, "padding"),\n' for i in range(3000))
    text = f"import tensorflow as tf\n\nsess = tf.Session(); TABLE = [  {comment}\n{rows}]\n"
    assert engine.mask(text).regions == ()
    assert lint_text("t.py", text, Settings.default(ALL_RULES)) == []
    assert fix_text("t.py", text, Settings.default(ALL_RULES))[0] == text


@pytest.mark.parametrize("word", ["Session", "session", "SESSION", "sEsSiOn"])
@pytest.mark.parametrize("elsewhere", ["", "é"])
def test_a_table_holding_a_trigger_word_in_any_case_is_not_masked(
    word: str, elsewhere: str
) -> None:
    """ASCII regions are lowered and searched, others searched ignoring case: the same rule."""
    rows = "".join(f'    ({i}, "row-{i:05d}", {i * 0.25:.2f}),\n' for i in range(3000))
    text = f'import tensorflow as tf\nTABLE = [\n{rows}    "{word}{elsewhere}",\n]\n'
    assert engine.mask(text).regions == ()
    assert engine.mask(text.replace(word, "plain")).regions != ()
