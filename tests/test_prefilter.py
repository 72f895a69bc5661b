"""The pre-filter's two stages: words in the bytes, then names in the compiled code. Every rule
test also checks that neither stage hides a finding (tests.conftest.lint_text)."""

from __future__ import annotations

import ast
import contextlib
import json
import re
from pathlib import Path

import hypothesmith
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.conftest import BEFORE, lint_text, run_cli, write_notebook
from tfmemlint.checking import engine, prefilter
from tfmemlint.checking.engine import UnfaithfulParseError
from tfmemlint.checking.prefilter import code_may_have_findings, may_have_findings
from tfmemlint.configuration.settings import Settings, select_rules
from tfmemlint.project import module_summary
from tfmemlint.project.module_summary import imports_in_lines
from tfmemlint.reading.source import SourceError, SourceText
from tfmemlint.rules import ALL_RULES, FAMILIES, family
from tfmemlint.rules.family import holds_a_trigger
from tfmemlint.rules.jax_allocator import FAMILY as JAX_FAMILY
from tfmemlint.rules.jax_allocator import INSIDE_AN_IDENTIFIER

DEFAULT = select_rules(ALL_RULES)
EVERYTHING = select_rules(ALL_RULES, extend_select=["TFM"])


def passes(raw: bytes, selected: frozenset[str]) -> bool:
    """Both stages, as the runner applies them to Python source."""
    return may_have_findings(raw, selected) and code_may_have_findings(raw, selected)


def test_prefilter_follows_the_selection() -> None:
    """A file that only one rule could flag is parsed only when that rule is selected."""
    raw = b'import tensorflow as tf\nif __name__ == "__main__":\n    print(tf.ones([2]))\n'
    assert not may_have_findings(
        raw, select_rules(ALL_RULES, ignore=["TFM205", "TFM207", "TFM212"])
    )
    # TFM207 (TensorFlow as a guest) and TFM212 start from the same words as TFM205
    assert may_have_findings(raw, select_rules(ALL_RULES, ignore=["TFM205"]))
    assert may_have_findings(raw, select_rules(ALL_RULES, ignore=["TFM205", "TFM207"]))
    assert may_have_findings(raw, DEFAULT)
    # Its `"__main__"` is a string: then the family's words are looked for in the bytes alone.
    assert code_may_have_findings(raw, DEFAULT)
    assert may_have_findings(b"import tensorflow as tf\ns = tf.Session()\n", DEFAULT)
    assert not may_have_findings(b"import os\n", EVERYTHING)


def test_prefilter_needs_a_tensorflow_module_for_name_resolving_rules() -> None:
    """`Session` in a Django or SQLAlchemy file cannot be TensorFlow's: names resolve only from
    the file's own imports. TF_FORCE_GPU_ALLOW_GROWTH needs no import to be wrong."""
    assert not may_have_findings(b"from django import x\nx.Session()\n", EVERYTHING)
    assert not may_have_findings(b"class Server:\n    slim = 1\n", EVERYTHING)
    for module in (b"import tensorflow as tf", b"from keras import backend", b"import tf_slim"):
        assert may_have_findings(module + b"\nsess = Session()\n", EVERYTHING)
    assert may_have_findings(b'os.environ["TF_FORCE_GPU_ALLOW_GROWTH"] = "1"\n', EVERYTHING)


def test_tensorflow_modules_cover_every_namespace_the_rules_resolve() -> None:
    """The pre-filter's module words and the name table's namespaces must not drift apart."""
    from tfmemlint.rules.family import TENSORFLOW_MODULES
    from tfmemlint.rules.tensorflow_api import _PUBLIC_PREFIXES, canonical_api

    for prefix in _PUBLIC_PREFIXES:
        assert any(module.decode() in prefix for module in TENSORFLOW_MODULES), prefix
    for outside in ("django.contrib.sessions.Session", "requests.Session", "sqlalchemy.Session"):
        assert canonical_api(outside) is None


