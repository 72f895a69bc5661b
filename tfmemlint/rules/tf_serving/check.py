"""The logic of TFM511-TFM514 (their pages are in `__init__.py`)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from tfmemlint.model import Finding, Fix
from tfmemlint.reading.launch.context import LaunchContext
from tfmemlint.reading.launch.model import Process, Span
from tfmemlint.rules.tf_serving import (
    KSERVE_UNCONFIGURED,
    SERVING_FRACTION,
    SERVING_UNCONFIGURED,
    TRITON_WHOLE_GPU,
)
from tfmemlint.rules.variables import FORCE_GROWTH, configured_frameworks

FRACTION = "--per_process_gpu_memory_fraction"
# TF Serving's image, from any registry, with its tag (a digest alone says no tag).
_SERVING_IMAGE = re.compile(r"(?:^|/)tensorflow/serving(?::(?P<tag>[^@\s]+))?(?:@\S+)?$")
_TRITON = re.compile(r"(?:^|,)gpu-memory-fraction=([^,]*)")


def check(ctx: LaunchContext) -> Iterator[Finding]:
    for process in ctx.launch.processes:
        yield from _unconfigured(ctx, process)
    yield from _fractions(ctx)
    yield from _triton(ctx)


def _on_the_gpu(process: Process) -> bool:
    """TF Serving's GPU image, or a KServe TensorFlow predictor that asks for a GPU."""
    if process.where == "predictor":
        return process.gpus is True
    match = _SERVING_IMAGE.search(process.image or "")
    tag = (match.group("tag") or "") if match is not None else ""
    if "gpu" not in tag:
        return False
    # A `-devel` image is a build environment: it serves only where it is told to.
    return "devel" not in tag or any(
        word is not None and word.rsplit("/", 1)[-1] == "tensorflow_model_server"
        for word in process.words
    )


def _configured(process: Process) -> bool:
    """Growth on, or a fraction given, or what the file cannot tell (a value it does not write
    out, an environment from elsewhere): it may be."""
    if process.more_env or any(
        s.variable == FORCE_GROWTH and s.value is None for s in process.settings
    ):
        return True
    environment = {s.variable: s.value for s in process.settings}
    if "tensorflow" in configured_frameworks(environment):
        return True
    return any(value != "0" for value in _flag_values(process.words, FRACTION))


def _flag_values(words: tuple[str | None, ...], flag: str) -> Iterator[str | None]:
    """Each value given to `flag` (`--flag=v` or `--flag v`; None where it is not written
    out)."""
    for position, word in enumerate(words):
        if word == flag:
            yield words[position + 1] if position + 1 < len(words) else None
        elif word is not None and word.startswith(flag + "="):
            yield word[len(flag) + 1 :]


def _unconfigured(ctx: LaunchContext, process: Process) -> Iterator[Finding]:
    if not _on_the_gpu(process) or _configured(process):
        return
    if process.where == "predictor":
        message = (
            "KServe runs this TensorFlow predictor on TF Serving's GPU image with no memory "
            "setting: tensorflow_model_server reserves nearly all of the GPU"
        )
        rule = KSERVE_UNCONFIGURED
    else:
        message = (
            f"`{process.image}` runs TF Serving on the GPU with no memory setting: "
            "tensorflow_model_server reserves nearly all of every GPU it sees"
        )
        rule = SERVING_UNCONFIGURED
    yield ctx.finding(rule, message, process.span, _fix(ctx, process))


def _fix(ctx: LaunchContext, process: Process) -> Fix | None:
    fraction = ctx.policy.fraction
    if fraction is not None:
        if process.where != "docker run":
            return None
        end = process.span[1]
        flag = f"{FRACTION}={fraction:g}"
        return Fix(f"Pass {flag}", (ctx.edit((end, end), f" {flag}"),))
    if process.add_env is None or any(s.variable == FORCE_GROWTH for s in process.settings):
        return None  # a value set already is TFM501's or TFM502's to judge
    offset, template = process.add_env
    text = template.format(name=FORCE_GROWTH, value="true")
    if process.where == "docker run":
        edit = ctx.edit((offset, offset), text)
    else:
        edit = ctx.insertion(offset, text)
    return Fix(f"Set {FORCE_GROWTH}=true in its environment", (edit,))


def _fractions(ctx: LaunchContext) -> Iterator[Finding]:
    for command in ctx.launch.commands:
        for value in _flag_values(command.words, FRACTION):
            if value is None:
                continue
            problem = _fraction_problem(value)
            if problem is not None:
                span = _place(ctx, FRACTION, command.span)
                yield ctx.finding(SERVING_FRACTION, f"{FRACTION}={value}: {problem}", span)


def _fraction_problem(value: str) -> str | None:
    try:
        fraction = float(value)
    except ValueError:
        return "no number: the server reads a float, and stops at start-up"
    if fraction < 0:
        return "must be in (0, 1]"
    if fraction > 1:
        return (
            "above 1 turns on unified memory: the server takes the whole GPU and spills into "
            "host memory"
        )
    if fraction == 1:
        return "asks for the GPU's whole memory, more than is ever free; use a smaller fraction"
    return None


def _triton(ctx: LaunchContext) -> Iterator[Finding]:
    for command in ctx.launch.commands:
        for value in _flag_values(command.words, "--backend-config"):
            if value is None or not value.startswith("tensorflow,"):
                continue
            for match in _TRITON.finditer(value.removeprefix("tensorflow")):
                try:
                    fraction = float(match.group(1))
                except ValueError:
                    continue
                if fraction >= 1:
                    start = ctx.text.find("gpu-memory-fraction", *command.span)
                    span = (
                        (start, start + len("gpu-memory-fraction")) if start >= 0 else command.span
                    )
                    message = (
                        f"gpu-memory-fraction={match.group(1)} gives Triton's TensorFlow backend "
                        "the whole GPU; without it, the backend grows on demand"
                    )
                    yield ctx.finding(TRITON_WHOLE_GPU, message, span)


def _place(ctx: LaunchContext, written: str, within: Span) -> Span:
    """Where `written` is in the text a command takes; the whole command where it is not
    written as it reads (across a continuation)."""
    start = ctx.text.find(written, *within)
    return (start, start + len(written)) if start >= 0 else within
