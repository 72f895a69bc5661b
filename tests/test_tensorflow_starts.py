"""When something else starts TensorFlow: Keras 3 on its default backend, libraries that start
the runtime (`rules/starters.py`), TensorFlow as a guest of JAX or PyTorch (TFM207), Keras's
backend chosen too late (TFM206), and where the fixes go among the imports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests import conftest
from tests.conftest import lint_text, run_cli, write_notebook
from tfmemlint.configuration.settings import Policy, Settings, select_rules
from tfmemlint.rules import ALL_RULES, starters

# JAX's own preallocation (TFM208) has tests of its own: here, what TensorFlow's rules say.
TF_RULES = select_rules(ALL_RULES, ignore=["TFM208"])
DEFAULT = Settings(Policy(), TF_RULES)
GUEST_GROWTH = Settings(Policy(guest="growth"), TF_RULES)
ON_JAX = Settings(Policy(keras_backend="jax"), TF_RULES)


def codes(source: str, filename: str = "t.py", settings: Settings = DEFAULT) -> list[str]:
    return conftest.codes(source, filename, settings)


def fixed(source: str, settings: Settings = DEFAULT) -> str:
    return conftest.fixed(source, settings)


MAIN = '\n\nif __name__ == "__main__":\n    main()\n'


def found(source: str, settings: Settings = DEFAULT) -> list[tuple[str, str]]:
    return [(f.code, f.message) for f in lint_text("t.py", textwrap.dedent(source), settings)]


KERAS3 = (
    "import keras\nimport numpy as np\n\n\ndef main():\n"
    "    model = keras.Sequential([keras.layers.Dense(1)])\n"
    "    model.fit(np.zeros((2, 1)), np.zeros((2, 1)))\n"
    "    print(keras.ops.sum(model.predict(np.ones((1, 1)))))\n" + MAIN
)


# -- Keras 3's backend ---------------------------------------------------------------------------
def test_keras3_on_its_default_backend_is_tensorflow() -> None:
    [(code, message)] = found(KERAS3)
    assert code == "TFM205"
    assert "`keras.Sequential()` (line 6)" in message
    assert "its default backend: no KERAS_BACKEND is set" in message
    result = fixed(KERAS3)
    assert result.startswith(
        "import keras\nimport numpy as np\n\ntry:\n    import tensorflow as tf\n\n"
        '    for gpu in tf.config.list_physical_devices("GPU"):\n'
        "        tf.config.experimental.set_memory_growth(gpu, True)\n"
        "except (ImportError, RuntimeError):\n"
        "    pass  # no TensorFlow here, or its runtime already started\n\n\ndef main():"
    )
    assert codes(result) == []


@pytest.mark.parametrize(
    "setting",
    [
        'os.environ["KERAS_BACKEND"] = "jax"',
        'os.environ.setdefault("KERAS_BACKEND", "torch")',
        'os.environ.update(KERAS_BACKEND="jax")',
    ],
)
def test_keras3_on_another_backend_starts_no_tensorflow(setting: str) -> None:
    source = f"import os\n{setting}\n" + KERAS3
    assert codes(source) == []
    # ...and sets TF_FORCE_GPU_ALLOW_GROWTH as it is imported (keras/src/backend/config.py),
    # so TensorFlow used beside it is configured.
    beside = source.replace("import numpy", "import tensorflow as tf\nimport numpy").replace(
        "    model.fit", "    tf.data.Dataset.range(3)\n    model.fit"
    )
    assert codes(beside) == []


def test_keras_that_may_be_keras_2_on_tensorflow_1_gets_the_environment_fix() -> None:
    """Without a word only Keras 3 has, the Keras may be Keras 2 on TF1 (its own session),
    where `tf.config.list_physical_devices` does not exist: TF_FORCE_GPU_ALLOW_GROWTH, which
    TensorFlow's allocator reads in either, goes before the first import."""
    source = KERAS3.replace("    print(keras.ops.sum(model.predict(np.ones((1, 1)))))\n", "")
    [finding] = lint_text("t.py", source, DEFAULT)
    assert finding.code == "TFM205" and finding.fix is not None
    assert "may be Keras 2 on TensorFlow 1" in finding.message
    assert fixed(source) == (
        'import os\n\nos.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")\n' + source
    )
    assert codes(fixed(source)) == []
    fraction = Settings(Policy(0.5), TF_RULES)
    [finding] = lint_text("t.py", source, fraction)
    assert finding.fix is None and "set_session(Session(config=...))" in finding.message
    # beside an `import tensorflow` of its own, the program is TF2's: fixed as always
    assert "set_memory_growth" in fixed("import tensorflow as tf\n" + source)


