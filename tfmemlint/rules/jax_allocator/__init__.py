"""TFM208-TFM211: JAX's allocator, the seed's problem in the other framework Keras runs on. JAX
reserves 75 % of every GPU when its GPU backend starts (at its first op, not at import), unless
`XLA_PYTHON_CLIENT_PREALLOCATE`, a memory fraction or `XLA_PYTHON_CLIENT_ALLOCATOR=platform` say
otherwise; it reads them then, from the process environment.

The logic lives beside these pages in `check.py`.
"""

import re

from tfmemlint.model import Rule, RuleDoc
from tfmemlint.rules.family import (
    LOOKS_AT,
    PROGRAM,
    RECOVERED_FIX,
    SEE_PROGRAMS,
    RuleFamily,
    within_lines,
)

_SOURCE = (
    "JAX reads its allocator's variables once, when its GPU backend starts "
    "(jaxlib/xla_client.py, `generate_pjrt_gpu_plugin_options`; JAX's page \"GPU memory "
    'allocation"). '
)
_WHERE = (
    "A program is a notebook, or a module with a `__main__` guard (not a test suite's), a "
    "runner (`absl.app.run`, `fire.Fire`, `typer.run`), a click or typer command, a script "
    "entry of pyproject.toml, or Keras training at module level; JAX is one of its imports "
    "(jax, flax, haiku, optax, equinox, objax, orbax, chex, jraph), or Keras on the JAX "
    "backend, read as TFM206 reads it, and the module calls into it; a test module whose "
    "`__main__` guard ends by running its tests is none. Counted as configured: "
    "any setting of `XLA_PYTHON_CLIENT_PREALLOCATE`, `XLA_PYTHON_CLIENT_MEM_FRACTION`, "
    "`XLA_CLIENT_MEM_FRACTION` or `XLA_PYTHON_CLIENT_ALLOCATOR` in the module (TFM210 checks "
    "its value) or in a notebook's `%env` line; a project module imported before JAX that "
    "sets one; the configuration's `jax-preallocate = false`, for a shell or a job script "
    "that sets them. Not reported: JAX kept off the GPU (`JAX_PLATFORMS` listing only `cpu` or "
    '`tpu`, `jax.config.update("jax_platforms", "cpu")`, `CUDA_VISIBLE_DEVICES=""` or '
    '`"-1"`; `JAX_PLATFORM_NAME` only picks the default backend, and JAX still starts '
    "CUDA's)."
)
_FIX = (
    'Adds `os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")` on the line '
    "before the module's first import of JAX (or of Keras, where Keras runs on JAX), with "
    "`import os` above it when the module has not imported `os` by then; under "
    '`--policy fraction=F`, `os.environ.setdefault("XLA_PYTHON_CLIENT_MEM_FRACTION", "F")`. '
    "`setdefault`: a value the shell gives wins. Safe: JAX reads the variable when its "
    "backend starts, after any import. ruff accepts an `os.environ` setting between imports "
    "(E402); flake8 reports the imports below it as E402. No fix where that import is not a "
    "statement of its own in the module body."
)
_RECOVERY = "As TFM205. " + RECOVERED_FIX

SHARED_GPU_PREALLOCATION = Rule(
    code="TFM208",
    name="jax-preallocates-shared-gpu",
    summary="JAX preallocates 75 % of every GPU, in a program that shares it",
    doc=RuleDoc(
        what_it_does="Finds a program that starts JAX on the GPU with preallocation on, where the "
        "GPU is shared: with TensorFlow, with PyTorch on the GPU, or with Keras running "
        "on JAX.",
        details=(
            (
                PROGRAM,
                "Finds a program that starts JAX on the GPU with preallocation on, where "
                "Keras runs on JAX, or where the same program also starts TensorFlow with the GPUs "
                "visible to it (it imports TensorFlow or a library that starts it, such as tfds, "
                "itself or through a project module it imports, and does not hide every GPU from "
                "it: TFM207's fix does) or uses PyTorch on the GPU (it "
                "imports torch and says `cuda`). A program that reaches JAX only through a project "
                "module (one it imports, itself or in turn, that imports JAX and calls into it) is "
                "reported at its import of the module it comes through, unless a module on the way "
                "names JAX's allocator, platform or `CUDA_VISIBLE_DEVICES`. "
                + _WHERE
                + " "
                + SEE_PROGRAMS,
            ),
        ),
        why=_SOURCE + "With no setting JAX reserves 75 % of each GPU's total memory at its "
        "first op. The framework that shares the process then runs out of memory, or fails "
        "with `CUBLAS_STATUS_NOT_INITIALIZED` (google/flax#445, "
        "google-deepmind/dm-haiku#132), and so does every other job on a shared GPU; a user "
        "who moved Keras from TensorFlow to JAX meets the preallocation they had turned off "
        "in TensorFlow again.",
        example="import jax\nimport tensorflow_datasets as tfds\n\n"
        'if __name__ == "__main__":\n    ds = tfds.load("mnist")\n'
        "    print(jax.numpy.zeros(3))",
        use_instead='import os\n\nos.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", '
        '"false")\nimport jax\nimport tensorflow_datasets as tfds\n\n'
        'if __name__ == "__main__":\n    ds = tfds.load("mnist")\n'
        "    print(jax.numpy.zeros(3))",
        fix_safety=_FIX,
        recovery=_RECOVERY,
    ),
)

