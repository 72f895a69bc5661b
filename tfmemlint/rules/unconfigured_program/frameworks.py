"""Frameworks that set TensorFlow's GPU memory up for the program that uses them: TFM205 counts
importing or calling one as configuration. Each entry was read in the framework's source; like
any setting, it works only when it runs before the runtime starts."""

from __future__ import annotations

from typing import NamedTuple

import libcst as cst

from tfmemlint.rules import literals
from tfmemlint.rules.runtime import argument


class Framework(NamedTuple):
    name: str  # the module whose import, or the function whose call, configures
    setting: str
    source: str
    # For a call: the keyword that turns the setting off when given as a literal False, and
    # the argument (position, keyword) that must not be a literal None.
    off_keyword: str | None = None
    needs_argument: tuple[int, str] | None = None


IMPORTS = (
    Framework(
        "merlin.core.compat.tensorflow",
        "a memory limit (TF_MEMORY_ALLOCATION, 0.5 by default) on every GPU",
        "NVIDIA-Merlin/core, merlin/core/compat/tensorflow.py, `configure_tensorflow()` at "
        "module level (23.04 on)",
    ),
    Framework(
        "merlin.dataloader.tensorflow",
        "a memory limit, through merlin.core.compat.tensorflow",
        "NVIDIA-Merlin/dataloader, merlin/dataloader/tensorflow.py (23.04 on; one GPU before)",
    ),
    Framework(
        "merlin.loader.tensorflow",
        "a memory limit, as merlin.dataloader.tensorflow",
        "NVIDIA-Merlin/dataloader, merlin/loader/tensorflow.py",
    ),
    Framework(
        "merlin.models.tf",
        "a memory limit, by `configure_tensorflow()` at import",
        "NVIDIA-Merlin/models, merlin/models/tf/__init__.py",
    ),
    Framework(
        "nvtabular.loader.tensorflow",
        "a memory limit, by `configure_tensorflow()` at import",
        "NVIDIA-Merlin/NVTabular, nvtabular/loader/tensorflow.py (through merlin-dataloader "
        "from 1.7)",
    ),
)

CALLS = (
    Framework(
        "sleap.disable_preallocation",
        "memory growth on every visible GPU",
        "talmolab/sleap, sleap/nn/system.py, `disable_preallocation`",
    ),
    Framework(
        "sleap.nn.system.disable_preallocation",
        "memory growth on every visible GPU",
        "talmolab/sleap, sleap/nn/system.py, `disable_preallocation`",
    ),
    Framework(
        "sleap.load_model",
        "memory growth on every visible GPU, unless `disable_gpu_preallocation=False`",
        "talmolab/sleap, sleap/nn/inference.py, `load_model`",
        off_keyword="disable_gpu_preallocation",
    ),
    Framework(
        "sleap.nn.inference.load_model",
        "memory growth on every visible GPU, unless `disable_gpu_preallocation=False`",
        "talmolab/sleap, sleap/nn/inference.py, `load_model`",
        off_keyword="disable_gpu_preallocation",
    ),
    Framework(
        "keras_retinanet.utils.gpu.setup_gpu",
        "memory growth on every GPU, or every GPU hidden",
        "fizyr/keras-retinanet, keras_retinanet/utils/gpu.py, `setup_gpu`",
    ),
    Framework(
        "tensorflow_similarity.utils.tf_cap_memory",
        "memory growth on every GPU",
        "tensorflow/similarity, tensorflow_similarity/utils.py, `tf_cap_memory`",
    ),
    Framework(
        "merlin.dataloader.tf_utils.configure_tensorflow",
        "a memory limit on one GPU",
        "NVIDIA-Merlin/dataloader, merlin/dataloader/tf_utils.py, `configure_tensorflow`",
    ),
    Framework(
        "nvtabular.loader.tf_utils.configure_tensorflow",
        "a memory limit on one GPU",
        "NVIDIA-Merlin/NVTabular, nvtabular/loader/tf_utils.py, `configure_tensorflow`",
    ),
    Framework(
        "csbdeep.utils.tf.limit_gpu_memory",
        "a memory limit on every GPU (a fraction given), or growth (`allow_growth=True`)",
        "CSBDeep/CSBDeep, csbdeep/utils/tf.py, `limit_gpu_memory`",
        needs_argument=(0, "fraction"),
    ),
    Framework(
        "deeplabcut.train_network",
        "TF_FORCE_GPU_ALLOW_GROWTH=true, unless `allow_growth=False`",
        "DeepLabCut/DeepLabCut, deeplabcut/pose_estimation_tensorflow/training.py, `train_network`",
        off_keyword="allow_growth",
    ),
)

_CALLS_BY_NAME = {framework.name: framework for framework in CALLS}


def imported(qualified: str) -> Framework | None:
    """The framework whose import, as `qualified` names it (a module, or a name in one),
    configures the GPU."""
    for framework in IMPORTS:
        if qualified == framework.name or qualified.startswith(framework.name + "."):
            return framework
    return None


def called(qualified: str, call: cst.Call) -> Framework | None:
    """The framework whose function `qualified` configures the GPU, called as `call` is."""
    framework = _CALLS_BY_NAME.get(qualified)
    if framework is None:
        return None
    if framework.off_keyword is not None:
        value = argument(call, 10**6, framework.off_keyword)
        if value is not None and literals.boolean(value) is False:
            return None
    if framework.needs_argument is not None:
        value = argument(call, *framework.needs_argument)
        growth = argument(call, 1, "allow_growth")
        given = value is not None and not literals.is_none(value)
        if not given and (growth is None or literals.boolean(growth) is False):
            return None
    return framework
