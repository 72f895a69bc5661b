"""Module summaries kept with the cache, so that a project module is summarized once while its
bytes stay the same: a worker serves what another worker summarized, and a run what an earlier
run did.

Each summary is one marshal file in the store's folder, named by the content hash of the
module's bytes, and holds the fingerprint of the tool that wrote it (its version, its modules
and Python's version, whose parser decides what a summary holds): an entry of another tool is
never served. An entry is written whole and renamed into place, so a reader sees all of it or
none, and two writers of the same module write the same summary. The store is only ever a shortcut:
an entry that cannot be read is summarized again, one that cannot be written is left out, and a
module that does not parse has none (it is rare, and its parse stops at the error).

Whether a deeply nested module parses depends on the recursion limit (CPython 3.11 bounds a
syntax tree's depth by three times it), and the checks run under a higher one than the
pre-filter: an entry records the limit it was made under, and is served only under one as high.
"""

from __future__ import annotations

import contextlib
import dataclasses
import marshal
import os
import sys
from collections.abc import Callable

from tfmemlint.project.module_summary import ModuleSummary
from tfmemlint.reading.source import create_temporary

# The layout of an entry; another layout is a miss.
_LAYOUT = 2
# Every field, by name: what a summary holds is all kept, whatever fields it gains.
_FIELDS = tuple(field.name for field in dataclasses.fields(ModuleSummary))
_SUFFIX = ".marshal"
_HASH_LENGTH = 32  # hex digits of `digest.content_hash`
_TEMPORARY = ".summary-"
# How many entries the folder keeps: once a write finds more, the oldest written go. An entry is
# about 2 KB (sympy's largest, 54 KB), so the folder stays within about 20 MB.
KEPT = 8192
# One write in this many (by the content hash, so the same for every process) counts the folder.
_PRUNE_ONE_IN = 256


class SummaryStore:
    """The store in `folder`, for the tool whose fingerprint is given. `make_parent`: what makes
    the folder's parent (the cache's folder) before the first write makes the folder; without
    it, the folder must be there."""

    def __init__(
        self, folder: str, fingerprint: str, make_parent: Callable[[], None] | None = None
    ) -> None:
        self.folder = folder
        self.fingerprint = fingerprint
        self.make_parent = make_parent
        self._umask: int | None = None

    def get(self, content_hash: str) -> ModuleSummary | None:
        """The summary of the module whose bytes have this hash, made under a recursion limit
        no higher than this one; None where there is none."""
        try:
            with open(self._path(content_hash), "rb") as handle:
                stored = marshal.loads(handle.read())
            layout, fingerprint, limit, fields = stored
            if layout != _LAYOUT or fingerprint != self.fingerprint:
                return None
            if limit > sys.getrecursionlimit():  # it might not parse here
                return None
            return ModuleSummary(**dict(zip(_FIELDS, fields, strict=True)))
        except (OSError, EOFError, ValueError, TypeError):
            return None  # none yet, or damaged: summarized again

    def put(self, content_hash: str, summary: ModuleSummary) -> None:
        """Keep the summary of the module whose bytes have this hash, made under the recursion
        limit in force now; a failure leaves it out."""
        try:
            fields = [getattr(summary, name) for name in _FIELDS]
            stored = (_LAYOUT, self.fingerprint, sys.getrecursionlimit(), fields)
            self._write(content_hash, marshal.dumps(stored))
        except (OSError, ValueError):
            return
        if int(content_hash[:4], 16) % _PRUNE_ONE_IN == 0:
            prune(self.folder, KEPT)

    def _path(self, content_hash: str) -> str:
        return os.path.join(self.folder, content_hash + _SUFFIX)

    def _write(self, content_hash: str, data: bytes) -> None:
        try:
            descriptor, temporary = create_temporary(self.folder, _TEMPORARY)
        except FileNotFoundError:  # the first write: the folder is made now
            if self.make_parent is None:
                raise
            self.make_parent()
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
                if _is_entry(entry.name):
                    entries.append((entry.stat().st_mtime_ns, entry.path))
                elif _is_temporary(entry.name) and entry.stat().st_mtime_ns < hour_ago:
                    os.unlink(entry.path)
    if len(entries) <= kept:
        return
    entries.sort()
    for _, path in entries[: len(entries) - kept * 3 // 4]:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _is_entry(name: str) -> bool:
    """Whether a name is one `SummaryStore._path` makes: a content hash, then the suffix."""
    stem = name[: -len(_SUFFIX)]
    return name.endswith(_SUFFIX) and len(stem) == _HASH_LENGTH and _is_hex(stem)


def _is_temporary(name: str) -> bool:
    """Whether a name is one `create_temporary` makes for the store."""
    middle = name[len(_TEMPORARY) : -len(".tmp")]
    return name.startswith(_TEMPORARY) and name.endswith(".tmp") and _is_hex(middle)


def _is_hex(text: str) -> bool:
    return bool(text) and all(character in "0123456789abcdef" for character in text)
