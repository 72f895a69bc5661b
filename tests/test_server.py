"""`tfmemlint server` (issue 17): a real LSP client (pytest-lsp) starts the server as a subprocess
and talks LSP to it over stdio, as an editor does."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.conftest import run_cli

pytestmark = pytest.mark.asyncio(loop_scope="function")

SESSION = "import tensorflow.compat.v1 as tf\n\nsess = tf.Session()\n"
CONFIGURED = (
    "import tensorflow.compat.v1 as tf\n\n"
    "sess = tf.Session(config=tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True)))\n"
)
# A short pause before each check: the tests wait for it, not for a fixed time.
SERVER = ClientServerConfig(
    server_command=[sys.executable, "-m", "tfmemlint", "server"],
    server_env={**os.environ, "TFMEMLINT_LSP_DEBOUNCE_S": "0.05"},
)


@pytest_lsp.fixture(config=SERVER)
async def client(lsp_client: LanguageClient, tmp_path: Path):
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            root_uri=tmp_path.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=tmp_path.as_uri(), name="project")],
        )
    )
    yield
    await lsp_client.shutdown_session()


async def settled(
    client: LanguageClient, uri: str, done: Callable[[Sequence[types.Diagnostic]], bool]
) -> list[types.Diagnostic]:
    """The document's diagnostics, once they satisfy `done` (within 30 s)."""

    async def wait() -> list[types.Diagnostic]:
        while uri not in client.diagnostics or not done(client.diagnostics[uri]):
            await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        return list(client.diagnostics[uri])

    return await asyncio.wait_for(wait(), 30)


def codes(diagnostics: Sequence[types.Diagnostic]) -> list[str]:
    return [str(d.code) for d in diagnostics]


def open_file(client: LanguageClient, path: Path, text: str, version: int = 1) -> str:
    path.write_text(text)
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", version, text))
    )
    return uri


def change(client: LanguageClient, uri: str, text: str, version: int) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(version=version, uri=uri),
            [types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


def apply(text: str, edits: Sequence[types.TextEdit]) -> str:
    """The text with the edits made (ASCII text: characters are UTF-16 units)."""
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def offset(position: types.Position) -> int:
        return starts[min(position.line, len(starts) - 1)] + position.character

    for edit in sorted(edits, key=lambda e: offset(e.range.start), reverse=True):
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end) :]
    return text


async def actions(
    client: LanguageClient,
    uri: str,
    where: types.Range,
    only: list[str] | None = None,
    diagnostics: Sequence[types.Diagnostic] = (),
) -> list[types.CodeAction]:
    found = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri),
            range=where,
            context=types.CodeActionContext(diagnostics=list(diagnostics), only=only),
        )
    )
    return [a for a in found or [] if isinstance(a, types.CodeAction)]


async def test_open_change_and_save(client: LanguageClient, tmp_path: Path) -> None:
    uri = open_file(client, tmp_path / "train.py", SESSION)
    (found,) = await settled(client, uri, bool)
    assert (found.code, found.source) == ("TFM101", "tfmemlint")
    assert found.severity == types.DiagnosticSeverity.Error
    assert found.range == types.Range(types.Position(2, 7), types.Position(2, 19))
    assert found.code_description is not None
    assert found.code_description.href.endswith("/rules/tfm101/")
    change(client, uri, CONFIGURED, 2)  # unsaved: the buffer counts, not the file
    assert await settled(client, uri, lambda d: not d) == []
    change(client, uri, SESSION + "other = tf.InteractiveSession()\n", 3)
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri))
    )
    saved = await settled(client, uri, lambda d: len(d) == 2)
    assert [(d.code, d.severity) for d in saved] == [
        ("TFM101", types.DiagnosticSeverity.Error),
        ("TFM401", types.DiagnosticSeverity.Information),
    ]


async def test_a_file_without_trigger_words_gets_no_diagnostics(
    client: LanguageClient, tmp_path: Path
) -> None:
    uri = open_file(client, tmp_path / "plain.py", "import os\nprint(os.sep)\n")
    assert await settled(client, uri, lambda d: True) == []


async def test_a_launch_file_gets_diagnostics_and_its_quick_fix(
    client: LanguageClient, tmp_path: Path
) -> None:
    text = "FROM tensorflow/tensorflow:latest-gpu\nENV TF_FORCE_GPU_ALLOW_GROWTH=1\n"
    uri = open_file(client, tmp_path / "Dockerfile", text)
    (found,) = await settled(client, uri, bool)
    assert found.code == "TFM501"
    assert found.range.start == types.Position(1, 0)
    quick = [types.CodeActionKind.QuickFix]
    [action] = await actions(client, uri, found.range, quick, [found])  # no `# noqa` offered
    assert action.edit is not None and action.edit.changes is not None
    fixed = apply(text, action.edit.changes[uri])
    assert fixed == "FROM tensorflow/tensorflow:latest-gpu\nENV TF_FORCE_GPU_ALLOW_GROWTH=true\n"


