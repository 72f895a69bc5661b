"""The documentation is checked like code: the site builds strictly (a broken link or a missing
page fails), every rule has its page, the documented options are the CLI's own, the
configuration reference is the keys the code reads, and the README stays a front page."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, built_once, on_a_terminal, run_cli
from tfmemlint.configuration import config_files as config
from tfmemlint.model import DOCS_URL
from tfmemlint.rules import ALL_RULES

DOCS = ROOT / "docs"


def _mkdocs_build(project: Path, site: Path) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("material", reason="the docs extra (mkdocs-material) is in the test extra")
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built once for all workers."""

    def build(folder: Path) -> None:
        result = _mkdocs_build(ROOT, folder / "site")
        assert result.returncode == 0, result.stderr[-4000:]

    return built_once(tmp_path_factory, "site", build) / "site"


@pytest.mark.slow
def test_the_site_has_every_page_and_a_search_index(site: Path) -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in re.findall(r":\s+(\S+\.md)$", nav, re.M):
        built = site / page.removesuffix(".md") / "index.html"
        if page == "index.md":
            built = site / "index.html"
        elif page.endswith("/index.md"):
            built = site / page.removesuffix("index.md") / "index.html"
        assert built.is_file(), page
    for guide in ("pre-commit", "github-actions", "other-ci", "notebooks", "editors", "flake8"):
        assert (site / "guides" / guide / "index.html").is_file(), guide
    assert (site / "guides" / "adopting" / "index.html").is_file()
    index = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))
    locations = {doc["location"] for doc in index["docs"]}
    for rule in ALL_RULES:
        assert f"rules/{rule.code.lower()}/" in locations, rule.code


@pytest.mark.slow
def test_every_rule_has_its_page_at_the_address_findings_link_to(site: Path) -> None:
    rule_index = (site / "rules" / "index.html").read_text(encoding="utf-8")
    for rule in ALL_RULES:
        assert rule.url == f"{DOCS_URL}rules/{rule.code.lower()}/"
        page = (site / "rules" / rule.code.lower() / "index.html").read_text(encoding="utf-8")
        assert f"{rule.code} {rule.name}" in page
        assert "What it does." in page and "Fix safety." in page
        assert f'href="{rule.code.lower()}/"' in rule_index, rule.code
    # JSON output links each finding to its rule's page
    sample = ROOT / "fixtures" / "before" / "bare_session.py"
    result = run_cli("--no-cache", "--isolated", "--output-format", "json", str(sample))
    [finding, *_] = json.loads(result.stdout)
    assert finding["url"] == f"{DOCS_URL}rules/{finding['code'].lower()}/"


def test_the_base_url_is_chosen_once() -> None:
    mkdocs = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert f"site_url: {DOCS_URL}\n" in mkdocs
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert f'Documentation = "{DOCS_URL}"' in pyproject


@pytest.mark.slow
def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    """The build is strict: what a test of the real site relies on."""
    project = tmp_path / "project"
    shutil.copytree(DOCS, project / "docs")
    shutil.copy(ROOT / "mkdocs.yml", project)
    shutil.copy(ROOT / "CHANGELOG.md", project)
    guide = project / "docs" / "guides" / "flake8.md"
    guide.write_text(guide.read_text() + "\nSee [the missing page](missing.md).\n")
    result = _mkdocs_build(project, tmp_path / "site")
    assert result.returncode != 0
    assert "missing.md" in result.stderr


def _long_options(help_text: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", help_text)) - {"--help"}


def _documented_options(page: Path, header: str) -> set[str]:
    """The options in the first table under `header` on a page."""
    text = page.read_text(encoding="utf-8")
    table = text[text.index(header) :].split("\n\n", 1)[0]
    return _long_options(table)


@pytest.mark.parametrize(
    ("command", "page", "header"),
    [
        ("check", DOCS / "usage.md", "| option | meaning |"),
        ("verify", DOCS / "verify.md", "| option | meaning |"),
    ],
)
def test_the_documented_options_are_the_cli_options(command: str, page: Path, header: str) -> None:
    result = run_cli(command, "--help")
    assert result.returncode == 0
    assert _documented_options(page, header) == _long_options(result.stdout)


@pytest.mark.slow
def test_the_configuration_reference_is_the_keys_the_code_reads(site: Path, tmp_path: Path) -> None:
    assert {setting.key for setting in config.SETTINGS} == config.KEYS
    reference = (site / "configuration" / "index.html").read_text(encoding="utf-8")
    check_help = run_cli("check", "--help").stdout
    for setting in config.SETTINGS:
        assert f"<code>{setting.key}</code>" in reference, setting.key
        if setting.flag:
            assert setting.flag in check_help, setting.flag
        # The documented default, written as TOML, is a value the reader accepts...
        literal = setting.default if setting.default[:1] in '"[{tf' else None
        if literal is not None and not literal.startswith("the"):
            path = tmp_path / f"{setting.key}.toml"
            value = "{}" if setting.kind == config.TABLE else literal
            path.write_text(f"{setting.key} = {value}\n")
            assert config.load(str(path)).get(setting.key) is not None
        # ...and a value of another type is refused, naming the key.
        wrong = tmp_path / f"wrong-{setting.key}.toml"
        wrong.write_text(f"{setting.key} = 3\n")
        with pytest.raises(config.ConfigError, match=re.escape(repr(setting.key))):
            config.load(str(wrong))


def test_the_readme_is_a_front_page() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250
    for rule in ALL_RULES:
        assert f"| [{rule.code}]({rule.url}) |" in readme
    for release_file in ("LICENSE", "CHANGELOG.md", "CONTRIBUTING.md"):
        assert (ROOT / release_file).is_file()
    assert "MIT License" in (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "## [Unreleased]" in (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")


def test_every_rule_says_what_it_does_in_at_most_sixty_words() -> None:
    """The rest of a long page goes under the headings every page shares (`RuleDoc.details`)."""
    from tfmemlint.rules import ALL_RULES
    from tfmemlint.rules.family import CONFIGURED, LOOKS_AT, NOT_REPORTED, PROGRAM

    for rule in ALL_RULES:
        assert len(rule.doc.what_it_does.split()) <= 60, rule.code
        assert {heading for heading, _ in rule.doc.details} <= {
            LOOKS_AT,
            CONFIGURED,
            PROGRAM,
            NOT_REPORTED,
        }, rule.code


def test_a_rule_page_in_a_terminal_is_rendered_markdown() -> None:
    """In a terminal (a pseudo-terminal here) rich renders the page; in a pipe it is the
    site's Markdown."""
    piped = run_cli("rule", "TFM205").stdout
    assert piped.startswith("TFM205 unconfigured-tf2-script\n\n**What it does.**")
    assert "### Where the program starts" in piped
    text = on_a_terminal("rule", "TFM205", env={**os.environ, "COLUMNS": "100", "TERM": "xterm"})
    assert "Where the program starts" in text
    assert "**What it does.**" not in text and "### " not in text  # rendered, not raw
