"""Libraries that start TensorFlow's runtime for the program that calls them: the entry file
never says `tf.`, and TF still reserves nearly all of every GPU at the library's first op.
Each entry names the library's source file where the runtime starts; like `frameworks.py` for
the frameworks that configure, this table is read by the rules and printed on their pages.

A library that only reads files (`tf.io.gfile`) or lists devices starts nothing, and neither
does importing one of these: the runtime starts at the first op, in the calls below.
"""

from __future__ import annotations

from typing import NamedTuple


class Starter(NamedTuple):
    name: str  # a qualified name; ending in ".", every name under it
    starts: str  # what the call does that starts the runtime
    source: str  # where, in the library's own repository
    # Only where Keras runs on TensorFlow (the Keras backend); else on every backend.
    keras_backend: bool = False
    # For a method: the call is `.{method}()` on what a call of `name` returned.
    method: str | None = None
    # For a namespace: only its classes start it, built (`Class(...)`) or from a preset
    # (`Class.from_preset(...)`), not every call under it (`models.__dict__.items()`).
    classes_only: bool = False


CALLS = (
    Starter(
        "tensorflow_datasets.load",
        "builds a `tf.data` pipeline over the prepared data",
        "tensorflow/datasets, tensorflow_datasets/core/load.py, `load`",
    ),
    Starter(
        "tensorflow_datasets.builder",
        "`as_dataset` builds a `tf.data` pipeline",
        "tensorflow/datasets, tensorflow_datasets/core/dataset_builder.py, `as_dataset`",
        method="as_dataset",
    ),
    Starter(
        "tensorflow_datasets.as_numpy",
        "iterates a `tf.data` dataset, running its ops",
        "tensorflow/datasets, tensorflow_datasets/core/dataset_utils.py, `as_numpy`",
    ),
    Starter(
        "tensorflow_hub.load",
        "loads a SavedModel (`tf.saved_model.load`)",
        "tensorflow/hub, tensorflow_hub/module_v2.py, `load`",
    ),
    Starter(
        "tensorflow_hub.KerasLayer",
        "loads a SavedModel into a Keras layer",
        "tensorflow/hub, tensorflow_hub/keras_layer.py, `KerasLayer.__init__`",
    ),
    Starter(
        "tensorflow_text.",
        "runs TensorFlow ops (tokenizers build lookup tables of tensors)",
        "tensorflow/text, tensorflow_text/python/ops/",
    ),
    Starter(
        "keras_hub.models.",
        "builds a Keras model, with its weights as TensorFlow variables",
        "keras-team/keras-hub, keras_hub/src/models/backbone.py, `Backbone.from_preset`",
        keras_backend=True,
        classes_only=True,
    ),
    Starter(
        "keras_hub.layers.",
        "builds Keras layers and their variables",
        "keras-team/keras-hub, keras_hub/src/layers/",
        keras_backend=True,
        classes_only=True,
    ),
    Starter(
        "keras_nlp.models.",
        "builds a Keras model (keras-nlp is keras-hub's former name)",
        "keras-team/keras-nlp, keras_nlp/src/models/backbone.py, `Backbone.from_preset`",
        keras_backend=True,
        classes_only=True,
    ),
    Starter(
        "keras_nlp.layers.",
        "builds Keras layers and their variables",
        "keras-team/keras-nlp, keras_nlp/src/layers/",
        keras_backend=True,
        classes_only=True,
    ),
    Starter(
        "keras_cv.models.",
        "builds a Keras model, with its weights as TensorFlow variables",
        "keras-team/keras-cv, keras_cv/src/models/backbones/backbone.py, `from_preset`",
        keras_backend=True,
        classes_only=True,
    ),
    Starter(
        "keras_cv.layers.",
        "its preprocessing layers run TensorFlow ops on every Keras backend",
        "keras-team/keras-cv, keras_cv/src/layers/preprocessing/"
        "base_image_augmentation_layer.py (built on `tf`)",
        classes_only=True,
    ),
    # Task and dataset registries: seqio (T5's tasks and mixtures).
    Starter(
        "seqio.get_dataset",
        "builds the task's or mixture's `tf.data` pipeline",
        "google/seqio, seqio/dataset_providers.py, `get_dataset`",
    ),
    Starter(
        "seqio.get_mixture_or_task",
        "`get_dataset` builds the task's `tf.data` pipeline",
        "google/seqio, seqio/dataset_providers.py, `Task.get_dataset`",
        method="get_dataset",
    ),
    Starter(
        "seqio.Evaluator",
        "builds and caches each task's `tf.data` dataset as it is made",
        "google/seqio, seqio/evaluation.py, `Evaluator.__init__`",
    ),
    Starter(
        "seqio.evaluation.Evaluator",
        "builds and caches each task's `tf.data` dataset as it is made",
        "google/seqio, seqio/evaluation.py, `Evaluator.__init__`",
    ),
    # The TensorFlow Model Garden's training driver and its strategies.
    Starter(
        "official.core.train_lib.run_experiment",
        "builds the task's model and `tf.data` inputs, and trains or evaluates them",
        "tensorflow/models, official/core/train_lib.py, `run_experiment`",
    ),
    Starter(
        "official.common.distribute_utils.get_distribution_strategy",
        "makes a `tf.distribute` strategy, which lists the logical devices",
        "tensorflow/models, official/common/distribute_utils.py, `get_distribution_strategy`",
    ),
)

