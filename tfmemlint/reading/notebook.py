"""Jupyter notebooks: their code cells, linted as one module, and fixed in place.

The notebook's JSON is never re-serialized. A small scanner finds where each code cell's `source`
value sits in the file's text, and a fix replaces exactly those values, written in the style the
file already uses, so the indentation, key order, outputs, metadata and final newline stay byte
for byte as they were.

A cell is read as IPython compiles it (`IPython.core.inputtransformer2`'s clean-up): a cell
whose first line is indented loses that indentation on every line, and `>>>`/`...` or
`In [n]:`/`...:` prompts pasted into it are taken off, once per line. Each module row keeps
what was taken off its line (`Origin.shift`), so that findings land on the cell's real columns,
and a fixed cell gets it back, on a line a fix adds too.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

from tfmemlint.model import Layout
from tfmemlint.reading.source import line_origins
from tfmemlint.reading.statements import logical_lines

# Joins the cells in the module that is linted; a comment, so no fix can ever touch it. Each
# cell is also recovered on its own (see `recovery`), between these lines.
BOUNDARY = "# tfmemlint: cell boundary"
# Stands in for a magic line, and is put back after fixing: no fix touches a `pass` statement.
_PLACEHOLDER = "pass  # tfmemlint: IPython magic"
# Stands in for a line that a magic's final backslash continues: a comment, at any indentation.
_CONTINUED = "# tfmemlint: IPython magic, continued"
# IPython syntax that is not Python, where a statement starts: line magics, shell escapes,
# help, and %% cell magics. Anywhere else (`x = !ls`, `%time` in an expression) it is a syntax
# error for recovery to set aside; a `%` that continues a statement is Python's operator.
_MAGIC = re.compile(r"\s*(%|!|\?|\w[\w.]*\?\??\s*$)")
# IPython's clean-up before it compiles a cell: the first line's indentation (applied only
# where every line holds it, the case where IPython 8, which strips it from the lines that do,
# and IPython 9, which strips the common indentation, agree), then the prompts.
_INDENT = re.compile(r"[ \t]+")
_CLASSIC_FIRST = re.compile(r">>>( |$)")
_CLASSIC_PROMPT = re.compile(r"(>>>|\.\.\.)( |$)")
# (With the vi-mode marker IPython's own prompt may carry: `[ins] In [2]: `.)
_IPYTHON_PROMPT = re.compile(r"((\[nav\]|\[ins\])? )?In \[\d+\]: |\s*\.{3,}: ?")


class NotebookError(ValueError):
    """Not a notebook tfmemlint can read."""


@dataclass
class Cell:
    number: int  # 1-based, among all cells, as Jupyter shows them
    start: int  # span of the `source` value in the file's text (nbformat 3's `input`)
    end: int
    source: str
    as_list: bool  # the value is a list of lines (nbformat's usual form), not one string

    @cached_property
    def view(self) -> CellView:
        """The cell as IPython reads it, worked out once for the module, its layout and every
        fix mapped back."""
        return CellView.of(self.source)


def _scan_value(text: str, at: int) -> int:
    """The offset just past the JSON value that starts at `at` (whitespace skipped first)."""
    decoder = json.JSONDecoder()
    try:
        _, end = decoder.raw_decode(text, _skip_space(text, at))
    except json.JSONDecodeError as exc:
        raise NotebookError(f"invalid JSON: {exc}") from None
    return end


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


def _entries(text: str, at: int, keyed: bool) -> list[tuple[str | None, int, int]]:
    """(key or None, value start, value end) for each entry of the JSON object (`keyed`) or
    array that starts at `at`. The text is known to be valid JSON: see Notebook.parse."""
    opener, closer = ("{", "}") if keyed else ("[", "]")
    at = _skip_space(text, at)
    if text[at : at + 1] != opener:
        raise NotebookError(f"expected {opener!r}")
    entries: list[tuple[str | None, int, int]] = []
    at += 1
    while True:
        at = _skip_space(text, at)
        if text[at : at + 1] == closer:
            return entries
        key = None
        if keyed:
            key_end = _scan_value(text, at)
            key = json.loads(text[at:key_end])
            at = _skip_space(text, key_end) + 1  # past the ':'
        start = _skip_space(text, at)
        end = _scan_value(text, start)
        entries.append((key, start, end))
        at = _skip_space(text, end)
        if text[at : at + 1] == ",":
            at += 1


def _object_members(text: str, at: int) -> dict[str, tuple[int, int]]:
    return {key: (start, end) for key, start, end in _entries(text, at, keyed=True) if key}


def _array_items(text: str, at: int) -> list[tuple[int, int]]:
    return [(start, end) for _, start, end in _entries(text, at, keyed=False)]


class Origin(NamedTuple):
    """Where a row of the cells' module comes from: its cell (0 for a boundary row), its row
    in the cell, and how many characters IPython's clean-up took off the front of that line."""

    cell: int
    row: int
    shift: int = 0


