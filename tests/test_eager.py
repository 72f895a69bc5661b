"""TF2 eager rules (issue 4): growth on some GPUs, configuration after the runtime started,
growth and a limit on one GPU. Golden strings: TensorFlow's CPU build lists no GPU, so the
configuration code of such scripts never runs here and a runnable fixture would prove nothing."""

from __future__ import annotations

import textwrap

import pytest

from tests.conftest import lint_text
from tfmemlint.configuration.settings import Settings
from tfmemlint.rules import ALL_RULES
from tfmemlint.running.fix_loop import fix_text

HEAD = 'import tensorflow as tf\ngpus = tf.config.list_physical_devices("GPU")\n'


def lint(source: str) -> list[tuple[int, str]]:
    found = lint_text("t.py", textwrap.dedent(source), Settings.default(ALL_RULES))
    return [(f.location.row, f.code) for f in found]


def fixed(source: str) -> str:
    return fix_text("t.py", textwrap.dedent(source), Settings.default(ALL_RULES))[0]


def test_growth_on_the_first_gpu_becomes_a_loop() -> None:
    source = HEAD + "if gpus:\n    tf.config.experimental.set_memory_growth(gpus[0], True)\n"
    assert lint(source) == [(4, "TFM202")]
    assert fixed(source) == HEAD + (
        "if gpus:\n    for gpu in gpus:\n        tf.config.experimental.set_memory_growth(gpu, True)\n"
    )
    assert lint(fixed(source)) == []


@pytest.mark.parametrize(
    "source",
    [
        # every GPU already
        HEAD + "for gpu in gpus:\n    tf.config.experimental.set_memory_growth(gpu, True)\n",
        # only one GPU is visible, so growth on it alone is fine
        HEAD + 'tf.config.set_visible_devices(gpus[0], "GPU")\n'
        "tf.config.experimental.set_memory_growth(gpus[0], True)\n",
        'import os\nos.environ["CUDA_VISIBLE_DEVICES"] = "0"\n'
        + HEAD
        + "tf.config.experimental.set_memory_growth(gpus[0], True)\n",
        # not the list of GPUs
        "import tensorflow as tf\ntf.config.experimental.set_memory_growth(devices[0], True)\n",
        'import tensorflow as tf\ncpus = tf.config.list_physical_devices("CPU")\n'
        "tf.config.experimental.set_memory_growth(cpus[0], True)\n",
    ],
)
def test_growth_that_is_fine(source: str) -> None:
    assert lint(source) == []


def test_growth_fix_uses_a_free_loop_variable() -> None:
    source = HEAD + "gpu = 1\ntf.config.experimental.set_memory_growth(gpus[0], True)\n"
    assert "for _gpu in gpus:\n    tf.config.experimental.set_memory_growth(_gpu, True)" in fixed(
        source
    )


@pytest.mark.parametrize(
    "initializer",
    [
        "x = tf.constant(1.0)",
        "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])",
        "devices = tf.config.list_logical_devices('GPU')",
        "ok = tf.test.is_gpu_available()",
        "info = tf.config.experimental.get_memory_info('GPU:0')",
        "y = tf.math.sqrt(4.0)",
        "from tensorflow.python.client import device_lib\nlocal = device_lib.list_local_devices()",
        # a library that starts the runtime (`starters.py`)
        "import tensorflow_datasets as tfds\nds = tfds.load('mnist')",
        "import tensorflow_hub as hub\nmodel = hub.load('https://tfhub.dev/m')",
    ],
)
def test_configuration_after_initialization(initializer: str) -> None:
    source = f"import tensorflow as tf\n{initializer}\n" + (
        'gpus = tf.config.list_physical_devices("GPU")\n'
        "for gpu in gpus:\n    tf.config.experimental.set_memory_growth(gpu, True)\n"
    )
    assert [code for _, code in lint(source)] == ["TFM203"]
    [finding] = lint_text("t.py", source, Settings.default(ALL_RULES))
    assert f"on line {initializer.count(chr(10)) + 2} initialized the runtime" in finding.message


