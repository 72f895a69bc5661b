"""Compose files and Kubernetes manifests, read with PyYAML's node graph (`yaml.compose_all`, the
pure-Python loader): each node keeps its place in the text and how it was written (plain,
quoted, a block), and YAML's own resolver says which plain values are booleans or numbers.
PyYAML is the maintained, widely used YAML parser for Python; ruamel.yaml keeps comments for
round trips, which the fixes do not need, since they edit the text in place.

- Compose: each service's `environment:` (a mapping, or a list of `NAME=value`), `command:`,
  `entrypoint:`.
- Kubernetes: Pod, Deployment, StatefulSet, DaemonSet, ReplicaSet, Job and CronJob, and `List`s
  of them, in any document of the file: each container's and init container's `env:`
  (`value:`; `valueFrom:` has no value written), `command:` and `args:`.
"""

from __future__ import annotations

import posixpath
from typing import Any

from tfmemlint.reading.launch.model import (
    Command,
    LaunchError,
    LaunchFile,
    Process,
    Run,
    Setting,
    Span,
)
from tfmemlint.reading.launch.python_runs import program

_WORKLOADS = {
    "Pod": ("spec",),
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}
_BOOLEAN = "tag:yaml.org,2002:bool"
_STRING = "tag:yaml.org,2002:str"
_NULL = "tag:yaml.org,2002:null"


