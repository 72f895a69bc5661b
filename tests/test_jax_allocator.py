"""JAX's allocator (TFM208-TFM211): preallocation where JAX shares the GPU, or alone (opt-in),
the values jaxlib reads, and settings made after JAX's backend started. The fixed programs are
run with the installed (CPU) JAX, and jaxlib's own parser is asked what it makes of the values
the value check judges."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import codes, fixed, lint_text, run_cli, write_notebook
from tfmemlint.checking.prefilter import ScreenedFile, code_may_have_findings, may_have_findings
from tfmemlint.configuration.settings import Policy, Settings, select_rules
from tfmemlint.reading.source import SourceText, parse_python
from tfmemlint.rules import ALL_RULES
from tfmemlint.rules.jax_allocator import screen as jax_screen

DEFAULT = Settings.default(ALL_RULES)
ALL_JAX = Settings(Policy(), select_rules(ALL_RULES, extend_select=["TFM209"]))
SHELL_SETS_IT = Settings(
    Policy(jax_preallocate=False), select_rules(ALL_RULES, extend_select=["TFM209"])
)
MAIN = '\n\nif __name__ == "__main__":\n    main()\n'
JAX_ONLY = "import jax\nimport jax.numpy as jnp\n\n\ndef main():\n    print(jnp.zeros(3))\n" + MAIN


def found(source: str, settings: Settings = DEFAULT) -> list[tuple[str, str]]:
    return [(f.code, f.message) for f in lint_text("t.py", textwrap.dedent(source), settings)]


# -- TFM208 / TFM209 -----------------------------------------------------------------------------
def test_jax_alone_is_reported_only_when_selected() -> None:
    assert codes(JAX_ONLY) == []
    [(code, message)] = found(JAX_ONLY, ALL_JAX)
    assert code == "TFM209"
    assert "nothing sets its allocator before `import jax`" in message
    assert fixed(JAX_ONLY, ALL_JAX) == (
        'import os\n\nos.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")\n' + JAX_ONLY
    )
    assert codes(fixed(JAX_ONLY, ALL_JAX), settings=ALL_JAX) == []


@pytest.mark.parametrize(
    ("imports", "why"),
    [
        ("import tensorflow as tf\n", "starts TensorFlow"),
        ("import tensorflow_datasets as tfds\n", "starts TensorFlow"),
        ("import torch\nDEVICE = 'cuda'\n", "runs PyTorch on the GPU"),
    ],
)
def test_jax_beside_another_framework_is_reported_by_default(imports: str, why: str) -> None:
    source = imports + JAX_ONLY
    [(code, message)] = [(c, m) for c, m in found(source) if c.startswith("TFM20") and c > "TFM207"]
    assert code == "TFM208"
    assert why in message


def test_pytorch_on_the_cpu_shares_no_gpu() -> None:
    assert [c for c in codes("import torch\n" + JAX_ONLY, settings=ALL_JAX)] == ["TFM209"]


def test_keras_on_jax_is_reported_by_default() -> None:
    source = (
        'import os\n\nos.environ["KERAS_BACKEND"] = "jax"\n\nimport keras\n\n\ndef main():\n'
        "    keras.Sequential([keras.layers.Dense(1)])\n" + MAIN
    )
    [(code, message)] = found(source)
    assert code == "TFM208"
    assert "Keras runs on JAX here (set in the module)" in message
    assert fixed(source).startswith(
        'import os\n\nos.environ["KERAS_BACKEND"] = "jax"\n\n'
        'os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")\nimport keras\n'
    )
    on_jax = Settings(Policy(keras_backend="jax"), select_rules(ALL_RULES))
    plain = "import keras\n\n\ndef main():\n    keras.Sequential([])\n" + MAIN
    assert codes(plain, settings=on_jax) == ["TFM208"]


@pytest.mark.parametrize(
    "configuration",
    [
        'os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"',
        'os.environ.setdefault("XLA_PYTHON_CLIENT_MEM_FRACTION", ".5")',
        'os.environ["XLA_PYTHON_CLIENT_ALLOCATOR"] = "platform"',
        'os.environ["XLA_CLIENT_MEM_FRACTION"] = "0.3"',
        'os.environ["JAX_PLATFORMS"] = "cpu"',
        'os.environ["CUDA_VISIBLE_DEVICES"] = ""',
    ],
)
def test_a_setting_or_no_gpu_is_configuration(configuration: str) -> None:
    source = f"import os\n\n{configuration}\n" + JAX_ONLY
    assert codes(source, settings=ALL_JAX) == []


def test_a_setting_in_main_is_configuration() -> None:
    source = JAX_ONLY.replace(
        "def main():\n", 'def main():\n    os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"\n'
    )
    assert codes("import os\n" + source, settings=ALL_JAX) == []


def test_jax_kept_on_the_cpu_by_its_config_is_not_reported() -> None:
    source = JAX_ONLY.replace(
        "\n\ndef main", '\njax.config.update("jax_platforms", "cpu")\n\n\ndef main'
    )
    assert codes(source, settings=ALL_JAX) == []


def test_the_shell_is_configuration_when_the_configuration_says_so() -> None:
    assert codes(JAX_ONLY, settings=SHELL_SETS_IT) == []


def test_a_library_module_is_not_a_program() -> None:
    library = "import jax.numpy as jnp\n\n\ndef loss(x):\n    return jnp.sum(x)\n"
    assert codes(library, settings=ALL_JAX) == []


def test_a_program_that_never_calls_jax_is_not_reported() -> None:
    source = "import jax\n\n\ndef main():\n    print('hello')\n" + MAIN
    assert codes(source, settings=ALL_JAX) == []


def test_a_project_module_imported_first_may_set_it(tmp_path: Path) -> None:
    (tmp_path / "setup_env.py").write_text(
        'import os\n\nos.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"\n'
    )
    script = tmp_path / "train.py"
    script.write_text("import setup_env  # noqa: F401\n" + JAX_ONLY)
    result = run_cli("--extend-select", "TFM209", "--isolated", str(script), cwd=tmp_path)
    assert result.returncode == 0, result.stdout
    script.write_text(JAX_ONLY + "import setup_env  # noqa: F401\n")
    result = run_cli("--extend-select", "TFM209", "--isolated", str(script), cwd=tmp_path)
    assert "TFM209" in result.stdout


def test_a_notebook_env_line_is_configuration(tmp_path: Path) -> None:
    configured = write_notebook(
        tmp_path / "on.ipynb",
        ["%env XLA_PYTHON_CLIENT_PREALLOCATE=false", "import jax\nprint(jax.numpy.ones(2))"],
    )
    bare = write_notebook(tmp_path / "off.ipynb", ["import jax\nprint(jax.numpy.ones(2))"])
    result = run_cli("--extend-select", "TFM209", "--isolated", str(configured), str(bare))
    assert "off.ipynb" in result.stdout
    assert "on.ipynb" not in result.stdout


def test_the_fraction_policy_sets_the_fraction() -> None:
    half = Settings(Policy(0.5), select_rules(ALL_RULES, extend_select=["TFM209"]))
    assert 'os.environ.setdefault("XLA_PYTHON_CLIENT_MEM_FRACTION", "0.5")\n' in fixed(
        JAX_ONLY, half
    )


def test_the_fix_uses_the_modules_own_os_and_keeps_isort_quiet() -> None:
    source = "import os\nimport jax\n\n\ndef main():\n    print(jax.numpy.ones(os.cpu_count()))\n"
    result = fixed(source + MAIN, ALL_JAX)
    assert result.startswith(
        'import os\n\nos.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")\nimport jax\n'
    )


def test_no_fix_where_os_is_something_else() -> None:
    source = "os = None\nimport jax\n\n\ndef main():\n    print(jax.numpy.ones(2))\n" + MAIN
    [finding] = lint_text("t.py", source, ALL_JAX)
    assert finding.code == "TFM209" and finding.fix is None


# -- TFM210 --------------------------------------------------------------------------------------
def _jaxlib_reads(**settings: str) -> str:
    """What the installed jaxlib makes of these settings (its options, or its error)."""
    program = (
        "from jaxlib import xla_client\n"
        "try:\n    print(xla_client.generate_pjrt_gpu_plugin_options())\n"
        "except ValueError as error:\n    print('ValueError', error)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("XLA_")}
    done = subprocess.run(
        [sys.executable, "-c", program],
        env={**env, **settings},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout


@pytest.mark.slow
@pytest.mark.parametrize(
    ("variable", "value", "reported"),
    [
        ("XLA_PYTHON_CLIENT_PREALLOCATE", "false", False),
        ("XLA_PYTHON_CLIENT_PREALLOCATE", "False", False),
        ("XLA_PYTHON_CLIENT_PREALLOCATE", "0", False),
        ("XLA_PYTHON_CLIENT_PREALLOCATE", "FALSE", True),
        ("XLA_PYTHON_CLIENT_PREALLOCATE", "no", True),
        ("XLA_PYTHON_CLIENT_PREALLOCATE", "true", False),
        ("XLA_PYTHON_CLIENT_MEM_FRACTION", ".5", False),
        ("XLA_PYTHON_CLIENT_MEM_FRACTION", "50%", True),
        ("XLA_PYTHON_CLIENT_MEM_FRACTION", "1.5", True),
        ("XLA_PYTHON_CLIENT_MEM_FRACTION", "0", True),
        ("XLA_PYTHON_CLIENT_ALLOCATOR", "Platform", False),
        ("XLA_PYTHON_CLIENT_ALLOCATOR", "cuda", True),
    ],
)
def test_values_as_jaxlib_reads_them(variable: str, value: str, reported: bool) -> None:
    pytest.importorskip("jaxlib")
    source = f'import os\n\nos.environ["{variable}"] = "{value}"\n'
    assert ("TFM210" in codes(source)) == reported
    read = _jaxlib_reads(**{variable: value})
    if variable.endswith("PREALLOCATE"):
        # Reported exactly where jaxlib leaves preallocation on though the value means off.
        assert ("'preallocate': False" in read) == (not reported and value != "true")
    elif not reported or "%" in value or variable.endswith("ALLOCATOR"):
        assert ("ValueError" in read) == reported


def test_a_value_that_means_no_is_fixed_in_its_own_quotes() -> None:
    source = "import os\n\nos.environ['XLA_PYTHON_CLIENT_PREALLOCATE'] = 'off'\n"
    assert fixed(source) == "import os\n\nos.environ['XLA_PYTHON_CLIENT_PREALLOCATE'] = 'false'\n"


@pytest.mark.slow
def test_both_fraction_variables_are_an_error() -> None:
    source = (
        'import os\n\nos.environ["XLA_CLIENT_MEM_FRACTION"] = ".5"\n'
        'os.environ["XLA_PYTHON_CLIENT_MEM_FRACTION"] = ".5"\n'
    )
    [(code, message)] = found(source)
    assert code == "TFM210" and "set together with XLA_CLIENT_MEM_FRACTION" in message
    pytest.importorskip("jaxlib")
    both = _jaxlib_reads(XLA_CLIENT_MEM_FRACTION=".5", XLA_PYTHON_CLIENT_MEM_FRACTION=".5")
    assert "ValueError" in both


# -- TFM211 --------------------------------------------------------------------------------------
def test_a_setting_after_jax_started_is_too_late() -> None:
    source = (
        "import os\n\nimport jax\n\nkey = jax.random.PRNGKey(0)\n"
        'os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"\n'
    )
    [(code, message)] = found(source)
    assert code == "TFM211"
    assert "after `jax.random.PRNGKey(...)` (line 5) started JAX's backend" in message


def test_a_setting_after_the_import_and_before_any_op_is_in_time() -> None:
    source = (
        "import os\n\nimport jax\n\n"
        'os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"\nkey = jax.random.PRNGKey(0)\n'
    )
    assert codes(source) == []


def test_an_env_line_in_a_cell_after_jax_started_is_too_late(tmp_path: Path) -> None:
    start = ["import jax\n", "key = jax.random.PRNGKey(0)\n"]
    env = ["%env XLA_PYTHON_CLIENT_PREALLOCATE=false\n", "print(key)\n"]
    late = run_cli("--no-cache", str(write_notebook(tmp_path / "late.ipynb", [start, env])))
    assert late.returncode == 1
    assert "late.ipynb:cell 2:1:1: TFM211 XLA_PYTHON_CLIENT_PREALLOCATE is set after" in late.stdout
    assert "`jax.random.PRNGKey(...)` (cell 1, line 2) started JAX's backend" in late.stdout
    in_time = write_notebook(tmp_path / "in_time.ipynb", [env[:1], start, env[1:]])
    assert run_cli("--no-cache", str(in_time)).returncode == 0


# -- the programs, run -----------------------------------------------------------------------------
@pytest.mark.slow
def test_fixed_jax_programs_run_and_jax_reads_the_setting(tmp_path: Path) -> None:
    pytest.importorskip("jax")
    script = tmp_path / "train.py"
    script.write_text(
        fixed(JAX_ONLY, ALL_JAX) + "\nfrom jaxlib import xla_client\n\n"
        "print(xla_client.generate_pjrt_gpu_plugin_options()['preallocate'])\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("XLA_")}
    done = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == "False"


# -- what review found ---------------------------------------------------------------------------
def test_an_os_imported_further_down_is_not_there_yet() -> None:
    source = "import sys\nimport jax\nimport os\n\n\ndef main():\n    print(jax.numpy.ones(2))\n"
    result = fixed(source + MAIN, ALL_JAX)
    assert result.startswith(
        'import os\n\nos.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")\nimport sys\n'
    )
    compile(result, "t.py", "exec")


@pytest.mark.parametrize(
    "first_line",
    ["from __future__ import annotations; import jax", '"""Doc."""; import jax'],
)
def test_no_fix_on_a_line_that_must_stay_first(first_line: str) -> None:
    source = first_line + "\n\n\ndef main():\n    print(jax.numpy.ones(2))\n" + MAIN
    [finding] = lint_text("t.py", source, ALL_JAX)
    assert finding.code == "TFM209" and finding.fix is None


def test_an_empty_allocator_is_an_error_and_branches_apart_are_no_clash() -> None:
    assert codes('import os\n\nos.environ["XLA_PYTHON_CLIENT_ALLOCATOR"] = ""\n') == ["TFM210"]
    apart = (
        "import os\nimport sys\n\nif sys.argv:\n"
        '    os.environ["XLA_PYTHON_CLIENT_MEM_FRACTION"] = ".5"\nelse:\n'
        '    os.environ["XLA_CLIENT_MEM_FRACTION"] = ".5"\n'
    )
    assert codes(apart) == []


@pytest.mark.parametrize(
    ("setting", "off"),
    [
        ('os.environ["JAX_PLATFORM_NAME"] = "cpu"', False),
        ('os.environ["JAX_PLATFORMS"] = "cpu,cuda"', False),
        ('os.environ["JAX_PLATFORMS"] = "cpu,tpu"', True),
    ],
)
def test_only_a_platform_list_without_a_gpu_keeps_jax_off_it(setting: str, off: bool) -> None:
    source = f"import os\n\n{setting}\n" + JAX_ONLY
    assert (codes(source, settings=ALL_JAX) == []) == off


def test_a_dtype_helper_starts_no_backend() -> None:
    source = (
        "import os\n\nimport jax.numpy as jnp\n\nok = jnp.issubdtype(jnp.float32, jnp.floating)\n"
        'os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"\n'
    )
    assert codes(source) == []


def test_a_value_given_as_a_keyword_is_fixed() -> None:
    source = 'import os\n\nos.environ.update(XLA_PYTHON_CLIENT_PREALLOCATE="no")\n'
    assert (
        fixed(source) == 'import os\n\nos.environ.update(XLA_PYTHON_CLIENT_PREALLOCATE="false")\n'
    )


def test_tensorflow_with_its_gpus_hidden_shares_none() -> None:
    hidden = "import tensorflow as tf\n\ntf.config.set_visible_devices([], 'GPU')\n" + JAX_ONLY
    assert codes(hidden) == []
    assert codes(hidden, settings=ALL_JAX) == ["TFM209"]


@pytest.mark.parametrize(
    "guard",
    [
        '    jax.config.update("jax_threefry_partitionable", False)\n    absltest.main()\n',
        "    pytest.main([__file__])\n",
    ],
)
def test_a_test_module_that_sets_up_its_run_is_no_program(guard: str) -> None:
    source = (
        "import jax\nimport pytest\nimport tensorflow as tf\nfrom absl.testing import absltest"
        "\n\n\ndef test_it():\n    assert jax.numpy.ones(2).sum() == 2\n\n\n"
        'if __name__ == "__main__":\n' + guard
    )
    assert codes(source, settings=ALL_JAX) == []


# -- JAX through a project module ------------------------------------------------------------------
def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    (tmp_path / ".git").mkdir(parents=True)
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text))
    return tmp_path


PIPELINE = """\
    import jax
    import tensorflow as tf


    def get_dataset(batch):
        if batch % jax.device_count():
            raise ValueError(batch)
        return tf.data.Dataset.range(batch)
