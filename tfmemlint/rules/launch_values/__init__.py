"""TFM501-TFM503: the values of TensorFlow's and JAX's memory variables where a launch file sets
them (a Dockerfile's `ENV`, a Compose service's `environment:`, a Kubernetes container's
`env:`, a shell or Slurm script, a `.env` file): the checks of TFM201 and TFM210, where the
process starts.

The logic lives beside these pages in `check.py`.
"""

from tfmemlint.model import Rule, RuleDoc
from tfmemlint.rules.family import LAUNCH_RECOVERY, LOOKS_AT, RuleFamily

_WHERE = (
    "Launch files are `Dockerfile`, `Dockerfile.*`, `*.Dockerfile`, Compose files and Kubernetes "
    "manifests (`*.yml`, `*.yaml`), shell and Slurm scripts (`*.sh`, `*.bash`, `*.sbatch`, "
    "`*.slurm`) and `.env` files."
)

INVALID_FORCE_GROWTH = Rule(
    code="TFM501",
    name="launch-invalid-force-gpu-allow-growth",
    summary="A launch file sets TF_FORCE_GPU_ALLOW_GROWTH to a value TensorFlow ignores",
    doc=RuleDoc(
        what_it_does="Finds `TF_FORCE_GPU_ALLOW_GROWTH` set in a launch file to a value other "
        "than exactly `true` or `false`, such as `1` or `True`. " + _WHERE,
        why='TensorFlow compares the value with exactly "true" and "false" and only logs an '
        "error for anything else (gpu_bfc_allocator.cc, `GetAllowGrowthValue`): every program "
        "the file starts reserves nearly all GPU memory.",
        example="FROM tensorflow/tensorflow:latest-gpu\nENV TF_FORCE_GPU_ALLOW_GROWTH=1",
        use_instead="FROM tensorflow/tensorflow:latest-gpu\nENV TF_FORCE_GPU_ALLOW_GROWTH=true",
        fix_safety="Safe for values that plainly mean yes (`True`, `1`, `yes`, `on`), fixed "
        "to `true`, or no, fixed to `false`, in the value's own quotes (a plain YAML value "
        "gets double quotes, so that YAML reads a string). Other values, and values written "
        "through a variable, are reported without a fix.",
        recovery=LAUNCH_RECOVERY,
        language="dockerfile",
    ),
)

GROWTH_FORCED_OFF = Rule(
    code="TFM502",
    name="launch-growth-forced-off",
    summary="A launch file forces TensorFlow's memory growth off",
    level="warning",
    fixable=False,
    doc=RuleDoc(
        what_it_does="Finds `TF_FORCE_GPU_ALLOW_GROWTH=false` in a launch file. " + _WHERE,
        why="The variable overrides `allow_growth` in both directions (gpu_bfc_allocator.cc): "
        "a program that asks for memory growth in its code takes nearly all of every GPU "
        "when this file starts it. A memory fraction or limit set in code still holds.",
        example='services:\n  train:\n    environment:\n      TF_FORCE_GPU_ALLOW_GROWTH: "false"',
        use_instead="services:\n  train:\n    environment:\n"
        '      TF_FORCE_GPU_ALLOW_GROWTH: "true"',
        fix_safety="No fix: the value may be meant, for programs that cap their memory with "
        "a fraction. Set it to `true`, or remove it, where they do not.",
        recovery=LAUNCH_RECOVERY,
        language="yaml",
    ),
)

INVALID_JAX_SETTING = Rule(
    code="TFM503",
    name="launch-invalid-jax-memory-setting",
    summary="A launch file sets a JAX allocator variable to a value JAX does not read as meant",
    doc=RuleDoc(
        what_it_does="Finds, in a launch file, the values TFM210 finds in Python: a no that jaxlib "
        "reads as yes, a fraction that is no number or out of range, an unknown "
        "allocator.",
        details=(
            (
                LOOKS_AT,
                "Finds, in a launch file, the values TFM210 finds in Python: "
                "`XLA_PYTHON_CLIENT_PREALLOCATE` set to a no that jaxlib reads as yes (`no`, "
                "`off`, `FALSE`), a memory fraction that is no number or lies outside (0, 1], and "
                "an allocator jaxlib does not know. " + _WHERE,
            ),
        ),
        why="jaxlib turns preallocation off only for exactly `false`, `False` or `0`, and raises "
        "ValueError at its first op for a fraction or an allocator it cannot read "
        "(jaxlib/xla_client.py, `generate_pjrt_gpu_plugin_options`).",
        example="#!/bin/bash\nexport XLA_PYTHON_CLIENT_PREALLOCATE=no\npython train.py",
        use_instead="#!/bin/bash\nexport XLA_PYTHON_CLIENT_PREALLOCATE=false\npython train.py",
        fix_safety="A no that jaxlib misreads is fixed to `false`, in its own quotes; other "
        "values are reported without a fix.",
        recovery=LAUNCH_RECOVERY,
        language="bash",
    ),
)

FAMILY = RuleFamily(
    rules=(INVALID_FORCE_GROWTH, GROWTH_FORCED_OFF, INVALID_JAX_SETTING),
    triggers=(b"TF_FORCE_GPU_ALLOW_GROWTH", b"XLA_PYTHON_CLIENT", b"XLA_CLIENT_MEM_FRACTION"),
    checker="tfmemlint.rules.launch_values.check:check",
)