def read_yaml(text: str) -> LaunchFile:
    """A YAML file: a Compose file, Kubernetes manifests, or neither (then nothing is read)."""
    import yaml

    try:
        # libyaml's loader where PyYAML has it: seven times faster, and its nodes' places and
        # styles are the pure-Python loader's (a test holds them to it).
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        documents = [d for d in yaml.compose_all(text, Loader=loader) if d is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        row, column = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        raise LaunchError(f"YAML does not parse: {problem}", row, column) from None
    launch = LaunchFile("yaml")
    for document in documents:
        if _get(document, "services") is not None:
            launch.kind = "compose"
            _compose(text, document, launch)
        else:
            _kubernetes(text, document, launch)
    launch.comments.update(_comments(text))
    return launch


def _get(node: Any, key: str) -> Any:
    """A mapping node's value node for `key`; None where it is no mapping or has no such key."""
    import yaml

    if not isinstance(node, yaml.MappingNode):
        return None
    for key_node, value_node in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.value == key:
            return value_node
    return None


def _span(node: Any) -> Span:
    return node.start_mark.index, node.end_mark.index


def _compose(text: str, document: Any, launch: LaunchFile) -> None:
    import yaml

    services = _get(document, "services")
    if not isinstance(services, yaml.MappingNode):
        return
    for _, service in services.value:
        settings = _environment(text, _get(service, "environment"), launch)
        words: tuple[str | None, ...] = ()
        for key in ("entrypoint", "command"):
            command = _words(_get(service, key))
            if command is not None:
                launch.commands.append(command)
                words += command.words
        ran = program(words)
        built = _built_from(service)
        if ran is not None or (built is not None and not words):
            target, module = ran if ran is not None else ("", False)
            volumes, workdir = _volumes(service), _scalar(service, "working_dir")
            launch.runs.append(Run(target, module, tuple(settings), volumes, workdir, built))
        image = _get(service, "image")
        launch.processes.append(
            Process(
                "service",
                image.value if isinstance(image, yaml.ScalarNode) else None,
                _span(image if isinstance(image, yaml.ScalarNode) else service),
                tuple(settings),
                words,
                _compose_gpus(service),
                _add_to(text, service, "environment", _get(service, "environment")),
                _get(service, "env_file") is not None,
            )
        )


def _built_from(service: Any) -> str | None:
    """The Dockerfile a service's image is built from (`build: .`, or its `context` and
    `dockerfile`), as a path from the Compose file's folder; None where it names no build."""
    import yaml

    build = _get(service, "build")
    if isinstance(build, yaml.ScalarNode) and build.value:
        return posixpath.join(build.value, "Dockerfile")
    context = _scalar(build, "context")
    if isinstance(build, yaml.MappingNode):
        dockerfile = _scalar(build, "dockerfile") or "Dockerfile"
        return posixpath.join(context or ".", dockerfile)
    return None


def _volumes(service: Any) -> tuple[tuple[str, str], ...]:
    """(the container's path, the folder's path) of each of the service's bind mounts of a
    folder of the project (`.:/app`, `./src:/app/src`)."""
    import yaml

    volumes = _get(service, "volumes")
    found = []
    for item in volumes.value if isinstance(volumes, yaml.SequenceNode) else ():
        if isinstance(item, yaml.ScalarNode):
            host, _, rest = item.value.partition(":")
            container = rest.split(":")[0]
            if host.startswith(".") and container.startswith("/"):
                found.append((container.rstrip("/") or "/", host))
    return tuple(found)


def _scalar(node: Any, key: str) -> str | None:
    import yaml

    value = _get(node, key)
    return value.value if isinstance(value, yaml.ScalarNode) and value.value else None


def _compose_gpus(service: Any) -> bool:
    """A device reservation with the `gpu` capability, `gpus:`, or `runtime: nvidia`."""
    import yaml

    runtime = _get(service, "runtime")
    if _get(service, "gpus") is not None or (
        isinstance(runtime, yaml.ScalarNode) and runtime.value == "nvidia"
    ):
        return True
    devices = _get(_get(_get(_get(service, "deploy"), "resources"), "reservations"), "devices")
    for device in devices.value if isinstance(devices, yaml.SequenceNode) else ():
        capabilities = _get(device, "capabilities")
        for item in capabilities.value if isinstance(capabilities, yaml.SequenceNode) else ():
            if isinstance(item, yaml.ScalarNode) and item.value == "gpu":
                return True
    return False


def _kubernetes(text: str, document: Any, launch: LaunchFile) -> None:
    import yaml

    kind = _get(document, "kind")
    kind_name = kind.value if isinstance(kind, yaml.ScalarNode) else None
    if kind_name == "List":
        items = _get(document, "items")
        for item in items.value if isinstance(items, yaml.SequenceNode) else ():
            _kubernetes(text, item, launch)
        return
    if kind_name == "InferenceService":
        launch.kind = "kubernetes"
        _predictor(text, document, launch)
        return
    path = _WORKLOADS.get(kind_name or "")
    if path is None:
        return
    launch.kind = "kubernetes"
    spec = document
    for key in path:
        spec = _get(spec, key)
    for key in ("initContainers", "containers"):
        containers = _get(spec, key)
        for container in containers.value if isinstance(containers, yaml.SequenceNode) else ():
            image = _get(container, "image")
            name = image.value if isinstance(image, yaml.ScalarNode) else None
            launch.processes.append(_container(text, container, launch, "container", name))


def _predictor(text: str, document: Any, launch: LaunchFile) -> None:
    """KServe's TensorFlow predictor: `predictor.tensorflow`, or `predictor.model` whose
    `modelFormat.name` is tensorflow. KServe picks its image; the container's fields are
    these mappings'."""
    import yaml

    predictor = _get(_get(document, "spec"), "predictor")
    block = _get(predictor, "tensorflow")
    if block is None:
        model = _get(predictor, "model")
        name = _get(_get(model, "modelFormat"), "name")
        if isinstance(name, yaml.ScalarNode) and name.value.lower() == "tensorflow":
            block = model
    if isinstance(block, yaml.MappingNode):
        launch.processes.append(_container(text, block, launch, "predictor", None))


def _container(
    text: str, container: Any, launch: LaunchFile, where: str, image: str | None
) -> Process:
    import yaml

    settings = []
    env = _get(container, "env")
    for entry in env.value if isinstance(env, yaml.SequenceNode) else ():
        name = _get(entry, "name")
        if not isinstance(name, yaml.ScalarNode):
            continue
        value = _get(entry, "value")
        if isinstance(value, yaml.ScalarNode):
            settings.append(_scalar_setting(name.value, value, _span(entry), "env"))
        else:  # `valueFrom:`: from a ConfigMap, a Secret or a field
            settings.append(Setting(name.value, None, None, "", _span(entry), "env"))
    launch.settings.extend(settings)
    command, arguments = _words(_get(container, "command")), _words(_get(container, "args"))
    words: tuple[str | None, ...] = ()
    if command is not None or arguments is not None:
        words = (*(command.words if command else ()), *(arguments.words if arguments else ()))
        first = command or arguments
        last = arguments or command
        assert first is not None and last is not None
        launch.commands.append(Command(words, (first.span[0], last.span[1])))
    image_node = _get(container, "image")
    return Process(
        where,
        image,
        _span(image_node if image_node is not None else container),
        tuple(settings),
        words,
        _kubernetes_gpus(container),
        _add_to(text, container, "env", env),
        _get(container, "envFrom") is not None,
    )


def _kubernetes_gpus(container: Any) -> bool:
    import yaml

    resources = _get(container, "resources")
    for key in ("limits", "requests"):
        listed = _get(resources, key)
        if isinstance(listed, yaml.MappingNode) and any(
            isinstance(k, yaml.ScalarNode) and k.value.endswith("/gpu") for k, _ in listed.value
        ):
            return True
    return False


def _environment(text: str, node: Any, launch: LaunchFile) -> list[Setting]:
    """A Compose service's `environment:`, as a mapping or as a list of `NAME=value`."""
    import yaml

    settings = []
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and isinstance(value, yaml.ScalarNode):
                span = (key.start_mark.index, value.end_mark.index)
                settings.append(_scalar_setting(key.value, value, span, "environment"))
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            if isinstance(item, yaml.ScalarNode):
                settings.append(_listed_setting(text, item))
    launch.settings.extend(settings)
    return settings


# -- where one more variable goes ----------------------------------------------------------------
def _add_to(text: str, owner: Any, key: str, node: Any) -> tuple[int, str] | None:
    """Where a variable goes in `owner`'s `key` (Compose's `environment`, Kubernetes' `env`),
    and its text: after the last entry, as that entry is written; or, where `key` is not
    there, a new `key:` after `owner`'s last line. None for a flow-style collection, or one
    written on one line with its key."""
    import yaml

    if not isinstance(owner, yaml.MappingNode) or owner.flow_style or not owner.value:
        return None
    if node is None:
        indent = " " * owner.value[0][0].start_mark.column
        if key == "env":
            entry = f'{indent}env:\n{indent}  - name: {{name}}\n{indent}    value: "{{value}}"\n'
        else:
            entry = f'{indent}{key}:\n{indent}  {{name}}: "{{value}}"\n'
        return _after(text, owner), entry
    if getattr(node, "flow_style", False) or not getattr(node, "value", None):
        return None
    if isinstance(node, yaml.MappingNode):
        first_key = node.value[0][0]
        return _after(text, node), " " * first_key.start_mark.column + '{name}: "{value}"\n'
    if isinstance(node, yaml.SequenceNode):
        dash = " " * node.start_mark.column
        if key == "env":
            first = node.value[0]
            if not isinstance(first, yaml.MappingNode) or first.flow_style:
                return None
            keys = " " * first.start_mark.column
            entry = f'{dash}- name: {{name}}\n{keys}value: "{{value}}"\n'
        else:
            entry = f"{dash}- {{name}}={{value}}\n"
        return _after(text, node), entry
    return None


def _after(text: str, node: Any) -> int:
    """The offset where the line after a block collection's last value starts."""
    import yaml

    while (
        isinstance(node, (yaml.MappingNode, yaml.SequenceNode))
        and node.value
        and not (node.flow_style)
    ):
        last = node.value[-1]
        node = last[1] if isinstance(node, yaml.MappingNode) else last
    end = node.end_mark.index
    newline = text.find("\n", end)
    return len(text) if newline < 0 else newline + 1


def _scalar_setting(name: str, value: Any, span: Span, how: str) -> Setting:
    """A setting whose value is a YAML scalar of its own (`NAME: value`, `value: ...`)."""
    if value.tag == _NULL and not value.style:
        return Setting(name, None, None, "", span, how)  # from the shell that runs compose
    style = value.style or ""
    written = style in ("", '"', "'")
    return Setting(
        name,
        value.value,
        _span(value) if written else None,
        style if style in ('"', "'") else "",
        span,
        how,
        yaml_scalar=True,
        yaml_boolean=value.tag == _BOOLEAN and not style,
    )


def _listed_setting(text: str, item: Any) -> Setting:
    """`- NAME=value` in a Compose list: the value's own place where the scalar is written as
    it reads (plain, or quoted with no escape inside)."""
    name, equals, value = item.value.partition("=")
    start, end = _span(item)
    written = text[start:end]
    style = item.style or None  # libyaml's plain style is "", PyYAML's None
    inner = written[1:-1] if style in ('"', "'") else written
    value_span: Span | None = None
    if inner == item.value and style in (None, '"', "'"):
        value_start = start + (1 if style else 0) + len(name) + 1
        value_span = (value_start, value_start + len(value))
    return Setting(name, value if equals else None, value_span, "", (start, end), "environment")


def _words(node: Any) -> Command | None:
    """A command written as a list of strings, or as one string split at blanks."""
    import yaml

    if isinstance(node, yaml.SequenceNode):
        words = tuple(
            item.value if isinstance(item, yaml.ScalarNode) else None for item in node.value
        )
        return Command(words, _span(node))
    if isinstance(node, yaml.ScalarNode) and node.tag == _STRING:
        return Command(tuple(node.value.split()), _span(node))
    return None


def _comments(text: str) -> dict[int, str]:
    """Each row's comment: from a `#` at the line's start or after a blank, outside quotes."""
    found: dict[int, str] = {}
    for row, line in enumerate(text.splitlines(), start=1):
        quote = ""
        for index, char in enumerate(line):
            if quote:
                quote = "" if char == quote else quote
            elif char in ("'", '"') and (index == 0 or line[index - 1] in " \t:-[{,"):
                quote = char
            elif char == "#" and (index == 0 or line[index - 1] in " \t"):
                found[row] = line[index:]
                break
    return found
