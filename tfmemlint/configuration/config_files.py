"""Configuration files: `[tool.tfmemlint]` in pyproject.toml, or a tfmemlint.toml.

The nearest file found by walking up from the first path given wins (a tfmemlint.toml before a
pyproject.toml in the same folder). Unknown keys and bad values are errors that name the key and
the file: a typo must never silently turn a rule off.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, NamedTuple

OWN_FILE = "tfmemlint.toml"
PYPROJECT = "pyproject.toml"
SECTION = "[tool.tfmemlint]"

LIST = "list of strings"
STRING = "string"
BOOLEAN = "boolean"
TABLE = "table of lists"


class Setting(NamedTuple):
    """One key of the configuration, as the documentation's reference lists it."""

    key: str
    kind: str  # LIST, STRING, BOOLEAN or TABLE
    default: str  # as the reference says it
    flag: str | None  # the option of `tfmemlint check` that sets it too (and wins)
    meaning: str


SETTINGS = (
    Setting(
        "select",
        LIST,
        "the rules on by default",
        "--select",
        "Codes or prefixes of the rules to run, replacing the default selection.",
    ),
    Setting(
        "extend-select",
        LIST,
        "[]",
        "--extend-select",
        "Codes or prefixes to run on top of the selection, such as the opt-in TFM190 and TFM209.",
    ),
    Setting("ignore", LIST, "[]", "--ignore", "Codes or prefixes not to run."),
    Setting(
        "per-file-ignores",
        TABLE,
        "{}",
        None,
        "Globs (relative to the configuration file's folder, or bare names) mapped to the "
        'codes ignored in the files they match: `"tests/*" = ["TFM1"]`.',
    ),
    Setting(
        "exclude",
        LIST,
        "the built-in folders",
        None,
        "Globs of paths that folder walks leave out, replacing the built-in folders (hidden "
        "folders, virtualenvs, `build`, `dist`, `node_modules`, `site-packages`, "
        "`__pycache__`).",
    ),
    Setting("extend-exclude", LIST, "[]", None, "Globs left out on top of `exclude`."),
    Setting(
        "respect-gitignore",
        BOOLEAN,
        "true",
        "--respect-gitignore",
        "Whether folder walks leave out the files git ignores.",
    ),
    Setting(
        "force-exclude",
        BOOLEAN,
        "false",
        "--force-exclude",
        "Leave out excluded paths even when they are named on the command line, as pre-commit "
        "names every changed file.",
    ),
    Setting(
        "policy",
        STRING,
        '"growth"',
        "--policy",
        'What a fix adds: `"growth"` (memory growth) or `"fraction=F"` (a per-process '
        "fraction of the GPU, F in (0, 1]).",
    ),
    Setting(
        "guest-policy",
        STRING,
        '"hide"',
        "--guest-policy",
        "What a fix adds where TensorFlow is a guest in a JAX or PyTorch program (TFM207): "
        '`"hide"` hides every GPU from TensorFlow, `"growth"` applies `policy`.',
    ),
    Setting(
        "keras-backend",
        STRING,
        "none (Keras's default, tensorflow)",
        None,
        "The backend that `keras.json` or the shell gives Keras, where the code does not set "
        "`KERAS_BACKEND`: tensorflow, jax, torch, numpy or openvino.",
    ),
    Setting(
        "jax-preallocate",
        BOOLEAN,
        "true",
        None,
        "`false`: the shell or a job script sets `XLA_PYTHON_CLIENT_*`, so JAX's "
        "preallocation rules (TFM208, TFM209) have nothing to report.",
    ),
    Setting(
        "show-launched",
        BOOLEAN,
        "false",
        "--show-launched",
        "Report a program (TFM205, TFM207, TFM208, TFM209, TFM212) that a launch file beside "
        "it or above it runs with its GPU memory set up, naming that file, for programs that "
        "also run without it. By default such a program is not reported.",
    ),
    Setting(
        "launch-environment",
        LIST,
        "[]",
        None,
        "Launch files (relative to the configuration file) whose environment every program "
        "of the project runs under, such as a Dockerfile whose image runs Jupyter or a shell: "
        '`["Dockerfile"]`. A program it configures is reported only with `show-launched`.',
    ),
    Setting(
        "output-format",
        STRING,
        '"text"',
        "--output-format",
        "text, concise, json, json-lines, github, sarif or junit "
        "(`TFMEMLINT_OUTPUT_FORMAT` sets it too).",
    ),
    Setting(
        "cache-dir",
        STRING,
        '".tfmemlint_cache"',
        "--cache-dir",
        "Where the cache lives, relative to the configuration file (`TFMEMLINT_CACHE_DIR` "
        "sets it too).",
    ),
)
_LISTS = tuple(s.key for s in SETTINGS if s.kind == LIST)
_STRINGS = tuple(s.key for s in SETTINGS if s.kind == STRING)
_BOOLEANS = tuple(s.key for s in SETTINGS if s.kind == BOOLEAN)
KEYS = frozenset(s.key for s in SETTINGS)


