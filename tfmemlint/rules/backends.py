"""Which backend Keras runs on, read statically as Keras reads it once, at `import keras`
(keras/src/backend/config.py): `KERAS_BACKEND`, else `keras.json`, else "tensorflow".

In order: a literal `os.environ["KERAS_BACKEND"]` (or `setdefault`, `update`) set in the module
before its first import of Keras; in a notebook, a `%env KERAS_BACKEND=...` line above that
import; the configuration's `keras-backend` (for `keras.json` or the shell); otherwise Keras's
default.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tfmemlint.project.names import Binding
from tfmemlint.rules.environment import EnvLine, EnvSetting, env_lines, env_settings
from tfmemlint.rules.programs import KERAS_IMPORTERS

if TYPE_CHECKING:
    from tfmemlint.checking.engine import FileContext

KERAS_BACKEND = "KERAS_BACKEND"
DEFAULT = "tensorflow"
# How the backend was told, as the messages say it.
SET_IN_A_FUNCTION = "set in a function"
SET_IN_THE_MODULE = "set in the module"
SET_BY_ENV_LINE = "set by `%env`"
CONFIGURED = "configured"
BY_DEFAULT = "Keras's default"


@dataclass(frozen=True)
class KerasBackend:
    name: str | None  # None: it cannot be told (a value computed at run time, two values)
    how: str  # one of the ways above
    # The first import of Keras (or of a package that imports it) in the module body.
    keras_import: Binding | None
    # Settings made in the module body after that import, which Keras never reads.
    late: tuple[EnvSetting, ...]
    # A notebook's `%env` lines in cells after that import, which Keras never reads either.
    late_lines: tuple[EnvLine, ...] = ()

    @property
    def is_tensorflow(self) -> bool:
        return self.name == DEFAULT

    @property
    def by_default(self) -> bool:
        return self.how == BY_DEFAULT


def keras_import(ctx: FileContext) -> Binding | None:
    """The module body's first import of Keras or of a package that imports it."""
    return next(
        (
            binding
            for binding in ctx.names.module_body_imports()
            if (binding.qualified or "").split(".")[0] in KERAS_IMPORTERS
        ),
        None,
    )


def keras_backend(ctx: FileContext) -> KerasBackend:
    cached = ctx.cache.get("keras_backend")
    if isinstance(cached, KerasBackend):
        return cached
    first = keras_import(ctx)
    settings = tuple(env_settings(ctx.names, (KERAS_BACKEND,))) if KERAS_BACKEND in ctx.text else ()
    module_scope = ctx.names.module_scope
    limit = first.order if first is not None else None
    before = [s for s in settings if s.scope is module_scope and (limit is None or s.order < limit)]
    late = tuple(
        s for s in settings if s.scope is module_scope and limit is not None and s.order > limit
    )
    early_lines: list[EnvLine] = []
    late_lines: list[EnvLine] = []
    lines = list(env_lines(ctx.layout, (KERAS_BACKEND,)))
    import_row = _row(ctx, first) if lines else None
    for line in lines:
        is_late = import_row is not None and line.row > import_row
        (late_lines if is_late else early_lines).append(line)
    name, how = _read(ctx, settings, before, early_lines)
    result = KerasBackend(name, how, first, late, tuple(late_lines))
    ctx.cache["keras_backend"] = result
    return result


def _row(ctx: FileContext, binding: Binding | None) -> int | None:
    if binding is None or binding.statement is None:
        return None
    return ctx.lines.location(ctx.span(binding.statement)[0]).row


def _read(
    ctx: FileContext,
    settings: tuple[EnvSetting, ...],
    before: list[EnvSetting],
    early_lines: list[EnvLine],
) -> tuple[str | None, str]:
    """The backend Keras read at its first import, and how it was told."""
    if any(s.scope is not ctx.names.module_scope for s in settings):
        # Set in a function: when it runs, and so what Keras read, is the program's secret.
        return None, SET_IN_A_FUNCTION
    if before:
        values = {s.text.strip().lower() if s.text is not None else None for s in before}
        name = values.pop() if len(values) == 1 else None
        return name, SET_IN_THE_MODULE
    magics = [line.value for line in early_lines if line.value]
    if magics:
        values = {value.lower() for value in magics}
        name = values.pop() if len(values) == 1 else None
        return name, SET_BY_ENV_LINE
    configured = ctx.policy.keras_backend
    if configured is not None:
        return configured, CONFIGURED
    return DEFAULT, BY_DEFAULT
