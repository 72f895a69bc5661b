"""Turns the paths a user gave into the Python files to check.

Directories are walked for `*.py`; hidden folders, virtualenvs, build output and caches are
skipped. A file named explicitly is always checked, whatever its name. Symbolic links to files are
followed (the target is what gets fixed); links to folders are not, so a link loop cannot trap the
walk.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

# Folders no user means to lint; hidden ones (".git", ".venv", ".tox", ...) are skipped as well.
SKIPPED_DIRS = frozenset(
    {"__pycache__", "build", "dist", "node_modules", "site-packages", "venv", "__pypackages__"}
)


@dataclass(frozen=True)
class Missing:
    """A path the user named that does not exist."""

    path: str


def _skip_dir(parent: str, name: str) -> bool:
    if name.startswith(".") or name in SKIPPED_DIRS or name.endswith(".egg-info"):
        return True
    # Any virtualenv, whatever its name, has a pyvenv.cfg at its root.
    return os.path.isfile(os.path.join(parent, name, "pyvenv.cfg"))


def _walk(root: str) -> Iterator[str]:
    for parent, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not _skip_dir(parent, d))
        for name in sorted(files):
            if name.endswith(".py"):
                yield os.path.join(parent, name)


def discover(paths: Iterable[str]) -> Iterator[str | Missing]:
    """Files to check, each once, in a stable order; a `Missing` for each path that isn't there."""
    seen: set[str] = set()
    for path in paths:
        if os.path.isdir(path):
            candidates: Iterable[str] = _walk(path)
        elif os.path.lexists(path):
            candidates = (path,)
        else:
            yield Missing(path)
            continue
        for candidate in candidates:
            key = os.path.realpath(candidate)
            if key not in seen:
                seen.add(key)
                yield os.path.normpath(candidate)
