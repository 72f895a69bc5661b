"""TensorFlow's API paths: the namespaces a fix may spell, and the public TF1 path of every
module path that also holds a public name. `project.names` resolves a name to qualified paths;
this table says which of them are TensorFlow's, and the engine hands it down."""

from __future__ import annotations

# The namespaces whose ConfigProto and GPUOptions a fix may spell: TF1's API (top level or
# compat.v1) and config_pb2. session.py holds sessions only.
TF1 = "tensorflow"
TF1_COMPAT = "tensorflow.compat.v1"
TF2_COMPAT = "tensorflow.compat.v2"
CONFIG_PB2 = "tensorflow.core.protobuf.config_pb2"
SESSION_MODULE = "tensorflow.python.client.session"
_TF1_NAMESPACES = (TF1_COMPAT, TF1)

# Where each public TF1 name also lives: implementation modules, the estimator and slim packages,
# standalone Keras. Each prefix maps to the public path under the TF1 namespace ("" = top level).
_PUBLIC_PREFIXES: dict[str, str] = {
    f"{TF1_COMPAT}.": "",
    f"{TF2_COMPAT}.": "",  # TF2's API under its versioned name: the same objects
    f"{TF1}.": "",
    f"{SESSION_MODULE}.": "",
    f"{CONFIG_PB2}.": "",
    "tensorflow.python.training.monitored_session.": "train.",
    "tensorflow.python.training.server_lib.": "train.",
    "tensorflow.python.training.supervisor.": "train.",
    "tensorflow.python.training.session_manager.": "train.",
    "tensorflow_estimator.python.estimator.run_config.": "estimator.",
    "tensorflow_estimator.compat.v1.estimator.": "estimator.",
    "tensorflow_estimator.estimator.": "estimator.",
    "tensorflow.contrib.slim.python.slim.": "contrib.slim.",
    "tf_slim.": "contrib.slim.",
    # Keras 2's backend hands on the TensorFlow it imported: `K.tf.Session(...)`.
    "keras.backend.tensorflow_backend.tf.": "",
    "keras.backend.tf.": "",
    "keras.backend.tensorflow_backend.": "keras.backend.",
    "keras.": "keras.",
    "tf_keras.": "keras.",  # Keras 2 for TF2: tf.keras under its own name
}
_PREFIXES_LONGEST_FIRST = sorted(_PUBLIC_PREFIXES, key=len, reverse=True)


def normalize_module(qualified: str) -> str:
    """Collapse the aliases TensorFlow exports for one namespace into one name."""
    for alias in ("tensorflow._api.v2.compat.v1", "tensorflow.compat.v2.compat.v1"):
        if qualified == alias or qualified.startswith(alias + "."):
            qualified = "tensorflow.compat.v1" + qualified[len(alias) :]
    while ".compat.v1.compat.v1" in qualified:
        qualified = qualified.replace(".compat.v1.compat.v1", ".compat.v1", 1)
    return qualified


def namespace_of(module: str) -> str | None:
    """The known TF namespace a module path is (normalized), or None."""
    module = normalize_module(module)
    known = (*_TF1_NAMESPACES, CONFIG_PB2, SESSION_MODULE)
    return module if module in known else None


def canonical_api(qualified: str) -> str | None:
    """The public TF1 path of a qualified name: 'Session', 'train.Server',
    'estimator.RunConfig', 'keras.backend.set_session'...; None outside TensorFlow."""
    qualified = normalize_module(qualified)
    # tf.keras is Keras under TensorFlow's roof: one path for both.
    for keras in ("tensorflow.compat.v1.keras.", "tensorflow.keras.", "tensorflow.python.keras."):
        if qualified.startswith(keras):
            qualified = "keras." + qualified[len(keras) :]
            break
    for prefix in _PREFIXES_LONGEST_FIRST:
        if qualified.startswith(prefix):
            return _PUBLIC_PREFIXES[prefix] + qualified[len(prefix) :]
    return None


def provides_config_protos(namespace: str) -> bool:
    return namespace in (*_TF1_NAMESPACES, CONFIG_PB2)
