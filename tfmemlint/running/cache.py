"""Results of earlier runs, so that a second run reads only what changed.

The cache is one marshal file in `.tfmemlint_cache/` (or `--cache-dir`). An entry is served only
when all of these hold:
- the tool is the same: its version and the stat of every one of its own modules;
- the file's settings are the same: the selected rules and the policy;
- the file is the same. Its stat (mtime, ctime, size, inode) is trusted alone only when the file
  was last changed well before it was read; otherwise, like git's "racy" files, and whenever the
  stat differs, its content hash must match;
- so is every project module its names were resolved through (see `project`), by the same test.

A run whose every file the cache would serve from its stat alone prints what the run before it
printed. So beside the entries, the cache keeps the report of each recent way of running the tool
(its options, configuration and working folder), with the stat of every file that run checked.
A later run the same way replays that report when every file's stat is still the recorded one,
and every project module the results depend on is unchanged: it loads no entry and formats no
finding, and costs little more than walking the tree. Output to a terminal is never replayed,
since what it looks like there depends on the terminal too.

Concurrent runs are safe: each run writes a whole new file and renames it into place, after
merging in what other runs wrote meanwhile, and every entry checks itself before it is served,
so the worst a race can do is cost a file one more check.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import marshal
import os
import sys
import time
from collections.abc import Sequence
from stat import S_ISDIR
from typing import TYPE_CHECKING, Any, NamedTuple

from tfmemlint import __version__
from tfmemlint.reading.digest import content_hash, digest

# A replayed run builds no result, so this module leaves the model to the functions that do.
if TYPE_CHECKING:
    from tfmemlint.configuration.config_files import FileConfig
    from tfmemlint.configuration.settings import Settings
    from tfmemlint.model import Dependency, FileResult, Finding
    from tfmemlint.project.summary_store import SummaryStore


DIRECTORY_NAME = ".tfmemlint_cache"
# marshal: the quickest format to load, and the cache is only ever read by the tool that wrote
# it (the file records the tool's fingerprint; anything else is discarded).
_RESULTS = "results.marshal"
_SUMMARIES = "summaries"  # the project modules' summaries, one file each
_TEMPORARY = ".results-"
# Reports that a run the same way may replay: one file per way of running, named by a digest
# of it; the newest are kept.
_REPORT_PREFIX, _REPORT_SUFFIX, _REPORT_DIGEST = "report-", ".marshal", 16
_REPORTS_KEPT = 16
# A file changed less than this long before it was read may change again within the same mtime
# tick without its stat showing it: its entry is checked against the content hash.
_RACY_NS = 2_000_000_000
_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# A cache folder made by tfmemlint.\n"


def tool_fingerprint() -> str:
    """The version and the stat of every module of this package, of libcst, and Python's
    version: an edited checkout or an upgraded parser is a new tool, even while the version
    number stays the same."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tfmemlint/
    parts = [__version__, sys.version]
    # The parser is part of the tool: its own files' stats, found without importing it.
    libcst = importlib.util.find_spec("libcst")
    for location in (libcst.submodule_search_locations or []) if libcst else []:
        for name in ("__init__.py", "_version.py"):
            with contextlib.suppress(OSError):
                stat = os.stat(os.path.join(location, name))
                parts.append(f"libcst/{name}:{stat.st_mtime_ns}:{stat.st_size}")
    for parent, dirs, files in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                stat = os.stat(os.path.join(parent, name))
                parts.append(f"{name}:{stat.st_mtime_ns}:{stat.st_size}")
    return digest(";".join(parts).encode(), 16)


def settings_key(settings: Settings) -> str:
    return _settings_key(settings.selected, str(settings.policy))


@functools.lru_cache(maxsize=64)
def _settings_key(selected: frozenset[str], policy: str) -> str:
    described = f"{','.join(sorted(selected))}|{policy}"
    return digest(described.encode(), 8)


def _stat_key(stat: os.stat_result) -> list[int]:
    return [stat.st_mtime_ns, stat.st_ctime_ns, stat.st_size, stat.st_ino]


# An entry is a list, which keeps the file small and quick to load:
# [mtime_ns, ctime_ns, size, inode, trusted, content hash, settings key, findings] and, where
# there are any, the project modules its result depends on,
# and a dependency is [path, mtime_ns, ctime_ns, size, inode, trusted, content hash], where an
# empty hash stands for a path that did not exist.
STAT, TRUSTED, HASH, SETTINGS, FINDINGS, DEPENDENCIES = slice(0, 4), 4, 5, 6, 7, 8


