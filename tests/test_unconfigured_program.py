"""TFM205 on by default (issue 16): TF2 entry points that start the runtime with GPU memory
unconfigured, and the precision fixes of the TF2 misuse rules. The golden fixtures (tf2_*.py,
project_tf2_*, tf2_*.ipynb) run under TensorFlow in test_fixtures and test_recovery; these are
the cases around them."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import codes, fixed, lint_text, run_cli, write_notebook
from tfmemlint.checking.prefilter import (
    ScreenedFile,
    code_may_have_findings,
    may_have_findings,
    prefilter_verdict,
)
from tfmemlint.configuration.settings import Policy, Settings
from tfmemlint.reading.source import parse_python
from tfmemlint.rules import ALL_RULES, entry_screen
from tfmemlint.rules.programs import TEST_RUNNERS
from tfmemlint.rules.unconfigured_program import FAMILY as UNCONFIGURED_PROGRAM_FAMILY
from tfmemlint.rules.unconfigured_program import THROUGH_PROJECT_WORDS, screen
from tfmemlint.running.file_check import check_bytes, new_project_index

DEFAULT = Settings.default(ALL_RULES)


GROWTH_LOOP = (
    'for gpu in tf.config.list_physical_devices("GPU"):\n'
    "    try:\n        tf.config.experimental.set_memory_growth(gpu, True)\n"
    "    except RuntimeError:\n        pass  # the runtime already started\n"
)
# Where the module has no `import tensorflow` of its own: one comes inside the `try`.
KERAS_ONLY_SCRIPT = (
    "import keras\nimport numpy as np\n\n\ndef main():\n"
    "    model = keras.Sequential([keras.layers.Dense(1)])\n"
    "    model.fit(np.zeros((2, 1)), np.zeros((2, 1)))\n"
    "    print(keras.ops.sum(model.predict(np.ones((1, 1)))))\n\n\n"  # Keras 3's word
    'if __name__ == "__main__":\n    main()\n'
)
GROWTH_WITH_IMPORT = (
    "try:\n    import tensorflow as tf\n\n"
    '    for gpu in tf.config.list_physical_devices("GPU"):\n'
    "        tf.config.experimental.set_memory_growth(gpu, True)\n"
    "except (ImportError, RuntimeError):\n"
    "    pass  # no TensorFlow here, or its runtime already started\n"
)

SCRIPT = """\
import os
import tensorflow as tf


def main():
    print(tf.ones([2]))


if __name__ == "__main__":
    main()
"""


def test_an_unconfigured_script_is_reported_by_default_and_fixed_after_the_import() -> None:
    [finding] = lint_text("t.py", SCRIPT, DEFAULT)
    assert (finding.code, finding.location.row) == ("TFM205", 2)
    assert "`tf.ones()` (line 6)" in finding.message
    result = fixed(SCRIPT)
    assert result == SCRIPT.replace(
        "import tensorflow as tf\n", "import tensorflow as tf\n\n" + GROWTH_LOOP
    )
    assert codes(result) == []
    ignored = Settings(DEFAULT.policy, DEFAULT.selected - {"TFM205"})
    assert codes(SCRIPT, settings=ignored) == []


@pytest.mark.parametrize(
    "source",
    [
        # absl, TF's own runner, fire, typer: a module-level call runs main
        "from absl import app\nimport tensorflow as tf\ndef main(argv):\n    tf.ones([1])\napp.run(main)\n",
        "import tensorflow as tf\ndef main(_):\n    tf.ones([1])\ntf.compat.v1.app.run()\n",
        "import fire\nimport tensorflow as tf\ndef go():\n    tf.ones([1])\nfire.Fire(go)\n",
        "import typer\nimport tensorflow as tf\ndef go():\n    tf.ones([1])\ntyper.run(go)\n",
        # tyro and jsonargparse; absl's main by keyword and through functools.partial
        "import tyro\nimport tensorflow as tf\ndef main(lr: float = 0.1):\n    tf.ones([1])\ntyro.cli(main)\n",
        "from jsonargparse import CLI\nimport tensorflow as tf\ndef main(lr: float = 0.1):\n    tf.ones([1])\nCLI(main)\n",
        "from absl import app\nimport tensorflow as tf\ndef main(argv):\n    tf.ones([1])\napp.run(main=main)\n",
        "import functools\nfrom absl import app\nimport tensorflow as tf\ndef main(argv, cfg):\n    tf.ones([1])\napp.run(functools.partial(main, cfg=1))\n",
        "import functools\nfrom absl import app\nimport tensorflow as tf\ndef main(argv):\n    tf.ones([1])\nfunctools.partial(app.run, main)()\n",
        # a function handed to a call the walk cannot enter runs there: a search's objective,
        # a tuner's model builder, a thread's target
        'import optuna\nimport tensorflow as tf\ndef objective(trial):\n    tf.ones([1])\nif __name__ == "__main__":\n    optuna.create_study().optimize(objective, n_trials=3)\n',
        'import keras_tuner as kt\nimport tensorflow as tf\ndef build(hp):\n    return tf.keras.Sequential([tf.keras.layers.Dense(1)])\nif __name__ == "__main__":\n    kt.RandomSearch(build, objective="loss").search(x, y)\n',
        'import functools, threading\nimport tensorflow as tf\ndef train(n):\n    tf.ones([n])\nif __name__ == "__main__":\n    threading.Thread(target=functools.partial(train, 2)).start()\n',
        # a click command, a typer app's command: the decorated function is what runs
        "import click\nimport tensorflow as tf\n@click.command()\ndef go():\n    tf.ones([1])\n",
        "import typer\nimport tensorflow as tf\napp = typer.Typer()\n@app.command()\ndef go():\n    tf.ones([1])\n",
        "import click\nimport tensorflow as tf\n@click.group()\ndef cli():\n    pass\n@cli.command()\ndef go():\n    tf.ones([1])\n",
        # a script with no guard, outside any package: what it does at module level runs
        "import tensorflow as tf\nsquares = tf.data.Dataset.range(3).map(lambda x: x * x)\nprint(list(squares))\n",
        'import tensorflow_datasets as tfds\nds = tfds.load("mnist", split="train")\nfor row in ds.take(1):\n    print(row)\n',
        'from keras_cv.models import StableDiffusion\nimage = StableDiffusion().text_to_image("a horse")\nprint(image.shape)\n',
        # training at module level, in a loop too
        "import tensorflow as tf\nmodel = make_keras_model()\nmodel.fit(x, y)\n",
        "import tensorflow as tf\nmodel = make_keras_model()\nfor epoch in range(3):\n    model.fit(x, y)\n",
        # what a definition runs: decorators, default values, a class body
        "import tensorflow as tf\ndef f(x=tf.constant(1.0)):\n    pass\nkeras_model.fit(x, y)\n",
        'import tensorflow as tf\nclass C:\n    ONE = tf.ones([1])\nif __name__ == "__main__":\n    pass\n',
        # methods of the module's own classes: through self, an object made in place or bound
        'import tensorflow as tf\nclass T:\n    def run(self):\n        self.step()\n    def step(self):\n        tf.ones([1])\nif __name__ == "__main__":\n    T().run()\n',
        'import tensorflow as tf\nclass T:\n    def run(self):\n        tf.ones([1])\nif __name__ == "__main__":\n    t = T()\n    t.run()\n',
        # a distribution strategy lists the devices
        'import tensorflow as tf\nif __name__ == "__main__":\n    strategy = tf.distribute.MirroredStrategy()\n',
        # TF1's API beside TF2's, in a migration: the TF2 half starts the runtime
        'import tensorflow as tf\nimport tensorflow.compat.v1 as tf1\nif __name__ == "__main__":\n    tf.ones([1])\n',
        # TF2's API under its versioned name
        'import tensorflow.compat.v2 as tf\nif __name__ == "__main__":\n    tf.ones([1])\n',
        # the plain import is where the fix goes, not the part imported first
        'import tensorflow.compat.v2.feature_column as fc\nimport tensorflow as tf\nif __name__ == "__main__":\n    tf.ones([1])\n',
        # a class the entry code makes: its __init__ runs
        'import tensorflow as tf\nclass T:\n    def __init__(self):\n        self.v = tf.Variable(1.0)\nif __name__ == "__main__":\n    T()\n',
        # a dataset, a SavedModel, the logical devices
        'import tensorflow as tf\nif __name__ == "__main__":\n    tf.data.Dataset.range(3)\n',
        'import tensorflow as tf\nif __name__ == "__main__":\n    tf.saved_model.load("m")\n',
        'import tensorflow as tf\nif __name__ == "__main__":\n    print(tf.config.list_logical_devices("GPU"))\n',
    ],
)
def test_entry_points_of_every_kind(source: str) -> None:
    assert codes(source) == ["TFM205"]
    assert codes(fixed(source)) == []


@pytest.mark.parametrize(
    "source",
    [
        # a library: no entry point, whatever it runs at import
        "import tensorflow as tf\nSCALE = tf.constant(2.0)\ndef f():\n    return tf.ones([1])\n",
        # an entry point that never starts the runtime
        'import tensorflow as tf\nif __name__ == "__main__":\n    print(tf.__version__)\n',
        'import tensorflow as tf\nif __name__ == "__main__":\n    print(tf.config.list_physical_devices("GPU"))\n',
        'import tensorflow as tf\nif __name__ == "__main__":\n    print(tf.io.gfile.listdir("."))\n',
        # a function defined and never called
        'import tensorflow as tf\ndef unused():\n    tf.ones([1])\nif __name__ == "__main__":\n    pass\n',
        # TF1 code: the session rules cover it
        'import tensorflow as tf\nif __name__ == "__main__":\n    tf.placeholder(tf.float32)\n    tf.ones([1])\n',
        # compat.v1 as the module's TensorFlow, building a graph (without one it runs
        # eagerly: tests/test_tensorflow_starts.py)
        "import tensorflow.compat.v1 as tf\nx = tf.placeholder(tf.float32)\n"
        'if __name__ == "__main__":\n    tf.ones([1])\n',
        'import tensorflow as tf\ntf.compat.v1.disable_eager_execution()\nif __name__ == "__main__":\n    tf.ones([1])\n',
        'import tensorflow as tf\nif __name__ == "__main__":\n    tf.ones([1])\n    s = tf.compat.v1.Session()\n',
        # configured: growth, a limit, hidden GPUs, the environment, at any place before
        'import tensorflow as tf\nfor g in tf.config.list_physical_devices("GPU"):\n    tf.config.experimental.set_memory_growth(g, True)\nif __name__ == "__main__":\n    tf.ones([1])\n',
        'import tensorflow as tf\nif __name__ == "__main__":\n    tf.config.set_visible_devices([], "GPU")\n    tf.ones([1])\n',
        'import os\nos.environ["TF_FORCE_GPU_ALLOW_GROWTH"] = "true"\nimport tensorflow as tf\nif __name__ == "__main__":\n    tf.ones([1])\n',
        'import os\nos.environ.setdefault("CUDA_VISIBLE_DEVICES", "-1")\nimport tensorflow as tf\nif __name__ == "__main__":\n    tf.ones([1])\n',
        'import os\nimport tensorflow as tf\ndef main(flag):\n    os.environ["TF_FORCE_GPU_ALLOW_GROWTH"] = str(flag).lower()\n    tf.ones([1])\nif __name__ == "__main__":\n    main(True)\n',
        # a framework that sets GPU memory up (see frameworks.py)
        'import merlin.models.tf as mm\nimport tensorflow as tf\nif __name__ == "__main__":\n    tf.ones([1])\n',
        'import sleap\nimport tensorflow as tf\nif __name__ == "__main__":\n    sleap.disable_preallocation()\n    tf.ones([1])\n',
        'from keras_retinanet.utils.gpu import setup_gpu\nimport tensorflow as tf\nif __name__ == "__main__":\n    setup_gpu("0")\n    tf.ones([1])\n',
        # a TPU program
        'import tensorflow as tf\nresolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")\ntf.tpu.experimental.initialize_tpu_system(resolver)\nmodel = make()\nmodel.fit(x, y)\n',
        # a method of an object the walk cannot tell
        'import tensorflow as tf\nclass T:\n    def run(self):\n        tf.ones([1])\nif __name__ == "__main__":\n    make().run()\n',
        # configuration the walk cannot place (a method): nothing sure to say
        'import tensorflow as tf\nclass S:\n    def gpus(self):\n        tf.config.experimental.set_memory_growth(g, True)\nif __name__ == "__main__":\n    tf.ones([1])\n',
    ],
)
def test_what_tfm205_leaves_alone(source: str) -> None:
    assert "TFM205" not in codes(source)


def test_frameworks_that_configure_only_with_their_arguments() -> None:
    base = 'from csbdeep.utils.tf import limit_gpu_memory\nimport tensorflow as tf\nif __name__ == "__main__":\n    {}\n    tf.ones([1])\n'
    assert codes(base.format("limit_gpu_memory(None)")) == ["TFM205"]
    assert codes(base.format("limit_gpu_memory(0.5, total_memory=8000)")) == []
    assert codes(base.format("limit_gpu_memory(None, allow_growth=True)")) == []
    sleap = 'import sleap\nimport tensorflow as tf\nif __name__ == "__main__":\n    sleap.load_model("m", disable_gpu_preallocation={})\n    tf.ones([1])\n'
    assert codes(sleap.format("True")) == []
    assert codes(sleap.format("False")) == ["TFM205"]


def test_the_import_a_fix_adds_cannot_fail_a_program_without_tensorflow() -> None:
    """A Keras 3 script whose CI runs on the torch backend, with no TensorFlow installed: the
    `import tensorflow` that the fix brings must not end it with ModuleNotFoundError."""
    added = fixed(KERAS_ONLY_SCRIPT).split("import numpy as np\n", 1)[1].split("\n\n\ndef ")[0]
    assert "import tensorflow as tf" in added
    blocked = {"__builtins__": __builtins__}
    saved = sys.modules.get("tensorflow")
    sys.modules["tensorflow"] = None  # type: ignore[assignment]  # import raises ImportError
    try:
        exec(compile(added, "fixed.py", "exec"), blocked)
    finally:
        if saved is None:
            del sys.modules["tensorflow"]
        else:
            sys.modules["tensorflow"] = saved
    assert "tf" not in blocked


def test_the_fix_imports_tensorflow_where_the_module_imports_only_parts_of_it() -> None:
    source = "from tensorflow import keras\nmodel = keras.Sequential()\nmodel.fit(x, y)\n"
    result = fixed(source)
    assert result == source.replace("keras\n", "keras\n\n" + GROWTH_WITH_IMPORT, 1)
    assert codes(result) == []
    # `tf` taken, by code before the imports: nothing can go first, no fix
    taken = "tf = 1\n" + source
    [finding] = lint_text("t.py", taken, DEFAULT)
    assert finding.code == "TFM205" and finding.fix is None
    # `tf` taken by a function's own import (keras-cv's notebooks): the variable, which binds
    # no name, goes before the first import
    local = source + "def cast(x):\n    import tensorflow as tf\n\n    return tf.cast(x, 'int32')\n"
    result = fixed(local)
    assert (
        result
        == 'import os\n\nos.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")\n' + local
    )
    assert codes(result) == []


VARIABLE_FIRST = 'os.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")\n'


def test_where_the_program_chooses_its_gpus_after_the_import_the_variable_goes_first() -> None:
    """The loop lists the GPUs: CUDA_VISIBLE_DEVICES set after it would choose nothing. The
    growth variable lists none, and goes before the module's first import (after its
    `import os`)."""
    late = SCRIPT.replace("    print(", '    os.environ["CUDA_VISIBLE_DEVICES"] = "1"\n    print(')
    [finding] = lint_text("t.py", late, DEFAULT)
    assert finding.code == "TFM205"
    assert "chooses its GPUs (CUDA_VISIBLE_DEVICES) after the loop's place" in finding.message
    assert fixed(late) == late.replace("import os\n", "import os\n\n" + VARIABLE_FIRST, 1)
    assert codes(fixed(late)) == []
    early = 'import os\nos.environ["CUDA_VISIBLE_DEVICES"] = "1"\n' + SCRIPT.replace(
        "import os\n", ""
    )
    [finding] = lint_text("t.py", early, DEFAULT)
    assert finding.fix is not None


def test_no_fix_under_a_fraction_policy() -> None:
    settings = Settings(Policy(0.4), DEFAULT.selected)
    [finding] = lint_text("t.py", SCRIPT, settings)
    assert finding.code == "TFM205" and finding.fix is None


def test_a_runtime_started_before_the_import_gets_the_variable_first(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "early.py").write_text("import tensorflow\nX = tensorflow.constant(1)\n")
    script = tmp_path / "main.py"
    script.write_text(
        'import early\nimport tensorflow as tf\n\nif __name__ == "__main__":\n    tf.ones([1])\n'
    )
    done = run_cli("--no-cache", "--output-format", "json", str(script))
    [finding] = json.loads(done.stdout)
    assert finding["code"] == "TFM205"
    assert "at `tensorflow.constant()` (`early.py`, line 2)" in finding["message"]
    # the variable, before the first import, holds wherever it starts
    assert run_cli("--no-cache", "--fix", str(script)).returncode == 0
    assert script.read_text().startswith("import os\n\n" + VARIABLE_FIRST + "import early\n")
    script.write_text(
        'import early\nimport tensorflow as tf\n\nif __name__ == "__main__":\n    tf.ones([1])\n'
    )
    # A module imported early that only defines what calls TensorFlow starts nothing.
    (tmp_path / "early.py").write_text("import tensorflow\ndef f():\n    tensorflow.ones(1)\n")
    [finding] = json.loads(run_cli("--no-cache", "--output-format", "json", str(script)).stdout)
    assert finding["fix"] is not None


def test_a_start_at_import_comes_before_a_setting_the_program_makes_later(
    tmp_path: Path,
) -> None:
    """A project module whose import-time code starts the runtime (a `tf.constant` default
    argument) is imported before `main()` calls the project's GPU set-up: the runtime already
    started with GPU memory unconfigured. Where that module only defines what calls TensorFlow,
    the set-up comes first."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "gpu.py").write_text(
        "import tensorflow as tf\n\n\ndef setup():\n"
        "    for g in tf.config.list_physical_devices('GPU'):\n"
        "        tf.config.experimental.set_memory_growth(g, True)\n"
    )
    boxes = "import tensorflow as tf\n\n\ndef filter_boxes(b, shape=tf.constant([416, 416])):\n"
    (tmp_path / "boxes.py").write_text(boxes + "    return b\n")
    script = tmp_path / "train.py"
    script.write_text(
        "import tensorflow as tf\nimport gpu\nfrom boxes import filter_boxes\n\n\n"
        'def main():\n    gpu.setup()\n    tf.ones([1])\n\n\nif __name__ == "__main__":\n'
        "    main()\n"
    )
    done = run_cli("--no-cache", "--output-format", "json", str(script))
    [finding] = json.loads(done.stdout)
    assert finding["code"] == "TFM205"
    assert "at `tf.constant()` (`boxes.py`, line 4)" in finding["message"]
    (tmp_path / "boxes.py").write_text(
        boxes.replace("tf.constant([416, 416])", "None") + "    return b\n"
    )
    assert json.loads(run_cli("--no-cache", "--output-format", "json", str(script)).stdout) == []


