"""The project index: what a project's own modules export, so that a name imported from one
(`from mypkg.compat import tfv1`) resolves to the TensorFlow module or API it stands for.

Modules are found on disk as Python would find them, never imported:
- an absolute import (`mypkg.compat`) in the importing file's folder or one of its ancestors that
  is not itself a package, up to the project's root: the nearest folder that holds `.git` or the
  run's configuration file, or else the folder that holds the file's outermost package; then in
  the root's `src` folder; then, for a name that may make a finding, in the installed packages;
- a relative import (`..compat`) in the importing file's package.

A module is read once per run and summarized with CPython's `ast` (a tenth of libcst's parse):
what each module-level name is bound to. A name resolves only when every binding of it is an
import or a plain alias (`tfv1 = tf.compat.v1`, `tf if old else tf.compat.v1`), followed through
`__init__.py` re-exports and star imports, cycles included. A fallback to `None` or `object()`
(`except ImportError: tf = None`) is set aside: no session is ever made through one. A name bound
any other way (a stand-in object, a function) and a module that does not parse resolve to
nothing, so they never make a finding.

Each answer carries the files it was read from, so that a cached result can be checked against
them (see `cache`).
"""

from __future__ import annotations

import ast
import functools
import os
import re
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tfmemlint.digest import content_hash
from tfmemlint.model import Dependency
from tfmemlint.source import parse_python

# How deep a chain of re-exports is followed; deeper, a name resolves to nothing.
MAX_DEPTH = 64

# The packages whose names the rules know: never looked for in the project, even where the
# project holds a copy (TensorFlow's own tree).
TENSORFLOW_ROOTS = frozenset({"tensorflow", "tensorflow_estimator", "keras", "tf_slim"})
_MARKERS = (".git",)


def member(module: str, name: str) -> str:
    """`module.name`; for a relative module of dots alone (`from .. import x`), `..x`."""
    return f"{module}{name}" if module.endswith(".") else f"{module}.{name}"


def from_module(node: ast.ImportFrom) -> str:
    """The module a `from` import names, a relative one with its dots (`..compat`)."""
    return "." * node.level + (node.module or "")


