"""TFM205: a TF2 program that starts TensorFlow's runtime with GPU memory unconfigured; TFM207:
the same where TensorFlow is a guest in a JAX or PyTorch program. They look where a program
starts (its entry point) and follow what runs from there, in order.

The logic lives beside these pages in `check.py`; the frameworks it trusts, in `frameworks.py`;
the libraries that start TensorFlow, in `tfmemlint/rules/starters.py`.
"""

import re

from tfmemlint.model import Rule, RuleDoc
from tfmemlint.rules import starters
from tfmemlint.rules.family import (
    PROGRAM,
    RECOVERED_FIX,
    SEE_PROGRAMS,
    TENSORFLOW_MODULES,
    RuleFamily,
)
from tfmemlint.rules.programs import (
    CLI_DECORATORS,
    DJANGO_PACKAGES,
    DJANGO_SETTINGS_NAME,
    PROJECT_APP_METHODS,
    ROUTERS,
    RUNNERS,
    SCRIPT_SERVERS,
    SERVED_APPS,
    SERVICE_DECORATORS,
    TASK_DECORATORS,
    TEST_RUNNERS,
    TF_RUNNER,
    TRAINING_METHODS,
)

UNCONFIGURED_PROGRAM = Rule(
    code="TFM205",
    name="unconfigured-tf2-script",
    summary="A TF2 program starts the runtime without configuring GPU memory",
    doc=RuleDoc(
        what_it_does="Finds a TF2 program (a script, a command, a notebook, a served app) that "
        "starts TensorFlow's runtime, in its own code, through the project's modules or "
        "through a library, before any GPU memory setting runs.",
        details=(
            (
                PROGRAM,
                "Finds TF2 entry points whose code starts TensorFlow's runtime before any GPU "
                "memory setting ran. An entry point is a notebook; a module with `if __name__ == "
                '"__main__":`; one that calls `absl.app.run`, `tf.compat.v1.app.run`, `fire.Fire`, '
                "`typer.run`, `tyro.cli` or jsonargparse's `CLI`, or defines a click or typer "
                "command, at module level; the module of a `[project.scripts]` (or "
                "`[project.gui-scripts]`, `[tool.poetry.scripts]`) entry of the nearest "
                "pyproject.toml; a module that uses Keras and calls `fit`, `evaluate` or `predict` "
                "at module level; a script with no guard, outside any package or in a folder of "
                "scripts (`examples/`, `tools/`), that prints at module level or names a library "
                "that starts TensorFlow, and does something there (a call whose result it does not "
                "keep, a loop). Library modules are never reported, and neither are test modules: "
                "a module whose `__main__` guard only runs its tests (`tf.test.main()`, "
                "`absltest.main()`, `unittest.main()`) is a suite that pytest imports without it. "
                "From the entry code the rule follows, in the order they run, the functions and "
                "classes of the module and of the project that it calls (a class's `__init__`, the "
                "methods of its objects, static methods), the project modules it imports (their "
                "import-time code, where it may set GPU memory up), decorators, default values and "
                "class bodies, and notebook cells in order, up to the first call that starts the "
                "runtime: an op (`tf.constant`, `tf.math.*`, ...), a Keras model, a `tf.data` "
                "dataset, `model.fit` / `evaluate` / `predict`, `tf.saved_model.load`, "
                "`list_logical_devices`. Any of these before it counts as configuration: "
                "`set_memory_growth`, a logical-device memory limit, `set_visible_devices([], "
                '\'GPU\')`, `TF_FORCE_GPU_ALLOW_GROWTH`, `CUDA_VISIBLE_DEVICES=""` or `"-1"`, or '
                "a framework known to configure the GPU (`frameworks.py` lists each with its "
                "source). A setting that runs only when a command-line flag whose default is off "
                "is passed (`if FLAGS.allow_growth:`; absl, argparse, click, typer) is missing by "
                "default, and the message names the flag. Not reported: a program that never "
                "starts the runtime (it only imports TensorFlow, or lists physical devices); "
                "TF1-style code (sessions, names only TF1 has such as `tf.placeholder`, "
                "`tf.compat.v1.disable_eager_execution()`, `import tensorflow.compat.v1 as tf`, an "
                "import from `tensorflow.contrib`, which TF2 dropped, or a call into a project "
                "function that runs such code, like a helper that makes a `tf.Session`), which the "
                "session rules cover; a TPU program; an entry module that configures GPU memory "
                "anywhere the walk could not place (TFM203 reports a setting that comes too late), "
                "or that calls into a project module that sets GPU memory up in a way the walk "
                "cannot follow. A module with no `import tensorflow` of its own is looked at when "
                "it imports Keras and Keras runs on TensorFlow, or a library that starts "
                "TensorFlow's runtime: tfds (`load`, `builder(...).as_dataset`, `as_numpy`), "
                "tensorflow_hub (`load`, `KerasLayer`), transformers' TF classes "
                "(`TFAutoModel.from_pretrained`), `tf_keras`, tensorflow_text, keras-hub, "
                "keras-nlp and keras-cv models and layers where Keras runs on TensorFlow, and "
                "keras-cv's preprocessing layers on every backend, seqio's datasets and evaluator, "
                "and the Model Garden's `run_experiment` (`tfmemlint/rules/starters.py` lists each "
                "with its source). Keras's backend is read as Keras reads it: "
                "`os.environ['KERAS_BACKEND']` set before `import keras`, a notebook's `%env "
                "KERAS_BACKEND=...` in a cell above that import, the configuration's "
                "`keras-backend`, else `tensorflow`, Keras's default, which the message then says. "
                "A program that computes with JAX or PyTorch and uses TensorFlow only around it is "
                "TFM207's. On by default since 0.2.0 (before, it was opt-in and looked only at "
                "`__main__` scripts)." + " " + SEE_PROGRAMS,
            ),
        ),
        why="TF2's eager runtime reserves nearly all of every visible GPU's memory at its first "
        "op (python/eager/context.py; tensorflow/tensorflow#8170 for the other jobs on that "
        "GPU). A program's entry point is where the setting belongs: it runs before anything "
        "else, once per process.",
        example="import tensorflow as tf\n\n\ndef main():\n    print(tf.ones([2]))\n\n\n"
        'if __name__ == "__main__":\n    main()',
        use_instead="import tensorflow as tf\n\n"
        'for gpu in tf.config.list_physical_devices("GPU"):\n'
        "    try:\n        tf.config.experimental.set_memory_growth(gpu, True)\n"
        "    except RuntimeError:\n        pass  # the runtime already started\n\n\n"
        "def main():\n    print(tf.ones([2]))\n\n\n"
        'if __name__ == "__main__":\n    main()',
        fix_safety="Behind a flag that is off by default, the fix turns the flag's default "
        "on (`DEFINE_bool(..., True, ...)`, argparse's `default=True`, click's `default=True`) "
        "where the module reads the flag nowhere else; otherwise, and for a typer "
        "parameter, there is no fix. "
        "Elsewhere the loop goes after the import block that holds the entry "
        "module's first `import tensorflow` (in a notebook, inside the cell that has it), "
        "below a blank line, so that ruff, flake8 and isort find no import after code "
        "(E402, I001). Where the module imports only parts of TensorFlow, Keras or a "
        "library, `import tensorflow as tf` comes with it, inside one `try` around the loop "
        "(when `tf` is free). The `try` keeps a runtime that something else started from "
        "crashing the program, and, where it brings the import, a machine with no "
        "TensorFlow (Keras on the torch backend in CI) too. Where the entry never imports "
        "TensorFlow and the start is in "
        'a project module, `os.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")` '
        "goes before its first project import instead, and in an app that a server imports "
        "(gunicorn, uvicorn, a Celery or RQ worker, Ray Serve, BentoML) before its first "
        "import of TensorFlow: it "
        "lists no GPU before the server forks its workers. Where the loop's place would not "
        "be sure, the same variable goes before the module's first import (after a docstring, "
        "`from __future__` and an `import os` of its own line): when the runtime may start "
        "before that place (in a module imported earlier); when the program sets "
        "`CUDA_VISIBLE_DEVICES` (or `CUDA_DEVICE_ORDER`) after it (or a project module or "
        "`%env` line does), which the loop's listing of the GPUs would make too late; when it "
        "starts processes (`multiprocessing`), which must not inherit the CUDA that listing "
        "initializes. No fix where other code comes before the first import; when the "
        "program forces `TF_FORCE_GPU_ALLOW_GROWTH=false`, which overrides growth; for "
        "TFM207's hiding of the GPUs, which has no variable of TensorFlow's alone; or under "
        "`--policy fraction=F`: TF2 has no fraction of the GPU to set, only a limit in "
        "megabytes, which a linter cannot choose for you. Where the program gives a CPU a "
        "logical-device configuration (virtual CPUs), TensorFlow passes no memory growth on "
        "to the runtime (context.py, `_compute_device_options`), so the fix is "
        '`os.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")` before the first '
        "import of TensorFlow, which the GPU allocator reads whatever the options say.",
        recovery="In a file or notebook cell that needed recovery (TFM904, TFM902), a "
        "statement set aside is not followed: a setting there counts as missing, and a call "
        "that starts the runtime there as absent. " + RECOVERED_FIX,
    ),
)

