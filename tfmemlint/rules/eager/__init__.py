"""TFM2xx (eager): TF2 has no sessions; memory is set through `tf.config` before the runtime
starts, and a misplaced call crashes. These rules find the calls that raise or do nothing.

The logic lives beside these pages in `check.py`.
"""

from tfmemlint.model import Rule, RuleDoc
from tfmemlint.rules.family import (
    DEVICE_CONFIGURATION_WORDS,
    RECOVERED_FIX,
    TENSORFLOW_MODULES,
    RuleFamily,
)

_RECOVERY = (
    "In a file or notebook cell that needed recovery (TFM904, TFM902), a call inside a "
    "set-aside statement is not seen: a configuration there counts as missing, and a call "
    "that starts the runtime there as absent. " + RECOVERED_FIX
)

GROWTH_ON_SOME_GPUS = Rule(
    code="TFM202",
    name="memory-growth-on-some-gpus",
    summary="Memory growth is set on one GPU only",
    doc=RuleDoc(
        what_it_does="Finds `tf.config.experimental.set_memory_growth(gpus[0], True)` where "
        "`gpus` lists every physical GPU, unless the script restricts the visible devices.",
        why="TensorFlow compares growth across the visible GPUs and raises `ValueError: Memory "
        "growth cannot differ between GPU devices` on a machine with more than one "
        "(python/eager/context.py, `_compute_gpu_options`; zzh8829/yolov3-tf2#225). It works on "
        "the one-GPU machine where it was written, and crashes on the shared one.",
        example='gpus = tf.config.list_physical_devices("GPU")\n'
        "tf.config.experimental.set_memory_growth(gpus[0], True)",
        use_instead='gpus = tf.config.list_physical_devices("GPU")\n'
        "for gpu in gpus:\n    tf.config.experimental.set_memory_growth(gpu, True)",
        fix_safety="Safe: the call becomes a loop over the same list. No fix when the call "
        "shares its line with other statements.",
        recovery=_RECOVERY,
    ),
)

CONFIGURED_AFTER_INITIALIZATION = Rule(
    code="TFM203",
    name="configured-after-initialization",
    summary="GPU configuration after the runtime was initialized",
    doc=RuleDoc(
        what_it_does="Finds `set_memory_growth`, `set_logical_device_configuration`, "
        "`set_virtual_device_configuration` and `set_visible_devices` called after, in the same "
        "scope, something that initializes the runtime: a tensor op, a Keras model, "
        "`list_logical_devices`, `get_memory_info`, `tf.test.is_gpu_available`, "
        "`device_lib.list_local_devices`, a library that starts it (`tfds.load`, `hub.load`). "
        "It points at the initializing line.",
        why="Once the runtime is initialized the devices are fixed, and these calls raise "
        "`RuntimeError: Physical devices cannot be modified after being initialized` "
        "(python/eager/context.py; hunglc007/tensorflow-yolov4-tflite#171). "
        "`list_physical_devices` does not initialize it.",
        example="x = tf.constant(1.0)\ngpus = tf.config.list_physical_devices('GPU')\n"
        "for gpu in gpus:\n    tf.config.experimental.set_memory_growth(gpu, True)",
        use_instead="gpus = tf.config.list_physical_devices('GPU')\nfor gpu in gpus:\n"
        "    tf.config.experimental.set_memory_growth(gpu, True)\nx = tf.constant(1.0)",
        fix_safety="Safe where it can be proved: the statement holding the configuration (and "
        "the `gpus = tf.config.list_physical_devices(...)` line it reads, when that comes late "
        "too) moves to just before the statement that initializes the runtime, when both sit "
        "in one block on lines of their own and everything the moved lines read is bound "
        "earlier. Otherwise reported without a fix.",
        recovery=_RECOVERY,
    ),
)

GROWTH_AND_LIMIT = Rule(
    code="TFM204",
    name="memory-growth-and-limit",
    summary="Memory growth and a memory limit on the same GPU",
    fixable=False,
    doc=RuleDoc(
        what_it_does="Finds memory growth and a logical-device memory limit set on the same "
        "GPU (the same expression, or a loop over the same list).",
        why="Growth is not applied to a GPU with virtual devices: growth set before the limit "
        "is silently dropped, and growth set after it raises `ValueError: Cannot set memory "
        "growth on device when virtual devices configured` (python/eager/context.py).",
        example="tf.config.experimental.set_memory_growth(gpus[0], True)\n"
        "tf.config.set_logical_device_configuration(\n"
        "    gpus[0], [tf.config.LogicalDeviceConfiguration(memory_limit=4096)])",
        use_instead="tf.config.set_logical_device_configuration(\n"
        "    gpus[0], [tf.config.LogicalDeviceConfiguration(memory_limit=4096)])",
        fix_safety="No fix: keep the one you meant.",
        recovery=_RECOVERY,
    ),
)

FAMILY = RuleFamily(
    rules=(
        GROWTH_ON_SOME_GPUS,
        CONFIGURED_AFTER_INITIALIZATION,
        GROWTH_AND_LIMIT,
    ),
    triggers=DEVICE_CONFIGURATION_WORDS,
    modules=TENSORFLOW_MODULES,
    names=(
        "set_memory_growth",
        "set_logical_device_configuration",
        "set_virtual_device_configuration",
        "set_visible_devices",
    ),
    checker="tfmemlint.rules.eager.check:check",
    settled_by_fixes="tfmemlint.rules.eager.check:settled_by_fixes",
)