@pytest.mark.parametrize(
    "source",
    [
        '"""Call tf.Session() once."""\nimport tensorflow as tf\n',
        "import tensorflow as tf\n# sess = tf.Session()\n",
        "import tensorflow as tf\nUSAGE = 'tf.Session()'\n",
        "import tensorflow as tf\nclass Hook(tf.train.SessionRunHook):\n    pass\n",
        "import tensorflow.contrib.slim as slim\nnet = slim.conv2d(x, 3)\nmodel.train()\n",
        "import tensorflow as tf\ndef watch(Supervisor):\n    return Supervisor\n",
    ],
)
def test_words_outside_the_code_pass_only_the_first_stage(source: str) -> None:
    """The byte stage sees the word; the compiled code never uses the API, and neither does
    libcst's account of it."""
    raw = source.encode()
    assert may_have_findings(raw, EVERYTHING)
    assert not code_may_have_findings(raw, EVERYTHING)
    assert lint_text("t.py", source, Settings(selected=EVERYTHING)) == []


@pytest.mark.parametrize(
    "source",
    [
        "from tensorflow import Session as S\nS()\n",
        "import tensorflow as tf\nS = tf.compat.v1.Session\nS()\n",
        "from tensorflow.compat.v1 import *\nSession()\n",
        "import tensorflow.contrib.slim as slim\nslim.learning.train(op, '/tmp')\n",
        "from tensorflow.contrib.slim import learning as L\nL.train(op, '/tmp')\n",
        "from tensorflow.python.training import server_lib\nserver_lib.Server(spec)\n",
        "import tensorflow as tf\nif False:\n    sess = tf.Session()\n",
        "import tensorflow as tf\ndef f():\n    return\n    tf.Session()\n",
        "import tensorflow as tf\nx = f'{tf.Session()}'\n",
        "import tensorflow as tf\nsv = tf.train.Supervisor()\nsv.managed_session()\n",
        "import keras.backend as K\nK.set_session(s)\n",
        "import tensorflow as tf\ntf.config.experimental.set_memory_growth(gpus[0], True)\n",
    ],
)
def test_every_way_to_name_an_api_passes(source: str) -> None:
    assert passes(source.encode(), EVERYTHING)


def test_source_cpython_cannot_compile_goes_on_to_libcst() -> None:
    """`return` outside a function: CPython's compiler refuses it, libcst parses it, and the
    session in it is reported."""
    source = "import tensorflow as tf\nreturn 1\nsess = tf.Session()\n"
    assert passes(source.encode(), DEFAULT)
    assert [f.code for f in lint_text("t.py", source, Settings(selected=DEFAULT))] == ["TFM101"]


def test_the_names_come_from_the_text_the_rules_read(tmp_path: Path) -> None:
    """The import of TensorFlow is code in the text the rules read; CPython, which makes a lone
    CR a line break before it decodes the stateful `iso2022_kr`, reads it inside a string. The
    second stage once compiled the bytes as CPython reads them, found no `tensorflow` among
    the names, and set the session aside unreported."""
    raw = (
        b"# -*- coding: iso2022_kr -*-\n# \x1b$)C\n"
        b'X = """\x0e\x30\x21\r\x22\x22\x22\x3c\x0f"""\nimport tensorflow as tf\n# """\n'
        b"sess = tf.Session()\n"
    )
    assert "tensorflow" not in compile(raw, "t.py", "exec").co_names  # CPython's own reading
    assert passes(raw, DEFAULT)
    (tmp_path / "train.py").write_bytes(raw)
    done = run_cli("--no-cache", "--isolated", "--output-format", "json", ".", cwd=tmp_path)
    assert [finding["code"] for finding in json.loads(done.stdout)] == ["TFM101"], done.stderr


@pytest.mark.parametrize(
    "raw",
    [
        b"# coding: utf-7\nimport +AHQ-ensorflow as tf\nsess = tf.+AFM-ession()\n",
        b"# coding: unicode_escape\nimport \\x74ensorflow as tf\nsess = tf.\\x53ession()\n",
        # Stateful encodings: a shift that changes nothing reads as nothing inside a word.
        b"# -*- coding: iso2022_jp -*-\nimport ten\x1b(Bsorflow as tf\nsess = tf.Ses\x1b(Bsion()\n",
        b"# coding: iso2022_kr\nimport ten\x0e\x0fsorflow as tf\nsess = tf.Ses\x0e\x0fsion()\n",
        b"# coding: hz\nimport ten~\nsorflow as tf\nsess = tf.Ses~\nsion()\n",
    ],
)
def test_words_spelled_in_other_bytes_are_still_found(tmp_path: Path, raw: bytes) -> None:
    """The file declares an encoding that may spell ASCII with other bytes: no search of the
    bytes can rule a finding out, and the session in the text is reported."""
    assert b"tensorflow" not in raw and b"Session" not in raw
    (tmp_path / "train.py").write_bytes(raw)
    done = run_cli("--no-cache", "--isolated", "--output-format", "json", ".", cwd=tmp_path)
    assert [finding["code"] for finding in json.loads(done.stdout)] == ["TFM101"], done.stderr


