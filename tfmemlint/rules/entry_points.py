"""Where a program starts: whether a module is an entry point (a notebook, a `__main__` guard that
is not a test suite's, a runner such as `absl.app.run`, a click or typer command, a script entry
of the project, training at module level: Keras's `fit`, a `GradientTape`, a loop over a
`tf.data` dataset; a script with no guard at all), which of its functions run beyond its
body, and which project modules its body imports.
Shared by the families that look at programs; the spellings are in `programs.py`."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, NamedTuple

import libcst as cst

from tfmemlint.project.names import Ancestry, Binding, CallSite, dotted_name
from tfmemlint.rules import literals
from tfmemlint.rules.programs import (
    CLI_DECORATORS,
    CLI_METHODS,
    DJANGO,
    DJANGO_PACKAGES,
    DJANGO_SETTINGS_MODULES,
    DJANGO_SETTINGS_NAME,
    DJANGO_VIEW_MODULES,
    PARTIAL,
    PROJECT_APP_METHODS,
    ROUTERS,
    RUNNERS,
    SERVED_APPS,
    SERVICE_DECORATORS,
    TASK_DECORATORS,
    TEST_MODULE,
    TEST_RUNNERS,
    TF_RUNNER,
    TRAINING_METHODS,
    in_a_script_folder,
    may_run_as_a_script,
)

if TYPE_CHECKING:
    from tfmemlint.checking.engine import FileContext


def is_main_guard(statement: cst.CSTNode) -> bool:
    """`if __name__ == "__main__":`, either way round."""
    if not isinstance(statement, cst.If) or not isinstance(statement.test, cst.Comparison):
        return False
    test = statement.test
    if len(test.comparisons) != 1 or not isinstance(test.comparisons[0].operator, cst.Equal):
        return False
    sides = [test.left, *(c.comparator for c in test.comparisons)]
    return any(isinstance(s, cst.Name) and s.value == "__name__" for s in sides) and any(
        literals.string(s) == "__main__" for s in sides
    )


def runs_tests(guard: cst.CSTNode) -> bool:
    """A guard that ends by running the module's tests (`tf.test.main()`, `absltest.main()`,
    `pytest.main([__file__])`), after simple statements that set them up (a JAX or TensorFlow
    option): the module is a suite of test cases, which pytest imports without it, not a
    program. By spelling; the pre-filter's `TEST_GUARD` tells the plainest of them from the
    text."""
    if not isinstance(guard, cst.If) or guard.orelse is not None:
        return False
    if not isinstance(guard.body, cst.IndentedBlock) or not guard.body.body:
        return False
    lines = guard.body.body
    if not all(isinstance(line, cst.SimpleStatementLine) for line in lines):
        return False
    last = lines[-1].body[-1]  # type: ignore[attr-defined]
    return (
        isinstance(last, cst.Expr)
        and isinstance(last.value, cst.Call)
        and dotted_name(last.value.func) in (*TEST_RUNNERS, "pytest.main")
    )


def entry_point(ctx: FileContext) -> tuple[cst.FunctionDef, ...] | None:
    """None for a library module; for an entry point, the functions that run beyond its body:
    the click or typer commands it defines, the functions its script entries name."""
    if ctx.layout.separator is not None:
        return ()  # a notebook
    body = ctx.module.body
    names = ctx.names
    functions = {s.name.value: s for s in body if isinstance(s, cst.FunctionDef)}
    commands = tuple(f for f in functions.values() if is_command(ctx, f))
    project = names.project
    scripts = project.script_functions() if project is not None else frozenset()
    run_by_scripts = tuple(functions[name] for name in sorted(scripts) if name in functions)
    if commands or run_by_scripts:
        return commands + run_by_scripts
    if any(is_main_guard(statement) and not runs_tests(statement) for statement in body):
        return ()
    for site in names.calls:
        if site.scope is not names.module_scope:
            continue  # in a function or class: it runs when (if) that is called
        if runner(ctx, site) is not None:
            return ()
        if trains(ctx, site.node.func):
            return ()
        if names.api_of(site.node.func, site.scope, site.order) == "GradientTape":
            return ()  # a training loop of its own, at module level
    if any(
        isinstance(statement, cst.For) and _a_dataset(ctx, statement.iter) for statement in body
    ):
        return ()  # a loop over a tf.data dataset, at module level
    return () if is_a_script(ctx) else None


# A script's module-level statements that do something, rather than define names.
ACTIONS = (cst.For, cst.While, cst.With)


def is_a_script(ctx: FileContext) -> bool:
    """A module with no `__main__` guard that is run as a script (a tutorial, a Colab export):
    it sits outside any package (no `__init__.py` beside it; a module in a package is imported
    by name) or in a folder of scripts (`examples/`, `tools/`), no module beside it imports it
    (a helper of the scripts there), it is no test module, and it does something at module
    level, a call whose result is not kept (`print(...)`, `plot(...)`) or a loop, rather than
    only define names as a library does. Whether that code starts TensorFlow is the walk's
    to say."""
    if not may_run_as_a_script(ctx.filename):
        return False
    if not any(_acts(statement) for statement in ctx.module.body):
        return False
    project = ctx.names.project
    if project is None:
        folder = os.path.dirname(ctx.filename) or "."
        return not os.path.isfile(os.path.join(folder, "__init__.py"))
    placed = in_a_script_folder(project.display(project.importer)) or not project.in_a_package()
    return placed and not project.imported_beside()


def _acts(statement: cst.BaseStatement) -> bool:
    if isinstance(statement, ACTIONS):
        return True
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    return any(
        isinstance(line, cst.Expr) and isinstance(line.value, cst.Call) for line in statement.body
    )


# What a server runs of a module: a function (a route, a task), or a class it builds and whose
# methods it calls (a deployment, a service, a class-based view).
Handler = cst.FunctionDef | cst.ClassDef


class Served(NamedTuple):
    """A program that a server imports (its `__main__` guard never runs there): `server` as
    messages name it; what of the module it runs as handlers."""

    server: str
    handlers: tuple[Handler, ...]


def served_program(ctx: FileContext) -> Served | None:
    """The module as a server runs it, if one does: it makes a WSGI or ASGI app, a Celery app
    or a router of one at module level, defines a task, a Ray Serve deployment or a BentoML
    service, or holds Django's views (`programs.py` lists them). Not a test module, which
    pytest imports. (Streamlit and Gradio run a script as `__main__`: `is_a_script` tells
    it.)"""
    if TEST_MODULE.match(os.path.basename(ctx.filename)):
        return None
    django = _served_by_django(ctx)
    if django is not None:
        return django
    names = ctx.names
    registries: dict[str, str] = {}  # a module name bound to an app or router: its server
    for line in ctx.module.body:
        if not isinstance(line, cst.SimpleStatementLine):
            continue
        for small in line.body:
            if not (isinstance(small, cst.Assign) and isinstance(small.value, cst.Call)):
                continue
            site = names.call_site(small.value)
            if site is None:
                continue
            qualified = names.qualified_names(site.node.func, site.scope, site.order) or set()
            server = next(filter(None, map(_server_of, sorted(qualified))), None)
            for target in small.targets if server is not None else ():
                if isinstance(target.target, cst.Name):
                    registries[target.target.value] = server
    handlers: list[Handler] = []
    servers: list[str] = list(registries.values())
    for statement in ctx.module.body:
        if not isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            continue
        for decorator in statement.decorators:
            server = _registers(ctx, decorator.decorator, registries, statement)
            if server is not None:
                handlers.append(statement)
                servers.append(server)
                break
    return Served(servers[0], tuple(handlers)) if servers else None


def _served_by_django(ctx: FileContext) -> Served | None:
    """A module of Django views (`views.py`, or one of a `views` package) that imports Django
    or its REST framework: its public functions and classes are views, which `urls.py` names
    and each worker process of the server runs. Or the project's settings (`settings.py`, or
    one of a `settings` package, that sets INSTALLED_APPS), which each worker imports."""
    path = ctx.filename.replace("\\", "/")
    folder, _, name = path.rpartition("/")
    names = (name.removesuffix(".py"), folder.rpartition("/")[2])
    if DJANGO_SETTINGS_MODULES in names and DJANGO_SETTINGS_NAME in ctx.names.module_scope.bindings:
        return Served(DJANGO, ())
    if DJANGO_VIEW_MODULES not in names:
        return None
    imported = {
        (binding.qualified or "").split(".")[0] for binding in ctx.names.module_body_imports()
    }
    if not imported & DJANGO_PACKAGES:
        return None
    views = tuple(
        statement
        for statement in ctx.module.body
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef))
        and not statement.name.value.startswith("_")
    )
    return Served(DJANGO, views)


def _app_of_the_project(ctx: FileContext, name: cst.Name) -> str | None:
    """The server of an app or router that the module imports from a project module which
    makes one (`from .worker import celery`, where `worker.py` calls `Celery(...)`)."""
    project = ctx.names.project
    spelled = ctx.names.spelled_names(name, ctx.names.module_scope, sys.maxsize) or set()
    if project is None or len(spelled) != 1:
        return None
    head = next(iter(spelled)).rpartition(".")[0]
    path = project.module(head) if head.strip(".") else None
    if path is None:
        return None
    for maker, server in {**SERVED_APPS, **ROUTERS}.items():
        if project.mentions(path, (maker.rpartition(".")[2].encode() + b"(",)):
            return server
    return None


def _server_of(qualified: str) -> str | None:
    return SERVED_APPS.get(qualified) or ROUTERS.get(qualified)


def _registers(
    ctx: FileContext,
    decorator: cst.BaseExpression,
    registries: dict[str, str],
    decorated: Handler,
) -> str | None:
    """The server whose handler a decorator makes of what it decorates: a method of an app or
    router the module made (`@app.route("/")`, `@router.post(...)`, `@celery.task`), a task
    decorator (`@shared_task`, RQ's `@job`), or a deployment's or service's
    (`@serve.deployment`, `@bentoml.service`), which also makes one of a class."""
    expr = decorator.func if isinstance(decorator, cst.Call) else decorator
    names = ctx.names
    qualified = names.qualified_names(expr, names.module_scope, sys.maxsize) or set()
    service = next(filter(None, map(SERVICE_DECORATORS.get, sorted(qualified))), None)
    if service is not None or isinstance(decorated, cst.ClassDef):
        return service
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name):
        found = registries.get(expr.value.value)
        if found is not None:
            return found
        if expr.attr.value in PROJECT_APP_METHODS:
            found = _app_of_the_project(ctx, expr.value)
            if found is not None:
                return found
    return next(filter(None, map(TASK_DECORATORS.get, sorted(qualified))), None)


def _a_dataset(ctx: FileContext, expr: cst.BaseExpression) -> bool:
    """Whether an expression is a `tf.data` dataset: made by a `tf.data` call, through its
    methods (`ds.batch(2).take(3)`), or a name bound once to one."""
    names = ctx.names
    scope = names.module_scope
    while isinstance(expr, cst.Call):
        if (names.api_of(expr.func, scope, sys.maxsize) or "").startswith("data."):
            return True
        if not isinstance(expr.func, cst.Attribute):
            return False
        expr = expr.func.value
    if isinstance(expr, cst.Name):
        found = names.lookup(expr.value, scope, sys.maxsize)
        bound = found[1] if found is not None else []
        if len(bound) == 1 and bound[0].kind == "assign" and bound[0].value is not None:
            value = bound[0].value
            return isinstance(value, cst.Call) and _a_dataset(ctx, value)
    return False


def trains(ctx: FileContext, func: cst.BaseExpression) -> bool:
    """`model.fit`, `evaluate`, `predict`... in a module that uses Keras: the same names in
    scikit-learn's API train no TensorFlow model."""
    is_method = isinstance(func, cst.Attribute) and func.attr.value in TRAINING_METHODS
    return is_method and "keras" in ctx.text


def is_command(
    ctx: FileContext, function: cst.FunctionDef, seen: frozenset[int] = frozenset()
) -> bool:
    """A click or typer command: `@click.command()`, `@cli.command()` on a click group,
    `@app.command()` on a `typer.Typer()`."""
    if id(function) in seen:
        return False  # a decorator that names its own function
    seen = seen | {id(function)}
    for decorator in function.decorators:
        expr = decorator.decorator
        if isinstance(expr, cst.Call):
            expr = expr.func
        spelled = dotted_name(expr) or ""
        site_scope = ctx.names.module_scope
        names = ctx.names.spelled_names(expr, site_scope, sys.maxsize) or set()
        if any(name.startswith(CLI_DECORATORS) for name in names):
            return True
        head, _, attribute = spelled.rpartition(".")
        if attribute in CLI_METHODS and head and "." not in head:
            found = ctx.names.lookup(head, site_scope, sys.maxsize)
            bindings = found[1] if found else []
            if any(makes_cli(ctx, binding, seen) for binding in bindings):
                return True
    return False


def makes_cli(ctx: FileContext, binding: Binding, seen: frozenset[int]) -> bool:
    """`app = typer.Typer()`, or a function that is itself a click group."""
    if isinstance(binding.statement, cst.FunctionDef):
        return is_command(ctx, binding.statement, seen)
    if binding.kind == "assign" and isinstance(binding.value, cst.Call):
        spelled = ctx.names.spelled_names(binding.value.func, binding.scope, binding.order)
        return any(name.startswith(CLI_DECORATORS) for name in spelled or ())
    return False


def runner(ctx: FileContext, site: CallSite) -> list[cst.BaseExpression] | None:
    """For a call that runs a program's main function, the functions it runs (`main` in
    `app.run(main)`, `app.run(main=main)`, `app.run(functools.partial(main, cfg))` and
    `functools.partial(app.run, main)`); None for any other call."""
    names = ctx.names
    func, args = site.node.func, list(site.node.args)
    qualified = names.qualified_names(func, site.scope, site.order) or set()
    if PARTIAL in qualified and args and args[0].keyword is None and not args[0].star:
        func, args = args[0].value, args[1:]  # the runner and what it is given, bound now
        qualified = names.qualified_names(func, site.scope, site.order) or set()
    is_tf_runner = names.api_of(func, site.scope, site.order) == TF_RUNNER
    if not (qualified & RUNNERS or is_tf_runner):
        return None
    run = [
        arg.value
        for arg in args
        if not arg.star and (arg.keyword is None or arg.keyword.value == "main")
    ][:1]
    if run and isinstance(run[0], cst.Call):  # functools.partial(main, ...)
        inner = run[0]
        spelled = names.qualified_names(inner.func, site.scope, site.order) or set()
        if PARTIAL in spelled and inner.args and inner.args[0].keyword is None:
            run = [inner.args[0].value]
    if not run and is_tf_runner:
        run = [cst.Name("main")]  # it calls the main module's `main`
    return run


# -- the entry's imports -------------------------------------------------------------------------
def top_index(ctx: FileContext, binding: Binding) -> int:
    """Which statement of the module body made the binding."""
    ancestry = list(binding.ancestry or ())
    return next(i for i, s in enumerate(ctx.module.body) if any(s is a for a in ancestry))


def project_imports(ctx: FileContext) -> list[tuple[Binding, str]]:
    """The module body's imports of the project's own modules, in order, each with its file."""
    project = ctx.names.project
    assert project is not None
    found = []
    imports = ctx.names.module_body_imports()
    for binding in sorted([*imports, *star_imports(ctx, imports)], key=lambda b: b.order):
        qualified = binding.qualified or ""
        if not qualified or qualified.startswith("__future__"):
            continue
        path = project.module_of(qualified)
        if path is not None:
            found.append((binding, path))
    return found


def star_imports(ctx: FileContext, imports: list[Binding]) -> Iterator[Binding]:
    """A binding for each `from module import *` line of the module body, which binds no name
    the names table keeps: where a finding and a fix can stand, as at any import. Its order
    is that of the next import's, so that what came before it still comes before."""
    scope = ctx.names.module_scope
    module_node = Ancestry(ctx.module, None)
    for index, statement in enumerate(ctx.module.body):
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            continue
        small = statement.body[0]
        if not isinstance(small, cst.ImportFrom) or not isinstance(small.names, cst.ImportStar):
            continue
        if small.relative or small.module is None:
            continue  # the project index names no file for `from . import *`
        later = [b.order for b in imports if top_index(ctx, b) > index]
        order = min(later) if later else sys.maxsize
        ancestry = Ancestry(statement, module_node)
        yield Binding("*", scope, "import", order, small, ancestry, dotted_name(small.module))
