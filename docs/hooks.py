"""mkdocs hooks: the pages generated from tfmemlint's own code, so that they cannot drift.

- `rules/index.md` and one page per rule, from the rule families' pages (the text that
  `tfmemlint rule` prints and SARIF carries as help);
- the configuration reference, where `configuration.md` says `<!-- settings -->`;
- `changelog.md`, the repository's CHANGELOG.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

from tfmemlint.faces.docs import (
    render_rule_index,
    render_rule_page,
    render_settings,
    rule_page_path,
)
from tfmemlint.rules import ALL_RULES

ROOT = Path(__file__).resolve().parent.parent
SETTINGS_MARKER = "<!-- settings -->"
RULES_INTRO = """# Rules

Each rule has a page of its own, generated from the rule's code: the same text as
`tfmemlint rule CODE` and the help in SARIF output. A rule's address is stable:
`rules/<code>/`, the link that JSON output, SARIF and the language server give.

"""


def on_config(config: Any) -> Any:
    """List the rule pages in the navigation, under the index."""
    pages = [{"All rules": "rules/index.md"}] + [
        {f"{rule.code} {rule.name}": rule_page_path(rule)} for rule in ALL_RULES
    ]
    config["nav"] = [
        {"Rules": pages} if isinstance(item, dict) and "Rules" in item else item
        for item in config["nav"]
    ]
    return config


def on_files(files: Files, config: Any) -> Files:
    generated = {"rules/index.md": RULES_INTRO + render_rule_index() + "\n"}
    generated |= {rule_page_path(rule): render_rule_page(rule) for rule in ALL_RULES}
    generated["changelog.md"] = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    for path, content in generated.items():
        files.append(File.generated(config, path, content=content))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    return markdown.replace(SETTINGS_MARKER, render_settings())