GUEST_PROGRAM = Rule(
    code="TFM207",
    name="tensorflow-guest-takes-gpu",
    summary="TensorFlow, used only around a JAX or PyTorch program, takes the GPU memory it needs",
    doc=RuleDoc(
        what_it_does="Finds a JAX or PyTorch program that uses TensorFlow only around it (data, "
        "logging, preprocessing), where TensorFlow's runtime starts with every GPU "
        "visible to it and takes the memory the program needs.",
        details=(
            (
                PROGRAM,
                "Finds programs that compute with JAX (jax, flax, haiku, optax, equinox, objax, "
                "...), with PyTorch, or with Keras on the JAX or PyTorch backend, and use "
                "TensorFlow only for data, logging or preprocessing (`tf.data`, TFDS, "
                "`tf.summary`, TFRecords), where TensorFlow's runtime starts with every GPU "
                "visible to it. The program is followed from its entry point as TFM205 follows "
                "one, and the same settings count as configured: hidden GPUs, growth on every GPU, "
                "a memory limit. A program is taken for such a guest host when its entry module "
                "imports the framework and neither builds, trains nor runs a TensorFlow model: no "
                "Keras on TensorFlow, `tf.function`, `GradientTape`, `tf.Variable`, optimizer, "
                "distribution strategy, hub, tf_keras or transformers TF model. Any of these makes "
                "it TFM205's." + " " + SEE_PROGRAMS,
            ),
        ),
        why="TensorFlow's runtime reserves nearly all of every visible GPU at its first op, "
        "and the framework that does the real work then dies with out-of-memory or "
        "`CUBLAS_STATUS_NOT_INITIALIZED` (google/flax#445, google-deepmind/acme#208, "
        'google-deepmind/dm-haiku#132; JAX\'s "GPU memory allocation" page). Memory growth '
        "still lets TensorFlow take GPU memory the program never meant it to have: JAX's and "
        "Flax's own examples hide the GPUs from TensorFlow instead.",
        example="import jax\nimport tensorflow as tf\n\n\ndef main():\n"
        "    ds = tf.data.Dataset.range(10).batch(2)\n"
        "    for batch in ds.as_numpy_iterator():\n        print(jax.numpy.sum(batch))\n\n\n"
        'if __name__ == "__main__":\n    main()',
        use_instead="import jax\nimport tensorflow as tf\n\ntry:\n"
        '    tf.config.set_visible_devices([], "GPU")\n'
        "except RuntimeError:\n    pass  # the runtime already started\n\n\n"
        "def main():\n    ds = tf.data.Dataset.range(10).batch(2)\n"
        "    for batch in ds.as_numpy_iterator():\n        print(jax.numpy.sum(batch))\n\n\n"
        'if __name__ == "__main__":\n    main()',
        fix_safety="Safe: the GPUs are hidden from TensorFlow after the entry module's import "
        "block, as TFM205's loop is placed (`import tensorflow as tf` comes with it, inside "
        "the `try`, where only a library imports TensorFlow), and the `try` keeps a runtime "
        "started elsewhere, or a missing TensorFlow where it brings the import, from "
        "crashing the program. `--guest-policy growth` (or "
        '`guest-policy = "growth"`) gives TFM205\'s growth fix instead. No fix where TFM205 '
        "has none for the same reasons.",
        recovery="As TFM205. " + RECOVERED_FIX,
    ),
)