async def test_a_quick_fix_applied_lints_clean(client: LanguageClient, tmp_path: Path) -> None:
    uri = open_file(client, tmp_path / "train.py", SESSION)
    (found,) = await settled(client, uri, bool)
    offered = await actions(client, uri, found.range, [types.CodeActionKind.QuickFix], [found])
    titles = [a.title for a in offered]
    assert titles == [
        "tfmemlint: Pass `config=tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True))`",
        "tfmemlint: Suppress TFM101 on this line",
    ]
    for action, expected in zip(offered, (CONFIGURED, None), strict=True):
        assert action.kind == types.CodeActionKind.QuickFix
        assert action.edit is not None and action.edit.changes is not None
        fixed = apply(SESSION, action.edit.changes[uri])
        if expected is not None:
            assert fixed == expected
        else:
            assert fixed.endswith("sess = tf.Session()  # noqa: TFM101\n")
    for version, action in enumerate(offered, 2):
        assert action.edit is not None and action.edit.changes is not None
        change(client, uri, apply(SESSION, action.edit.changes[uri]), version)
        assert await settled(client, uri, lambda d: not d) == []
        change(client, uri, SESSION, version + 10)
        await settled(client, uri, bool)


async def test_fix_all_is_what_fix_writes(client: LanguageClient, tmp_path: Path) -> None:
    source = SESSION + "def make():\n    return tf.Session(config=tf.ConfigProto())\n"
    uri = open_file(client, tmp_path / "train.py", source)
    await settled(client, uri, lambda d: len(d) == 2)
    whole = types.Range(types.Position(0, 0), types.Position(0, 0))
    (fix_all,) = await actions(client, uri, whole, ["source.fixAll.tfmemlint"])
    assert fix_all.kind == "source.fixAll.tfmemlint"
    assert fix_all.edit is not None and fix_all.edit.changes is not None
    fixed = apply(source, fix_all.edit.changes[uri])
    copy = tmp_path / "copy" / "train.py"
    copy.parent.mkdir()
    shutil.copy(tmp_path / "train.py", copy)
    assert run_cli("--fix", str(copy)).returncode == 0
    assert fixed == copy.read_text()


async def test_a_notebook_document_gets_findings_per_cell(
    client: LanguageClient, tmp_path: Path
) -> None:
    notebook = (tmp_path / "train.ipynb").as_uri()
    cells = [
        (
            "cell1",
            types.NotebookCellKind.Code,
            "import tensorflow.compat.v1 as tf\n%matplotlib inline",
        ),
        ("cell2", types.NotebookCellKind.Markup, "`tf.Session()` in prose"),
        ("cell3", types.NotebookCellKind.Code, "x = 1\nsess = tf.Session()"),
    ]
    uris = {name: f"{notebook}#{name}" for name, _, _ in cells}
    open_notebook(client, notebook, [(uris[name], kind, text) for name, kind, text in cells])
    (found,) = await settled(client, uris["cell3"], bool)
    assert found.code == "TFM101"
    assert found.range == types.Range(types.Position(1, 7), types.Position(1, 19))
    assert await settled(client, uris["cell1"], lambda d: True) == []
    assert uris["cell2"] not in client.diagnostics
    # The quick fix edits the cell it is in.
    offered = await actions(client, uris["cell3"], found.range, [types.CodeActionKind.QuickFix])
    assert offered[0].edit is not None and offered[0].edit.changes is not None
    fixed = apply("x = 1\nsess = tf.Session()", offered[0].edit.changes[uris["cell3"]])
    assert "allow_growth=True" in fixed
    client.notebook_document_did_change(
        types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(version=2, uri=notebook),
            change=types.NotebookDocumentChangeEvent(
                cells=types.NotebookDocumentCellChanges(
                    text_content=[
                        types.NotebookDocumentCellContentChanges(
                            document=types.VersionedTextDocumentIdentifier(2, uris["cell3"]),
                            changes=[types.TextDocumentContentChangeWholeDocument(text=fixed)],
                        )
                    ]
                )
            ),
        )
    )
    assert await settled(client, uris["cell3"], lambda d: not d) == []


async def test_a_broken_buffer_is_reported_and_the_server_goes_on(
    client: LanguageClient, tmp_path: Path
) -> None:
    broken = "import tensorflow as tf\ndef f(:\n    tf.Session()\n"
    uri = open_file(client, tmp_path / "broken.py", broken)
    (found,) = await settled(client, uri, bool)
    assert found.code == "TFM902"
    assert found.range.start.line == 1
    other = open_file(client, tmp_path / "train.py", SESSION)
    assert codes(await settled(client, other, bool)) == ["TFM101"]


