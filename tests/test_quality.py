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
from tfmemlint.config import load_toml
from tfmemlint.docs import splice
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
    assert splice(readme) == readme, "run `python -m tfmemlint.docs` to refresh README.md"
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


def test_every_module_has_its_place_in_the_contracts() -> None:
    """A new module is placed on the map, or no contract would ever look at it: every module of
    the package sits in a layer (verify, its own wing, is held apart by two contracts of its
    own), and every module of `rules/` is a family or a shared fact."""
    contracts = load_toml(str(ROOT / "pyproject.toml"))["tool"]["importlinter"]
    layers = {c["name"]: c["layers"] for c in contracts["contracts"] if c["type"] == "layers"}

    def placed(name: str, prefix: str) -> set[str]:
        return {
            module.strip().removeprefix(prefix)
            for layer in layers[name]
            for module in re.split(r"[|:]", layer)
        }

    def modules(folder: Path) -> set[str]:
        return {
            path.stem if path.is_file() else path.name
            for path in folder.iterdir()
            if path.suffix == ".py" or (path / "__init__.py").is_file()
        } - {"__init__"}

    package = ROOT / "tfmemlint"
    top = placed("Layers: from the CLI down to the data model", "tfmemlint.")
    assert modules(package) - {"__main__", "verify"} == top
    on_facts = layers["Rule families stand on the shared facts"]
    assert modules(package / "rules") == placed("Rule families stand on the shared facts", "")
    families = {name.strip() for name in on_facts[0].split("|")}
    assert families == {*FAMILY_FOLDERS, *LAUNCH_FAMILY_FOLDERS}
    [alone] = [c["modules"] for c in contracts["contracts"] if c["type"] == "independence"]
    assert {name.removeprefix("tfmemlint.rules.") for name in alone} == families


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
