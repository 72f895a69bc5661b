"""Process-wide settings (issue 4): environment variables and hidden GPUs make the sessions after
them memory-aware; a TF_FORCE_GPU_ALLOW_GROWTH value TensorFlow ignores is TFM201."""

from __future__ import annotations

import textwrap

import pytest

from tests.conftest import lint_text
from tfmemlint.configuration.settings import Policy, Settings, select_rules
from tfmemlint.rules import ALL_RULES
from tfmemlint.running.fix_loop import fix_text

SETTINGS = Settings(Policy(), select_rules(ALL_RULES, extend_select=["TFM190"]))


def codes(source: str) -> list[str]:
    return [f.code for f in lint_text("t.py", textwrap.dedent(source), SETTINGS)]


@pytest.mark.parametrize(
    "setting",
    [
        'os.environ["TF_FORCE_GPU_ALLOW_GROWTH"] = "true"',
        "os.environ['TF_FORCE_GPU_ALLOW_GROWTH'] = 'true'",
        'os.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")',
        'os.environ.update({"TF_FORCE_GPU_ALLOW_GROWTH": "true"})',
        'os.environ.update(TF_FORCE_GPU_ALLOW_GROWTH="true")',
        'os.putenv("TF_FORCE_GPU_ALLOW_GROWTH", "true")',
        'os.environ["CUDA_VISIBLE_DEVICES"] = ""',
        'os.environ["CUDA_VISIBLE_DEVICES"] = "-1"',
        'tf.config.set_visible_devices([], "GPU")',
        'tf.config.experimental.set_visible_devices([], device_type="GPU")',
    ],
)
def test_process_wide_settings_cover_the_sessions_after_them(setting: str) -> None:
    before = f"import os\nimport tensorflow as tf\n{setting}\nsess = tf.Session()\n"
    assert codes(before) == []
    after = f"import os\nimport tensorflow as tf\nsess = tf.Session()\n{setting}\n"
    assert "TFM101" in codes(after)  # too late for a session above it


@pytest.mark.parametrize(
    "setting",
    [
        'tf.config.set_visible_devices([], "GPU")',
        'os.environ["CUDA_VISIBLE_DEVICES"] = "-1"',
        'os.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")',
    ],
)
def test_eager_executions_runtime_starts_at_its_first_op(setting: str) -> None:
    """`enable_eager_execution()` keeps its config for the runtime, which starts at the first
    op: a setting between the two holds (issue 42's one false positive). After the first op,
    or after a call that may run one, it comes too late."""
    head = "import os\nimport tensorflow as tf\ntf.compat.v1.enable_eager_execution()\n"
    main = "\n\ndef main():\n    print(tf.ones([2]))\n\n\nif __name__ == '__main__':\n    main()\n"
    listed = 'gpus = tf.config.list_physical_devices("GPU")\n'
    assert codes(head + listed + setting + main) == []
    assert "TFM101" in codes(head + "print(tf.ones([1]))\n" + setting + main)
    assert "TFM101" in codes(head + "warm_up()\n" + setting + main)
    # in a function, the setting after it in the same function
    local = "def main():\n    tf.compat.v1.enable_eager_execution()\n    " + setting + "\n"
    assert codes("import os\nimport tensorflow as tf\n" + local + "    print(tf.ones([2]))\n") == []


@pytest.mark.parametrize(
    "spelled",
    [
        "import tensorflow.contrib.eager as tfe\ntfe.enable_eager_execution()",
        "tfe = tf.contrib.eager\ntfe.enable_eager_execution()",
    ],
)
def test_tf_contrib_eagers_spelling_is_the_same_entry_point(spelled: str) -> None:
    """TF 1.5 to 1.7 enabled eager execution through `tf.contrib.eager`."""
    source = f"import tensorflow as tf\n{spelled}\nprint(tf.ones([2]))\n"
    assert codes(source) == ["TFM101"]
    fixed, _, _ = fix_text("t.py", source, SETTINGS)
    assert "enable_eager_execution(config=tf.ConfigProto(gpu_options=" in fixed
    assert codes(fixed) == []


def test_module_setting_covers_sessions_in_functions_and_from_environ_import() -> None:
    source = """\
        from os import environ
        import tensorflow as tf
        def main():
            return tf.Session()
        environ["TF_FORCE_GPU_ALLOW_GROWTH"] = "true"
        """
    assert codes(source) == []


@pytest.mark.parametrize(
    "setting",
    [
        'os.environ["CUDA_VISIBLE_DEVICES"] = "0"',
        'os.environ["TF_FORCE_GPU_ALLOW_GROWTH"] = "false"',
        'os.environ["TF_FORCE_GPU_ALLOW_GROWTH"] = flag',
        'environ["TF_FORCE_GPU_ALLOW_GROWTH"] = "true"',  # not os.environ
        'tf.config.set_visible_devices(gpus[:1], "GPU")',
        'tf.config.set_visible_devices([], "CPU")',
        'def helper():\n    os.environ["TF_FORCE_GPU_ALLOW_GROWTH"] = "true"',
    ],
)
def test_settings_that_do_not_limit_memory(setting: str) -> None:
    source = f"import os\nimport tensorflow as tf\nenviron = {{}}\n{setting}\nsess = tf.Session()\n"
    assert codes(source) == ["TFM101"]


@pytest.mark.parametrize(
    "written, fixed_to",
    [
        ('"True"', '"true"'),
        ("'1'", "'true'"),
        ('"yes"', '"true"'),
        ('"False"', '"false"'),
        ('"0"', '"false"'),
        ('"maybe"', None),
    ],
)
def test_invalid_force_growth_values(written: str, fixed_to: str | None) -> None:
    source = f'import os\nos.environ["TF_FORCE_GPU_ALLOW_GROWTH"] = {written}\n'
    [finding] = lint_text("t.py", source, SETTINGS)
    assert finding.code == "TFM201"
    assert finding.location.column == source.splitlines()[1].index(written) + 1
    fixed, _, remaining = fix_text("t.py", source, SETTINGS)
    if fixed_to is None:
        assert finding.fix is None and fixed == source
    else:
        assert fixed == f'import os\nos.environ["TF_FORCE_GPU_ALLOW_GROWTH"] = {fixed_to}\n'
        assert remaining == []


def test_str_of_a_literal_is_not_a_bool_made_into_text() -> None:
    from tests.conftest import lint_text
    from tfmemlint.configuration.settings import Settings

    source = 'import os\nos.environ["TF_FORCE_GPU_ALLOW_GROWTH"] = str(1)\n'
    assert lint_text("t.py", source, Settings.default(ALL_RULES)) == []