GROWTH_IN_MAIN = (
    "def main():\n    for g in tf.config.list_physical_devices('GPU'):\n"
    "        tf.config.experimental.set_memory_growth(g, True)\n    print(tf.ones([1]))\n\n\n"
    'if __name__ == "__main__":\n    main()\n'
)


@pytest.mark.parametrize(
    ("entry", "found"),
    [
        # the import starts the runtime; main's growth then raises RuntimeError
        ("import tensorflow as tf\nfrom boxes import filter_boxes\n\n\n" + GROWTH_IN_MAIN, 2),
        # set up at the top, before that import: configured
        (
            "import tensorflow as tf\n\nfor g in tf.config.list_physical_devices('GPU'):\n"
            "    tf.config.experimental.set_memory_growth(g, True)\n"
            "from boxes import filter_boxes\n\nprint(tf.ones([1]))\n",
            None,
        ),
        # the start in the entry itself is TFM203's to report
        ("import tensorflow as tf\n\nX = tf.constant(1.0)\n\n\n" + GROWTH_IN_MAIN, None),
    ],
)
def test_a_project_import_that_starts_the_runtime_before_the_programs_own_setting(
    tmp_path: Path, entry: str, found: int | None
) -> None:
    """The program sets growth up in `main()`, but an import at its top runs a project
    module's `tf.constant` default argument first (yolov4-tflite's train.py): TFM205 at that
    import, with no fix; the setting must move above it."""
    root = _project(
        tmp_path,
        {
            "boxes.py": "import tensorflow as tf\n\n\n"
            "def filter_boxes(b, shape=tf.constant([416, 416])):\n    return b\n",
            "train.py": entry,
        },
    )
    reported = json.loads(run_cli("--no-cache", "--output-format", "json", str(root)).stdout)
    tfm205 = [f for f in reported if f["code"] == "TFM205"]
    if found is None:
        assert tfm205 == []
        return
    [finding] = tfm205
    assert finding["location"]["row"] == found and finding["fix"] is None
    assert "before its GPU setting on line 7: that setting then raises" in finding["message"]


def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    (tmp_path / ".git").mkdir()
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path


def _found(root: Path, *args: str) -> list[tuple[str, str]]:
    done = run_cli("--no-cache", "--output-format", "json", *args, str(root))
    return sorted(
        (Path(f["filename"]).relative_to(root).as_posix(), f["code"])
        for f in json.loads(done.stdout)
    )


def test_configuration_from_the_projects_own_modules(tmp_path: Path) -> None:
    """Growth set when a project module is imported, or by a project helper called first,
    counts; a helper called only after the first op, and one never called, do not."""
    root = _project(
        tmp_path,
        {
            "setup/__init__.py": "from .gpu import *\n",
            "setup/gpu.py": """\
                import tensorflow as tf
                for g in tf.config.list_physical_devices("GPU"):
                    tf.config.experimental.set_memory_growth(g, True)
            """,
            "tools.py": """\
                import tensorflow as tf
                def grow():
                    for g in tf.config.list_physical_devices("GPU"):
                        tf.config.experimental.set_memory_growth(g, True)
            """,
            "imports_setup.py": 'import setup\nimport tensorflow as tf\nif __name__ == "__main__":\n    tf.ones([1])\n',
            "calls_first.py": 'import tensorflow as tf\nfrom tools import grow\nif __name__ == "__main__":\n    grow()\n    tf.ones([1])\n',
            "calls_late.py": 'import tensorflow as tf\nfrom tools import grow\nif __name__ == "__main__":\n    tf.ones([1])\n    grow()\n',
            "never_calls.py": 'import tensorflow as tf\nimport tools\nif __name__ == "__main__":\n    tf.ones([1])\n',
        },
    )
    assert _found(root) == [("calls_late.py", "TFM205"), ("never_calls.py", "TFM205")]


def test_a_cached_result_follows_the_module_that_configures(tmp_path: Path) -> None:
    root = _project(
        tmp_path,
        {
            "gpu.py": "import tensorflow as tf\n",
            "main.py": 'import gpu\nimport tensorflow as tf\nif __name__ == "__main__":\n    tf.ones([1])\n',
        },
    )
    cache = ("--cache-dir", str(tmp_path / "cache"))
    assert _found(root, *cache) == [("main.py", "TFM205")]
    (root / "gpu.py").write_text(
        'import tensorflow as tf\ntf.config.set_visible_devices([], "GPU")\n'
    )
    assert _found(root, *cache) == []


MODEL = """\
    import tensorflow as tf
    def build():
        return tf.keras.Sequential([tf.keras.layers.Dense(1)])
    SCALE = 2
"""


@pytest.mark.parametrize(
    ("model_lib", "found"),
    [
        ("import tf_keras\n\n\ndef train():\n    tf_keras.Sequential([]).fit([], [])\n", True),
        ("import official\n\n\ndef train():\n    official.core.train_lib.run_experiment()\n", True),
        # TensorFlow only named: in a string, and in a project module's own name
        (
            'NAME = "tensorflow"\nfrom printers import tensorflow_printer\n\n\ndef train():\n'
            "    return NAME\n",
            False,
        ),
    ],
)
def test_the_pre_filter_passes_an_entry_only_for_a_module_that_imports_tensorflow(
    tmp_path: Path, model_lib: str, found: bool
) -> None:
    """An entry that never names TensorFlow reaches the engine through a project module that
    imports one of the packages that start it, whatever the package's name (`tf_keras`,
    Model Garden's `official`), and not through one that only names TensorFlow."""
    root = _project(
        tmp_path,
        {
            "printers/tensorflow_printer.py": "X = 1\n",
            "model_lib.py": model_lib,
            "main.py": 'import model_lib\n\nif __name__ == "__main__":\n    model_lib.train()\n',
        },
    )
    done = run_cli("--no-cache", "--isolated", "--select", "TFM205", "-v", "main.py", cwd=root)
    assert ("main.py" in done.stdout and "TFM205" in done.stdout) is found, done.stdout
    assert ("pre-filtered out                         1 files" in done.stderr) is not found


def test_the_entry_words_are_some_of_tfm205s_words() -> None:
    """The first stage skips looking for the entry words again in a file that failed on all of
    the family's words (`prefilter._entry_words_looked_for`): they must be among them."""
    assert set(THROUGH_PROJECT_WORDS) <= set(UNCONFIGURED_PROGRAM_FAMILY.triggers)


