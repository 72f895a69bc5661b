"""Where a project's modules are on disk, found as Python would find them, never imported; and
their bytes, read once per run, each with the file it was read from as a dependency.

- An absolute import (`mypkg.compat`) is looked for in the importing file's folder or one of its
  ancestors that is not itself a package, up to the project's root: the nearest folder that holds
  `.git` or the run's configuration file; else, as in a project unpacked from an sdist or copied
  without its history, the nearest that holds `pyproject.toml`, `setup.py` or `setup.cfg`; else
  the folder that holds the file's outermost package. Then in the root's `src` folder; then,
  where the caller asks, in the installed packages.
- A relative import (`..compat`) is looked for in the importing file's package.

Where a module was looked for and not found counts as a dependency too, so that a cached result
goes when one appears there. The functions that a pyproject.toml's script entries run are found
here as well: they are module files named by the project's configuration.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator

from tfmemlint.model import Dependency
from tfmemlint.reading.digest import content_hash, listing_hash
from tfmemlint.reading.launch import kind_of

# The files an answer was read from, or looked for.
Deps = frozenset[Dependency]
NOTHING: Deps = frozenset()
_MARKERS = (".git",)
# A project's root where no git marks it (ruff finds a project by its pyproject.toml the same way).
_PACKAGING_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg")
# The Compose files that may run a project's programs, by their usual names; Dockerfiles and
# scripts are known by `launch.kind_of`.
# The root's folders that usually hold the scripts and images that run a project's programs.
_LAUNCHER_FOLDERS = frozenset(
    {"bin", "deploy", "deployment", "docker", "jobs", "launch", "run", "scripts", "slurm", "tools"}
)
_COMPOSE_NAMES = frozenset(
    {"docker-compose.yml", "docker-compose.yaml", "compose.yml", "compose.yaml"}
)


class ModuleFiles:
    """The project's module files as one run finds them. `config_root`: the folder of the run's
    configuration file, where imports stop being looked for."""

    def __init__(self, config_root: str | None = None) -> None:
        self.config_root = os.path.abspath(config_root) if config_root else None
        self._raw: dict[str, tuple[bytes | None, Deps]] = {}
        self._scripts: dict[str, tuple[dict[str, frozenset[str]], Deps]] = {}
        self._search: dict[str, tuple[str, ...]] = {}
        self._installed_folders: dict[str, str | None] = {}
        self._roots: dict[str, str] = {}
        # Per folder without git: where a packaging file would move its root, were one there.
        self._unrooted: dict[str, Deps] = {}
        self._files: dict[str, bool] = {}
        self._dirs: dict[str, bool] = {}
        self._launch_folders: dict[str, tuple[list[str], Deps]] = {}
        self._found: dict[tuple[str, str, bool], tuple[str | None, int, list[str], Deps]] = {}
        self._modules: dict[tuple[str, ...], tuple[str | None, int]] = {}

    def _isfile(self, path: str) -> bool:
        found = self._files.get(path)
        if found is None:
            found = self._files[path] = os.path.isfile(path)
        return found

    def _isdir(self, path: str) -> bool:
        found = self._dirs.get(path)
        if found is None:
            found = self._dirs[path] = os.path.isdir(path)
        return found

    def _search_dirs(self, folder: str) -> tuple[str, ...]:
        """Where an absolute import made in `folder` is looked for, nearest first."""
        found = self._search.get(folder)
        if found is not None:
            return found
        dirs = []
        current = folder
        while True:
            dirs.append(current)
            if current == self.config_root or any(
                os.path.exists(os.path.join(current, marker)) for marker in _MARKERS
            ):
                break
            parent = os.path.dirname(current)
            if parent == current:  # no git: the nearest packaging file, or the outermost package
                packaged = next(
                    (
                        index
                        for index, candidate in enumerate(dirs)
                        if any(self._isfile(os.path.join(candidate, m)) for m in _PACKAGING_MARKERS)
                    ),
                    len(dirs),
                )
                self._unrooted[folder] = self.missing(
                    *(os.path.join(d, m) for d in dirs[:packaged] for m in _PACKAGING_MARKERS)
                )
                if packaged < len(dirs):
                    dirs = dirs[: packaged + 1]
                    break
                outermost = folder
                while self._isfile(os.path.join(outermost, "__init__.py")):
                    outermost = os.path.dirname(outermost)
                dirs = dirs[: dirs.index(outermost) + 1] if outermost in dirs else [folder]
                break
            current = parent
        root = self._roots[folder] = dirs[-1]
        # A package's folder is on no one's sys.path: its modules are imported from above it
        # (tests/pkg/ must not hide the real pkg/ from tests/pkg/test_x.py). A script's own
        # folder is (sys.path[0]), and so is the root.
        dirs = [
            d
            for d in dirs
            if d in (folder, root) or not self._isfile(os.path.join(d, "__init__.py"))
        ]
        source_layout = os.path.join(root, "src")  # the packages of a `src` layout
        if source_layout not in dirs and self._isdir(source_layout):
            dirs.append(source_layout)
        if folder != root and self._isfile(os.path.join(folder, "__init__.py")):
            # A package's module is imported through its package, from above; its folder is
            # sys.path[0] only when it runs as a script. So `from tcn.tcn import f` in
            # tcn/__init__.py means the package's tcn.py, whatever the folder holds.
            dirs.remove(folder)
            dirs.append(folder)
        self._search[folder] = tuple(dirs)
        return self._search[folder]

    def root_of(self, filename: str) -> str:
        """The project's root as seen from a file: the last of its folders that imports are
        looked in (its `src` aside)."""
        folder = os.path.dirname(filename)
        self._search_dirs(folder)
        return self._roots[folder]

    def _module(self, base: str, parts: list[str]) -> tuple[str | None, int]:
        """The module file that the longest importable prefix of `parts` names under `base`,
        and that prefix's length (0: `base` itself, as a package). Once per run for each: the
        modules of a project import the same names from the same root."""
        key = (base, *parts)
        known = self._modules.get(key)
        if known is None:
            known = self._modules[key] = self._module_uncached(base, parts)
        return known

    def _module_uncached(self, base: str, parts: list[str]) -> tuple[str | None, int]:
        found: str | None = None
        length = 0
        if self._isfile(os.path.join(base, "__init__.py")):
            found = os.path.join(base, "__init__.py")
        folder = base
        for index, part in enumerate(parts):
            if not part.isidentifier():
                break
            module = os.path.join(folder, part + ".py")
            package = os.path.join(folder, part)
            # A folder without __init__.py is a namespace package: on the way to a module, or
            # as the name itself inside a package, where nothing else on sys.path competes.
            if self._isdir(package) and (
                self._isfile(os.path.join(package, "__init__.py"))
                or index + 1 < len(parts)
                or index > 0
            ):
                init = os.path.join(package, "__init__.py")
                found, length, folder = (init if self._isfile(init) else None), index + 1, package
                if found is None and index + 1 == len(parts):
                    break
                continue
            if self._isfile(module):
                return module, index + 1
            break
        return found, length

    def find(
        self, qualified: str, importer: str, installed: bool
    ) -> tuple[str | None, int, list[str], Deps]:
        """Where the module part of `qualified` is: (its file, how many of the name's parts it
        takes, the parts, where a module was looked for and not found). (None, 0, ...) for a name
        that is not the project's (nor, with `installed`, an installed package's). Once per
        run for each name and importing folder: the modules of a package import the same
        names."""
        key = (qualified, os.path.dirname(importer), installed)
        known = self._found.get(key)
        if known is None:
            known = self._found[key] = self._find(qualified, importer, installed)
        module, length, parts, absent = known
        return module, length, list(parts), absent

    def _find(
        self, qualified: str, importer: str, installed: bool
    ) -> tuple[str | None, int, list[str], Deps]:
        level = len(qualified) - len(qualified.lstrip("."))
        parts = [p for p in qualified[level:].split(".") if p]
        if level:
            base = os.path.dirname(importer)
            for _ in range(level - 1):
                base = os.path.dirname(base)
            module, length = self._module(base, parts)
            folder = base
        else:
            module, length, folder = None, 0, ""
            for folder in self._search_dirs(os.path.dirname(importer)):
                module, length = self._module(folder, parts)
                if length:
                    break
            else:
                # An installed package's source, read, never imported (a framework of the
                # project's environment that exports a TensorFlow alias).
                found = self._installed(parts[0]) if installed and parts else None
                module, length = self._module(found, parts) if found else (None, 0)
                # Where the project's module would be, for a name that may make a finding;
                # and, always, where a packaging file would move the root it was looked for in.
                absent = (
                    self._absent(parts[0], importer)
                    if installed
                    else self._unrooted.get(os.path.dirname(importer), NOTHING)
                )
                return (module, length, parts, absent) if length else (None, 0, parts, absent)
        absent = NOTHING
        if length < len(parts) and (module is None or module.endswith("__init__.py")):
            # A submodule that would come before the package's own binding, were it there.
            if module is not None:
                folder = os.path.dirname(module)
            else:  # a folder without __init__.py (a namespace package) took the first parts
                folder = os.path.join(folder, *parts[:length])
            absent = self.missing(
                os.path.join(folder, parts[length] + ".py"), os.path.join(folder, parts[length])
            )
        return module, length, parts, absent

    def _installed(self, top: str) -> str | None:
        """The folder that holds the installed top-level module `top`, found as Python's import
        system would find it but without running it; None for the standard library, built-in
        and compiled modules, and what is not installed."""
        if top in self._installed_folders:
            return self._installed_folders[top]
        folder = None
        if top not in sys.stdlib_module_names:
            import importlib.util

            try:
                spec = importlib.util.find_spec(top)
            except (ImportError, ValueError):
                spec = None
            locations = list(spec.submodule_search_locations or []) if spec else []
            if locations:
                folder = os.path.dirname(locations[0])
            elif spec is not None and (spec.origin or "").endswith(".py"):
                folder = os.path.dirname(spec.origin or "")
        self._installed_folders[top] = folder
        return folder

    def _absent(self, top: str, importer: str) -> Deps:
        """Where the project module `top` would have been for `importer`: so that a cached
        result goes when one appears there."""
        searched = self._search_dirs(os.path.dirname(importer))
        return self._unrooted.get(os.path.dirname(importer), NOTHING) | self.missing(
            *(
                path
                for folder in searched
                for path in (os.path.join(folder, top + ".py"), os.path.join(folder, top))
            )
        )

    def missing(self, *paths: str) -> Deps:
        return frozenset(
            Dependency(path, (0, 0, 0, 0), 0, "")
            for path in paths
            if not self._isfile(path) and not self._isdir(path)
        )

    def read(self, path: str) -> tuple[bytes | None, Deps]:
        """A project file's bytes, read once per run, and the file, as a dependency."""
        known = self._raw.get(path)
        if known is None:
            known = self._raw[path] = _read(path)
        return known

    def launchers(self, filename: str) -> tuple[list[str], Deps]:
        """The launch files that may run the module `filename`: in its folder and each folder
        above it up to the project's root, and in the root's folders that usually hold them
        (`scripts`, `slurm`, `docker`, ...), every Dockerfile, Compose file (by its usual
        names), shell and Slurm script; and those folders, whose listing the answer depends
        on."""
        importer = os.path.abspath(filename)
        root = self.root_of(importer)
        folders = folders_up_to(os.path.dirname(importer), root)
        folders += [
            os.path.join(root, name)
            for name in sorted(_LAUNCHER_FOLDERS)
            if self._isdir(os.path.join(root, name)) and os.path.join(root, name) not in folders
        ]
        found: list[str] = []
        deps: set[Dependency] = set()
        for folder in folders:
            listed, listing = self._launchers_in(folder)
            found += listed
            deps |= listing
        return found, frozenset(deps) | self.missing(
            *(os.path.join(root, name) for name in _LAUNCHER_FOLDERS)
        )

    def _launchers_in(self, folder: str) -> tuple[list[str], Deps]:
        known = self._launch_folders.get(folder)
        if known is not None:
            return known
        read_ns = time.time_ns()
        try:
            stat = os.stat(folder)
            names = sorted(os.listdir(folder))
        except OSError:
            return [], NOTHING
        launchers = _launcher_names(names)
        listed = [os.path.join(folder, name) for name in launchers]
        key = (stat.st_mtime_ns, stat.st_ctime_ns, stat.st_size, stat.st_ino)
        # The folder itself, by the launch files it holds: one added or removed changes it.
        listing = listing_hash(launchers)
        answer = (
            [p for p in listed if self._isfile(p)],
            frozenset({Dependency(folder, key, read_ns, listing)}),
        )
        self._launch_folders[folder] = answer
        return answer

    def script_functions(self, filename: str) -> tuple[frozenset[str], Deps]:
        """The functions of the module `filename` that an entry of `[project.scripts]`,
        `[project.gui-scripts]` or `[tool.poetry.scripts]` in the nearest pyproject.toml runs;
        and the pyproject.toml files it was read from, or looked for."""
        importer = os.path.abspath(filename)
        folder = os.path.dirname(importer)
        root = self.root_of(importer)
        looked: list[str] = []
        while True:
            pyproject = os.path.join(folder, "pyproject.toml")
            if self._isfile(pyproject):
                scripts, read = self._scripts_of(pyproject)
                return scripts.get(importer, frozenset()), read | self.missing(*looked)
            looked.append(pyproject)
            parent = os.path.dirname(folder)
            if folder == root or parent == folder:
                return frozenset(), self.missing(*looked)
            folder = parent

    def _scripts_of(self, pyproject: str) -> tuple[dict[str, frozenset[str]], Deps]:
        """{module file: the functions its script entries name} of one pyproject.toml."""
        known = self._scripts.get(pyproject)
        if known is not None:
            return known
        raw, read = _read(pyproject)
        found: dict[str, set[str]] = {}
        base = os.path.dirname(pyproject)
        for target in _script_targets(raw or b""):
            module, _, function = target.partition(":")
            parts = module.strip().split(".")
            function = function.strip().split(".")[0].split("[")[0].strip()
            if not function or not all(part.isidentifier() for part in parts):
                continue
            for folder in (base, os.path.join(base, "src")):
                stem = os.path.join(folder, *parts)
                for path in (stem + ".py", os.path.join(stem, "__init__.py")):
                    found.setdefault(path, set()).add(function)
        answer = {path: frozenset(functions) for path, functions in found.items()}, read
        self._scripts[pyproject] = answer
        return answer


