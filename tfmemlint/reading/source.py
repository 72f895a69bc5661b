"""Source files as bytes and as text: decoding (PEP 263, BOM), positions, and atomic writes."""

from __future__ import annotations

import ast
import bisect
import contextlib
import functools
import gc
import itertools
import os
import re
import warnings
from collections.abc import Callable, Iterator
from types import CodeType
from typing import NamedTuple, ParamSpec, TypeVar

from tfmemlint.model import Location

_P = ParamSpec("_P")
_R = TypeVar("_R")

# Python's own line breaks; str.splitlines() would also split on these others.
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_NOT_LINE_BREAKS = ("\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")


class SourceError(Exception):
    """A file that cannot be decoded as Python source; `kind` says why."""

    def __init__(self, message: str, kind: str, row: int = 1) -> None:
        super().__init__(message)
        self.kind = kind  # "nul-bytes", "unknown-encoding" or "invalid-encoding"
        self.row = row


class SourceText(NamedTuple):
    text: str
    encoding: str

    @classmethod
    def decode(cls, raw: bytes) -> SourceText:
        if b"\x00" in raw:
            row = raw.count(b"\n", 0, raw.index(b"\x00")) + 1
            raise SourceError("The file contains NUL bytes", "nul-bytes", row)
        try:
            encoding = declared_encoding(raw)
        except SyntaxError as exc:
            kind = "unknown-encoding" if "unknown encoding" in str(exc) else "invalid-encoding"
            raise SourceError(str(exc), kind) from None
        try:
            text = raw.decode(encoding)
        except UnicodeDecodeError as exc:
            row = raw.count(b"\n", 0, exc.start) + 1
            message = f"Bytes not valid in {encoding} at byte {exc.start}"
            raise SourceError(message, "invalid-encoding", row) from None
        except (LookupError, UnicodeError) as exc:  # `hex`; `undefined` or `punycode` that fail
            raise SourceError(f"Cannot decode with {encoding}: {exc}", "unknown-encoding") from None
        return cls(text, encoding)

    def encode(self, text: str) -> bytes:
        # 'utf-8-sig' writes the BOM back when the file had one.
        return text.encode(self.encoding)


def declared_encoding(raw: bytes) -> str:
    """The encoding Python reads the bytes in, as `tokenize` tells it from a BOM and a coding
    declaration (`utf-8` where neither is); SyntaxError where it refuses the declaration."""
    import io  # here: only files past the pre-filter, or that declare an encoding, ask
    import tokenize

    return tokenize.detect_encoding(io.BytesIO(raw).readline)[0]


class LineIndex:
    """Maps offsets in a text to 1-based (row, column) and back."""

    def __init__(self, text: str) -> None:
        self.text = text
        if any(other in text for other in _NOT_LINE_BREAKS):
            self.starts = [0] + [m.end() for m in _LINE_BREAK.finditer(text)]
        else:  # str.splitlines agrees with Python's line breaks here, at C speed
            self.starts = [0, *itertools.accumulate(map(len, text.splitlines(keepends=True)))]
            if text and not text.endswith(("\n", "\r")):
                self.starts.pop()  # the last line has no break to start a new one

    def offset(self, row: int, column0: int) -> int:
        """Offset of a 1-based row and a 0-based column, as libcst reports them."""
        return self.starts[row - 1] + column0

    def utf8_offset(self, row: int, utf8_column: int) -> int:
        """Offset of a 1-based row and a 0-based column counted in UTF-8 bytes, as CPython's
        ast reports them."""
        start = self.starts[row - 1]
        if self.text[start : start + utf8_column].isascii():
            return start + utf8_column
        line = self.text[start : self.line_end(row)]
        return start + len(line.encode("utf-8", "surrogatepass")[:utf8_column].decode("utf-8"))

    def location(self, offset: int) -> Location:
        row = bisect.bisect_right(self.starts, offset)
        return Location(row, offset - self.starts[row - 1] + 1)

    def line(self, row: int) -> str:
        start = self.starts[row - 1]
        end = self.starts[row] if row < len(self.starts) else len(self.text)
        return self.text[start:end].rstrip("\r\n")

    def line_end(self, row: int) -> int:
        """Offset just past the line break ending `row` (or the end of the text)."""
        return self.starts[row] if row < len(self.starts) else len(self.text)

    def newline_of(self, row: int) -> str:
        """The line break that ends `row`, or the file's first one when `row` has none."""
        line_with_break = self.text[self.starts[row - 1] : self.line_end(row)]
        match = _LINE_BREAK.search(line_with_break) or _LINE_BREAK.search(self.text)
        return match.group() if match else "\n"