# The first stage's view of such a guard: the module's last lines, at column 0, the one call and
# nothing after it. `entry_points.runs_tests` reads every guard this matches (and more) as tests.
TEST_GUARD = re.compile(
    rb"\nif __name__ == (['\"])__main__\1:[ \t]*\r?\n"
    rb"(?:[ \t]*(?:#[^\r\n]*)?\r?\n)*"  # blank lines and comments
    rb"[ \t]+(?:"
    + b"|".join(re.escape(runner.encode()) for runner in sorted(TEST_RUNNERS))
    + rb")\(\)\s*\Z"
)

# The words of the runners, the CLI frameworks and the training methods, from the tables the
# checker reads, so that the two cannot drift apart: a runner's module is imported by the file
# that calls it (`from absl.app import run`), or the call spells `app.run` (TensorFlow's too).
RUNNER_WORDS = (
    TF_RUNNER.encode(),
    *sorted(
        {runner.rpartition(".")[0].encode() for runner in RUNNERS}
        | {decorator.rstrip(".").encode() for decorator in CLI_DECORATORS}
    ),
    # `.fit_generator(` and `.train_on_batch(` hold `_generator(` and `_on_batch(`: fewer
    # words to search every file for, passing the same files and a few more.
    *sorted(
        {
            (f"_{method.partition('_')[2]}(" if "_" in method else f".{method}(").encode()
            for method in TRAINING_METHODS
        }
    ),
)

