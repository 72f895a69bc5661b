"""TFM504: a variable set in a launch file that neither TensorFlow nor JAX reads, whose name says
that it was meant to limit GPU memory.

The logic lives beside this page in `check.py`.
"""

from tfmemlint.model import Rule, RuleDoc
from tfmemlint.rules.family import LAUNCH_RECOVERY, RuleFamily

LOOKALIKE_VARIABLE = Rule(
    code="TFM504",
    name="lookalike-memory-variable",
    summary="A launch file sets a GPU memory variable that neither TensorFlow nor JAX reads",
    fixable=False,
    doc=RuleDoc(
        what_it_does="Finds a variable set in a launch file whose name has TensorFlow's or "
        "JAX's prefix (`TF_`, `TENSORFLOW_`, `XLA_`, `JAX_`) and a word of memory (growth, "
        "fraction, memory, preallocation, allocation) but that neither reads, such as "
        "`TF_GPU_MEMORY_FRACTION`, and names the variable that does what it meant.",
        why="A variable nobody reads does nothing: the program reserves the whole GPU as if it "
        "were not there. The names TensorFlow 2.21 reads are the `TF_` strings of its "
        "libraries (`libtensorflow_framework.so.2`, `libtensorflow_cc.so.2`); JAX's are those "
        "of jax's and jaxlib's sources. Both lists are in `rules/variables.py`.",
        example="FROM tensorflow/serving:latest-gpu\nENV TF_GPU_MEMORY_FRACTION=0.5",
        use_instead="FROM tensorflow/serving:latest-gpu\nENV TF_FORCE_GPU_ALLOW_GROWTH=true",
        fix_safety="No fix: what the variable meant (growth, or a fraction, which TensorFlow "
        "reads from no variable) is the author's to choose.",
        recovery=LAUNCH_RECOVERY,
        language="dockerfile",
    ),
)

FAMILY = RuleFamily(
    rules=(LOOKALIKE_VARIABLE,),
    triggers=(b"TF_", b"TENSORFLOW_", b"XLA_", b"JAX_"),
    checker="tfmemlint.rules.lookalike_variables.check:check",
)