def minimal_change(old: str, new: str) -> tuple[int, int, str]:
    """The one edit (start, end, content) of `old` that makes `new`: the span between what the
    two share at either end, so that the rest stays put."""
    start = 0
    while start < min(len(old), len(new)) and old[start] == new[start]:
        start += 1
    end = 0
    while end < min(len(old), len(new)) - start and old[-1 - end] == new[-1 - end]:
        end += 1
    return start, len(old) - end, new[start : len(new) - end]


def line_origins(old: list[str], new: list[str]) -> list[int | None]:
    """For each line of `new`, a fix of `old`, the index of the line of `old` it was, or None
    for a line the fix added. Lines the two share at either end are their own; between them,
    the lines that each holds once anchor the rest (in order), and what is left between two
    anchors is compared line by line, each old line of a changed block going to the new line
    most like it (a fix changes a line in place, or adds lines around it). Linear in the
    lines, but for the changed blocks."""
    origins: list[int | None] = [None] * len(new)
    pending = [(0, len(old), 0, len(new))]
    while pending:
        old_start, old_end, new_start, new_end = pending.pop()
        while old_start < old_end and new_start < new_end and old[old_start] == new[new_start]:
            origins[new_start] = old_start
            old_start, new_start = old_start + 1, new_start + 1
        while old_start < old_end and new_start < new_end and old[old_end - 1] == new[new_end - 1]:
            origins[new_end - 1] = old_end - 1
            old_end, new_end = old_end - 1, new_end - 1
        if old_start == old_end or new_start == new_end:
            continue
        anchors = _anchors(old, old_start, old_end, new, new_start, new_end)
        if not anchors:
            _compare(old, old_start, old_end, new, new_start, new_end, origins)
            continue
        previous = (old_start, new_start)
        for old_index, new_index in anchors:
            origins[new_index] = old_index
            pending.append((previous[0], old_index, previous[1], new_index))
            previous = (old_index + 1, new_index + 1)
        pending.append((previous[0], old_end, previous[1], new_end))
    return origins


def _anchors(
    old: list[str], old_start: int, old_end: int, new: list[str], new_start: int, new_end: int
) -> list[tuple[int, int]]:
    """The lines found once in old[old_start:old_end] and once in new[new_start:new_end], the
    longest run of them in the same order in both: (old index, new index)."""
    from collections import Counter

    old_counts = Counter(old[old_start:old_end])
    new_counts = Counter(new[new_start:new_end])
    where = {
        line: index
        for index in range(new_start, new_end)
        if new_counts[line := new[index]] == 1 and old_counts[line] == 1
    }
    pairs = [
        (index, where[old[index]]) for index in range(old_start, old_end) if old[index] in where
    ]
    # The longest increasing run of new indexes (patience sorting).
    tails: list[int] = []
    tail_at: list[int] = []
    before: list[int] = [-1] * len(pairs)
    for position, (_, new_index) in enumerate(pairs):
        slot = bisect.bisect_left(tails, new_index)
        if slot == len(tails):
            tails.append(new_index)
            tail_at.append(position)
        else:
            tails[slot], tail_at[slot] = new_index, position
        before[position] = tail_at[slot - 1] if slot else -1
    run: list[tuple[int, int]] = []
    position = tail_at[-1] if tail_at else -1
    while position >= 0:
        run.append(pairs[position])
        position = before[position]
    return run[::-1]


