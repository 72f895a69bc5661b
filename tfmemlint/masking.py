"""What cannot matter is masked before libcst sees a file: libcst needs seconds for a 1.6 MB
table that no rule can ever look inside, while CPython's own parser finds it in a fraction of that.
Two kinds of region are masked: large tables of constants, and the bodies of functions and
methods that mention no word a rule looks at, nor any name the rest of the file uses (see
`_irrelevant_bodies`); a masked function keeps its name and signature, and holds one string.

A mask keeps the text's length and every line break where it was, so every offset, row and column
the rules compute is the same as in the original. The table `[(1, "a"), ...]` becomes a list that
holds one triple-quoted string of spaces and line breaks, and in it a marker unique to the file.
The marker names each masked region, so that after fixing, each region is found again, checked
to be intact, and restored; anything unexpected (a region moved, copied or cut) makes the caller
start over on the unmasked text.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import keyword
import re
from dataclasses import dataclass

# Below this size a plain libcst parse costs less than looking for tables first.
MIN_TEXT_CHARS = 64 * 1024
# ...and less than looking for function bodies that cannot matter.
MIN_BODY_TEXT_CHARS = 4 * 1024
# A body smaller than this is not worth masking.
MIN_BODY_CHARS = 120
# A value smaller than this is not worth masking.
MIN_REGION_CHARS = 2048

_LITERAL_NODES = (ast.Constant, ast.List, ast.Tuple, ast.Set, ast.Dict, ast.UnaryOp, ast.Load)
_OPENERS = {"[": "]", "(": ")", "{": "}"}
_NOT_A_LINE_BREAK = re.compile(r"[^\r\n]")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class MaskError(Exception):
    """The masked regions did not come through fixing intact; start over without a mask."""


@dataclass(frozen=True)
class Region:
    start: int
    end: int
    stand_in: str
    marker: str


@dataclass(frozen=True)
class Masked:
    text: str
    regions: tuple[Region, ...]

    def unmask(self, fixed: str, original: str) -> str:
        """`fixed` (the masked text after fixes) with every region's original text back."""
        pieces = []
        cursor = 0
        for region in self.regions:
            at = fixed.find(region.marker, cursor)
            if at < 0 or fixed.find(region.marker, at + 1) >= 0:
                raise MaskError("a masked region was cut or copied")
            start = at - region.stand_in.index(region.marker)
            end = start + len(region.stand_in)
            if start < cursor or fixed[start:end] != region.stand_in:
                raise MaskError("a masked region was changed")
            pieces.append(fixed[cursor:start])
            pieces.append(original[region.start : region.end])
            cursor = end
        pieces.append(fixed[cursor:])
        return "".join(pieces)


def mask(
    text: str,
    forbidden: re.Pattern[str] | None = None,
    relevant: frozenset[str] | None = None,
) -> Masked:
    """The text with what cannot matter masked; unchanged when nothing qualifies.

    A value is masked only if it is a bracketed list, tuple, set or dict of constants, spans at
    least MIN_REGION_CHARS, and (when given) holds no match of `forbidden`, e.g. a trigger word.
    With `relevant` (the words the selected rules look at), function bodies are masked too.
    """
    bodies = relevant is not None and len(text) >= MIN_BODY_TEXT_CHARS
    if len(text) < MIN_TEXT_CHARS and not bodies:
        return Masked(text, ())
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return Masked(text, ())  # libcst gives the diagnostic
    token = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=4).hexdigest()
    line_starts = [0] + [m.end() for m in _LINE_BREAK.finditer(text)]
    spans: list[tuple[int, int, bool]] = []  # (start, end, keeps its brackets)
    if bodies and relevant is not None:
        found = _irrelevant_bodies(text, tree, line_starts, relevant)
        spans.extend((start, end, False) for start, end in found)
    if len(text) >= MIN_TEXT_CHARS:
        for value in _large_literals(tree):
            start = _offset(text, line_starts, value.lineno, value.col_offset)
            end_row = value.end_lineno or value.lineno
            end = _offset(text, line_starts, end_row, value.end_col_offset or 0)
            original = text[start:end]
            if _OPENERS.get(original[:1]) != original[-1:] or len(original) < MIN_REGION_CHARS:
                continue  # an unbracketed tuple, or one shorter than it looked in lines
            if forbidden is not None and forbidden.search(original):
                continue
            if not any(s <= start and end <= e for s, e, _ in spans):
                spans.append((start, end, True))  # not inside a body masked already
    pieces: list[str] = []
    regions: list[Region] = []
    cursor = 0
    for start, end, brackets in sorted(spans):
        marker = f"tfmemlint-mask-{len(regions)}-{token}"
        if marker in text:
            continue
        stand_in = _stand_in(text[start:end], marker, brackets)
        if stand_in is None:
            continue
        pieces.append(text[cursor:start])
        pieces.append(stand_in)
        cursor = end
        regions.append(Region(start, end, stand_in, marker))
    if not regions:
        return Masked(text, ())
    pieces.append(text[cursor:])
    return Masked("".join(pieces), tuple(regions))


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Words that never make a body relevant on their own. Names a module defines itself are never
# ignored, even when they shadow one of these.
_UNREMARKABLE = frozenset({*keyword.kwlist, *dir(builtins), "self", "cls"})
# What makes any body relevant: a scope declaration reaches the module's names, and a
# suppression comment must stay where the engine can read it.
_ALWAYS_RELEVANT = frozenset({"global", "nonlocal", "noqa", "NOQA", "tfmemlint"})


