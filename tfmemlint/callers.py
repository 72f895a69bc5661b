"""Who calls a config helper, across the whole project: a fix goes into a helper of one module
only when every call of it, anywhere, wants the change (issue 15).

The answer is a proof, not a guess. Every file under the project's root that spells the
helper's name is read, and every spelling of the name in it must be accounted for:
- an import of it under its own name (`from utils.config import session_config`);
- a call of it, with no arguments, whose result goes straight to a session as its config
  (`tf.Session(config=session_config())`), on lines that no suppression comment touches;
- a name of the same spelling that is another module's function.

Anything else answers None, and then no fix goes into the helper: an alias (`import ... as`),
a star import, `getattr`, a comment or string that spells it, the result held in a variable, a
notebook or other source that is not a plain Python file, a file that cannot be parsed or read.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from tfmemlint.project import dotted, member
from tfmemlint.source import parse_python

if TYPE_CHECKING:
    from tfmemlint.project import ProjectIndex

# A session's keyword and callee: whether the call hands that keyword's argument to a session.
Wants = Callable[[str, str], bool]
# Calls of a helper that want the change: (file, row) each; None: not every call does.
Calls = list[tuple[str, int]] | None

_SOURCES = (".py", ".pyw", ".pyx", ".pxd", ".pyi", ".ipynb")
_SKIPPED = {".git", ".hg", ".svn", "__pycache__"}
_DIRECTIVES = (b"noqa", b"tfmemlint:")


def callers(
    index: ProjectIndex, path: str, functions: Sequence[str], wants: Wants
) -> dict[str, Calls]:
    """For each function defined at the top of the module at `path`, the calls of it elsewhere
    in the project when there is at least one and every one wants the change; else None. The
    module's own text must spell each name once (its `def`)."""
    found: dict[str, Calls] = {function: [] for function in functions}
    for folder, folders, files in os.walk(index.root_of(path)):
        folders[:] = sorted(f for f in folders if f not in _SKIPPED)
        for name in sorted(files):
            if name.endswith(_SOURCES):
                _read_one(index, os.path.join(folder, name), path, found, wants)
    return {function: calls or None for function, calls in found.items()}


def _read_one(
    index: ProjectIndex, file: str, path: str, found: dict[str, Calls], wants: Wants
) -> None:
    open_questions = [function for function, calls in found.items() if calls is not None]
    if not open_questions:
        return
    try:
        with open(file, "rb") as handle:
            raw = handle.read()
    except OSError:  # it may call any of them
        found.update(dict.fromkeys(open_questions))
        return
    spelled = [function for function in open_questions if function.encode() in raw]
    if not spelled:
        return
    if file == path:
        for function in spelled:
            if raw.count(function.encode()) != 1:
                found[function] = None
        return
    if not file.endswith(".py"):
        found.update(dict.fromkeys(spelled))
        return
    for function, rows in _calls_in(index, file, raw, path, spelled, wants).items():
        current = found[function]
        found[function] = (
            None
            if rows is None or current is None
            else [
                *current,
                *((file, row) for row in rows),
            ]
        )


def _calls_in(
    index: ProjectIndex,
    importer: str,
    raw: bytes,
    path: str,
    functions: list[str],
    wants: Wants,
) -> dict[str, list[int] | None]:
    """The rows of one file's calls of each function of `path`, when every spelling of its
    name in the file is accounted for; None for a function where one is not."""
    try:
        tree = parse_python(raw)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return dict.fromkeys(functions)
    parents: dict[ast.AST, ast.AST] = {}
    imported: dict[str, list[str]] = {}  # a local name -> what the imports bind it to
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.partition(".")[0]
                imported.setdefault(local, []).append(alias.name if alias.asname else local)
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            for alias in node.names:
                imported.setdefault(alias.asname or alias.name, []).append(
                    member(module, alias.name)
                )

    def qualified(expr: ast.expr) -> str | None:
        head, _, tail = (dotted(expr) or "").partition(".")
        sources = imported.get(head, [])
        return sources[0] + (f".{tail}" if tail else "") if len(sources) == 1 else None

    lines = raw.splitlines()
    answers: dict[str, list[int] | None] = {}
    for function in functions:
        accounted, rows = 0, []
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                module = "." * node.level + (node.module or "")
                for alias in node.names:
                    if alias.name == function and alias.asname in (None, function):
                        # The import spells it (twice with `as` itself); which function is it?
                        if index.locate(member(module, function), importer)[0] is None:
                            break
                        accounted += 1 if alias.asname is None else 2
                continue
            if isinstance(node, ast.keyword) and node.arg == function:
                accounted += 1  # `RunConfig(session_config=...)`: a keyword, not the function
                continue
            if isinstance(node, ast.Name) and node.id == function:
                if not isinstance(node.ctx, ast.Load) or len(imported.get(function, [])) != 1:
                    break  # bound here, or through a star import: not provably the helper
            elif not (isinstance(node, ast.Attribute) and node.attr == function):
                continue
            name = qualified(node)  # type: ignore[arg-type]
            where = index.locate(name, importer)[0] if name else None
            if where is None:
                break
            accounted += 1
            if where != path:
                continue  # another module's function of the same name
            row = _wanted(node, parents, qualified, index, importer, lines, wants)
            if row is None:
                break
            rows.append(row)
        else:
            answers[function] = rows if accounted == raw.count(function.encode()) else None
            continue
        answers[function] = None
    return answers


def _wanted(
    node: ast.expr,
    parents: dict[ast.AST, ast.AST],
    qualified: Callable[[ast.expr], str | None],
    index: ProjectIndex,
    importer: str,
    lines: list[bytes],
    wants: Wants,
) -> int | None:
    """The row of a call of the helper that hands its result straight to a session as its
    config, and that no suppression comment touches; None for any other use."""
    call = parents.get(node)
    keyword = parents.get(call) if isinstance(call, ast.Call) else None
    session = parents.get(keyword) if isinstance(keyword, ast.keyword) else None
    if not (isinstance(call, ast.Call) and call.func is node and not call.args):
        return None
    if call.keywords or not isinstance(keyword, ast.keyword) or keyword.arg is None:
        return None
    if not isinstance(session, ast.Call):
        return None
    callee = qualified(session.func)
    resolved = index.resolve(callee, importer)[0] if callee else None
    if not resolved or not all(wants(each, keyword.arg) for each in resolved):
        return None
    last = session.end_lineno or session.lineno
    if any(d in line for line in lines[session.lineno - 1 : last] for d in _DIRECTIVES):
        return None  # suppressed there: that session opted out
    return node.lineno
