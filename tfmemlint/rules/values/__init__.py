"""TFM3xx: memory values TensorFlow rejects or that do not do what they seem to.

The logic lives beside these pages in `check.py`.
"""

from tfmemlint.model import Rule, RuleDoc
from tfmemlint.rules.family import TENSORFLOW_MODULES, RuleFamily

_RECOVERY = (
    "In a file or notebook cell that needed recovery (TFM904, TFM902), a value written inside "
    "a set-aside statement is not checked."
)

_FRACTION = (
    "`per_process_gpu_memory_fraction` caps the process at that fraction of the GPU's *total* "
    "memory (core/protobuf/config.proto)."
)

FRACTION_OUT_OF_RANGE = Rule(
    code="TFM301",
    name="memory-fraction-out-of-range",
    summary="per_process_gpu_memory_fraction is negative or looks like a percentage",
    fixable=False,
    doc=RuleDoc(
        what_it_does="Finds a `per_process_gpu_memory_fraction` (keyword, dict key or attribute "
        "assignment) below 0, or above 1 in a way that looks like a percentage: an integer "
        "such as `40`, or any value of 2 or more.",
        why=_FRACTION + " A negative value is invalid, and 40 asks for forty GPUs' worth of "
        "memory through unified memory, not for 40 %.",
        example="config.gpu_options.per_process_gpu_memory_fraction = 40",
        use_instead="config.gpu_options.per_process_gpu_memory_fraction = 0.4",
        fix_safety="No fix: only you know the fraction you meant.",
        recovery=_RECOVERY,
    ),
)

FRACTION_UNIFIED_MEMORY = Rule(
    code="TFM302",
    name="memory-fraction-unified-memory",
    summary="per_process_gpu_memory_fraction above 1 oversubscribes into host memory",
    fixable=False,
    level="warning",
    doc=RuleDoc(
        what_it_does="Finds a fractional `per_process_gpu_memory_fraction` between 1 and 2, "
        "such as `1.5`.",
        why=_FRACTION + " A value above 1 turns on CUDA unified memory: the process takes the "
        "whole GPU and spills into host RAM, which is slow and shares badly.",
        example="gpu_options = tf.GPUOptions(per_process_gpu_memory_fraction=1.5)",
        use_instead="gpu_options = tf.GPUOptions(per_process_gpu_memory_fraction=0.9)",
        fix_safety="No fix: oversubscription may be deliberate.",
        recovery=_RECOVERY,
    ),
)

FRACTION_WHOLE_GPU = Rule(
    code="TFM303",
    name="memory-fraction-whole-gpu",
    summary="per_process_gpu_memory_fraction=1.0 asks for more than is free",
    fixable=False,
    level="warning",
    doc=RuleDoc(
        what_it_does="Finds `per_process_gpu_memory_fraction` set to exactly 1.",
        why=_FRACTION + " The whole of the total is more than is ever free (the driver and the "
        "CUDA context hold some), so the session runs out of memory "
        "(tensorflow/tensorflow#22239); and it leaves nothing to other jobs.",
        example="config.gpu_options.per_process_gpu_memory_fraction = 1.0",
        use_instead="config.gpu_options.allow_growth = True",
        fix_safety="No fix.",
        recovery=_RECOVERY,
    ),
)

MEMORY_LIMIT_NOT_POSITIVE = Rule(
    code="TFM304",
    name="memory-limit-not-positive",
    summary="A logical-device memory limit is zero or negative",
    fixable=False,
    doc=RuleDoc(
        what_it_does="Finds `memory_limit` of `LogicalDeviceConfiguration` / "
        "`VirtualDeviceConfiguration`, and `memory_limit_mb` of virtual devices, that are 0 or "
        "below.",
        why="A logical GPU needs a positive memory limit in megabytes; TensorFlow rejects the "
        "configuration or creates a device that can hold nothing.",
        example="tf.config.LogicalDeviceConfiguration(memory_limit=0)",
        use_instead="tf.config.LogicalDeviceConfiguration(memory_limit=4096)",
        fix_safety="No fix.",
        recovery=_RECOVERY,
    ),
)

FAMILY = RuleFamily(
    rules=(
        FRACTION_OUT_OF_RANGE,
        FRACTION_UNIFIED_MEMORY,
        FRACTION_WHOLE_GPU,
        MEMORY_LIMIT_NOT_POSITIVE,
    ),
    # A `memory_limit` counts only in a Logical/VirtualDeviceConfiguration, where it may also
    # be positional: that name is the trigger. `memory_limit_mb` and the fraction count in any
    # call, dict or attribute.
    triggers=(b"per_process_gpu_memory_fraction", b"memory_limit_mb", b"DeviceConfiguration"),
    modules=TENSORFLOW_MODULES,
    checker="tfmemlint.rules.values.check:check",
    settled_by_fixes="tfmemlint.rules.values.check:settled_by_fixes",
)