def _irrelevant_bodies(
    text: str, tree: ast.Module, line_starts: list[int], relevant: frozenset[str]
) -> list[tuple[int, int]]:
    """Spans of the bodies of module-level functions and methods of module-level classes that
    cannot change a finding.

    A body is kept when it mentions a word of `relevant`, or when its function or a name in it
    is one that kept code mentions: the module's own statements, and every kept body, closed
    under "kept code mentions it". So a helper the rules follow, what it calls, a variable a
    config passes through, or a body that declares a global, is never masked. Names bound by
    imports (`tf`, `np`) do not count, or every body of a TensorFlow module would be kept; the
    words that matter after them (`Session`, `ConfigProto`, ...) are in `relevant`.
    """
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    units: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
    # The module's other code, in pieces that join the closure on their own: each statement at
    # the top level, and each class with its methods' bodies set aside.
    pieces: list[tuple[ast.AST, set[int]]] = []
    for statement in tree.body:
        if isinstance(statement, functions):
            units.append(statement)
        elif isinstance(statement, ast.ClassDef):
            methods = [c for c in statement.body if isinstance(c, functions)]
            units.extend(methods)
            pieces.append((statement, {id(m.body) for m in methods}))
        else:
            pieces.append((statement, set()))
    candidates: dict[tuple[int, int], ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for unit in units:
        span = _body_span(text, line_starts, unit)
        if span is not None and span[1] - span[0] >= MIN_BODY_CHARS:
            candidates[span] = unit
    if not candidates:
        return []
    definitions = (*functions, ast.ClassDef)
    defined = {node.name for node in ast.walk(tree) if isinstance(node, definitions)}
    imported = {
        (alias.asname or alias.name).split(".")[0]
        for node in tree.body
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    }
    ignored = (_UNREMARKABLE | imported) - defined
    # Every item of the closure: (names it uses or binds, its name if a function, the text
    # that rule words are looked for in, the span masked when it is not kept).
    items: list[tuple[set[str], str | None, str, tuple[int, int] | None]] = []
    for node, skipped in pieces:
        segment = _segment(text, line_starts, node)
        items.append((_names_outside(node, skipped) - ignored, None, segment, None))
    masked_spans = set(candidates)
    for unit in units:
        span = next((s for s, u in candidates.items() if u is unit), None)
        names = _names_outside(unit, set()) - ignored
        if span is None:
            items.append((names, unit.name, _segment(text, line_starts, unit), None))
        else:
            words = set(_IDENTIFIER.findall(text, span[0], span[1])) | names
            items.append((words, unit.name, text[span[0] : span[1]], span))
    # Names a body can share with other code: what the module binds or uses at its top level,
    # and its own definitions. A body's other names are its locals.
    module_names = defined.union(*(item[0] for item in items if item[3] is None and not item[1]))
    wanted = set(_ALWAYS_RELEVANT)
    # Rule words match anywhere, as in the pre-filter: `Session` is in `MonitoredSession`.
    pending = [i for i, item in enumerate(items) if any(word in item[2] for word in relevant)]
    kept: set[int] = set()
    while pending:
        for index in pending:
            kept.add(index)
            names, _, _, span = items[index]
            # A masked body's words are a superset of its names; only its names count as uses.
            used = _names_outside(candidates[span], set()) if span is not None else names
            wanted |= (used & module_names) - ignored
        pending = [
            i
            for i, (names, name, _, _) in enumerate(items)
            if i not in kept and (name in wanted or not names.isdisjoint(wanted))
        ]
    kept_spans = {items[i][3] for i in kept}
    return [span for span in candidates if span not in kept_spans and span in masked_spans]


def _segment(text: str, line_starts: list[int], node: ast.AST) -> str:
    """The source of a statement, decorators included."""
    rows = [node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))]  # type: ignore[attr-defined]
    start = line_starts[min(rows) - 1]
    end_row = node.end_lineno or node.lineno  # type: ignore[attr-defined]
    end = line_starts[end_row] if end_row < len(line_starts) else len(text)
    return text[start:end]