"""
ENTRY = "import pipeline\n\n\ndef main():\n    pipeline.get_dataset(8)\n" + MAIN


@pytest.mark.parametrize(
    ("pipeline", "found"),
    [
        (PIPELINE, True),
        # imported where one import a line is not how it is read: CPython's tree sees it
        (
            "try: import jax\nexcept ImportError: jax = None\n"
            + textwrap.dedent(PIPELINE).replace("import jax\n", ""),
            True,
        ),
        # JAX only named, in a string and in a module name of the project's own: no program
        # reaches JAX through it, and the pre-filter no longer lets the entry through for it
        (
            'import tensorflow as tf\nFORMATS = {"jax": "jax.numpy"}\nfrom printers import jax_printer\n',
            False,
        ),
    ],
)
def test_the_pre_filter_passes_an_entry_only_for_a_module_that_imports_jax(
    tmp_path: Path, pipeline: str, found: bool
) -> None:
    """The entry names neither JAX nor TensorFlow, so only the project module it imports can
    let it through the pre-filter: one that imports JAX by name, however it spells the
    import, and not one that only names JAX in its strings or its own modules' names."""
    files = {"pipeline.py": pipeline, "train.py": ENTRY, "printers/jax_printer.py": "X = 1\n"}
    (tmp_path / "printers").mkdir()
    root = _project(tmp_path, files)
    done = run_cli("--no-cache", "--isolated", "--select", "TFM208", "-v", "train.py", cwd=root)
    assert ("train.py:1:1: TFM208" in done.stdout) is found
    passed = re.search(
        r"parsed \((?:in this process|\d+ worker processes?)\)\s+(\d+) files", done.stderr
    )
    assert passed is not None and int(passed[1]) == int(found), done.stderr