# The starters' packages whose names hold no word of TensorFlow's or Keras's: the pre-filter
# looks for these too.
OWN_WORDS = (b"seqio", b"official.")

# transformers' TensorFlow classes: `TFAutoModel*`, `TFBertModel`, ... Their constructors and
# `from_pretrained` build a tf.keras model (transformers/modeling_tf_utils.py,
# `TFPreTrainedModel.from_pretrained`); the PyTorch and Flax classes start no TensorFlow.
TRANSFORMERS = "transformers"

# The packages whose import a TensorFlow start can hide behind: a module that imports one of
# these may start the runtime through it. (transformers only through its TF classes.)
ROOTS = frozenset(
    {
        *(starter.name.split(".")[0] for starter in CALLS),
        "tf_keras",  # Keras 2 for TF2: `tf.keras` under its own name
        TRANSFORMERS,
    }
)


def _transformers_tf_class(qualified: str) -> bool:
    """`transformers.TFAutoModel.from_pretrained`, `transformers.models.bert.TFBertModel`."""
    parts = qualified.split(".")
    return parts[0] == TRANSFORMERS and any(
        len(part) > 2 and part.startswith("TF") and part[2].isupper() for part in parts[1:]
    )


def imports_tensorflow(qualified: str, text: str) -> bool:
    """Whether importing `qualified` (a module, or a name from one) into a module of `text`
    brings in one of the libraries above: the place where a fix can add `import tensorflow`.
    transformers does so through its TF classes, imported by name or spelled after the
    module's (`transformers.TFBertModel`)."""
    root = qualified.split(".")[0]
    if root == TRANSFORMERS:
        return _transformers_tf_class(qualified) or (qualified == root and ".TF" in text)
    return root in ROOTS


def started_by(qualified: str, keras_on_tensorflow: bool) -> Starter | None:
    """The entry whose call `qualified` names, if calling it starts TensorFlow's runtime."""
    if _transformers_tf_class(qualified):
        return Starter(qualified, "builds a TensorFlow model", "transformers/modeling_tf_utils.py")
    for starter in CALLS:
        if starter.method is not None:
            continue
        if qualified == starter.name or (starter.name.endswith(".") and _under(qualified, starter)):
            if starter.keras_backend and not keras_on_tensorflow:
                return None
            return starter
    return None


def _under(qualified: str, namespace: Starter) -> bool:
    if not qualified.startswith(namespace.name):
        return False
    parts = qualified[len(namespace.name) :].split(".")
    if any(part.startswith("_") for part in parts):
        return False
    if namespace.classes_only:
        return parts[0][:1].isupper() and parts[1:] in ([], ["from_preset"])
    return True


# Whose calls build or load a TensorFlow model (a program that calls one computes with TF).
_MODEL_ROOTS = ("tensorflow_hub", "tf_keras")


def builds_a_model(qualified: str, keras_on_tensorflow: bool) -> bool:
    """Whether calling `qualified` builds or loads a TensorFlow model: a hub model, tf.keras,
    a transformers TF class, a keras-hub (-nlp, -cv) model where Keras runs on TensorFlow."""
    if qualified.split(".")[0] in _MODEL_ROOTS or _transformers_tf_class(qualified):
        return True
    starter = started_by(qualified, keras_on_tensorflow)
    return starter is not None and starter.keras_backend


def started_by_method(qualified_maker: str, method: str) -> Starter | None:
    """The entry for `.{method}()` called on what a call of `qualified_maker` returned
    (`tfds.builder("mnist").as_dataset()`)."""
    for starter in CALLS:
        if starter.method == method and starter.name == qualified_maker:
            return starter
    return None