def _names_outside(tree: ast.AST, bodies: set[int]) -> set[str]:
    """Every plain name the code under `tree` uses outside the given bodies (by the id of their
    lists). Attributes (`self.helper`, `tf.layers.Dense`), a function's own name, its
    parameters and the words of strings are not uses: the rules follow plain names only."""
    found: set[str] = set()
    pending: list[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Name):
            found.add(node.id)
        for _field, value in ast.iter_fields(node):
            if isinstance(value, list):
                if id(value) not in bodies:
                    pending.extend(v for v in value if isinstance(v, ast.AST))
            elif isinstance(value, ast.AST):
                pending.append(value)
    return found


def _body_span(
    text: str, line_starts: list[int], unit: ast.FunctionDef | ast.AsyncFunctionDef
) -> tuple[int, int] | None:
    """From the first body statement's first character to the last one's end; None when the
    body does not start on a line of its own (`def f(): return 1`)."""
    first = unit.body[0]
    decorators = getattr(first, "decorator_list", [])
    row = min([first.lineno, *(d.lineno for d in decorators)])
    if row <= unit.lineno:
        return None
    line_start = line_starts[row - 1]
    line_end = line_starts[row] if row < len(line_starts) else len(text)
    line = text[line_start:line_end]
    start = line_start + (len(line) - len(line.lstrip(" \t")))
    if start >= line_end or text[start] in "\r\n#":
        return None
    last = unit.body[-1]
    end = _offset(text, line_starts, last.end_lineno or last.lineno, last.end_col_offset or 0)
    return start, end


def _large_literals(tree: ast.Module) -> list[ast.expr]:
    """Values of assignments and expression statements, in source order, that are pure
    literals spanning many lines. Only statements are walked, never expressions, so this is cheap
    until a candidate is found."""
    found = []
    statements: list[ast.stmt] = list(reversed(tree.body))
    while statements:
        statement = statements.pop()
        if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.Expr)):
            value = statement.value
            if (
                value is not None
                and isinstance(value, (ast.List, ast.Tuple, ast.Set, ast.Dict))
                and (value.end_lineno or 0) - value.lineno >= 8
                and _is_pure_literal(value)
            ):
                found.append(value)
            continue
        for field in ("body", "orelse", "finalbody"):
            block = getattr(statement, field, None)
            if isinstance(block, list):
                statements.extend(reversed(block))
        for handler in getattr(statement, "handlers", ()):
            statements.extend(reversed(handler.body))
    return found


def _is_pure_literal(value: ast.expr) -> bool:
    pending: list[ast.AST | None] = [value]
    while pending:
        node = pending.pop()
        if node is None:
            continue  # a `**mapping` key in a dict
        if type(node) not in _LITERAL_NODES:
            return False
        if isinstance(node, ast.Dict):
            pending.extend(node.keys)
            pending.extend(node.values)
        elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            pending.extend(node.elts)
        elif isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, (ast.USub, ast.UAdd)):
                return False
            pending.append(node.operand)
    return True


def _offset(text: str, line_starts: list[int], row: int, utf8_column: int) -> int:
    """ast counts columns in UTF-8 bytes; offsets here count characters."""
    start = line_starts[row - 1]
    if text[start : start + utf8_column].isascii():
        return start + utf8_column
    line = text[start : line_starts[row] if row < len(line_starts) else len(text)]
    return start + len(line.encode("utf-8", "surrogatepass")[:utf8_column].decode("utf-8"))


def _stand_in(original: str, marker: str, brackets: bool = True) -> str | None:
    """One triple-quoted string with every line break in place, inside the original's bracket
    pair when `brackets` (a table), or alone (a body: a string is a statement).

    The string opens on the first line with room for its quotes, so that few blank lines (each
    one a node for libcst) come before it; the marker goes on the first line inside it with room.
    """
    inner = _NOT_A_LINE_BREAK.sub(" ", original[1:-1] if brackets else original)
    segments = [(m.start(), m.end()) for m in re.finditer(r"[^\r\n]+", inner)]
    if brackets:
        opening = next((s for s in segments if s[1] - s[0] >= 3), None)
    else:  # a statement must start where the body did
        opening = segments[0] if segments and segments[0][0] == 0 else None
    closing = next((s for s in reversed(segments) if s[1] - s[0] >= 3), None)
    if opening is None or closing is None or opening[1] - opening[0] < 3:
        return None
    open_at, close_at = opening[0], closing[1] - 3
    marker_at = next(
        (
            max(start, open_at + 3)
            for start, end in segments
            if end > open_at and end - max(start, open_at + 3) >= len(marker)
        ),
        None,
    )
    if marker_at is None or marker_at + len(marker) > close_at:
        return None  # no room for the marker inside the string
    body = (
        inner[:open_at]
        + '"""'
        + inner[open_at + 3 : marker_at]
        + marker
        + inner[marker_at + len(marker) : close_at]
        + '"""'
        + inner[close_at + 3 :]
    )
    return original[0] + body + original[-1] if brackets else body