# A script with no guard is an entry point too (`entry_points.is_a_script`). It prints at
# module level, as almost no library does, or it names a library of `starters.py` that starts
# TensorFlow for it. (transformers is left out: most of the files that name it are PyTorch's.)
SCRIPT_WORDS = (
    b"\nprint(",
    *sorted(root.encode() for root in starters.ROOTS if root != starters.TRANSFORMERS),
)


def _words_of(decorator: str) -> set[bytes]:
    """The words a module that uses a decorator holds however it imports it: its module
    (`from rq.decorators import job`, `import bentoml`) and its last two names
    (`from ray import serve`, then `@serve.deployment`)."""
    parts = decorator.split(".")
    return {".".join(parts[:-1]).encode(), ".".join(parts[-2:]).encode()}


# A served program's marks: the package of its server, which it imports to make an app, a
# router or a task (every word is one more search of every file: the packages are fewer than
# their classes); a task decorator or a handler method, which a project module may pass on.
_SERVER_MARKS = (
    {name.split(".")[0].encode() for name in (*SERVED_APPS, *ROUTERS)}
    | {word for name in (*TASK_DECORATORS, *SERVICE_DECORATORS) for word in _words_of(name)}
    | {server.encode() for server in SCRIPT_SERVERS}
    | {f".{method}".encode() for method in PROJECT_APP_METHODS}
)
# A word that holds another (`celery.shared_task`, `celery`) finds no file the other misses.
SERVER_WORDS = tuple(
    sorted(
        word
        for word in _SERVER_MARKS
        if not any(other != word and other in word for other in _SERVER_MARKS)
    )
)
# Django's views name Django, as thousands of files of a Django project do that never reach
# TensorFlow: a word of the views of a module that names TensorFlow itself, not of a program
# through the project, which would send each of them to the project index.
DJANGO_WORDS = tuple(sorted(package.encode() for package in DJANGO_PACKAGES))
# Its settings module's mark, set at the top level (at the start of a line): Django's own
# modules name the setting too, indented or in strings, but set it in one file alone.
DJANGO_SETTINGS_WORD = b"\n" + DJANGO_SETTINGS_NAME.encode()