async def test_the_nearest_configuration_turns_a_rule_off(
    client: LanguageClient, tmp_path: Path
) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "tfmemlint.toml").write_text(
        'ignore = ["TFM101"]\nextend-select = ["TFM190"]\n'
    )
    unresolved = "def make(config):\n    return tf.Session(config=config)\n"
    quiet = open_file(client, tmp_path / "sub" / "train.py", SESSION + unresolved)
    loud = open_file(client, tmp_path / "train.py", SESSION + unresolved)
    assert codes(await settled(client, loud, bool)) == ["TFM101"]
    (warned,) = await settled(client, quiet, bool)
    assert (warned.code, warned.severity) == ("TFM190", types.DiagnosticSeverity.Warning)


async def test_hover_on_a_flagged_call_shows_the_rules_page(
    client: LanguageClient, tmp_path: Path
) -> None:
    uri = open_file(client, tmp_path / "train.py", SESSION)
    await settled(client, uri, bool)
    page = await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(2, 10))
    )
    assert page is not None and isinstance(page.contents, types.MarkupContent)
    assert page.contents.value.startswith("TFM101 session-without-config")
    nothing = await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(0, 2))
    )
    assert nothing is None


@pytest_lsp.fixture(config=SERVER)
async def bare_client(lsp_client: LanguageClient, tmp_path: Path):
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("neovim"), root_uri=tmp_path.as_uri()
        )
    )
    yield


async def test_shutdown_and_exit(bare_client: LanguageClient) -> None:
    assert await bare_client.shutdown_async(None) is None
    bare_client.exit(None)
    server = bare_client._server
    assert server is not None
    assert await asyncio.wait_for(server.wait(), 30) == 0


async def test_a_changed_buffer_is_checked_again_before_its_fixes_are_given(
    client: LanguageClient, tmp_path: Path
) -> None:
    """Even under a URI the client quotes (a space is `%20`), fixes come from the text as it is
    now, never from an older check."""
    uri = open_file(client, tmp_path / "my train.py", SESSION)
    assert "%20" in uri
    await settled(client, uri, bool)
    moved = "\n\n" + SESSION
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(version=2, uri=uri),
            [
                types.TextDocumentContentChangePartial(
                    range=types.Range(types.Position(0, 0), types.Position(0, 0)), text="\n\n"
                )
            ],
        )
    )
    where = types.Range(types.Position(4, 10), types.Position(4, 10))
    (fix, _) = await actions(client, uri, where, [types.CodeActionKind.QuickFix])
    assert fix.edit is not None and fix.edit.changes is not None
    assert apply(moved, fix.edit.changes[uri]) == "\n\n" + CONFIGURED


async def test_a_fix_in_another_cell_edits_that_cell(
    client: LanguageClient, tmp_path: Path
) -> None:
    notebook = (tmp_path / "train.ipynb").as_uri()
    first = "import tensorflow.compat.v1 as tf\nconfig = tf.ConfigProto()"
    second = "sess = tf.Session(config=config)"
    uris = [f"{notebook}#cell1", f"{notebook}#cell2"]
    code = types.NotebookCellKind.Code
    open_notebook(client, notebook, [(uris[0], code, first), (uris[1], code, second)])
    (found,) = await settled(client, uris[1], bool)
    assert found.code == "TFM102"
    (fix, _) = await actions(client, uris[1], found.range, [types.CodeActionKind.QuickFix])
    assert fix.edit is not None and fix.edit.changes is not None
    assert list(fix.edit.changes) == [uris[0]]  # the config is built in the first cell
    assert apply(first, fix.edit.changes[uris[0]]) == (
        first + "\nconfig.gpu_options.allow_growth = True"
    )


async def test_a_fix_in_a_cell_pasted_with_its_indentation_keeps_it(
    client: LanguageClient, tmp_path: Path
) -> None:
    """IPython runs a cell pasted from a function body: its finding lands on the cell's own
    columns, and the quick fix's added line gets the cell's indentation."""
    notebook = (tmp_path / "train.ipynb").as_uri()
    pasted = "    config = tf.ConfigProto()\n    sess = tf.Session(config=config)"
    uris = [f"{notebook}#cell1", f"{notebook}#cell2"]
    code = types.NotebookCellKind.Code
    open_notebook(
        client,
        notebook,
        [(uris[0], code, "import tensorflow.compat.v1 as tf"), (uris[1], code, pasted)],
    )
    (found,) = await settled(client, uris[1], bool)
    assert found.code == "TFM102"
    assert found.range.start == types.Position(1, 11)
    (fix, _) = await actions(client, uris[1], found.range, [types.CodeActionKind.QuickFix])
    assert fix.edit is not None and fix.edit.changes is not None
    assert apply(pasted, fix.edit.changes[uris[1]]) == (
        "    config = tf.ConfigProto()\n"
        "    config.gpu_options.allow_growth = True\n"
        "    sess = tf.Session(config=config)"
    )