JAX_FAMILY = frozenset({"TFM208", "TFM209", "TFM210", "TFM211"})


@pytest.mark.parametrize(
    ("source", "looked_at"),
    [
        # inside longer identifiers: no import of JAX, no variable of its allocator
        (b'ICONS = "mathjax ajax"\nFLAGS = "TF_XLA_FLAGS"\n', False),
        (b"from models import netjax\n", False),
        # after `_`, a package's word may name a module of the project's
        (b"from models import net_jax\nuse_jax = True\n", True),
        # where a name, a string's text or a word begins
        (b"import jax\n", True),
        (b"from flax import linen\n", True),
        (b"import objax\n", True),
        (b"import jaxlib\n", True),
        (b'os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"\n', True),
        (b'os.environ.update(XLA_PYTHON_CLIENT_MEM_FRACTION=".5")\n', True),
        (b'os.environ["KERAS_BACKEND"] = "jax"\n', True),
        (b"# ajax, then jax\n", True),
        # a notebook's JSON, whose line break before the word is an escape
        (b'{"cells": [{"source": "x = 1\\njax.numpy.zeros(3)"}]}', True),
        # GB18030's no-break space ends in the byte of an ASCII digit
        (b'# -*- coding: gb18030 -*-\nBACKEND = "\x81\x30\x84\x32jax"\n', True),
    ],
)
def test_the_first_stage_takes_a_jax_word_only_where_a_name_or_text_begins(
    source: bytes, looked_at: bool
) -> None:
    assert may_have_findings(source, JAX_FAMILY) is looked_at


