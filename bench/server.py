"""Times `tfmemlint server` per change (issue 17): a real LSP client (pygls) opens a 2,000-line
module, changes it round after round, and waits for the diagnostics of each version. Once for a
module with sessions, once for one without any trigger word, which should cost only the
pre-filter. Reports medians, never asserts. Needs `pip install '.[lsp]'`.

Usage: python bench/server.py [--rounds N] [--lines N]

The server's pause for typing (0.25 s) is set to 0 here: the figures are its work per change,
and the JSON-RPC round trip.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient


def module(lines: int, sessions: bool) -> str:
    """A module of small functions; with `sessions`, every tenth makes a session."""
    out = ["import tensorflow.compat.v1 as tf\n" if sessions else "import math\n"]
    block = 0
    while len(out) < lines:
        body = [
            f"def step_{block}(x):\n",
            f'    """Step {block} of the schedule."""\n',
            f"    y = x * {block}\n",
            "    for k in range(3):\n",
            "        y += k\n",
        ]
        if sessions and block % 10 == 0:
            body.append("    sess = tf.Session()\n")
        body += ["    return y\n", "\n"]
        out += body
        block += 1
    return "".join(out[:lines])


async def per_change(rounds: int, lines: int) -> dict[str, float]:
    client = LanguageClient("tfmemlint-bench", "1")
    published: asyncio.Queue[types.PublishDiagnosticsParams] = asyncio.Queue()

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def collect(params: types.PublishDiagnosticsParams) -> None:
        published.put_nowait(params)

    env = {**os.environ, "TFMEMLINT_LSP_DEBOUNCE_S": "0"}
    await client.start_io(sys.executable, "-m", "tfmemlint", "server", env=env)
    medians: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="tfmemlint-server-bench-") as folder:
        await client.initialize_async(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(), root_uri=Path(folder).as_uri()
            )
        )
        client.initialized(types.InitializedParams())

        async def diagnostics_of(uri: str, version: int) -> types.PublishDiagnosticsParams:
            while True:
                params = await asyncio.wait_for(published.get(), 60)
                if params.uri == uri and params.version == version:
                    return params

        for label, sessions in (("with sessions", True), ("no trigger word", False)):
            path = Path(folder) / f"{label.replace(' ', '_')}.py"
            text = module(lines, sessions)
            path.write_text(text)
            uri = path.as_uri()
            client.text_document_did_open(
                types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", 1, text))
            )
            first = await diagnostics_of(uri, 1)
            findings = len(first.diagnostics)
            times = []
            for version in range(2, rounds + 2):
                text += f"# edit {version}\n"
                started = time.perf_counter()
                client.text_document_did_change(
                    types.DidChangeTextDocumentParams(
                        types.VersionedTextDocumentIdentifier(version=version, uri=uri),
                        [types.TextDocumentContentChangeWholeDocument(text=text)],
                    )
                )
                await diagnostics_of(uri, version)
                times.append(time.perf_counter() - started)
            medians[f"{label} ({findings} findings)"] = statistics.median(times)
        await client.shutdown_async(None)
        client.exit(None)
        await client.stop()
    return medians


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--lines", type=int, default=2000)
    args = parser.parse_args()
    print(f"tfmemlint server, a {args.lines}-line module, {args.rounds} changes each")
    for label, seconds in asyncio.run(per_change(args.rounds, args.lines)).items():
        print(f"  {label:32} {seconds * 1000:7.1f} ms per change")


if __name__ == "__main__":
    main()
