"""Whole-script semantics (issue 4): the first session decides, and device listings before it
create the allocator with default options."""

from __future__ import annotations

import textwrap

from tests.conftest import lint_text
from tfmemlint.configuration.settings import Settings
from tfmemlint.rules import ALL_RULES

GROWTH = "tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True))"


def lint(source: str) -> list[tuple[int, str]]:
    found = lint_text("t.py", textwrap.dedent(source), Settings.default(ALL_RULES))
    return [(f.location.row, f.code) for f in found]


def test_later_session_with_other_settings_points_at_the_first() -> None:
    source = f"import tensorflow as tf\na = tf.Session()\nb = tf.Session(config={GROWTH})\n"
    assert lint(source) == [(2, "TFM101"), (3, "TFM401")]
    [_, info] = lint_text("t.py", source, Settings.default(ALL_RULES))
    assert "line 2" in info.message and "no effect" in info.message


def test_sessions_with_the_same_settings_or_in_other_scopes_are_fine() -> None:
    same = (
        f"import tensorflow as tf\na = tf.Session(config={GROWTH})\nb = tf.InteractiveSession()\n"
    )
    assert lint(same) == []
    scopes = f"import tensorflow as tf\na = tf.Session()\ndef f():\n    return tf.Session(config={GROWTH})\n"
    assert lint(scopes) == [(2, "TFM101")]


def test_device_listing_before_a_configured_session() -> None:
    source = f"""\
        import tensorflow as tf
        from tensorflow.python.client import device_lib
        print(device_lib.list_local_devices())
        available = tf.test.is_gpu_available()
        sess = tf.Session(config={GROWTH})
        """
    assert lint(source) == [(3, "TFM402"), (4, "TFM402")]


def test_device_listing_that_is_harmless() -> None:
    after = f"import tensorflow as tf\nsess = tf.Session(config={GROWTH})\nok = tf.test.is_gpu_available()\n"
    assert lint(after) == []
    configured = (
        "import tensorflow as tf\nfrom tensorflow.python.client import device_lib\n"
        f"cfg = {GROWTH}\ndevice_lib.list_local_devices(session_config=cfg)\n"
        "sess = tf.Session(config=cfg)\n"
    )
    assert lint(configured) == []
    no_session = "import tensorflow as tf\nok = tf.test.is_gpu_available()\n"
    assert lint(no_session) == []


def test_sessions_in_the_two_branches_of_an_if_are_independent() -> None:
    source = f"""\
        import tensorflow as tf
        if growth:
            sess = tf.Session(config={GROWTH})
        else:
            sess = tf.Session()
        """
    assert [code for _, code in lint(source)] == ["TFM101"]


def test_a_fix_can_bring_a_finding_that_the_text_before_it_did_not_hold() -> None:
    """Why --fix lints the fixed text again (issue 18 asked whether that could be skipped):
    configuring the session makes the device listing before it come too early."""
    from tfmemlint.running.fix_loop import fix_text

    source = (
        "import tensorflow as tf\nfrom tensorflow.python.client import device_lib\n"
        "print(device_lib.list_local_devices())\nsess = tf.Session()\n"
    )
    assert lint(source) == [(4, "TFM101")]
    fixed, count, remaining = fix_text("t.py", source, Settings.default(ALL_RULES))
    assert count == 1 and f"tf.Session(config={GROWTH})" in fixed
    assert [(f.location.row, f.code) for f in remaining] == [(3, "TFM402")]


def test_a_fix_under_a_whole_gpu_policy_reports_what_it_wrote() -> None:
    """The policy is the user's choice; the second look still says what it costs."""
    from tfmemlint.configuration.settings import Policy
    from tfmemlint.running.fix_loop import fix_text

    settings = Settings.default(ALL_RULES)._replace(policy=Policy.parse("fraction=1.0"))
    source = "import tensorflow as tf\nsess = tf.Session()\n"
    fixed, count, remaining = fix_text("t.py", source, settings)
    assert count == 1 and "per_process_gpu_memory_fraction=1.0" in fixed
    assert [f.code for f in remaining] == ["TFM303"]