def test_a_program_that_starts_tensorflow_in_a_project_module(tmp_path: Path) -> None:
    """An entry point whose own file never names TensorFlow starts it through a project module:
    reported at its import of that module (of the module it comes through, where that is
    another), and fixed with the growth variable before the first project import. Libraries,
    test modules, entries that use only what starts nothing, and programs the project
    configures first are left alone."""
    guard = 'if __name__ == "__main__":\n    main()\n'
    root = _project(
        tmp_path,
        {
            "models/__init__.py": "",
            "models/net.py": MODEL,
            "models/zoo.py": "from models.net import build\ndef pick(name):\n    return build()\n",
            "setup_gpu.py": """\
                import tensorflow as tf
                for g in tf.config.list_physical_devices("GPU"):
                    tf.config.experimental.set_memory_growth(g, True)
            """,
            "train.py": '"""Trains."""\nimport sys\n\nfrom models.net import build\n\n\n'
            "def main():\n    build().summary()\n\n\n" + guard,
            # black's form of a long import: the names on the lines below
            "black_style.py": "from models.net import (\n    build,\n)\n\n\n"
            "def main():\n    build()\n\n\n" + guard,
            "zoo_train.py": "from models import zoo\n\n\ndef main():\n    zoo.pick('a')\n\n\n"
            + guard,
            "library.py": "from models.net import build\n\n\ndef make():\n    return build()\n",
            "test_net.py": "import unittest\nfrom models.net import build\n\n\n"
            "class T(unittest.TestCase):\n    def test_build(self):\n        build()\n\n\n"
            'if __name__ == "__main__":\n    unittest.main()\n',
            "reads_a_constant.py": "from models.net import SCALE\n\n\ndef main():\n"
            "    print(SCALE)\n\n\n" + guard,
            "configured.py": "import setup_gpu\nfrom models.net import build\n\n\n"
            "def main():\n    build()\n\n\n" + guard,
        },
    )
    done = run_cli("--no-cache", "--output-format", "json", str(root))
    found = {Path(f["filename"]).name: f for f in json.loads(done.stdout)}
    assert sorted((name, f["code"]) for name, f in found.items()) == [
        ("black_style.py", "TFM205"),
        ("train.py", "TFM205"),
        ("zoo_train.py", "TFM205"),
    ]
    assert found["train.py"]["location"]["row"] == 4  # `from models.net import build`
    assert found["train.py"]["message"].startswith(
        "This program starts TensorFlow's runtime at `tf.keras.Sequential()` "
        "(`models/net.py`, line 3) with GPU memory unconfigured"
    )
    assert "through `models.zoo`" in found["zoo_train.py"]["message"]
    assert run_cli("--no-cache", "--fix", str(root)).returncode == 0
    assert (
        (root / "train.py")
        .read_text()
        .startswith(
            '"""Trains."""\nimport os\n\nos.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")\n'
            "import sys\n\nfrom models.net import build\n"
        )
    )
    assert (root / "models/net.py").read_text() == textwrap.dedent(MODEL)
    assert _found(root) == []


def test_a_start_at_import_time_and_beside_jax_through_the_project(tmp_path: Path) -> None:
    """A project module that starts TensorFlow as it is imported (a default value) is met at
    the import; beside JAX, TensorFlow is a guest (TFM207). Editing the module that starts it
    changes a cached result."""
    root = _project(
        tmp_path,
        {
            "ops.py": "import tensorflow as tf\ndef scale(x, by=tf.constant(2.0)):\n    return x\n",
            "data.py": "import tensorflow_datasets as tfds\ndef load():\n"
            "    return tfds.load('mnist', split='train')\n",
            "run.py": 'import ops\nif __name__ == "__main__":\n    print(ops.scale(1))\n',
            "jax_train.py": "import jax\nimport data\n\n\ndef main():\n    ds = data.load()\n"
            '    print(jax.devices(), ds)\n\n\nif __name__ == "__main__":\n    main()\n',
            # Keras itself, on a backend chosen in the module, or beside PyTorch: not TF's
            "on_jax.py": 'import os\nos.environ["KERAS_BACKEND"] = "jax"\nimport keras\n'
            "def build():\n    return keras.Sequential([keras.layers.Dense(1)])\n",
            "plain_keras.py": "import keras\ndef build():\n"
            "    return keras.Sequential([keras.layers.Dense(1)])\n",
            "keras_on_jax.py": 'import on_jax\nif __name__ == "__main__":\n    on_jax.build()\n',
            "beside_torch.py": 'import torch\nimport plain_keras\nif __name__ == "__main__":\n'
            "    plain_keras.build()\n",
        },
    )
    cache = ("--cache-dir", str(tmp_path / "cache"))
    # JAX's side too: the GPU it takes is TensorFlow's as well (TFM208)
    beside_jax = [("jax_train.py", "TFM207"), ("jax_train.py", "TFM208")]
    assert _found(root, *cache) == [*beside_jax, ("run.py", "TFM205")]
    (root / "ops.py").write_text(
        'import tensorflow as tf\ntf.config.set_visible_devices([], "GPU")\n'
        "def scale(x, by=tf.constant(2.0)):\n    return x\n"
    )
    assert _found(root, *cache) == beside_jax


def test_a_script_entry_of_pyproject_is_an_entry_point(tmp_path: Path) -> None:
    root = _project(
        tmp_path,
        {
            "pyproject.toml": '[project]\nname = "p"\n[project.scripts]\nrun = "p.cli:main"\n',
            "src/p/__init__.py": "",
            "src/p/cli.py": "import tensorflow as tf\ndef main():\n    tf.ones([1])\n",
            "src/p/other.py": "import tensorflow as tf\ndef main():\n    tf.ones([1])\n",
        },
    )
    cache = ("--cache-dir", str(tmp_path / "cache"))
    assert _found(root, *cache) == [("src/p/cli.py", "TFM205")]
    (root / "pyproject.toml").write_text('[project]\nname = "p"\n')
    assert _found(root, *cache) == []  # the cached result went with the entry


def test_a_notebook_is_fixed_in_the_cell_that_imports_tensorflow(tmp_path: Path) -> None:
    cells = [["import numpy as np\n", "import tensorflow as tf"], ["tf.ones([1])"]]
    path = write_notebook(tmp_path / "n.ipynb", cells)
    assert run_cli("--no-cache", "--fix", str(path)).returncode == 0
    after = json.loads(path.read_text())
    assert len(after["cells"]) == 2
    assert "".join(
        after["cells"][0]["source"]
    ) == "import numpy as np\nimport tensorflow as tf\n\n" + GROWTH_LOOP.rstrip("\n")
    assert after["cells"][1]["source"] == ["tf.ones([1])"]


@pytest.mark.slow
def test_the_tf1_only_names_are_missing_from_tf2s_top_level() -> None:
    """TFM205 takes a module that spells one of them for TF1 code: each must be a name TF2's
    top level lacks and TF1's has (tf.compat.v1 stands in for TF1; contrib left both)."""
    import tensorflow as tf

    from tfmemlint.rules.unconfigured_program.screen import TF1_ONLY_NAMES

    assert not [name for name in TF1_ONLY_NAMES if hasattr(tf, name)]
    assert [n for n in TF1_ONLY_NAMES if not hasattr(tf.compat.v1, n)] == ["contrib"]


@pytest.mark.slow
def test_the_apis_the_rules_name_exist_in_tensorflow() -> None:
    """Every runtime-starting and configuring API the rules know is a real TF2 name."""
    import tensorflow as tf

    from tfmemlint.rules.runtime import _STARTERS, GROWTH, LIMIT, LIST_GPUS, VISIBILITY

    def exists(api: str) -> bool:
        node = tf
        for part in api.split("."):
            if not hasattr(node, part):
                return False
            node = getattr(node, part)
        return True

    skipped = {
        "python.client.device_lib.list_local_devices",  # not in tf's public namespace
        # No TF 2.21 name: matching it finds nothing wrong, so the rules keep it.
        "config.experimental.set_logical_device_configuration",
    }
    apis = {*_STARTERS, *GROWTH, *LIMIT, *LIST_GPUS, *VISIBILITY} - skipped
    assert [api for api in sorted(apis) if not exists(api)] == []


# --- the TF2 misuse rules: precision and recall -------------------------------------------------
HEAD = 'import tensorflow as tf\ngpus = tf.config.list_physical_devices("GPU")\n'
GROWTH = "tf.config.experimental.set_memory_growth({}, True)"
LIMIT = "tf.config.set_logical_device_configuration({}, [tf.config.LogicalDeviceConfiguration(memory_limit=1024)])"


@pytest.mark.parametrize(
    "loop",
    [
        f"for i in range(len(gpus)):\n    {GROWTH.format('gpus[i]')}\n",
        f"for i, gpu in enumerate(gpus):\n    {GROWTH.format('gpus[i]')}\n",
        f"for i, gpu in enumerate(gpus):\n    {GROWTH.format('gpu')}\n",
        f"_ = [{GROWTH.format('gpus[i]')} for i in range(len(gpus))]\n",
        f"_ = [{GROWTH.format('g')} for g in gpus]\n",
        f'for g in tf.config.list_physical_devices("GPU"):\n    {GROWTH.format("g")}\n',
    ],
)
def test_growth_on_every_gpu_by_index_is_not_tfm202(loop: str) -> None:
    assert codes(HEAD + loop) == []


def test_growth_on_the_first_gpu_inside_main_is_tfm202() -> None:
    source = (
        "import tensorflow as tf\ndef main():\n"
        "    gpus = tf.config.experimental.list_physical_devices('GPU')\n"
        f"    if gpus:\n        try:\n            {GROWTH.format('gpus[0]')}\n"
        "        except RuntimeError as e:\n            print(e)\n"
        "    tf.ones([1])\n"
        'if __name__ == "__main__":\n    main()\n'
    )
    assert codes(source) == ["TFM202"]
    assert codes(fixed(source)) == []


@pytest.mark.parametrize(
    "source",
    [
        # one branch configures, the other starts the runtime: only one runs
        HEAD + f"if gpus:\n    tf.ones([1])\nelse:\n    {GROWTH.format('gpus[0]')}\n",
        HEAD + f"try:\n    x = tf.ones([1])\nexcept ValueError:\n    {LIMIT.format('gpus[0]')}\n",
        HEAD + f"if a:\n    x = tf.ones([1])\nelif b:\n    {LIMIT.format('gpus[0]')}\n",
    ],
)
def test_configuration_in_another_branch_is_not_tfm203(source: str) -> None:
    assert "TFM203" not in codes(source)


def test_starting_the_runtime_inside_the_growth_loop_is_tfm203() -> None:
    source = HEAD + (
        "for gpu in gpus:\n"
        f"    {GROWTH.format('gpu')}\n"
        '    print(len(tf.config.list_logical_devices("GPU")), "logical GPUs")\n'
    )
    [finding] = lint_text("t.py", source, DEFAULT)
    assert (finding.code, finding.location.row) == ("TFM203", 4)
    assert "in the same loop" in finding.message and finding.fix is None
    after_loop = (
        HEAD
        + f"for gpu in gpus:\n    {GROWTH.format('gpu')}\n"
        + 'print(tf.config.list_logical_devices("GPU"))\n'
    )
    assert codes(after_loop) == []
    retry = HEAD + (
        "for attempt in range(3):\n    try:\n        for gpu in gpus:\n"
        f"            {GROWTH.format('gpu')}\n        x = tf.ones([1])\n        break\n"
        "    except RuntimeError:\n        pass\n"
    )
    assert codes(retry) == []  # a retry loop: no next pass once it got through


@pytest.mark.parametrize(
    "source",
    [
        HEAD
        + f"for i in range(len(gpus)):\n    {GROWTH.format('gpus[i]')}\nif gpus:\n    {LIMIT.format('gpus[0]')}\n",
        HEAD
        + f"for i, g in enumerate(gpus):\n    {LIMIT.format('g')}\n    {GROWTH.format('gpus[i]')}\n",
        HEAD
        + f'for g in tf.config.list_physical_devices("GPU"):\n    {GROWTH.format("g")}\n{LIMIT.format("gpus[0]")}\n',
    ],
)
def test_growth_and_a_limit_in_a_loop_or_behind_a_condition_is_tfm204(source: str) -> None:
    assert "TFM204" in codes(source)


def test_growth_and_a_limit_after_the_runtime_started_are_tfm203_alone() -> None:
    """Both raise RuntimeError then: nothing is "silently dropped" (TFM204's claim)."""
    source = HEAD + f"x = tf.ones([1])\n{GROWTH.format('gpus[0]')}\n{LIMIT.format('gpus[0]')}\n"
    assert sorted(codes(source)) == ["TFM202", "TFM203", "TFM203"]


def test_growth_and_a_limit_in_different_branches_is_not_tfm204() -> None:
    source = HEAD + (
        f"if small:\n    for g in gpus:\n        {LIMIT.format('g')}\n"
        f"else:\n    for g in gpus:\n        {GROWTH.format('g')}\n"
    )
    assert codes(source) == []


def test_force_growth_from_a_bool_is_tfm201_and_lower_cased() -> None:
    source = 'import os\nos.environ["TF_FORCE_GPU_ALLOW_GROWTH"] = str(flag)\n'
    [finding] = lint_text("t.py", source, DEFAULT)
    assert finding.code == "TFM201" and '"True"' in finding.message
    assert fixed(source) == source.replace("str(flag)", "str(flag).lower()")
    assert codes(fixed(source)) == []
    shadowed = "str = repr\n" + source
    assert codes(shadowed) == []


# --- found in review: where the fix could go wrong, and what the walk must not assume ------------
@pytest.mark.parametrize(
    "change",
    [
        # the GPUs chosen after the import: by a key the module names, or by a setting of its own
        lambda s: s.replace("    print(", '    os.environ[KEY] = "1"\n    print(').replace(
            "import os\n", 'import os\nKEY = "CUDA_VISIBLE_DEVICES"\n'
        ),
        # growth forced off, whatever the loop sets
        lambda s: s.replace(
            "import os\n", 'import os\nos.environ["TF_FORCE_GPU_ALLOW_GROWTH"] = "false"\n'
        ),
    ],
)
def test_no_fix_where_the_loop_would_come_too_early_or_do_nothing(change) -> None:
    """Nor is the variable sure: code before the imports may be anything, and a no for
    growth overrides it."""
    [finding] = lint_text("t.py", change(SCRIPT), DEFAULT)
    assert finding.code == "TFM205" and finding.fix is None


def test_a_program_that_starts_processes_gets_the_variable() -> None:
    """Processes started later must not inherit a CUDA the loop initialized: the variable
    initializes nothing."""
    forks = SCRIPT.replace("import os\n", "import os\nimport multiprocessing\n")
    [finding] = lint_text("t.py", forks, DEFAULT)
    assert "it starts processes, which must not inherit CUDA" in finding.message
    assert fixed(forks) == forks.replace("import os\n", "import os\n\n" + VARIABLE_FIRST, 1)