def test_an_encoding_that_keeps_ascii_keeps_the_byte_search() -> None:
    """Latin-1, GBK or UTF-8 declared (after a BOM too): each ASCII word is its own bytes,
    and a file that holds none of the words is still set aside on them."""
    declared = ("latin-1", "gbk", "utf-8", "cp1252", "shift_jis")
    files = [f"# -*- coding: {encoding} -*-\nx = 1\n".encode() for encoding in declared]
    for raw in [*files, b"\xef\xbb\xbf# -*- coding: utf-8 -*-\nx = 1\n"]:
        assert not may_have_findings(raw, EVERYTHING)
        assert prefilter.first_stage(raw, EVERYTHING, lambda: None) == ""


def test_an_import_line_in_a_string_does_not_hide_the_project(tmp_path: Path) -> None:
    """A line that reads as `import tensorflow` but sits in a string: the file imports
    TensorFlow only through its project's stand-in, and its session is found through it. The
    pre-filter once took the line for the file's own import, and never asked the project."""
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text("from .compat import tfv1\n")
    (tmp_path / "mypkg" / "compat.py").write_text("import tensorflow.compat.v1 as tfv1\n")
    (tmp_path / "train.py").write_text(
        'X = """\nimport tensorflow as tf\n"""\nfrom mypkg import tfv1\n\nsess = tfv1.Session()\n'
    )
    done = run_cli("--no-cache", "--isolated", "--output-format", "json", ".", cwd=tmp_path)
    found = [(Path(f["filename"]).name, f["code"]) for f in json.loads(done.stdout)]
    assert found == [("train.py", "TFM101")], done.stderr


def test_a_notebooks_json_gets_the_byte_stage_only(tmp_path: Path) -> None:
    """Compiled as Python, a notebook's JSON is one dict whose code sits in strings."""
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None}
    cell["source"] = ["import tensorflow as tf\n", "sess = tf.Session()\n"]
    notebook = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    raw = json.dumps(notebook).encode()
    assert may_have_findings(raw, DEFAULT)
    # (TFM205 looks for its words in the bytes, "nbformat" among them: set it aside here.)
    no_words = select_rules(ALL_RULES, ignore=["TFM205"])
    assert not code_may_have_findings(raw.replace(b"null", b"None"), no_words)  # no names
    path = tmp_path / "n.ipynb"
    path.write_bytes(raw)
    done = run_cli("check", "--no-cache", "--output-format", "json", str(path))
    assert [f["code"] for f in json.loads(done.stdout)] == ["TFM101"], done.stderr


def test_a_positional_memory_limit_is_reported(tmp_path: Path) -> None:
    """The byte stage once dropped `LogicalDeviceConfiguration(-1024)`: no `memory_limit`."""
    path = tmp_path / "limit.py"
    path.write_text("import tensorflow as tf\ntf.config.LogicalDeviceConfiguration(-1024)\n")
    done = run_cli("check", "--no-cache", "--output-format", "json", str(path))
    assert [f["code"] for f in json.loads(done.stdout)] == ["TFM304"], done.stderr


def test_both_stages_let_through_every_fixture_with_a_finding() -> None:
    """On the fixtures' own bytes: encodings, BOMs and CRLF included."""
    for path in sorted(BEFORE.glob("*.py")):
        raw = path.read_bytes()
        try:
            text = SourceText.decode(raw).text
        except SourceError:
            continue  # reported as a file error, by the engine's caller
        for selected in (DEFAULT, EVERYTHING):
            with contextlib.suppress(UnfaithfulParseError):  # likewise
                found = engine.lint_text(path.name, text, Settings(selected=selected))
                if any(not finding.code.startswith("TFM9") for finding in found):
                    assert passes(raw, selected), path.name


