"""Every output format and gate option (issue 5, first part), through the real CLI."""

from __future__ import annotations

import json
import os
from pathlib import Path
from xml.etree import ElementTree

import pytest

from tests.conftest import on_a_terminal, run_cli
from tfmemlint.rules import ALL_RULES

SOURCE = (
    "import tensorflow.compat.v1 as tf\n"
    "sess = tf.Session()\n"
    "off = tf.Session(config=tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=False)))\n"
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text(SOURCE)
    return tmp_path


def test_concise(project: Path) -> None:
    result = run_cli("--output-format", "concise", "train.py", cwd=project)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "train.py:2:8: TFM101 [*] `tf.Session()` is created without a GPU memory option and reserves nearly all GPU memory",
        "train.py:3:7: TFM103 `tf.Session()` gets a config that turns GPU memory limits off (`allow_growth=False`)",
    ]


def test_json_lines(project: Path) -> None:
    result = run_cli("--output-format", "json-lines", "train.py", cwd=project)
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["code"] for line in lines] == ["TFM101", "TFM103"]
    assert lines == json.loads(run_cli("--output-format", "json", "train.py", cwd=project).stdout)


def test_github_annotations(project: Path) -> None:
    result = run_cli("--output-format", "github", "train.py", cwd=project)
    first = result.stdout.splitlines()[0]
    assert first.startswith(
        "::error file=train.py,line=2,col=8,endLine=2,endColumn=20,title=TFM101::"
    )
    assert first.endswith("reserves nearly all GPU memory")