PREALLOCATION = Rule(
    code="TFM209",
    name="jax-preallocates",
    summary="A JAX program preallocates 75 % of every GPU",
    doc=RuleDoc(
        what_it_does="Finds a program that starts JAX on the GPU with preallocation on, where "
        "JAX is the only framework. Off by default: turn it on where programs share GPUs.",
        details=(
            (
                PROGRAM,
                "Finds a program that starts JAX on the GPU with preallocation on, where "
                "JAX is the only framework (TFM208 reports the others). Off by default: "
                "preallocation is JAX's chosen default, faster for a program that has the GPU to "
                "itself. Turn it on with `--extend-select TFM209` where programs share GPUs. "
                + _WHERE
                + " "
                + SEE_PROGRAMS,
            ),
        ),
        why=_SOURCE + "With no setting JAX reserves 75 % of each GPU's total memory at its "
        "first op, whatever the program needs: on a shared GPU every other job then runs "
        "out of memory.",
        example='import jax\n\nif __name__ == "__main__":\n    print(jax.numpy.zeros(3))',
        use_instead='import os\n\nos.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", '
        '"false")\nimport jax\n\n'
        'if __name__ == "__main__":\n    print(jax.numpy.zeros(3))',
        fix_safety=_FIX,
        recovery=_RECOVERY,
    ),
    enabled_by_default=False,
)

INVALID_SETTING = Rule(
    code="TFM210",
    name="invalid-jax-memory-setting",
    summary="A JAX allocator variable is set to a value JAX does not read as meant",
    doc=RuleDoc(
        what_it_does="Finds JAX's allocator variables set in Python to values jaxlib misreads or "
        "refuses: a no it reads as yes, a fraction that is no number or out of range, "
        "an unknown allocator.",
        details=(
            (
                LOOKS_AT,
                "Finds, wherever the module sets them: `XLA_PYTHON_CLIENT_PREALLOCATE` set to a "
                'value that means no but is not `"false"`, `"False"` or `"0"` (such as `"FALSE"`, '
                '`"no"`, `"off"`); `XLA_PYTHON_CLIENT_MEM_FRACTION` or `XLA_CLIENT_MEM_FRACTION` '
                "set to text that is no number, or to a fraction outside (0, 1]; both fraction "
                "variables set (not in two branches of which one runs); "
                '`XLA_PYTHON_CLIENT_ALLOCATOR` set to other than `"default"`, `"platform"`, '
                '`"bfc"`, `"cuda_async"` or `"vmm"` (the empty text too, which jaxlib does not '
                "take for unset).",
            ),
        ),
        why=_SOURCE + 'It turns preallocation off only for exactly "false", "False" or '
        '"0"; any other value leaves it on. It reads a fraction with `float()`, and an '
        "allocator from its list: anything else raises ValueError when the backend starts. "
        "Recent jaxlib (0.10.2, read here) also reads `XLA_CLIENT_MEM_FRACTION`, and raises "
        "ValueError when both fraction variables are set. A fraction above 1 asks for more "
        "memory than "
        "the GPU has; 0 or less, for none.",
        example='import os\n\nos.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "FALSE"',
        use_instead='import os\n\nos.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"',
        fix_safety="Safe for a `XLA_PYTHON_CLIENT_PREALLOCATE` value that plainly means no "
        '(`FALSE`, `no`, `n`, `off`), fixed to `"false"`: the meaning you wrote is kept. The '
        "other findings have no fix: which value you meant is yours to say.",
        recovery="In a file that needed recovery (TFM904, TFM902), a setting inside a "
        "set-aside statement is not seen. " + RECOVERED_FIX,
    ),
)