def test_family_names_cover_every_api_the_rules_start_from() -> None:
    """Each API's declared name must be a tail of it that every spelling of it holds
    literally: beyond whatever prefix the name table maps (`...server_lib.` to `train.`)."""
    from tfmemlint.rules.runtime import GROWTH, LIMIT, VISIBILITY
    from tfmemlint.rules.session_sites import ENTRY_POINTS, METHOD_ENTRY_POINTS
    from tfmemlint.rules.tensorflow_api import _PUBLIC_PREFIXES
    from tfmemlint.rules.whole_script.check import _SESSIONS

    by_family = {f.checker.split(".")[2]: f for f in FAMILIES if f.checker is not None}
    starts = {
        "session_config": {
            *ENTRY_POINTS,
            *(receiver for receiver, _ in METHOD_ENTRY_POINTS),
            "keras.backend.set_session",
        },
        "whole_script": set(_SESSIONS),
        "eager": {*GROWTH, *LIMIT, *VISIBILITY},
    }
    mapped = {*_PUBLIC_PREFIXES.values(), "keras."}
    for family_name, apis in starts.items():
        names = [name.split(".") for name in by_family[family_name].names]
        for api in apis:
            parts = api.split(".")
            literal = min(
                (len(api[len(prefix) :].split(".")) for prefix in mapped if api.startswith(prefix)),
                default=len(parts),
            )
            assert any(parts[-len(name) :] == name and len(name) <= literal for name in names), (
                family_name,
                api,
            )


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_verbose_counts_the_second_stage_as_pre_filtered(tmp_path: Path, jobs: str) -> None:
    """Ten files that name `Session` only in a docstring, one that creates one: the second
    stage drops the ten, in this process or in the workers."""
    for number in range(10):
        quiet = f'"""Never calls tf.Session()."""\nimport tensorflow as tf\nx{number} = 1\n'
        (tmp_path / f"quiet{number}.py").write_text(quiet)
    (tmp_path / "bare.py").write_text("import tensorflow as tf\nsess = tf.Session()\n")
    done = run_cli("check", "--no-cache", "-v", "-j", jobs, str(tmp_path))
    assert done.returncode == 1, done.stderr
    assert re.search(r"pre-filtered out +10 files", done.stderr), done.stderr
    assert re.search(r"parsed \([^)]*\) +1 files", done.stderr), done.stderr


@pytest.mark.parametrize(
    "source",
    [
        "from __future__ import annotations\nimport tensorflow as tf\n"
        "def f(x: tf.Session() = None):\n    pass\n",
        "import tensorflow as tf\ndef f():\n    x: tf.Session() = 1\n",
    ],
)
def test_a_call_in_an_annotation_python_never_evaluates_is_not_looked_at(source: str) -> None:
    """The second stage's documented limit (README, "What it understands"): such a call never
    runs, and its names are not in the compiled code."""
    assert may_have_findings(source.encode(), DEFAULT)
    assert not code_may_have_findings(source.encode(), DEFAULT)