def test_sarif_has_the_2_1_0_structure(project: Path) -> None:
    result = run_cli("--output-format", "sarif", "train.py", cwd=project)
    document = json.loads(result.stdout)
    assert document["version"] == "2.1.0"
    assert document["$schema"].endswith("sarif-2.1.0.json")
    [run] = document["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "tfmemlint"
    assert [r["id"] for r in driver["rules"]] == [r.code for r in ALL_RULES]
    for rule in driver["rules"]:
        assert rule["shortDescription"]["text"] and rule["fullDescription"]["text"]
        assert rule["help"]["text"] and rule["help"]["markdown"]
        assert rule["helpUri"].startswith("https://")
        assert rule["defaultConfiguration"]["level"] in ("error", "warning", "note")
    results = run["results"]
    assert [r["ruleId"] for r in results] == ["TFM101", "TFM103"]
    for found in results:
        assert driver["rules"][found["ruleIndex"]]["id"] == found["ruleId"]
        assert found["level"] == "error" and found["message"]["text"]
        [location] = found["locations"]
        physical = location["physicalLocation"]
        assert physical["artifactLocation"]["uri"] == "train.py"
        assert set(physical["region"]) == {"startLine", "startColumn", "endLine", "endColumn"}
    assert results[0]["locations"][0]["physicalLocation"]["region"]["startLine"] == 2


def test_junit(project: Path) -> None:
    result = run_cli("--output-format", "junit", "train.py", cwd=project)
    root = ElementTree.fromstring(result.stdout)
    assert root.tag == "testsuites" and root.get("failures") == "2"
    [suite] = root
    assert suite.get("name") == "train.py"
    cases = list(suite)
    assert [c.get("name") for c in cases] == ["TFM101 2:8", "TFM103 3:7"]
    assert cases[0].find("failure").get("type") == "TFM101"


def test_output_file_and_environment_default(project: Path) -> None:
    result = run_cli("-o", "report.json", "--output-format", "json", "train.py", cwd=project)
    assert result.returncode == 1 and result.stdout == ""
    assert len(json.loads((project / "report.json").read_text())) == 2
    env = {**os.environ, "TFMEMLINT_OUTPUT_FORMAT": "concise"}
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "tfmemlint", "train.py"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.stdout.startswith("train.py:2:8: TFM101 [*]")


def test_statistics_quiet_and_exit_non_zero_on_fix(project: Path) -> None:
    stats = run_cli("--statistics", "train.py", cwd=project)
    assert stats.stdout.splitlines() == [
        "    1\tTFM101\t[*] session-without-config",
        "    1\tTFM103\t    memory-option-disabled",
    ]
    quiet = run_cli("-q", "train.py", cwd=project)
    assert "Found" not in quiet.stdout and "TFM101" in quiet.stdout
    (project / "fixable.py").write_text("import tensorflow.compat.v1 as tf\ns = tf.Session()\n")
    assert run_cli("--fix", "fixable.py", cwd=project).returncode == 0
    (project / "fixable.py").write_text("import tensorflow.compat.v1 as tf\ns = tf.Session()\n")
    assert run_cli("--fix", "--exit-non-zero-on-fix", "fixable.py", cwd=project).returncode == 1
    assert run_cli("--fix", "--exit-non-zero-on-fix", "fixable.py", cwd=project).returncode == 0


def test_rule_pages() -> None:
    page = run_cli("rule", "tfm101")
    assert page.returncode == 0
    assert page.stdout.startswith("TFM101 session-without-config\n")
    for heading in (
        "**What it does.**",
        "**Why it matters.**",
        "**Example.**",
        "**Use instead.**",
        "**Fix safety.**",
    ):
        assert heading in page.stdout
    every = run_cli("rule", "--all")
    assert all(f"{r.code} {r.name}\n" in every.stdout for r in ALL_RULES)
    assert run_cli("rule", "TFM999").returncode == 2
    assert run_cli("rule").returncode == 2


def test_stdin_for_editors() -> None:
    bare = "import tensorflow.compat.v1 as tf\ns = tf.Session()\n"
    checked = run_cli(
        "-", "--stdin-filename", "src/train.py", "--output-format", "concise", stdin=bare
    )
    assert checked.returncode == 1
    assert checked.stdout.startswith("src/train.py:2:5: TFM101 [*]")
    fixed = run_cli("--fix", "-", "--stdin-filename", "src/train.py", stdin=bare)
    assert fixed.returncode == 0
    assert fixed.stdout == (
        "import tensorflow.compat.v1 as tf\n"
        "s = tf.Session(config=tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True)))\n"
    )
    assert "1 fixed" in fixed.stderr
    untouched = run_cli("--fix", "-", stdin="import os\nprint(os.sep)\n")
    assert untouched.returncode == 0 and untouched.stdout == "import os\nprint(os.sep)\n"
    python2 = run_cli("--fix", "-", stdin="import tensorflow as tf\nprint 'x'\ns = tf.Session()\n")
    assert python2.stdout == (  # the session beside the set-aside print is fixed; TFM904 stays
        "import tensorflow as tf\nprint 'x'\n"
        "s = tf.Session(config=tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True)))\n"
    )
    assert python2.returncode == 1
    assert run_cli("-", "other.py", stdin="").returncode == 2


def test_show_fixes_prints_each_fix_as_a_diff(project: Path) -> None:
    result = run_cli("--show-fixes", "train.py", cwd=project)
    assert "    -sess = tf.Session()\n" in result.stdout
    assert (
        "    +sess = tf.Session(config=tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True)))\n"
        in result.stdout
    )


def _run_on_a_terminal(tmp_path: Path, env: dict[str, str]) -> str:
    """Run tfmemlint with stderr on a pseudo-terminal; return what the terminal saw."""
    return on_a_terminal("--exit-zero", ".", stream="stderr", cwd=tmp_path, env=env)


def test_progress_bar_on_a_terminal_only(tmp_path: Path) -> None:
    body = "import tensorflow.compat.v1 as tf\n" + "x = [1, 2, 3]\n" * 100 + "sess = tf.Session()\n"
    for index in range(60):
        (tmp_path / f"m{index:03d}.py").write_text(body)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["TFMEMLINT_PROGRESS_AFTER"] = "0"  # at once: a quick machine finishes in half a second
    assert "checking" in _run_on_a_terminal(tmp_path, env)
    assert "checking" not in _run_on_a_terminal(tmp_path, {**env, "TFMEMLINT_PROGRESS_AFTER": "60"})
    assert "checking" not in _run_on_a_terminal(tmp_path, {**env, "CI": "true"})
    piped = run_cli("--exit-zero", ".", cwd=tmp_path)
    assert "checking" not in piped.stderr
