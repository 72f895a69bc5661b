"""Reading the files that launch programs: Dockerfiles, Compose files, Kubernetes manifests, shell
and Slurm scripts, `.env` files. A file's name says its kind; its reader turns its text into a
`LaunchFile` (`model.py`): the settings it makes, the commands it runs, its comments, each with
its place. A reader and its parser are imported only for a file of its kind, so a check of
Python files pays nothing for them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the model costs a start-up that a walk, which only names kinds, is spared
    from tfmemlint.reading.launch.model import LaunchFile

KINDS = ("dockerfile", "yaml", "shell", "dotenv")
_SHELL_SUFFIXES = (".sh", ".bash", ".sbatch", ".slurm")
_YAML_SUFFIXES = (".yml", ".yaml")
_PYTHON_SUFFIXES = (".py", ".pyi", ".pyw", ".ipynb")
# `#!/bin/bash`, `#!/usr/bin/env sh`, `#! /bin/zsh -e`: a shell's own line.
_SHELL = re.compile(rb"#![ \t]*\S*/(?:env[ \t]+)?(?:ba|da|k|z)?sh\b")


def kind_of(path: str, head: bytes = b"") -> str | None:
    """The kind of launch file a path names, by its name, or, given the file's first bytes, a
    shell's `#!` line (a script named on the command line, as pre-commit names one); None for
    any other file."""
    name = os.path.basename(path)
    if head[:2] == b"#!" and not name.endswith(_PYTHON_SUFFIXES) and _SHELL.match(head):
        return "shell"
    if name in ("Dockerfile", "Containerfile") or name.startswith(
        ("Dockerfile.", "Containerfile.")
    ):
        return "dockerfile"
    if name.endswith((".Dockerfile", ".dockerfile", ".Containerfile")):
        return "dockerfile"
    if name.endswith(_YAML_SUFFIXES):
        return "yaml"
    if name.endswith(_SHELL_SUFFIXES):
        return "shell"
    if name == ".env" or name.endswith(".env"):
        return "dotenv"
    return None


def read_launch_text(kind: str, text: str) -> LaunchFile:
    """The launch file `text` holds, read as `kind`; `model.LaunchError` where it cannot be
    read."""
    return _reader(kind)(text)


def _reader(kind: str) -> Callable[[str], LaunchFile]:
    if kind == "dockerfile":
        from tfmemlint.reading.launch.dockerfile import read_dockerfile

        return read_dockerfile
    if kind == "yaml":
        from tfmemlint.reading.launch.yaml_files import read_yaml

        return read_yaml
    from tfmemlint.reading.launch.shell import read_dotenv, read_shell

    return read_shell if kind == "shell" else read_dotenv


__all__ = ["KINDS", "kind_of", "read_launch_text"]