# Pieces that make lines, identifiers and words in every arrangement the two searches below
# care about: breaks of every kind, backslashes, multi-byte characters, imports half-written.
_PIECES = [
    b"\n", b"\r\n", b"\r", b" ", b"\t", b"\\", b"_", b"a", b"7", b".", b";", b",", b"(", b'"',
    b"\x81", b"\xe4", b"jax", b"flax", b"XLA_", b"haiku", b"objax", b"ajax", b"import ",
    b"from ", b"from . import ", b"import a.b, c as d", b"#", b"*",
]  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=40))
def test_cutting_only_the_lines_with_a_word_decides_as_cutting_the_whole_text(
    pieces: list[bytes],
) -> None:
    """The JAX family's inert text is cut only from the lines that hold one of its words: the
    first stage's verdict is the one that cutting the whole text gives."""
    raw = b"".join(pieces)
    triggers = JAX_FAMILY.triggers
    lined = holds_a_trigger(raw, triggers, INSIDE_AN_IDENTIFIER)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(family, "lines_holding", lambda raw, words: raw)
        assert holds_a_trigger(raw, triggers, INSIDE_AN_IDENTIFIER) is lined


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=40))
def test_reading_imports_from_the_lines_with_import_finds_what_the_whole_text_gives(
    pieces: list[bytes],
) -> None:
    """A module's imports, read a line each, are looked for only on the lines that hold
    `import`: the same imports, in the same order, as a search of the whole text."""
    raw = b"".join(pieces)
    lined = list(imports_in_lines(raw))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(module_summary, "lines_holding", lambda raw, words: raw)
        assert list(imports_in_lines(raw)) == lined


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        # a stand-in of the project's for TensorFlow, in a file that names it in its docstring
        (
            {
                "mypkg/__init__.py": "from .compat import tfv1\n",
                "mypkg/compat.py": "import tensorflow.compat.v1 as tfv1\n",
                "legacy.py": '"""Runs on tensorflow, through the compat layer."""\n'
                "from mypkg import tfv1\n\nsess = tfv1.Session()\n",
            },
            "legacy.py:4:8: TFM101",
        ),
        # a program that reaches TensorFlow two modules away, and names it in a comment
        (
            {
                "helpers.py": "import tensorflow as tf\n\n\n"
                "def make():\n    return tf.data.Dataset.range(3)\n",
                "data.py": "import helpers\n\n\ndef load():\n    return helpers.make()\n",
                "train.py": "# TODO: drop tensorflow\nimport data\n\n\ndef main():\n"
                '    data.load()\n\n\nif __name__ == "__main__":\n    main()\n',
            },
            "train.py:2:1: TFM205",
        ),
        # TF1 code that imports TensorFlow itself and reaches JAX through the project
        (
            {
                "datasets.py": "import jax\n\n\ndef count():\n    return jax.device_count()\n",
                "train.py": "import tensorflow as tf\nimport datasets\n\n"
                "x = tf.placeholder(tf.float32)\n\n\ndef main():\n"
                '    print(datasets.count())\n\n\nif __name__ == "__main__":\n    main()\n',
            },
            "train.py:2:1: TFM208",
        ),
        # the same, with an import of TensorFlow commented out
        (
            {
                "helpers.py": "import tensorflow as tf\n\n\n"
                "def make():\n    return tf.data.Dataset.range(3)\n",
                "data.py": "import helpers\n\n\ndef load():\n    return helpers.make()\n",
                "train.py": "# import tensorflow as tf\nimport data\n\n\ndef main():\n"
                '    data.load()\n\n\nif __name__ == "__main__":\n    main()\n',
            },
            "train.py:2:1: TFM205",
        ),
    ],
)
def test_a_file_whose_words_find_nothing_is_still_followed_through_the_project(
    tmp_path: Path, files: dict[str, str], expected: str
) -> None:
    """The words that let a file through the first stage may sit in a comment or a docstring,
    and their families find nothing in its code: the file may still reach TensorFlow through the
    project's modules, as a file without those words would, and is parsed for it."""
    (tmp_path / ".git").mkdir()
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    done = run_cli("--no-cache", "--isolated", str(tmp_path), cwd=tmp_path)
    assert expected in done.stdout, done.stdout


@pytest.mark.parametrize(
    "source",
    [
        # a call in a local variable's annotation, which Python never evaluates
        "import tensorflow as tf\n\n\ndef main():\n    x: tf.Session() = 1\n    return x\n",
        # a GPUOptions of a module that is not there, in a file that never names TensorFlow
        "from mylib import GPUOptions\n\nopts = GPUOptions(per_process_gpu_memory_fraction=1.5)\n",
    ],
)
def test_a_jax_word_in_a_name_changes_no_finding_of_another_family(
    tmp_path: Path, source: str
) -> None:
    """A word of JAX's in a name (`use_jax`) is no import of JAX and sets no variable of its
    allocator: the file is judged as it is without it. Such a word once sent the file to
    libcst, where the other families reported what their own words never let through."""
    (tmp_path / "plain.py").write_text(source)
    (tmp_path / "named.py").write_text(source + "use_jax = False\n")
    done = run_cli("--no-cache", "--isolated", "--output-format", "json", str(tmp_path))
    assert json.loads(done.stdout) == [], done.stdout


