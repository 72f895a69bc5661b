"""The engine's shortcuts around libcst and Python must leave no trace: its quicker parse builds
the trees libcst's does (wherever libcst's own node check accepts them), the check is back after
every parse and stays on in other threads, and the paused cycle collector is back after every
file."""

from __future__ import annotations

import ast
import contextlib
import gc
import sys
import threading
from pathlib import Path

import libcst as cst
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_walk import SOURCES
from tfmemlint.checking import engine
from tfmemlint.configuration.settings import Settings
from tfmemlint.model import FILE
from tfmemlint.reading import cst_parse
from tfmemlint.reading.source import parse_python
from tfmemlint.rules import ALL_RULES
from tfmemlint.running import file_check, fix_loop, reparse, runner

SESSION = "import tensorflow as tf\nsess = tf.Session()\n"


def test_the_unchecked_parse_builds_the_same_trees_and_restores_the_check() -> None:
    for path in SOURCES[:60]:
        text = path.read_text(encoding="utf-8", errors="replace")
        assert cst_parse.parse(text).deep_equals(cst.parse_module(text)), path
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")  # nodes built after a parse are checked again
    with pytest.raises(cst.ParserSyntaxError):
        cst_parse.parse("def (")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")  # also after a parse that failed


@pytest.mark.parametrize("text", [SESSION, "def ("])
def test_the_cycle_collector_is_back_after_each_file(text: str) -> None:
    default = Settings.default(ALL_RULES)
    for entry in (engine.lint_text, fix_loop.fix_text):
        assert gc.isenabled()
        with contextlib.suppress(cst.ParserSyntaxError):
            entry("a.py", text, default)
        assert gc.isenabled()


def test_a_paused_collector_stays_paused() -> None:
    gc.disable()
    try:
        engine.lint_text("a.py", SESSION, Settings.default(ALL_RULES))
        assert not gc.isenabled()
        parse_python(SESSION)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_cpythons_parse_runs_with_the_collector_paused() -> None:
    """The pre-filter's screens and the project index parse with CPython outside any file's
    check: the collector must not walk the new tree's objects while they come, and must be
    back after, a syntax error included."""
    large = "".join(f"def f{i}(a, b):\n    return [a, {{b: (a, b)}}, f{i}]\n" for i in range(3000))
    inside_the_parse: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        frame = sys._getframe(1)
        while frame is not None and frame.f_code is not ast.parse.__code__:
            frame = frame.f_back
        if phase == "start" and frame is not None:
            inside_the_parse.append(info["generation"])

    gc.callbacks.append(count)
    try:
        trees = [ast.parse(large)]  # as it was: the collector runs while the tree grows
        assert inside_the_parse
        inside_the_parse.clear()
        trees.append(parse_python(large))
        with pytest.raises(SyntaxError):
            parse_python(large + "def (")
        assert inside_the_parse == []
        assert gc.isenabled()
    finally:
        gc.callbacks.remove(count)


def test_the_collector_never_runs_while_a_file_is_judged_or_checked(tmp_path: Path) -> None:
    """A file's first stage (with the project walk it may need), its second stage (a screen
    reading CPython's tree) and its check make trees that die with them: the collector, were it
    to run meanwhile, would walk each of their nodes for nothing, a few times over. A
    threshold of 50 makes it run at once wherever it may."""
    many = "".join(f"def f{i}(a):\n    return [a, {{a: (a, {i})}}]\n" for i in range(400))
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "compat.py").write_text("from tensorflow.compat import v1 as tfv1\n" + many)
    # Through the project: the walk reads pkg/compat.py's tree for its summary.
    (tmp_path / "train.py").write_text("from pkg.compat import tfv1\nsess = tfv1.Session()\n")
    # A library module: TFM205's screen reads its tree and sets it aside.
    (tmp_path / "lib.py").write_text(
        "import tensorflow as tf\n" + many + "def step(x):\n    return tf.GradientTape()\n"
    )
    judged = (runner._passes_first_stage, file_check.check_file)
    judging = {getattr(function, "__wrapped__", function).__code__ for function in judged}
    during: list[str] = []

    def count(phase: str, info: dict[str, int]) -> None:
        frame = sys._getframe(1)
        while frame is not None and frame.f_code not in judging:
            frame = frame.f_back
        if phase == "start" and frame is not None:
            during.append(frame.f_code.co_name)

    threshold = gc.get_threshold()
    gc.callbacks.append(count)
    gc.set_threshold(50)
    try:
        results = list(runner.run([str(tmp_path)], Settings.default(ALL_RULES), "check"))
    finally:
        gc.set_threshold(*threshold)
        gc.callbacks.remove(count)
    assert {Path(r.filename).name: [f.code for f in r.findings] for r in results}["train.py"] == [
        "TFM101"
    ]
    assert during == []  # before: the collector ran in both
    assert gc.isenabled()


