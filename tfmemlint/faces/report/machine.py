"""Reports for machines: ruff-shaped JSON and JSON lines, GitHub workflow commands, SARIF 2.1.0
and JUnit XML."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import IO, Any

from tfmemlint import __version__
from tfmemlint.model import DOCS_URL, FileResult, Finding, Location
from tfmemlint.rules import ALL_RULES, RULES_BY_CODE


def _location(where: Location) -> dict[str, int]:
    return {"row": where.row, "column": where.column}


def finding_to_json(finding: Finding) -> dict[str, Any]:
    fix = None
    if finding.fix is not None:
        fix = {
            "applicability": finding.fix.applicability,
            "message": finding.fix.message,
            "edits": [
                {
                    "content": edit.content,
                    "location": _location(edit.location),
                    "end_location": _location(edit.end_location),
                }
                for edit in finding.fix.edits
            ],
        }
    return {
        "code": finding.code,
        "message": finding.message,
        "filename": os.path.abspath(finding.filename),
        "location": _location(finding.location),
        "end_location": _location(finding.end_location),
        "fix": fix,
        "url": rule.url if (rule := RULES_BY_CODE.get(finding.code)) else None,
        "cell": finding.cell,
    }


def write_json(results: Sequence[FileResult], out: IO[str]) -> None:
    findings = [finding_to_json(f) for result in results for f in result.findings]
    json.dump(findings, out, indent=2, ensure_ascii=False)
    out.write("\n")


def write_json_lines(results: Sequence[FileResult], out: IO[str]) -> None:
    for result in results:
        for finding in result.findings:
            out.write(json.dumps(finding_to_json(finding), ensure_ascii=False) + "\n")


_GITHUB_LEVELS = {"error": "error", "warning": "warning", "info": "notice"}


def _escape_github(text: str, property_value: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if property_value else text


def write_github(results: Sequence[FileResult], out: IO[str]) -> None:
    """Workflow commands: each finding becomes an annotation on the pull request."""
    for result in results:
        for finding in result.findings:
            rule = RULES_BY_CODE.get(finding.code)
            level = _GITHUB_LEVELS[rule.level if rule else "error"]
            start, end = finding.location, finding.end_location
            properties = ",".join(
                [
                    f"file={_escape_github(finding.filename, True)}",
                    f"line={start.row}",
                    f"col={start.column}",
                    f"endLine={end.row}",
                    f"endColumn={end.column}",
                    f"title={finding.code}",
                ]
            )
            out.write(f"::{level} {properties}::{_escape_github(finding.message)}\n")


_SARIF_LEVELS = {"error": "error", "warning": "warning", "info": "note"}


def sarif_document(results: Sequence[FileResult]) -> dict[str, Any]:
    """SARIF 2.1.0, as GitHub code scanning takes it: every rule with its help, then results."""
    rules = [
        {
            "id": rule.code,
            "name": rule.name,
            "shortDescription": {"text": rule.summary},
            "fullDescription": {"text": rule.doc.what_it_does},
            "help": {
                "text": f"{rule.doc.why}\n\nFix: {rule.doc.fix_safety}",
                "markdown": (
                    f"{rule.doc.what_it_does}\n\n**Why it matters.** {rule.doc.why}\n\n"
                    f"**Example.**\n\n```{rule.doc.language}\n{rule.doc.example}\n```\n\n"
                    f"**Use instead.**\n\n```{rule.doc.language}\n{rule.doc.use_instead}\n```\n\n"
                    f"**Fix safety.** {rule.doc.fix_safety}\n\n"
                    f"**In files that need recovery.** {rule.doc.recovery}"
                ),
            },
            "helpUri": rule.url,
            "defaultConfiguration": {"level": _SARIF_LEVELS[rule.level]},
        }
        for rule in ALL_RULES
    ]
    index = {rule.code: position for position, rule in enumerate(ALL_RULES)}
    findings = []
    for result in results:
        for finding in result.findings:
            rule = RULES_BY_CODE.get(finding.code)
            start, end = finding.location, finding.end_location
            findings.append(
                {
                    "ruleId": finding.code,
                    "ruleIndex": index.get(finding.code, 0),
                    "level": _SARIF_LEVELS[rule.level if rule else "error"],
                    "message": {"text": finding.message},
                    "locations": [
                        {
                            "physicalLocation": {
                                "artifactLocation": {"uri": _uri(finding.filename)},
                                "region": {
                                    "startLine": start.row,
                                    "startColumn": start.column,
                                    "endLine": end.row,
                                    "endColumn": end.column,
                                },
                            }
                        }
                    ],
                }
            )
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "tfmemlint",
                        "version": __version__,
                        "informationUri": DOCS_URL,
                        "rules": rules,
                    }
                },
                "results": findings,
            }
        ],
    }


def _uri(filename: str) -> str:
    """A relative path stays relative (code scanning resolves it against the checkout)."""
    path = filename if os.path.isabs(filename) else os.path.normpath(filename)
    return path.replace(os.sep, "/")


def write_sarif(results: Sequence[FileResult], out: IO[str]) -> None:
    json.dump(sarif_document(results), out, indent=2, ensure_ascii=False)
    out.write("\n")


def write_junit(results: Sequence[FileResult], out: IO[str]) -> None:
    """One test suite per file with findings, one failed test case per finding."""
    from xml.etree import ElementTree as tree

    findings = [f for result in results for f in result.findings]
    root = tree.Element(
        "testsuites", name="tfmemlint", tests=str(len(findings)), failures=str(len(findings))
    )
    for result in results:
        if not result.findings:
            continue
        suite = tree.SubElement(
            root,
            "testsuite",
            name=result.filename,
            tests=str(len(result.findings)),
            failures=str(len(result.findings)),
        )
        for finding in result.findings:
            where = finding.location
            case = tree.SubElement(
                suite,
                "testcase",
                name=f"{finding.code} {where.row}:{where.column}",
                classname=result.filename,
                file=result.filename,
                line=str(where.row),
            )
            failure = tree.SubElement(case, "failure", message=finding.message, type=finding.code)
            failure.text = f"{finding.filename}:{where.row}:{where.column}: {finding.message}"
    tree.indent(root)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write(tree.tostring(root, encoding="unicode"))
    out.write("\n")
