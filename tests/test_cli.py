"""The CLI contract, through the real command in a child process: exit codes, JSON shape, --diff,
--fix, --policy, selection, paths."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import BEFORE, run_cli
from tfmemlint import __version__

BARE = "import tensorflow.compat.v1 as tf\nsess = tf.Session()\n"
CLEAN = "import tensorflow.compat.v1 as tf\nsess = tf.InteractiveSession()\n"
DISABLED = (
    "import tensorflow.compat.v1 as tf\n"
    "sess = tf.Session(config=tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=False)))\n"
)


def test_version() -> None:
    result = run_cli("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"tfmemlint {__version__}"


def test_check_is_the_default_subcommand(write) -> None:
    path = write("a.py", BARE)
    implicit, explicit = run_cli(str(path)), run_cli("check", str(path))
    assert implicit.returncode == explicit.returncode == 1
    assert implicit.stdout == explicit.stdout


def test_exit_codes(write) -> None:
    clean, bare, disabled = (
        write("clean.py", CLEAN),
        write("bare.py", BARE),
        write("off.py", DISABLED),
    )
    assert run_cli(str(clean)).returncode == 0
    assert run_cli(str(bare)).returncode == 1
    assert run_cli("--exit-zero", str(bare)).returncode == 0
    assert run_cli("--policy", "fraction=0", str(bare)).returncode == 2
    assert run_cli("--policy", "fraction=1.5", str(bare)).returncode == 2
    assert run_cli("--select", "NOPE", str(bare)).returncode == 2
    assert run_cli("--fix", "--diff", str(bare)).returncode == 2
    # Fixed findings don't count; an unfixable one remains.
    assert run_cli("--fix", str(bare)).returncode == 0
    assert run_cli("--fix", str(disabled)).returncode == 1


def test_text_output_looks_like_ruff(write) -> None:
    path = write("a.py", BARE)
    result = run_cli(str(path))
    lines = result.stdout.splitlines()
    assert (
        lines[0]
        == f"{path}:2:8: TFM101 [*] `tf.Session()` is created without a GPU memory option and reserves nearly all GPU memory"
    )
    assert "2 | sess = tf.Session()" in result.stdout
    assert "  |        ^^^^^^^^^^^^" in result.stdout
    assert "= help: Pass `config=tf.ConfigProto(" in result.stdout
    assert lines[-1] == "Found 1 finding (1 fixable with `--fix`)."
    assert "\x1b[" not in result.stdout  # no colour in a pipe


def test_json_shape(write) -> None:
    path = write("a.py", BARE + DISABLED.split("\n", 1)[1])
    result = run_cli("--output-format", "json", str(path))
    assert result.returncode == 1
    findings = json.loads(result.stdout)
    assert [f["code"] for f in findings] == ["TFM101", "TFM103"]
    first = findings[0]
    assert set(first) == {
        "code",
        "message",
        "filename",
        "location",
        "end_location",
        "fix",
        "url",
        "cell",
    }
    assert first["cell"] is None  # a notebook's findings name their cell
    assert first["filename"] == str(path.resolve())
    assert first["location"] == {"row": 2, "column": 8}
    assert first["end_location"] == {"row": 2, "column": 20}
    assert first["url"] == "https://tfmemlint.github.io/tfmemlint/rules/tfm101/"
    assert first["fix"]["applicability"] == "safe"
    assert first["fix"]["message"].startswith("Pass `config=")
    [edit] = first["fix"]["edits"]
    assert edit == {
        "content": "config=tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True))",
        "location": {"row": 2, "column": 19},
        "end_location": {"row": 2, "column": 19},
    }
    assert findings[1]["fix"] is None


def test_json_edits_rebuild_the_fix(write, tmp_path: Path) -> None:
    """Applying the JSON edits by hand gives what --fix writes."""
    source = (BEFORE / "multiline_trailing_comma.py").read_text()
    path = write("a.py", source)
    findings = json.loads(run_cli("--output-format", "json", str(path)).stdout)
    lines = source.splitlines(keepends=True)

    def offset(where: dict[str, int]) -> int:
        return sum(len(line) for line in lines[: where["row"] - 1]) + where["column"] - 1

    edits = sorted(
        (e for f in findings for e in f["fix"]["edits"]),
        key=lambda e: offset(e["location"]),
        reverse=True,
    )
    text = source
    for edit in edits:
        text = (
            text[: offset(edit["location"])]
            + edit["content"]
            + text[offset(edit["end_location"]) :]
        )
    run_cli("--fix", str(path))
    assert path.read_text() == text


def test_json_is_empty_array_when_clean(write) -> None:
    result = run_cli("--output-format", "json", str(write("a.py", CLEAN)))
    assert result.returncode == 0
    assert json.loads(result.stdout) == []


def test_diff_writes_nothing(write, tmp_path: Path) -> None:
    path = write("a.py", BARE)
    before = path.stat()
    result = run_cli("--diff", "a.py", cwd=tmp_path)
    assert result.returncode == 1
    assert path.read_text() == BARE
    assert path.stat().st_mtime_ns == before.st_mtime_ns
    assert "--- a/a.py\n+++ b/a.py\n" in result.stdout  # git's prefixes: `git apply` takes it
    assert f"--- {path}\n" in run_cli("--diff", str(path)).stdout  # absolute: no prefixes
    assert "-sess = tf.Session()" in result.stdout
    assert (
        "+sess = tf.Session(config=tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True)))"
        in result.stdout
    )
    assert "Would fix 1 finding in 1 file." in result.stderr


def test_diff_of_a_clean_file_is_empty(write) -> None:
    result = run_cli("--diff", str(write("a.py", CLEAN)))
    assert result.returncode == 0
    assert result.stdout == ""


def test_fix_keeps_mode_and_reports(write) -> None:
    path = write("a.py", BARE)
    path.chmod(0o750)
    result = run_cli("--fix", str(path))
    assert result.returncode == 0
    assert "Found 1 finding (1 fixed, 0 remaining)." in result.stdout
    assert stat.S_IMODE(path.stat().st_mode) == 0o750
    assert "allow_growth=True" in path.read_text()
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".tfmemlint-")]


def test_fix_through_a_symlink_keeps_the_link(write, tmp_path: Path) -> None:
    target = write("real/a.py", BARE)
    link = tmp_path / "link.py"
    link.symlink_to(target)
    assert run_cli("--fix", str(link)).returncode == 0
    assert link.is_symlink()
    assert "allow_growth=True" in target.read_text()


def test_a_walk_neither_checks_nor_writes_a_link_out_of_the_project(tmp_path: Path) -> None:
    """`--fix .` leaves a link whose target lies outside the project as it is, and its target
    keeps every byte; `--verbose` names it. A link inside the project is checked once, and a
    link named on the command line is followed, as black does."""
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    (project / ".git").mkdir(parents=True)
    elsewhere.mkdir()
    victim = elsewhere / "victim.py"
    victim.write_bytes(BARE.encode())
    (project / "link.py").symlink_to(victim)
    (project / "src").mkdir()
    (project / "src" / "inner.py").write_text(BARE)
    (project / "src" / "again.py").symlink_to(project / "src" / "inner.py")
    done = run_cli("--no-cache", "--verbose", "--fix", ".", cwd=project / "src")
    assert done.returncode == 0, done.stdout + done.stderr
    assert victim.read_bytes() == BARE.encode()
    assert "allow_growth=True" in (project / "src" / "inner.py").read_text()
    done = run_cli("--no-cache", "--verbose", "--fix", ".", cwd=project)
    assert f"Skipped link.py: it links to {victim}, outside the project" in done.stderr
    assert victim.read_bytes() == BARE.encode()
    assert run_cli("--no-cache", "--fix", "link.py", cwd=project).returncode == 0
    assert "allow_growth=True" in victim.read_text()


def test_read_only_file_is_reported_not_written(write) -> None:
    path = write("a.py", BARE)
    path.chmod(0o444)
    result = run_cli("--fix", str(path))
    assert result.returncode == 1
    assert path.read_text() == BARE
    assert "read-only" in result.stdout
    assert stat.S_IMODE(path.stat().st_mode) == 0o444


def test_policy_fraction(write) -> None:
    path = write("a.py", BARE)
    assert run_cli("--fix", "--policy", "fraction=0.4", str(path)).returncode == 0
    assert "tf.GPUOptions(per_process_gpu_memory_fraction=0.4)" in path.read_text()


def test_unresolved_code_needs_select(write) -> None:
    path = write("a.py", "import tensorflow as tf\ndef f(c):\n    return tf.Session(config=c)\n")
    assert run_cli(str(path)).returncode == 0
    for option in ("--select", "--extend-select"):
        result = run_cli(option, "TFM190", "--output-format", "json", str(path))
        assert [f["code"] for f in json.loads(result.stdout)] == ["TFM190"]
    assert run_cli("--select", "TFM190", "--ignore", "TFM1", str(path)).returncode == 0


def test_directories_are_walked_and_skips_honoured(tmp_path: Path, write) -> None:
    write("pkg/a.py", BARE)
    write("pkg/sub/b.py", BARE)
    write("pkg/notes.txt", BARE)
    for skipped in (".hidden/c.py", "build/d.py", "__pycache__/e.py", "env/f.py", ".git/g.py"):
        write(skipped, BARE)
    write("env/pyvenv.cfg", "home = /usr\n")
    result = run_cli("--output-format", "json", str(tmp_path))
    names = sorted(os.path.relpath(f["filename"], tmp_path) for f in json.loads(result.stdout))
    assert names == ["pkg/a.py", "pkg/sub/b.py"]
    # A file named explicitly is checked wherever it is.
    assert run_cli(str(tmp_path / "build" / "d.py")).returncode == 1


def test_missing_path_is_reported_and_the_run_goes_on(write) -> None:
    path = write("a.py", BARE)
    result = run_cli("--output-format", "json", "does-not-exist.py", str(path))
    codes = [f["code"] for f in json.loads(result.stdout)]
    assert codes == ["TFM901", "TFM101"]
    assert result.returncode == 1


def test_syntax_error_is_a_diagnostic(write) -> None:
    bad = write("py2.py", 'import tensorflow as tf\nprint "x"\nsess = tf.Session()\n')
    good = write("good.py", BARE)
    result = run_cli("--fix", "--output-format", "json", str(bad), str(good))
    findings = json.loads(result.stdout)
    # Python 2, which has a code of its own; the session beside it is fixed, the print kept.
    assert [f["code"] for f in findings] == ["TFM904"]
    assert findings[0]["location"]["row"] == 2
    assert "allow_growth=True" in good.read_text()
    assert 'print "x"\nsess = tf.Session(config=' in bad.read_text()
    assert result.returncode == 1


def test_files_without_trigger_words_never_load_libcst(tmp_path: Path) -> None:
    import subprocess
    import sys

    for index in range(5):
        (tmp_path / f"m{index}.py").write_text("import os\nprint(os.sep)\n")
    code = (
        "import sys; from tfmemlint.faces.cli import main; sys.argv = ['tfmemlint', sys.argv[1]]\n"
        "try:\n    main()\nexcept SystemExit as exit:\n"
        "    assert exit.code == 0, exit.code\n"
        "    heavy = [m for m in ('libcst', 'rich', 'tensorflow') if m in sys.modules]\n"
        "    assert not heavy, heavy\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    "name", ["crlf_line_endings.py", "bom_utf8.py", "latin1_no_final_newline.py"]
)
def test_encodings_and_line_endings_survive(name: str, write) -> None:
    raw = (BEFORE / name).read_bytes()
    path = write(name, raw)
    assert run_cli("--fix", str(path)).returncode == 0
    new = path.read_bytes()
    assert new != raw
    assert new.startswith(b"\xef\xbb\xbf") == raw.startswith(b"\xef\xbb\xbf")
    assert new.count(b"\r\n") == raw.count(b"\r\n")
    assert new.endswith(b"\n") == raw.endswith(b"\n")


def test_the_lint_path_never_imports_verify_or_tensorflow(write) -> None:
    import subprocess
    import sys

    path = write("a.py", BARE)
    code = (
        "import sys; from tfmemlint.faces.cli import main; sys.argv = ['tfmemlint', '--fix', sys.argv[1]]\n"
        "try:\n    main()\nexcept SystemExit as exit:\n"
        "    assert exit.code == 0, exit.code\n"
        "    loaded = [m for m in sys.modules if m.startswith(('tfmemlint.verify', 'tensorflow'))]\n"
        "    assert not loaded, loaded\n"
        "    assert 'libcst' in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_server_without_the_lsp_extra_says_how_to_get_it() -> None:
    blocked = (
        "import sys; sys.modules['pygls'] = None; sys.argv = ['tfmemlint', 'server']\n"
        "from tfmemlint.faces.cli import main; main()"
    )
    done = subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True)
    assert done.returncode == 2
    assert "pip install 'tfmemlint[lsp]'" in done.stderr


@pytest.mark.parametrize(
    "named",
    [
        ["src"],  # one folder: each of its files once, a link to one of them skipped
        ["src", "src"],
        ["src", "src/a.py"],
        ["src/a.py", "src"],
        ["src/sub", "src"],
    ],
)
def test_each_file_is_checked_once_however_often_it_is_named(
    tmp_path: Path, named: list[str]
) -> None:
    from tfmemlint.configuration.discovery import discover

    (tmp_path / "src/sub").mkdir(parents=True)
    (tmp_path / "src/a.py").write_text(BARE)
    (tmp_path / "src/sub/b.py").write_text(BARE)
    (tmp_path / "src/z.py").symlink_to(tmp_path / "src/a.py")
    found = list(discover([str(tmp_path / path) for path in named]))
    real = sorted(os.path.realpath(path) for path in found)
    assert real == sorted({str(tmp_path / "src/a.py"), str(tmp_path / "src/sub/b.py")})
    result = run_cli("--isolated", "--no-cache", "--output-format", "json", *named, cwd=tmp_path)
    assert len(json.loads(result.stdout)) == 2
    assert list(discover([str(tmp_path / "src/sub")])) == [str(tmp_path / "src/sub/b.py")]
