"""The project index: what a project's own modules export, so that a name imported from one
(`from mypkg.compat import tfv1`) resolves to the TensorFlow module or API it stands for.

Modules are found and read by `module_files`, and summarized by `module_summary`: what each
module-level name is bound to. A name resolves only when every binding of it is an import or a
plain alias (`tfv1 = tf.compat.v1`, `tf if old else tf.compat.v1`), followed through
`__init__.py` re-exports and star imports, cycles included. A fallback to `None` or `object()`
(`except ImportError: tf = None`) is set aside: no session is ever made through one. A name bound
any other way (a stand-in object, a function) and a module that does not parse resolve to
nothing, so they never make a finding. Installed packages are read only for a name that may make
a finding.

Each answer carries the files it was read from, so that a cached result can be checked against
them (see `cache`).
"""

from __future__ import annotations

import ast
import contextlib
import functools
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from tfmemlint.model import Dependency
from tfmemlint.project.module_files import NOTHING, Deps, ModuleFiles, folders_up_to
from tfmemlint.project.module_summary import (
    PLACEHOLDER,
    ModuleSummary,
    imports,
    imports_in_lines,
    imports_in_tree,
    member,
    summarize,
)
from tfmemlint.reading.source import parse_python

if TYPE_CHECKING:
    from tfmemlint.project.summary_store import SummaryStore
    from tfmemlint.reading.launch.model import LaunchFile, Setting

# How deep a chain of re-exports is followed; deeper, a name resolves to nothing.
MAX_DEPTH = 64

# How many project modules `FileResolver.imports_words` looks through, at any depth: as many as
# TFM205's walk visits before it gives up (its MAX_MODULES).
PROGRAM_MODULES = 200

# The packages whose names the rules know: never looked for in the project, even where the
# project holds a copy (TensorFlow's own tree).
TENSORFLOW_ROOTS = frozenset({"tensorflow", "tensorflow_estimator", "keras", "tf_slim"})

# What a compiled module's Cython source would name to set GPU memory or the GPUs up, or to
# start a framework that does: one that names none of them does neither.
_SETUP_WORDS = (b"tensorflow", b"keras", b"jax", b"torch", b"environ", b"putenv", b"import_module")


def is_tensorflow(qualified: str) -> bool:
    return qualified.partition(".")[0] in TENSORFLOW_ROOTS


# An answer and the files it was read from.
_Answer = tuple[frozenset[str] | None, Deps]
# What a rule's question of a module's syntax tree answers (`tree_answer`).
Answer = TypeVar("Answer")


def _roots(imported: Iterable[str]) -> frozenset[str]:
    """The top-level packages of absolute imports (`a` of `a.b.c`)."""
    return frozenset(name.partition(".")[0] for name in imported if not name.startswith("."))


