"""What tfmemlint guarantees about your files (issue 7): a killed --fix leaves every file with
its old bytes or its new bytes, and one file's failure never stops the others."""

from __future__ import annotations

import ast
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import run_cli
from tfmemlint.configuration.settings import Settings
from tfmemlint.fixing import safety
from tfmemlint.rules import ALL_RULES
from tfmemlint.running import file_check, runner

BEFORE = "import tensorflow.compat.v1 as tf\n" + "x = [1, 2, 3]\n" * 40 + "sess = tf.Session()\n"
AFTER = BEFORE.replace(
    "tf.Session()",
    "tf.Session(config=tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True)))",
)
ROUNDS = int(os.environ.get("TFMEMLINT_KILL_ROUNDS", "8"))


def _processes_running_on(folder: Path) -> list[str]:
    """Processes whose command line names `folder` (a forked worker keeps its parent's)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if entry.name.isdigit() and str(folder).encode() in command:
            found.append(entry.name)
    return found


def test_sigkill_during_fix_never_leaves_a_mix(tmp_path: Path) -> None:
    files = [tmp_path / f"m{index:03d}.py" for index in range(120)]
    chance = random.Random(7)
    interrupted_midway = 0
    for _ in range(ROUNDS):
        for path in files:
            path.write_text(BEFORE)
        fixer = subprocess.Popen(
            [sys.executable, "-m", "tfmemlint", "--fix", "--exit-zero", str(tmp_path)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(chance.uniform(0.3, 2.5))
        fixer.send_signal(signal.SIGKILL)
        fixer.wait()
        contents = {path.read_text() for path in files}
        assert contents <= {BEFORE, AFTER}, "a file was left half-written"
        interrupted_midway += contents == {BEFORE, AFTER}
    assert interrupted_midway, "no kill landed while files were being written"
    if sys.platform == "linux":  # workers end with their parent, never wait forever
        deadline = time.monotonic() + 10
        while _processes_running_on(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _processes_running_on(tmp_path)
    # Temporary files a kill left behind are hidden and never Python files.
    assert not [p for p in tmp_path.iterdir() if p.suffix == ".py" and p not in files]


def test_a_crash_on_one_file_leaves_the_others_fixed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.py").write_text(BEFORE)
    (tmp_path / "b.py").write_text(BEFORE)
    from tfmemlint.running import fix_loop

    real = fix_loop.fix_text

    def fails_on_a(filename: str, *rest, **options):  # type: ignore[no-untyped-def]
        if filename.endswith("a.py"):
            raise ZeroDivisionError("a bug")
        return real(filename, *rest, **options)

    monkeypatch.setattr(fix_loop, "fix_text", fails_on_a)
    results = list(runner.run([str(tmp_path)], Settings.default(ALL_RULES), "fix", verbose=True))
    by_name = {Path(r.filename).name: r for r in results}
    assert by_name["a.py"].internal_error
    [diagnostic] = by_name["a.py"].findings
    assert diagnostic.code == "TFM903"
    assert "Traceback" in diagnostic.message and "ZeroDivisionError: a bug" in diagnostic.message
    assert (tmp_path / "a.py").read_text() == BEFORE
    assert (tmp_path / "b.py").read_text() == AFTER


def test_internal_error_exits_2_and_the_rest_is_still_written(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(BEFORE)
    (tmp_path / "z.py").write_text(BEFORE)
    # A sitecustomize that breaks one file's fix, in a real child process.
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(
        "from tfmemlint.running import fix_loop\n"
        "real = fix_loop.fix_text\n"
        "def broken(filename, *rest, **options):\n"
        "    if filename.endswith('a.py'):\n"
        "        raise RuntimeError('boom')\n"
        "    return real(filename, *rest, **options)\n"
        "fix_loop.fix_text = broken\n"
    )
    # The hook beside, not instead of, the path that found this tfmemlint: the child must run it.
    path = os.pathsep.join(filter(None, [str(hook), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path}
    done = subprocess.run(
        [sys.executable, "-m", "tfmemlint", "--fix", "--output-format", "json", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert [f["code"] for f in json.loads(done.stdout)] == ["TFM903"]
    assert (tmp_path / "z.py").read_text() == AFTER
    assert (tmp_path / "a.py").read_text() == BEFORE
    assert run_cli(str(tmp_path / "z.py")).returncode == 0


@pytest.mark.parametrize(
    "newline_style",
    [
        ["\r", "\r", "\r"],  # old Mac
        ["\n", "\r\n", "\n"],  # mixed
    ],
)
def test_cr_and_mixed_line_endings_are_kept(tmp_path: Path, newline_style: list[str]) -> None:
    first, second, third = newline_style
    raw = (
        f"import tensorflow.compat.v1 as tf{first}"
        f"config = tf.ConfigProto(){second}"
        f"sess = tf.Session(config=config){third}"
    ).encode()
    path = tmp_path / "a.py"
    path.write_bytes(raw)
    assert run_cli("--fix", str(path)).returncode == 0
    # The new line takes the line ending of the line it follows; every old byte stays.
    expected = raw.replace(
        f"config = tf.ConfigProto(){second}".encode(),
        f"config = tf.ConfigProto(){second}config.gpu_options.allow_growth = True{second}".encode(),
    )
    assert path.read_bytes() == expected


def test_deep_nesting_is_checked(tmp_path: Path) -> None:
    """150 levels of nested brackets and calls (Python's tokenizer caps indentation at 100,
    so deep nesting in real code is in expressions)."""
    depth = 150
    nested_list = "[" * depth + "1" + "]" * depth
    nested_calls = "abs(" * depth + "1" + ")" * depth
    path = tmp_path / "deep.py"
    path.write_text(
        f"import tensorflow.compat.v1 as tf\nx = {nested_list}\ny = {nested_calls}\n"
        f"sess = tf.Session(config=tf.ConfigProto(inter_op_parallelism_threads=len({nested_list})))\n"
    )
    result = run_cli("--fix", "--output-format", "json", str(path))
    assert result.returncode == 0, result.stdout
    assert "allow_growth=True" in path.read_text().splitlines()[-1]


def test_a_3000_term_expression_is_checked_and_fixed(tmp_path: Path) -> None:
    """Each `+` nests one level deeper in libcst's tree: 3,000 levels of visitor recursion."""
    if sys.version_info < (3, 11):
        pytest.skip("3.10 keeps the default limit and reports an internal error instead")
    terms = " + ".join(["1"] * 3000)
    path = tmp_path / "terms.py"
    path.write_text(f"import tensorflow as tf\nX = {terms}\nsess = tf.Session()\n")
    result = file_check.check_file(str(path), Settings.default(ALL_RULES), "fix")
    assert result.fixed == 1 and not result.internal_error
    assert path.read_text().splitlines()[1] == f"X = {terms}"
    assert "allow_growth=True" in path.read_text().splitlines()[2]


