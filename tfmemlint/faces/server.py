"""`tfmemlint server`: the Language Server Protocol over stdio, on pygls (`tfmemlint[lsp]`).

Each buffer is checked from its unsaved text by the CLI's own path (`file_check.check_stdin`),
with the configuration nearest the document, so an editor shows exactly what `tfmemlint check`
would say.
A notebook document's code cells are checked as one notebook, and each cell gets its findings.
Fixes are the CLI's byte-exact edits, applied to the buffer.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from tfmemlint import __version__
from tfmemlint.model import Edit, Finding, Location
from tfmemlint.reading.source import LineIndex, declared_encoding, minimal_change

if TYPE_CHECKING:
    from tfmemlint.project.summary_store import SummaryStore
    from tfmemlint.reading.notebook import Notebook

# A change waits this long for the next keystroke before the buffer is checked again.
DEBOUNCE_S = float(os.environ.get("TFMEMLINT_LSP_DEBOUNCE_S", "0.25"))
FIX_ALL = "source.fixAll.tfmemlint"
_SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "info": types.DiagnosticSeverity.Information,
}


# A fix as the client applies it: text edits by document (a notebook's fix may edit other cells).
Changes = dict[str, list[types.TextEdit]]


@dataclass
class _Checked:
    """One editor document as last checked: its text, the findings in it (rows and columns of
    that text; for a cell, of the cell), and each fixable finding's edits."""

    text: str
    version: int | None
    findings: list[Finding] = field(default_factory=list)
    fixes: dict[Finding, Changes] = field(default_factory=dict)
    fixed_all: list[types.CodeAction] | None = None  # fix-all, once asked for