class Replay(NamedTuple):
    """What an earlier run printed, and the exit status it ended with."""

    report: str
    status: int


class ResultCache:
    """One run's view of the cache: entries read when first asked for, entries to write at the
    end."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.fingerprint = tool_fingerprint()
        self._cwd = os.getcwd()
        self._read_entries: dict[str, list[Any]] | None = None  # a replayed run needs none
        self._changed: dict[str, list[Any]] = {}
        # The files whose entry this run served or stored: what a later run may replay.
        self._confirmed: set[str] = set()
        # Project modules are shared by many files: each is checked once per run.
        self._dependencies: dict[tuple[Any, ...], bool] = {}
        # What a warm run asks for every file, worked out once per folder and per settings.
        self._folders: dict[str, str] = {}
        self._settings: tuple[Settings, str] | None = None

    def _key(self, path: str) -> str:
        """os.path.abspath, without asking the system for the working folder for every file,
        and normalizing each folder once."""
        folder, separator, name = path.rpartition(os.sep)
        if not separator or name in ("", os.curdir, os.pardir):
            return os.path.normpath(os.path.join(self._cwd, path))
        known = self._folders.get(folder)
        if known is None:
            known = self._folders[folder] = os.path.join(
                os.path.normpath(os.path.join(self._cwd, folder or os.sep)), ""
            )
        return known + name

    def _key_of_settings(self, settings: Settings) -> str:
        # A run's files share one Settings object, unless per-file ignores apply.
        if self._settings is None or self._settings[0] is not settings:
            self._settings = (settings, settings_key(settings))
        return self._settings[1]

    @property
    def _entries(self) -> dict[str, list[Any]]:
        if self._read_entries is None:
            self._read_entries = self._read()
        return self._read_entries

    def _read(self) -> dict[str, list[Any]]:
        try:
            with open(os.path.join(self.directory, _RESULTS), "rb") as handle:
                stored = marshal.loads(handle.read())  # load() reads piece by piece: 10x slower
        except (OSError, EOFError, ValueError, TypeError):
            return {}  # none yet, or unreadable: start afresh
        if not isinstance(stored, dict) or stored.get("tool") != self.fingerprint:
            return {}
        entries = stored.get("files")
        return entries if isinstance(entries, dict) else {}

    def lookup(
        self, path: str, settings: Settings, stat: os.stat_result, read: Any
    ) -> FileResult | None:
        """The stored result for `path`, or None. `read()` gives the file's bytes; it is called
        only when the stat alone cannot be trusted."""
        key = self._key(path)
        entry = self._changed.get(key) or self._entries.get(key)
        try:
            if not entry or entry[SETTINGS] != self._key_of_settings(settings):
                return None
            if len(entry) > DEPENDENCIES and not all(map(self._unchanged, entry[DEPENDENCIES])):
                return None
            if entry[STAT] != _stat_key(stat) or not entry[TRUSTED]:
                read_ns = time.time_ns()
                if entry[HASH] != content_hash(read()):
                    return None
                self._changed[key] = [*_stat_key(stat), _trusted(stat, read_ns), *entry[HASH:]]
            from tfmemlint.model import FileResult

            return FileResult(path, [_finding(f, path) for f in entry[FINDINGS]])
        except (IndexError, KeyError, TypeError, ValueError):
            return None  # an entry from an older layout, or damaged: check the file again

    def served(self, path: str) -> None:
        """Say that the run reports the result `lookup` gave for `path`. A run that checks the
        file after all (its excerpt could not be read) does not say so: only what a run
        reported may be replayed."""
        self._confirmed.add(self._key(path))

    def _unchanged(self, dependency: list[Any]) -> bool:
        key = tuple(dependency)
        known = self._dependencies.get(key)
        if known is None:
            known = self._dependencies[key] = _unchanged(dependency)
        return known

    def store(
        self,
        path: str,
        settings: Settings,
        stat: os.stat_result,
        raw: bytes,
        findings: list[Finding],
        read_ns: int,
        depends_on: tuple[Dependency, ...] = (),
    ) -> None:
        """Remember the findings in `raw`, the bytes that `path` held when it had `stat`, read
        at `read_ns` (time.time_ns(), taken before the read), and the project modules they
        depend on, as they were read."""
        entry = [
            *_stat_key(stat),
            _trusted(stat, read_ns),
            content_hash(raw),
            self._key_of_settings(settings),
            [_plain(f) for f in findings],
        ]
        if depends_on:  # most files have none: the entry stays short
            entry.append(
                [
                    [d.path, *d.stat, _settled(max(d.stat[0], d.stat[1]), d.read_ns), d.hash]
                    for d in depends_on
                ]
            )
        key = self._key(path)
        self._changed[key] = entry
        self._confirmed.add(key)

    def replay(self, way: str, items: Sequence[object]) -> Replay | None:
        """What the last run made `way` (see `record`) printed, if that run checked the same
        `items` and every file among them still has the stat it had then, and every project
        module their results depend on is unchanged: then this run's would be the same."""
        path = self._report_path(way)
        try:
            with open(path, "rb") as handle:
                stored = marshal.loads(handle.read())
            if stored["tool"] != self.fingerprint or stored["way"] != way:
                return None
            report, status = stored["report"], stored["status"]
            if not isinstance(report, str) or type(status) is not int:
                return None
            if stored["paths"] != _paths(items):
                return None
            stats: list[int] = []
            for item in items:
                if isinstance(item, str):
                    stat = os.stat(item)  # as _stat_key, without a list per file
                    stats += stat.st_mtime_ns, stat.st_ctime_ns, stat.st_size, stat.st_ino
            if stored["stats"] != stats:
                return None
            if not all(map(self._unchanged, stored["dependencies"])):
                return None
        except (OSError, EOFError, ValueError, TypeError, KeyError):
            return None  # none yet, gone, damaged, or a file that vanished: run in full
        with contextlib.suppress(OSError):
            os.utime(path)  # in use: the last to be pruned
        return Replay(report, status)

    def record(self, way: str, items: Sequence[object], report: str, status: int) -> None:
        """Keep what this run printed, and its exit status, for a later run made the same way
        (`way`: the options, configuration and working folder, as the caller spells them),
        provided the cache would serve each of `items` from its stat alone: every file's
        entry was served or stored by this run, and was read well after its last change."""
        stats: list[int] = []
        checked: dict[str, list[int]] = {}
        dependencies: dict[tuple[Any, ...], list[Any]] = {}
        for item in items:
            if not isinstance(item, str):  # a path that is not there
                continue
            key = self._key(item)
            entry = self._changed.get(key) or self._entries.get(key)
            if key not in self._confirmed or not entry or not entry[TRUSTED]:
                return
            stats += entry[STAT]
            checked[key] = entry[STAT]
            for dependency in entry[DEPENDENCIES] if len(entry) > DEPENDENCIES else ():
                dependencies[tuple(dependency)] = dependency
        # A module that is itself one of the files, trusted at the same stat, is checked with
        # them: both reads saw the bytes that stat stands for.
        kept = [d for d in dependencies.values() if not _checked_with_the_files(d, checked)]
        kept = _absent_by_folder(kept)
        stored = {
            "tool": self.fingerprint,
            "way": way,
            "paths": _paths(items),
            "stats": stats,
            "dependencies": kept,
            "report": report,
            "status": status,
        }
        with contextlib.suppress(OSError):  # a cache that cannot be written has said so
            # Owner only: a report quotes lines of the files, which others may not read.
            self._replace(os.path.basename(self._report_path(way)), stored, private=True)
            _keep_newest(self.directory, _REPORTS_KEPT)

    def _report_path(self, way: str) -> str:
        name = digest(way.encode(), _REPORT_DIGEST)
        return os.path.join(self.directory, f"{_REPORT_PREFIX}{name}{_REPORT_SUFFIX}")

    def save(self) -> None:
        """Write the changed entries, merged over what is on disk now. A failure is a warning:
        the run's results stand without a cache."""
        if not self._changed:
            return
        try:
            self._write()
        except OSError as exc:
            reason = exc.strerror or str(exc)
            sys.stderr.write(
                f"tfmemlint: warning: cannot write the cache in {self.directory}: {reason}\n"
            )

    def _write(self) -> None:
        make_folder(self.directory)
        entries = {**self._read(), **self._changed}
        _remove_stale_temporaries(self.directory)
        self._replace(_RESULTS, {"tool": self.fingerprint, "files": entries})

    def summary_store(self) -> SummaryStore:
        """The cache's store of module summaries (see `summary_store`)."""
        return summary_store(self.directory, self.fingerprint)

    def _replace(self, name: str, stored: dict[str, Any], private: bool = False) -> None:
        """Write `stored` as the cache's file `name`, whole or not at all; `private`: readable
        by its owner only."""
        from tfmemlint.reading.source import create_temporary

        descriptor, temporary = create_temporary(self.directory, _TEMPORARY)
        try:
            with os.fdopen(descriptor, "wb") as out:
                marshal.dump(stored, out)
            if not private:
                umask = os.umask(0)
                os.umask(umask)
                os.chmod(temporary, 0o666 & ~umask)  # as any other file, not mkstemp's 0600
            os.replace(temporary, os.path.join(self.directory, name))
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise


def directory_of(file_config: FileConfig, given: str | None = None) -> str:
    """Where the cache lives: `given` (`--cache-dir`, `TFMEMLINT_CACHE_DIR`, relative to the
    current folder), else the configuration's `cache-dir`, else `.tfmemlint_cache`, both relative
    to the configuration file's folder, or to the current one without it."""
    return given or os.path.join(file_config.root, file_config.get("cache-dir") or DIRECTORY_NAME)


def summary_store(directory: str, fingerprint: str) -> SummaryStore:
    """The store of module summaries (see `project.summary_store`) of the cache in `directory`,
    in its own folder there, which its first write makes, after the cache's."""
    from tfmemlint.project.summary_store import SummaryStore

    folder = os.path.join(directory, _SUMMARIES)
    return SummaryStore(folder, fingerprint, functools.partial(make_folder, directory))


def store_for_a_source(
    file_config: FileConfig, given: str | None, fingerprint: str | None = None
) -> SummaryStore | None:
    """The store that a source from stdin, or an editor's buffer, shares with `tfmemlint check`:
    the cache's, where the project has a configuration file or the cache's folder is named
    (`given`). Elsewhere none: the only folder at hand is the current one, an editor's, which
    may be no project's. None too where it cannot be had (a current folder that is gone): the
    check goes on without it. `fingerprint`: the tool's, where the caller keeps it."""
    if file_config.path is None and not given:
        return None
    try:
        return summary_store(directory_of(file_config, given), fingerprint or tool_fingerprint())
    except OSError:
        return None