def test_a_jax_word_inside_an_identifier_is_not_parsed_and_an_entry_through_such_a_module_is(
    tmp_path: Path,
) -> None:
    """A view's `is_ajax`, a printer's `mathjax`: not JAX, so the file is never parsed. An entry
    with a `__main__` guard whose only JAX word sits inside a module's name (`netjax`) reaches
    JAX through that module, which the pre-filter's walk through the project finds: TFM208
    reports it. The module itself is no program: it is never parsed either."""
    root = _project(
        tmp_path,
        {
            "views.py": 'def render(request):\n    return "mathjax" if request.is_ajax() else ""\n',
            "netjax.py": PIPELINE,
            "train.py": ENTRY.replace("pipeline", "netjax"),
        },
    )
    done = run_cli("--no-cache", "--isolated", "-v", str(root), cwd=root)
    assert "train.py:1:1: TFM208" in done.stdout, done.stdout
    assert "views.py" not in done.stdout
    assert re.search(r"pre-filtered out +2 files", done.stderr), done.stderr
    assert re.search(r"parsed \([^)]*\) +1 files", done.stderr), done.stderr


@pytest.mark.parametrize(
    "source",
    [
        # a printer's method named for the JAX code it prints (sympy)
        "class Printer:\n    def _print_code(self, e):\n        return str(e)\n\n"
        "    _jaxcode = _print_code\n",
        # a flag, and JAX in a docstring and a string
        'def use_jax(flag=False):\n    """Whether to use jax."""\n    return "jax" if flag else ""\n',
        # an import of a module of the project's, named for JAX
        "from models import net_jax\n\nnet_jax.run()\n",
        # XLA's own names, which TensorFlow's sources hold: no allocator variable of JAX's
        'import os\n\nFLAGS = os.environ.get("XLA_FLAGS", "")\nCOMPILE = "XLA_COMPILE"\n',
        # a string that names no variable in full
        'DOC = "XLA_PYTHON_CLIENT_* settings"  # read by jax\n',
    ],
)
def test_a_module_whose_jax_words_are_no_import_nor_variable_is_set_aside_unparsed(
    source: str,
) -> None:
    """Its JAX words let it through the first stage, but it imports neither JAX nor Keras and
    sets no allocator variable: CPython's tree rules out every finding of the family, and
    libcst never parses it."""
    raw = source.encode()
    assert may_have_findings(raw, JAX_FAMILY)
    assert not code_may_have_findings(raw, JAX_FAMILY)
    assert lint_text("t.py", source, Settings(selected=JAX_FAMILY)) == []


# A library's modules that import JAX or Keras: no program, nor a setting of JAX's.
LIBRARY_MODULES = [
    "import jax.numpy as jnp\n",
    "try:\n    from flax import linen\nexcept ImportError:\n    linen = None\n",
    "def main():\n    import haiku as hk\n\n    return hk\n",
    "import keras\n\nuse_jax = True\n",
]


@pytest.mark.parametrize(
    "source",
    [
        *(module + MAIN for module in LIBRARY_MODULES),
        'import os\n\nos.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"  # use_jax\n',
        # the same in UTF-7, whose bytes spell `_` as `+AF8-`
        '# -*- coding: utf-7 -*-\nimport os\n\nos.environ["XLA+AF8-PYTHON_CLIENT_PREALLOCATE"] = "no"\n'
        "use_jax = True\n",
        # a name spelled with an escape, and one as a keyword
        'import os\n\nos.environ["XLA_PYTHON_CLIENT_PREALLOC\\x41TE"] = "no"\n',
        'import os\n\nos.environ.update(XLA_PYTHON_CLIENT_PREALLOCATE="no")\n',
    ],
)
def test_the_second_stage_passes_a_program_that_imports_jax_or_keras_or_a_variables_setting(
    source: str,
) -> None:
    assert code_may_have_findings(source.encode(), JAX_FAMILY)
    # what it passes for, TFM210 finds ("no" is no value jaxlib reads)
    if '"no"' in source:
        text = SourceText.decode(source.encode()).text
        found = lint_text("t.py", text, Settings(selected=JAX_FAMILY))
        assert [finding.code for finding in found] == ["TFM210"], found


@pytest.mark.parametrize("source", LIBRARY_MODULES)
def test_a_library_module_that_imports_jax_is_set_aside_unparsed(source: str) -> None:
    """TFM208 and TFM209 report a program only, and TFM210 and TFM211 a setting: a module that
    imports JAX but is surely no program (`entry_screen.may_be_an_entry`) and sets nothing is
    never parsed (google/flax: 299 of its modules)."""
    raw = source.encode()
    assert may_have_findings(raw, JAX_FAMILY)
    assert not code_may_have_findings(raw, JAX_FAMILY)


def test_a_module_with_no_way_to_jax_never_asks_whether_it_is_a_program(tmp_path: Path) -> None:
    """A JAX word in a comment brings a module to the screen, which sets it aside on its
    imports: it never loads the screen of entry points, nor reads pyproject.toml's scripts."""
    root = _project(
        tmp_path,
        {
            "pyproject.toml": '[project]\nname = "p"\n[project.scripts]\nrun = "p.cli:main"\n',
            "p/__init__.py": "",
            "p/notes.py": "# this may use jax some day\nx = 1\n",
        },
    )
    probe = (
        "import sys\n"
        "from tfmemlint.faces.cli import main\n"
        "sys.argv = ['tfmemlint', 'check', '--no-cache', '--isolated', '-q', sys.argv[1]]\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted({'tfmemlint.rules.entry_screen', 'tomllib'} & set(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(root / "p" / "notes.py")],
        capture_output=True,
        text=True,
        cwd=root,
    )
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout + done.stderr


def test_a_module_run_by_a_script_entry_is_a_program_to_the_screen(tmp_path: Path) -> None:
    """A function that a script entry of pyproject.toml runs makes its module an entry point,
    which the screen of entry points leaves to its caller: JAX's screen asks the project."""
    library = "import jax\n\n\ndef main():\n    print(jax.numpy.zeros(3))\n"
    root = _project(tmp_path, {"p/__init__.py": "", "p/cli.py": library})
    args = ("--no-cache", "--isolated", "--extend-select", "TFM209", str(root))
    assert "TFM209" not in run_cli(*args, cwd=root).stdout
    (root / "pyproject.toml").write_text(
        '[project]\nname = "p"\n[project.scripts]\nrun = "p.cli:main"\n'
    )
    done = run_cli(*args, cwd=root)
    assert "cli.py:1:1: TFM209" in done.stdout, done.stdout


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        # A lone CR ends the first line: Python's `tokenize`, which the rules' text comes
        # from, reads the UTF-7 declaration after it, and CPython's parse does not.
        (
            b"#!/usr/bin/env python\rimport os  # coding: utf-7\n"
            b'os.environ["XLA+AF8-PYTHON+AF8-CLIENT+AF8-PREALLOCATE"] = "no"\n# XLA_ settings\n',
            "TFM210",
        ),
        # A first line that is not UTF-8: CPython reads the declaration after it, `tokenize`
        # refuses the file, and the engine reports that.
        (
            b"# caf\xe9\n# -*- coding: latin-1 -*-\nimport os\n\n"
            b'FLAGS = os.environ.get("XLA_FLAGS", "")\n',
            "TFM906",
        ),
        # A stateful codec: Python's decode keeps the Korean shift over a lone CR, and reads
        # `""""<` as two symbols; CPython's parse makes the CR a line break first, which ends
        # the shift, and reads a string that holds the setting.
        (
            b"# -*- coding: iso2022_kr -*-\n# \x1b$)C\nimport os\n"
            b'X = """\x0e\x30\x21\r\x22\x22\x22\x3c\x0f"""\n'
            b'os.environ["XLA_PYTHON_CLIENT_PREALLOC\\x41TE"] = "no"\n# """\n',
            "TFM210",
        ),
    ],
)
def test_the_screen_passes_a_module_whose_syntax_tree_may_not_spell_its_text(
    tmp_path: Path, raw: bytes, code: str
) -> None:
    """Where CPython's parse of the bytes may decode them otherwise than the text the rules
    read, or that text cannot be read, the screen trusts no tree: the file goes on. (The
    screen is asked itself as well: a declared `utf-7` or `iso2022_kr` skips the whole
    pre-filter.)"""
    assert jax_screen.may_find(parse_python(raw), ScreenedFile(raw))
    (tmp_path / "t.py").write_bytes(raw)
    done = run_cli("--no-cache", "--isolated", "--output-format", "json", "t.py", cwd=tmp_path)
    assert [finding["code"] for finding in json.loads(done.stdout)] == [code], done.stderr


def test_an_entry_whose_jax_words_are_a_modules_name_is_still_followed_through_the_project(
    tmp_path: Path,
) -> None:
    """The entry imports `net_jax`, a module of the project's: the second stage sets the entry
    aside (it imports no JAX itself), and the pre-filter's walk through the project, which the
    entry's words call for, finds JAX in that module: TFM208, as before."""
    root = _project(
        tmp_path, {"net_jax.py": PIPELINE, "train.py": ENTRY.replace("pipeline", "net_jax")}
    )
    for selection in ([], ["--select", "TFM208"]):
        done = run_cli("--no-cache", "--isolated", *selection, str(root), cwd=root)
        assert "train.py:1:1: TFM208" in done.stdout, done.stdout


NETMOD = "import jax\nimport tensorflow as tf\n\n\ndef run():\n    return jax.numpy.zeros(3)\n"


@pytest.mark.parametrize(
    ("files", "found"),
    [
        # a script that runs at its module level, with no `__main__` guard
        (
            {
                "netmod.py": NETMOD,
                "train.py": "# Trains with jax.\nfrom netmod import run\n\nrun()\n",
            },
            "train.py:2:1: TFM208",
        ),
        # the module imported on a continued line
        (
            {
                "pkg/__init__.py": "",
                "pkg/netmod.py": NETMOD,
                "train.py": '"""Trains the jax model."""\nfrom pkg import (\n    netmod,\n)\n\n'
                + 'if __name__ == "__main__":\n    netmod.run()\n',
            },
            "train.py:2:1: TFM208",
        ),
        # a script entry of pyproject.toml
        (
            {
                "pyproject.toml": '[project]\nname = "proj"\nversion = "0"\n\n'
                '[project.scripts]\ntrain = "proj.train:main"\n',
                "proj/__init__.py": "",
                "proj/netmod.py": NETMOD,
                "proj/train.py": '"""Trains the jax model."""\nfrom proj.netmod import run\n\n\n'
                "def main():\n    run()\n",
            },
            f"{os.path.join('proj', 'train.py')}:2:1: TFM208",
        ),
        # a relative import from the package above, which the rule starts from where
        # `module_of` takes it (the importing file's own package), beside PyTorch on the GPU
        (
            {
                "pkg/__init__.py": "def helper():\n    pass\n",
                "pkg/sub/__init__.py": "from . import model\n",
                "pkg/sub/model.py": "import jax\n\n\ndef run():\n    return jax.numpy.zeros(3)\n",
                "pkg/sub/run.py": "# Runs the model on jax.\nimport torch\nfrom .. import helper\n\n"
                'if __name__ == "__main__":\n    torch.cuda.init()\n',
            },
            f"{os.path.join('pkg', 'sub', 'run.py')}:3:1: TFM208",
        ),
    ],
)
def test_an_entry_whose_jax_words_are_no_import_is_walked_through_the_project_as_the_rule_walks(
    tmp_path: Path, files: dict[str, str], found: str
) -> None:
    """Its JAX words are a comment's or a docstring's, and it reaches JAX through a project
    module: the second stage walks each project module it imports, as the rule does, where
    the pre-filter's own walk reads one import a line and only entries with a guard or a
    runner."""
    root = _project(tmp_path, files)
    done = run_cli("--no-cache", "--isolated", str(root), cwd=root)
    assert found in done.stdout, done.stdout