def imported_names(node: ast.Import | ast.ImportFrom) -> Iterator[tuple[str, str]]:
    """(the name bound, the qualified name it stands for) for each name an import binds:
    `import a.b` binds `a` to `a`; a star import binds none that it names."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                yield alias.asname, alias.name
            else:
                head = alias.name.partition(".")[0]
                yield head, head
        return
    module = from_module(node)
    for alias in node.names:
        if alias.name != "*":
            yield alias.asname or alias.name, member(module, alias.name)


def star_import(node: ast.stmt) -> str | None:
    """The module a `from m import *` takes every public name of; None for any other statement."""
    if isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names):
        return from_module(node)
    return None


def is_tensorflow(qualified: str) -> bool:
    return qualified.partition(".")[0] in TENSORFLOW_ROOTS


@dataclass
class _Summary:
    """A module's module-level bindings. Each name maps to its sources, an imported name
    (`mypkg.compat.tf`, `..compat.tf`) or an alias (`=tf.compat.v1`); None: bound otherwise."""

    bindings: dict[str, list[str] | None] = field(default_factory=dict)
    stars: list[str] = field(default_factory=list)  # the modules it star-imports, in order
    public: frozenset[str] | None = None  # its literal `__all__`, if any
    functions: set[str] = field(default_factory=set)  # names a `def` binds
    bound: dict[str, int] = field(default_factory=dict)  # how many times each name is bound


# An answer and the files it was read from.
_Deps = frozenset[Dependency]
_Answer = tuple[frozenset[str] | None, _Deps]
_NOTHING: _Deps = frozenset()


class ProjectIndex:
    """The index for one run. `config_root`: the folder of the run's configuration file;
    `api_names`: the last component of every API the rules start from (`rules.api_names()`),
    the only names worth reading an installed package for."""

    def __init__(
        self, config_root: str | None = None, api_names: frozenset[str] = frozenset()
    ) -> None:
        self.config_root = os.path.abspath(config_root) if config_root else None
        self.api_names = api_names
        self._summaries: dict[str, tuple[_Summary | None, _Deps]] = {}
        self._exports: dict[tuple[str, str], _Answer] = {}
        self._resolved: dict[tuple[str, str, bool], _Answer] = {}
        self._via: dict[tuple[str, str], str] = {}  # the module a resolved name came from
        self._reaches: dict[str, tuple[bool, _Deps]] = {}
        self._scripts: dict[str, tuple[dict[str, frozenset[str]], _Deps]] = {}
        self._imported: dict[str, tuple[list[str], _Deps]] = {}
        self.trees: dict[str, ast.Module | None] = {}  # modules read with `ast` (syntax_tree)
        self._raw: dict[str, tuple[bytes | None, _Deps]] = {}
        self._search: dict[str, tuple[str, ...]] = {}
        self._installed_folders: dict[str, str | None] = {}
        self._roots: dict[str, str] = {}
        self._files: dict[str, bool] = {}
        self._dirs: dict[str, bool] = {}
        self._in_progress: set[tuple[str, str]] = set()
        self._reaching: set[str] = set()
        self._cuts = 0  # import cycles cut so far (see _remembered)
        self._depth = 0
        # Modules the engine parsed to follow a call into them (engine.FileContext.other_module).
        self.parsed: dict[tuple[str, object], object] = {}

    def resolver(self, filename: str) -> FileResolver:
        return FileResolver(self, filename)

    # -- finding modules ---------------------------------------------------------------------
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
            if parent == current:  # no root marker: up to the folder of the outermost package
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
        and that prefix's length (0: `base` itself, as a package)."""
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
            if self._isdir(package) and (
                self._isfile(os.path.join(package, "__init__.py")) or index + 1 < len(parts)
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

    # -- reading modules ---------------------------------------------------------------------
    def _summary(self, path: str) -> tuple[_Summary | None, _Deps]:
        """The module's summary (None where it cannot be read or parsed), and the file it was
        read from, as a dependency."""
        known = self._summaries.get(path)
        if known is not None:
            return known
        # A tree the walk kept is summarized; one read only for this is not kept (memory).
        tree, read = self.syntax_tree(path, keep=False)
        summary = _summarize(tree) if tree is not None else None
        self._summaries[path] = (summary, read)
        return summary, read

    def syntax_tree(self, path: str, keep: bool = True) -> tuple[ast.Module | None, _Deps]:
        """A project module's syntax tree, as CPython reads it (None where it cannot), parsed
        once per run where `keep`, and the file, as a dependency."""
        raw, read = self.read(path)
        if path in self.trees:
            return self.trees[path], read
        try:
            tree = parse_python(raw) if raw is not None else None
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            tree = None
        if keep:
            self.trees[path] = tree
        return tree, read

    def read(self, path: str) -> tuple[bytes | None, _Deps]:
        """A project file's bytes, read once per run, and the file, as a dependency."""
        known = self._raw.get(path)
        if known is None:
            known = self._raw[path] = _read(path)
        return known

    def script_functions(self, filename: str) -> tuple[frozenset[str], _Deps]:
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
                return scripts.get(importer, frozenset()), read | self._missing(*looked)
            looked.append(pyproject)
            parent = os.path.dirname(folder)
            if folder == root or parent == folder:
                return frozenset(), self._missing(*looked)
            folder = parent

    def _scripts_of(self, pyproject: str) -> tuple[dict[str, frozenset[str]], _Deps]:
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

    # -- answers -----------------------------------------------------------------------------
    def resolve(self, qualified: str, importer: str, installed: bool = False) -> _Answer:
        """What `qualified`, spelled in the file `importer`, names: the qualified names it
        stands for (itself, when it is no project module's), or None when a project module binds
        it to something that is not an import or alias, or a relative import fails. Installed
        packages are read for a name that may make a finding, or any with `installed`."""
        if is_tensorflow(qualified):
            return frozenset({qualified}), _NOTHING
        # only a name that may make a finding is worth reading an installed package for, or
        # remembering where its module was not
        installed = installed or qualified.rpartition(".")[2] in self.api_names
        key = (os.path.dirname(importer), qualified, installed)
        known = self._resolved.get(key)
        if known is None:
            known = self._remembered(
                self._resolved, key, self._resolve, qualified, importer, installed
            )
        return known

    def _remembered(self, memo: dict[Any, Any], key: Any, work: Any, *args: Any) -> Any:
        """`work(*args)`, remembered under `key` unless an import cycle or the depth limit cut
        it short: such an answer depends on where the walk began."""
        cuts = self._cuts
        if self._depth > MAX_DEPTH:
            self._cuts += 1
            return None, _NOTHING
        self._depth += 1
        try:
            answer = work(*args)
        finally:
            self._depth -= 1
        if self._cuts == cuts:
            memo[key] = answer
        return answer

    def _find(
        self, qualified: str, importer: str, installed: bool
    ) -> tuple[str | None, int, list[str], _Deps]:
        """Where the module part of `qualified` is: (its file, how many of the name's parts it
        takes, the parts, where a module was looked for and not found). (None, 0, ...) for a name
        that is not the project's (nor, with `installed`, an installed package's)."""
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
                # Where the project's module would be, for a name that may make a finding.
                absent = self._absent(parts[0], importer) if installed else _NOTHING
                return (module, length, parts, absent) if length else (None, 0, parts, absent)
        absent = _NOTHING
        if length < len(parts) and (module is None or module.endswith("__init__.py")):
            # A submodule that would come before the package's own binding, were it there.
            if module is not None:
                folder = os.path.dirname(module)
            else:  # a folder without __init__.py (a namespace package) took the first parts
                folder = os.path.join(folder, *parts[:length])
            absent = self._missing(
                os.path.join(folder, parts[length] + ".py"), os.path.join(folder, parts[length])
            )
        return module, length, parts, absent

    def _resolve(self, qualified: str, importer: str, installed: bool) -> _Answer:
        module, length, parts, absent = self._find(qualified, importer, installed)
        if module is None and qualified.startswith("."):
            return None, absent  # Python's import fails
        if module is None or length == len(parts):
            return frozenset({qualified}), absent  # no module of the project's, or one itself
        exported, read = self._export(module, parts[length])
        if exported is None:
            return None, read | absent
        self._via[(os.path.dirname(importer), qualified)] = module
        tail = "".join(f".{part}" for part in parts[length + 1 :])
        return frozenset(name + tail for name in exported), read | absent

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

    def _absent(self, top: str, importer: str) -> _Deps:
        """Where the project module `top` would have been for `importer`: so that a cached
        result goes when one appears there."""
        return self._missing(
            *(
                path
                for folder in self._search_dirs(os.path.dirname(importer))
                for path in (os.path.join(folder, top + ".py"), os.path.join(folder, top))
            )
        )

    def _missing(self, *paths: str) -> _Deps:
        return frozenset(
            Dependency(path, (0, 0, 0, 0), 0, "")
            for path in paths
            if not self._isfile(path) and not self._isdir(path)
        )

    def locate(self, qualified: str, importer: str, depth: int = 0) -> tuple[str | None, _Deps]:
        """The module file that defines the function `qualified` names, spelled in the file
        `importer` (`utils.config.session_config`), following re-exports; None when it is no
        function of the project's, defined once at a module's top level."""
        if depth > MAX_DEPTH or is_tensorflow(qualified):
            return None, _NOTHING
        module, length, parts, read = self._find(qualified, importer, installed=False)
        if module is None or length != len(parts) - 1:
            return None, read
        name = parts[-1]
        summary, more = self._summary(module)
        read |= more
        if summary is None or summary.bound.get(name) != 1:
            return None, read
        if name in summary.functions:
            return module, read
        sources = summary.bindings.get(name)
        if sources and len(sources) == 1 and not sources[0].startswith(("=", _PLACEHOLDER)):
            found, more = self.locate(sources[0], module, depth + 1)  # a re-export
            return found, read | more
        return None, read

    def via(self, qualified: str, importer: str) -> str | None:
        """The project module that `qualified`, resolved for `importer`, came from."""
        return self._via.get((os.path.dirname(importer), qualified))

    def _export(self, path: str, name: str) -> _Answer:
        """What the module at `path` exports as `name`, resolved."""
        key = (path, name)
        known = self._exports.get(key)
        if known is not None:
            return known
        if key in self._in_progress:  # an import cycle: nothing certain
            self._cuts += 1
            return None, _NOTHING
        self._in_progress.add(key)
        try:
            return self._remembered(self._exports, key, self._export_uncached, path, name)
        finally:
            self._in_progress.discard(key)

    def _export_uncached(self, path: str, name: str) -> _Answer:
        summary, read = self._summary(path)
        if summary is None:
            return None, read
        if name not in summary.bindings:
            # Star imports, the last first: it is the one whose binding stays.
            for star in reversed(summary.stars):
                answer, more = self.star_export(path, star, name)
                read |= more
                if answer is not False:
                    return answer, read  # type: ignore[return-value]
            return None, read
        sources = summary.bindings[name]
        if sources is None:
            return None, read
        found, more = self._sources(path, name, sources)
        return found, read | more

    def _sources(self, path: str, name: str, sources: list[str]) -> _Answer:
        """What `name` stands for in the module at `path`, bound from each of `sources`."""
        # No call through a placeholder makes a session: a call does only through the others.
        sources = [source for source in sources if source != _PLACEHOLDER] or [_PLACEHOLDER]
        names: set[str] = set()
        read = _NOTHING
        for index, source in enumerate(sources):
            if source == _PLACEHOLDER:
                return None, read
            if not source.startswith("="):
                found, more = self.resolve(source, path)  # an import
            else:
                head, _, tail = source[1:].partition(".")
                if head == name:  # `tf = tf.compat.v1`: the bindings before this one
                    found, more = (
                        self._sources(path, name, sources[:index]) if index else (None, _NOTHING)
                    )
                else:
                    found, more = self._export(path, head)
                if found is not None and tail:
                    # `B.tf` of a project module B is a project name again.
                    appended = self._resolve_each({f"{f}.{tail}" for f in found}, path)
                    found, more = appended[0], more | appended[1]
            read |= more
            if found is None:
                return None, read
            names |= found
        return frozenset(names), read

    def _resolve_each(self, names: set[str], importer: str) -> _Answer:
        resolved: set[str] = set()
        read = _NOTHING
        for name in names:
            found, more = self.resolve(name, importer)
            read |= more
            if found is None:
                return None, read
            resolved |= found
        return frozenset(resolved), read

    def star_export(
        self, path: str, star: str, name: str
    ) -> tuple[frozenset[str] | bool | None, _Deps]:
        """`name` through `from star import *` in the module at `path`: False when that module
        does not bind it (look further), its export otherwise."""
        module, more = self.star_module(path, star)
        if module is None:  # not the project's: it may hold anything
            found, read = self.resolve(member(star, name), path)
            return found, more | read
        summary, _ = self._summary(module)
        if summary is None:
            return None, more
        public = summary.public
        visible = name in public if public is not None else not name.startswith("_")
        if not visible or (name not in summary.bindings and not summary.stars):
            return False, more
        found, read = self._export(module, name)
        if found is None and name not in summary.bindings:
            return False, more | read
        return found, more | read

    def star_module(self, path: str, star: str) -> tuple[str | None, _Deps]:
        """The project module file `from star import *` in `path` imports, if it is one."""
        if is_tensorflow(star):
            return None, _NOTHING
        module, length, parts, absent = self._find(star, path, installed=False)
        return (module if module is not None and length == len(parts) else None), absent

    def imported_modules(self, importer: str, raw: bytes | None) -> tuple[list[str], _Deps]:
        """The project module files that `importer`'s imports name, in order (its functions'
        imports too: what may run once it is imported); remembered per file."""
        known = self._imported.get(importer)
        if known is not None:
            return known
        found: list[str] = []
        read: _Deps = _NOTHING
        # Read line by line: as cheap as a regular expression, where `ast` would cost a
        # parse of every module a program reaches. A multi-line `from x import (a, b)` gives x
        # and a; an import in a docstring counts too: more modules looked at, never fewer.
        for imported in _imports_in_lines(raw) if raw is not None else ():
            module, _, _, absent = self._find(imported, importer, installed=False)
            read |= absent
            if module is not None and module not in found:
                found.append(module)
        self._imported[importer] = (found, read)
        return found, read

    def reaches_tensorflow(self, filename: str, raw: bytes) -> tuple[bool, _Deps]:
        """Whether a file imports something of the project's that stands for TensorFlow: the
        pre-filter's way in for a file that never names TensorFlow itself."""
        importer = os.path.abspath(filename)
        read: _Deps = _NOTHING
        if b"import" not in raw:
            return False, read
        for imported in _imports(raw):
            found, more = self.resolve(imported, importer, installed=True)
            read |= more
            for name in found or ():
                if is_tensorflow(name):
                    return True, read
                module, more = self.star_module(importer, name)
                read |= more
                if module is not None:
                    reaches, more = self._module_reaches(module)
                    read |= more
                    if reaches:
                        return True, read
        return False, read

    def _module_reaches(self, path: str) -> tuple[bool, _Deps]:
        """Whether a project module exports anything that stands for TensorFlow."""
        known = self._reaches.get(path)
        if known is not None:
            return known
        if path in self._reaching:  # a cycle: no, as far as this walk goes
            self._cuts += 1
            return False, _NOTHING
        self._reaching.add(path)
        try:
            return self._remembered(self._reaches, path, self._module_reaches_uncached, path)  # type: ignore[no-any-return]
        finally:
            self._reaching.discard(path)

    def _module_reaches_uncached(self, path: str) -> tuple[bool, _Deps]:
        summary, read = self._summary(path)
        if summary is None:
            return False, read
        for name in summary.bindings:
            found, more = self._export(path, name)
            read |= more
            if any(is_tensorflow(each) for each in found or ()):
                return True, read
        for star in summary.stars:
            module, more = self.star_module(path, star)
            read |= more
            if module is None:
                if is_tensorflow(star):
                    return True, read
                continue
            reaches, more = self._module_reaches(module)
            read |= more
            if reaches:
                return True, read
        return False, read


class FileResolver:
    """The index as one importing file sees it, recording what it read from."""

    def __init__(self, index: ProjectIndex, filename: str) -> None:
        self.index = index
        self.filename = filename
        self.read: set[Dependency] = set()
        # A file asks about the same few names again and again (every `np.` call).
        self._known: dict[str, frozenset[str] | None] = {}

    @functools.cached_property
    def importer(self) -> str:
        """The file's absolute path; worked out on first use, as most files never need it."""
        return os.path.abspath(self.filename)

    def resolve(self, names: Iterable[str]) -> set[str] | None:
        """The names, each resolved through the project; None if any resolves to nothing."""
        resolved: set[str] = set()
        for name in names:
            if name in self._known:
                found = self._known[name]
            elif is_tensorflow(name):
                found = self._known[name] = frozenset({name})
            else:
                found, read = self.index.resolve(name, self.importer)
                self.read |= read
                self._known[name] = found
            if found is None:
                return None
            resolved |= found
        return resolved

    def locate(self, name: str) -> str | None:
        """The module file that defines the function `name` (as this file spells it), if it is
        the project's."""
        found, read = self.index.locate(name, self.importer)
        self.read |= read
        return found

    def display(self, path: str) -> str:
        """A project file's path as messages show it: from the project's root (stable wherever
        the run starts, so a cached message stays right)."""
        relative = os.path.relpath(path, self.index.root_of(self.importer))
        return path if relative.startswith("..") else relative.replace(os.sep, "/")

    def star_source(self, stars: list[str], name: str) -> str | None:
        """Which of the file's star imports (in order) binds `name`: the last one that does. A
        module outside the project may bind anything: it is taken when it is TensorFlow or the
        only star import."""
        for star in reversed(stars):
            found, read = self.index.star_export(self.importer, star, name)
            self.read |= read
            if found is False:
                continue
            external = self.index.star_module(self.importer, star)[0] is None
            if external and not is_tensorflow(star) and len(stars) > 1:
                continue
            return star
        return None

    def dependencies(self) -> tuple[Dependency, ...]:
        """The module files read for this file, in path order: its result depends on them."""
        return tuple(sorted(self.read))

    def via(self, name: str) -> str | None:
        """The project module `name` came from, once resolved, as a path from the project's
        root (stable wherever the run starts, so a cached message stays right)."""
        path = self.index.via(name, self.importer)
        return None if path is None else self.display(path)

    def mentions(self, path: str, words: Iterable[bytes]) -> bool:
        """Whether a project file holds one of the words; its answer depends on that file."""
        raw, read = self.index.read(path)
        self.read |= read
        return raw is not None and any(word in raw for word in words)

    def syntax_tree(self, path: str) -> ast.Module | None:
        """A project module's syntax tree, as CPython reads it (once per run); None where it
        cannot."""
        tree, read = self.index.syntax_tree(path)
        self.read |= read
        return tree

    def imports_of(self, path: str) -> list[str]:
        """The project module files that the project module `path` imports, in order (its
        functions' imports too: what may run when it is imported)."""
        raw, read = self.index.read(path)
        found, more = self.index.imported_modules(path, raw)
        self.read |= read | more
        return found

    def reaches_tensorflow(self, raw: bytes) -> bool:
        reaches, read = self.index.reaches_tensorflow(self.importer, raw)
        self.read |= read
        return reaches

    def module(self, name: str) -> str | None:
        """The project module file that `name`, as this file spells it, names; None when it
        is no module of the project's. Its answer depends on that file from then on."""
        path, read = self.index.star_module(self.importer, name)
        self.read |= read
        if path is not None:
            self.read |= self.index.read(path)[1]
        return path

    def module_of(self, name: str) -> str | None:
        """The project module file that the longest importable head of the dotted `name`
        names (`pkg.env` for `pkg.env.setup`, or for `pkg.env` itself)."""
        parts = name.split(".") if name else []
        for length in range(len(parts), 0, -1):
            path = self.module(".".join(parts[:length]))
            if path is not None:
                return path
        return None

    def script_functions(self) -> frozenset[str]:
        """The functions of this module that the project's script entries run."""
        functions, read = self.index.script_functions(self.importer)
        self.read |= read
        return functions


def _read(path: str) -> tuple[bytes | None, _Deps]:
    """A file's bytes (None where it cannot be read), and the file, as a dependency."""
    read_ns = time.time_ns()
    try:
        with open(path, "rb") as handle:
            stat = os.fstat(handle.fileno())
            raw = handle.read()
    except OSError:
        return None, _NOTHING
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


def _imports(raw: bytes) -> Iterator[str]:
    """Every module or imported name a file's import statements spell, relative ones with
    their dots. Where Python 3 cannot parse the file (Python 2), they are read line by line."""
    try:
        tree = parse_python(raw)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        yield from _imports_in_lines(raw)
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            module = from_module(node)
            for alias in node.names:
                yield module if alias.name == "*" else member(module, alias.name)


_IMPORT_LINE = re.compile(
    rb"^[ \t]*(?:from[ \t]+(?P<module>\.*[\w.]*)[ \t]+import[ \t]+\(?(?P<names>[\w \t,*]+)"
    rb"|import[ \t]+(?P<modules>[\w. \t,]+))",
    re.MULTILINE,
)


def _imports_in_lines(raw: bytes) -> Iterator[str]:
    """The imports of a file read one statement a line, without parsing it: a file CPython
    cannot parse, or one the index only crosses."""
    for found in _IMPORT_LINE.finditer(raw):
        if found["module"] is not None:
            module = found["module"].decode("ascii", "replace")
            for name in found["names"].decode("ascii", "replace").split(","):
                name = name.split()[0] if name.split() else ""
                if name:
                    yield module if name == "*" else member(module, name)
        else:
            for name in found["modules"].decode("ascii", "replace").split(","):
                if name.split():
                    yield name.split()[0]


def _summarize(tree: ast.Module) -> _Summary | None:
    summary = _Summary()
    try:
        _collect(tree.body, summary)
    except RecursionError:
        return None
    return summary


def _bind(summary: _Summary, name: str, source: str | None) -> None:
    summary.bound[name] = summary.bound.get(name, 0) + 1
    if source is None:
        summary.bindings[name] = None
        return
    sources = summary.bindings.setdefault(name, [])
    if sources is not None:
        sources.append(source)


def dotted(node: ast.expr) -> str | None:
    """`a.b.c` for a chain of names and attributes, else None (iterative: chains run long)."""
    attributes = []
    while isinstance(node, ast.Attribute):
        attributes.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(attributes)])