class ProjectIndex:
    """The index for one run. `config_root`: the folder of the run's configuration file;
    `api_names`: the last component of every API the rules start from (`rules.api_names()`),
    the only names worth reading an installed package for; `store`: where module summaries are
    kept between processes and runs."""

    def __init__(
        self,
        config_root: str | None = None,
        api_names: frozenset[str] = frozenset(),
        store: SummaryStore | None = None,
    ) -> None:
        self.files = ModuleFiles(config_root)
        self.api_names = api_names
        self.store = store  # module summaries kept between processes and runs, if any
        self._summaries: dict[str, tuple[ModuleSummary | None, Deps]] = {}
        self._exports: dict[tuple[str, str], _Answer] = {}
        self._resolved: dict[tuple[str, str, bool], _Answer] = {}
        self._via: dict[tuple[str, str], str] = {}  # the module a resolved name came from
        self._reaches: dict[str, tuple[bool, Deps]] = {}
        self._imported: dict[tuple[str, bool], tuple[list[str], Deps]] = {}
        # The modules an import runs, by (the name as spelled, the importing folder).
        self._runs: dict[tuple[str, str], tuple[tuple[str, ...], Deps]] = {}
        # Whether a module's bytes hold one of a set of words: every entry point of a package
        # asks it of the same modules, nearest first.
        self._mentions: dict[tuple[str, tuple[bytes, ...]], tuple[bool, Deps]] = {}
        self._import_roots: dict[str, frozenset[str]] = {}  # see imports_named
        # Whether a module leads to one that imports a framework (see leads_to_words).
        self._leads: dict[tuple[str, tuple[bytes, ...]], tuple[bool, Deps]] = {}
        self._import_roots_parsed: dict[str, frozenset[str] | None] = {}
        self.trees: dict[str, ast.Module | None] = {}  # modules read with `ast` (syntax_tree)
        # What rules asked of those trees (tree_answer): (path, question, its arguments).
        self._tree_answers: dict[tuple[str, Callable[..., Any], tuple[Any, ...]], Any] = {}
        self._in_progress: set[tuple[str, str]] = set()
        self._reaching: set[str] = set()
        self._cuts = 0  # import cycles cut so far (see _remembered)
        self._depth = 0
        # Modules the engine parsed to follow a call into them (engine.FileContext.other_module).
        self.parsed: dict[tuple[str, object], object] = {}
        self._launch_files: dict[str, tuple[LaunchFile | None, Deps]] = {}

    def resolver(self, filename: str) -> FileResolver:
        return FileResolver(self, filename)

    # -- reading modules ---------------------------------------------------------------------
    def _summary(self, path: str) -> tuple[ModuleSummary | None, Deps]:
        """The module's summary (None where it cannot be read or parsed), and the file it was
        read from, as a dependency."""
        known = self._summaries.get(path)
        if known is not None:
            return known
        raw, read = self.files.read(path)
        store = self.store if raw is not None else None
        key = next(iter(read)).hash if store is not None else ""  # the bytes' content hash
        summary = store.get(key) if store is not None else None
        if summary is None:
            # A tree the walk kept is summarized; one read only for this is not kept (memory).
            # Only a tree parsed here is stored: the store records the recursion limit of its
            # parse, and a kept tree may have been parsed under another.
            parsed_here = path not in self.trees
            tree, read = self.syntax_tree(path, keep=False)
            summary = summarize(tree) if tree is not None else None
            if store is not None and summary is not None and parsed_here:
                store.put(key, summary)
        self._summaries[path] = (summary, read)
        return summary, read

    def syntax_tree(self, path: str, keep: bool = True) -> tuple[ast.Module | None, Deps]:
        """A project module's syntax tree, as CPython reads it (None where it cannot), parsed
        once per run where `keep`, and the file, as a dependency."""
        raw, read = self.files.read(path)
        if path in self.trees:
            return self.trees[path], read
        try:
            tree = parse_python(raw) if raw is not None else None
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            tree = None
        if keep:
            self.trees[path] = tree
        return tree, read

    def tree_answer(
        self, path: str, question: Callable[..., Answer], *args: Any
    ) -> tuple[Answer | None, Deps]:
        """`question(tree, *args)` of a project module's syntax tree (`syntax_tree`), once per
        run for each: every program a run walks asks the same of each module it enters. None
        where the module cannot be read or parsed; and the file, as a dependency."""
        tree, read = self.syntax_tree(path)
        if tree is None:
            return None, read
        key = (path, question, args)
        if key not in self._tree_answers:
            self._tree_answers[key] = question(tree, *args)
        return self._tree_answers[key], read

    def launch_file(self, path: str) -> tuple[LaunchFile | None, Deps]:
        """A launch file, read once per run (None where it cannot be read, or is no launch
        file), and the file, as a dependency."""
        known = self._launch_files.get(path)
        if known is not None:
            return known
        from tfmemlint.reading.launch import kind_of, read_launch_text
        from tfmemlint.reading.launch.model import LaunchError

        raw, read = self.files.read(path)
        kind = kind_of(path, (raw or b"")[:64])
        launch = None
        if raw is not None and kind is not None:
            with contextlib.suppress(UnicodeDecodeError, LaunchError):
                launch = read_launch_text(kind, raw.decode("utf-8"))
        self._launch_files[path] = launch, read
        return launch, read

    # -- answers -----------------------------------------------------------------------------
    def resolve(self, qualified: str, importer: str, installed: bool = False) -> _Answer:
        """What `qualified`, spelled in the file `importer`, names: the qualified names it
        stands for (itself, when it is no project module's), or None when a project module binds
        it to something that is not an import or alias, or a relative import fails. Installed
        packages are read for a name that may make a finding, or any with `installed`."""
        if is_tensorflow(qualified):
            return frozenset({qualified}), NOTHING
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
            return None, NOTHING
        self._depth += 1
        try:
            answer = work(*args)
        finally:
            self._depth -= 1
        if self._cuts == cuts:
            memo[key] = answer
        return answer

    def _resolve(self, qualified: str, importer: str, installed: bool) -> _Answer:
        module, length, parts, absent = self.files.find(qualified, importer, installed)
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

    def locate(self, qualified: str, importer: str, depth: int = 0) -> tuple[str | None, Deps]:
        """The module file that defines the function `qualified` names, spelled in the file
        `importer` (`utils.config.session_config`), following re-exports; None when it is no
        function of the project's, defined once at a module's top level."""
        if depth > MAX_DEPTH or is_tensorflow(qualified):
            return None, NOTHING
        module, length, parts, read = self.files.find(qualified, importer, installed=False)
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
        if sources and len(sources) == 1 and not sources[0].startswith(("=", PLACEHOLDER)):
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
            return None, NOTHING
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
        sources = [source for source in sources if source != PLACEHOLDER] or [PLACEHOLDER]
        names: set[str] = set()
        read = NOTHING
        for index, source in enumerate(sources):
            if source == PLACEHOLDER:
                return None, read
            if not source.startswith("="):
                found, more = self.resolve(source, path)  # an import
            else:
                head, _, tail = source[1:].partition(".")
                if head == name:  # `tf = tf.compat.v1`: the bindings before this one
                    found, more = (
                        self._sources(path, name, sources[:index]) if index else (None, NOTHING)
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
        read = NOTHING
        for name in names:
            found, more = self.resolve(name, importer)
            read |= more
            if found is None:
                return None, read
            resolved |= found
        return frozenset(resolved), read

    def star_export(
        self, path: str, star: str, name: str
    ) -> tuple[frozenset[str] | bool | None, Deps]:
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

    def star_module(self, path: str, star: str) -> tuple[str | None, Deps]:
        """The project module file `from star import *` in `path` imports, if it is one."""
        if is_tensorflow(star):
            return None, NOTHING
        module, length, parts, absent = self.files.find(star, path, installed=False)
        return (module if module is not None and length == len(parts) else None), absent

    def mentions(self, path: str, words: tuple[bytes, ...]) -> tuple[bool, Deps]:
        """Whether a project file holds one of the words (once per run for each), and the
        file, as a dependency."""
        key = (path, words)
        known = self._mentions.get(key)
        if known is None:
            raw, read = self.files.read(path)
            found = raw is not None and any(word in raw for word in words)
            known = self._mentions[key] = (found, read)
        return known

    def imports_named(self, path: str, words: tuple[bytes, ...]) -> tuple[bool, Deps]:
        """Whether a project module imports, by an absolute name whose top-level package holds
        one of the words, a module of that framework (`import tensorflow`, `from jax import
        numpy`, `import tf_keras`, `import official`). A word elsewhere (a string, a comment,
        a variable, `sympy.printing.tensorflow`) does not count: a framework starts only
        through its packages, imported by name, and the project modules on the way are looked
        at in turn. The import lines are read first, as `imported_modules` reads them; where
        they name no such package, CPython's tree, which also sees `try: import jax` and
        continued lines, has the last word, and a module it cannot read counts."""
        mentioned, read = self.mentions(path, words)
        if not mentioned:
            return False, read
        names = tuple(word.decode().rstrip(".") for word in words)  # `official.`: the package
        for roots in (self._roots_in_lines(path), self._roots_in_tree(path)):
            if roots is None or any(name in root for root in roots for name in names):
                return True, read
        return False, read

    def leads_to_words(self, path: str, words: tuple[bytes, ...]) -> tuple[bool, Deps]:
        """`FileResolver.leads_to_words`, once per run for each module (the walk from it is the
        same whoever imports it), and the files it read, as dependencies."""
        key = (path, words)
        known = self._leads.get(key)
        if known is None:
            walk = self.resolver(path)
            found = False
            for module in walk.program_modules(path):
                found, read = self.imports_named(module, words)
                walk.read |= read
                if found:
                    break
            known = self._leads[key] = (found, frozenset(walk.read))
        return known

    def _roots_in_lines(self, path: str) -> frozenset[str]:
        """The top-level packages a module's absolute imports name, read a line each."""
        known = self._import_roots.get(path)
        if known is None:
            raw, _ = self.files.read(path)
            known = self._import_roots[path] = _roots(imports_in_lines(raw or b""))
        return known

    def _roots_in_tree(self, path: str) -> frozenset[str] | None:
        """The same from CPython's tree of the module; None where it cannot read it."""
        if path not in self._import_roots_parsed:
            tree, _ = self.syntax_tree(path, keep=False)  # its answer is all that is kept
            roots = None if tree is None else _roots(imports_in_tree(tree))
            self._import_roots_parsed[path] = roots
        return self._import_roots_parsed[path]

    def imported_modules(
        self, importer: str, raw: bytes | None, beyond_tensorflow: bool = False
    ) -> tuple[list[str], Deps]:
        """The project module files that `importer`'s imports name, in order (its functions'
        imports too: what may run once it is imported); remembered per file. With
        `beyond_tensorflow`, none for a name of TensorFlow's packages, which a program's own
        imports never reach the project by (`star_module`): a project that holds TensorFlow's
        sources is walked from the program's other imports alone."""
        key = (importer, beyond_tensorflow)
        known = self._imported.get(key)
        if known is None:
            known = self._imported[key] = self._modules_imported(importer, raw, beyond_tensorflow)
        return known

    def _modules_imported(
        self, importer: str, raw: bytes | None, beyond_tensorflow: bool
    ) -> tuple[list[str], Deps]:
        found: list[str] = []
        read: Deps = NOTHING
        # Read line by line: as cheap as a regular expression, where `ast` would cost a
        # parse of every module a program reaches. A multi-line `from x import (a, b)` gives x
        # and a; an import in a docstring counts too: more modules looked at, never fewer.
        for imported in imports_in_lines(raw) if raw is not None else ():
            if beyond_tensorflow and is_tensorflow(imported):
                continue
            modules, absent = self.modules_run(imported, importer)
            read |= absent
            found.extend(module for module in modules if module not in found)
        return found, read

    def modules_run(self, imported: str, importer: str) -> tuple[tuple[str, ...], Deps]:
        """`_modules_run`, once per run for each name and importing folder."""
        key = (imported, os.path.dirname(importer))
        known = self._runs.get(key)
        if known is None:
            known = self._runs[key] = self._modules_run(imported, importer)
        return known

    def _modules_run(self, imported: str, importer: str) -> tuple[tuple[str, ...], Deps]:
        """The project modules that importing `imported` runs, outermost first: importing
        `pkg.sub.mod` runs `pkg/__init__.py` and `pkg/sub/__init__.py` first. The same for
        every module of a folder."""
        modules: list[str] = []
        read: Deps = NOTHING
        dots = len(imported) - len(imported.lstrip("."))
        parts = imported[dots:].split(".")
        for length in range(1, len(parts) + 1):
            name = imported[:dots] + ".".join(parts[:length])
            module, _, _, absent = self.files.find(name, importer, installed=False)
            read |= absent
            if module is not None and module not in modules:
                modules.append(module)
        return tuple(modules), read

    def reaches_tensorflow(self, filename: str, raw: bytes) -> tuple[bool, Deps]:
        """Whether a file imports something of the project's that stands for TensorFlow: the
        pre-filter's way in for a file that never names TensorFlow itself."""
        importer = os.path.abspath(filename)
        read: Deps = NOTHING
        if b"import" not in raw:
            return False, read
        for imported in imports(raw):
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

    def _module_reaches(self, path: str) -> tuple[bool, Deps]:
        """Whether a project module exports anything that stands for TensorFlow."""
        known = self._reaches.get(path)
        if known is not None:
            return known
        if path in self._reaching:  # a cycle: no, as far as this walk goes
            self._cuts += 1
            return False, NOTHING
        self._reaching.add(path)
        try:
            return self._remembered(self._reaches, path, self._module_reaches_uncached, path)
        finally:
            self._reaching.discard(path)

    def _module_reaches_uncached(self, path: str) -> tuple[bool, Deps]:
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
        relative = os.path.relpath(path, self.index.files.root_of(self.importer))
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

    def launch_environments(
        self, configured: Sequence[str] = ()
    ) -> tuple[list[Launched], frozenset[Dependency]]:
        """Each launch file that runs this program, with the environment it gives it: a
        Dockerfile, Compose file, shell or Slurm script in its folder or a folder above it, up
        to the project's root, whose command names this file; and each of `configured` (the
        configuration's `launch-environment`), whose environment every program gets; and
        what the answer depends on (those files, the launch files of the folders looked in),
        for the caller to add to the file's dependencies where the answer mattered."""
        from tfmemlint.reading.launch.python_runs import runs_file

        paths, listed = self.index.files.launchers(self.importer)
        depends: set[Dependency] = set(listed)
        built: set[str] = set()
        root = self.index.files.root_of(self.importer)
        found = []
        for path in paths:
            launch, read = self.index.launch_file(path)
            depends |= read
            starts = folders_up_to(os.path.dirname(path), root)
            for run in launch.runs if launch is not None else ():
                env: Sequence[Setting] = run.env
                runs = [(run, path)] if run.target else []
                if run.build is not None:  # a Compose service built from a Dockerfile
                    image_file = os.path.normpath(os.path.join(os.path.dirname(path), run.build))
                    image, read = self.index.launch_file(image_file)
                    depends |= read or self.index.files.missing(image_file)
                    built.add(image_file)
                    if image is not None and image.processes:
                        env = (*image.processes[0].settings, *run.env)
                    for own in image.runs if image is not None else ():
                        if run.target:  # the service's command, in the image's layout
                            workdir = run.workdir or own.workdir
                            runs.append(
                                (replace(run, mounts=own.mounts, workdir=workdir), image_file)
                            )
                        elif own.target:  # the image's own command
                            runs.append((own, image_file))
                if any(runs_file(each, at, self.importer, starts) for each, at in runs):
                    found.append(Launched(self.display(path), _environment(env), False))
        # A Dockerfile that a Compose file builds runs through it, with its environment.
        through_compose = {self.display(path) for path in built}
        found = [each for each in found if each.launcher not in through_compose]
        for path in configured:
            launch, read = self.index.launch_file(path)
            depends |= read or self.index.files.missing(path)
            settings = launch.environment() if launch is not None else None
            if settings is not None:
                found.append(Launched(self.display(path), _environment(settings), True))
        return found, frozenset(depends)

    def dependencies(self) -> tuple[Dependency, ...]:
        """The module files read for this file, in path order: its result depends on them."""
        return tuple(sorted(self.read))

    def via(self, name: str) -> str | None:
        """The project module `name` came from, once resolved, as a path from the project's
        root (stable wherever the run starts, so a cached message stays right)."""
        path = self.index.via(name, self.importer)
        return None if path is None else self.display(path)

    def mentions(self, path: str, words: tuple[bytes, ...]) -> bool:
        """Whether a project file holds one of the words; its answer depends on that file."""
        found, read = self.index.mentions(path, words)
        self.read |= read
        return found

    def tree_answer(self, path: str, question: Callable[..., Answer], *args: Any) -> Answer | None:
        """`question(tree, *args)` of a project module's syntax tree, once per run
        (`ProjectIndex.tree_answer`); None where it cannot be read or parsed."""
        answer, read = self.index.tree_answer(path, question, *args)
        self.read |= read
        return answer

    def imports_of(self, path: str) -> list[str]:
        """The project module files that the project module `path` imports, in order (its
        functions' imports too: what may run when it is imported)."""
        raw, read = self.index.files.read(path)
        found, more = self.index.imported_modules(path, raw)
        self.read |= read | more
        return found

    def reaches_tensorflow(self, raw: bytes) -> bool:
        reaches, read = self.index.reaches_tensorflow(self.importer, raw)
        self.read |= read
        return reaches

    def leads_to(self, path: str, targets: set[str]) -> bool:
        """Whether the project module `path` is one of `targets`, or imports one, itself or
        through the project modules it imports (PROGRAM_MODULES of them at most)."""
        return any(module in targets for module in self.program_modules(path))

    def modules_run(self, imported: str) -> tuple[str, ...]:
        """The project modules that importing `imported`, as this file spells it, runs,
        outermost first (`pkg/__init__.py`, then `pkg/mod.py`); none for a name of
        TensorFlow's, whose packages a program never reaches the project by."""
        if is_tensorflow(imported):
            return ()
        modules, absent = self.index.modules_run(imported, self.importer)
        self.read |= absent
        for path in modules:
            self.read |= self.index.files.read(path)[1]
        return modules

    def leads_to_words(self, path: str, words: tuple[bytes, ...]) -> bool:
        """Whether the project module `path`, or a project module it imports in turn (see
        `program_modules`), imports a module named with one of `words`
        (`ProjectIndex.imports_named`): a program that imports `path` may start that
        framework through it."""
        found, read = self.index.leads_to_words(path, words)
        self.read |= read
        return found

    def program_modules(self, path: str) -> Iterator[str]:
        """The project module `path`, then the project modules it imports in turn, nearest
        first (PROGRAM_MODULES of them at most): what may run once the program imports it."""
        return self._imported_in_turn([path])

    def imports_words(self, raw: bytes, words: tuple[bytes, ...]) -> str | None:
        """The nearest project module that this file imports, itself or through the project
        modules it imports (PROGRAM_MODULES of them at most, at any depth), that imports a
        module named with one of `words` (`ProjectIndex.imports_named`): where a program whose
        own file never names TensorFlow may reach it. None when none does."""
        found, read = self.index.imported_modules(self.importer, raw, beyond_tensorflow=True)
        self.read |= read
        reached = self._imported_in_turn(found)
        return next((path for path in reached if self._imports_named(path, words)), None)

    def _imports_named(self, path: str, words: tuple[bytes, ...]) -> bool:
        found, read = self.index.imports_named(path, words)
        self.read |= read
        return found

    def _imported_in_turn(self, first: list[str]) -> Iterator[str]:
        """`first`, then the project modules they import, level by level, each once and
        PROGRAM_MODULES at most: the modules a program may run, nearest first. A module's
        imports are read only once the caller has looked at it, and only while there is room
        for them: nothing they name could be added after that. Every module yielded is a
        dependency all the same: were it gone, the modules after it would have its room."""
        seen = set(first)
        level = first
        while level:
            below: list[str] = []
            for path in level:
                yield path
                if len(seen) >= PROGRAM_MODULES:
                    self.read |= self.index.files.read(path)[1]
                    continue
                for module in self.imports_of(path):
                    if module not in seen and len(seen) < PROGRAM_MODULES:
                        seen.add(module)
                        below.append(module)
            level = below

    def module(self, name: str) -> str | None:
        """The project module file that `name`, as this file spells it, names; None when it
        is no module of the project's. Its answer depends on that file from then on."""
        path, read = self.index.star_module(self.importer, name)
        self.read |= read
        if path is not None:
            self.read |= self.index.files.read(path)[1]
        return path

    def missing_from_project(self, name: str) -> bool:
        """Whether the absolute module `name` begins as a package of the project's but is not
        there (a file left out of the tree, or made at build time): what it runs is unknown."""
        module, length, parts, absent = self.index.files.find(name, self.importer, False)
        self.read |= absent
        if not (0 < length < len(parts) and (module is None or module.endswith("__init__.py"))):
            return False
        return module is None or not self._compiled_from_plain_source(
            os.path.join(os.path.dirname(module), parts[length] + ".pyx")
        )

    def _compiled_from_plain_source(self, pyx: str) -> bool:
        """Whether the module is built from a Cython source in the tree that names no
        framework and no environment variable: its import-time code then sets nothing up."""
        raw, read = self.index.files.read(pyx)
        self.read |= read
        return raw is not None and not any(word in raw for word in _SETUP_WORDS)

    def module_of(self, name: str) -> str | None:
        """The project module file that the longest importable head of the dotted `name`
        names (`pkg.env` for `pkg.env.setup`, or for `pkg.env` itself)."""
        parts = name.split(".") if name else []
        for length in range(len(parts), 0, -1):
            path = self.module(".".join(parts[:length]))
            if path is not None:
                return path
        return None

    def in_a_package(self) -> bool:
        """Whether this file's folder is a package (it holds `__init__.py`); the answer
        depends on that file, there or not."""
        init = os.path.join(os.path.dirname(self.importer), "__init__.py")
        absent = self.index.files.missing(init)
        self.read |= absent or self.index.files.read(init)[1]
        return not absent

    def imported_beside(self) -> bool:
        """Whether another module in this file's folder imports it, by its name (`import
        data`, `from data import load`, `from . import data`): a helper of the scripts there,
        not a script. Its answer depends on the modules it read; one added later is not
        seen until this file changes."""
        folder, name = os.path.split(self.importer)
        stem = name[: -len(".py")].encode()
        # `import a, data`, `from pkg.data import x`, `from . import data`: on one line.
        imports = re.compile(
            rb"(?m)^[ \t]*(?:import[ \t][^\n#]*|from[ \t]+[\w.]*|from[ \t][^\n#]*\bimport"
            rb"[ \t][^\n#]*)\b" + re.escape(stem) + rb"\b"
        )
        try:
            others = sorted(os.listdir(folder))
        except OSError:
            return False
        for other in others:
            path = os.path.join(folder, other)
            if not other.endswith(".py") or path == self.importer:
                continue
            raw, read = self.index.files.read(path)
            if raw is None or stem not in raw:
                continue
            self.read |= read
            if imports.search(raw):
                return True
        return False

    def script_functions(self) -> frozenset[str]:
        """The functions of this module that the project's script entries run."""
        functions, read = self.index.files.script_functions(self.importer)
        self.read |= read
        return functions


class Launched(NamedTuple):
    """A launch file that runs a program, as a path from the project's root, and the
    environment it gives it: each variable it sets, with its value (None where the file does
    not write it out)."""

    launcher: str
    environment: dict[str, str | None]
    # The configuration's `launch-environment`: every program of the project runs under it.
    everywhere: bool


def _environment(settings: Iterable[Setting]) -> dict[str, str | None]:
    """The variables a run gets, the last setting of each winning."""
    return {setting.variable: setting.value for setting in settings}