BOUNDARY_ROW = Origin(0, 0)


class CellView(NamedTuple):
    """A cell's lines as IPython compiles them, and what its clean-up took off each: the
    cell's indentation (the same on every line that is not blank), then a prompt."""

    lines: list[str]
    prefixes: list[str]
    indent: str = ""
    # The prompt a line that a fix adds gets: IPython's continuation prompt, or `>>> ` for a
    # statement of its own among `>>>` prompts (None: the cell has no prompts).
    continuation: str | None = None
    classic: bool = False

    @classmethod
    def of(cls, source: str) -> CellView:
        lines = source.split("\n")
        prefixes = [""] * len(lines)
        body = [row for row, line in enumerate(lines) if line.strip()]
        if not body or _cell_magic(lines):
            return cls(lines, prefixes)
        first = body[0]
        found = _INDENT.match(lines[first])
        indent = found.group() if found else ""
        if not all(lines[row].startswith(indent) for row in body):
            indent = ""  # IPython 8 and 9 read it differently: left as it is (TFM902)
        for row in body:
            prefixes[row] = indent
        read = [line[len(prefix) :] for line, prefix in zip(lines, prefixes, strict=True)]
        continuation, classic = None, False
        for initial, prompt in (
            (_CLASSIC_FIRST, _CLASSIC_PROMPT),
            (_IPYTHON_PROMPT, _IPYTHON_PROMPT),
        ):
            second = read[first + 1] if first + 1 < len(read) else ""
            if not (initial.match(read[first]) or prompt.match(second)):
                continue
            classic = prompt is _CLASSIC_PROMPT
            for row, line in enumerate(read):
                taken = prompt.match(line)
                if taken:
                    prefixes[row] += taken.group()
                    read[row] = line[taken.end() :]
                    if taken.group().strip().startswith("...") and continuation is None:
                        continuation = taken.group()
            if continuation is None:
                continuation = "... " if classic else "   ...: "
        return cls(read, prefixes, indent, continuation, classic)

    @property
    def source(self) -> str:
        return "\n".join(self.lines)

    def restored(self, source: str) -> str:
        """`source`, a fix of this view's text, with what the clean-up took off put back: on
        each line that was there, its own; on a line the fix added, the cell's indentation and
        a prompt (IPython takes either prompt off any line). Raises NotebookError where IPython
        would not read the result as `source`."""
        if not any(self.prefixes):
            return source
        lines = source.split("\n")
        prefixes = [
            self.prefixes[old] if old is not None else self._added_prefix(line)
            for line, old in zip(lines, line_origins(self.lines, lines), strict=True)
        ]
        restored = "\n".join(prefix + line for prefix, line in zip(prefixes, lines, strict=True))
        if CellView.of(restored).lines != lines:
            raise NotebookError("IPython would not read the fixed cell as it was checked")
        return restored

    def _added_prefix(self, line: str) -> str:
        if not line.strip():
            return self.indent + self.continuation.rstrip() if self.continuation else ""
        if self.continuation is None:
            return self.indent
        statement = self.classic and line[:1] not in (" ", "\t")
        return self.indent + (">>> " if statement else self.continuation)


