"""What a launch file says, whatever its kind: the environment settings it makes and the commands
it runs, each with its place in the file's text (offsets into the decoded text), and its
comments by row. The readers build it; the launch-file rules read it."""

from __future__ import annotations

from dataclasses import dataclass, field

# (start, end) offsets into the file's text.
Span = tuple[int, int]


@dataclass(frozen=True)
class Setting:
    """One environment variable set for the process a launch file starts."""

    variable: str
    # The value the process gets; None where it is not written out (`$HOME`, `valueFrom:`).
    value: str | None
    # Where the value is written, quotes included; None where no edit can replace it in place
    # (a double-quoted YAML value with escapes, a value spread over continued lines).
    value_span: Span | None
    # The quote around the value as written: "", '"' or "'".
    quote: str
    # Where the whole setting is written, for the finding's place.
    span: Span
    # How it is set: "ENV", "ARG", "environment", "env", "export", "assignment", "-e", ".env".
    how: str
    # The value is a YAML scalar of its own (`NAME: value`, not `- NAME=value`): written plain,
    # YAML may read it as no string.
    yaml_scalar: bool = False
    # A plain YAML scalar that YAML reads as a boolean (`true`, `yes`, `on`): not a string.
    yaml_boolean: bool = False


@dataclass(frozen=True)
class Command:
    """One command a launch file runs: its words as the shell or the runtime gets them (None
    for a word that is not written out), and where it is written."""

    words: tuple[str | None, ...]
    span: Span


@dataclass(frozen=True)
class DroppedLines:
    """A comment line inside a backslash-continued shell command: the command ends at it, and
    the lines after it, meant as its continuation, run as commands of their own."""

    comment: Span
    command: str  # the command's first words, as written (`docker run`)
    # The settings the lines after the comment were meant to pass.
    settings: tuple[Setting, ...]


@dataclass(frozen=True)
class Process:
    """A process the file starts in a container: a Dockerfile's image (its last stage), a
    Compose service, a Kubernetes container, a KServe predictor, a `docker run`."""

    where: str  # "image", "service", "container", "predictor", "docker run"
    # The image it runs (None where the platform picks it: a KServe predictor), and where the
    # file names it (or the process itself, where it names none).
    image: str | None
    span: Span
    # Its environment, as this file gives it.
    settings: tuple[Setting, ...]
    # Its command and arguments, as this file gives them.
    words: tuple[str | None, ...]
    # Whether it is given GPUs (`--gpus`, a device reservation, `nvidia.com/gpu`); None where
    # the file does not say.
    gpus: bool | None
    # Where one more variable goes, and the text of it with `{name}` and `{value}` in it; None
    # where no edit is provably right (a flow-style YAML list, an `env_file:` beside it).
    add_env: tuple[int, str] | None = None
    # Whether more of its environment comes from elsewhere (`env_file:`, `envFrom:`).
    more_env: bool = False


@dataclass(frozen=True)
class Run:
    """A Python program a launch file runs (`python train.py`, `python -m pkg.train`, a server
    of a module: `gunicorn app:app`), with the environment this file gives it."""

    target: str  # a script's path as written, or a module's dotted name
    module: bool
    env: tuple[Setting, ...]
    # Where a path in the container is in the project: (the container's folder, that folder
    # relative to the launch file's own), from `COPY` or a volume; and the folder a relative
    # path starts from (`WORKDIR`), if the file says.
    mounts: tuple[tuple[str, str], ...] = ()
    workdir: str | None = None
    # The Dockerfile (from the launch file's folder) whose image runs it, a Compose service's
    # `build:`: the image's ENV comes under this file's, its COPY and WORKDIR lay paths out;
    # with no target of its own (""), the image's own command runs.
    build: str | None = None


@dataclass
class LaunchFile:
    kind: str
    settings: list[Setting] = field(default_factory=list)
    commands: list[Command] = field(default_factory=list)
    dropped: list[DroppedLines] = field(default_factory=list)
    processes: list[Process] = field(default_factory=list)
    runs: list[Run] = field(default_factory=list)

    def environment(self) -> tuple[Setting, ...] | None:
        """The environment the file gives the process it starts, where it starts one: a
        Dockerfile's image, a script's exports, a `.env` file, the one container of a Compose
        file or manifest; None for several containers, or none."""
        if self.kind == "shell":
            return tuple(s for s in self.settings if s.how in ("export", "--export"))
        if self.kind == "dotenv":
            return tuple(self.settings)
        return self.processes[0].settings if len(self.processes) == 1 else None

    # Each row's comment that may silence a finding on that row (`# tfmemlint: ignore[...]`):
    # its own row's in shell and YAML; in a Dockerfile, a comment line's, given to the row
    # below it.
    comments: dict[int, str] = field(default_factory=dict)


class LaunchError(ValueError):
    """A launch file its reader cannot read: the message says where and why, in one line."""

    def __init__(self, message: str, row: int = 1, column: int = 1) -> None:
        super().__init__(message)
        self.row, self.column = row, column