class TfmemlintServer(LanguageServer):
    """pygls's server, with what it last found in each open document and the checks waiting
    for edits to pause."""

    def __init__(self) -> None:
        cells = [types.NotebookCellLanguage(language="python")]
        super().__init__(
            "tfmemlint",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            notebook_document_sync=types.NotebookDocumentSyncOptions(
                notebook_selector=[types.NotebookDocumentFilterWithCells(cells=cells)],
                save=True,
            ),
        )
        self.checked: dict[str, _Checked] = {}  # by text document (or cell) URI
        self.waiting: dict[str, asyncio.Task[None]] = {}  # debounced checks, by document URI

    # -- checking ---------------------------------------------------------------------------
    def check(self, uri: str) -> None:
        """Check a text document, or the notebook a cell belongs to, and publish diagnostics."""
        notebook = self.workspace.get_notebook_document(notebook_uri=uri)
        if notebook is None:
            notebook = self.workspace.get_notebook_document(cell_uri=uri)
        from tfmemlint.configuration.config_files import ConfigError
        from tfmemlint.configuration.settings import SettingsError

        try:
            if notebook is not None:
                self._check_notebook(notebook)
            else:
                self._check_text(uri)
        except (ConfigError, SettingsError) as exc:  # the user's to mend: say it plainly
            self.window_show_message(
                types.ShowMessageParams(types.MessageType.Error, f"tfmemlint: {exc}")
            )
        except Exception as exc:  # one bad buffer must never stop the server
            self.window_log_message(
                types.LogMessageParams(types.MessageType.Error, f"tfmemlint: {exc!r}")
            )

    def _check_text(self, uri: str) -> None:
        document = self.workspace.get_text_document(uri)
        findings, _ = _run(_path(uri), document.source, "check")
        lines = LineIndex(document.source)
        fixes = {
            finding: {uri: [self._text_edit(lines, edit) for edit in finding.fix.edits]}
            for finding in findings
            if finding.fix is not None
        }
        self.checked[uri] = _Checked(document.source, document.version, findings, fixes)
        self._publish(uri, document.version)

    def _check_notebook(self, notebook: types.NotebookDocument) -> None:
        """The code cells, checked as the notebook they make; each finding, and each edit of
        its fix, goes to the cell it is in."""
        from tfmemlint.reading.notebook import Notebook
        from tfmemlint.running.file_check import in_cell

        cells = self._code_cells(notebook)
        texts = [self.workspace.get_text_document(cell).source for cell in cells]
        source = _notebook_json(texts)
        findings, _ = _run(_notebook_path(notebook.uri), source, "check", in_cells=False)
        document = Notebook.parse(source)
        module, origin = document.module()
        checked = [
            _Checked(text, self.workspace.get_text_document(cell).version)
            for cell, text in zip(cells, texts, strict=True)
        ]
        for finding in findings:
            placed = in_cell(finding, origin)
            if placed.cell is None:
                continue  # on a line between cells: none is there
            mine = placed._replace(cell=None)
            checked[placed.cell - 1].findings.append(mine)
            fix = self._cell_fix(finding, document, module, cells, texts)
            if fix is not None:
                checked[placed.cell - 1].fixes[mine] = fix
        for cell, state in zip(cells, checked, strict=True):
            self.checked[cell] = state
            self._publish(cell, state.version)

    def _cell_fix(
        self,
        finding: Finding,
        notebook: Notebook,
        module: str,
        cells: list[str],
        texts: list[str],
    ) -> Changes | None:
        """A finding's fix (edits of the cells' module) as an edit of each cell it changes,
        made as `--fix` makes it; None when it has none, or the cells cannot take it."""
        from tfmemlint.fixing import fixes
        from tfmemlint.reading.notebook import NotebookError

        if finding.fix is None:
            return None
        applied, fixed = fixes.apply([finding.fix], module)
        try:
            changed = notebook.changed_sources(fixed)
        except NotebookError:  # an edit that crosses a cell's end
            return None
        if not applied:
            return None
        # The notebook was built from these cells alone, in order: cell N is the Nth.
        return {
            cells[cell.number - 1]: self.edit(texts[cell.number - 1], source)
            for cell, source in changed
        }

    def _text_edit(self, lines: LineIndex, edit: Edit) -> types.TextEdit:
        return types.TextEdit(self._range(lines, edit.location, edit.end_location), edit.content)

    def _code_cells(self, notebook: types.NotebookDocument) -> list[str]:
        return [
            cell.document
            for cell in notebook.cells
            if cell.kind == types.NotebookCellKind.Code
            and self.workspace.get_text_document(cell.document).language_id in (None, "python")
        ]

    def _publish(self, uri: str, version: int | None) -> None:
        checked = self.checked[uri]
        lines = LineIndex(checked.text)
        diagnostics = [self._diagnostic(finding, lines) for finding in checked.findings]
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version)
        )

    def _diagnostic(self, finding: Finding, lines: LineIndex) -> types.Diagnostic:
        from tfmemlint.rules import RULES_BY_CODE

        rule = RULES_BY_CODE.get(finding.code)
        return types.Diagnostic(
            range=self._range(lines, finding.location, finding.end_location),
            message=finding.message,
            severity=_SEVERITY[rule.level if rule else "error"],
            code=finding.code,
            code_description=types.CodeDescription(href=rule.url) if rule else None,
            source="tfmemlint",
        )

    def latest(self, uri: str) -> _Checked | None:
        """The document as last checked, checked again first when it changed since; None when
        no check of its current text could be made."""
        checked = self.checked.get(uri)
        if unquote(uri) not in self.workspace.text_documents:  # pygls keys them unquoted
            return checked
        version = self.workspace.get_text_document(uri).version
        if checked is None or checked.version != version:
            self.check(uri)
            checked = self.checked.get(uri)
        return checked if checked is not None and checked.version == version else None

    # -- positions: rows and columns of characters, as the client counts them ---------------
    def _range(self, lines: LineIndex, start: Location, end: Location) -> types.Range:
        return types.Range(self._position(lines, start), self._position(lines, end))

    def _position(self, lines: LineIndex, where: Location) -> types.Position:
        if where.row > len(lines.starts):
            return types.Position(line=where.row - 1, character=0)
        before = lines.line(where.row)[: where.column - 1]
        units = self.workspace.position_codec.client_num_units(before)
        return types.Position(line=where.row - 1, character=units)

    def location(self, lines: LineIndex, position: types.Position) -> Location:
        """A client's position as a row and a 1-based column of characters."""
        row = position.line + 1
        if row > len(lines.starts):
            return Location(row, 1)
        line, units, column = lines.line(row), 0, 0
        while column < len(line) and units < position.character:
            units += self.workspace.position_codec.client_num_units(line[column])
            column += 1
        return Location(row, column + 1)

    def edit(self, old: str, new: str) -> list[types.TextEdit]:
        """One edit that turns `old` into `new`: the span between what they share at either
        end, so that the rest of the buffer (and the cursor in it) stays put."""
        if old == new:
            return []
        start, end, content = minimal_change(old, new)
        lines = LineIndex(old)
        where = self._range(lines, lines.location(start), lines.location(end))
        return [types.TextEdit(range=where, new_text=content)]