def _compare(
    old: list[str],
    old_start: int,
    old_end: int,
    new: list[str],
    new_start: int,
    new_end: int,
    origins: list[int | None],
) -> None:
    """Pair the lines of a changed block that holds no anchor, with difflib."""
    import difflib  # here: only a fix mapped back through a view needs it

    old_block, new_block = old[old_start:old_end], new[new_start:new_end]
    # A large block without one line of its own (thousands of `pass`): difflib's own
    # shortcut for popular lines keeps it quick.
    large = len(old_block) * len(new_block) > 250_000
    matcher = difflib.SequenceMatcher(a=old_block, b=new_block, autojunk=large)
    for tag, first_old, last_old, first_new, last_new in matcher.get_opcodes():
        if tag == "equal":
            for offset in range(last_old - first_old):
                origins[new_start + first_new + offset] = old_start + first_old + offset
        elif tag == "replace" and not large:
            block = _paired(old_block[first_old:last_old], new_block[first_new:last_new])
            for old_index, new_index in block:
                origins[new_start + first_new + new_index] = old_start + first_old + old_index


def _paired(old: list[str], new: list[str]) -> list[tuple[int, int]]:
    """Each old line of a changed block with the new line most like it, in order: (old index,
    new index)."""
    import difflib

    pairs: list[tuple[int, int]] = []
    start = 0
    for index, line in enumerate(old):
        last = len(new) - (len(old) - index)  # leave a new line for each old one after it
        if last < start:
            break
        ratios = [
            difflib.SequenceMatcher(a=line, b=new[j], autojunk=False).ratio()
            for j in range(start, last + 1)
        ]
        best = start + ratios.index(max(ratios))
        pairs.append((index, best))
        start = best + 1
    return pairs


def lines_holding(raw: bytes, words: list[bytes]) -> bytes:
    """The lines of `raw` (split at `\\n`) that hold one of the words, each once and in order,
    joined by `\\n`: all a search needs whose matches lie inside a line and hold a word."""
    starts: set[int] = set()
    for word in words:
        at = raw.find(word)
        while at >= 0:
            starts.add(raw.rfind(b"\n", 0, at) + 1)
            at = raw.find(word, _line_end(raw, at))  # the rest of this line is taken
    return b"\n".join(raw[start : _line_end(raw, start)] for start in sorted(starts))


def _line_end(raw: bytes, at: int) -> int:
    end = raw.find(b"\n", at)
    return len(raw) if end < 0 else end


