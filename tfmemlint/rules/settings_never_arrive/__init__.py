"""TFM505-TFM506: memory settings written in a launch file that never reach the process: a YAML
value that is no string, and `-e` lines cut off from their command by a comment.

The logic lives beside these pages in `check.py`.
"""

from tfmemlint.model import Rule, RuleDoc
from tfmemlint.rules.family import LAUNCH_RECOVERY, RuleFamily

NOT_A_STRING = Rule(
    code="TFM505",
    name="yaml-memory-setting-not-a-string",
    summary="A memory variable's YAML value is no string, and does not arrive as written",
    doc=RuleDoc(
        what_it_does="Finds a TensorFlow or JAX memory variable whose value in a Compose "
        "`environment:` mapping is a plain YAML boolean (`true`, `yes`, `on`), or whose "
        "`value:` in a Kubernetes container's `env:` is a plain boolean or number.",
        why="YAML reads a plain `true` as a boolean. podman-compose passes it as `True`, which "
        "TensorFlow ignores (containers/podman-compose#1317), docker-compose v1 rejects it "
        "(docker/compose#2000), and Kubernetes refuses a manifest whose `env` value is no "
        "string.",
        example="services:\n  serving:\n    image: tensorflow/serving:latest-gpu\n"
        "    environment:\n      TF_FORCE_GPU_ALLOW_GROWTH: true",
        use_instead="services:\n  serving:\n    image: tensorflow/serving:latest-gpu\n"
        '    environment:\n      TF_FORCE_GPU_ALLOW_GROWTH: "true"',
        fix_safety="Safe: the value is quoted as written, so every tool reads the string it "
        "shows; a yes or no of `TF_FORCE_GPU_ALLOW_GROWTH` is written `true` or `false`, the "
        "only spellings TensorFlow reads.",
        recovery=LAUNCH_RECOVERY,
        language="yaml",
    ),
)

ENDED_BY_COMMENT = Rule(
    code="TFM506",
    name="continued-command-ended-by-comment",
    summary="A comment line ends a continued command before its memory settings",
    fixable=False,
    doc=RuleDoc(
        what_it_does="Finds a comment line inside a backslash-continued shell command "
        "(`docker run`, `srun`, ...) where the lines after it set a TensorFlow or JAX memory "
        "variable (`-e`, `--env`, `--export=`).",
        why="The shell ends the command at the comment. The lines after it run as a command "
        "of their own, which fails, and the settings on them never reach the process, which "
        "then reserves the whole GPU.",
        example="docker run --gpus all \\\n  # let TensorFlow grow\n"
        "  -e TF_FORCE_GPU_ALLOW_GROWTH=true \\\n  my-image",
        use_instead="# let TensorFlow grow\ndocker run --gpus all \\\n"
        "  -e TF_FORCE_GPU_ALLOW_GROWTH=true \\\n  my-image",
        fix_safety="No fix: move the comment above the command, or to the end of the script.",
        recovery=LAUNCH_RECOVERY,
        language="bash",
    ),
)

FAMILY = RuleFamily(
    rules=(NOT_A_STRING, ENDED_BY_COMMENT),
    triggers=(b"TF_", b"TENSORFLOW_", b"XLA_", b"JAX_"),
    checker="tfmemlint.rules.settings_never_arrive.check:check",
)