def make_folder(directory: str) -> None:
    """Make the cache's folder, if it is not there, with the files that keep it out of git and
    backups."""
    if not os.path.isdir(directory):
        os.makedirs(directory)
        # Only in a folder made here: `--cache-dir .` must not make git ignore a project.
        for name, content in ((".gitignore", "# Made by tfmemlint.\n*\n"), ("CACHEDIR.TAG", _TAG)):
            with open(os.path.join(directory, name), "w", encoding="utf-8") as handle:
                handle.write(content)


def _paths(items: Sequence[object]) -> str:
    """The paths a run checked, in order, as one string: a path that is not there is marked."""
    try:
        return "\0".join(items)  # type: ignore[arg-type]  # the usual case: all are paths
    except TypeError:
        return "\0".join(item if isinstance(item, str) else f"\1{item!r}" for item in items)


# A replayed report's dependency on a folder's names that were all absent: the folder's stat,
# then the names, after this prefix, where the hash would be.
_ABSENT = "absent:"


def _absent_by_folder(dependencies: list[list[Any]]) -> list[list[Any]]:
    """The dependencies, with the paths where a module was looked for and none was (most of
    them: every import of a package outside the project) folded into one per folder: the
    folder's stat, which changes when a name appears in it, taken before the names are seen
    still absent. A replay then stats a few hundred folders instead of checking thousands of
    paths, and checks the names themselves only where a folder changed or its stat could not
    be trusted (changed too close to this look)."""
    kept: list[list[Any]] = []
    absent: dict[str, list[list[Any]]] = {}
    for dependency in dependencies:
        if dependency[-1]:
            kept.append(dependency)
        else:
            absent.setdefault(os.path.dirname(dependency[0]), []).append(dependency)
    for folder, paths in absent.items():
        read_ns = time.time_ns()  # before the stat: a change after it may not show
        try:
            stat = os.stat(folder)
        except OSError:
            stat = None
        if len(paths) < 2 or stat is None or any(os.path.lexists(p[0]) for p in paths):
            kept += paths  # each checked on its own, as it was
            continue
        names = "\0".join(sorted(os.path.basename(p[0]) for p in paths))
        kept.append([folder, *_stat_key(stat), _trusted(stat, read_ns), _ABSENT + names])
    return kept