def _path(uri: str) -> str:
    """The file a document is, or would be: a buffer never saved is checked as if it were a
    file in the current folder."""
    path = to_fs_path(uri) if uri.startswith("file:") else None
    if path:
        return path
    name = uri.rstrip("/").rpartition("/")[2] or "untitled.py"
    return os.path.join(os.getcwd(), name)


def _notebook_path(uri: str) -> str:
    """A notebook document's file, named so that it is read as a notebook (an untitled one,
    VS Code's interactive window, a Jupytext `.py` notebook)."""
    path = _path(uri)
    return path if path.endswith(".ipynb") else path + ".ipynb"


def _buffer_bytes(path: str, text: str) -> bytes:
    """The buffer as the file's bytes would be: in the encoding its coding cookie names (as
    Python reads the cookie, on either of the first two lines)."""
    if path.endswith(".ipynb"):
        return text.encode("utf-8")
    as_utf8 = text.encode("utf-8", "surrogatepass")
    try:
        encoding = declared_encoding(as_utf8)
        return text.encode("utf-8" if encoding == "utf-8-sig" else encoding)
    except (SyntaxError, LookupError, UnicodeError):
        return as_utf8  # the check reports the cookie, as it would for the file


def _settings(path: str) -> tuple[Any, SummaryStore | None] | None:
    """The settings `tfmemlint check PATH` would use, and the cache's store of module summaries
    it would share; None for a file its configuration excludes (as `--force-exclude` would). A
    configuration that cannot be used raises config.ConfigError or settings.SettingsError."""
    from tfmemlint.configuration import config_files as config
    from tfmemlint.configuration import settings
    from tfmemlint.configuration.discovery import Exclusions
    from tfmemlint.rules import ALL_RULES

    file_config = config.resolve([path], None, False)
    if Exclusions.configured(file_config, None, force=True).skip_named(path):
        return None
    current = settings.build(file_config, ALL_RULES, None, [], [], [])
    from tfmemlint.running.cache import store_for_a_source

    # A relative TFMEMLINT_CACHE_DIR would be relative to the server's folder, no project's.
    given = os.environ.get("TFMEMLINT_CACHE_DIR")
    given = given if given and os.path.isabs(given) else None
    fingerprint = _fingerprint()
    if fingerprint is None:
        return current, None
    return current, store_for_a_source(file_config, given, fingerprint)


@functools.cache
def _fingerprint() -> str | None:
    """The tool's fingerprint, taken as the server starts: that of the code this process runs,
    even after the installed package changes; None where it cannot be taken (the package is
    being replaced), and the server keeps no summaries."""
    from tfmemlint.running.cache import tool_fingerprint

    try:
        return tool_fingerprint()
    except OSError:
        return None


def _run(path: str, text: str, mode: str, in_cells: bool = True) -> tuple[list[Finding], str]:
    """The findings in a buffer (a notebook's JSON for a path ending in `.ipynb`: see
    `file_check.check_stdin` for `in_cells`), and the text fixed under mode "fix"."""
    from tfmemlint.running import file_check

    found = _settings(path)
    if found is None:
        return [], text
    current, store = found
    raw = _buffer_bytes(path, text)
    result, out = file_check.check_stdin(
        path,
        raw,
        current,
        mode,  # type: ignore[arg-type]
        in_cells=in_cells,
        store=store,
    )
    if out == raw:
        return result.findings, text
    from tfmemlint.reading.source import SourceText

    fixed = out.decode("utf-8") if path.endswith(".ipynb") else SourceText.decode(out).text
    return result.findings, fixed


