"""Which backend Keras runs on, read statically as Keras reads it once, at `import keras`
(keras/src/backend/config.py): `KERAS_BACKEND`, else `keras.json`, else "tensorflow".

In order: a literal `os.environ["KERAS_BACKEND"]` (or `setdefault`, `update`) set in the module
before its first import of Keras; in a notebook, a `%env KERAS_BACKEND=...` line; the
configuration's `keras-backend` (for `keras.json` or the shell); otherwise Keras's default.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tfmemlint.names import Binding
from tfmemlint.rules.environment import EnvSetting, env_lines, env_settings

if TYPE_CHECKING:
    from tfmemlint.engine import FileContext

KERAS_BACKEND = "KERAS_BACKEND"
DEFAULT = "tensorflow"
# The packages that import Keras when they are imported, and so read its backend then.
KERAS_IMPORTERS = frozenset({"keras", "keras_hub", "keras_nlp", "keras_cv", "keras_tuner"})
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
    result = _read(ctx, first, settings, before, late)
    ctx.cache["keras_backend"] = result
    return result


def _read(
    ctx: FileContext,
    first: Binding | None,
    settings: tuple[EnvSetting, ...],
    before: list[EnvSetting],
    late: tuple[EnvSetting, ...],
) -> KerasBackend:
    if any(s.scope is not ctx.names.module_scope for s in settings):
        # Set in a function: when it runs, and so what Keras read, is the program's secret.
        return KerasBackend(None, SET_IN_A_FUNCTION, first, late)
    if before:
        values = {s.text.strip().lower() if s.text is not None else None for s in before}
        name = values.pop() if len(values) == 1 else None
        return KerasBackend(name, SET_IN_THE_MODULE, first, late)
    magics = [value for _, value in env_lines(ctx.layout.set_aside, (KERAS_BACKEND,)) if value]
    if magics:
        values = {value.lower() for value in magics}
        name = values.pop() if len(values) == 1 else None
        return KerasBackend(name, SET_BY_ENV_LINE, first, late)
    configured = ctx.policy.keras_backend
    if configured is not None:
        return KerasBackend(configured, CONFIGURED, first, late)
    return KerasBackend(DEFAULT, BY_DEFAULT, first, late)