CONFIGURED_AFTER_START = Rule(
    code="TFM211",
    name="jax-configured-after-start",
    summary="A JAX allocator variable is set after JAX's backend started",
    doc=RuleDoc(
        what_it_does="Finds a JAX allocator variable set after a call at module level that already "
        "started JAX's backend, which read its settings once, there.",
        details=(
            (
                LOOKS_AT,
                "Finds a JAX allocator variable (`XLA_PYTHON_CLIENT_PREALLOCATE`, a memory "
                "fraction, `XLA_PYTHON_CLIENT_ALLOCATOR`) set in the module body after a call at "
                "module level that starts JAX's backend: a `jax.numpy` call (not its dtype "
                "helpers, such as `jnp.issubdtype`) or a `jax.random` call, `jax.devices`, "
                "`jax.local_devices`, `jax.device_count`, `jax.device_put`, `jax.default_backend` "
                "(in a notebook, in a later cell, where a `%env` line counts too). An import of "
                "JAX starts nothing: a setting after `import jax` and before the first op is in "
                "time.",
            ),
        ),
        why=_SOURCE + "Set after the backend started, the variable changes nothing: the "
        "75 % is already reserved.",
        example="import os\n\nimport jax\n\nkey = jax.random.PRNGKey(0)\n"
        'os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"',
        use_instead='import os\n\nimport jax\n\nos.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = '
        '"false"\nkey = jax.random.PRNGKey(0)',
        fix_safety="No fix: moving the setting above the call can change what the lines "
        "between them do. Move it yourself, above the module's first import of JAX.",
        recovery="In a file that needed recovery (TFM904, TFM902), a setting or a call "
        "inside a set-aside statement is not seen. " + RECOVERED_FIX,
    ),
    fixable=False,
)

# JAX's packages by name, and its variables. A Keras program that the configuration alone puts
# on JAX (`keras-backend = "jax"`) names neither: it is parsed for TFM205, whose words are an
# entry point's, and this family's checker runs on every file parsed.
VARIABLES_PREFIX = b"XLA_"
_TRIGGERS = (b"jax", b"flax", b"haiku", b"equinox", b"objax", VARIABLES_PREFIX)
_MODULE_WORDS = b"(?:" + b"|".join(w for w in _TRIGGERS if w != VARIABLES_PREFIX) + b")"
# What the first stage cuts out: an identifier, from its start, up to a package's word right
# after one of its letters or digits (Django's `ajax`, a printer's `mathjax`), or up to an
# allocator variable's prefix inside it (TensorFlow's `TF_XLA_FLAGS`). An import of JAX and a
# variable JAX reads begin a name or a string's text. A package's word after `_` is left
# (`use_jax`, `net_jax`) where nothing after it in the identifier is cut: a project module may
# be named so, and the word has long let such a program through. An identifier starts only
# after an ASCII byte that is no word's: not after a backslash (a notebook's JSON writes a line
# break as `\n`), nor after a byte of a character in a multi-byte encoding (GB18030's last
# bytes may be ASCII digits).
INSIDE_AN_IDENTIFIER = within_lines(
    re.compile(
        rb"(?<![\\\w\x80-\xff])(?!(?:"
        + b"|".join(_TRIGGERS)
        + rb"))(?:\w*?[A-Za-z0-9]"
        + _MODULE_WORDS
        + rb"|\w+?"
        + VARIABLES_PREFIX
        + rb")"
    )
)

FAMILY = RuleFamily(
    rules=(SHARED_GPU_PREALLOCATION, PREALLOCATION, INVALID_SETTING, CONFIGURED_AFTER_START),
    triggers=_TRIGGERS,
    checker="tfmemlint.rules.jax_allocator.check:check",
    through_project=False,  # the imports and settings it reads are the module's own
    screen="tfmemlint.rules.jax_allocator.screen:may_find",  # a word inside another name
    settled_by_fixes="tfmemlint.rules.jax_allocator.check:settled_by_fixes",
    inert=INSIDE_AN_IDENTIFIER,
)
