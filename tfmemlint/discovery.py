"""Turns the paths a user gave into the files to check.

Directories are walked for `*.py` and `*.ipynb`; hidden folders, virtualenvs, build output and
caches are skipped, and so are files git ignores. A file named explicitly is always checked,
whatever its name. Symbolic links to files are followed (the target is what gets fixed); links
to folders are not, so a link loop cannot trap the walk.
"""

from __future__ import annotations

import fnmatch
import os
import subprocess
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

# Folders no user means to lint; hidden ones (".git", ".venv", ".tox", ...) are skipped as well.
SKIPPED_DIRS = frozenset(
    {"__pycache__", "build", "dist", "node_modules", "site-packages", "venv", "__pypackages__"}
)


@dataclass(frozen=True)
class Missing:
    """A path the user named that does not exist."""

    path: str


@dataclass(frozen=True)
class Exclusions:
    """What folder walks leave out. `patterns` (globs, relative to `root`, or matching a bare
    name) replace the built-in folders when given; `extra` adds to whichever applies."""

    patterns: Sequence[str] | None = None
    extra: Sequence[str] = ()
    root: str = "."
    respect_gitignore: bool = True
    _ignored: dict[str, frozenset[str]] = field(default_factory=dict, compare=False)

    def _matches(self, path: str, patterns: Sequence[str]) -> bool:
        relative = os.path.relpath(os.path.abspath(path), self.root).replace(os.sep, "/")
        name = os.path.basename(path)
        return any(fnmatch.fnmatch(relative, p) or fnmatch.fnmatch(name, p) for p in patterns)

    def skip_dir(self, parent: str, name: str) -> bool:
        path = os.path.join(parent, name)
        if self.patterns is None:
            if _builtin_skip(parent, name):
                return True
        elif self._matches(path, self.patterns):
            return True
        return self._matches(path, self.extra)

    def skip_file(self, path: str) -> bool:
        patterns = [*(self.patterns or ()), *self.extra]
        return bool(patterns) and self._matches(path, patterns)


def _builtin_skip(parent: str, name: str) -> bool:
    if name.startswith(".") or name in SKIPPED_DIRS or name.endswith(".egg-info"):
        return True
    # Any virtualenv, whatever its name, has a pyvenv.cfg at its root.
    return os.path.isfile(os.path.join(parent, name, "pyvenv.cfg"))


def _walk(root: str, exclusions: Exclusions) -> Iterator[str]:
    for parent, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not exclusions.skip_dir(parent, d))
        for name in sorted(files):
            path = os.path.join(parent, name)
            if name.endswith((".py", ".ipynb")) and not exclusions.skip_file(path):
                yield path


def _git_ignored(root: str, files: list[str]) -> set[str]:
    """The files among `files` that git ignores in the repository holding `root`; none when
    there is no git or no repository."""
    if not files:
        return set()
    try:
        done = subprocess.run(
            ["git", "-C", root, "check-ignore", "-z", "--stdin"],
            input="\0".join(os.path.relpath(f, root) for f in files),
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        return set()
    if done.returncode not in (0, 1):  # 128: not a repository
        return set()
    return {os.path.normpath(os.path.join(root, p)) for p in done.stdout.split("\0") if p}


def discover(paths: Iterable[str], exclusions: Exclusions | None = None) -> Iterator[str | Missing]:
    """Files to check, each once, in a stable order; a `Missing` for each path that isn't there.
    Folders are walked with the exclusions; a file named explicitly is always checked."""
    exclusions = exclusions or Exclusions()
    seen: set[str] = set()
    for path in paths:
        if os.path.isdir(path):
            candidates = [os.path.normpath(p) for p in _walk(path, exclusions)]
            if exclusions.respect_gitignore:
                ignored = _git_ignored(path, candidates)
                candidates = [p for p in candidates if p not in ignored]
        elif os.path.lexists(path):
            candidates = [os.path.normpath(path)]
        else:
            yield Missing(path)
            continue
        for candidate in candidates:
            key = os.path.realpath(candidate)
            if key not in seen:
                seen.add(key)
                yield candidate