class ConfigError(ValueError):
    """A configuration file tfmemlint cannot use; the CLI exits 2 with this one line."""


class FileConfig(NamedTuple):
    path: str | None = None  # None: no file (defaults, or --isolated)
    values: Mapping[str, Any] = MappingProxyType({})

    @property
    def root(self) -> str:
        """The folder that `exclude` and `per-file-ignores` patterns are relative to."""
        return os.path.dirname(os.path.abspath(self.path)) if self.path else os.getcwd()

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)


def load_toml(path: str) -> dict[str, Any]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ModuleNotFoundError:
            raise ConfigError(
                f"{path}: reading TOML needs Python 3.11 or the `tomli` package"
            ) from None
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None


def _has_section(path: str) -> bool:
    """Cheap: most pyproject.toml files have no [tool.tfmemlint], and need no parsing."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return any(line.strip().startswith(SECTION[:-1]) for line in handle)
    except OSError:
        return False


def find(paths: Sequence[str]) -> str | None:
    start = os.path.abspath(paths[0] if paths else os.curdir)
    folder = start if os.path.isdir(start) else os.path.dirname(start)
    while True:
        own = os.path.join(folder, OWN_FILE)
        if os.path.isfile(own):
            return own
        pyproject = os.path.join(folder, PYPROJECT)
        if os.path.isfile(pyproject) and _has_section(pyproject):
            return pyproject
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def load(path: str) -> FileConfig:
    document = load_toml(path)
    if os.path.basename(path) == PYPROJECT:
        values = document.get("tool", {}).get("tfmemlint", {})
    else:
        values = document
    if not isinstance(values, dict):
        raise ConfigError(f"{path}: [tool.tfmemlint] must be a table")
    _validate(path, values)
    return FileConfig(path, values)


def _validate(path: str, values: dict[str, Any]) -> None:
    for key, value in values.items():
        if key not in KEYS:
            known = ", ".join(sorted(KEYS))
            raise ConfigError(f"{path}: unknown key {key!r} (known keys: {known})")
        if key in _LISTS and not (
            isinstance(value, list) and all(isinstance(item, str) for item in value)
        ):
            raise ConfigError(f"{path}: {key!r} must be a list of strings")
        if key in _STRINGS and not isinstance(value, str):
            raise ConfigError(f"{path}: {key!r} must be a string")
        if key in _BOOLEANS and not isinstance(value, bool):
            raise ConfigError(f"{path}: {key!r} must be true or false")
        if key == "per-file-ignores" and not (
            isinstance(value, dict)
            and all(
                isinstance(codes, list) and all(isinstance(code, str) for code in codes)
                for codes in value.values()
            )
        ):
            raise ConfigError(f"{path}: 'per-file-ignores' must map globs to lists of codes")


def resolve(paths: Sequence[str], config_path: str | None, isolated: bool) -> FileConfig:
    """The configuration a run uses: --isolated ignores every file, --config names one."""
    if isolated:
        return FileConfig()
    path = config_path or find(paths)
    return load(path) if path else FileConfig()