def test_an_explicit_tensorflow_backend_is_no_default() -> None:
    source = 'import os\nos.environ["KERAS_BACKEND"] = "tensorflow"\n' + KERAS3
    [(code, message)] = found(source)
    assert code == "TFM205" and "default backend" not in message


def test_the_backend_from_the_configuration_and_from_a_notebook(tmp_path: Path) -> None:
    assert codes(KERAS3, settings=ON_JAX) == []
    cells = [["%env KERAS_BACKEND=jax\n"], ["import keras\n", "m = keras.Sequential()"]]
    notebook = write_notebook(tmp_path / "n.ipynb", cells)
    assert run_cli("--no-cache", "--ignore", "TFM208", str(notebook)).returncode == 0
    default = write_notebook(tmp_path / "d.ipynb", cells[1:])
    assert "TFM205" in run_cli("--no-cache", str(default)).stdout
    (tmp_path / "pyproject.toml").write_text(
        '[tool.tfmemlint]\nkeras-backend = "jax"\nignore = ["TFM208"]\n'
    )
    assert run_cli("--no-cache", str(default)).returncode == 0


def test_a_backend_the_lint_cannot_read_is_no_finding() -> None:
    assert codes("import os\nos.environ['KERAS_BACKEND'] = pick()\n" + KERAS3) == []
    inside = "import os\ndef choose():\n    os.environ['KERAS_BACKEND'] = 'jax'\n" + KERAS3
    assert codes(inside) == []