def _checked_with_the_files(dependency: list[Any], checked: dict[str, list[int]]) -> bool:
    """Whether a project module is one of the files a run checked, and was trusted at the
    stat that file's entry has: then comparing the files' stats compares it too."""
    path, *stat, trusted, digest = dependency
    return bool(digest) and bool(trusted) and checked.get(path) == stat


def _keep_newest(directory: str, kept: int) -> None:
    """Remove all but the `kept` newest reports of `directory`. Only names that `_report_path`
    makes are touched: a user's own files may share the folder."""
    found = []
    for name in os.listdir(directory):
        digest = name[len(_REPORT_PREFIX) : -len(_REPORT_SUFFIX)]
        if (
            name.startswith(_REPORT_PREFIX)
            and name.endswith(_REPORT_SUFFIX)
            and len(digest) == _REPORT_DIGEST * 2
            and all(character in "0123456789abcdef" for character in digest)
        ):
            with contextlib.suppress(OSError):
                path = os.path.join(directory, name)
                found.append((os.stat(path).st_mtime_ns, path))
    for _, path in sorted(found, reverse=True)[kept:]:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _remove_stale_temporaries(directory: str) -> None:
    """What a run killed while writing left behind; an hour old is surely not being written."""
    for name in os.listdir(directory):
        if name.startswith(_TEMPORARY):
            path = os.path.join(directory, name)
            with contextlib.suppress(OSError):
                if time.time() - os.stat(path).st_mtime > 3600:
                    os.unlink(path)


def _unchanged(dependency: list[Any]) -> bool:
    """Whether a project module is as it was when a result was worked out from it."""
    path, *key, trusted, digest = dependency
    if not digest:  # where no module was: still none
        return not os.path.lexists(path)
    if digest.startswith(_ABSENT):  # a folder's absent names (`_absent_by_folder`)
        with contextlib.suppress(OSError):
            if trusted and key == _stat_key(os.stat(path)):
                return True
        names = digest[len(_ABSENT) :].split("\0")
        return not any(os.path.lexists(os.path.join(path, name)) for name in names)
    try:
        stat = os.stat(path)
        if key == _stat_key(stat) and trusted:
            return True
        if S_ISDIR(stat.st_mode):  # a folder, by the launch files it holds
            from tfmemlint.project.module_files import launchers_digest

            return bool(launchers_digest(path) == digest)
        with open(path, "rb") as handle:
            return bool(content_hash(handle.read()) == digest)
    except OSError:
        return False


def _trusted(stat: os.stat_result, read_ns: int) -> bool:
    return _settled(max(stat.st_mtime_ns, stat.st_ctime_ns), read_ns)


def _settled(changed_ns: int, read_ns: int) -> bool:
    """Whether a file was last changed well before it was read: then a later change must
    show in its stat, whatever the file system's timestamp granularity."""
    return read_ns - changed_ns > _RACY_NS


def _plain(finding: Finding) -> dict[str, Any]:
    """The finding as dicts, lists and scalars, which marshal stores (tuple subclasses it
    does not)."""
    plain = finding._asdict()
    del plain["filename"]  # the entry's own path; a renamed file is another entry
    plain["location"] = finding.location._asdict()
    plain["end_location"] = finding.end_location._asdict()
    if finding.fix is not None:
        edits = [
            {
                **edit._asdict(),
                "location": edit.location._asdict(),
                "end_location": edit.end_location._asdict(),
            }
            for edit in finding.fix.edits
        ]
        plain["fix"] = {**finding.fix._asdict(), "edits": edits}
    return plain


def _finding(plain: dict[str, Any], path: str) -> Finding:
    from tfmemlint.model import Edit, Finding, Fix, Location

    fix = plain["fix"]
    return Finding(
        code=plain["code"],
        message=plain["message"],
        filename=path,
        location=Location(**plain["location"]),
        end_location=Location(**plain["end_location"]),
        fix=None
        if fix is None
        else Fix(
            fix["message"],
            tuple(
                Edit(
                    e["start"],
                    e["end"],
                    e["content"],
                    Location(**e["location"]),
                    Location(**e["end_location"]),
                    e["key"],
                )
                for e in fix["edits"]
            ),
            fix["applicability"],
        ),
        cell=plain["cell"],
    )