def _notebook_json(cells: Sequence[str]) -> str:
    """Code cells as a notebook's JSON, each in its order: finding `cell` N is the Nth."""
    document = {
        "cells": [
            {
                "cell_type": "code",
                "metadata": {},
                "source": text,
                "outputs": [],
                "execution_count": None,
            }
            for text in cells
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(document, ensure_ascii=False)


def _cell_sources(notebook_json: str) -> list[str]:
    sources = [cell["source"] for cell in json.loads(notebook_json)["cells"]]
    return ["".join(source) if isinstance(source, list) else source for source in sources]


def _touches(finding: Finding, start: Location, end: Location) -> bool:
    """Whether a finding's span meets the range [start, end] (a cursor counts)."""
    return finding.location <= end and start <= finding.end_location


def build() -> TfmemlintServer:
    server = TfmemlintServer()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: TfmemlintServer, params: types.DidOpenTextDocumentParams) -> None:
        if ls.workspace.get_notebook_document(cell_uri=params.text_document.uri) is None:
            ls.check(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: TfmemlintServer, params: types.DidChangeTextDocumentParams) -> None:
        _later(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: TfmemlintServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.check(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: TfmemlintServer, params: types.DidCloseTextDocumentParams) -> None:
        _cancel(ls, params.text_document.uri)
        _forget(ls, [params.text_document.uri])

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def notebook_open(ls: TfmemlintServer, params: types.DidOpenNotebookDocumentParams) -> None:
        ls.check(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def notebook_change(ls: TfmemlintServer, params: types.DidChangeNotebookDocumentParams) -> None:
        structure = params.change.cells.structure if params.change.cells else None
        closed = [cell.uri for cell in (structure.did_close or [])] if structure else []
        _forget(ls, closed)
        _later(ls, params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def notebook_save(ls: TfmemlintServer, params: types.DidSaveNotebookDocumentParams) -> None:
        ls.check(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_close(ls: TfmemlintServer, params: types.DidCloseNotebookDocumentParams) -> None:
        _cancel(ls, params.notebook_document.uri)
        _forget(ls, [cell.uri for cell in params.cell_text_documents])

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL], resolve_provider=False
        ),
    )
    def code_action(
        ls: TfmemlintServer, params: types.CodeActionParams
    ) -> list[types.CodeAction] | None:
        return _code_actions(ls, params)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: TfmemlintServer, params: types.HoverParams) -> types.Hover | None:
        return _hover(ls, params)

    return server


def _later(ls: TfmemlintServer, uri: str) -> None:
    """Check `uri` once its edits pause (the notebook, for a cell)."""
    notebook = ls.workspace.get_notebook_document(cell_uri=uri)
    key = notebook.uri if notebook is not None else uri
    _cancel(ls, key)

    async def check_when_quiet() -> None:
        await asyncio.sleep(DEBOUNCE_S)
        ls.waiting.pop(key, None)
        ls.check(key)

    ls.waiting[key] = asyncio.get_running_loop().create_task(check_when_quiet())


def _cancel(ls: TfmemlintServer, key: str) -> None:
    """Drop a check still waiting for the edits to pause (the document closed, or changed
    again)."""
    waiting = ls.waiting.pop(key, None)
    if waiting is not None:
        waiting.cancel()


def _forget(ls: TfmemlintServer, uris: Iterable[str]) -> None:
    for uri in uris:
        if ls.checked.pop(uri, None) is not None:
            ls.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
            )


