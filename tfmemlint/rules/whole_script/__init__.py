"""TFM4xx: whole-script semantics. The GPU allocator is per process: the first session or device
listing that touches the GPU decides, and later settings do nothing.

The logic lives beside these pages in `check.py`.
"""

from tfmemlint.model import Rule, RuleDoc
from tfmemlint.rules.family import TENSORFLOW_MODULES, RuleFamily

_RECOVERY = (
    "In a file or notebook cell that needed recovery (TFM904, TFM902), a session inside a "
    "set-aside statement is not seen: it counts neither as the first session nor as a later "
    "one. In a notebook, the places this rule names are a cell and a line in it."
)

LATER_SESSION_IGNORED = Rule(
    code="TFM401",
    name="later-session-settings-ignored",
    summary="A later session's memory settings differ from the first's and have no effect",
    fixable=False,
    level="info",
    doc=RuleDoc(
        what_it_does="Finds a session whose memory settings differ from those of the first "
        "session created before it in the same scope, and points at the first.",
        why="The GPU allocator is created once per process and GPU, by the first session; the "
        "`gpu_options` of later sessions are ignored (tensorflow/tensorflow#32919, #22526; the "
        "comment on `virtual_devices` in config.proto).",
        example="a = tf.Session()\n"
        "b = tf.Session(config=tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True)))",
        use_instead="config = tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True))\n"
        "a = tf.Session(config=config)\nb = tf.Session(config=config)",
        fix_safety="No fix: give the first session the settings you want.",
        recovery=_RECOVERY,
    ),
)

HIDDEN_GPU_INITIALIZATION = Rule(
    code="TFM402",
    name="hidden-gpu-initialization",
    summary="Listing devices creates the GPU allocator before the configured session",
    fixable=False,
    doc=RuleDoc(
        what_it_does="Finds `device_lib.list_local_devices()` and `tf.test.is_gpu_available()` "
        "called before, in the same scope, a session that is given a config.",
        why="Both create the GPU devices, and their allocators, with the options in force at "
        "that moment: TensorFlow's defaults, which reserve nearly all GPU memory. The "
        "session's own memory options then come too late (tensorflow/tensorflow#8021).",
        example="from tensorflow.python.client import device_lib\n"
        "print(device_lib.list_local_devices())\nsess = tf.Session(config=config)",
        use_instead="sess = tf.Session(config=config)\nprint(device_lib.list_local_devices())",
        fix_safety="No fix: move the listing after the session, or pass it "
        "`session_config=config`.",
        recovery=_RECOVERY,
    ),
)

FAMILY = RuleFamily(
    rules=(LATER_SESSION_IGNORED, HIDDEN_GPU_INITIALIZATION),
    triggers=(b"Session",),
    modules=TENSORFLOW_MODULES,
    names=("Session", "InteractiveSession"),  # every finding compares or follows a session
    checker="tfmemlint.rules.whole_script.check:check",
    settled_by_fixes="tfmemlint.rules.whole_script.check:settled_by_fixes",
)
