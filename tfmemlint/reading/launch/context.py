"""What a launch-file rule sees of one file, and how it makes a finding and an edit there."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tfmemlint.model import Edit, Finding, Fix, Rule
from tfmemlint.reading.launch.model import LaunchFile, Setting, Span
from tfmemlint.reading.source import LineIndex

if TYPE_CHECKING:
    from tfmemlint.configuration.settings import Policy


class LaunchContext:
    def __init__(self, filename: str, text: str, launch: LaunchFile, policy: Policy) -> None:
        self.filename = filename
        self.text = text
        self.launch = launch
        self.policy = policy
        self.lines = LineIndex(text)

    def finding(self, rule: Rule, message: str, span: Span, fix: Fix | None = None) -> Finding:
        start, end = span
        return Finding(
            rule.code,
            message,
            self.filename,
            self.lines.location(start),
            self.lines.location(max(start, end)),
            fix,
        )

    def insertion(self, offset: int, lines: str) -> Edit:
        """An edit that inserts `lines` (ending in a line break) at the start of a line, with
        the file's own line breaks; at the end of a file whose last line has none, after one."""
        newline = "\r\n" if "\r\n" in self.text else "\n"
        content = lines.replace("\n", newline)
        if offset == len(self.text) and self.text and not self.text.endswith("\n"):
            content = newline + content
        return self.edit((offset, offset), content)

    def edit(self, span: Span, content: str) -> Edit:
        start, end = span
        return Edit(start, end, content, self.lines.location(start), self.lines.location(end))

    def value_edit(self, setting: Setting, value: str) -> Edit | None:
        """The edit that writes `value` in place of the setting's value, in its own quotes; a
        plain YAML value gets double quotes, so that YAML reads a string. None where the value
        is not written where an edit can replace it."""
        if setting.value_span is None:
            return None
        quote = setting.quote or ('"' if setting.yaml_scalar else "")
        return self.edit(setting.value_span, f"{quote}{value}{quote}")
