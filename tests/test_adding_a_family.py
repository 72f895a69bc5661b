"""The development page's worked example, run: a rule family added exactly as the page says,
in a copy of the package, so the real registry never holds it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.conftest import ROOT, run_cli

SECTION = "## Adding a rule family: a worked example"
SCRIPT = """\
import os

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "0")
"""


def _blocks() -> list[str]:
    page = (ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    section = page.split(SECTION, 1)[1]
    return [textwrap.dedent(block) for block in re.findall(r"```python\n(.*?)```", section, re.S)]


def _add_the_family(copy: Path) -> None:
    """Steps 1 to 4 of the page: the page and logic files, the registry line, the contracts."""
    blocks = _blocks()
    files = [block for block in blocks if block.startswith("# tfmemlint/")]
    [registry_line] = [block.strip() for block in blocks if block not in files]
    assert len(files) == 2
    for block in files:
        first, _, body = block.partition("\n")
        path = copy / first.removeprefix("# ")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")
    folder = registry_line.strip('",')

    registry = copy / "tfmemlint" / "rules" / "__init__.py"
    head, opening, rest = registry.read_text(encoding="utf-8").partition("FAMILY_FOLDERS = (\n")
    folders, closing, tail = rest.partition(")\n")
    registry.write_text(f"{head}{opening}{folders}    {registry_line}\n{closing}{tail}")

    pyproject = copy / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    text, alone = re.subn(
        r'(\n    "tfmemlint\.rules\.whole_script",\n)',
        rf'\1    "tfmemlint.rules.{folder}",\n',
        text,
    )
    text, on_facts = re.subn(r'(\| whole_script)(",)', rf"\1 | {folder}\2", text)
    assert (alone, on_facts) == (1, 1)
    pyproject.write_text(text, encoding="utf-8")


def test_a_family_added_as_the_development_page_says_finds_and_keeps_the_contracts(
    tmp_path: Path,
) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(ROOT / "tfmemlint", copy / "tfmemlint", ignore=shutil.ignore_patterns("*.pyc"))
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    _add_the_family(copy)
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    env = {"PYTHONPATH": str(copy)}

    args = ("--isolated", "--no-cache", "--output-format", "json", str(script))
    found = run_cli("check", "--select", "TFM801", *args, cwd=tmp_path, env=env)
    assert found.returncode == 1, found.stderr
    [finding] = json.loads(found.stdout)
    assert finding["code"] == "TFM801"
    assert finding["location"]["row"] == 3
    assert finding["message"] == "TF_CPP_MIN_LOG_LEVEL=3 hides TensorFlow's GPU memory log"
    assert finding["url"] == "https://tfmemlint.github.io/tfmemlint/rules/tfm801/"
    # Off by default, as the page declares it.
    assert run_cli("check", *args, cwd=tmp_path, env=env).stdout.strip() == "[]"

    page = run_cli("rule", "TFM801", cwd=tmp_path, env=env)
    assert page.returncode == 0 and "log-hides-gpu-memory" in page.stdout

    # The new family imports only shared facts, and its code is as clean as the rest.
    lint_imports = Path(sys.executable).with_name("lint-imports")
    contracts = subprocess.run(
        [str(lint_imports) if lint_imports.exists() else "lint-imports"],
        cwd=copy,
        env={**os.environ, "PYTHONPATH": str(copy)},
        capture_output=True,
        text=True,
    )
    assert contracts.returncode == 0, contracts.stdout + contracts.stderr
    family = copy / "tfmemlint" / "rules" / "log_level"
    ruff = [sys.executable, "-m", "ruff"]
    style = subprocess.run([*ruff, "check", str(family)], cwd=copy, capture_output=True, text=True)
    assert style.returncode == 0, style.stdout
    layout = subprocess.run(
        [*ruff, "format", "--check", str(family)], cwd=copy, capture_output=True, text=True
    )
    assert layout.returncode == 0, layout.stdout
