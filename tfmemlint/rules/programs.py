"""The spellings that make a module a program rather than a library: how it runs its main
function, its commands, its tests. Shared by the families that look where a program starts (the
pre-filter's screens too), and cheap to import: no libcst."""

from __future__ import annotations

# How a test module's `__main__` guard runs its tests, as spelled (`test` is TensorFlow's
# `from tensorflow.python.platform import test`): such a module is not a program.
TEST_RUNNERS = frozenset(
    {
        "tf.test.main",
        "tf.compat.v1.test.main",
        "tf.compat.v2.test.main",
        "test.main",
        "googletest.main",
        "absltest.main",
        "unittest.main",
    }
)
# Calls that run a program's main function: `absl.app.run(main)`, `fire.Fire(main)`, ...
RUNNERS = frozenset(
    {
        "absl.app.run",
        "fire.Fire",
        "typer.run",
        "tyro.cli",  # tyro.cli(main): main's parameters are the command line
        "jsonargparse.CLI",
        "jsonargparse.auto_cli",
    }
)
# The runners that make each public method of a class they are given a command; tyro and
# jsonargparse build a class given them (a config) and run none of its methods.
METHOD_RUNNERS = frozenset({"fire.Fire"})
# `functools.partial(app.run, main)()`, `app.run(functools.partial(main, config))`.
PARTIAL = "functools.partial"
# A function passed by reference to a call the walk cannot enter runs when that call wants
# (a search's objective, a tuner's `build_model`, a thread's target). The standard library
# keeps one for later or for a signal that may never come (`atexit`, `signal`), except in the
# modules that run it: these.
STDLIB_THAT_RUNS_FUNCTIONS = frozenset({"threading", "concurrent", "multiprocessing"})
TF_RUNNER = "app.run"  # tf.compat.v1.app.run(main), or with no main: the module's `main`
# What a click or typer command's decorator is spelled from, and a click group's or typer
# app's own decorators (`@cli.command()`).
CLI_DECORATORS = ("click.", "typer.")
CLI_METHODS = frozenset({"command", "group", "callback"})
# Keras's training methods: whatever the receiver, in a TF2 program they run the model.
TRAINING_METHODS = frozenset(
    {
        "fit",
        "evaluate",
        "predict",
        "fit_generator",
        "evaluate_generator",
        "predict_generator",
        "train_on_batch",
        "test_on_batch",
        "predict_on_batch",
    }
)

# The frameworks a program may compute with beside TensorFlow, by the top-level packages it
# imports: JAX's (each imports jax) and PyTorch's.
JAX_MODULES = frozenset(
    {"jax", "flax", "haiku", "optax", "equinox", "objax", "orbax", "chex", "jraph"}
)
TORCH_MODULES = frozenset({"torch", "torchvision", "torchaudio", "lightning", "pytorch_lightning"})
