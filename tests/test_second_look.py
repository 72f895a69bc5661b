"""After a round of fixes the engine looks at the fixed text again, since a fix can bring a
finding, unless every rule family is sure it finds nothing there (`fix_loop._nothing_left`).
Skipping that look must never change a result: each test fixes a text both ways, with the
shortcut and with the look always taken, and compares everything `fix_text` returns."""

from __future__ import annotations

import contextlib
import gc
import textwrap
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import FIXTURES
from tfmemlint.checking import engine
from tfmemlint.configuration.settings import Policy, Settings, select_rules
from tfmemlint.fixing.safety import UnsafeFixError
from tfmemlint.model import FILE, Finding
from tfmemlint.rules import ALL_RULES
from tfmemlint.rules.session_sites import ENTRY_POINTS
from tfmemlint.running import fix_loop
from tfmemlint.running.file_check import new_project_index

GROWTH = Settings.default(ALL_RULES)
FRACTION = GROWTH._replace(policy=Policy(0.5))


@contextlib.contextmanager
def _shortcut(noted: list[bool] | None) -> Iterator[None]:
    """The engine's shortcut, noting in `noted` whether each round took it; with None, never
    taken: the second look always."""
    real = fix_loop._nothing_left

    def replaced(*args: object) -> bool:
        if noted is None:
            return False
        noted.append(real(*args))  # type: ignore[arg-type]
        return noted[-1]

    fix_loop._nothing_left = replaced  # type: ignore[assignment]
    try:
        yield
    finally:
        fix_loop._nothing_left = real  # type: ignore[assignment]


def _both_ways(
    text: str, chosen: Settings = GROWTH, path: Path | None = None
) -> tuple[object, bool]:
    """What fixing `text` gives, the same with the second look always taken; and whether the
    shortcut skipped it. `path`: the file's place in a project, whose modules it imports."""
    outcomes: list[object] = []
    skipped: list[bool] = []
    for noted in (skipped, None):
        project = new_project_index(None).resolver(str(path)) if path else None
        with _shortcut(noted):
            try:
                outcomes.append(
                    fix_loop.fix_text(str(path or "t.py"), text, chosen, project=project)
                )
            except (UnsafeFixError, engine.UnfaithfulParseError) as error:
                outcomes.append(type(error))
    assert outcomes[0] == outcomes[1], text
    return outcomes[0], any(skipped)


def _codes(outcome: object) -> list[str]:
    assert isinstance(outcome, tuple)
    remaining: list[Finding] = outcome[2]
    return [finding.code for finding in remaining]


def test_what_a_look_keeps_for_the_proofs_leaves_the_file_to_reference_counting() -> None:
    """A look's context is freed as soon as it is dropped: what the session family keeps for
    its proof in the context's cache must not point back at the context (a cycle would keep
    every file's tree alive until the cycle collector ran)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        linted = engine.lint_masked(
            "t.py", "import tensorflow as tf\nsess = tf.Session()\n", GROWTH, FILE
        )
        assert linted.context.cache
        context = weakref.ref(linted.context)
        del linted
        assert context() is None
    finally:
        if collecting:
            gc.enable()


def test_a_session_left_alone_under_noqa_is_looked_at_again() -> None:
    """The first session's fix was the only finding, yet it brings a TFM401 on the second."""
    text = textwrap.dedent(
        """\
        import tensorflow as tf


        def main():
            first = tf.Session()
            second = tf.Session()  # noqa: TFM101
            return first, second
        """
    )
    outcome, skipped = _both_ways(text)
    assert not skipped
    assert _codes(outcome) == ["TFM401"]
    # Also when another family's fix makes up the count of findings fixed.
    text = "import os\n" + text + "os.environ['TF_FORCE_GPU_ALLOW_GROWTH'] = 'False'\n"
    outcome, skipped = _both_ways(text)
    assert not skipped
    assert _codes(outcome) == ["TFM401"]