async def test_a_notebook_under_any_uri_gets_findings(client: LanguageClient) -> None:
    """VS Code's interactive window, an untitled notebook: its URI need not end in .ipynb."""
    notebook = "untitled:Interactive-1.interactive"
    uris = [f"{notebook}#cell1"]
    text = "import tensorflow.compat.v1 as tf\ns = tf.Session()"
    open_notebook(client, notebook, [(uris[0], types.NotebookCellKind.Code, text)])
    assert codes(await settled(client, uris[0], bool)) == ["TFM101"]


async def test_an_nbformat3_notebook_opened_as_json_gets_findings(
    client: LanguageClient, tmp_path: Path
) -> None:
    """An editor that has no notebook view for IPython 2's format opens it as text."""
    code = {"cell_type": "code", "input": SESSION, "language": "python", "metadata": {}}
    worksheet = {"cells": [code], "metadata": {}}
    document = {"metadata": {}, "nbformat": 3, "nbformat_minor": 0, "worksheets": [worksheet]}
    uri = open_file(client, tmp_path / "course.ipynb", json.dumps(document, indent=1))
    assert codes(await settled(client, uri, bool)) == ["TFM101"]


async def test_a_coding_cookie_on_the_second_line_is_kept(
    client: LanguageClient, tmp_path: Path
) -> None:
    text = (
        "#!/usr/bin/env python\n# -*- coding: latin-1 -*-\n"
        'import tensorflow.compat.v1 as tf\nname = "café"\nsess = tf.Session()\n'
    )
    path = tmp_path / "latin.py"
    path.write_bytes(text.encode("latin-1"))
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", 1, text))
    )
    (found,) = await settled(client, uri, bool)
    assert found.range.start == types.Position(4, 7)
    whole = types.Range(types.Position(0, 0), types.Position(0, 0))
    (fix_all,) = await actions(client, uri, whole, ["source.fixAll.tfmemlint"])
    assert fix_all.edit is not None and fix_all.edit.changes is not None
    fixed = apply(text, fix_all.edit.changes[uri])
    assert 'name = "café"' in fixed and "allow_growth=True" in fixed


async def test_a_check_waiting_when_the_document_closes_is_dropped(
    client: LanguageClient, tmp_path: Path
) -> None:
    uri = open_file(client, tmp_path / "train.py", SESSION)
    await settled(client, uri, bool)
    change(client, uri, SESSION + "more = tf.Session()\n", 2)
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri))
    )
    assert await settled(client, uri, lambda d: not d) == []
    await asyncio.sleep(0.5)  # ten times the pause: a check still waiting would have run
    assert list(client.diagnostics[uri]) == []


def open_notebook(
    client: LanguageClient, notebook: str, cells: Sequence[tuple[str, types.NotebookCellKind, str]]
) -> None:
    """Open a notebook document of cells (URI, kind, text): code cells in Python, the others
    in Markdown."""
    client.notebook_document_did_open(
        types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(
                uri=notebook,
                notebook_type="jupyter-notebook",
                version=1,
                cells=[types.NotebookCell(kind, uri) for uri, kind, _ in cells],
            ),
            cell_text_documents=[
                types.TextDocumentItem(
                    uri, "python" if kind == types.NotebookCellKind.Code else "markdown", 1, text
                )
                for uri, kind, text in cells
            ],
        )
    )


async def test_a_project_with_a_configuration_keeps_its_modules_summaries(
    client: LanguageClient, tmp_path: Path
) -> None:
    """The server shares the summaries of the project's modules with the command line, in the
    cache the command line keeps there; a folder without a configuration gets no cache."""
    for folder, configured in (("kept", True), ("loose", False)):
        root = tmp_path / folder
        (root / "mypkg").mkdir(parents=True)
        (root / "mypkg" / "__init__.py").write_text("")
        (root / "mypkg" / "compat.py").write_text("import tensorflow.compat.v1 as tfv1\n")
        if configured:
            (root / "tfmemlint.toml").write_text("")
        text = "from mypkg.compat import tfv1\n\nsess = tfv1.Session()\n"
        uri = open_file(client, root / "train.py", text)
        assert codes(await settled(client, uri, bool)) == ["TFM101"]
    [entry] = (tmp_path / "kept" / ".tfmemlint_cache" / "summaries").iterdir()
    assert entry.name.endswith(".marshal")
    assert (tmp_path / "kept" / ".tfmemlint_cache" / ".gitignore").is_file()
    assert not (tmp_path / "loose" / ".tfmemlint_cache").exists()