def folders_up_to(folder: str, root: str) -> list[str]:
    """`folder` and each folder above it, up to `root` (or the file system's root)."""
    found = [folder]
    while folder != root and os.path.dirname(folder) != folder:
        folder = os.path.dirname(folder)
        found.append(folder)
    return found


def _launcher_names(names: list[str]) -> list[str]:
    """Which of a folder's names may be launch files that run a program."""
    return [n for n in names if n in _COMPOSE_NAMES or kind_of(n) in ("dockerfile", "shell")]


def launchers_digest(folder: str) -> str:
    """The fingerprint of the launch files a folder holds, as a result that depends on them
    keeps it (a folder's dependency: see `ModuleFiles.launchers`). OSError where the folder
    cannot be listed."""
    return listing_hash(_launcher_names(os.listdir(folder)))


def _read(path: str) -> tuple[bytes | None, Deps]:
    """A file's bytes (None where it cannot be read), and the file, as a dependency."""
    read_ns = time.time_ns()
    try:
        with open(path, "rb") as handle:
            stat = os.fstat(handle.fileno())
            raw = handle.read()
    except OSError:
        return None, NOTHING
    key = (stat.st_mtime_ns, stat.st_ctime_ns, stat.st_size, stat.st_ino)
    return raw, frozenset({Dependency(path, key, read_ns, content_hash(raw))})


def _script_targets(raw: bytes) -> Iterator[str]:
    """The "module:function" of every script entry in a pyproject.toml; none where it cannot be
    read as TOML (or, on Python 3.10, without tomli)."""
    if b"scripts" not in raw:
        return
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ModuleNotFoundError:
            return
    try:
        document = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return
    project = document.get("project")
    poetry = (
        document.get("tool", {}).get("poetry") if isinstance(document.get("tool"), dict) else None
    )
    tables = [
        project.get("scripts") if isinstance(project, dict) else None,
        project.get("gui-scripts") if isinstance(project, dict) else None,
        poetry.get("scripts") if isinstance(poetry, dict) else None,
    ]
    for table in tables:
        for value in (table or {}).values() if isinstance(table, dict) else ():
            if isinstance(value, dict):  # poetry's `{ callable = "module:function" }`
                value = value.get("callable") or value.get("reference")
            if isinstance(value, str) and ":" in value:
                yield value
