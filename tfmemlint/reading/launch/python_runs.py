"""Which Python program a command runs: `python [options] script.py`, `python -m module`,
`streamlit run app.py`, `gunicorn module:app`, `uvicorn module:app`, `celery -A module`, also
after a runner (`srun`, `env`, `exec`). What no reader can tell (a word it does not write out, a
`-c` string) is no program."""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterator, Sequence

from tfmemlint.reading.launch.model import Run

_PYTHON = re.compile(r"(?:.*/)?python(?:\d+(?:\.\d+)*)?\Z")
# Python's options that take the next word as their value.
_VALUE_OPTIONS = frozenset({"-W", "-X", "--check-hash-based-pycs"})
_SERVERS = frozenset({"gunicorn", "uvicorn", "hypercorn", "daphne"})


def program(words: Sequence[str | None]) -> tuple[str, bool] | None:
    """(the script's path or the module's name, whether it is a module) of the first program
    the words run; None where they run none that can be told."""
    for index, word in enumerate(words):
        if word is None:
            continue
        name = word.rsplit("/", 1)[-1]
        rest = words[index + 1 :]
        if _PYTHON.match(word):
            return _python(rest)
        if name == "streamlit" and rest[:1] == ["run"]:
            return _script(rest[1:])
        if name in _SERVERS:
            return _app(rest)
        if name == "celery":
            return _celery(rest)
    return None


def _python(rest: Sequence[str | None]) -> tuple[str, bool] | None:
    position = 0
    while position < len(rest):
        word = rest[position]
        if word is None or word == "-c":
            return None
        if word == "-m":
            module = rest[position + 1] if position + 1 < len(rest) else None
            return (module, True) if module else None
        if word.startswith("-m") and len(word) > 2:
            return word[2:], True
        if word.startswith("-"):
            position += 2 if word in _VALUE_OPTIONS else 1
            continue
        return (word, False) if word.endswith(".py") else None
    return None


def _script(rest: Sequence[str | None]) -> tuple[str, bool] | None:
    word = next((w for w in rest if w is None or not w.startswith("-")), None)
    return (word, False) if word is not None and word.endswith(".py") else None


def _app(rest: Sequence[str | None]) -> tuple[str, bool] | None:
    """A server's `module:app`: its first word that is no option and names an app."""
    for word in rest:
        if word is None:
            return None
        if not word.startswith("-") and ":" in word:
            module = word.split(":", 1)[0]
            return (module, True) if module.replace(".", "").isidentifier() else None
    return None


def _celery(rest: Sequence[str | None]) -> tuple[str, bool] | None:
    for position, word in enumerate(rest):
        if word in ("-A", "--app") and position + 1 < len(rest):
            module = rest[position + 1]
            return (module.split(":")[0], True) if module else None
        if word is not None and word.startswith("--app="):
            return word[6:].split(":")[0], True
    return None


def runs_file(run: Run, launcher: str, program: str, roots: Sequence[str]) -> bool:
    """Whether `run`, in the launch file `launcher`, runs the file `program` (both absolute):
    its path, or its module, found through the file's mounts and working folder, or from the
    launch file's folder or one of `roots`, where a relative path may start."""
    return any(os.path.normpath(path) == program for path in _places(run, launcher, roots))


def _places(run: Run, launcher: str, roots: Sequence[str]) -> Iterator[str]:
    if run.module:
        parts = run.target.split(".")
        written = [posixpath.join(*parts) + ".py", posixpath.join(*parts, "__init__.py")]
    else:
        written = [run.target]
    folder = os.path.dirname(launcher)
    for path in written:
        inside = posixpath.join(run.workdir or "/", path)
        for container, host in run.mounts:
            if inside == container or inside.startswith(container.rstrip("/") + "/"):
                rest = inside[len(container) :].lstrip("/")
                yield os.path.join(folder, host, *rest.split("/"))
        if not path.startswith("/"):
            for base in (folder, *roots):
                yield os.path.join(base, *path.split("/"))
