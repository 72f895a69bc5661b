"""The spellings that make a module a program rather than a library: how it runs its main
function, its commands, its tests. Shared by the families that look where a program starts (the
pre-filter's screens too), and cheap to import: no libcst."""

from __future__ import annotations

import os
import re

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
# Served programs. A server imports the module (gunicorn and uvicorn an app, a Celery worker its
# tasks) and calls its handlers, in each worker process, which starts a runtime of its own; the
# module's `__main__` guard never runs there. Each maker of an app, and of what registers
# handlers for one from another module, with the server's name as messages give it.
SERVED_APPS = {
    "flask.Flask": "Flask",
    "quart.Quart": "Quart",
    "fastapi.FastAPI": "FastAPI",
    "starlette.applications.Starlette": "Starlette",
    "sanic.Sanic": "Sanic",
    "celery.Celery": "Celery",
    "bentoml.Service": "BentoML",  # BentoML 1.0/1.1: `svc = bentoml.Service(...)`, `@svc.api`
}
ROUTERS = {"flask.Blueprint": "Flask", "fastapi.APIRouter": "FastAPI", "sanic.Blueprint": "Sanic"}
# The methods of an app or router, made by a project module and imported here, that register
# a handler here (`@bp.route(...)`, `@celery.task`): their words are rare enough for the
# pre-filter (`get` and `post` are every dict's and every HTTP client's).
PROJECT_APP_METHODS = frozenset({"route", "task"})
# Decorators that make a handler of a function with no app object in the module.
TASK_DECORATORS = {"celery.shared_task": "Celery", "rq.decorators.job": "RQ"}
# Decorators that make a deployment or service of a class (or a function), which the server
# builds in each replica or worker process: its `__init__` and its methods are the handlers.
SERVICE_DECORATORS = {"ray.serve.deployment": "Ray Serve", "bentoml.service": "BentoML"}
# Django runs a project's views (`views.py`, or a module of a `views` package, that imports
# Django or its REST framework) in each worker process of the WSGI or ASGI server.
DJANGO = "Django"
DJANGO_PACKAGES = frozenset({"django", "rest_framework"})
DJANGO_VIEW_MODULES = "views"
# ...and its settings module (`settings.py`, or one of a `settings` package, that sets
# INSTALLED_APPS), which each worker imports as it starts: a model loaded there is each one's.
DJANGO_SETTINGS_MODULES = "settings"
DJANGO_SETTINGS_NAME = "INSTALLED_APPS"
# What each server's processes are, as messages name them (by default a web server's workers).
SERVER_PROCESSES = {
    "Celery": "each process of a worker's pool",
    "RQ": "each job's work horse (a process the worker forks for it)",
    "Ray Serve": "each replica's process",
    "BentoML": "each worker process of the service",
}
WEB_WORKERS = "each worker process (`gunicorn -w 4`, `uvicorn --workers 4`)"
# Servers that run the module itself as `__main__`, in one process (`streamlit run app.py`).
SCRIPT_SERVERS = {"streamlit": "Streamlit", "gradio": "Gradio"}

# The modules that pytest collects, or that configure it: never a program of their own.
TEST_MODULE = re.compile(r"(?:test_.*|.*_test|conftest)\.py\Z")


def may_run_as_a_script(filename: str) -> bool:
    """By its name, whether a file may be run as a script with no `__main__` guard: Python
    source that is no package's `__init__.py` and no test module. (Where it sits decides the
    rest: a module in a package is imported by name.)"""
    name = os.path.basename(filename)
    return name.endswith(".py") and name != "__init__.py" and TEST_MODULE.match(name) is None


# Folders whose modules are run as scripts, packages or not (an `__init__.py` there lets them
# import each other); a module elsewhere in a package is imported by name.
SCRIPT_FOLDERS = frozenset(
    {"examples", "example", "scripts", "tools", "demos", "demo", "tutorials", "samples", "bin"}
)


def in_a_script_folder(relative: str) -> bool:
    """Whether a file's path from the project's root passes through one of SCRIPT_FOLDERS."""
    return any(part in SCRIPT_FOLDERS for part in relative.replace("\\", "/").split("/")[:-1])


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
# ...and those of them that only Keras has (scikit-learn has `fit` and `predict` too).
KERAS_ONLY_METHODS = frozenset(
    method for method in TRAINING_METHODS if method.endswith(("_generator", "_on_batch"))
)
# Libraries whose models have `fit` and `predict` too, and run no TensorFlow: a model made by
# one of their classes (`knn = KNeighborsClassifier()`, then `knn.fit(...)`) trains there.
OTHER_MODEL_LIBRARIES = frozenset({"sklearn", "xgboost", "lightgbm", "catboost", "statsmodels"})

# The frameworks a program may compute with beside TensorFlow, by the top-level packages it
# imports: JAX's (each imports jax) and PyTorch's.
JAX_MODULES = frozenset(
    {"jax", "flax", "haiku", "optax", "equinox", "objax", "orbax", "chex", "jraph"}
)
# JAX's, as the bytes of a module that imports one of them.
JAX_WORDS = tuple(module.encode() for module in sorted(JAX_MODULES))
# The packages that import Keras when they are imported, and so read its backend then.
KERAS_IMPORTERS = frozenset({"keras", "keras_hub", "keras_nlp", "keras_cv", "keras_tuner"})
TORCH_MODULES = frozenset({"torch", "torchvision", "torchaudio", "lightning", "pytorch_lightning"})
