"""TF2's runtime as the rules see it: the calls that set GPU memory up, and the calls that start
the runtime (after which those calls raise). Shared by the eager misuse rules and TFM205."""

from __future__ import annotations

import libcst as cst

from tfmemlint.project.names import CallSite, ModuleNames
from tfmemlint.rules import literals

GROWTH = frozenset({"config.experimental.set_memory_growth"})
LIMIT = frozenset(
    {
        "config.set_logical_device_configuration",
        "config.experimental.set_logical_device_configuration",
        "config.experimental.set_virtual_device_configuration",
    }
)
VISIBILITY = frozenset({"config.set_visible_devices", "config.experimental.set_visible_devices"})
LIST_GPUS = frozenset({"config.list_physical_devices", "config.experimental.list_physical_devices"})

# Calls that start the runtime. A curated list: a false alarm here would be worse than a miss.
_STARTERS = frozenset(
    {
        "constant",
        "zeros",
        "ones",
        "zeros_like",
        "ones_like",
        "fill",
        "eye",
        "range",
        "linspace",
        "Variable",
        "convert_to_tensor",
        "identity",
        "matmul",
        "add",
        "subtract",
        "multiply",
        "divide",
        "reduce_sum",
        "reduce_mean",
        "reduce_max",
        "reduce_min",
        "cast",
        "reshape",
        "concat",
        "stack",
        "one_hot",
        "expand_dims",
        "transpose",
        "print",
        "config.list_logical_devices",
        "config.experimental.list_logical_devices",
        "config.experimental.get_memory_info",
        "config.experimental.get_memory_usage",
        "test.is_gpu_available",
        "test.gpu_device_name",
        "keras.Sequential",
        "keras.Model",
        "keras.Input",
        "keras.models.Sequential",
        "keras.models.Model",
        "keras.models.load_model",
        # A model built from its saved architecture builds its layers' weights.
        "keras.models.model_from_json",
        "keras.layers.Input",
        "keras.utils.image_dataset_from_directory",
        "keras.utils.text_dataset_from_directory",
        "keras.utils.timeseries_dataset_from_array",
        "keras.preprocessing.image_dataset_from_directory",
        "keras.preprocessing.text_dataset_from_directory",
        "saved_model.load",
        "python.client.device_lib.list_local_devices",
        "random.normal",
        "random.uniform",
        "random.truncated_normal",
        "random.shuffle",
        "data.TFRecordDataset",
        "data.TextLineDataset",
        "data.FixedLengthRecordDataset",
        "data.experimental.make_csv_dataset",
        "summary.create_file_writer",
        # They list the logical devices, which starts the runtime.
        "distribute.MirroredStrategy",
        "distribute.MultiWorkerMirroredStrategy",
        "distribute.experimental.MultiWorkerMirroredStrategy",
        "io.read_file",
    }
)
# Every call in these namespaces runs ops (a `tf.data.Dataset` constructor makes its tensors).
_STARTER_NAMESPACES = (
    "math.",
    "linalg.",
    "nn.",
    "image.",
    "signal.",
    "keras.applications.",
    "data.Dataset.",
)


def starts_runtime(api: str | None) -> bool:
    """Whether the TF API `api` (as `tensorflow_api.canonical_api` spells it) starts the runtime."""
    return api is not None and (api in _STARTERS or api.startswith(_STARTER_NAMESPACES))


def argument(call: cst.Call, position: int, *keywords: str) -> cst.BaseExpression | None:
    """The value of a call's argument given by keyword or at `position`; None when absent."""
    positional = [a for a in call.args if a.keyword is None and not a.star]
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value in keywords:
            return arg.value
    return positional[position].value if len(positional) > position else None


def growth_enabled(call: cst.Call) -> bool:
    """`set_memory_growth(device, True)`: growth turned on, as a literal."""
    enable = argument(call, 1, "enable")
    return enable is not None and literals.boolean(enable) is True


def hides_all_gpus(names: ModuleNames, site: CallSite) -> bool:
    """`tf.config.set_visible_devices([], "GPU")`, in either namespace."""
    if names.api_of(site.node.func, site.scope, site.order) not in VISIBILITY:
        return False
    devices = argument(site.node, 0, "devices")
    device_type = argument(site.node, 1, "device_type")
    empty = isinstance(devices, (cst.List, cst.Tuple)) and not devices.elements
    return empty and device_type is not None and literals.string(device_type) == "GPU"
