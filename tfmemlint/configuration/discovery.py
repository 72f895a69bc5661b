"""Turns the paths a user gave into the files to check.

Directories are walked for `*.py`, `*.ipynb` and launch files (`launch.kind_of`); hidden
folders, virtualenvs, build output and caches are skipped, and so are files git ignores. Those
rules apply to what a walk finds below the paths given, as ruff applies them: a file or folder
named explicitly is always checked, whatever its name, unless `--force-exclude` says
otherwise. Symbolic links to files are followed (the target is what gets fixed) where the
target lies in the walked folder's project, as black has it: a walk never checks, nor writes, a
file outside it. Links to folders are not followed, so a link loop cannot trap the walk.
"""

from __future__ import annotations

import fnmatch
import operator
import os
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, NamedTuple

from tfmemlint.reading.launch import kind_of

if TYPE_CHECKING:
    from tfmemlint.configuration.config_files import FileConfig

# Folders no user means to lint; hidden ones (".git", ".venv", ".tox", ...) are skipped as well.
SKIPPED_DIRS = frozenset(
    {"__pycache__", "build", "dist", "node_modules", "site-packages", "venv", "__pypackages__"}
)


class Missing(NamedTuple):
    """A path the user named that does not exist."""

    path: str


class Exclusions(NamedTuple):
    """What folder walks leave out. `patterns` (globs, relative to `root`, or matching a bare
    name) replace the built-in folders when given; `extra` adds to whichever applies."""

    patterns: Sequence[str] | None = None
    extra: Sequence[str] = ()
    root: str = "."
    respect_gitignore: bool = True
    # Whether a path named on the command line is left out too, as a walk would leave it
    # (pre-commit names every changed file, excluded ones included).
    force: bool = False

    @classmethod
    def configured(
        cls, file_config: FileConfig, respect_gitignore: bool | None, force: bool | None
    ) -> Exclusions:
        """What the configuration file leaves out; a command-line flag given wins over its key."""
        return cls(
            file_config.get("exclude"),
            file_config.get("extend-exclude", ()),
            file_config.root,
            file_config.get("respect-gitignore", True)
            if respect_gitignore is None
            else respect_gitignore,
            file_config.get("force-exclude", False) if force is None else force,
        )

    def _matches(self, path: str, patterns: Sequence[str]) -> bool:
        relative = os.path.relpath(os.path.abspath(path), self.root).replace(os.sep, "/")
        name = os.path.basename(path)
        return any(fnmatch.fnmatch(relative, p) or fnmatch.fnmatch(name, p) for p in patterns)

    def skip_dir(self, path: str, name: str) -> bool:
        """Whether to leave out a folder, by its path and name (see also `skips_venvs`)."""
        if self.patterns is None:
            if name.startswith(".") or name in SKIPPED_DIRS or name.endswith(".egg-info"):
                return True
        elif self._matches(path, self.patterns):
            return True
        return bool(self.extra) and self._matches(path, self.extra)

    @property
    def skips_venvs(self) -> bool:
        """Whether to leave out any folder holding a pyvenv.cfg: a virtualenv, whatever its
        name."""
        return self.patterns is None

    @property
    def skips_files(self) -> bool:
        """Whether any file a walk finds may be left out by its path (see `skip_file`)."""
        return self.patterns is not None or bool(self.extra)

    def skip_file(self, path: str) -> bool:
        if not self.skips_files:
            return False
        return self._matches(path, [*(self.patterns or ()), *self.extra])

    def skip_named(self, path: str) -> bool:
        """Under `force`, whether a path named on the command line is left out: it, or a folder
        it lies in below the root, is one a walk would leave out."""
        if not self.force:
            return False
        absolute = os.path.abspath(path)
        relative = os.path.relpath(absolute, os.path.abspath(self.root))
        if relative.split(os.sep)[0] == os.pardir:
            relative = os.path.basename(absolute)  # outside the root: only its own name counts
        parts = [] if relative == os.curdir else relative.split(os.sep)
        folder = os.path.abspath(self.root)
        for index, name in enumerate(parts):
            folder = os.path.join(folder, name)
            if index == len(parts) - 1 and not os.path.isdir(path):
                return self.skip_file(path)
            if self.skip_dir(folder, name):
                return True
            if self.skips_venvs and os.path.isfile(os.path.join(folder, "pyvenv.cfg")):
                return True  # a virtualenv, whatever its name, as the walk has it
        return False


def _walk(root: str, exclusions: Exclusions) -> list[tuple[str, str, bool]]:
    """(path, path relative to `root`, is a symbolic link) for each file to check under `root`,
    depth first, sorted by name, a folder's files before its subfolders."""
    prefix = "" if root == os.curdir else os.path.join(root, "")
    found: list[tuple[str, str, bool]] = []
    folders = [""]  # relative to root; a stack, so subfolders go on in reverse
    skip_file = exclusions.skip_file if exclusions.skips_files else None
    while folders:
        folder = folders.pop()
        try:
            with os.scandir(prefix + folder if prefix or folder else os.curdir) as listing:
                entries = sorted(listing, key=_NAME)
        except OSError:
            continue  # unreadable or vanished folder: nothing in it can be checked
        files, subfolders = [], []
        for entry in entries:
            name = entry.name
            try:
                if entry.is_dir():  # a link to a folder is a folder, but never entered
                    relative = folder + name
                    if not entry.is_symlink() and not exclusions.skip_dir(prefix + relative, name):
                        subfolders.append(relative + os.sep)
                elif name.endswith(_SUFFIXES) or kind_of(name) is not None:
                    relative = folder + name
                    if skip_file is None or not skip_file(prefix + relative):
                        files.append((prefix + relative, relative, entry.is_symlink()))
                elif name == "pyvenv.cfg" and folder and exclusions.skips_venvs:
                    break
            except OSError:
                continue
        else:
            found += files
            folders += reversed(subfolders)
    return found


