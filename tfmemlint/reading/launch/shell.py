"""Shell and Slurm scripts, and `.env` files: read with a word scanner of our own that keeps each
word's place in the text (the standard library's `shlex` splits words but forgets where they
were, and an edit needs the place). It knows quotes, backslash continuations, comments,
command separators and here-documents; it expands nothing, so a word with `$` or a backtick in
it has no value.

The settings it reads: `export VAR=value` (and `declare -x`), `VAR=value` alone or before a
command, `env VAR=value cmd`, `docker run -e VAR=value` / `--env VAR=value` / `--env=VAR=value`,
`srun --export=VAR=value,...`, and a Slurm script's `#SBATCH --export=...` lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tfmemlint.reading.launch.model import (
    Command,
    DroppedLines,
    LaunchFile,
    Process,
    Run,
    Setting,
    Span,
)
from tfmemlint.reading.launch.python_runs import program

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_SEPARATORS = frozenset(";&|()")
# Words that run the command after them, and the keywords a command may follow on a line.
_WRAPPERS = frozenset({"sudo", "time", "exec", "nohup", "command", "then", "do", "else", "!", "{"})
_SBATCH_EXPORT = re.compile(r"#SBATCH\s+--export=(\S+)")
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")


@dataclass
class _Word:
    start: int
    end: int = 0
    # The word as the shell passes it, or None where it expands something.
    value: str | None = ""
    # What it holds before the first thing it expands (`NAME=` of `NAME=$VALUE`).
    literal: str = ""
    # Where the word's text lies whole, with no continuation inside it.
    contiguous: bool = True


def read_shell(text: str) -> LaunchFile:
    """A shell or Slurm batch script."""
    launch = LaunchFile("shell")
    commands = _commands(text, launch)
    meant = {id(words) for _, drop in commands if drop is not None for words in drop.commands}
    # A batch script's `#SBATCH --export=` reaches every step; `export` what comes after it.
    batch = [
        setting
        for match in _SBATCH_EXPORT.finditer(text)
        if _at_line_start(text, match.start())
        for setting in _exports(match.group(1), match.start(1), match.span())
    ]
    launch.settings.extend(batch)
    exported = list(batch)
    for words, drop in commands:
        values = tuple(w.value for w in words)
        launch.commands.append(Command(values, _span(words)))
        if id(words) not in meant:
            settings = _settings(text, words)
            launch.settings.extend(settings)
            process = _docker_run(words, settings)
            if process is not None:
                launch.processes.append(process)
            own = [s for s in settings if s.how != "export"]
            ran = program(values) if process is None else None
            if ran is not None:
                launch.runs.append(Run(ran[0], ran[1], (*exported, *own)))
            exported += [s for s in settings if s.how == "export"]
        if drop is not None:
            cut = tuple(
                setting
                for lines in drop.commands
                for setting in _settings(text, lines, after_drop=True)
            )
            head = " ".join(w.value or "..." for w in words[:2])
            launch.dropped.append(DroppedLines(drop.comment, head, cut))
    return launch


def read_dotenv(text: str) -> LaunchFile:
    """A `.env` file: `VAR=value` lines (with an optional `export`), quotes, comments."""
    launch = LaunchFile("dotenv")
    offset = 0
    for row, line in enumerate(text.splitlines(keepends=True), start=1):
        body = line.rstrip("\r\n")
        stripped = body.lstrip()
        if stripped.startswith("#"):
            launch.comments[row] = stripped
        match = re.match(r"\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.]*)\s*=\s*", body)
        if match is not None and not stripped.startswith("#"):
            rest = body[match.end() :]
            start = offset + match.end()
            value, length, quote = _dotenv_value(rest)
            comment = rest[length:].strip()
            if comment.startswith("#"):
                launch.comments[row] = comment
            launch.settings.append(
                Setting(
                    match.group(1),
                    value,
                    (start, start + length),
                    quote,
                    (offset + len(body) - len(stripped), start + length),
                    ".env",
                )
            )
        offset += len(line)
    return launch


def _dotenv_value(rest: str) -> tuple[str | None, int, str]:
    """(the value, how many characters it takes, its quote) of what follows `NAME=`."""
    if rest[:1] in ("'", '"'):
        end = rest.find(rest[0], 1)
        if end < 0:
            return None, len(rest.rstrip()), ""
        inner = rest[1:end]
        value = None if rest[0] == '"' and ("$" in inner or "\\" in inner) else inner
        return value, end + 1, rest[0]
    match = re.match(r"[^\s#]*(?:[ \t]+[^\s#]+)*", rest)
    raw = match.group(0) if match else ""
    return (None if "$" in raw else raw), len(raw), ""


def _at_line_start(text: str, offset: int) -> bool:
    return offset == 0 or text[offset - 1] == "\n"


def _span(words: list[_Word]) -> Span:
    return words[0].start, words[-1].end


# -- the scanner ---------------------------------------------------------------------------------
@dataclass
class _Drop:
    comment: Span
    commands: list[list[_Word]]


def _commands(text: str, launch: LaunchFile) -> list[tuple[list[_Word], _Drop | None]]:
    """Each simple command's words, in order, with its comments put in `launch`; for a command
    that a comment line inside its continuation ends, the comment and the commands of the
    lines after it that were meant to continue it."""
    found: list[tuple[list[_Word], _Drop | None]] = []
    words: list[_Word] = []
    word: _Word | None = None
    continued = False  # this line came after a backslash continuation
    dropping: _Drop | None = None
    comment_line_end = -1  # the end of the comment line that started `dropping`
    heredocs: list[str] = []
    outputs: list[tuple[int, int]] = []  # each `$(...)`: its commands are read after
    index, length = 0, len(text)

    def end_word() -> None:
        nonlocal word
        if word is not None:
            word.end = index
            words.append(word)
            word = None

    def end_command() -> None:
        nonlocal words
        end_word()
        if words:
            found.append((words, None))
            if dropping is not None:
                dropping.commands.append(words)
        words = []

    while index < length:
        char = text[index]
        if char == "\\" and text.startswith(("\n", "\r\n"), index + 1):
            if word is not None:
                word.contiguous = False
            index += 2 if text[index + 1] == "\n" else 3
            continued = True
            continue
        if char == "\n":
            end_command()
            if dropping is not None and index != comment_line_end and not _continues(text, index):
                dropping = None  # the lines meant as the continuation end here
            continued = False
            index += 1
            for delimiter in heredocs:
                index = _skip_heredoc(text, index, delimiter)
            heredocs = []
            continue
        if char in " \t\r":
            end_word()
            index += 1
            continue
        if char == "#" and word is None:
            end = text.find("\n", index)
            end = length if end < 0 else end
            launch.comments[text.count("\n", 0, index) + 1] = text[index:end]
            if continued and words and dropping is None and _only_blanks_before(text, index):
                # A comment line inside a continued command ends the command here.
                dropping = _Drop((index, end), [])
                found.append((words, dropping))
                words, comment_line_end = [], end
            index = end
            continue
        if char == "<" and word is None and text.startswith("<<", index):
            match = _HEREDOC.match(text, index)
            if match is not None:
                heredocs.append(match.group(2))
                index = match.end()
                continue
        if char in _SEPARATORS and (word is None or char in ";&|"):
            end_command()  # outside quotes, `;`, `&` and `|` end a word too; `(` starts one
            index += 1
            continue
        if word is None:
            word = _Word(index)
        if char in ("'", '"'):
            close = _closing_quote(text, index)
            piece = text[index + 1 : close]
            if char == '"' and ("$" in piece or "`" in piece):
                word.literal, word.value = word.value or word.literal, None
            elif word.value is not None:
                value = piece if char == "'" else re.sub(r'\\([\\$`"\n])', r"\1", piece)
                word.value += value
            if "\n" in piece:
                word.contiguous = False
            index = close + 1
            continue
        if char in "$`":
            word.literal, word.value = word.value or word.literal, None
            if text.startswith("$(", index):  # a command's output: one opaque part of the word
                close = _closing_paren(text, index + 1)
                outputs.append((index + 2, close))
                index = close + 1
                continue
        elif char == "\\" and index + 1 < length:
            if word.value is not None:
                word.value += text[index + 1]
            index += 2
            continue
        elif word.value is not None:
            word.value += char
        index += 1
    end_command()
    for start, end in outputs:
        # The commands inside, read in a copy of the text blank around them: the same offsets
        # and rows (its line breaks kept).
        inside = _blank(text[:start]) + text[start:end] + _blank(text[end:])
        found += _commands(inside, launch)
    return found


def _blank(text: str) -> str:
    return re.sub(r"[^\n]", " ", text)


def _closing_paren(text: str, index: int) -> int:
    """The offset of the `)` that closes the `(` at `index`, past quotes and nested ones (the
    text's last offset if none does)."""
    depth = 0
    position = index
    while position < len(text):
        char = text[position]
        if char in ("'", '"'):
            position = _closing_quote(text, position)
        elif char == "\\":
            position += 1
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return position
        position += 1
    return len(text) - 1


def _continues(text: str, newline: int) -> bool:
    """Whether the line that ends at `newline` ends with a backslash continuation (so that the
    line after it was meant to go on with it)."""
    line_start = text.rfind("\n", 0, newline) + 1
    return text[line_start:newline].rstrip("\r").endswith("\\")


def _only_blanks_before(text: str, index: int) -> bool:
    line_start = text.rfind("\n", 0, index) + 1
    return not text[line_start:index].strip()


def _closing_quote(text: str, index: int) -> int:
    """The offset of the quote that closes the one at `index` (the text's end if none)."""
    quote = text[index]
    position = index + 1
    while position < len(text):
        char = text[position]
        if char == quote:
            return position
        if quote == '"' and char == "\\":
            position += 1
        position += 1
    return len(text)


def _skip_heredoc(text: str, index: int, delimiter: str) -> int:
    """The offset after the line that ends a here-document whose body starts at `index`."""
    while index < len(text):
        end = text.find("\n", index)
        end = len(text) if end < 0 else end
        if text[index:end].strip() == delimiter:
            return end + 1
        index = end + 1
    return index


# -- settings in a command -----------------------------------------------------------------------
def _settings(text: str, words: list[_Word], after_drop: bool = False) -> list[Setting]:
    """The settings one command makes: its leading assignments, and what `export`, `env`,
    `docker run` and `srun` are given. After a dropped comment, the lines hold only options
    (`-e VAR=value`, `--env=...`): those are read as they would have been."""
    values = [w.value for w in words]
    found = [_assigned(text, word, "assignment") for word in _leading_assignments(words)]
    position = _start(values, len(found))
    head = values[position : position + 2]
    if head[:1] in (["export"], ["declare"]):
        how = "export"
        for word in words[position + 1 :]:
            if _assignment(word):
                found.append(_assigned(text, word, how))
        return found
    if head[:1] == ["env"]:
        for word in words[position + 1 :]:
            if not _assignment(word):
                break
            found.append(_assigned(text, word, "assignment"))
        return found
    docker = _docker_head(values, position) is not None
    if docker or after_drop:
        found.extend(_docker_env(text, words[position:]))
    if head[:1] == ["srun"] or after_drop:
        for word in words[position:]:
            if word.value is not None and word.value.startswith("--export="):
                prefix = len("--export=")
                start = word.start + prefix if word.contiguous and _plain(text, word) else -1
                found.extend(_exports(word.value[prefix:], start, (word.start, word.end)))
    return found


def _leading_assignments(words: list[_Word]) -> list[_Word]:
    """The `NAME=value` words a command starts with: its own environment."""
    count = 0
    while count < len(words) and _assignment(words[count]):
        count += 1
    return words[:count]


def _start(values: list[str | None], position: int) -> int:
    """Where the command itself starts, after words that only run it (`sudo -E`, `time`,
    `exec`, `nohup`, a keyword that begins a branch or a loop's body)."""
    while position < len(values) and values[position] in _WRAPPERS:
        position += 1
        if values[position - 1] == "sudo":  # and its options (`-u USER` takes a value)
            while position < len(values) and (values[position] or "").startswith("-"):
                position += 2 if values[position] in ("-u", "-g", "-C") else 1
    return position


def _docker_head(values: list[str | None], position: int) -> int | None:
    """The position after `docker run` (`docker container run`, podman's, nvidia-docker's)
    where a command starts with it; None where it does not."""
    if values[position : position + 3] in (
        ["docker", "container", "run"],
        ["podman", "container", "run"],
    ):
        return position + 3
    if values[position : position + 2] in (
        ["docker", "run"],
        ["podman", "run"],
        ["nvidia-docker", "run"],
    ):
        return position + 2
    return None


def _assignment(word: _Word) -> bool:
    name, equals, _ = (word.value if word.value is not None else word.literal).partition("=")
    return bool(equals) and _NAME.match(name) is not None


def _plain(text: str, word: _Word) -> bool:
    """Whether the word is written as its value: no quote, escape or continuation in it."""
    written = text[word.start : word.end]
    return word.contiguous and word.value == written


def _assigned(text: str, word: _Word, how: str, head: int = 0) -> Setting:
    """The setting a word `NAME=value` makes (its text from `head` on, for `--env=NAME=v`)."""
    written = text[word.start : word.end]
    if word.value is None:  # it expands something: no value to read or to edit
        return Setting(
            written[head:].partition("=")[0], None, None, "", (word.start, word.end), how
        )
    name, _, value = word.value[head:].partition("=")
    value_start = word.start + head + len(name) + 1
    quote = ""
    span: Span | None = None
    if word.contiguous:
        raw_value = written[head + len(name) + 1 :]
        if raw_value == value:
            span = (value_start, word.end)
        elif (
            raw_value[:1] in ("'", '"')
            and raw_value[-1:] == raw_value[0]
            and raw_value[1:-1] == value
        ):
            span, quote = (value_start, word.end), raw_value[0]
    return Setting(name, value, span, quote, (word.start, word.end), how)


def _docker_run(words: list[_Word], settings: list[Setting]) -> Process | None:
    """The container a `docker run` (or podman's, or nvidia-docker's) starts: its image is the
    first word that is no option nor an option's value."""
    values = [w.value for w in words]
    position = _start(values, len(_leading_assignments(words)))
    after = _docker_head(values, position)
    if after is None:
        return None
    gpus = values[position] == "nvidia-docker"
    more_env = False
    entrypoint: tuple[str | None, ...] = ()
    index = after
    while index < len(words):
        value = values[index]
        if value is None or not value.startswith("-"):
            break
        option, equals, given = value.partition("=")
        following = values[index + 1] if index + 1 < len(values) else None
        if not equals and option in _DOCKER_VALUE_OPTIONS:
            given = following or ""
            index += 1
        gpus = gpus or option == "--gpus" or (option == "--runtime" and given == "nvidia")
        more_env = more_env or option == "--env-file"
        if option == "--entrypoint":
            entrypoint = (given,)
        index += 1
    if index >= len(words) or values[index] is None:
        return None
    image = words[index]
    own = tuple(s for s in settings if s.how == "-e" and s.span[0] < image.start)
    return Process(
        "docker run",
        image.value,
        (image.start, image.end),
        own,
        (*entrypoint, *values[index + 1 :]),
        gpus,
        (image.start, "-e {name}={value} ") if image.contiguous else None,
        more_env,
    )


# `docker run`'s options that take the next word as their value.
_DOCKER_VALUE_OPTIONS = frozenset(
    {
        "-a",
        "--attach",
        "--add-host",
        "--cap-add",
        "--cap-drop",
        "--cgroup-parent",
        "--cidfile",
        "--cpus",
        "--cpuset-cpus",
        "--device",
        "--dns",
        "-e",
        "--entrypoint",
        "--env",
        "--env-file",
        "--expose",
        "--gpus",
        "--group-add",
        "-h",
        "--health-cmd",
        "--hostname",
        "--ipc",
        "-l",
        "--label",
        "--link",
        "--log-driver",
        "--log-opt",
        "-m",
        "--memory",
        "--memory-swap",
        "--mount",
        "--name",
        "--net",
        "--network",
        "-p",
        "--pid",
        "--platform",
        "--publish",
        "--pull",
        "--restart",
        "--runtime",
        "--security-opt",
        "--shm-size",
        "--stop-signal",
        "--stop-timeout",
        "--tmpfs",
        "-u",
        "--ulimit",
        "--user",
        "--userns",
        "--uts",
        "-v",
        "--volume",
        "--volumes-from",
        "-w",
        "--workdir",
    }
)


def _docker_env(text: str, words: list[_Word]) -> list[Setting]:
    found = []
    for position, word in enumerate(words):
        value = word.value or ""
        if value in ("-e", "--env") and position + 1 < len(words):
            following = words[position + 1]
            if _assignment(following):
                found.append(_assigned(text, following, "-e"))
        elif value.startswith("--env=") and _assignment(_Word(0, 0, value[6:])):
            found.append(_assigned(text, word, "-e", head=6))
        elif value.startswith("-e") and len(value) > 2 and _assignment(_Word(0, 0, value[2:])):
            found.append(_assigned(text, word, "-e", head=2))
    return found


def _exports(listed: str, start: int, span: Span) -> list[Setting]:
    """srun's and sbatch's `--export=ALL,VAR=value,...`: each `VAR=value` between commas; where
    `start` is the list's offset in the text (-1: not written as it reads), with its place."""
    found = []
    offset = 0
    for item in listed.split(","):
        name, equals, value = item.partition("=")
        if equals and _NAME.match(name):
            where = start + offset + len(name) + 1
            value_span = (where, where + len(value)) if start >= 0 else None
            found.append(Setting(name, value, value_span, "", span, "--export"))
        offset += len(item) + 1
    return found