@dataclass
class Notebook:
    text: str
    cells: list[Cell]

    @classmethod
    def parse(cls, text: str) -> Notebook:
        try:
            json.loads(text)  # the scanner below may then trust the layout
        except json.JSONDecodeError as exc:
            raise NotebookError(f"invalid JSON: {exc}") from None
        members = _object_members(text, 0)
        if "cells" in members:
            found, key = _array_items(text, members["cells"][0]), "source"
        elif "worksheets" in members:
            found, key = _nbformat3_cells(text, members["worksheets"][0]), "input"
        else:
            raise NotebookError("no 'cells' list, nor nbformat 3's 'worksheets'")
        cells = []
        for number, (start, _) in enumerate(found, 1):
            fields = _object_members(text, start)
            if "cell_type" not in fields or key not in fields:
                continue
            if json.loads(text[slice(*fields["cell_type"])]) != "code":
                continue
            language = fields.get("language") if key == "input" else None
            if language is not None and json.loads(text[slice(*language)]) != "python":
                continue  # nbformat 3: a cell in another kernel's language (Julia)
            value = json.loads(text[slice(*fields[key])])
            as_list = isinstance(value, list)
            source = "".join(value) if as_list else value
            if not isinstance(source, str):
                raise NotebookError(f"cell {number}: {key!r} is not text")
            cells.append(Cell(number, *fields[key], source, as_list))
        return cls(text, cells)

    def module(self) -> tuple[str, list[Origin]]:
        """The code cells, as IPython reads them, as one Python module, and where each of its
        rows (1-based, index 0 unused) comes from."""
        lines: list[str] = []
        origin: list[Origin] = [BOUNDARY_ROW]
        for cell in self.cells:
            if lines:
                lines.append(BOUNDARY)
                origin.append(BOUNDARY_ROW)
            view = cell.view
            cell_lines = list(view.lines)
            if _cell_magic(cell_lines):
                cell_lines = [""] * len(cell_lines)  # the whole cell is not Python
            magic_rows = _magic_rows(view.source)
            for row, line in enumerate(cell_lines, 1):
                if row in magic_rows and row - 1 in magic_rows and _continues(cell_lines[row - 2]):
                    line = _CONTINUED
                elif row in magic_rows:
                    indent = line[: len(line) - len(line.lstrip())]
                    line = f"{indent}{_PLACEHOLDER}"
                lines.append(line)
                origin.append(Origin(cell.number, row, len(view.prefixes[row - 1])))
        return "\n".join(lines) + "\n", origin

    def layout(self, origin: list[Origin]) -> Layout:
        """The module's layout: cells between BOUNDARY lines, rows named by cell and line, and
        the IPython lines the module does not hold."""

        def place(row: int) -> str:
            where = origin[row] if row < len(origin) else BOUNDARY_ROW
            return f"cell {where.cell}, line {where.row}" if where.cell else f"line {row}"

        row_of = {(where.cell, where.row): row for row, where in enumerate(origin) if where.cell}
        magics = []
        rows = []
        for cell in self.cells:
            for cell_row, line in _magic_lines(cell.view.source):
                magics.append(line)
                rows.append(row_of[cell.number, cell_row])
        return Layout(BOUNDARY, place, "\n".join(magics), tuple(rows))

    def changed_sources(self, fixed: str) -> list[tuple[Cell, str]]:
        """Each code cell that `fixed` (a fix of the cells' module) changes, with its new
        source: its part of `fixed`, magics and what IPython's clean-up took off restored.
        Raises NotebookError where that cannot be done for sure."""
        body = fixed[:-1] if fixed.endswith("\n") else fixed  # the newline module() added
        parts = body.split(f"\n{BOUNDARY}\n")
        if len(parts) != len(self.cells):
            raise NotebookError("a fix crossed a cell boundary")
        changed = []
        for cell, part in zip(self.cells, parts, strict=True):
            view = cell.view
            read = _restore_magics(view.source, part)
            if read != view.source:
                changed.append((cell, view.restored(read)))
        return changed

    def with_module(self, fixed: str) -> str:
        """The notebook's text with each code cell's source replaced as `changed_sources`
        says; cells whose source did not change keep their bytes."""
        pieces = []
        cursor = 0
        for cell, source in self.changed_sources(fixed):
            pieces.append(self.text[cursor : cell.start])
            pieces.append(self._render(cell, source))
            cursor = cell.end
        pieces.append(self.text[cursor:])
        return "".join(pieces)

    def _render(self, cell: Cell, source: str) -> str:
        """`source` as JSON in the style of the value it replaces."""
        original = self.text[cell.start : cell.end]
        ascii_only = "\\u" in original
        if not cell.as_list:
            return json.dumps(source, ensure_ascii=ascii_only)
        lines = source.splitlines(keepends=True)
        if not lines:
            return "[]"
        items = _array_items(self.text, cell.start)
        if len(items) >= 1 and "\n" in original:
            first = items[0][0]
            line_start = self.text.rfind("\n", 0, first) + 1
            indent = self.text[line_start:first]
            closing_start = self.text.rfind("\n", 0, cell.end - 1) + 1
            closing = self.text[closing_start : cell.end - 1]
            newline = "\r\n" if "\r\n" in original else "\n"
            body = f",{newline}".join(
                indent + json.dumps(line, ensure_ascii=ascii_only) for line in lines
            )
            return f"[{newline}{body}{newline}{closing}]"
        return "[" + ", ".join(json.dumps(line, ensure_ascii=ascii_only) for line in lines) + "]"