@pytest.mark.parametrize(
    ("program", "expected"),
    [
        (
            "from tensorflow.python.client import device_lib\n"
            "print(device_lib.list_local_devices())\n"
            "sess = S()\n",
            ["TFM402"],
        ),
        ("def main():\n    a = S()\n    b = S()  # noqa: TFM101\n", ["TFM401"]),
    ],
)
def test_a_session_named_through_the_project_is_looked_at_again(
    tmp_path: Path, program: str, expected: list[str]
) -> None:
    """The text never spells `Session`: a project module's alias stands for it."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text("")
    (tmp_path / "mypkg" / "aliases.py").write_text("import tensorflow as tf\nS = tf.Session\n")
    text = f"import tensorflow as tf\nfrom mypkg.aliases import S\n{program}"
    outcome, skipped = _both_ways(text, path=tmp_path / "run.py")
    assert not skipped
    assert _codes(outcome) == expected


@pytest.mark.parametrize(
    ("before", "looks_again"),
    [
        # TFM402: the listing comes before the session the fix configures.
        (
            "from tensorflow.python.client import device_lib\n"
            "print(device_lib.list_local_devices())\n",
            True,
        ),
        # Another session, memory-aware already: the two differ until both are fixed.
        (
            "other = tf.Session(config=tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True)))\n",
            True,
        ),
        # A session given to Keras, whose check follows it to where it is made.
        ("tf.keras.backend.set_session(tf.Session())\n", True),
        # Another fix in the same round: the environment changes.
        ("os.environ['TF_FORCE_GPU_ALLOW_GROWTH'] = 'False'\n", True),
        # The other families' inputs, none of which the session fix writes.
        ("limits = {'per_process_gpu_memory_fraction': 0.3}\n", False),
        ("os.environ['TF_FORCE_GPU_ALLOW_GROWTH'] = 'false'\n", False),
        ("os.environ['CUDA_VISIBLE_DEVICES'] = '0'\n", False),
        ("tf.config.experimental.set_memory_growth(gpu, True)\n", False),
        ('if __name__ == "__main__":\n    print(tf.constant(1))\n', False),
    ],
)
def test_a_fix_is_looked_at_again_where_it_may_change_a_finding(
    before: str, looks_again: bool
) -> None:
    text = f"import os\nimport tensorflow as tf\n{before}sess = tf.Session()\n"
    outcome, skipped = _both_ways(text)
    assert skipped is not looks_again
    assert isinstance(outcome, tuple) and outcome[1] >= 1
    if not looks_again:
        assert _codes(outcome) == []


@pytest.mark.parametrize(
    "api",
    sorted(
        api
        for api, entry in ENTRY_POINTS.items()
        if not entry.creator
        and entry.fraction_keyword is None
        and not entry.missing_is_fine
        # A TPU RunConfig is an entry point only beside a TPUEstimator that it configures, an
        # entry point with no finding of its own: there the second look is always taken.
        and not (entry.off_tpu and api.endswith("RunConfig"))
    ),
)
def test_each_entry_point_fixed_alone_needs_no_second_look(api: str) -> None:
    """For every entry point the shortcut may vouch for: its fix, alone in a module and in a
    script with a `__main__` guard, leaves nothing, with or without the second look."""
    # A TPUEstimator is an entry point where it runs off the TPU.
    call = "tf.compat.v1." + api + ("(use_tpu=False)" if ENTRY_POINTS[api].off_tpu else "()")
    for text in (
        f"import tensorflow as tf\nx = {call}\n",
        f"import tensorflow as tf\n\n\ndef main():\n    return {call}\n\n\n"
        'if __name__ == "__main__":\n    main()\n',
    ):
        outcome, skipped = _both_ways(text)
        assert skipped, text
        assert _codes(outcome) == [], text


def test_a_fraction_policy_always_looks_again() -> None:
    """Under `--policy fraction=F` the fix writes what the values family judges."""
    outcome, skipped = _both_ways("import tensorflow as tf\nsess = tf.Session()\n", FRACTION)
    assert not skipped
    assert _codes(outcome) == []


def test_every_fixture_gives_the_same_with_or_without_the_second_look() -> None:
    skipped_somewhere = 0
    for path in sorted((FIXTURES / "before").glob("*.py")) + sorted(
        (FIXTURES / "python2").glob("*.py")
    ):
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # the invalid-encoding fixture: never fixed
        for chosen in (
            GROWTH,
            FRACTION,
            Settings(Policy(), select_rules(ALL_RULES, extend_select=["TFM"])),
        ):
            skipped_somewhere += _both_ways(text, chosen)[1]
    assert skipped_somewhere >= 10


# Statements a module may hold, each using `tf`, `os` and `device_lib` as imported below.
STATEMENTS = [
    "sess = tf.Session()",
    "sess = tf.Session()  # noqa: TFM101",
    "sess = tf.compat.v1.InteractiveSession()",
    "sess = tf.Session(config=cfg)",
    "sess = tf.Session(config=None)",
    "sess = tf.Session(tf.ConfigProto())",
    "sess = tf.Session(config=tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True)))",
    "sess = tf.Session(config=tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=False)))",
    "cfg = tf.ConfigProto()",
    "cfg = tf.ConfigProto(gpu_options=tf.GPUOptions(per_process_gpu_memory_fraction=1.0))",
    "cfg.gpu_options.allow_growth = True",
    "server = tf.train.Server(cluster)",
    "sess = tf.Session(server.target)",
    "hooks = tf.train.MonitoredSession()",
    "run = tf.estimator.RunConfig()",
    "run = tf.contrib.learn.RunConfig()",
    "tf.keras.backend.set_session(sess)",
    "print(device_lib.list_local_devices())",
    "tf.test.is_gpu_available()",
    "os.environ['TF_FORCE_GPU_ALLOW_GROWTH'] = 'false'",
    "os.environ['CUDA_VISIBLE_DEVICES'] = '0'",
    "gpus = tf.config.list_physical_devices('GPU')",
    "tf.config.experimental.set_memory_growth(gpus[0], True)",
    "model.fit(x, y)",
    "tf.enable_eager_execution()",
    "sess = make_session()",
]
HEADERS = [
    "import os\nimport tensorflow as tf\nfrom tensorflow.python.client import device_lib\n",
    "import os\nimport tensorflow.compat.v1 as tf\nfrom tensorflow.python.client import device_lib\n",
]


@st.composite
def programs(draw: st.DrawFn) -> str:
    """A module with a session to fix and up to three other statements, each at the top, in
    a function, behind an `if` or a `__main__` guard, in any order: most often one statement
    away from a module the shortcut vouches for."""
    statements = [STATEMENTS[0], *draw(st.lists(st.sampled_from(STATEMENTS), max_size=3))]
    lines = [draw(st.sampled_from(HEADERS))]
    for statement in draw(st.permutations(statements)):
        place = draw(st.sampled_from(["top", "function", "branch", "main"]))
        if place == "top":
            lines.append(statement + "\n")
        elif place == "function":
            lines.append(f"\n\ndef work():\n    {statement}\n")
        elif place == "branch":
            lines.append(f"if flag:\n    {statement}\nelse:\n    pass\n")
        else:
            lines.append(f'if __name__ == "__main__":\n    {statement}\n')
    return "".join(lines)


@settings(max_examples=400, deadline=None)
@given(programs(), st.sampled_from([GROWTH, FRACTION]))
def test_any_program_gives_the_same_with_or_without_the_second_look(
    text: str, chosen: Settings
) -> None:
    _both_ways(text, chosen)
