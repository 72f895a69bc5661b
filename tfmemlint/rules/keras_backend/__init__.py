"""TFM206: Keras's backend chosen after Keras was imported, which Keras never reads.

The logic lives beside this page in `check.py`; how the backend is read, in
`tfmemlint/rules/backends.py`.
"""

from tfmemlint.model import Rule, RuleDoc
from tfmemlint.rules.family import RECOVERED_FIX, RuleFamily

BACKEND_SET_TOO_LATE = Rule(
    code="TFM206",
    name="keras-backend-set-too-late",
    summary="KERAS_BACKEND is set after Keras was imported, and has no effect",
    doc=RuleDoc(
        what_it_does="Finds `KERAS_BACKEND` set in the module body (through "
        "`os.environ[...] =`, `os.environ.setdefault`, `os.environ.update` or `os.putenv`) "
        "after the module imported Keras, or a package that imports it (keras-hub, "
        "keras-nlp, keras-cv, keras-tuner): in a script, further down; in a notebook, in a "
        "later cell, a `%env KERAS_BACKEND=...` line among them. A later setting to the "
        "backend Keras already runs on is not reported.",
        why="Keras 3 reads its backend once, when it is imported (keras/src/backend/config.py; "
        "keras-team/keras-core#749, keras-team/keras#19423). Set afterwards, the variable "
        "changes nothing: the program silently runs on TensorFlow, Keras's default, whose "
        "runtime reserves nearly all of every GPU, or on whatever the backend was before.",
        example='import os\n\nimport keras\n\nos.environ["KERAS_BACKEND"] = "jax"',
        use_instead='import os\n\nos.environ["KERAS_BACKEND"] = "jax"\n\nimport keras',
        fix_safety="No fix: moving the setting, or the import, above the other can change "
        "what the lines between them do. Move it yourself, above the first import of Keras "
        "(ruff does not count an `os.environ` setting among imports as code, E402).",
        recovery="In a file that needed recovery (TFM904, TFM902), an import or a setting "
        "inside a set-aside statement is not seen. " + RECOVERED_FIX,
    ),
    fixable=False,
)

FAMILY = RuleFamily(
    rules=(BACKEND_SET_TOO_LATE,),
    triggers=(b"KERAS_BACKEND",),
    modules=(b"keras",),
    checker="tfmemlint.rules.keras_backend.check:check",
    through_project=False,  # the import it reads is the module's own
    settled_by_fixes="tfmemlint.rules.keras_backend.check:settled_by_fixes",
)