def _bind_targets(summary: _Summary, target: ast.expr) -> None:
    """The names a target binds, as something unknown (`x.attr = v` and `x[k] = v` bind none)."""
    if isinstance(target, ast.Name):
        _bind(summary, target.id, None)
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            _bind_targets(summary, element)
    elif isinstance(target, ast.Starred):
        _bind_targets(summary, target.value)


def _collect(body: list[ast.stmt], summary: _Summary) -> None:
    """The module-level bindings of `body`, into `summary`; blocks at module level (`if`, `try`,
    `with`, loops) bind there too."""
    for statement in body:
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            star = star_import(statement)
            if star is not None:
                summary.stars.append(star)
            for name, qualified in imported_names(statement):
                _bind(summary, name, qualified)
        elif isinstance(statement, (ast.Assign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            value = statement.value
            if len(targets) == 1 and isinstance(targets[0], ast.Name) and value is not None:
                name = targets[0].id
                if name == "__all__":
                    _public(summary, value)
                if _placeholder(value):
                    _bind(summary, name, _PLACEHOLDER)
                    continue
                # `tf if old else tf.compat.v1` may stand for either.
                choices = [value.body, value.orelse] if isinstance(value, ast.IfExp) else [value]
                spelled = [dotted(choice) for choice in choices]
                if None in spelled:
                    _bind(summary, name, None)
                for each in spelled if None not in spelled else ():
                    _bind(summary, name, f"={each}")
            elif value is not None or isinstance(statement, ast.Assign):
                for target in targets:
                    _bind_targets(summary, target)
        elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            _bind(summary, statement.name, None)
            if isinstance(statement, ast.FunctionDef):
                summary.functions.add(statement.name)
        elif isinstance(statement, (ast.AugAssign, ast.Delete)):
            for target in (
                statement.targets if isinstance(statement, ast.Delete) else [statement.target]
            ):
                _bind_targets(summary, target)
        elif isinstance(statement, (ast.For, ast.AsyncFor)):
            _bind_targets(summary, statement.target)
            _collect(statement.body, summary)
            _collect(statement.orelse, summary)
        elif isinstance(statement, (ast.While, ast.If)):
            _collect(statement.body, summary)
            _collect(statement.orelse, summary)
        elif isinstance(statement, (ast.With, ast.AsyncWith)):
            for item in statement.items:
                if item.optional_vars is not None:
                    _bind_targets(summary, item.optional_vars)
            _collect(statement.body, summary)
        elif isinstance(statement, ast.Try) or type(statement).__name__ == "TryStar":
            _collect(statement.body, summary)  # type: ignore[attr-defined]
            for handler in statement.handlers:  # type: ignore[attr-defined]
                if handler.name:
                    _bind(summary, handler.name, None)
                _collect(handler.body, summary)
            _collect(statement.orelse, summary)  # type: ignore[attr-defined]
            _collect(statement.finalbody, summary)  # type: ignore[attr-defined]
        elif isinstance(statement, ast.Match):
            for case in statement.cases:
                _collect(case.body, summary)


# A binding to `None` or `object()`, the fallback of a `try: import tensorflow ... except`.
_PLACEHOLDER = "!"


def _placeholder(value: ast.expr) -> bool:
    if isinstance(value, ast.Constant) and value.value is None:
        return True
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "object"
        and not value.args
        and not value.keywords
    )


def _public(summary: _Summary, value: ast.expr) -> None:
    if isinstance(value, (ast.List, ast.Tuple)) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts
    ):
        summary.public = frozenset(e.value for e in value.elts)  # type: ignore[attr-defined]