def _code_actions(
    ls: TfmemlintServer, params: types.CodeActionParams
) -> list[types.CodeAction] | None:
    uri = params.text_document.uri
    checked = ls.latest(uri)
    if checked is None:
        return None
    wanted = params.context.only
    actions: list[types.CodeAction] = []
    lines = LineIndex(checked.text)
    start = ls.location(lines, params.range.start)
    end = ls.location(lines, params.range.end)
    here = [f for f in checked.findings if _touches(f, start, end)]
    if not wanted or types.CodeActionKind.QuickFix in wanted:
        for finding in here:
            diagnostic = ls._diagnostic(finding, lines)
            fix = checked.fixes.get(finding)
            if fix is not None and finding.fix is not None:
                actions.append(_action(finding.fix.message, fix, diagnostic, True))
            edits = _suppression(ls, checked.text, finding)
            if edits:
                title = f"Suppress {finding.code} on this line"
                actions.append(_action(title, {uri: edits}, diagnostic))
    asked = bool(wanted) and any(FIX_ALL.startswith(kind) for kind in wanted)
    # Offered unasked (a cursor move) only where a fix exists: it costs a check and a fix.
    if asked or (not wanted and checked.fixes):
        if checked.fixed_all is None:
            checked.fixed_all = _fix_all(ls, uri, checked)
        actions += checked.fixed_all
    return actions


def _action(
    title: str, changes: Changes, diagnostic: types.Diagnostic, preferred: bool = False
) -> types.CodeAction:
    return types.CodeAction(
        title=f"tfmemlint: {title}",
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[diagnostic],
        edit=types.WorkspaceEdit(changes=changes),
        is_preferred=preferred or None,
    )


def _suppression(ls: TfmemlintServer, text: str, finding: Finding) -> list[types.TextEdit]:
    from tfmemlint.checking.suppression import with_noqa
    from tfmemlint.reading.launch import kind_of

    if kind_of(finding.filename) is not None:
        return []  # a launch file: where a comment may go depends on its kind (see add_noqa)

    new_text, added, _ = with_noqa(text, [finding])
    return ls.edit(text, new_text) if added else []


def _fix_all(ls: TfmemlintServer, uri: str, checked: _Checked) -> list[types.CodeAction]:
    """The whole document fixed as `--fix` would fix it; for a cell, every cell of its
    notebook."""
    notebook = ls.workspace.get_notebook_document(cell_uri=uri)
    changes: dict[str, list[types.TextEdit]] = {}
    if notebook is None:
        _, fixed = _run(_path(uri), checked.text, "fix")
        if fixed != checked.text:
            changes[uri] = ls.edit(checked.text, fixed)
    else:
        cells = ls._code_cells(notebook)
        texts = [ls.workspace.get_text_document(cell).source for cell in cells]
        source = _notebook_json(texts)
        _, fixed = _run(_notebook_path(notebook.uri), source, "fix")
        if fixed != source:
            for cell, old, new in zip(cells, texts, _cell_sources(fixed), strict=True):
                if old != new:
                    changes[cell] = ls.edit(old, new)
    if not changes:
        return []
    return [
        types.CodeAction(
            title="tfmemlint: Fix all tfmemlint findings",
            kind=FIX_ALL,
            edit=types.WorkspaceEdit(changes=changes),
        )
    ]


def _hover(ls: TfmemlintServer, params: types.HoverParams) -> types.Hover | None:
    from tfmemlint.faces.docs import render_rule
    from tfmemlint.rules import RULES_BY_CODE

    checked = ls.latest(params.text_document.uri)
    if checked is None:
        return None
    lines = LineIndex(checked.text)
    at = ls.location(lines, params.position)
    pages = []
    for finding in checked.findings:
        rule = RULES_BY_CODE.get(finding.code)
        if rule is not None and finding.location <= at < finding.end_location:
            page = render_rule(rule)
            if page not in pages:
                pages.append(f"{page}\n\n[{rule.code} on the web]({rule.url})")
    if not pages:
        return None
    return types.Hover(
        contents=types.MarkupContent(
            kind=types.MarkupKind.Markdown, value="\n\n---\n\n".join(pages)
        )
    )


def main() -> None:
    _fingerprint()
    build().start_io()