def test_the_variable_where_a_project_module_chooses_the_gpus(tmp_path: Path) -> None:
    root = _project(
        tmp_path,
        {
            "settings.py": 'import os\nos.environ["CUDA_VISIBLE_DEVICES"] = "1"\n',
            "main.py": 'import tensorflow as tf\nimport settings\nif __name__ == "__main__":\n    tf.ones([1])\n',
        },
    )
    done = run_cli("--no-cache", "--output-format", "json", str(root))
    [finding] = json.loads(done.stdout)
    assert finding["code"] == "TFM205"
    assert finding["fix"]["message"].startswith("Set TF_FORCE_GPU_ALLOW_GROWTH=true")


def test_a_notebook_that_chooses_its_gpus_with_a_magic_gets_the_variable(tmp_path: Path) -> None:
    """The variable goes before the first import, after a cell that only installs packages."""
    cells = [
        ["!pip install -q tensorflow"],
        ["import tensorflow as tf"],
        ["%env CUDA_VISIBLE_DEVICES=1"],
        ["tf.ones([1])"],
    ]
    path = write_notebook(tmp_path / "n.ipynb", cells)
    done = run_cli("--no-cache", "--output-format", "json", str(path))
    [finding] = json.loads(done.stdout)
    assert finding["code"] == "TFM205"
    assert finding["fix"]["message"].startswith("Set TF_FORCE_GPU_ALLOW_GROWTH=true")
    assert run_cli("--no-cache", "--fix", str(path)).returncode == 0
    second = json.loads(path.read_text())["cells"][1]["source"]
    assert "".join(second).startswith("import os\n\n" + VARIABLE_FIRST + "import tensorflow")
    # a line that may run the program's Python first leaves no sure place
    cells[0] = ["%run setup.py"]
    path = write_notebook(tmp_path / "m.ipynb", cells)
    [finding] = json.loads(run_cli("--no-cache", "--output-format", "json", str(path)).stdout)
    assert finding["fix"] is None


@pytest.mark.parametrize(
    "source",
    [
        # scikit-learn's fit, in a module that uses TensorFlow only for files
        'import tensorflow as tf\nfrom sklearn.linear_model import Ridge\nnames = tf.io.gfile.listdir(".")\nRidge().fit(x, y)\n',
        # not a main guard
        'import tensorflow as tf\nif __name__ != "__main__":\n    tf.ones([1])\n',
        # a decorator that names its own function: no endless search for a click group
        "import tensorflow as tf\n@go.command()\ndef go():\n    tf.ones([1])\n",
        # tyro builds a config class it is given, and runs none of its methods
        'import tyro\nimport tensorflow as tf\nclass Config:\n    def model(self):\n        return tf.ones([1])\nif __name__ == "__main__":\n    cfg = tyro.cli(Config)\n'
        # a handler registered before the program sets GPU memory up runs after it, if ever
        'import flask\nimport tensorflow as tf\napp = flask.Flask(__name__)\ndef predict():\n    return str(tf.zeros([1]))\nif __name__ == "__main__":\n    app.add_url_rule("/p", view_func=predict)\n    tf.config.set_visible_devices([], "GPU")\n    app.run()\n',
        # the standard library keeps a function for later, if ever: a signal, the exit
        'import atexit, signal\nimport tensorflow as tf\ndef save(*_):\n    tf.ones([1])\nif __name__ == "__main__":\n    signal.signal(signal.SIGTERM, save)\n    atexit.register(save)\n',
        # a function passed to a call the walk enters is the callee's to run, or not
        'import tensorflow as tf\ndef later(f):\n    return f\ndef train():\n    tf.ones([1])\nif __name__ == "__main__":\n    later(train)\n',
    ],
)
def test_what_the_walk_must_not_assume(source: str) -> None:
    assert codes(source) == []


def test_growth_set_up_by_a_project_class(tmp_path: Path) -> None:
    """A static method, or a method of an object of a project class, is followed; a call the
    walk cannot follow into a module that sets GPU memory up leaves it unsure: no finding."""
    root = _project(
        tmp_path,
        {
            "gpu.py": """\
                import tensorflow as tf
                class GPU:
                    @staticmethod
                    def setup():
                        for g in tf.config.list_physical_devices("GPU"):
                            tf.config.experimental.set_memory_growth(g, True)
                class Trainer:
                    def run(self):
                        tf.ones([1])
                REGISTRY = {"setup": GPU.setup}
            """,
            "static.py": 'import tensorflow as tf\nfrom gpu import GPU\nif __name__ == "__main__":\n    GPU.setup()\n    tf.ones([1])\n',
            "unfollowed.py": 'import tensorflow as tf\nimport gpu\nif __name__ == "__main__":\n    gpu.REGISTRY["setup"]()\n    tf.ones([1])\n',
            "method.py": 'import tensorflow as tf\nfrom gpu import Trainer\nif __name__ == "__main__":\n    Trainer().run()\n',
        },
    )
    assert _found(root) == [("method.py", "TFM205")]


@pytest.mark.parametrize(
    ("built_from", "found"),
    [
        # a Cython source that names no framework and no environment variable sets nothing up
        ({"fast.pyx": "def overlap(a, b):\n    return a + b\n"}, [("infer.py", "TFM205")]),
        # one that does may set GPU memory up, and one with no source in the tree is unknown
        ({"fast.pyx": "import os\nos.environ['CUDA_VISIBLE_DEVICES'] = ''\n"}, []),
        ({}, []),
    ],
)
def test_a_compiled_project_module_is_read_through_its_cython_source(
    tmp_path: Path, built_from: dict[str, str], found: list[tuple[str, str]]
) -> None:
    """A guard-less script imports a helper package whose module is built from Cython at install
    time (`pkg/fast.pyx`, no `fast.py`): what that module runs is read from its source."""
    root = _project(
        tmp_path,
        {
            "pkg/__init__.py": "",
            **{f"pkg/{name}": text for name, text in built_from.items()},
            "boxes.py": "from tensorflow import keras\nfrom pkg.fast import overlap\n",
            "model.py": "from tensorflow.keras import layers, models\n\n\ndef build():\n"
            "    x = layers.Input((1,))\n    return models.Model(x, layers.Dense(1)(x))\n",
            "infer.py": "from boxes import overlap\nfrom model import build\n\n"
            "model = build()\nprint(model.predict([[1.0]]))\n",
        },
    )
    assert _found(root) == found


def test_a_notebook_that_starts_tensorflow_through_a_project_module(tmp_path: Path) -> None:
    """A notebook that never imports TensorFlow builds a Keras model through a module of the
    project: reported at the cell's import of that module, and fixed with the growth
    variable right after the notebook's `import os`. One that only imports it, never."""
    root = _project(
        tmp_path,
        {
            "models/__init__.py": "",
            "models/net.py": "import tensorflow as tf\n\n\ndef build():\n"
            "    return tf.keras.Sequential([tf.keras.layers.Dense(1)])\n",
        },
    )
    cells = ["import os\nimport numpy as np", "from models.net import build", "model = build()"]
    path = write_notebook(root / "explore.ipynb", cells)
    assert _found(root) == [("explore.ipynb", "TFM205")]
    assert run_cli("--no-cache", "--fix", str(path)).returncode == 0
    after = [cell["source"] for cell in json.loads(path.read_text())["cells"]]
    setting = 'os.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")\n'
    assert "".join(after[0]) == cells[0].replace("os\n", "os\n\n" + setting)
    assert ["".join(cell) for cell in after[1:]] == cells[1:]
    assert _found(root) == []
    write_notebook(path, cells[:2])
    assert _found(root) == []


CAUGHT_LIMIT = (
    'gpus = tf.config.list_physical_devices("GPU")\ntry:\n'
    "    tf.config.set_logical_device_configuration(\n"
    "        gpus[0], [tf.config.LogicalDeviceConfiguration(memory_limit=1024)]\n    )\n"
    "except RuntimeError as e:\n    print(e)\n"
)


def test_a_caught_setting_after_the_start_leaves_the_program_unconfigured() -> None:
    """A notebook's order: data loaded, then the GPU set up in a `try` that prints the
    RuntimeError. The program runs on with nothing set up: TFM205 beside TFM203. Its fix, the
    growth variable first, changes nothing else: the setting still raises, and is caught."""
    source = (
        "import tensorflow as tf\nimport tensorflow_datasets as tfds\n\n"
        "ds = tfds.load('mnist', split='train')\n" + CAUGHT_LIMIT + "print(next(iter(ds)))\n"
    )
    found = {f.code: f for f in lint_text("t.py", source, DEFAULT)}
    assert sorted(found) == ["TFM203", "TFM205"]
    assert "the GPU setting on line 7 comes after that" in found["TFM205"].message
    result = fixed(source)
    assert result == source.replace(
        "import tensorflow as tf\n",
        "import os\n\n" + VARIABLE_FIRST + "import tensorflow as tf\n",
        1,
    )
    assert codes(result) == ["TFM203"]


@pytest.mark.parametrize(
    "source",
    [
        # the setting comes first, as TensorFlow's guide writes it
        "import tensorflow as tf\n\n" + CAUGHT_LIMIT + "print(tf.ones([1]))\n",
        # in a function the walk may not follow in order: taken at its word, as before
        "import tensorflow as tf\n\n\ndef setup():\n"
        + textwrap.indent(CAUGHT_LIMIT, "    ")
        + "\n\nx = tf.ones([1])\nsetup()\nprint(x)\n",
    ],
)
def test_a_caught_setting_that_may_come_first_is_no_tfm205(source: str) -> None:
    assert "TFM205" not in codes(source)


def test_a_cached_result_follows_every_module_the_walk_read(tmp_path: Path) -> None:
    """entry -> a -> b: a change in b reaches the entry's cached result."""
    root = _project(
        tmp_path,
        {
            "b.py": 'import tensorflow as tf\ntf.config.set_visible_devices([], "GPU")\n',
            "a.py": "import b\n",
            "main.py": 'import tensorflow as tf\nimport a\nif __name__ == "__main__":\n    tf.ones([1])\n',
        },
    )
    cache = ("--cache-dir", str(tmp_path / "cache"))
    assert _found(root, *cache) == []
    (root / "b.py").write_text("import tensorflow as tf\n")
    assert _found(root, *cache) == [("main.py", "TFM205")]


def test_a_script_entry_found_whatever_words_it_holds(tmp_path: Path) -> None:
    """A word of another rule (`Session` in a docstring) does not keep the script route shut."""
    root = _project(
        tmp_path,
        {
            "pyproject.toml": '[project]\nname = "p"\n[project.scripts]\nrun = "cli:main"\n',
            "cli.py": '"""No tf.Session here."""\nimport tensorflow as tf\ndef main():\n    tf.ones([1])\n',
        },
    )
    assert _found(root) == [("cli.py", "TFM205")]


TEST_MODULE = """\
import tensorflow as tf

SCALE = tf.constant(2.0)


class ScaleTest(tf.test.TestCase):
    def test_scale(self):
        self.assertEqual(float(SCALE), 2.0)


if __name__ == "__main__":
    tf.test.main()
"""


@pytest.mark.parametrize("runner", sorted(TEST_RUNNERS))
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_a_test_module_is_not_a_program(runner: str, newline: str) -> None:
    """Its guard only runs its tests: pytest imports it without the guard. The first stage
    tells it from the text, never parsing it, and the rule agrees."""
    source = TEST_MODULE.replace("tf.test.main", runner)
    assert "TFM205" not in codes(source)
    assert not may_have_findings(source.replace("\n", newline).encode(), DEFAULT.selected)


@pytest.mark.parametrize(
    "guard",
    [
        "    tf.test.main()\n    print(SCALE)\n",  # a program after the tests
        "    print(SCALE)\n",
        "    tf.test.main()\nelse:\n    print(SCALE)\n",
        "    run_tests.main()\n",  # not a test runner's spelling
    ],
)
def test_a_guard_that_does_more_than_run_tests_is_an_entry_point(guard: str) -> None:
    source = TEST_MODULE.replace("    tf.test.main()\n", guard)
    assert codes(source) == ["TFM205"]


def test_a_test_runner_with_arguments_is_left_to_the_rule() -> None:
    """The first stage reads only the plain call; the rule reads any arguments too."""
    source = TEST_MODULE.replace("tf.test.main()", "absltest.main(argv=sys.argv)")
    assert may_have_findings(source.encode(), DEFAULT.selected)
    assert "TFM205" not in codes(source)


@pytest.mark.parametrize(
    "program",
    [
        # entry points whose words come from the checker's tables: training methods, runners
        "m = keras.Sequential([keras.layers.Dense(1)])\nm.train_on_batch([[1.0]], [[1.0]])\n",
        "m = keras.Sequential([keras.layers.Dense(1)])\nm.fit_generator(batches)\n",
        "from absl.app import run\ndef main(_):\n    tf.ones([1])\nrun(main)\n",
        "from jsonargparse import CLI\ndef main(lr: float = 0.1):\n    tf.ones([1])\nCLI(main)\n",
    ],
)
def test_the_rule_counts_its_words_as_the_first_stage_does(program: str) -> None:
    """The first stage passes each kind of entry point the rule finds, on words generated from
    the tables the rule reads (`codes` also checks both stages let the finding through)."""
    source = "import tensorflow as tf\nfrom tensorflow import keras\n" + program
    assert codes(source) == ["TFM205"]
    assert may_have_findings(source.encode(), DEFAULT.selected)