@pytest.mark.parametrize("comment", ["", "  # jax comes later", "  # no Session", "  # growth"])
def test_a_notebook_that_starts_tensorflow_is_parsed_whatever_words_its_comments_hold(
    tmp_path: Path, comment: str
) -> None:
    """Every notebook is an entry point: a word of another family's in a comment, which that
    family's second stage finds nothing for, must not set it aside before TFM205 sees it."""
    write_notebook(
        tmp_path / "nb.ipynb",
        [
            f"import tensorflow as tf{comment.replace('growth', 'set_memory_growth')}",
            "model = tf.saved_model.load('m')",
        ],
    )
    done = run_cli("--no-cache", "--isolated", str(tmp_path / "nb.ipynb"))
    assert "nb.ipynb:cell 1:1:1: TFM205" in done.stdout, done.stdout


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.sampled_from([b"jax", b"tf", b"Session", b"a", b""])),
        max_size=30,
    )
)
def test_a_remembered_search_answers_as_the_search_does(
    asks: list[tuple[int, bytes]],
) -> None:
    """`family.holds` remembers the words searched in the last bytes: asked in turn about
    texts that differ, and texts equal but not the same object, it answers as `in` does."""
    texts = [b"import jax", bytes(bytearray(b"import jax")), b"tf.Session()", b""]
    for which, word in asks:
        assert family.holds(texts[which], word) == (word in texts[which])


_EVERY_WORD = sorted({w for f in FAMILIES for w in (*f.triggers, *f.modules)})


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([*_EVERY_WORD, b"_", b".", b"tf", b"hub"]), max_size=6))
def test_a_word_that_holds_another_answers_as_the_search_does(pieces: list[bytes]) -> None:
    """A word that holds a shorter one the families look for (`tensorflow_hub`, `tf_keras`) is
    searched only where the shorter one is found; every answer is still `in`'s."""
    raw = b" ".join(pieces) + b"".join(pieces)  # words whole, and run together
    for word in _EVERY_WORD:
        assert family.holds(raw, word) == (word in raw), word


def test_the_shorter_word_spares_the_longer_ones_search() -> None:
    raw = b"import numpy as np\n"
    assert not family.holds(raw, b"tensorflow_hub")
    assert not family.holds(raw, b"tf_keras")
    # What was searched: the shorter words, each once, and the longer ones taken from them.
    assert family.words_searched(raw) == {
        b"tensorflow": False,
        b"tensorflow_hub": False,
        b"keras": False,
        b"tf_keras": False,
    }


def test_words_searched_elsewhere_answer_for_the_same_bytes() -> None:
    """What the first stage found in a file's bytes (in a worker, or before other files were
    searched) is what `holds` answers for those bytes where the file is checked: even a wrong
    answer, which shows that it searches no more."""
    raw = b"import tensorflow as tf\nsess = tf.Session()\n"
    assert family.holds(raw, b"Session")
    assert family.words_searched(raw)[b"Session"] is True
    copy = bytes(bytearray(raw))
    assert family.words_searched(copy) == {}  # equal bytes, another object: not searched yet
    family.searched_already(copy, {b"Session": False})
    assert not family.holds(copy, b"Session")
    assert family.holds(copy, b"tensorflow")  # a word it was not given is searched
    assert family.words_searched(copy) == {b"Session": False, b"tensorflow": True}
    family.searched_already(b"", {})  # the wrong answer goes with the test


def _imports_by_walking(tree: ast.Module) -> list[str]:
    """`imports_in_tree` as it was: every node of the tree visited."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = module_summary.from_module(node)
            found.extend(
                module if alias.name == "*" else module_summary.member(module, alias.name)
                for alias in node.names
            )
    return found


NESTED_IMPORTS = """\
import a, b.c as d
def f(x=lambda: 1):
    import e
    class K:
        from f import g, h as i
        def m(self):
            try:
                import j
            except ImportError as err:
                from . import k
            else:
                import l
            finally:
                from ..m import *
match x:
    case [1, *rest]:
        import n
    case _:
        with o() as p:
            import q
for r in s:
    import t
else:
    while u:
        import v
async def w():
    async with x:
        import y
    async for z in aa:
        import bb
try:
    import cc
except* ValueError:
    import dd
if ee: import ff
"""


@pytest.mark.filterwarnings("ignore::SyntaxWarning")  # `1()` in the programs hypothesmith makes
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(hypothesmith.from_grammar())
@example(program=NESTED_IMPORTS)
def test_the_imports_of_a_tree_are_found_in_the_walks_order_visiting_only_statements(
    program: str,
) -> None:
    """Only statements hold imports: visiting statements alone finds every import of the tree,
    in the order a walk of every node finds them (the project walk's dependencies, and the
    first import that reaches TensorFlow, follow that order)."""
    try:
        tree = ast.parse(program)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return
    assert list(module_summary.imports_in_tree(tree)) == _imports_by_walking(tree)
