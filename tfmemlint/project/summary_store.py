"""Module summaries kept between processes and runs, so that a project module is summarized
once while its bytes stay the same: a worker serves what another worker summarized, and a run
what an earlier run did.

Each summary is one marshal file in the store's folder, named by the content hash of the
module's bytes, and holds the fingerprint of the tool that wrote it (its version, its modules
and Python's version, whose parser decides what a summary holds): an entry of another tool is
never served. An entry is written whole and renamed into place, so a reader sees all of it or
none, and two writers of the same module write the same bytes. The store is only ever a shortcut:
an entry that cannot be read is summarized again, one that cannot be written is left out, and a
module that does not parse has none (it is rare, and its parse stops at the error).
"""

from __future__ import annotations

import contextlib
import dataclasses
import marshal
import os

from tfmemlint.project.module_summary import ModuleSummary
from tfmemlint.reading.source import create_temporary

# The layout of an entry; another layout is a miss.
_LAYOUT = 1
# Every field, by name: what a summary holds is all kept, whatever fields it gains.
_FIELDS = tuple(field.name for field in dataclasses.fields(ModuleSummary))
_SUFFIX = ".marshal"
_TEMPORARY = ".summary-"
# How many entries the folder keeps: once a write finds more, the oldest written go. An entry is
# about 2 KB (sympy's largest, 54 KB), so the folder stays within about 20 MB.
KEPT = 8192
# One write in this many (by the content hash, so the same for every process) counts the folder.
_PRUNE_ONE_IN = 256


class SummaryStore:
    """The store in `folder`, for the tool whose fingerprint is given. `make_folder`: the
    folder is made on the first write (its parent must be there); else, once it is gone, the
    store is."""

    def __init__(self, folder: str, fingerprint: str, make_folder: bool = True) -> None:
        self.folder = folder
        self.fingerprint = fingerprint
        self.make_folder = make_folder
        self._umask: int | None = None

    def get(self, content_hash: str) -> ModuleSummary | None:
        """The summary of the module whose bytes have this hash; None where there is none."""
        try:
            with open(self._path(content_hash), "rb") as handle:
                stored = marshal.loads(handle.read())
            layout, fingerprint, fields = stored
            if layout != _LAYOUT or fingerprint != self.fingerprint:
                return None
            return ModuleSummary(**dict(zip(_FIELDS, fields, strict=True)))
        except (OSError, EOFError, ValueError, TypeError):
            return None  # none yet, or damaged: summarized again

    def put(self, content_hash: str, summary: ModuleSummary) -> None:
        """Keep the summary of the module whose bytes have this hash; a failure leaves it out."""
        try:
            fields = [getattr(summary, name) for name in _FIELDS]
            data = marshal.dumps((_LAYOUT, self.fingerprint, fields))
            self._write(content_hash, data)
        except (OSError, ValueError):
            return
        if int(content_hash[:4], 16) % _PRUNE_ONE_IN == 0:
            prune(self.folder, KEPT)

    def _path(self, content_hash: str) -> str:
        return os.path.join(self.folder, content_hash + _SUFFIX)

    def _write(self, content_hash: str, data: bytes) -> None:
        try:
            descriptor, temporary = create_temporary(self.folder, _TEMPORARY)
        except FileNotFoundError:  # the first write: the folder is made now (its parent not)
            if not self.make_folder:
                raise
            with contextlib.suppress(FileExistsError):
                os.mkdir(self.folder)
            descriptor, temporary = create_temporary(self.folder, _TEMPORARY)
        try:
            with os.fdopen(descriptor, "wb") as out:
                out.write(data)
            if self._umask is None:
                self._umask = os.umask(0)
                os.umask(self._umask)
            os.chmod(temporary, 0o666 & ~self._umask)  # as any other file, not 0600
            os.replace(temporary, self._path(content_hash))
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise


def prune(folder: str, kept: int) -> None:
    """Remove the oldest entries of `folder` past `kept` (to three quarters of it, so that the
    next count is a while away), and what a writer killed midway left an hour ago. Only names
    the store makes are touched."""
    import time

    entries = []
    hour_ago = time.time_ns() - 3600 * 10**9
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            with contextlib.suppress(OSError):
                written = entry.stat().st_mtime_ns
                if entry.name.endswith(_SUFFIX):
                    entries.append((written, entry.path))
                elif entry.name.startswith(_TEMPORARY) and written < hour_ago:
                    os.unlink(entry.path)
    if len(entries) <= kept:
        return
    entries.sort()
    for _, path in entries[: len(entries) - kept * 3 // 4]:
        with contextlib.suppress(OSError):
            os.unlink(path)