def test_bad_backend_and_guest_policy_values_are_usage_errors(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text(KERAS3)
    (tmp_path / "tfmemlint.toml").write_text('keras-backend = "theano"\n')
    result = run_cli("--no-cache", str(tmp_path / "t.py"))
    assert result.returncode == 2 and "keras-backend 'theano'" in result.stderr
    (tmp_path / "tfmemlint.toml").write_text('guest-policy = "grow"\n')
    result = run_cli("--no-cache", str(tmp_path / "t.py"))
    assert result.returncode == 2 and "guest policy 'grow'" in result.stderr
    assert run_cli("--isolated", "--guest-policy", "nope", str(tmp_path)).returncode == 2


# -- TFM206 --------------------------------------------------------------------------------------
def test_a_backend_set_after_keras_is_reported() -> None:
    source = "import os\nimport keras\nos.environ['KERAS_BACKEND'] = 'jax'\nx = 1\n"
    [(code, message)] = found(source)
    assert code == "TFM206"
    assert "after `import keras` (line 2)" in message
    assert "runs on tensorflow (Keras's default)" in message
    # again the backend Keras already has: nothing changes
    assert codes(source.replace("'jax'", "'tensorflow'")) == []
    # set first, then again: the first one counts
    first = "import os\nos.environ['KERAS_BACKEND'] = 'jax'\n" + source.split("\n", 1)[1]
    assert codes(first) == []
    assert codes(first.replace("= 'jax'\nx", "= 'torch'\nx")) == ["TFM206"]
    # a library that imports Keras reads it too
    assert codes(source.replace("import keras", "import keras_hub")) == ["TFM206"]


def test_a_notebook_env_line_after_keras_is_reported_and_chooses_nothing(tmp_path: Path) -> None:
    keras_cell = ["import keras\n", "import numpy as np\n"]
    env_cell = ["%env KERAS_BACKEND=jax\n", "m = keras.Sequential([keras.layers.Dense(1)])\n"]
    fit_cell = ["m.fit(np.zeros((2, 1)), np.zeros((2, 1)))"]
    late = write_notebook(tmp_path / "late.ipynb", [keras_cell, env_cell, fit_cell])
    result = run_cli("--no-cache", "--output-format", "json", str(late))
    by_code = {f["code"]: f for f in json.loads(result.stdout)}
    assert sorted(by_code) == ["TFM205", "TFM206"]  # Keras runs on TensorFlow, its default
    assert by_code["TFM206"]["location"] == {"row": 1, "column": 1}
    assert by_code["TFM206"]["cell"] == 2
    assert "KERAS_BACKEND is set only after Keras is imported" in by_code["TFM205"]["message"]
    assert "after `import keras` (cell 1, line 1)" in by_code["TFM206"]["message"]
    # above the import, in the same cell or an earlier one, it chooses the backend
    early = [["%env KERAS_BACKEND=jax\n", *keras_cell], env_cell[1:], fit_cell]
    assert (
        "TFM20"
        not in run_cli(
            "--no-cache", "--ignore", "TFM208", str(write_notebook(tmp_path / "early.ipynb", early))
        ).stdout
    )
    # the backend Keras already runs on, set again: nothing changes
    again = [keras_cell, ["%env KERAS_BACKEND=tensorflow\n", *env_cell[1:]], fit_cell]
    again_result = run_cli("--no-cache", str(write_notebook(tmp_path / "again.ipynb", again)))
    assert "TFM206" not in again_result.stdout and "TFM205" in again_result.stdout


@pytest.mark.slow
def test_keras_really_ignores_a_backend_set_after_its_import(tmp_path: Path) -> None:
    """What TFM206 rests on, seen in a real process."""
    script = tmp_path / "late.py"
    script.write_text(
        "import os\nimport keras\nos.environ['KERAS_BACKEND'] = 'jax'\n"
        "print(keras.backend.backend())\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "KERAS_BACKEND"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "tensorflow"
    assert run_cli("--no-cache", "--select", "TFM206", str(script)).returncode == 1


# -- libraries that start TensorFlow -------------------------------------------------------------
@pytest.mark.parametrize(
    ("imports", "call"),
    [
        ("import tensorflow_datasets as tfds", 'tfds.load("mnist")'),
        ("import tensorflow_datasets as tfds", 'tfds.builder("mnist").as_dataset(split="train")'),
        ("import tensorflow_datasets as tfds", "tfds.as_numpy(ds)"),
        ("import tensorflow_hub as hub", 'hub.load("handle")'),
        ("import tensorflow_hub as hub", 'hub.KerasLayer("handle")'),
        ("from transformers import TFAutoModel", 'TFAutoModel.from_pretrained("bert")'),
        ("import transformers", 'transformers.TFBertModel.from_pretrained("bert")'),
        ("import tensorflow_text as text", 'text.WhitespaceTokenizer().tokenize(["a b"])'),
        ("import tf_keras", "tf_keras.Sequential()"),
        ("import keras_hub", 'keras_hub.models.GemmaCausalLM.from_preset("gemma")'),
        ("import keras_cv", "keras_cv.layers.RandAugment(value_range=(0, 255))"),
        ("import seqio", 'seqio.get_mixture_or_task("glue").get_dataset({"inputs": 8})'),
        ("import seqio", 'seqio.get_dataset("glue", {"inputs": 8})'),
        ("from seqio import evaluation", 'evaluation.Evaluator("glue", converter)'),
        (
            "from official.core import train_lib",
            'train_lib.run_experiment(strategy, task, "train", params, "/tmp/m")',
        ),
        (
            "from official.common import distribute_utils",
            'distribute_utils.get_distribution_strategy("mirrored")',
        ),
    ],
)
def test_a_library_call_starts_tensorflow(imports: str, call: str) -> None:
    source = f"{imports}\n\n\ndef main():\n    {call}\n{MAIN}"
    [(code, message)] = found(source)
    assert code == "TFM205" and "This TF2 program starts the runtime at" in message
    result = fixed(source)
    assert "    import tensorflow as tf\n" in result
    assert codes(result) == []


def test_a_builder_bound_to_a_name_starts_it_at_as_dataset() -> None:
    source = (
        "import tensorflow_datasets as tfds\n\n\ndef main():\n"
        '    builder = tfds.builder("mnist")\n    builder.download_and_prepare()\n'
        '    ds = builder.as_dataset(split="train")\n' + MAIN
    )
    [(_, message)] = found(source)
    assert "`builder.as_dataset()` (line 7)" in message


@pytest.mark.parametrize(
    ("definition", "call"),
    [
        ("@tf.function(jit_compile=True)\ndef step(x):\n    return x * 2\n", "step(data)"),
        ("@function\ndef step(x):\n    return x * 2\n", "step(data)"),
        (
            "class Trainer:\n    @tf.function\n    def step(self, x):\n        return x * 2\n",
            "Trainer().step(data)",
        ),
    ],
)
def test_calling_a_tf_function_starts_the_runtime(definition: str, call: str) -> None:
    """A `tf.function` runs its graph on the runtime when it is called, whatever its body
    holds; defining it starts nothing."""
    source = (
        "import tensorflow as tf\nfrom tensorflow import function\n\ndata = [1.0]\n\n\n"
        f"{definition}\n\nif __name__ == '__main__':\n    print({call})\n"
    )
    [(code, message)] = found(source)
    assert code == "TFM205"
    assert "at `step()` (line 1" in message
    assert codes(source.replace(f"    print({call})\n", "    print(data)\n")) == []


@pytest.mark.parametrize(
    "source",
    [
        # only reads files, or lists devices
        "import tensorflow_datasets as tfds\ndef main():\n    tfds.list_builders()\n" + MAIN,
        "import tensorflow_hub as hub\ndef main():\n    hub.resolve('handle')\n" + MAIN,
        # transformers' PyTorch classes start no TensorFlow
        "from transformers import AutoModel\ndef main():\n    AutoModel.from_pretrained('b')\n"
        + MAIN,
        # keras-hub on the JAX backend: JAX's, not TensorFlow's
        "import os\nos.environ['KERAS_BACKEND'] = 'jax'\nimport keras_hub\ndef main():\n"
        "    keras_hub.models.GemmaCausalLM.from_preset('g')\n" + MAIN,
        # a library module is no program
        "import tensorflow_datasets as tfds\ndef load():\n    return tfds.load('mnist')\n",
        # seqio's registry, read: no dataset built
        "import seqio\ndef main():\n    print(seqio.TaskRegistry.names())\n" + MAIN,
    ],
)
def test_what_starts_no_tensorflow(source: str) -> None:
    assert codes(source) == []


def test_the_starters_table_names_a_source_for_each_entry() -> None:
    assert all(starter.source and starter.starts for starter in starters.CALLS)
    assert starters.started_by("keras_cv.layers.RandomFlip", keras_on_tensorflow=False)
    assert not starters.started_by("keras_cv.models.YOLOV8Detector", keras_on_tensorflow=False)
    assert starters.imports_tensorflow("transformers.TFBertModel", "")
    assert not starters.imports_tensorflow("transformers.BertModel", "")
    assert starters.imports_tensorflow("transformers", "transformers.TFBertModel(c)")


# -- TensorFlow as a guest (TFM207) --------------------------------------------------------------
JAX_DATA = (
    "import jax\nimport tensorflow as tf\n\n\ndef main():\n"
    "    for batch in tf.data.Dataset.range(4).batch(2).as_numpy_iterator():\n"
    "        print(jax.numpy.sum(batch))\n" + MAIN
)
HIDE = (
    'try:\n    tf.config.set_visible_devices([], "GPU")\n'
    "except RuntimeError:\n    pass  # the runtime already started\n"
)


def test_a_jax_program_with_a_tf_data_pipeline_hides_the_gpus_from_tensorflow() -> None:
    [(code, message)] = found(JAX_DATA)
    assert code == "TFM207"
    assert message.startswith("TensorFlow takes the GPU memory that JAX needs")
    result = fixed(JAX_DATA)
    assert result == JAX_DATA.replace("as tf\n", "as tf\n\n" + HIDE, 1)
    assert codes(result) == []


def test_the_guest_policy_growth_gives_the_growth_loop() -> None:
    result = fixed(JAX_DATA, GUEST_GROWTH)
    assert "set_memory_growth(gpu, True)" in result and "set_visible_devices" not in result
    assert codes(result) == []
    # --policy fraction has no TF2 fix, but hiding needs no fraction
    fraction = Settings(Policy(0.5), TF_RULES)
    assert "set_visible_devices" in fixed(JAX_DATA, fraction)
    assert fixed(JAX_DATA, Settings(Policy(0.5, guest="growth"), TF_RULES)) == (
        textwrap.dedent(JAX_DATA)
    )


def test_a_pytorch_program_logging_with_tf_summary_is_a_guest() -> None:
    source = (
        "import tensorflow as tf\nimport torch\n\n\ndef main():\n"
        "    writer = tf.summary.create_file_writer('logs')\n"
        "    print(torch.zeros(1), writer)\n" + MAIN
    )
    [(code, message)] = found(source)
    assert code == "TFM207" and "that PyTorch needs" in message
    # transformers' PyTorch classes keep it one
    with_transformers = source.replace(
        "import torch\n", "import torch\nfrom transformers import AutoModel\n"
    ).replace("    print(", "    AutoModel.from_pretrained('b')\n    print(")
    assert codes(with_transformers) == ["TFM207"]
    # Keras's data helpers feed it: still a guest
    with_images = source.replace(
        "    print(", "    tf.keras.utils.image_dataset_from_directory('d')\n    print("
    )
    assert codes(with_images) == ["TFM207"]


@pytest.mark.parametrize(
    "computes",
    [
        "tf.keras.Sequential()",
        "tf.function(lambda: 1)",
        "tf.Variable(1.0)",
        "tf.distribute.MirroredStrategy()",
    ],
)
def test_a_program_that_computes_with_tensorflow_is_no_guest(computes: str) -> None:
    source = JAX_DATA.replace("    for batch", f"    {computes}\n    for batch")
    assert codes(source) == ["TFM205"]


def test_configured_guests_and_the_cli_option(tmp_path: Path) -> None:
    hidden = JAX_DATA.replace(
        "\n\ndef main", '\ntf.config.set_visible_devices([], "GPU")\n\ndef main'
    )
    assert codes(hidden) == []
    script = tmp_path / "train.py"
    script.write_text(JAX_DATA)
    assert run_cli("--no-cache", "--guest-policy", "growth", "--fix", str(script)).returncode == 0
    assert "set_memory_growth" in script.read_text()
    script.write_text(JAX_DATA)
    assert run_cli("--fix", "--cache-dir", str(tmp_path / "c"), str(script)).returncode == 0
    assert "set_visible_devices" in script.read_text()
    # the cache keeps results per guest policy
    script.write_text(JAX_DATA)
    result = run_cli(
        "--diff", "--guest-policy", "growth", "--cache-dir", str(tmp_path / "c"), str(script)
    )
    assert "set_memory_growth" in result.stdout


# -- where the fixes go --------------------------------------------------------------------------
def test_the_fix_goes_after_the_import_block() -> None:
    source = (
        "import os\nimport tensorflow as tf\nimport numpy as np\n"
        "try:\n    import yaml\nexcept ImportError:\n    yaml = None\n"
        'os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"\nimport sys\n'
        "x = 1\nimport json\n\n\ndef main():\n    tf.ones([1])\n" + MAIN
    )
    result = fixed(source)
    head = result.split("\n\n\ndef main")[0]
    # after `import sys`, the last import before code; `import json` was after code already
    assert head.startswith(
        "import os\nimport tensorflow as tf\nimport numpy as np\ntry:\n    import yaml\n"
        'except ImportError:\n    yaml = None\nos.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"\n'
        "import sys\n\nfor gpu in"
    )
    assert head.endswith("pass  # the runtime already started\nx = 1\nimport json")


def test_a_gpu_choice_inside_the_import_block_comes_before_the_fix() -> None:
    source = (
        "import os\nimport tensorflow as tf\n"
        'os.environ["CUDA_VISIBLE_DEVICES"] = "1"\nimport numpy as np\n\n\n'
        "def main():\n    tf.ones([1])\n" + MAIN
    )
    result = fixed(source)
    assert result.index("CUDA_VISIBLE_DEVICES") < result.index("for gpu in")
    assert codes(result) == []


def test_in_a_notebook_the_fix_stays_in_the_cell(tmp_path: Path) -> None:
    cells = [
        ["import numpy as np\n", "import tensorflow as tf\n", "from tensorflow import keras"],
        ["import pandas as pd\n", "tf.ones([1])"],
    ]
    path = write_notebook(tmp_path / "n.ipynb", cells)
    assert run_cli("--no-cache", "--fix", str(path)).returncode == 0
    after = json.loads(path.read_text())
    first = "".join(after["cells"][0]["source"])
    assert first.startswith(
        "import numpy as np\nimport tensorflow as tf\nfrom tensorflow import keras\n\nfor gpu in"
    )
    assert after["cells"][1]["source"] == cells[1]


@pytest.mark.parametrize(
    "among",
    [
        'import matplotlib\nmatplotlib.use("Agg")\nimport matplotlib.pyplot as plt',
        '__version__ = "1.0"\nimport json',
        "import warnings\nwith warnings.catch_warnings():\n    import h5py\nimport json",
        'try:\n    import wandb\nexcept ImportError:\n    wandb = None\n    print("no wandb")\nimport json',
        # a header whose test holds expressions with bodies of their own
        'if (tf if tf else None):\n    import resource\n    for n in ("a" if 1 else "b"):\n        pass\nimport json',
    ],
)
def test_what_either_linter_lets_stand_among_imports_stays_above_the_fix(among: str) -> None:
    source = f"import tensorflow as tf\n{among}\n\nif __name__ == '__main__':\n    tf.ones([1])\n"
    result = fixed(source)
    assert result.startswith(f"import tensorflow as tf\n{among}\n\nfor gpu in"), result
    assert codes(result) == []


def test_where_the_block_would_start_the_runtime_first(tmp_path: Path) -> None:
    """Right after the import is sure, but code there would make the imports below E402:
    growth then comes from TF_FORCE_GPU_ALLOW_GROWTH, set before the module's first import,
    unless no import line follows."""
    source = (
        "import tensorflow as tf\nwith tf.device('/cpu:0'):\n    X = tf.constant(1.0)\n"
        "{tail}\nif __name__ == '__main__':\n    print(tf.ones([1]))\n"
    )
    [finding] = lint_text("t.py", source.format(tail="import json\n"), DEFAULT)
    assert "among the imports below this one" in finding.message
    assert fixed(source.format(tail="import json\n")).startswith(
        'import os\n\nos.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")\n'
        "import tensorflow as tf\n"
    )
    nested = source.format(tail="try:\n    import yaml\nexcept ImportError:\n    yaml = None\n")
    assert fixed(nested).startswith("import tensorflow as tf\n\nfor gpu in")
    # a project module imported in the block that starts it at import
    (tmp_path / ".git").mkdir()
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text("")
    (tmp_path / "mypkg" / "model.py").write_text("import tensorflow as tf\nW = tf.Variable(1.0)\n")
    script = tmp_path / "train.py"
    script.write_text(
        "import tensorflow as tf\nfrom mypkg import model\n\n"
        "if __name__ == '__main__':\n    print(tf.ones([1]), model)\n"
    )
    result = run_cli("--no-cache", "--isolated", "--output-format", "json", str(script))
    [reported] = json.loads(result.stdout)
    assert "at `tf.Variable()` (`mypkg/model.py`, line 2)" in reported["message"]
    assert "among the imports below this one" in reported["message"]
    assert "set before the module's first import" in reported["message"]
    assert reported["fix"]["message"].startswith("Set TF_FORCE_GPU_ALLOW_GROWTH=true")
    # one whose call at import the walk does not know to start it: it still may
    (tmp_path / "mypkg" / "model.py").write_text("import tensorflow as tf\ntf.get_logger()\n")
    result = run_cli("--no-cache", "--isolated", "--output-format", "json", str(script))
    [reported] = json.loads(result.stdout)
    assert "`mypkg/model.py`, imported before, may start it" in reported["message"]
    assert reported["fix"]["message"].startswith("Set TF_FORCE_GPU_ALLOW_GROWTH=true")


# -- TFM212: TF1-era Keras's own session ---------------------------------------------------------
KERAS2 = (
    "import keras\nimport numpy as np\nimport tensorflow as tf\n\n\ndef main():\n"
    "    x = tf.placeholder(tf.float32)\n"
    "    model = keras.Sequential([keras.layers.Dense(1, input_shape=(1,))])\n"
    "    model.compile('sgd', 'mse')\n"
    "    model.fit(np.zeros((2, 1)), np.zeros((2, 1)))\n" + MAIN
)


def test_tf1_keras_without_a_session_of_its_own_is_reported() -> None:
    [(code, message)] = found(KERAS2)
    assert code == "TFM212"
    assert "Keras makes its own session at `model.fit()` (line 10)" in message
    assert fixed(KERAS2) == (
        'import os\n\nos.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")\n' + KERAS2
    )
    assert codes(fixed(KERAS2)) == []


@pytest.mark.parametrize(
    "given",
    [
        "    keras.backend.set_session(tf.Session(config=cfg))\n",
        "    K.set_session(sess)\n",
        "    sess = tf.Session()\n",
        '    os.environ["TF_FORCE_GPU_ALLOW_GROWTH"] = "true"\n',
        '    os.environ["CUDA_VISIBLE_DEVICES"] = ""\n',
    ],
)
def test_a_session_handed_to_keras_or_a_process_setting_is_no_tfm212(given: str) -> None:
    source = "import os\n" + KERAS2.replace("def main():\n", "def main():\n" + given)
    assert "TFM212" not in codes(source)


def test_tfm212_needs_keras_at_work_in_a_program() -> None:
    library = KERAS2.replace(MAIN, "")
    assert codes(library) == []
    without_keras = "import tensorflow as tf\n\nx = tf.placeholder(tf.float32)\n" + MAIN.replace(
        "main()", "print(x)"
    )
    assert codes(without_keras) == []


def test_tfm212_under_the_fraction_policy_has_no_fix() -> None:
    [finding] = lint_text("t.py", KERAS2, Settings(Policy(0.5), TF_RULES))
    assert finding.code == "TFM212" and finding.fix is None
    assert "set_session(Session(config=...))" in finding.message


def test_tfm212_fix_goes_before_every_import_when_os_is_not_imported() -> None:
    source = '"""Doc."""\nfrom __future__ import print_function\nimport numpy as np\n' + KERAS2
    assert fixed(source).startswith(
        '"""Doc."""\nfrom __future__ import print_function\n\nimport os\n\n'
        'os.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")\nimport numpy as np\n'
    )


# -- programs that start the allocator without a session or tf.config ---------------------------
def test_compat_v1_without_graph_mode_runs_eagerly_and_is_fixed_in_its_own_spelling() -> None:
    source = "import tensorflow.compat.v1 as tf\n\n\ndef main():\n    print(tf.ones([2]))\n" + MAIN
    [finding] = lint_text("t.py", source, DEFAULT)
    assert finding.code == "TFM205"
    assert 'for gpu in tf.config.list_physical_devices("GPU"):' in fixed(source)
    # Graph mode, or a name only TF1 has, makes it TF1 code: the session rules' business.
    graph = source.replace("def main():\n", "tf.disable_eager_execution()\n\n\ndef main():\n")
    assert codes(graph) == []
    placeholder = source.replace("tf.ones([2])", "tf.placeholder(tf.float32)")
    assert codes(placeholder) == []


@pytest.mark.slow
def test_compat_v1_eager_program_runs_fixed(tmp_path: Path) -> None:
    pytest.importorskip("tensorflow")
    source = "import tensorflow.compat.v1 as tf\n\n\ndef main():\n    print(tf.ones([2]))\n" + MAIN
    script = tmp_path / "t.py"
    script.write_text(fixed(source))
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.parametrize(
    ("device", "configures"),
    [
        ('tf.config.list_physical_devices("CPU")[0]', False),
        ('tf.config.list_physical_devices("GPU")[0]', True),
        ("cpus[0]", False),
        ("gpus[0]", True),
    ],
)
def test_a_logical_device_configuration_configures_only_gpus(device: str, configures: bool) -> None:
    source = (
        "import tensorflow as tf\n\ncpus = tf.config.list_physical_devices('CPU')\n"
        "gpus = tf.config.list_physical_devices('GPU')\n"
        f"tf.config.set_logical_device_configuration({device}, "
        "[tf.config.LogicalDeviceConfiguration(memory_limit=1024)])\n\n\n"
        "def main():\n    print(tf.ones([2]))\n" + MAIN
    )
    assert ("TFM205" in codes(source)) != configures


def test_virtual_cpus_get_growth_from_the_allocator_variable(tmp_path: Path) -> None:
    """TensorFlow passes no growth on once any device has a logical configuration
    (context.py, `_compute_device_options`), so the growth loop would do nothing there."""
    source = (
        "import tensorflow as tf\n\ncpus = tf.config.list_physical_devices('CPU')\n"
        "tf.config.set_logical_device_configuration(cpus[0], "
        "[tf.config.LogicalDeviceConfiguration()] * 2)\n\n\n"
        "def main():\n    print(tf.ones([2]))\n" + MAIN
    )
    [(code, message)] = found(source)
    assert code == "TFM205" and "makes TensorFlow drop `set_memory_growth`" in message
    result = fixed(source)
    assert result.startswith(
        'import os\n\nos.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")\n'
    )
    assert "set_memory_growth" not in result
    assert codes(result) == []
    # as a guest, hiding the GPUs still works
    guest = "import jax\n" + source.replace(
        "print(tf.ones([2]))", "print(tf.ones([2]), jax.numpy.ones(1))"
    )
    assert "set_visible_devices([], " in fixed(guest)


def test_a_fire_class_runs_its_public_methods() -> None:
    source = (
        "import fire\nimport tensorflow as tf\n\n\nclass Trainer:\n"
        "    def _helper(self):\n        return 1\n\n"
        "    def train(self):\n        return tf.ones([2])\n"
        + MAIN.replace("main()", "fire.Fire(Trainer)")
    )
    [(code, message)] = found(source)
    assert code == "TFM205" and "`tf.ones()` (line 10)" in message
    private_only = source.replace("def train", "def _train")
    assert codes(private_only) == []


@pytest.mark.parametrize(
    "top_level",
    [
        "with tf.GradientTape() as tape:\n    loss = tf.reduce_sum(w * 2.0)\n",
        "for batch in tf.data.Dataset.range(4).batch(2):\n    print(batch)\n",
        "ds = tf.data.Dataset.range(4)\nfor batch in ds.take(2):\n    print(batch)\n",
    ],
)
def test_a_module_that_trains_at_top_level_is_a_program(top_level: str) -> None:
    source = "import tensorflow as tf\n\nw = tf.Variable(1.0)\n" + top_level
    assert codes(source) == ["TFM205"]


def test_a_loop_over_anything_else_at_top_level_makes_no_program() -> None:
    source = "import tensorflow as tf\n\nfor i in range(3):\n    print(tf.ones([i]))\n"
    assert codes(source) == []


def test_hiding_every_gpu_in_one_branch_does_not_excuse_growth_on_one_in_the_other() -> None:
    source = (
        "import os\nimport sys\n\nimport tensorflow as tf\n\n"
        "if '--cpu' in sys.argv:\n    os.environ['CUDA_VISIBLE_DEVICES'] = ''\nelse:\n"
        "    gpus = tf.config.list_physical_devices('GPU')\n"
        "    tf.config.experimental.set_memory_growth(gpus[0], True)\n"
    )
    assert codes(source) == ["TFM202"]
    chosen_first = source.replace("if '--cpu' in sys.argv:\n    os.environ", "os.environ").replace(
        "else:\n    gpus", "if True:\n    gpus"
    )
    assert "TFM202" not in codes(chosen_first)


@pytest.mark.parametrize(
    "other",
    [
        # scikit-learn's `fit`, in a file that only mentions Keras in a comment
        "import tensorflow as tf\nfrom sklearn.linear_model import LogisticRegression\n\n"
        "# not keras\nx = tf.placeholder(tf.float32)\n\n\ndef main():\n"
        "    LogisticRegression().fit([[0]], [0])\n" + MAIN,
        # a session of its own that Keras uses as the default
        KERAS2.replace("    model.fit(", "    with tf.Session().as_default():\n        model.fit("),
        # an Estimator's session
        KERAS2.replace("    model.fit(", "    tf.estimator.Estimator(None).evaluate(None)\n    #("),
    ],
)
def test_tfm212_leaves_other_sessions_and_other_fits_alone(other: str) -> None:
    assert "TFM212" not in codes(other)