KERAS_SESSION = Rule(
    code="TFM212",
    name="keras-session-unconfigured",
    summary="TF1-era Keras makes its own session, with no GPU memory option",
    doc=RuleDoc(
        what_it_does="Finds a TF1-era Keras program whose Keras builds, loads or trains a model "
        "while nothing hands Keras a session: Keras then makes its own, with no GPU "
        "memory option.",
        details=(
            (
                PROGRAM,
                "Finds TF1-era Keras programs (standalone Keras 2, or `tf.keras` in graph mode: "
                "TF1 code as TFM205 tells it) whose Keras builds, loads or trains a model (`fit`, "
                "`predict`, `evaluate` and the other training methods, `load_model`, "
                "`load_weights`, `K.get_session()`, `K.eval`, `K.get_value`, `K.set_value`) while "
                "the program neither makes a session of its own nor hands Keras one "
                "(`K.set_session(...)`, `tf.keras.backend.set_session(...)`, "
                "`tf.compat.v1.keras.backend.set_session(...)`: the session rules check the "
                "session given, so one without a memory option is TFM101 or TFM102 there). Where "
                "that Keras code is in a project module the program runs, the finding is at its "
                "import. Entry points, and what counts as configuration "
                "(`TF_FORCE_GPU_ALLOW_GROWTH`, hidden GPUs), are TFM205's." + " " + SEE_PROGRAMS,
            ),
        ),
        why="On first use, Keras 2's backend makes its session with "
        "`ConfigProto(allow_soft_placement=True)` and no memory option "
        "(keras/backend/tensorflow_backend.py, `get_session`; in TensorFlow, "
        "tensorflow/python/keras/backend.py, `get_default_session_config`): the allocator "
        "reserves nearly all of every GPU. It was the most common TF1-era form of the "
        "problem (keras-team/keras#8412, and the era's `set_session(tf.Session(config=...))` "
        "boilerplate).",
        example="import keras\nimport numpy as np\nimport tensorflow as tf\n\n"
        "x = tf.placeholder(tf.float32)\nmodel = keras.Sequential([keras.layers.Dense(1, "
        "input_shape=(1,))])\nmodel.compile('sgd', 'mse')\n\n"
        'if __name__ == "__main__":\n    model.fit(np.zeros((2, 1)), np.zeros((2, 1)))',
        use_instead='import os\n\nos.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")\n'
        "import keras\nimport numpy as np\nimport tensorflow as tf\n\n"
        "x = tf.placeholder(tf.float32)\nmodel = keras.Sequential([keras.layers.Dense(1, "
        "input_shape=(1,))])\nmodel.compile('sgd', 'mse')\n\n"
        'if __name__ == "__main__":\n    model.fit(np.zeros((2, 1)), np.zeros((2, 1)))',
        fix_safety='Adds `os.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")` on the '
        "line before the module's first import of TensorFlow or Keras, or of the project's "
        "modules where the Keras code is in one (with `import os` "
        "where the module has not imported it by then): TensorFlow's GPU allocator reads it "
        "when it starts, whichever TensorFlow the program runs on, TF 2.x and the TF 1.x "
        "releases since late 2018 (older ones ignore it: the memory is then as before). "
        "`setdefault`: a value the shell gives wins. ruff accepts an `os.environ` setting "
        "between imports (E402); flake8 reports the imports below it. Under `--policy "
        "fraction=F` no fix: a fraction needs a session of your own. TFM205 offers the same "
        "fix where its program imports Keras with no word of Keras 3 (it may be Keras 2 on "
        "TensorFlow 1).",
        recovery="As TFM205. " + RECOVERED_FIX,
    ),
)

FAMILY = RuleFamily(
    rules=(UNCONFIGURED_PROGRAM, GUEST_PROGRAM, KERAS_SESSION),
    # The marks of an entry point; a notebook's JSON always has "nbformat". A file with none
    # of them can still be an entry point through pyproject.toml: the runner asks the
    # project index about those (see `prefilter.first_stage`).
    triggers=(
        b"__main__",
        *RUNNER_WORDS,
        *SCRIPT_WORDS,
        *SERVER_WORDS,
        *DJANGO_WORDS,
        DJANGO_SETTINGS_WORD,
        b"GradientTape",
        b"Dataset",
        b'"nbformat"',
    ),
    # transformers: its TF classes start TensorFlow in a file that names neither.
    modules=(*TENSORFLOW_MODULES, b"transformers", *starters.OWN_WORDS),
    checker="tfmemlint.rules.unconfigured_program.check:check",
    settled_by_fixes="tfmemlint.rules.unconfigured_program.check:settled_by_fixes",
    through_project=False,  # its fix goes after the file's own `import tensorflow`
    screen="tfmemlint.rules.unconfigured_program.screen:may_find",  # TF1 code, libraries
    inert=TEST_GUARD,
)

# The words of an entry point whose own file never names TensorFlow, which can reach it only
# through the project (`check._started_through_the_project`, and the pre-filter's "program"
# stage): not the starter libraries' names (they hold TensorFlow's module words), nor what
# comes only with TensorFlow's own names (`GradientTape`, `tf.data`'s `Dataset`), nor a
# notebook's mark (that path takes no notebook).
THROUGH_PROJECT_WORDS = tuple(
    word
    for word in FAMILY.triggers
    if word not in (b"GradientTape", b"Dataset", b'"nbformat"', *DJANGO_WORDS)
    and not any(module in word for module in FAMILY.modules)
)