_NAME = operator.attrgetter("name")
_SUFFIXES = (".py", ".ipynb")


def _git_ignored(root: str, relatives: Iterable[str]) -> set[str]:
    """The files among `relatives` (relative to `root`) that git ignores in the repository holding
    `root`, by its rules for what lies below `root`; none when there is no git or no repository.

    `root` was named on the command line, so a pattern that ignores it (or a folder above it)
    does not count: git reports that pattern for every file below too, and a CI gate must never
    pass by checking nothing. Unless the pattern matches the file by its own name as well (`*`,
    `*.gen.py`): then the file is ignored in its own right, as ruff would have it. A file that
    another pattern also ignores is checked, since git names only the one pattern."""
    if not _in_a_repository(root):
        return set()  # before listing the files: most walks are of no repository
    files = list(relatives)
    if not files:
        return set()
    import subprocess  # here: a run on named files never needs it

    try:
        done = subprocess.run(
            ["git", "-C", root, "check-ignore", "--verbose", "-z", "--stdin"],
            # `./`: a file named `:(glob)x.py` is a file, not a pathspec with magic; git
            # answers with each path as it was asked.
            input="\0".join([*(f"./{path}" for path in files), _ROOT_ITSELF]),
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        return set()
    if done.returncode not in (0, 1):  # 128: not a repository
        return set()
    # Records of four fields: the ignore file, the line in it, the pattern, the path.
    fields = done.stdout.split("\0")
    matched = {
        fields[i + 3]: (fields[i], fields[i + 1], fields[i + 2])
        for i in range(0, len(fields) - 3, 4)
    }
    ignores_root = matched.pop(_ROOT_ITSELF, None)
    return {
        path.removeprefix("./")
        for path, match in matched.items()
        if not match[2].startswith("!")  # a negation matched: not ignored
        and (match != ignores_root or _names_the_file(match[2], path))
    }


def _names_the_file(pattern: str, path: str) -> bool:
    """Whether a git pattern could match the file `path` by its own name (not only through a
    folder it lies in): a pattern without a slash but a trailing one, matched on the name."""
    if pattern.endswith("/") or "/" in pattern.strip("/").removeprefix("**/"):
        return False  # a folder's pattern, or a path's: not this file's name
    return fnmatch.fnmatchcase(os.path.basename(path), pattern.removeprefix("**/").lstrip("/"))


# How the named folder itself is asked about, relative to itself (the slash: as a folder).
_ROOT_ITSELF = "./"


def _in_a_repository(root: str) -> bool:
    """Whether git could ignore anything under `root`: a `.git` in it or above it (or GIT_DIR
    set). Asking git costs a process start, which a folder outside any repository is spared."""
    if os.environ.get("GIT_DIR"):
        return True
    return _nearest_holding(os.path.abspath(root), (".git",)) is not None


def _nearest_holding(folder: str, markers: Sequence[str]) -> str | None:
    """`folder` or the nearest folder above it that holds one of `markers`; None if none does."""
    while True:
        if any(os.path.exists(os.path.join(folder, marker)) for marker in markers):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def project_root(folder: str) -> str:
    """The real path of the project a walked folder lies in: the nearest folder at or above it
    that holds `.git` or `.hg`; else the nearest that holds `pyproject.toml`, `setup.py` or
    `setup.cfg`; else the folder itself."""
    real = os.path.realpath(folder)
    return (
        _nearest_holding(real, (".git", ".hg"))
        or _nearest_holding(real, ("pyproject.toml", "setup.py", "setup.cfg"))
        or real
    )


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(os.path.join(folder, ""))


def discover(
    paths: Iterable[str],
    exclusions: Exclusions | None = None,
    outside: list[tuple[str, str]] | None = None,
) -> Iterator[str | Missing]:
    """Files to check, each once, in a stable order; a `Missing` for each path that isn't there.
    Folders are walked with the exclusions; a file named explicitly is always checked. A link
    a walk finds whose target lies outside the walked folder's project is left out, and added
    to `outside` as (the link, its target)."""
    exclusions = exclusions or Exclusions()
    seen: set[str] = set()
    paths = list(paths)
    for index, path in enumerate(paths):
        if exclusions.skip_named(path):
            continue
        if os.path.isdir(path):
            root = os.path.normpath(path)
            walked = _walk(root, exclusions)
            if exclusions.respect_gitignore:
                ignored = _git_ignored(root, (relative for _, relative, _ in walked))
                if ignored:
                    walked = [w for w in walked if w[1] not in ignored]
            if not seen and index == len(paths) - 1 and not any(w[2] for w in walked):
                # The only folder, without links: its files are all distinct, and no path
                # follows that could name one again.
                yield from (found for found, _, _ in walked)
                continue
            # Folders are not followed through links, so a plain file's real path is its
            # path under the real root: one realpath per root instead of one per file.
            real_root = os.path.join(os.path.realpath(root), "")
            candidates = [
                (found, os.path.realpath(found) if linked else real_root + relative)
                for found, relative, linked in walked
            ]
            if any(linked for _, _, linked in walked):
                project = project_root(root)
                for found, real in candidates:
                    if not _inside(real, project) and outside is not None:
                        outside.append((found, real))
                candidates = [(found, real) for found, real in candidates if _inside(real, project)]
        elif os.path.lexists(path):
            candidates = [(os.path.normpath(path), os.path.realpath(path))]
        else:
            yield Missing(path)
            continue
        for candidate, real in candidates:
            if real not in seen:
                seen.add(real)
                yield candidate