def test_a_checked_files_tree_goes_without_the_cycle_collector() -> None:
    """Each binding of the name table points back at its scope: left as it is, the cycle kept
    the scopes, and through them the whole tree, until the cycle collector walked every node.
    Once a file is checked, nothing of its names or its tree is left for the collector."""
    from tfmemlint.project.names import Binding, Scope

    text = (
        "import os\nimport tensorflow as tf\nfrom tensorflow.compat import v1\n\n\n"
        "class Model:\n    size = 3\n\n    def build(self, config):\n"
        "        return tf.Session(config=config)\n\n\n"
        "def main(argv):\n    model = Model()\n    sess = model.build(v1.ConfigProto())\n"
        "    return [x for x in argv if x]\n\n\n"
        'if __name__ == "__main__":\n    main(os.environ)\n'
    )
    settings = Settings.default(ALL_RULES)
    engine.lint_text("a.py", text, settings)  # every import done
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)  # what the collector finds stays in gc.garbage
    try:
        engine.lint_text("a.py", text, settings)
        gc.collect()
        found = [o for o in gc.garbage if isinstance(o, (Binding, Scope, cst.CSTNode))]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert found == []  # before: the scopes, their bindings and the tree's nodes


# libcst's own node check rejects this valid line (LibCST#1061); the unchecked parse accepts it.
REJECTED_BY_THE_CHECK = "x = a if b else(lambda: c)\n"


def _libcst_rejects(text: str) -> bool:
    try:
        cst.parse_module(text)
    except Exception:
        return True
    return False


def test_the_parse_is_the_same_beside_other_threads() -> None:
    """Results must not depend on a progress bar's thread: the line parses either way."""
    if not _libcst_rejects(REJECTED_BY_THE_CHECK):
        pytest.skip("this libcst's check accepts the line")
    cst_parse.parse(REJECTED_BY_THE_CHECK)
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        cst_parse.parse(REJECTED_BY_THE_CHECK)
    finally:
        release.set()
        other.join()


def test_other_threads_keep_the_check_while_one_parses() -> None:
    errors: list[BaseException] = []

    def build() -> None:
        try:
            cst.Name("not a name")
        except cst.CSTValidationError as exc:
            errors.append(exc)

    cst_parse._this_thread.parsing = True  # this thread, as inside cst_parse.parse
    try:
        other = threading.Thread(target=build)
        other.start()
        other.join()
    finally:
        cst_parse._this_thread.parsing = False
    assert len(errors) == 1


