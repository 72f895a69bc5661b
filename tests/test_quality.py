"""The code base's own gates: ruff's lint and format checks, mypy's type check, and a README whose
rule table lists every rule code the tool can emit."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tfmemlint.configuration.config_files import load_toml
from tfmemlint.faces.docs import splice
from tfmemlint.rules import ALL_RULES, FAMILY_FOLDERS, LAUNCH_FAMILY_FOLDERS


def _ruff(*args: str) -> subprocess.CompletedProcess:
    if importlib.util.find_spec("ruff") is None:
        pytest.fail("ruff is part of the test extra: pip install -e '.[test]'")
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args], cwd=ROOT, capture_output=True, text=True
    )


def test_the_package_type_checks() -> None:
    """mypy, configured in pyproject.toml: among its checks, that the engine's FileContext is
    the FileToFix that fixes are built on (`engine._fixes_build_on`)."""
    if importlib.util.find_spec("mypy") is None:
        pytest.fail("mypy is part of the test extra: pip install -e '.[test]'")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_check_is_clean() -> None:
    result = _ruff("check", "tfmemlint", "tests", "bench")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_is_clean() -> None:
    result = _ruff("format", "--check", "tfmemlint", "tests", "bench")
    assert result.returncode == 0, result.stdout + result.stderr


def test_readme_rule_section_is_generated_from_the_rule_pages() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert splice(readme) == readme, "run `python -m tfmemlint.faces.docs` to refresh README.md"
    for rule in ALL_RULES:
        assert f"| [{rule.code}]({rule.url}) |" in readme


def test_the_import_contracts_hold() -> None:
    """The layers, the families' independence and verify's separation, as pyproject.toml
    states them."""
    if importlib.util.find_spec("importlinter") is None:
        pytest.fail("import-linter is part of the test extra: pip install -e '.[test]'")
    lint_imports = Path(sys.executable).with_name("lint-imports")
    command = [str(lint_imports)] if lint_imports.exists() else ["lint-imports"]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


STAGES = "Stages: from the faces users meet down to the data model"
RULES_ON_FACTS = "Rule families stand on the shared facts"
MOST_ENTRIES = 12  # in any folder of the package but rules/, whose point is a folder per family


def _entries(folder: Path) -> set[str]:
    """A package folder's modules and subpackages, by name."""
    return {
        path.stem if path.is_file() else path.name
        for path in folder.iterdir()
        if path.suffix == ".py" or (path / "__init__.py").is_file()
    }


def _layered(layers: list[str], prefix: str) -> set[str]:
    return {
        module.strip().removeprefix(prefix)
        for layer in layers
        for module in re.split(r"[|:]", layer)
    }


def test_every_module_has_its_place_in_the_contracts() -> None:
    """A new module is placed on the map, or no contract would ever look at it: every entry of
    the package is a stage in the stages' layers, every module of a stage sits in its stage's
    own layers, and every module of `rules/` is a family or a shared fact."""
    contracts = load_toml(str(ROOT / "pyproject.toml"))["tool"]["importlinter"]["contracts"]
    layers = [c for c in contracts if c["type"] == "layers"]
    [stages] = [c["layers"] for c in layers if c["name"] == STAGES]
    package = ROOT / "tfmemlint"
    assert _entries(package) - {"__init__"} == _layered(stages, "tfmemlint.")
    inside = {c["containers"][0]: c["layers"] for c in layers if "containers" in c}
    for stage in _layered(stages, "tfmemlint."):
        folder = package / stage
        if stage in ("rules", "verify") or not folder.is_dir():
            continue  # rules/: below; verify/, its own wing: held apart by forbidden contracts
        assert _entries(folder) - {"__init__"} == _layered(inside[f"tfmemlint.{stage}"], ""), stage
    [on_facts] = [c["layers"] for c in layers if c["name"] == RULES_ON_FACTS]
    assert _entries(package / "rules") - {"__init__"} == _layered(on_facts, "")
    families = {name.strip() for name in on_facts[0].split("|")}
    assert families == {*FAMILY_FOLDERS, *LAUNCH_FAMILY_FOLDERS}
    [alone] = [c["modules"] for c in contracts if c["type"] == "independence"]
    assert {name.removeprefix("tfmemlint.rules.") for name in alone} == families
    assert not any("ignore_imports" in c for c in contracts), "the map has no exceptions"


def test_no_folder_of_the_package_holds_more_than_twelve_entries() -> None:
    """A folder that grows past a screenful is a stage that wants splitting (`rules/` aside)."""
    package = ROOT / "tfmemlint"
    crowded = {
        str(folder.relative_to(ROOT)): len(entries)
        for folder in [package, *(p for p in package.rglob("*") if (p / "__init__.py").is_file())]
        if folder != package / "rules"
        and len(entries := _entries(folder) | _data_files(folder)) > MOST_ENTRIES
    }
    assert crowded == {}


def _data_files(folder: Path) -> set[str]:
    """Files a folder ships beside its modules (a family's rule pages)."""
    return {p.name for p in folder.iterdir() if p.is_file() and p.suffix not in (".py", ".pyc")}


def test_no_module_imports_itself_in_a_circle() -> None:
    """Lazy imports inside functions count; imports for type checking only run nothing."""
    import grimp

    graph = grimp.build_graph(
        "tfmemlint", include_external_packages=False, exclude_type_checking_imports=True
    )
    imports = {module: graph.find_modules_directly_imported_by(module) for module in graph.modules}
    circles = [group for group in _strongly_connected(imports) if len(group) > 1]
    assert circles == []


def _strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's groups of modules that reach each other, without recursion."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                groups.append(sorted(group))
    return groups
