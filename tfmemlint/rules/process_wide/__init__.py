"""TFM2xx: process-wide settings. Environment variables and device visibility decide GPU memory
for every session in the process; the session rules take them into account, and these rules check
that they are spelled so that TensorFlow obeys them.

The logic lives beside these pages in `check.py`.
"""

from tfmemlint.model import Rule, RuleDoc
from tfmemlint.rules.family import FORCE_GROWTH_WORD, RECOVERED_FIX, RuleFamily

_RECOVERY = (
    "In a file that needed recovery (TFM904, TFM902), a setting made inside a set-aside "
    "statement is not seen: the sessions after it are checked as if it were not there, and "
    "the TFM904 or TFM902 line names its line. " + RECOVERED_FIX
)

INVALID_FORCE_GROWTH = Rule(
    code="TFM201",
    name="invalid-force-gpu-allow-growth",
    summary="TF_FORCE_GPU_ALLOW_GROWTH is set to a value TensorFlow ignores",
    doc=RuleDoc(
        what_it_does="Finds `TF_FORCE_GPU_ALLOW_GROWTH` set (through `os.environ[...] =`, "
        "`os.environ.setdefault`, `os.environ.update` or `os.putenv`) to a literal other than "
        'exactly `"true"` or `"false"`, such as `"True"` or `"1"`, or to `str(flag)`, which '
        'makes `"True"` of a bool.',
        why='TensorFlow compares the value with exactly "true" and "false"; anything else '
        "only logs an error, and the config's own `allow_growth` is used, so the session "
        "reserves nearly all GPU memory (core/common_runtime/gpu/gpu_bfc_allocator.cc, "
        "`GetAllowGrowthValue`).",
        example='import os\n\nos.environ["TF_FORCE_GPU_ALLOW_GROWTH"] = "True"',
        use_instead='import os\n\nos.environ["TF_FORCE_GPU_ALLOW_GROWTH"] = "true"',
        fix_safety="Safe for values that plainly mean yes (`True`, `TRUE`, `1`, `yes`, `on`), "
        'fixed to `"true"`, or no (`False`, `0`, `no`, `off`), fixed to `"false"`: the '
        "meaning you wrote is kept. `str(flag)` becomes `str(flag).lower()`. Other values are "
        "reported without a fix.",
        recovery=_RECOVERY,
    ),
)

FAMILY = RuleFamily(
    rules=(INVALID_FORCE_GROWTH,),
    triggers=(FORCE_GROWTH_WORD,),
    checker="tfmemlint.rules.process_wide.check:check",
    settled_by_fixes="tfmemlint.rules.process_wide.check:settled_by_fixes",
)