@pytest.mark.parametrize(
    "before",
    [
        'devices = tf.config.list_physical_devices("GPU")',  # does not initialize
        "tf.random.set_seed(0)",
        "def build():\n    return tf.constant(1.0)",  # a definition runs nothing
    ],
)
def test_things_that_do_not_initialize(before: str) -> None:
    source = f"import tensorflow as tf\n{before}\n" + (
        'gpus = tf.config.list_physical_devices("GPU")\n'
        "for gpu in gpus:\n    tf.config.experimental.set_memory_growth(gpu, True)\n"
    )
    assert lint(source) == []


def test_growth_and_limit_on_the_same_gpu() -> None:
    limit = "tf.config.set_logical_device_configuration({d}, [tf.config.LogicalDeviceConfiguration(memory_limit=1024)])"
    growth = "tf.config.experimental.set_memory_growth({d}, True)"
    after_limit = HEAD + limit.format(d="gpus[0]") + "\n" + growth.format(d="gpus[0]") + "\n"
    assert lint(after_limit) == [(4, "TFM202"), (4, "TFM204")]
    in_loops = (
        HEAD + f"for gpu in gpus:\n    {growth.format(d='gpu')}\n{limit.format(d='gpus[1]')}\n"
    )
    assert lint(in_loops) == [(5, "TFM204")]
    different = HEAD + growth.format(d="gpus[0]") + "\n" + limit.format(d="gpus[1]") + "\n"
    assert [code for _, code in lint(different)] == ["TFM202"]
    growth_off = (
        HEAD
        + limit.format(d="gpus[0]")
        + "\n"
        + growth.format(d="gpus[0]").replace("True", "False")
        + "\n"
    )
    assert lint(growth_off) == []


GROWTH_LOOP = "for gpu in gpus:\n    tf.config.experimental.set_memory_growth(gpu, True)\n"


def test_configuration_moves_before_the_initializer() -> None:
    source = (
        'import tensorflow as tf\n\nx = tf.constant(1.0)  # starts it\ngpus = tf.config.list_physical_devices("GPU")\n'
        + GROWTH_LOOP
        + "print(x)\n"
    )
    assert fixed(source) == (
        'import tensorflow as tf\n\ngpus = tf.config.list_physical_devices("GPU")\n'
        + GROWTH_LOOP
        + "x = tf.constant(1.0)  # starts it\nprint(x)\n"
    )
    assert lint(fixed(source)) == []


def test_configuration_in_a_function_moves_within_it() -> None:
    source = (
        "import tensorflow as tf\ndef main():\n    model = tf.keras.Sequential([])\n"
        '    gpus = tf.config.list_physical_devices("GPU")\n'
        "    if gpus:\n        tf.config.experimental.set_memory_growth(gpus[0], True)\n"
    )
    result = fixed(source)
    assert result.index("set_memory_growth") < result.index("tf.keras.Sequential")
    assert lint(result) == []


def test_a_move_that_would_break_a_dependency_is_not_offered() -> None:
    source = (
        "import tensorflow as tf\nx = tf.constant(1.0)\nwanted = len(str(x))\n"
        'gpus = tf.config.list_physical_devices("GPU")[:wanted]\n' + GROWTH_LOOP
    )
    [finding] = lint_text("t.py", source, Settings.default(ALL_RULES))
    assert finding.code == "TFM203" and finding.fix is None
    assert fixed(source) == source


def test_a_whole_if_block_moves() -> None:
    source = (
        "import tensorflow as tf\nx = tf.constant(1.0)\nif True:\n"
        '    gpus = tf.config.list_physical_devices("GPU")\n'
        "    for gpu in gpus:\n        tf.config.experimental.set_memory_growth(gpu, True)\n"
    )
    result = fixed(source)
    assert result.index("if True:") < result.index("x = tf.constant")
    assert lint(result) == []