def test_a_set_aside_entry_is_checked_again_once_a_module_it_walks_to_imports_jax(
    tmp_path: Path,
) -> None:
    """The second stage's walk through the project is what the cached verdict rests on: once
    a module that the entry reaches only through another starts importing JAX, the entry is
    looked at again."""
    root = _project(
        tmp_path / "project",
        {
            "netmod.py": "import tensorflow as tf\nfrom deep import run\n",
            "deep.py": "import tensorflow as tf\n",
            "train.py": "# jax\nimport netmod\n\nnetmod.run()\n",
        },
    )
    cache = tmp_path / "cache"
    first = run_cli("--isolated", "--cache-dir", str(cache), str(root), cwd=root)
    assert "TFM208" not in first.stdout, first.stdout
    (root / "deep.py").write_text(NETMOD)
    second = run_cli("--isolated", "--cache-dir", str(cache), str(root), cwd=root)
    assert "train.py:2:1: TFM208" in second.stdout, second.stdout


def test_a_notebooks_env_line_after_jax_started_through_the_project_is_reported(
    tmp_path: Path,
) -> None:
    """A notebook's `%env` lines are no longer in its code's bytes: the second stage lets
    every notebook through, and TFM211 judges the line also when it alone is selected."""
    root = _project(tmp_path, {"jax_utils.py": "import jax.numpy as jnp\n"})
    cells = [
        "from jax_utils import jnp",
        "x = jnp.zeros(3)",
        "%env XLA_PYTHON_CLIENT_PREALLOCATE=false",
    ]
    write_notebook(root / "nb.ipynb", cells)
    done = run_cli("--no-cache", "--isolated", "--select", "TFM211", str(root), cwd=root)
    assert "nb.ipynb:cell 3:1:1: TFM211" in done.stdout, done.stdout


def test_jax_reached_through_a_project_module_is_reported_at_its_import(tmp_path: Path) -> None:
    """An entry whose own file names neither JAX nor TensorFlow, whose project module asks JAX
    for its devices and builds a tf.data pipeline: TFM208 at the entry's import of that module,
    also when TFM208 alone is selected (the pre-filter passes it), and fixed before it."""
    root = _project(
        tmp_path,
        {"pipeline.py": PIPELINE, "train.py": ENTRY, "tf_train.py": "import tensorflow\n" + ENTRY},
    )
    for selection in ([], ["--select", "TFM208"]):
        done = run_cli("--no-cache", "--isolated", *selection, str(root), cwd=root)
        assert "train.py:1:1: TFM208" in done.stdout
        assert "tf_train.py:2:1: TFM208" in done.stdout
        assert "through which the program reaches JAX (`pipeline.py`)" in done.stdout
    assert (
        run_cli("--no-cache", "--isolated", "--select", "TFM208", "--fix", str(root)).returncode
        == 0
    )
    assert (root / "train.py").read_text() == (
        'import os\n\nos.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")\n' + ENTRY
    )


@pytest.mark.parametrize(
    "files",
    [
        # the module on the way sets JAX's allocator before it imports JAX
        {
            "pipeline.py": 'import os\nos.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"\n'
            + textwrap.dedent(PIPELINE)
        },
        # a project module the entry imports keeps JAX on the CPU
        {
            "pipeline.py": PIPELINE,
            "cpu.py": 'import os\nos.environ["JAX_PLATFORMS"] = "cpu"\n',
            "train.py": "import cpu\n" + ENTRY,
        },
        # JAX imported, never called
        {"pipeline.py": PIPELINE.replace("jax.device_count()", "2")},
        # JAX alone: TFM209's, which is opt-in
        {
            "pipeline.py": "import jax\n\n\ndef get_dataset(batch):\n    return jax.numpy.arange(batch)\n"
        },
        # a library module that imports the pipeline is no program
        {
            "pipeline.py": PIPELINE,
            "train.py": "import pipeline\n\n\ndef main():\n    pipeline.get_dataset(8)\n",
        },
    ],
)
def test_jax_through_the_project_that_is_set_up_or_not_a_program(
    tmp_path: Path, files: dict[str, str]
) -> None:
    root = _project(tmp_path, {"train.py": ENTRY, **files})
    done = run_cli("--no-cache", "--isolated", str(root), cwd=root)
    assert "TFM208" not in done.stdout, done.stdout
