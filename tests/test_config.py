"""Configuration files (issue 5): [tool.tfmemlint] and tfmemlint.toml, nearest wins, every key,
--config and --isolated, and a clear error for anything wrong."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import run_cli

BARE = "import tensorflow.compat.v1 as tf\nsess = tf.Session()\n"
UNRESOLVED = "import tensorflow.compat.v1 as tf\ndef f(c):\n    return tf.Session(config=c)\n"


def codes(result: subprocess.CompletedProcess) -> list[tuple[str, str]]:
    return [(Path(f["filename"]).name, f["code"]) for f in json.loads(result.stdout)]


def test_pyproject_section_selects_and_ignores(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.tfmemlint]\nextend-select = ["TFM190"]\nignore = ["TFM101"]\n'
    )
    (tmp_path / "a.py").write_text(BARE)
    (tmp_path / "b.py").write_text(UNRESOLVED)
    result = run_cli("--output-format", "json", ".", cwd=tmp_path)
    assert codes(result) == [("b.py", "TFM190")]
    # The command line adds to the file's choices, and --isolated drops the file.
    assert codes(run_cli("--output-format", "json", "--ignore", "TFM190", ".", cwd=tmp_path)) == []
    isolated = run_cli("--isolated", "--output-format", "json", ".", cwd=tmp_path)
    assert codes(isolated) == [("a.py", "TFM101")]


def test_nearest_file_wins_and_policy_and_format_apply(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.tfmemlint]\nselect = ["TFM9"]\n')
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "tfmemlint.toml").write_text('policy = "fraction=0.25"\noutput-format = "concise"\n')
    (sub / "a.py").write_text(BARE)
    result = run_cli("sub", cwd=tmp_path)
    assert result.stdout.startswith("sub/a.py:2:8: TFM101 [*]")  # concise, and TFM101 selected
    run_cli("--fix", "sub", cwd=tmp_path)
    assert "per_process_gpu_memory_fraction=0.25" in (sub / "a.py").read_text()
    explicit = run_cli(
        "--config", str(tmp_path / "pyproject.toml"), "--output-format", "json", "sub", cwd=tmp_path
    )
    assert codes(explicit) == []


def test_exclude_extend_exclude_and_per_file_ignores(tmp_path: Path) -> None:
    (tmp_path / "tfmemlint.toml").write_text(
        'extend-exclude = ["generated"]\n[per-file-ignores]\n"tests/*" = ["TFM1"]\n'
    )
    for folder in ("src", "tests", "generated", "build"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "m.py").write_text(BARE)
    result = run_cli("--output-format", "json", ".", cwd=tmp_path)
    assert sorted(Path(f["filename"]).parent.name for f in json.loads(result.stdout)) == ["src"]
    (tmp_path / "tfmemlint.toml").write_text('exclude = ["src"]\n')  # replaces the built-in list
    result = run_cli("--output-format", "json", ".", cwd=tmp_path)
    folders = sorted(Path(f["filename"]).parent.name for f in json.loads(result.stdout))
    assert folders == ["build", "generated", "tests"]


def test_gitignore_is_respected_by_default(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / ".gitignore").write_text("ignored_*.py\n")
    (tmp_path / "ignored_one.py").write_text(BARE)
    (tmp_path / "kept.py").write_text(BARE)
    assert codes(run_cli("--output-format", "json", ".", cwd=tmp_path)) == [("kept.py", "TFM101")]
    (tmp_path / "tfmemlint.toml").write_text("respect-gitignore = false\n")
    assert len(codes(run_cli("--output-format", "json", ".", cwd=tmp_path))) == 2
    # A file named explicitly is checked even when ignored.
    assert run_cli("ignored_one.py", cwd=tmp_path).returncode == 1


def git_repository(root: Path, gitignore: str) -> None:
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / ".gitignore").write_text(gitignore)


def test_a_named_folder_git_ignores_is_checked(tmp_path: Path) -> None:
    """As in ruff, ignore rules apply to what a walk finds below the paths given: naming a
    git-ignored folder checks it; a folder not ignored keeps git's rules inside it."""
    git_repository(tmp_path, "generated/\n*.skip.py\n")
    for name in ("generated/a.py", "generated/deep/b.py", "src/c.py", "src/d.skip.py", "top.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(BARE)
    named = run_cli("--output-format", "json", "generated", "src", cwd=tmp_path)
    assert named.returncode == 1, named.stderr
    assert sorted(codes(named)) == [("a.py", "TFM101"), ("b.py", "TFM101"), ("c.py", "TFM101")]
    walked = run_cli("--output-format", "json", ".", cwd=tmp_path)  # from above: left out
    assert sorted(codes(walked)) == [("c.py", "TFM101"), ("top.py", "TFM101")]
    # A named folder below an ignored one is named too.
    deep = run_cli("--output-format", "json", "generated/deep", cwd=tmp_path)
    assert codes(deep) == [("b.py", "TFM101")]


def test_a_pattern_that_names_the_file_itself_still_ignores_it(tmp_path: Path) -> None:
    """A whitelist `.gitignore` (`*`, then `!` for what to keep) matches the named folder and
    each file by its own name: the file stays ignored."""
    git_repository(tmp_path, "*\n!*.py\n!*/\n")
    (tmp_path / "src").mkdir()
    for name in ("a.py", "b.ipynb", "src/c.py", "src/d.ipynb"):
        (tmp_path / name).write_text("{}" if name.endswith(".ipynb") else BARE)
    result = run_cli("--output-format", "json", ".", cwd=tmp_path)
    assert sorted(codes(result)) == [("a.py", "TFM101"), ("c.py", "TFM101")]
    assert "Cannot read notebook" not in result.stdout  # the notebooks were never read


def test_odd_file_names_do_not_switch_off_gitignore(tmp_path: Path) -> None:
    git_repository(tmp_path, "ignored_*.py\n")
    (tmp_path / "ignored_one.py").write_text(BARE)
    (tmp_path / ":(glob)odd.py").write_text(BARE)
    found = codes(run_cli("--output-format", "json", ".", cwd=tmp_path))
    assert found == [(":(glob)odd.py", "TFM101")]


def test_respect_gitignore_on_the_command_line(tmp_path: Path) -> None:
    git_repository(tmp_path, "ignored_*.py\n")
    (tmp_path / "ignored_one.py").write_text(BARE)
    (tmp_path / "kept.py").write_text(BARE)
    (tmp_path / "tfmemlint.toml").write_text("respect-gitignore = false\n")
    both = run_cli("--output-format", "json", ".", cwd=tmp_path)
    assert len(codes(both)) == 2
    flag = run_cli("--output-format", "json", "--respect-gitignore", ".", cwd=tmp_path)
    assert codes(flag) == [("kept.py", "TFM101")]  # the flag wins over the file
    (tmp_path / "tfmemlint.toml").unlink()
    flag = run_cli("--output-format", "json", "--no-respect-gitignore", ".", cwd=tmp_path)
    assert len(codes(flag)) == 2


@pytest.mark.parametrize("how", ["flag", "configuration"])
def test_force_exclude_leaves_out_named_paths(tmp_path: Path, how: str) -> None:
    """pre-commit names every changed file: --force-exclude applies the excludes to them."""
    (tmp_path / "tfmemlint.toml").write_text(
        'extend-exclude = ["generated", "*_pb2.py"]\n'
        + ("force-exclude = true\n" if how == "configuration" else "")
    )
    for name in ("generated/g.py", "build/b.py", "m_pb2.py", "src/kept.py"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(BARE)
    named = ["generated/g.py", "build/b.py", "m_pb2.py", "src/kept.py", "generated"]
    flag = ["--force-exclude"] if how == "flag" else []
    forced = run_cli("--output-format", "json", *flag, *named, cwd=tmp_path)
    assert codes(forced) == [("kept.py", "TFM101")]
    if how == "flag":  # without it, every named path is checked
        plain = run_cli("--output-format", "json", *named, cwd=tmp_path)
        assert len(codes(plain)) == 4


def test_force_exclude_applies_to_stdin_and_virtualenvs(tmp_path: Path) -> None:
    (tmp_path / "tfmemlint.toml").write_text('extend-exclude = ["generated"]\n')
    (tmp_path / "env" / "lib").mkdir(parents=True)
    (tmp_path / "env" / "pyvenv.cfg").write_text("home = /usr\n")
    (tmp_path / "env" / "lib" / "m.py").write_text(BARE)
    forced = run_cli("--force-exclude", "--output-format", "json", "env/lib/m.py", cwd=tmp_path)
    assert codes(forced) == []
    for name, expected in (("generated/m.py", []), ("src/m.py", [("m.py", "TFM101")])):
        args = ["--force-exclude", "--output-format", "json", "--stdin-filename", name, "-"]
        result = run_cli(*args, cwd=tmp_path, stdin=BARE)
        assert codes(result) == expected, result.stderr


def test_checking_nothing_warns_and_never_says_all_passed(tmp_path: Path) -> None:
    git_repository(tmp_path, "*.py\n")
    (tmp_path / "empty").mkdir()
    (tmp_path / "only_ignored").mkdir()
    (tmp_path / "only_ignored" / "m.py").write_text(BARE)
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "m.py").write_text(BARE)
    runs = [
        run_cli("empty", cwd=tmp_path),
        run_cli(".", cwd=tmp_path),  # every file git-ignored
        run_cli("--force-exclude", "build/m.py", cwd=tmp_path),  # build output, named
    ]
    for result in runs:
        assert result.returncode == 0, result.stdout + result.stderr
        assert "warning: No Python files found under the given path(s)" in result.stderr
        assert "All checks passed" not in result.stdout + result.stderr


@pytest.mark.parametrize(
    "content, says",
    [
        ("selct = ['TFM101']\n", "unknown key 'selct'"),
        ("select = 'TFM101'\n", "'select' must be a list of strings"),
        ("select = ['NOPE']\n", "unknown rule selector 'NOPE'"),
        ("policy = 'fraction=3'\n", "outside (0, 1]"),
        ("output-format = 'xml'\n", "unknown output-format 'xml'"),
        ("respect-gitignore = 'yes'\n", "'respect-gitignore' must be true or false"),
        ("[per-file-ignores]\n'x' = 'TFM101'\n", "'per-file-ignores' must map globs"),
        ("select = [\n", "not valid TOML"),
    ],
)
def test_bad_configuration_is_a_clear_error(tmp_path: Path, content: str, says: str) -> None:
    (tmp_path / "tfmemlint.toml").write_text(content)
    (tmp_path / "a.py").write_text(BARE)
    result = run_cli("a.py", cwd=tmp_path)
    assert result.returncode == 2
    assert says in result.stderr
    assert "tfmemlint.toml" in result.stderr