def _nbformat3_cells(text: str, worksheets: int) -> list[tuple[int, int]]:
    """The cells of an nbformat 3 notebook (IPython 2 and before), every worksheet's in order:
    as nbformat 4 numbers them once converted (`nbformat.v4.upgrade` joins the worksheets)."""
    cells = []
    for start, _ in _array_items(text, worksheets):
        worksheet = _object_members(text, start)
        if "cells" in worksheet:
            cells.extend(_array_items(text, worksheet["cells"][0]))
    return cells


def _magic_rows(source: str) -> set[int]:
    """The 1-based rows of a cell's IPython lines: those where a statement could start."""
    if "%" not in source and "!" not in source and "?" not in source:
        return set()
    _, magics = logical_lines(source, _MAGIC)
    return {source.count("\n", 0, start) + 1 for start, _ in magics}


def _cell_magic(lines: list[str]) -> bool:
    """A `%%` cell magic: the whole cell is IPython's. IPython looks at the first line that is
    not blank, once the cell's indentation is off."""
    first = next((line for line in lines if line.strip()), "")
    return first.lstrip().startswith("%%")


def _magic_lines(source: str) -> list[tuple[int, str]]:
    """A cell's IPython lines with their 1-based rows, in order (every line, for a cell
    magic)."""
    lines = source.split("\n")
    if _cell_magic(lines):
        return list(enumerate(lines, 1))
    return [(row, lines[row - 1]) for row in sorted(_magic_rows(source))]


def _continues(line: str) -> bool:
    return line.endswith("\\")


def _restore_magics(original: str, fixed: str) -> str:
    """Put the magic lines back where the module had `pass` for them; a fix never touches
    those lines, so they are found again in order."""
    if _cell_magic(original.split("\n")):
        return original  # a cell magic's cell was blank in the module, and stays as it was
    magics = _magic_lines(original)
    if not magics:
        return fixed
    pending = (line for _, line in magics)
    restored = [
        next(pending) if line.strip() in (_PLACEHOLDER, _CONTINUED) else line
        for line in fixed.split("\n")
    ]
    return "\n".join(restored)