def without_cycle_collection(function: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run `function` with Python's cycle collector paused. A parse allocates its tree's
    objects by the hundred thousand (libcst's, a million for a large file), and the collector
    would walk them again and again as they come: a sixth of a check, and two thirds of
    CPython's `ast.parse`. What is left in cycles goes at the first collection after, which
    comes at once: the collector resumes before anything else runs."""

    @functools.wraps(function)
    def paused(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        if not gc.isenabled():
            return function(*args, **kwargs)
        try:
            gc.disable()
            return function(*args, **kwargs)
        finally:
            gc.enable()

    return paused


@without_cycle_collection
def parse_python(text: str | bytes) -> ast.Module:
    """CPython's own parse of `text`, without the warnings it prints about the code (invalid
    escapes, `(...)()`): they are about the user's code, which they did not ask about."""
    with _quietly():
        return ast.parse(text)


def text_as_parsed(raw: bytes) -> str | None:
    """The file's text as `SourceText.decode` reads it (the text the rules read), where
    `parse_python(raw)` surely decodes the bytes alike; else None, for a syntax tree of `raw`
    may not spell what the rules read. Only UTF-8 is trusted: CPython makes every line break
    `\\n` before it decodes, which changes what a stateful codec reads (`iso2022_kr` leaves its
    shift at `\\n` alone), and the two read the declaration differently: `tokenize` looks for it
    in the first two lines as split at `\\n` alone, CPython at a lone `\\r` too, and `tokenize`
    refuses a first line that is not UTF-8 where CPython reads on."""
    head = _declaration_lines(raw)
    if b"coding" in head and b"\r" in head.replace(b"\r\n", b""):
        return None
    try:
        source = SourceText.decode(raw)
    except SourceError:
        return None
    return source.text if source.encoding in ("utf-8", "utf-8-sig") else None


def _declaration_lines(raw: bytes) -> bytes:
    """The first two lines of the bytes, split at `\\n` alone: where `tokenize` looks for an
    encoding declaration."""
    first = raw.find(b"\n")
    second = raw.find(b"\n", first + 1) if first >= 0 else -1
    return raw if second < 0 else raw[:second]


def ascii_as_bytes(raw: bytes) -> bool:
    """Whether each ASCII letter, digit and mark of the text the rules read (`SourceText.decode`)
    is its own byte in the file, so that a search of the bytes for an ASCII word answers for the
    text: a file that declares no encoding (UTF-8), or one of the encodings that keep ASCII so.
    Not `utf-7` (`+AHQ-ensorflow` is `tensorflow`), `unicode_escape` (`\\x74`), the stateful
    `iso2022_*` and `hz`, UTF-16, EBCDIC or an encoding someone registered. A declaration
    `tokenize` refuses leaves the bytes as they are: the text cannot be read either."""
    if b"coding" not in _declaration_lines(raw):
        return True
    import codecs  # here: only files that declare an encoding

    try:
        encoding = codecs.lookup(declared_encoding(raw)).name
    except (SyntaxError, LookupError):
        return True
    return encoding not in _ASCII_OTHERWISE and (
        encoding in _ASCII_ALIKE or encoding.startswith(_ASCII_ALIKE_FAMILIES)
    )


# Encodings in which each ASCII character of the text is its own byte, and no bytes read as
# nothing between two of them (tested against every sequence of one and two bytes), by the
# names `codecs.lookup` gives. Not the stateful `iso2022_*` and `hz`: a shift that changes
# nothing (`ten\x1b(Bsorflow`, `ten~\nsorflow`) reads as nothing inside a word.
_ASCII_ALIKE = frozenset(
    {"utf-8", "utf-8-sig", "ascii", "johab", "kz1048", "ptcp154", "tis-620", "hp-roman8"}
)
_ASCII_ALIKE_FAMILIES = ("iso8859-", "cp", "koi8-", "mac-", "euc_", "gb", "big5", "shift_jis")
# ...but these, which spell ASCII with other bytes: EBCDIC, and two Mac encodings that give
# bytes above 127 the meaning of ASCII marks.
_ASCII_OTHERWISE = frozenset(
    {"cp037", "cp273", "cp424", "cp500", "cp875", "cp1026", "cp1140", "mac-arabic", "mac-farsi"}
)


def compile_python(source: bytes | str) -> CodeType:
    """CPython's compile of a file's bytes (its coding cookie and BOM as Python reads them), or
    of a text, as plain as Python runs it, and as quiet as `parse_python`."""
    with _quietly():
        return compile(source, "<tfmemlint>", "exec", dont_inherit=True, optimize=0)


@contextlib.contextmanager
def _quietly() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def create_temporary(directory: str, prefix: str, suffix: str = ".tmp") -> tuple[int, str]:
    """A new file in `directory`, opened for writing, only by us: (descriptor, path). What
    tempfile.mkstemp does, without the cost of importing tempfile on every run."""
    for _ in range(100):
        path = os.path.join(directory, f"{prefix}{os.urandom(6).hex()}{suffix}")
        try:
            return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), path
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name in {directory}")


def write_atomically(path: str, data: bytes, expected_old: bytes) -> None:
    """Replace the file's bytes in one step, keeping its mode; refuse if it changed since read.

    A symbolic link is followed: its target is rewritten and the link stays a link.
    """
    target = os.path.realpath(path)
    with open(target, "rb") as current:
        if current.read() != expected_old:
            raise OSError(f"{path} changed on disk while it was being fixed; left as it is")
    stat = os.stat(target)
    # Root may write anywhere; a file with no write bit is still meant to be left alone.
    if not os.access(target, os.W_OK) or not stat.st_mode & 0o222:
        raise PermissionError(f"{path} is read-only; left as it is")
    directory = os.path.dirname(target)
    fd, temp = create_temporary(directory, ".tfmemlint-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, stat.st_mode & 0o7777)
        if hasattr(os, "chown"):
            # Only root may give a file away; otherwise our own ownership is the best left.
            with contextlib.suppress(PermissionError):
                os.chown(temp, stat.st_uid, stat.st_gid)
        os.replace(temp, target)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise
