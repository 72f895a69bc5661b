"""Dockerfiles, read as BuildKit's frontend reads them (its reference, "Dockerfile reference"),
by a reader of our own: the instructions the rules need are few, and an edit needs each value's
place in the text, which the maintained Python parser (`dockerfile-parse`) does not give.

- Parser directives at the top (`# escape=`), the escape character for line continuations;
  comment lines, which the builder drops even inside a continued instruction, and blank ones.
- `FROM image [AS name]` starts a stage; `ENV` in both forms (`ENV A=1 B="x y"`, and the old
  `ENV A 1`); `ARG name[=default]`, whose default a later `$name` in `ENV` stands for;
  `CMD`, `ENTRYPOINT` and `RUN` in exec form (a JSON array) and shell form.
"""

from __future__ import annotations

import json
import posixpath
import re
from dataclasses import dataclass, field

from tfmemlint.reading.launch.model import Command, LaunchFile, Process, Run, Setting, Span
from tfmemlint.reading.launch.python_runs import program

_DIRECTIVE = re.compile(r"#\s*([A-Za-z]+)\s*=\s*(\S+)\s*$")
_REFERENCE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))\Z")


class _Line:
    """One instruction: its text with continuations taken out, and where each of its characters
    lies in the file."""

    def __init__(self, pieces: list[tuple[int, str]]) -> None:
        self.text = "".join(piece for _, piece in pieces)
        self.offsets: list[int] = []
        for start, piece in pieces:
            self.offsets.extend(range(start, start + len(piece)))
        self.start = pieces[0][0]

    def span(self, start: int, end: int) -> Span | None:
        """The file's span of the instruction's characters `start:end`, where they lie side by
        side in the file (no continuation between them)."""
        if start >= end:
            where = self.offsets[start] if start < len(self.offsets) else self.end
            return where, where
        first, last = self.offsets[start], self.offsets[end - 1]
        return (first, last + 1) if last - first == end - 1 - start else None

    @property
    def end(self) -> int:
        return self.offsets[-1] + 1 if self.offsets else self.start


@dataclass
class _Stage:
    name: str | None
    image: str
    span: Span
    after_from: int  # the offset where the line after `FROM` starts
    settings: list[Setting] = field(default_factory=list)
    entrypoint: tuple[str | None, ...] | None = None
    cmd: tuple[str | None, ...] | None = None
    workdir: str | None = None
    # (the container's path, the build context's path) of each COPY or ADD from the context.
    mounts: list[tuple[str, str]] = field(default_factory=list)


def read_dockerfile(text: str) -> LaunchFile:
    launch = LaunchFile("dockerfile")
    escape = _escape_character(text)
    stage_values: dict[str, tuple[str | None, Span | None, str]] = {}
    stages: list[_Stage] = []
    for line in _instructions(text, escape, launch):
        keyword, _, rest = line.text.lstrip().partition(" ")
        instruction = keyword.upper()
        begin = len(line.text) - len(line.text.lstrip()) + len(keyword) + 1
        whole = (line.start, line.end)
        if instruction == "FROM":
            stage_values = {}
            stage = _from(line, begin, text)
            if stage is not None:
                stages.append(stage)
        elif instruction == "ARG":
            for name, value, value_span, quote in _pairs(line, begin, escape, legacy=False):
                stage_values[name] = (value, value_span, quote)
        elif instruction == "ENV":
            legacy = "=" not in rest.split(None, 1)[0] if rest.strip() else False
            for name, value, value_span, quote in _pairs(line, begin, escape, legacy):
                reference = _REFERENCE.match(value or "") if value is not None else None
                if reference is not None and quote != "'":
                    named = reference.group(1) or reference.group(2)
                    value, value_span, quote = stage_values.get(named, (None, None, ""))
                elif value is not None and "$" in value and quote != "'":
                    value, value_span = None, None
                setting = Setting(name, value, value_span, quote, whole, "ENV")
                launch.settings.append(setting)
                if stages:
                    stages[-1].settings.append(setting)
                stage_values[name] = (value, value_span, quote)
        elif instruction == "WORKDIR" and stages and rest.strip():
            stages[-1].workdir = posixpath.join(stages[-1].workdir or "/", rest.strip())
        elif instruction in ("COPY", "ADD") and stages:
            stages[-1].mounts.extend(_copied(rest, stages[-1].workdir))
        elif instruction in ("CMD", "ENTRYPOINT", "RUN"):
            words = _command_words(rest)
            launch.commands.append(Command(words, whole))
            if instruction == "CMD" and stages:
                stages[-1].cmd = words
            elif instruction == "ENTRYPOINT" and stages:
                stages[-1].entrypoint = words
    if stages:
        process, run = _image(stages)
        launch.processes.append(process)
        launch.runs.append(run)
    return launch


def _from(line: _Line, begin: int, text: str) -> _Stage | None:
    """A stage, from its `FROM [--platform=...] image [AS name]`."""
    words = [w for w in line.text[begin:].split() if not w.startswith("--")]
    if not words:
        return None
    image = words[0]
    name = words[2] if len(words) >= 3 and words[1].lower() == "as" else None
    start = line.text.index(image, begin)
    span = line.span(start, start + len(image)) or (line.start, line.end)
    newline = text.find("\n", line.end)
    return _Stage(name, image, span, len(text) if newline < 0 else newline + 1)


def _image(stages: list[_Stage]) -> tuple[Process, Run]:
    """The image the file builds (its last stage): the image it starts from, through the
    stages it names, their settings and its command; and the Python program it runs."""
    last = stages[-1]
    by_name = {stage.name: stage for stage in stages if stage.name}
    settings: list[Setting] = []
    mounts: list[tuple[str, str]] = []
    entrypoint, cmd, workdir = last.entrypoint, last.cmd, last.workdir
    stage: _Stage | None = last
    seen = set()
    while stage is not None and id(stage) not in seen:
        seen.add(id(stage))
        settings = [*stage.settings, *settings]
        mounts = [*stage.mounts, *mounts]
        entrypoint = entrypoint if entrypoint is not None else stage.entrypoint
        cmd = cmd if cmd is not None else stage.cmd
        workdir = workdir if workdir is not None else stage.workdir
        base = stage.image
        stage = by_name.get(base)
    words = (*(entrypoint or ()), *(cmd or ()))
    process = Process(
        "image",
        base,
        last.span,
        tuple(settings),
        words,
        None,
        (last.after_from, "ENV {name}={value}\n"),
    )
    # The image's program, or, where it runs none that can be told, only its layout (a
    # Compose service may run its own command in it).
    target, module = program(words) or ("", False)
    return process, Run(target, module, tuple(settings), tuple(reversed(mounts)), workdir)


def _copied(rest: str, workdir: str | None) -> list[tuple[str, str]]:
    """(the container's path, the context's path) of each source a COPY or ADD takes from the
    build context (not `--from` another stage or image, nor a URL)."""
    stripped = rest.strip()
    if stripped.startswith("["):
        try:
            words = json.loads(stripped)
        except ValueError:
            return []
    else:
        words = stripped.split()
    if any(isinstance(w, str) and w.startswith("--from") for w in words):
        return []
    paths = [w for w in words if isinstance(w, str) and not w.startswith("--")]
    if len(paths) < 2:
        return []
    *sources, written = paths
    destination = posixpath.join(workdir or "/", written)
    # A folder's contents are copied into the destination; a file goes into it where the
    # destination is a folder (`dir/`, `.`, or one of several sources).
    into = written.endswith(("/", "/.")) or written == "." or len(sources) > 1
    found = []
    for source in sources:
        if "://" in source or "$" in source or "*" in source:
            continue
        name = posixpath.basename(source.rstrip("/"))
        folder = source.endswith("/") or name in (".", "") or "." not in name
        target = posixpath.join(destination, name) if into and not folder else destination
        found.append((posixpath.normpath(target), posixpath.normpath(source)))
    return found


def _escape_character(text: str) -> str:
    """The `# escape=` directive's character, if the file starts with one; else a backslash."""
    for line in text.splitlines():
        match = _DIRECTIVE.match(line.strip())
        if match is None:
            break
        if match.group(1).lower() == "escape" and match.group(2) in ("`", "\\"):
            return match.group(2)
    return "\\"


def _instructions(text: str, escape: str, launch: LaunchFile) -> list[_Line]:
    """Each instruction, its continued lines joined; comment and blank lines inside one left
    out, as the builder leaves them out. A comment line's text is given to the row below it,
    where it may silence a finding (`# tfmemlint: ignore[TFM501]`, as hadolint's `# hadolint
    ignore=` works)."""
    found: list[_Line] = []
    pieces: list[tuple[int, str]] = []
    offset = 0
    for row, raw in enumerate(text.splitlines(keepends=True), start=1):
        body = raw.rstrip("\r\n")
        stripped = body.strip()
        if stripped.startswith("#"):
            launch.comments[row + 1] = stripped
        elif stripped:
            content = body.rstrip()
            if content.endswith(escape):
                pieces.append((offset, content[: -len(escape)]))
            else:
                pieces.append((offset, body))
                found.append(_Line(pieces))
                pieces = []
        offset += len(raw)
    if pieces:
        found.append(_Line(pieces))
    return found


def _pairs(
    line: _Line, begin: int, escape: str, legacy: bool
) -> list[tuple[str, str | None, Span | None, str]]:
    """(name, value, the value's span, its quote) of each `name=value` from `begin` on; in the
    old form, the one name and the rest of the line as its value. A value with an escape or a
    quote inside it has no span (an edit would have to respell it)."""
    text = line.text
    found: list[tuple[str, str | None, Span | None, str]] = []
    index = begin
    length = len(text)
    while index < length:
        while index < length and text[index] in " \t":
            index += 1
        name_start = index
        while index < length and text[index] not in " \t=":
            index += 1
        name = text[name_start:index]
        if not name:
            break
        if legacy:
            rest = text[index:].strip()
            start = text.index(rest, index) if rest else length
            found.append((name, rest, line.span(start, start + len(rest)), ""))
            break
        if index >= length or text[index] != "=":
            found.append((name, None, None, ""))  # `ARG name`, with no default
            continue
        index += 1
        value_start = index
        value: list[str] = []
        quote = ""
        plain = True
        while index < length and text[index] not in " \t":
            char = text[index]
            if char in ("'", '"'):
                close = text.find(char, index + 1)
                while char == '"' and close > 0 and text[close - 1] == escape:
                    close = text.find(char, close + 1)
                close = length if close < 0 else close
                inner = text[index + 1 : close]
                if escape in inner:
                    plain = False
                    inner = inner.replace(escape + '"', '"').replace(escape + escape, escape)
                value.append(inner)
                whole = index == value_start and (close + 1 >= length or text[close + 1] in " \t")
                if whole:
                    quote = char
                else:
                    plain = False
                index = close + 1
                continue
            if char == escape and index + 1 < length:
                value.append(text[index + 1])
                plain = False
                index += 2
                continue
            value.append(char)
            index += 1
        span = line.span(value_start, index) if plain or quote else None
        found.append((name, "".join(value), span, quote))
    return found


def _command_words(rest: str) -> tuple[str | None, ...]:
    """CMD's, ENTRYPOINT's or RUN's words: the exec form's strings, or the shell form's words
    split at blanks (the shell reads them; what it expands has no value)."""
    stripped = rest.strip()
    if stripped.startswith("["):
        try:
            words = json.loads(stripped)
        except ValueError:
            words = None
        if isinstance(words, list) and all(isinstance(word, str) for word in words):
            return tuple(words)
    return tuple(None if "$" in word else word for word in stripped.split())