TF1_HELPERS = {
    "tf1util.py": "import tensorflow as tf\ndef make_session():\n    return tf.Session()\n"
    "def log(message):\n    print(message)\n",
    "tf1compat.py": "import tensorflow.compat.v1 as tf\ndef make_session():\n"
    "    return tf.Session()\ndef log(message):\n    print(message)\n",
}


@pytest.mark.parametrize("helper", sorted(TF1_HELPERS))
@pytest.mark.parametrize(("called", "expected"), [("make_session", []), ("log", ["TFM205"])])
def test_a_program_that_runs_tf1_code_through_a_helper_is_tf1(
    tmp_path: Path, helper: str, called: str, expected: list[str]
) -> None:
    """openai/baselines' `U.make_session().__enter__()` before graph ops: a TF1 program,
    not a TF2 one; a helper of the same TF1 module that runs no TensorFlow changes nothing."""
    module = helper.removesuffix(".py")
    root = _project(
        tmp_path,
        {
            helper: TF1_HELPERS[helper],
            "main.py": f"import tensorflow as tf\nimport {module}\n"
            f"def main():\n    {module}.{called}()\n    tf.reduce_mean(tf.ones([2]))\n"
            'if __name__ == "__main__":\n    main()\n',
        },
    )
    assert [code for _, code in _found(root, "--select", "TFM205")] == expected


@pytest.mark.parametrize(
    "contrib",
    [
        "from tensorflow.contrib import slim",
        "import tensorflow.contrib.slim as slim",
        "from tensorflow.contrib.boosted_trees.estimator_batch.estimator import Classifier",
    ],
)
def test_a_module_that_imports_from_contrib_is_tf1(contrib: str) -> None:
    """TF2 dropped `tensorflow.contrib`: a program that imports from it runs on TF1, which the
    session rules cover. The pre-filter's second stage sees it too, so it is never parsed."""
    source = (
        f"import tensorflow as tf\n{contrib}\n"
        'if __name__ == "__main__":\n    print(tf.reduce_mean(tf.ones([2])))\n'
    )
    assert codes(source) == []
    assert may_have_findings(source.encode(), DEFAULT.selected)
    assert not code_may_have_findings(source.encode(), DEFAULT.selected)
    without = source.replace(f"{contrib}\n", "")
    assert codes(without) == ["TFM205"]
    assert code_may_have_findings(without.encode(), DEFAULT.selected)


# Each starts the runtime at import, so it is reported wherever it is an entry point.
_STARTS = "import tensorflow as tf\nx = tf.ones([1])\n"


@pytest.mark.parametrize(
    "source",
    [
        # a main function run through an alias, or under another name
        "from absl import app\nrun = app.run\ndef main(argv):\n    pass\nrun(main)\n",
        "import absl.app\ngo = absl.app.run\ndef main(argv):\n    pass\ngo(main)\n",
        "from fire import *\ndef main():\n    pass\nFire(main)\n",
        # beside a star import, a name the module binds itself, and one bound in a function
        "from tensorflow.python.ops.gen_math_ops import *\nfrom absl.app import run\n"
        "def main(argv):\n    pass\nrun(main)\n",
        "from tensorflow.python.ops.gen_math_ops import *\ndef setup():\n    global run\n"
        "    from absl.app import run\nsetup()\ndef main(argv):\n    pass\nrun(main)\n",
        # a training loop's tape, through an alias
        "from tensorflow import GradientTape\nTape = GradientTape\ntape = Tape()\n",
        # `None` is a name to libcst, which the rule looks for in the star import
        "from click import *\ncmd = None\n@cmd\ndef main():\n    pass\n",
        # a name of the module bound in a function
        "from absl import app\ndef setup():\n    global go\n    go = app.run\nsetup()\n"
        "def main(argv):\n    pass\ngo(main)\n",
        "from absl import app\rdef setup():\r    global go\r    go = app.run\rsetup()\r"
        "def main(argv):\r    pass\rgo(main)\r",
        "from absl import app\ndef setup(): global go; go = app.run\nsetup()\n"
        "def main(argv):\n    pass\ngo(main)\n",
        "from absl import app\ndef setup():\n    x = 1;\tglobal\\\n go\n    go = app.run\nsetup()\n"
        "def main(argv):\n    pass\ngo(main)\n",
        # a click command spelled through an import or an alias
        "from click import command\n@command()\ndef go():\n    pass\n",
        "import click\ncmd = click.command\n@cmd()\ndef go():\n    pass\n",
        # a guard that runs tests from a suite on its own line (or joined to it) is a program's
        'if __name__ == "__main__": tf.test.main()\n',
        'if __name__ == "__main__": \\\n    tf.test.main()\n',
        'if (\n    __name__ == "__main__"\n): tf.test.main()\n',
        # what a test guard runs beside the tests
        'if __name__ == "__main__":\n    tf.test.main()\nelse:\n    pass\n',
        'if __name__ == "__main__":\n    tf.test.main()\n    print(x)\n',
        # names CPython reads in NFKC form, libcst as written (a full-width `t`, `p`)
        'if __name__ == "__main__":\n    \uff54f.test.main()\n',
        'y = tf.\uff50laceholder\nif __name__ == "__main__":\n    print(x)\n',
    ],
)
def test_the_screen_keeps_every_spelling_of_an_entry_point(source: str) -> None:
    """The pre-filter's second stage sets a library module aside (see the next test); every
    spelling the rule takes for an entry point gets through it. (`lint_text` checks that the
    pre-filter lets through each text with a finding.)"""
    assert codes(_STARTS + source) == ["TFM205"]


@pytest.mark.parametrize(
    "source",
    [
        # the words in a docstring, a string, a comment, a name
        '"""Train it with `model.fit(x)`, or run `app.run(main)` as `__main__`."""\n',
        'NAME = "__main__"  # click\ndef typer_help():\n    pass\n',
        # training and running inside functions, which nothing calls at module level
        "def train(model):\n    model.fit(x)\n",
        "from absl import app\ndef launch():\n    app.run(print)\n",
        # a decorator that is no click or typer command
        "import functools\n@functools.lru_cache()\ndef f():\n    pass\n",
        # beside a star import, calls of names the module binds itself, and of a builtin that
        # the star import is taken to bind (TensorFlow's own modules)
        "from tensorflow.python.ops.gen_array_ops import *\n"
        "from tensorflow.python.util.tf_export import tf_export\n"
        "@tf_export('f')\ndef f():\n    pass\nEXPORTED = tf_export('g')(len)\n"
        "TYPES = set([int])\n",
        # a test module's guard, which the first stage sees only at the module's end
        'if __name__ == "__main__":\n    tf.test.main()\nVERSION = 2\n',
    ],
)
def test_the_screen_sets_a_library_module_aside(source: str) -> None:
    """A module that holds an entry point's words, and is no entry point, is never parsed."""
    source = _STARTS + source + "# For `__main__`: see click.\n"
    raw = source.encode()
    assert codes(source) == []
    assert may_have_findings(raw, DEFAULT.selected)
    assert not code_may_have_findings(raw, DEFAULT.selected)


def test_the_screen_follows_a_runner_through_the_projects_modules(tmp_path: Path) -> None:
    """A main function run through a name that a project module binds to `absl.app.run`: the
    screen asks the project index, as the rule does, and a cached verdict depends on what it
    read there."""
    main = (
        '"""Runs as `__main__` through tools.cli."""\n'
        + _STARTS
        + "from tools.cli import launch\ndef main(argv):\n    pass\nlaunch(main)\n"
    )
    # In a package: a script with no guard would be an entry point whatever `launch` is.
    files = {
        "tools/__init__.py": "",
        "tools/cli.py": "def launch(main):\n    pass\n",
        "app/__init__.py": "",
    }
    (tmp_path / "project").mkdir()
    root = _project(tmp_path / "project", {**files, "app/main.py": main})
    cached = ["--cache-dir", str(tmp_path / "cache"), "--output-format", "json", str(root)]
    assert _verdict(root / "app" / "main.py") == "screened"
    assert json.loads(run_cli(*cached).stdout) == []
    (root / "tools" / "cli.py").write_text("from absl.app import run as launch\n")
    assert _verdict(root / "app" / "main.py") == "parse"
    [finding] = json.loads(run_cli(*cached).stdout)  # the cache knows what the screen read
    assert (Path(finding["filename"]).name, finding["code"]) == ("main.py", "TFM205")


@pytest.mark.parametrize(
    ("files", "entry"),
    [
        # a task decorator and a service's, each under another name from a project module
        (
            {
                "lib/tasks.py": "from celery import shared_task as task\n",
                "app/main.py": "from lib.tasks import task\n@task\ndef predict(v):\n    return x\n",
            },
            "app/main.py",
        ),
        (
            {
                "lib/web.py": "from ray import serve\n",
                "app/main.py": "from lib.web import serve\n@serve.deployment\nclass Model:\n"
                "    def __call__(self, request):\n        return x\n",
            },
            "app/main.py",
        ),
        # an app made through a project module's alias
        (
            {
                "lib/web.py": "from flask import Flask as App\n",
                "app/main.py": "from lib.web import App\napi = App(__name__)\n",
            },
            "app/main.py",
        ),
        # functools.partial, as a project module passes it on
        (
            {
                "lib/cli.py": "from functools import partial\nfrom absl.app import run\n",
                "app/main.py": "from lib.cli import partial, run\ndef main(argv):\n    pass\n"
                "partial(run, main)()\n",
            },
            "app/main.py",
        ),
        # Django's split settings, which add to what they import
        (
            {
                "mysite/__init__.py": "",
                "mysite/settings/__init__.py": "",
                "mysite/settings/base.py": "INSTALLED_APPS = ['django.contrib.admin']\n",
                "mysite/settings/prod.py": "from .base import INSTALLED_APPS\n"
                "INSTALLED_APPS += ['predict']\n",
            },
            "mysite/settings/prod.py",
        ),
        (
            {
                "mysite/__init__.py": "",
                "mysite/settings/__init__.py": "",
                "mysite/settings/prod.py": "def setup():\n    global INSTALLED_APPS\n"
                "    INSTALLED_APPS = ['predict']\n",
            },
            "mysite/settings/prod.py",
        ),
        # a name from a star import of a project module, that binds a runner
        (
            {
                "tools/cli.py": "from absl.app import run as launch\n",
                "app/main.py": "from tools.cli import *\nTYPES = set()\ndef main(argv):\n"
                "    pass\nlaunch(main)\n",
            },
            "app/main.py",
        ),
    ],
)
def test_the_screen_resolves_a_server_or_a_runner_through_the_project_as_the_rule_does(
    tmp_path: Path, files: dict[str, str], entry: str
) -> None:
    """What makes a module a served program, or runs its main function, may come from another
    module of the project under another name: the screen asks the project index, as the rule
    does, and lets the module through to TFM205."""
    files = {"lib/__init__.py": "", "tools/__init__.py": "", "app/__init__.py": "", **files}
    files[entry] = '"""Run as `__main__`: see click."""\n' + _STARTS + files[entry]
    root = _project(tmp_path, files)
    assert _verdict(root / entry) == "parse"
    done = run_cli("--no-cache", "--output-format", "json", str(root / entry), cwd=root)
    assert [finding["code"] for finding in json.loads(done.stdout)] == ["TFM205"], done.stderr


def test_the_screen_sets_aside_a_module_whose_star_import_binds_no_runner(
    tmp_path: Path,
) -> None:
    """TensorFlow's own modules star-import generated ops and call, at import, names they bind
    themselves and builtins: the screen asks the project index which star import binds a name,
    as the rule does, and sets the module aside."""
    main = (
        "from tools.gen_ops import *\nfrom tools.export import tf_export\n"
        "@tf_export('f')\ndef f():\n    pass\nTYPES = set([int])\nEXPORTED = tf_export('g')(f)\n"
    )
    files = {
        "tools/__init__.py": "",
        "tools/gen_ops.py": "def f():\n    pass\n",
        "tools/export.py": "def tf_export(name):\n    return lambda f: f\n",
        "app/__init__.py": "",
        "app/main.py": '"""Run as `__main__`: see click."""\n' + _STARTS + main,
    }
    root = _project(tmp_path, files)
    assert _verdict(root / "app" / "main.py") == "screened"
    (root / "tools" / "gen_ops.py").write_text("from absl.app import run as set\n")
    assert _verdict(root / "app" / "main.py") == "parse"


def test_the_screen_passes_a_module_level_loop_only_where_it_may_go_over_a_dataset(
    tmp_path: Path,
) -> None:
    """A loop at module level over a `tf.data` dataset is training there, and the module an
    entry point (an `async for` too); over a list, or a name bound to one (TensorFlow's own
    modules register ops so), it is not, and in a package the screen sets the module aside."""
    head = '"""Run as `__main__`: see click."""\n' + _STARTS
    files = {
        "app/__init__.py": "",
        "app/lists.py": head + "NAMES = ['a']\nfor name in NAMES:\n    pass\n"
        "for other in ['b', 'c']:\n    pass\n",
        "app/trains.py": head + "if x is not None:\n    ds = tf.data.Dataset.range(3)\n"
        "for batch in ds:\n    pass\n",
        "app/calls.py": head + "async for batch in tf.data.Dataset.range(3):\n    pass\n",
        # a call that makes no dataset (TensorFlow's own `__init__.py`)
        "app/others.py": head + "import sysconfig as _sysconfig\n"
        "for _scheme in _sysconfig.get_scheme_names():\n    pass\n",
        # a method of a dataset that `tf.data` makes
        "app/methods.py": head + "for batch in tf.data.Dataset.range(3).batch(2):\n    pass\n",
        # a `global` statement that declares another name than the loop's
        "app/declares.py": head + "NAMES = ['a']\nfor name in NAMES:\n    pass\n"
        "def setup():\n    global CACHE\n    CACHE = {}\n",
        # the loop's name, bound to a dataset in a function, under `global`
        "app/binds.py": head + "def setup():\n    global ds\n    ds = tf.data.Dataset.range(3)\n"
        "setup()\nfor batch in ds:\n    pass\n",
    }
    root = _project(tmp_path, files)
    for name in ("lists.py", "declares.py", "others.py"):
        assert _verdict(root / "app" / name) == "screened"
    for name in ("trains.py", "calls.py", "methods.py", "binds.py"):
        assert _verdict(root / "app" / name) == "parse"
    done = run_cli("--no-cache", "--output-format", "json", str(root), cwd=root)
    found = sorted((Path(f["filename"]).name, f["code"]) for f in json.loads(done.stdout))
    expected = [(name, "TFM205") for name in ("binds.py", "calls.py", "methods.py", "trains.py")]
    assert found == expected, done.stderr


@pytest.mark.parametrize(
    "raw",
    [
        # A lone CR ends the first line: Python's `tokenize`, which the rules' text comes
        # from, reads the UTF-7 declaration after it, where `+AAoAIAAgACAAIA-` is a line
        # break and an indent, and so a `global` statement; CPython's parse does not read the
        # declaration, and its tree holds a comment there.
        b"#!/usr/bin/env python\rimport tensorflow as tf  # coding: utf-7\n\n\n"
        b"def setup():\n    pass  # +AAoAIAAgACAAIA-global ds\n"
        b"    ds = tf.data.Dataset.range(3)\n\n\nsetup()\nfor batch in ds:\n    print(batch)\n",
        # A stateful codec: Python's decode keeps the Korean shift over a lone CR; CPython's
        # parse makes it a line break first, which ends the shift, and its tree holds the
        # `global` statement in a string.
        b"# -*- coding: iso2022_kr -*-\n# \x1b$)C\nimport tensorflow as tf\n"
        b'X = """\x0e\x30\x21\r\x22\x22\x22\x3c\x0f"""\n\n\ndef setup():\n    global ds\n'
        b'    ds = tf.data.Dataset.range(3)\n\n\n# """\nsetup()\nfor batch in ds:\n'
        b"    print(batch)\n",
    ],
)
def test_the_screen_passes_a_module_whose_syntax_tree_may_not_spell_its_text(
    tmp_path: Path, raw: bytes
) -> None:
    """Where CPython's parse may decode the bytes otherwise than the text the rules read, the
    screen trusts no tree, and TFM205 finds the loop over the dataset that the function
    binds."""
    root = _project(tmp_path, {"app/__init__.py": ""})
    (root / "app" / "train.py").write_bytes(raw)
    assert _verdict(root / "app" / "train.py") == "parse"
    assert _screen_lets_through(root / "app" / "train.py")
    done = run_cli("--no-cache", "--output-format", "json", str(root), cwd=root)
    assert [finding["code"] for finding in json.loads(done.stdout)] == ["TFM205"], done.stderr


def test_the_screen_trusts_no_tree_that_may_hide_the_import_of_tensorflow(tmp_path: Path) -> None:
    """The script's import of TensorFlow is code in the text the rule reads; in CPython's tree,
    which makes a lone CR a line break before it decodes the stateful `iso2022_kr`, it sits in
    a string. The screen once took the module for one that imports no TensorFlow and set it
    aside."""
    (tmp_path / "train.py").write_bytes(
        b"# -*- coding: iso2022_kr -*-\n# \x1b$)C\n"
        b'X = """\x0e\x30\x21\r\x22\x22\x22\x3c\x0f"""\nimport tensorflow as tf\n# """\n'
        b"print(tf.zeros(1))\n"
    )
    assert _screen_lets_through(tmp_path / "train.py")
    done = run_cli("--no-cache", "--isolated", "--output-format", "json", ".", cwd=tmp_path)
    assert [finding["code"] for finding in json.loads(done.stdout)] == ["TFM205"], done.stderr


def test_a_module_that_acts_at_module_level_is_a_script_only_outside_a_package(
    tmp_path: Path,
) -> None:
    """A module with no guard that does something at module level (a call whose result it
    does not keep, a loop) is run as a script where no package holds it, or a folder of
    scripts does (`examples/`), and it is no test module. Elsewhere in a package it is
    imported by name: a library, which the screen sets aside; and a cached result goes when
    an `__init__.py` makes a package of the script's folder."""
    acts = (
        _STARTS
        + "import numpy as np\nfrom tensorflow.python.util.tf_export import tf_export\n"
        + "seed = np.random.seed\nseed(0)\ntf_export('f')(print)\nprint(x)\n"
    )
    (tmp_path / "project").mkdir()
    root = _project(
        tmp_path / "project",
        {
            "jobs/run.py": acts,
            "jobs/test_run.py": acts,
            "jobs/defines.py": _STARTS + "def f():\n    return x\n",
            "pkg/__init__.py": "",
            "pkg/lib.py": acts,
            "examples/__init__.py": "",
            "examples/demo.py": acts,
        },
    )
    cached = ["--cache-dir", str(tmp_path / "cache"), "--output-format", "json", str(root)]
    found = sorted(
        (Path(f["filename"]).relative_to(root).as_posix(), f["code"])
        for f in json.loads(run_cli(*cached).stdout)
    )
    assert found == [("examples/demo.py", "TFM205"), ("jobs/run.py", "TFM205")]
    for library in ("pkg/lib.py", "jobs/test_run.py", "jobs/defines.py"):
        assert _verdict(root / library) != "parse", library
    (root / "jobs" / "__init__.py").write_text("")
    assert [f["filename"] for f in json.loads(run_cli(*cached).stdout)] == [
        str(root / "examples" / "demo.py")
    ]
    assert _verdict(root / "jobs" / "run.py") == "screened"


def _screen_lets_through(path: Path) -> bool:
    """TFM205's screen alone, on CPython's tree of the file. (A file whose declared encoding
    may spell the words otherwise, `iso2022_kr`, `utf-7`, skips the pre-filter whole: its
    verdict does not show what the screen would do.)"""
    raw = path.read_bytes()
    project = new_project_index(None).resolver(str(path))
    return screen.may_find(parse_python(raw), ScreenedFile(raw, project=lambda: project))


def _verdict(path: Path) -> str:
    """The pre-filter's verdict on a file, with the project index a run would give it."""
    project = new_project_index(None).resolver(str(path))
    return prefilter_verdict(path.read_bytes(), DEFAULT.selected, lambda: project)


def test_a_notebook_is_an_entry_point_whatever_its_code_holds(tmp_path: Path) -> None:
    """A notebook's cells run in order: the screen never asks its code for an entry point,
    though the code holds the words of one (`.fit(` in a function)."""
    cells = [["import tensorflow as tf\n", "x = tf.ones([1])"], ["def train(m):\n    m.fit(x)"]]
    path = write_notebook(tmp_path / "n.ipynb", cells)
    [finding] = json.loads(run_cli("--no-cache", "--output-format", "json", str(path)).stdout)
    assert (finding["code"], finding["cell"]) == ("TFM205", 1)


@pytest.mark.parametrize(
    "raw",
    [
        # `+AAo-` is a line break in UTF-7: CPython's rows are not the bytes' lines
        b's = """a+AAo-b"""\nif (__name__ == "__main__"\n): tf.test.main()\n\n',
        # `+AGc-lobal` is `global`
        b"from absl import app\ndef setup():\n    +AGc-lobal run\n    run = app.run\n"
        b"def main(argv):\n    pass\nrun(main)\n",
    ],
)
def test_the_screen_reads_the_text_as_python_decodes_it(raw: bytes) -> None:
    """A coding declaration can make the bytes' lines and words differ from the text's."""
    source = b"# coding: utf-7\n" + _STARTS.encode() + raw
    result, _ = check_bytes("t.py", source, DEFAULT, "check")
    assert [finding.code for finding in result.findings] == ["TFM205"]


def test_the_screen_follows_each_alias_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Eight levels of eight names, each an alias of every name of the next level: what each
    name may be spelled as is worked out once, not once per path to it (8 ** 8 paths)."""
    lines = [
        f"n{level}_{i} = n{level + 1}_{j}" for level in range(8) for i in range(8) for j in range(8)
    ]
    source = _STARTS + "\n".join(lines) + "\nran = n0_0(print)  # __main__\n"
    looked_up = []
    name_of = entry_screen._Spellings._name
    monkeypatch.setattr(
        entry_screen._Spellings,
        "_name",
        lambda self, *key: looked_up.append(key) or name_of(self, *key),
    )
    assert not code_may_have_findings(source.encode(), DEFAULT.selected)
    assert len(looked_up) == len(set(looked_up)) <= 9 * 9 * 8


_GUARD = 'if __name__ == "__main__":\n    print(x)\n'


@pytest.mark.parametrize(
    "source",
    [
        # a `tf` that is not TensorFlow's where TF1 is spelled: a parameter, a loop variable, a
        # class attribute, a local, another import, a deleted name
        _STARTS + "def f(tf):\n    tf.disable_eager_execution()\n",
        _STARTS + "def f(tf):\n    return tf.placeholder\n",
        _STARTS + "y = [tf.log for tf in []]\n",
        _STARTS + "class A:\n    tf = None\n    y = tf.logging\n",
        _STARTS + "def f():\n    tf = None\n    return tf.log\n",
        _STARTS + "import numpy as tf\ntf.disable_eager_execution()\n",
        _STARTS + "del tf\ndef f():\n    tf.disable_eager_execution()\n",
        # no API of TensorFlow's that turns TF2 off
        _STARTS + "def f():\n    tf.random.disable_v2_behavior()\n",
        # compat.v1 beside a plain TensorFlow that is imported under `try`, `if`, or `from`
        "import tensorflow.compat.v1 as tf1\ntry:\n    import tensorflow as tf\n"
        "except ImportError:\n    pass\nx = tf.ones([1])\n",
        "import tensorflow.compat.v1 as tf1\nif True:\n    import tensorflow as tf\n"
        "x = tf.ones([1])\n",
        "from tensorflow.compat import v2 as tf\nimport tensorflow.compat.v1 as tf1\n"
        "x = tf.ones([1])\n",
    ],
)
def test_the_screen_calls_code_tf1_only_where_the_rule_does(source: str) -> None:
    """The rule reads TF1 code from resolved names: the screen must never call a program TF1
    that the rule does not."""
    assert codes(source + _GUARD) == ["TFM205"]


# -- TensorFlow imported inside a function ---------------------------------------------------
@pytest.mark.parametrize(
    "source",
    [
        # a command that imports TensorFlow only where it needs it
        "import argparse\n\n\ndef main():\n    import tensorflow as tf\n\n"
        "    print(tf.ones([1]))\n\n\nif __name__ == '__main__':\n    main()\n",
        # a Celery task that does
        "from celery import Celery\n\napp = Celery('t')\n\n\n@app.task\ndef t():\n"
        "    from tensorflow import keras\n\n    return keras.models.load_model('m.keras')\n",
    ],
)
def test_tensorflow_imported_inside_a_function_that_starts_it(source: str) -> None:
    """Reported at that import, and fixed with the growth variable before the module's first
    import: the loop would have to go inside the function."""
    [finding] = lint_text("t.py", source, DEFAULT)
    assert finding.code == "TFM205"
    assert finding.message.startswith("This program imports TensorFlow inside a function")
    assert (
        source.splitlines()[finding.location.row - 1]
        .lstrip()
        .startswith(("import tensorflow", "from tensorflow"))
    )
    result = fixed(source)
    assert result.startswith(
        'import os\n\nos.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")\n'
    )
    assert result.endswith(source)
    assert codes(result) == []


@pytest.mark.parametrize(
    ("head", "body"),
    [
        # a diagnostics command: a docstring, then module state, every import in a function
        ('"""Prints what is installed."""\n\n', "VERBOSE = False\n\n\n"),
        # nothing but definitions and the guard
        ("", ""),
    ],
)
def test_a_module_that_imports_nothing_at_its_top_gets_the_variable_first(
    head: str, body: str
) -> None:
    """With no import in the module body, the growth variable goes before its first
    statement of code, after the docstring."""
    source = (
        head + body + "def main():\n    import tensorflow as tf\n\n    print(tf.ones([1]))\n\n\n"
        "if __name__ == '__main__':\n    main()\n"
    )
    setting = 'import os\n\nos.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")\n\n'
    [finding] = lint_text("t.py", source, DEFAULT)
    assert finding.code == "TFM205" and finding.fix is not None
    result = fixed(source)
    assert result == head + setting + ("" if body else "\n") + source[len(head) :]
    assert codes(result) == []


@pytest.mark.parametrize(
    "source",
    [
        # set up after the import, before the first op
        "def main():\n    import tensorflow as tf\n\n"
        "    for g in tf.config.list_physical_devices('GPU'):\n"
        "        tf.config.experimental.set_memory_growth(g, True)\n"
        "    print(tf.ones([1]))\n\n\nif __name__ == '__main__':\n    main()\n",
        # a library's helper: no entry point runs it
        "def total(values):\n    import tensorflow as tf\n\n    return tf.reduce_sum(values)\n",
        # imported, never started
        "def main():\n    import tensorflow as tf\n\n    print(tf.__version__)\n\n\n"
        "if __name__ == '__main__':\n    main()\n",
    ],
)
def test_no_finding_for_a_local_import_that_is_set_up_or_never_starts_it(source: str) -> None:
    assert codes(source) == []


SKLEARN_BESIDE_KERAS = """\
from sklearn.neighbors import KNeighborsClassifier
from tensorflow import keras


def create_model():
    classifier = KNeighborsClassifier(n_neighbors=1)
    classifier.fit(x_train, y_train)
    return classifier


def load_model():
    return keras.models.load_model("model.h5")


if __name__ == "__main__":
    {main}
"""


@pytest.mark.parametrize(
    ("main", "found"),
    [
        ("model = create_model()\n    print(model.predict(x_test))", False),
        ("KNeighborsClassifier().fit(x, y)", False),
        ("model = load_model()\n    print(model.predict(x_test))", True),
        # a name bound to either: it may be Keras's
        ("model = create_model() if fast else load_model()\n    model.predict(x)", True),
    ],
)
def test_a_model_of_scikit_learn_trains_no_tensorflow(main: str, found: bool) -> None:
    """`fit` and `predict` are scikit-learn's too: on a model made by its classes (directly, or
    returned by a function of the module), they start no TensorFlow, whatever else the module
    imports."""
    source = SKLEARN_BESIDE_KERAS.format(main=main)
    assert codes(source) == (["TFM205"] if found else [])


# -- served programs --------------------------------------------------------------------------
FLASK_APP = """\
import tensorflow as tf
from flask import Flask

app = Flask(__name__)


@app.route("/")
def total():
    return str(float(tf.reduce_sum(tf.ones([3]))))
"""
GROWTH_FIRST = 'import os\n\nos.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")\nimport '
GUARD_ONLY = """

if __name__ == "__main__":
    for gpu in tf.config.list_physical_devices("GPU"):
        tf.config.experimental.set_memory_growth(gpu, True)
    app.run()
"""


@pytest.mark.parametrize(
    "source",
    [
        FLASK_APP,
        # a FastAPI router's handler, an async one, in a module that makes no app
        "import tensorflow as tf\nfrom fastapi import APIRouter\nrouter = APIRouter()\n"
        '@router.post("/x")\nasync def x():\n    return float(tf.ones([1])[0])\n',
        # a Celery app's task, and a shared task
        "import tensorflow as tf\nfrom celery import Celery\ncelery = Celery('t')\n"
        "@celery.task(bind=True)\ndef t(self):\n    tf.ones([1])\n",
        "import tensorflow as tf\nfrom celery import shared_task\n"
        "@shared_task\ndef t():\n    tf.ones([1])\n",
        # a model loaded as the app is imported
        "import tensorflow as tf\nimport fastapi\napp = fastapi.FastAPI()\n"
        "model = tf.keras.models.load_model('m.keras')\n",
        # an RQ job
        "import tensorflow as tf\nfrom rq.decorators import job\n"
        "@job('default')\ndef t():\n    tf.ones([1])\n",
        # a Ray Serve deployment: a class that each replica builds, and a function
        "import tensorflow as tf\nfrom ray import serve\n@serve.deployment(num_replicas=2)\n"
        "class C:\n    def __init__(self):\n        self.model = tf.keras.models.load_model('m')\n"
        "    async def __call__(self, request):\n        return self.model(request)\n"
        "app = C.bind()\n",
        "import ray.serve\nimport tensorflow as tf\n@ray.serve.deployment\n"
        "def f(request):\n    return float(tf.ones([1])[0])\n",
        # a BentoML service, and a service of BentoML 1.0 with its API functions
        "import bentoml\nimport tensorflow as tf\n@bentoml.service(resources={'gpu': 1})\n"
        "class S:\n    @bentoml.api\n    def total(self, n: int) -> float:\n"
        "        return float(tf.reduce_sum(tf.ones([n])))\n",
        "import bentoml\nimport tensorflow as tf\nsvc = bentoml.Service('s')\n"
        "@svc.api(input=None, output=None)\ndef total(n):\n    return float(tf.ones([n])[0])\n",
    ],
)
def test_an_app_that_a_server_runs_is_a_program_of_each_worker(source: str) -> None:
    [finding] = lint_text("t.py", source, DEFAULT)
    assert finding.code == "TFM205"
    assert "starts a runtime of its own" in finding.message
    result = fixed(source)
    assert result.startswith(GROWTH_FIRST)
    assert codes(result) == []


DJANGO_VIEWS = """\
import tensorflow as tf
from django.http import JsonResponse

model = tf.keras.models.load_model("m.keras")


def predict(request):
    return JsonResponse({"y": float(model(tf.ones([1, 3]))[0, 0])})
"""
DRF_VIEW = """\
import tensorflow as tf
from rest_framework.views import APIView


class Predict(APIView):
    def post(self, request):
        return float(tf.reduce_sum(tf.ones([3])))
"""


@pytest.mark.parametrize(
    ("filename", "source", "found"),
    [
        ("app/views.py", DJANGO_VIEWS, True),
        ("app/views/predict.py", DJANGO_VIEWS, True),
        ("app/views.py", DRF_VIEW, True),  # a class-based view: Django calls its methods
        ("app/helpers.py", DJANGO_VIEWS, False),  # a module of the app's, no views
        ("app/views.py", DJANGO_VIEWS.replace("django.http", "json"), False),  # no Django
        ("app/tests/test_views.py", DJANGO_VIEWS, False),  # pytest imports it
    ],
)
def test_django_views_are_a_program_of_each_worker(filename: str, source: str, found: bool) -> None:
    """Django runs a project's views (named by `urls.py`) in each worker process of the server:
    a views module that imports Django is a served program, its functions and classes the
    handlers."""
    findings = lint_text(filename, source, DEFAULT)
    assert [f.code for f in findings] == (["TFM205"] if found else [])
    if found:
        assert "served by Django" in findings[0].message
        result = fixed(source, filename=filename)
        assert result.startswith(GROWTH_FIRST) and codes(result, filename) == []


DJANGO_SETTINGS = """\
import os

BASE_DIR = os.path.dirname(os.path.abspath(__file__))
INSTALLED_APPS = ["django.contrib.admin", "deploy"]

from mobilenet.predict import load_model
model = load_model()
"""


def test_a_model_loaded_by_djangos_settings_is_each_workers(tmp_path: Path) -> None:
    """Each worker imports the settings module (DJANGO_SETTINGS_MODULE) as it starts: a model
    it loads through a project module is loaded in every worker. Its fix goes before that
    import."""
    files = {
        "site/settings.py": DJANGO_SETTINGS,
        "site/__init__.py": "",
        "mobilenet/__init__.py": "",
        "mobilenet/predict.py": "from tensorflow.keras.models import model_from_json\n\n\n"
        "def load_model():\n    with open('m.json') as f:\n        model = model_from_json(f.read())\n"
        "    model.load_weights('m.h5')\n    return model\n",
        # settings that load nothing, and a module called settings that is no Django's
        "other/settings.py": "INSTALLED_APPS = ['django.contrib.admin']\nDEBUG = True\n",
        "tools/settings.py": "import tensorflow as tf\nLIMIT = tf.constant(3)\n",
    }
    (tmp_path / "project").mkdir()
    root = _project(tmp_path / "project", files)
    done = run_cli("--no-cache", "--output-format", "json", str(root))
    [finding] = json.loads(done.stdout)
    assert Path(finding["filename"]).relative_to(root).as_posix() == "site/settings.py"
    assert "served by Django" in finding["message"] and "`model_from_json()`" in finding["message"]
    assert run_cli("--no-cache", "--fix", str(root)).returncode == 0
    fixed_settings = (root / "site" / "settings.py").read_text()
    assert 'os.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")\nfrom mobilenet' in (
        fixed_settings
    )


def test_a_setting_under_the_guard_never_runs_where_a_server_imports_the_app() -> None:
    [finding] = lint_text("t.py", FLASK_APP + GUARD_ONLY, DEFAULT)
    assert finding.code == "TFM205"
    assert 'the setting under `if __name__ == "__main__":` never runs there' in finding.message
    assert codes(fixed(FLASK_APP + GUARD_ONLY)) == []
    # set up at the app's top, it holds in every worker
    top = FLASK_APP.replace(
        "app = Flask", 'tf.config.set_visible_devices([], "GPU")\napp = Flask', 1
    )
    assert codes(top) == []


@pytest.mark.parametrize(
    "source",
    [
        # Flask imported, no app or handler made: a helper of one
        "import tensorflow as tf\nfrom flask import jsonify\ndef reply(x):\n    return jsonify(float(tf.ones([1])[0]))\n",
        # `route` on an object that is no app
        "import tensorflow as tf\nimport flask\nclass R:\n    def route(self, p):\n        return lambda f: f\n"
        "r = R()\n@r.route('/')\ndef v():\n    tf.ones([1])\n",
        # a class decorated by what makes no deployment
        "import dataclasses\nimport tensorflow as tf\n@dataclasses.dataclass\nclass C:\n"
        "    def __init__(self):\n        tf.ones([1])\n",
        # Ray used for tasks of its own, with no Serve deployment
        "import ray\nimport tensorflow as tf\n@ray.remote\ndef f():\n    tf.ones([1])\n",
    ],
)
def test_what_serves_nothing(source: str) -> None:
    assert "TFM205" not in codes(source)


def test_a_streamlit_script_is_a_script_and_its_helpers_are_not(tmp_path: Path) -> None:
    """`streamlit run dash.py` runs it from its top, as `__main__`: a script with no guard. A
    module of a package that imports Streamlit for its helpers is a library; so is a test
    module that makes a served app, which pytest imports."""
    dash = "import streamlit as st\nimport tensorflow as tf\nst.write(float(tf.ones([1])[0]))\n"
    helper = (
        "import streamlit as st\nimport tensorflow as tf\nLABELS = tf.constant([1])\n\n\n"
        "@st.cache_resource\ndef load():\n    return tf.keras.models.load_model('m.keras')\n"
    )
    served_test = FLASK_APP + "\n\ndef test_total():\n    assert app.test_client().get('/')\n"
    files = {
        "dash.py": dash,
        "pages/1_more.py": dash,
        "pkg/__init__.py": "",
        "pkg/ui.py": helper,
        "tests/test_api.py": served_test,
        "tests/conftest.py": FLASK_APP,
    }
    (tmp_path / "project").mkdir()
    root = _project(tmp_path / "project", files)
    assert _found(root) == [("dash.py", "TFM205"), ("pages/1_more.py", "TFM205")]


def test_a_task_of_an_app_that_a_project_module_makes(tmp_path: Path) -> None:
    """`@celery.task` on the app `worker.py` makes: each process of the worker's pool runs it."""
    files = {
        "app/__init__.py": "",
        "app/worker.py": "from celery import Celery\ncelery = Celery('app')\n",
        "app/tasks.py": "import tensorflow as tf\nfrom .worker import celery\n\n\n"
        "@celery.task\ndef total(n):\n    return float(tf.reduce_sum(tf.ones([n])))\n",
        # the same decorator on what a project module makes of something else
        "app/other.py": "import functools\ncache = functools.lru_cache\n",
        "app/cached.py": "import tensorflow as tf\nfrom .other import cache\n\n\n"
        "@cache.task\ndef total(n):\n    return float(tf.reduce_sum(tf.ones([n])))\n",
    }
    (tmp_path / "project").mkdir()
    root = _project(tmp_path / "project", files)
    done = run_cli("--no-cache", "--output-format", "json", str(root))
    [finding] = json.loads(done.stdout)
    assert Path(finding["filename"]).name == "tasks.py"
    assert "served by Celery, each process of a worker's pool" in finding["message"]


def test_a_folder_without_init_inside_a_package_is_a_namespace_package(tmp_path: Path) -> None:
    """`from src.human import play`, where `src/` is a package and `src/human/` has no
    `__init__.py`: Python imports it as a namespace package, so the walk follows it, and the
    finding names the import the program reaches the start through. A top-level folder of the
    same kind stays no module of the project's: an installed package of that name would win."""
    files = {
        "src/__init__.py": "",
        "src/utils/__init__.py": "",
        "src/utils/log.py": "import logging\n\n\ndef setup():\n    logging.basicConfig()\n",
        "src/agent/__init__.py": "",
        "src/agent/model.py": "import tensorflow as tf\n\n\nclass Model:\n"
        "    def __init__(self):\n        self.net = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n",
        "src/human/play.py": "from src.agent.model import Model\n\n\ndef start():\n"
        "    return Model()\n",
        "play_games.py": "from src.utils.log import setup\nfrom src.human import play\n\n"
        'if __name__ == "__main__":\n    setup()\n    play.start()\n',
    }
    files["data/loader.py"] = "X = 1\n"  # a top-level folder with no __init__.py
    (tmp_path / "project").mkdir()
    root = _project(tmp_path / "project", files)
    done = run_cli("--no-cache", "--output-format", "json", str(root))
    [finding] = json.loads(done.stdout)
    assert (finding["code"], finding["location"]["row"]) == ("TFM205", 2)
    assert "through `src.human.play`" in finding["message"]
    resolver = new_project_index(None).resolver(str(root / "play_games.py"))
    assert not resolver.missing_from_project("src.human")
    assert resolver.module("src.human.play") == str(root / "src" / "human" / "play.py")
    assert resolver.module("data") is None and resolver.module("data.loader") is not None


# TF1-era Keras in a project module: `tf.to_float` makes it TF1 code, which no TF2 op starts.
TF1_KERAS_DETECTOR = """\
    import tensorflow as tf
    from keras.layers import Dense, Input
    from keras.models import Model


    class Detector:
        def __init__(self, size):
            image = Input(shape=(size,))
            self.model = Model(image, Dense(4)(image))

        def loss(self, y_true, y_pred):
            return tf.reduce_sum(tf.to_float(y_true > 0) * y_pred)

        def train(self, batches):
            self.model.compile(loss=self.loss, optimizer="adam")
            self.model.fit_generator(batches, steps_per_epoch=10)


    def build(size):
        image = Input(shape=(size,))
        return Model(image, Dense(tf.to_int32(4))(image))
"""
TF1_KERAS_TRAIN = (
    '"""Trains."""\nimport os\n\nfrom frontend import Detector\n\n'
    'os.environ["CUDA_VISIBLE_DEVICES"] = "0"\n\n\ndef main():\n'
    "    Detector(8).train(None)\n\n\n" + 'if __name__ == "__main__":\n    main()\n'
)


def test_tf1_era_keras_in_a_project_module_makes_its_own_session(tmp_path: Path) -> None:
    """An entry point that never names TensorFlow runs TF1-era Keras code of a project module:
    Keras makes its own session there (TFM212), reported at the import of that module and fixed
    with the growth variable before it. A model the module only builds makes a session once the
    entry loads its weights or runs a method only Keras has; one it only builds, none."""
    guard = 'if __name__ == "__main__":\n    main()\n'
    root = _project(
        tmp_path,
        {
            "frontend.py": TF1_KERAS_DETECTOR,
            "train.py": TF1_KERAS_TRAIN,
            "infer.py": "from frontend import build\n\n\ndef main():\n    model = build(8)\n"
            "    model.load_weights('w.h5')\n\n\n" + guard,
            "summary.py": "from frontend import build\n\n\ndef main():\n"
            "    build(8).summary()\n\n\n" + guard,
            "library.py": "from frontend import Detector\n\n\ndef make():\n"
            "    return Detector(8)\n",
        },
    )
    done = run_cli("--no-cache", "--output-format", "json", str(root))
    found = {Path(f["filename"]).name: f for f in json.loads(done.stdout)}
    assert sorted((name, f["code"]) for name, f in found.items()) == [
        ("infer.py", "TFM212"),
        ("train.py", "TFM212"),
    ]
    assert found["train.py"]["location"]["row"] == 4  # `from frontend import Detector`
    assert found["train.py"]["message"].startswith(
        "Keras makes its own session at `self.model.fit_generator()` (`frontend.py`, line 16)"
    )
    assert "`model.load_weights()` (line 6)" in found["infer.py"]["message"]
    assert run_cli("--no-cache", "--fix", str(root)).returncode == 0
    assert (root / "train.py").read_text() == TF1_KERAS_TRAIN.replace(
        "import os\n\n", "import os\n\n" + VARIABLE_FIRST
    )
    assert (root / "frontend.py").read_text() == textwrap.dedent(TF1_KERAS_DETECTOR)
    assert _found(root) == []


@pytest.mark.parametrize(
    ("module", "entry"),
    [
        # the module hands Keras a session of its own: the session rules judge its config
        (
            TF1_KERAS_DETECTOR.replace(
                "    class Detector:\n",
                "    from keras import backend as K\n\n"
                "    K.set_session(tf.Session(config=tf.ConfigProto()))\n\n\n"
                "    class Detector:\n",
            ),
            TF1_KERAS_TRAIN,
        ),
        # a project helper that may make the session Keras uses
        (
            TF1_KERAS_DETECTOR,
            TF1_KERAS_TRAIN.replace(
                "    Detector(8)", "    gpu.session()\n    Detector(8)"
            ).replace("from frontend", "import gpu\nfrom frontend"),
        ),
        # the growth variable set first, in the entry
        (
            TF1_KERAS_DETECTOR,
            TF1_KERAS_TRAIN.replace(
                'os.environ["CUDA_VISIBLE_DEVICES"] = "0"',
                'os.environ["TF_FORCE_GPU_ALLOW_GROWTH"] = "true"',
            ),
        ),
        # TF1 code, but no Keras: its graph runs in a session the session rules check
        (
            "import tensorflow as tf\n\n\nclass Detector:\n    def __init__(self, size):\n"
            "        self.x = tf.placeholder(tf.float32, [size])\n\n"
            "    def train(self, batches):\n        return tf.to_float(self.x)\n",
            TF1_KERAS_TRAIN,
        ),
    ],
)
def test_no_tfm212_through_the_project_where_a_session_or_setting_comes_first(
    tmp_path: Path, module: str, entry: str
) -> None:
    gpu = "import tensorflow as tf\n\n\ndef session():\n    return tf.Session()\n"
    root = _project(tmp_path, {"frontend.py": module, "train.py": entry, "gpu.py": gpu})
    assert ("train.py", "TFM212") not in _found(root)


def test_a_keras_model_from_a_star_import_trained_with_a_method_only_keras_has(
    tmp_path: Path,
) -> None:
    """`from model import *`, then `net().fit_generator(...)`: the model is Keras's, made in a
    project module whose names the script takes whole; `fit` alone could be scikit-learn's."""
    # which of the star imports binds `Input` is Keras's to say: the walk cannot tell
    model = (
        "from keras.models import *\nfrom keras.layers import *\nfrom keras.optimizers import *\n"
        "\n\ndef net():\n    x = Input((2,))\n    return Model(x, Dense(1)(x))\n"
    )
    main = "from model import *\n\nm = net()\nm.fit_generator(batches(), steps_per_epoch=1)\n"
    (tmp_path / "project").mkdir()
    root = _project(tmp_path / "project", {"model.py": model, "main.py": main})
    done = run_cli("--no-cache", "--output-format", "json", str(root))
    [finding] = json.loads(done.stdout)
    assert (Path(finding["filename"]).name, finding["code"]) == ("main.py", "TFM205")
    assert "`m.fit_generator()` (line 4), through `model`" in finding["message"]
    assert run_cli("--no-cache", "--fix", str(root)).returncode == 0
    assert (root / "main.py").read_text() == ("import os\n\n" + VARIABLE_FIRST + main)
    (root / "main.py").write_text(
        main.replace("fit_generator(batches(), steps_per_epoch=1)", "fit(x)")
    )
    assert json.loads(run_cli("--no-cache", "--output-format", "json", str(root)).stdout) == []


def test_settings_of_the_environment_go_at_the_head_of_the_import_block(tmp_path: Path) -> None:
    """JAX's allocator and TensorFlow's growth, both fixed: each variable goes right after
    the module's `import os`, one after the other, ahead of every import that may start
    either framework, and what follows stays one sorted block (ruff's I001 sees nothing)."""
    train = (
        '"""Trains with JAX on data that TensorFlow reads."""\n\n'
        "import functools\nimport os\n\nimport data\nimport jax\n\n\ndef main():\n"
        "    print(jax.devices(), data.load(), functools, os)\n\n\n"
        'if __name__ == "__main__":\n    main()\n'
    )
    files = {
        "data.py": "import tensorflow_datasets as tfds\n\n\ndef load():\n"
        "    return tfds.load('mnist', split='train')\n",
        "train.py": train,
    }
    (tmp_path / "project").mkdir()
    root = _project(tmp_path / "project", files)
    assert _found(root) == [("train.py", "TFM207"), ("train.py", "TFM208")]
    assert run_cli("--no-cache", "--fix", str(root)).returncode == 0
    assert (root / "train.py").read_text() == train.replace(
        "import os\n\n",
        "import os\n\n"
        'os.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")\n'
        'os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")\n',
    )
    ruff = [sys.executable, "-m", "ruff", "check", "--isolated", "--select", "E4,E7,E9,F,I"]
    assert subprocess.run([*ruff, str(root / "train.py")], capture_output=True).returncode == 0


# -- settings behind a flag that is off by default ------------------------------------------
GROWTH_UNDER = (
    "    for gpu in tf.config.list_physical_devices('GPU'):\n"
    "        tf.config.experimental.set_memory_growth(gpu, True)\n"
)


@pytest.mark.parametrize(
    ("source", "flag", "turned_on"),
    [
        # absl, also as TensorFlow passes it on
        (
            "from absl import app, flags\nimport tensorflow as tf\n"
            "flags.DEFINE_bool('growth', False, 'h')\nFLAGS = flags.FLAGS\ndef main(argv):\n"
            "    if FLAGS.growth:\n"
            + GROWTH_UNDER.replace("    ", "        ", 2)
            + "    tf.ones([1])\n"
            "app.run(main)\n",
            "--growth",
            "flags.DEFINE_bool('growth', True, 'h')",
        ),
        (
            "import tensorflow as tf\ntf.compat.v1.flags.DEFINE_boolean('growth', default=False, help='h')\n"
            "F = tf.compat.v1.flags.FLAGS\nif F.growth:\n" + GROWTH_UNDER + "print(tf.ones([1]))\n",
            "--growth",
            "DEFINE_boolean('growth', default=True, help='h')",
        ),
        # argparse: store_true, or a default of False
        (
            "import argparse\nimport tensorflow as tf\np = argparse.ArgumentParser()\n"
            "p.add_argument('--allow-growth', action='store_true')\nargs = p.parse_args()\n"
            "if args.allow_growth:\n" + GROWTH_UNDER + "print(tf.ones([1]))\n",
            "--allow-growth",
            "p.add_argument('--allow-growth', action='store_true', default=True)",
        ),
        (
            "import argparse\nimport tensorflow as tf\np = argparse.ArgumentParser()\n"
            "p.add_argument('--mem', dest='grow', type=bool, default=False)\nargs = p.parse_args()\n"
            "if args.grow:\n" + GROWTH_UNDER + "print(tf.ones([1]))\n",
            "--mem",
            "default=True)",
        ),
        # a click command's flag
        (
            "import click\nimport tensorflow as tf\n@click.command()\n"
            "@click.option('--allow-growth', is_flag=True, default=False)\ndef train(allow_growth):\n"
            "    if allow_growth:\n"
            + GROWTH_UNDER.replace("    ", "        ", 2)
            + "    tf.ones([1])\n",
            "--allow-growth",
            "is_flag=True, default=True)",
        ),
    ],
)
def test_growth_that_runs_only_with_a_flag_off_by_default(
    source: str, flag: str, turned_on: str
) -> None:
    [finding] = lint_text("t.py", source, DEFAULT)
    assert finding.code == "TFM205"
    assert f"by default: GPU memory growth runs only with `{flag}`, which is off" in finding.message
    result = fixed(source)
    assert turned_on in result and result.count("\n") == source.count("\n")
    assert codes(result) == []


@pytest.mark.parametrize(
    "source",
    [
        # the flag is used elsewhere too: turning it on might change more than memory
        "import argparse\nimport tensorflow as tf\np = argparse.ArgumentParser()\n"
        "p.add_argument('--fast', action='store_true')\nargs = p.parse_args()\n"
        "if args.fast:\n" + GROWTH_UNDER + "print(tf.ones([1]), args.fast)\n",
        # a typer command's parameter: the function's default, whoever calls it
        "import tensorflow as tf\nimport typer\napp = typer.Typer()\n@app.command()\n"
        "def train(allow_growth: bool = False):\n    if allow_growth:\n"
        + GROWTH_UNDER.replace("    ", "        ", 2)
        + "    tf.ones([1])\n",
    ],
)
def test_a_flag_off_by_default_with_no_sure_fix(source: str) -> None:
    [finding] = lint_text("t.py", source, DEFAULT)
    assert "runs only with" in finding.message and finding.fix is None


@pytest.mark.parametrize(
    "source",
    [
        # on by default, or a default the module does not spell
        "import argparse\nimport tensorflow as tf\np = argparse.ArgumentParser()\n"
        "p.add_argument('--allow-growth', type=bool, default=True)\nargs = p.parse_args()\n"
        "if args.allow_growth:\n" + GROWTH_UNDER + "print(tf.ones([1]))\n",
        "from absl import app, flags\nimport tensorflow as tf\n"
        "flags.DEFINE_bool('growth', DEFAULT, 'h')\nFLAGS = flags.FLAGS\n"
        "if FLAGS.growth:\n" + GROWTH_UNDER + "print(tf.ones([1]))\n",
        # the flag's `else` branch sets growth up
        "import argparse\nimport tensorflow as tf\np = argparse.ArgumentParser()\n"
        "p.add_argument('--no-growth', action='store_true')\nargs = p.parse_args()\n"
        "if args.no_growth:\n    pass\nelse:\n" + GROWTH_UNDER + "print(tf.ones([1]))\n",
    ],
)
def test_a_flag_on_by_default_is_configuration(source: str) -> None:
    assert "TFM205" not in codes(source)


@pytest.mark.parametrize(
    ("text", "declares"),
    [
        ("def f():\n    global go\n", True),
        ("def f():\r\tglobal go\r", True),
        ("def f(): global go\n", True),
        ("def f():\n    x = 1; \fglobal\\\n go\n", True),
        ("global go\n", True),
        ("x = tf.compat.v1.global_variables()\n", False),
        ("x = 'a global go'\n", False),
        ("myglobal = 1\n", False),
        ("def f():\n    x.global go\n", False),
    ],
)
def test_the_screen_looks_for_global_statements_where_a_statement_may_start(
    text: str, declares: bool
) -> None:
    """Where one may be, the screen reads every binding in the module, not only those that run
    at import (see `entry_screen.may_be_an_entry`)."""
    assert entry_screen._may_declare_global(text) is declares