def test_parses_in_threads_leave_the_check_on() -> None:
    text = "x = [" + ", ".join(str(i) for i in range(3000)) + "]\n"
    threads = [threading.Thread(target=cst_parse.parse, args=(text,)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")


# -- the fixed text's tree, from the tree before and a parse of what changed --------------------


def _context_before(text: str) -> engine.FileContext:
    context = engine.FileContext(
        "a.py", text, cst_parse.parse(text), Settings.default(ALL_RULES).policy
    )
    assert context.statement_extents() is None  # positions are worked out only on demand
    context.span(context.module)  # as a rule does for a finding
    return context


def _reparsed_as_a_whole(before: str, after: str) -> bool:
    """Whether `reparse` built a tree for `after`, which must then be libcst's own."""
    tree = reparse.reparse(_context_before(before), after)
    if tree is None:
        return False
    whole = cst.parse_module(after)
    assert tree.deep_equals(whole), (before, after)
    return True


FUNCTION = (
    "# a module\nimport tensorflow as tf\n\n\ndef train(steps):\n    x = 1  # why\n"
    "    sess = tf.Session(\n        target='')\n    return sess\n\n\n# the end\n"
)
GROWTH = "config=tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True))"

# (before, after): what fixes do, and what they never do but a tree must survive.
CHANGES = [
    # one line inside a block: parsed again alone
    (FUNCTION, FUNCTION.replace("target=''", f"target='', {GROWTH}")),
    (FUNCTION, FUNCTION.replace("    x = 1", "    x = 1; y = 2")),
    (
        FUNCTION.replace("    ", "\t"),
        FUNCTION.replace("    ", "\t").replace("(\n", f"({GROWTH},\n"),
    ),
    (
        FUNCTION.replace("    ", "  "),
        FUNCTION.replace("    ", "  ").replace("x = 1", "x = (1 +\n 2)"),
    ),
    (FUNCTION.replace("\n", "\r\n"), FUNCTION.replace("\n", "\r\n").replace("x = 1", "x = 2")),
    (
        "class A:\n    def f(self):\n        s = tf.Session()\n",
        f"class A:\n    def f(self):\n        s = tf.Session({GROWTH})\n",
    ),
    # top-level statements parsed again
    ("import tf\nsess = tf.Session()\nx = 1\n", f"import tf\nsess = tf.Session({GROWTH})\nx = 1\n"),
    (
        "import tf\nwith tf.Session() as s:\n  s.run()\n",
        f"import tf\nwith tf.Session({GROWTH}) as s:\n  s.run()\n",
    ),
    (
        "import tf\ndef f():\n  pass\nwith g():\n    pass\n",
        "import tf\ndef f():\n  pass\nwith g(1):\n    pass\n",
    ),
    ("import tf\nx = 1\n", "import tf\nc = 1\nc.g = True\nx = 1\n"),
    ("import tf\nx = 1\n# c\n\ny = 2\n", "import tf\nx = 1\n# c\n\ny = 3\nz = 4\n"),
    ("import tf\nx = 1\ny = 2", "import tf\nx = 2\ny = 2"),
    ("import tf\nif a:\n    b\n    # c\nx = 1\n", "import tf\nif a:\n    b(1)\n    # c\nx = 1\n"),
    ("import tf\n\nx = 1\n    # c\ny = 2\n", "import tf\n\nx = 2\n    # c\ny = 2\n"),
    # a change that the parse alone would read otherwise, or that does not parse
    ("import tf\nx = 1\ny = 2\n", "import tf\nx = 1\ny = 2\n  # z\n"),
    ("import tf\nx = 1\ny = 2\n", "import tf\nx = '''1\ny = 2\n"),
    ("import tf\ndef f():\n    x = 1\ny = 2\n", "import tf\ndef f():\n    x = (1\ny = 2\n"),
    ("import tf\ndef f():\n    x = 1\ny = 2\n", "import tf\ndef f():\n    x = 1\\\ny = 2\n"),
    ("import tf\ndef f():\n    x = 1\n    y = 2\n", "import tf\ndef f():\n    x = 1\n  y = 2\n"),
    ("# h\nx = 1\ny = 2\n", "# h\nx = 3\ny = 2\n"),
    # comment lines a block above them takes, once the change is made
    ("import tf\nif a:\n    b\n\n# c\nx = 1\n", "import tf\nif a:\n    b\n\n    # c\nx = 1\n"),
    (
        "import tf\ndef f():\n    pass\n# a\nx = 1\n    # b\ny = 2\n",
        "import tf\ndef f():\n    pass\n# a\n    # b\ny = 2\n",
    ),
    (
        "import tf\nx = 1\ny = 2\n    # c\nz = 3\n",
        "import tf\nx = 1\nif y:\n    w\n    # c\nz = 3\n",
    ),
    (
        'import tensorflow as tf\ngpus = tf.config.list_physical_devices("GPU")\n'
        "tf.config.experimental.set_memory_growth(gpus[0], True)\n    \nx = 1\n",
        'import tensorflow as tf\ngpus = tf.config.list_physical_devices("GPU")\n'
        "for gpu in gpus:\n    tf.config.experimental.set_memory_growth(gpu, True)\n    \nx = 1\n",
    ),
    # blocks that only a clause opens, or a `match`
    (
        "def f():\n  pass\nx = 1\ny = 2\n",
        "def f():\n  pass\nx = 1\nif x: pass\nelse:\n    z\ny = 2\n",
    ),
    (
        "def f():\n  pass\nx = 1\ny = 2\n",
        "def f():\n  pass\nx = 1\ntry: pass\nexcept:\n    z\ny = 2\n",
    ),
    (
        "import tf\nx = 1\nmatch x:\n    case 1:\n        pass\ny = 2\ndef f():\n  pass\n",
        "import tf\nx = 1\nz = 1\ny = 2\ndef f():\n  pass\n",
    ),
    ("x = 1\ndef f():\n  pass\n", "x = 1\ndef f():\n    pass\n"),
]


@pytest.mark.parametrize(("before", "after"), CHANGES)
def test_the_fixed_texts_tree_is_libcsts_own(before: str, after: str) -> None:
    try:
        cst.parse_module(after)
    except cst.ParserSyntaxError:
        assert reparse.reparse(_context_before(before), after) is None
        return
    _reparsed_as_a_whole(before, after)


def test_only_what_changed_is_parsed_again(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[str] = []
    real_parse = cst_parse.parse

    def spy(text: str) -> cst.Module:
        parsed.append(text)
        return real_parse(text)

    monkeypatch.setattr(reparse, "parse", spy)
    fixed = FUNCTION.replace("target=''", f"target='', {GROWTH}")
    assert _reparsed_as_a_whole(FUNCTION, fixed)
    assert parsed[-1] == f"if 1:\n    sess = tf.Session(\n        target='', {GROWTH})\n"
    top_level = "import tf\ndef f():\n  pass\nsess = tf.Session()\nx = 1\n"
    assert _reparsed_as_a_whole(top_level, top_level.replace("Session()", f"Session({GROWTH})"))
    assert parsed[-1] == f"pass\nsess = tf.Session({GROWTH})\n"


def test_a_fix_of_every_fixture_builds_libcsts_own_trees(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every fix round on the golden fixtures: the tree the next round lints is the one a
    whole parse gives."""
    from tests.conftest import ROOT

    built: list[bool] = []
    real_reparse = reparse.reparse

    def compared(before: engine.FileContext, text: str) -> cst.Module | None:
        tree = real_reparse(before, text)
        if tree is not None:
            assert tree.deep_equals(cst.parse_module(text)), before.filename
        built.append(tree is not None)
        return tree

    monkeypatch.setattr(fix_loop, "reparse", compared)
    default = Settings.default(ALL_RULES)
    for path in sorted((ROOT / "fixtures" / "before").glob("*.py")):
        with contextlib.suppress(engine.UnfaithfulParseError, UnicodeDecodeError):
            fix_loop.fix_text(str(path), path.read_text(encoding="utf-8"), default)
    assert sum(built) > 20 and sum(built) > 0.9 * len(built)


SNIPPETS = [
    "",
    "x",
    " ",
    "\n",
    "\n    ",
    "\n  y = 2",
    "(",
    ")",
    "'''",
    "\\\n",
    "# c",
    ", a=1",
    ":",
    "\t",
    ";",
]


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_any_change_gives_libcsts_own_tree_or_none(data: st.DataObject) -> None:
    """Whatever the change, the tree is the one a whole parse gives, or there is none."""
    before = data.draw(st.sampled_from([FUNCTION, *(after for _, after in CHANGES[:14])]))
    start = data.draw(st.integers(0, len(before)))
    end = data.draw(st.integers(start, min(len(before), start + 3)))
    after = before[:start] + data.draw(st.sampled_from(SNIPPETS)) + before[end:]
    try:
        cst.parse_module(before)
    except cst.ParserSyntaxError:
        return
    try:
        cst.parse_module(after)
    except cst.ParserSyntaxError:
        assert reparse.reparse(_context_before(before), after) is None
        return
    if after != before:
        _reparsed_as_a_whole(before, after)


# -- what a finding that is not kept costs ---------------------------------------------------

AT_MODULE_LEVEL = "import tensorflow as tf\n\nsess = tf.Session(config=options.session_config)\n"
CONTINUED = "def run(opts):\n    return tf.Session(config=opts.\n                      config)\n"


def test_a_finding_no_one_keeps_needs_no_position() -> None:
    """TFM190, off by default, says why a config cannot be told: where it is not selected,
    neither it nor the code its message quotes needs the whole module's codegen."""
    default = Settings.default(ALL_RULES)
    linted = engine.lint_masked("a.py", AT_MODULE_LEVEL, default, FILE)
    assert linted.findings == []
    assert linted.context.statement_extents() is None  # no positions were worked out
    # Code continued inside brackets in a block is quoted from the module's positions.
    both = f"{AT_MODULE_LEVEL}\n\n{CONTINUED}"
    assert engine.lint_masked("a.py", both, default, FILE).findings == []

    with_tfm190 = default._replace(selected=default.selected | {"TFM190"})
    linted = engine.lint_masked("a.py", both, with_tfm190, FILE)
    assert [(f.code, f.location.row) for f in linted.findings] == [("TFM190", 3), ("TFM190", 7)]
    assert [f.message.split(": ", 1)[1] for f in linted.findings] == [
        "its config `options.session_config` is not built here",
        "its config `opts.\n                      config` is not built here",
    ]