def test_ownership_and_mode_are_kept(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root can give a file to another user")
    path = tmp_path / "a.py"
    path.write_text(BEFORE)
    os.chown(path, 1234, 5678)
    path.chmod(0o640)
    assert run_cli("--fix", str(path)).returncode == 0
    stat = path.stat()
    assert (stat.st_uid, stat.st_gid, stat.st_mode & 0o777) == (1234, 5678, 0o640)
    assert path.read_text() == AFTER


def test_an_unreadable_file_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Root reads everything, so the denial is simulated where the runner opens the file."""
    import builtins

    path = tmp_path / "secret.py"
    path.write_text(BEFORE)
    real_open = builtins.open

    def denied(file, *args, **kwargs):  # type: ignore[no-untyped-def]
        if str(file) == str(path):
            raise PermissionError(13, "Permission denied")
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", denied)
    result = file_check.check_file(str(path), Settings.default(ALL_RULES), "fix")
    [finding] = result.findings
    assert (finding.code, finding.message) == ("TFM901", "Cannot read file: Permission denied")


def test_a_change_deep_in_a_long_elif_chain_is_still_caught() -> None:
    """The comparison goes as deep as CPython's own parse: giving up would accept the fix."""
    chain = "".join(f"elif x == {i}:\n    y = 1\n" for i in range(180))
    original = f"if x:\n    pass\n{chain}"
    with pytest.raises(safety.UnsafeFixError):
        safety.check(original, original[: original.rindex("y = 1")] + "y = 2\n")


# Statements a fix adds, statements it only changes, and statements it never touches.
_ADDED = [
    "import tensorflow as tf",
    "from tensorflow.core.protobuf import config_pb2",
    "config.gpu_options.allow_growth = True",
    "for gpu in gpus:\n    tf.config.experimental.set_memory_growth(gpu, True)",
]
_PLAIN = [
    "x = 1",
    "sess = tf.Session()",
    "y = f(x, key=2)",
    "os.environ['TF_FORCE_GPU_ALLOW_GROWTH'] = 'false'",
    "env = {'TF_FORCE_GPU_ALLOW_GROWTH': 'false', 'A': f(1)}",
    "f('TF_FORCE_GPU_ALLOW_GROWTH', 1, x)",
    "g({'TF_FORCE_GPU_ALLOW_GROWTH': 'false', 1: 2, **d})",
    "f(x, 'TF_FORCE_GPU_ALLOW_GROWTH')[0] = 3",
    "global z",
    "return g(config=None)",
]
_TAILS = {
    "if gpus:": [None, "else:", "elif x:"],
    "for a in b:": [None, "else:"],
    "while x:": [None, "else:"],
    "try:": ["finally:", "except E:"],
    "with s() as t:": None,
    "def run(v=1):": None,
}
_COMPOUND = list(_TAILS)


def _program(rng: random.Random, depth: int = 0) -> list[object]:
    """A random block: statements, some with blocks of their own."""
    block: list[object] = []
    for _ in range(rng.randint(1, 3)):
        kind = rng.random()
        if depth < 3 and kind < 0.3:
            header = rng.choice(_COMPOUND)
            tail = _TAILS[header] and rng.choice(_TAILS[header])
            body = _program(rng, depth + 1)
            block.append((header, body, tail, _program(rng, depth + 1) if tail else None))
        else:
            block.append(rng.choice(_PLAIN + _ADDED))
    return block


def _changed(block: list[object], rng: random.Random) -> list[object]:
    """The block as a fix might leave it (statements added, keywords passed, a value set), or,
    now and then, changed in a way no fix may change it."""
    changed: list[object] = []
    for statement in block:
        roll = rng.random()
        if roll < 0.15:
            changed.append(rng.choice(_ADDED))
        if isinstance(statement, tuple):
            header, body, tail, other = statement
            body = _changed(body, rng)
            other = _changed(other, rng) if other is not None else None
            changed.append((header, body, tail, other))
        elif roll < 0.25 and "(" in statement:
            with_config = statement.replace("()", "(config=cfg)", 1)
            changed.append(
                with_config.replace(")", ", config=cfg)", 1)
                if "()" not in statement
                else with_config
            )
        elif roll < 0.32:
            changed.append(statement.replace("'false'", "'true'"))
        elif roll < 0.42:
            changed.append(statement.replace("1", "2"))
        elif roll > 0.97:
            continue
        else:
            changed.append(statement)
    return changed or ["pass"]


def _render(block: list[object], indent: str = "") -> str:
    lines = []
    for statement in block:
        if isinstance(statement, tuple):
            header, body, tail, other = statement
            lines.append(indent + header + "\n" + _render(body, indent + "    "))
            if tail is not None:
                lines.append(indent + tail + "\n" + _render(other, indent + "    "))
        else:
            lines.extend(indent + line + "\n" for line in statement.splitlines())
    return "".join(lines)


@settings(max_examples=400, deadline=None)
@given(st.randoms(use_true_random=False))
def test_the_quick_comparison_says_what_setting_aside_then_comparing_says(
    rng: random.Random,
) -> None:
    """`same_once_visited` compares as the slow way does (visit both trees, then compare), and
    the slow way, which `check` takes after it, gives the same trees on what it left behind."""
    block = _program(rng)
    original, fixed = _render(block), _render(_changed(block, rng))
    normalizer = safety._Normalizer(original, fixed)
    left, right = ast.parse(original), ast.parse(fixed)
    quick = normalizer.same_once_visited(left, right)
    before, after = normalizer.visit(ast.parse(original)), normalizer.visit(ast.parse(fixed))
    assert quick == safety._same(before, after), (original, fixed)
    assert ast.dump(normalizer.visit(left)) == ast.dump(before)
    assert ast.dump(normalizer.visit(right)) == ast.dump(after)


def test_only_tfm207s_own_try_is_set_aside() -> None:
    """The hiding `try` that TFM207's fix writes is set aside, and nothing around it: a
    statement lost from a function that also hides the GPUs is still caught."""
    from tfmemlint.fixing import safety

    before = "import jax\nimport tensorflow as tf\n"
    hide = 'try:\n    tf.config.set_visible_devices([], "GPU")\nexcept RuntimeError:\n    pass\n'
    assert safety.check(before, before + hide)
    bringing = hide.replace("try:\n", "try:\n    import tensorflow as tf\n")
    assert safety.check("import jax\n", "import jax\n" + bringing)
    function = 'def main():\n    tf.config.set_visible_devices([], "GPU")\n    train()\n'
    with pytest.raises(safety.UnsafeFixError):
        safety.check(before + function, before + function.replace("    train()\n", ""))
    with pytest.raises(safety.UnsafeFixError):
        safety.check(before, before + hide.replace("    pass\n", "    raise\n"))


@pytest.mark.parametrize(
    ("original", "changed"),
    [
        ("import os\nx = 1\n", "x = 1\n"),
        ("def f():\n    pass\n", "def f():\n    import os\n"),
        (
            'import os\nos.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "false")\n',
            "import os\n",
        ),
        (
            'import os\nos.environ.setdefault("XLA_PYTHON_CLIENT_MEM_FRACTION", "0.9")\n',
            'import os\nos.environ.setdefault("XLA_PYTHON_CLIENT_MEM_FRACTION", "0.1")\n',
        ),
    ],
)
def test_the_settings_a_fix_adds_before_imports_are_set_aside_only_when_added(
    original: str, changed: str
) -> None:
    with pytest.raises(safety.UnsafeFixError):
        safety.check(original, changed)


def test_a_setting_added_before_an_import_is_accepted() -> None:
    original = "import jax\n\nprint(jax)\n"
    added = (
        'import os\n\nos.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")\n' + original
    )
    assert safety.check(original, added)
