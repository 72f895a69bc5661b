"""Whether a module may be an entry point, told from CPython's syntax tree (a tenth of libcst's
parse): the pre-filter's second stage asks it for the families that report only programs
(TFM205's, JAX's). It asks what `entry_points.entry_point` asks, of the same spellings, so that
a module it sets aside is one the rules would set aside too; both take their spellings from
`programs.py`, so that the two cannot drift apart."""

from __future__ import annotations

import ast
import functools
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, TypeGuard

from tfmemlint.project.module_summary import (
    ModuleSummary,
    dotted,
    imported_names,
    member,
    star_import,
    summarize,
)
from tfmemlint.reading.source import LineIndex
from tfmemlint.rules.programs import (
    CLI_DECORATORS,
    CLI_METHODS,
    DJANGO_PACKAGES,
    DJANGO_SETTINGS_NAME,
    PARTIAL,
    PROJECT_APP_METHODS,
    ROUTERS,
    RUNNERS,
    SERVED_APPS,
    SERVICE_DECORATORS,
    TASK_DECORATORS,
    TEST_RUNNERS,
    TF_RUNNER,
    TRAINING_METHODS,
    in_a_script_folder,
    may_run_as_a_script,
)

if TYPE_CHECKING:
    from tfmemlint.project.index import FileResolver

# How deep `names.spelled_names` follows attributes and aliases; deeper, a name may be anything.
MAX_SPELLING_DEPTH = 8
# The keyword of a `global` statement, then a space or a backslash (see `_may_declare_global`).
_GLOBAL_KEYWORD = re.compile(r"global[ \t\f\\]")


def names_as_written(text: str) -> bool:
    """Whether CPython's tree spells every name as the text does, as libcst's does. CPython
    puts each identifier in NFKC form (PEP 3131: a `tf` spelled in full-width letters is `tf`
    to it, not to the rule), which changes nothing in a text already in that form."""
    return text.isascii() or unicodedata.is_normalized("NFKC", text)


def may_be_an_entry(
    tree: ast.Module, text: str, project: Callable[[], FileResolver | None]
) -> bool:
    """Whether `entry_points.entry_point` may take the module for an entry point: False only where
    it surely does not. (A notebook always is one, and so is the module of a script entry of
    pyproject.toml, which the pre-filter asks the project about itself.) It asks of the same
    spellings: a `__main__` guard that does more than run tests; at module level, a call that
    trains a model or may run a main function; a function whose decorator may make it a click
    or typer command; what a server may run (`served_program`); a script with no guard
    (`is_a_script`). Names resolve as the rule resolves them, through the project's modules
    and, for a name the module's scope never binds, its star imports; where a name may stand
    for anything, it may. `text`: the source, decoded; `project`: the file's view of the
    project index, asked for if needed."""
    guards = [statement for statement in tree.body if may_be_main_guard(statement)]
    if guards:
        lines = LineIndex(text)
        if not all(_runs_tests(guard, lines) for guard in guards):
            return True
    at_import = list(runs_at_import(tree))
    calls = [node for node in at_import if isinstance(node, ast.Call)]
    if any(_trains(call.func) for call in calls):
        return True
    if any(_spelled_last(call.func) == "GradientTape" for call in calls):
        return True  # a training loop at module level
    names = _Names(tree, text, at_import, project)
    if _may_loop_over_a_dataset(tree, text, names):
        return True
    decorators = _decorators(tree, (ast.FunctionDef, ast.AsyncFunctionDef))
    if _may_be_served(tree, text, at_import, decorators):
        return True  # a server may import it (`entry_points.served_program`)
    if any(_acts(statement) for statement in tree.body):
        resolver = project()
        if resolver is None or (
            may_run_as_a_script(resolver.filename)
            and (
                in_a_script_folder(resolver.display(resolver.importer))
                or not resolver.in_a_package()
            )
        ):
            return True  # a script with no guard (`entry_points.is_a_script`)
    if any(_cli_method(decorator) for decorator in decorators):
        return True
    classes = _decorators(tree, (ast.ClassDef,))
    if not calls and not decorators and not classes:
        return False
    spellings, resolved = names.spellings, names.resolved
    for decorator in (*decorators, *classes):
        spelled = spellings.of(decorator)
        if spelled is None or any(name.startswith(CLI_DECORATORS) for name in spelled):
            return True
        if resolved.of(spelled) & _HANDLER_DECORATORS:
            return True  # a task or a service, whatever module passes it on
    called: set[str] = set()
    for call in calls:
        spelled = spellings.of(call.func)
        if spelled is None:
            return True
        qualified = resolved.of(spelled)
        if qualified & _APP_MAKERS or any(
            name.rpartition(".")[2] == "GradientTape" for name in qualified
        ):
            return True  # an app or a router; a training loop (the rule asks `api_of`)
        if PARTIAL in qualified and call.args:
            bound = spellings.of(call.args[0])  # functools.partial(app.run, main)
            if bound is None:
                return True
            spelled |= bound
        called |= spelled
    return any(runs_a_main(qualified) for qualified in resolved.of(called))


# The statements that take decorators.
_Decorated = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def _decorators(tree: ast.Module, kinds: tuple[type[_Decorated], ...]) -> list[ast.expr]:
    """What decorates the module body's statements of those kinds, as called (`@app.route`
    of `@app.route("/")`)."""
    return [
        decorator.func if isinstance(decorator, ast.Call) else decorator
        for statement in tree.body
        if isinstance(statement, kinds)
        for decorator in statement.decorator_list
    ]


class _Resolved:
    """What names spelled in the module stand for, as `names.qualified_names` resolves them:
    through the project's own modules, once each."""

    def __init__(self, project: Callable[[], FileResolver | None]) -> None:
        self._project = project
        self._known: dict[str, frozenset[str]] = {}

    def of(self, spelled: Iterable[str]) -> set[str]:
        found: set[str] = set()
        for name in spelled:
            if name not in self._known:
                resolver = self._project()
                qualified = resolver.resolve((name,)) if resolver is not None else {name}
                self._known[name] = frozenset(qualified or ())
            found |= self._known[name]
        return found


class _Names:
    """How the module's names are spelled and what they stand for, as the rule resolves them
    (`_Spellings`, `_Resolved`): made on first use, as most modules are told without them."""

    def __init__(
        self,
        tree: ast.Module,
        text: str,
        at_import: list[ast.AST],
        project: Callable[[], FileResolver | None],
    ) -> None:
        self._tree, self._text, self._at_import, self._project = tree, text, at_import, project

    @functools.cached_property
    def spellings(self) -> _Spellings:
        # A name of the module's scope is bound outside function bodies, or under `global`.
        at_import = self._at_import
        bound = ast.walk(self._tree) if _may_declare_global(self._text) else at_import
        return _Spellings(bound, self._tree, self._project, every_scope=bound is not at_import)

    @functools.cached_property
    def resolved(self) -> _Resolved:
        return _Resolved(self._project)


def _may_loop_over_a_dataset(tree: ast.Module, text: str, known: _Names) -> bool:
    """Whether a loop of the module body may go over a `tf.data` dataset, as
    `entry_points._a_dataset` asks of it: a call of `tf.data` (one whose name, as the rule
    resolves it, has a part `data`: its TF API then may start `data.`), or of a method of one
    (`ds.batch(2)`), or a name the module's scope binds to a call's result (`ds =
    tf.data.Dataset.range(3)`); never a list, an attribute, a name bound otherwise
    (TensorFlow's `for _name in _master_property_list`) or another call
    (`_sysconfig.get_scheme_names()`)."""
    loops = [s.iter for s in tree.body if isinstance(s, (ast.For, ast.AsyncFor))]
    names: set[str] = set()
    for over in loops:
        while isinstance(over, ast.Call):
            spelled = known.spellings.of(over.func)
            if spelled is None or any(
                "data" in name.split(".") for name in known.resolved.of(spelled)
            ):
                return True
            if not isinstance(over.func, ast.Attribute):
                break
            over = over.func.value
        if isinstance(over, ast.Name):
            names.add(over.id)
    if not names:
        return False
    if _may_declare_global(text) and not names.isdisjoint(_declared_global(tree)):
        return True  # a function may bind one
    summary = summarize(tree)
    return summary is None or not names.isdisjoint(summary.bound_to_calls)


def _declared_global(tree: ast.Module) -> set[str]:
    """The names that the module's `global` statements declare, wherever they are (TensorFlow's
    `variable_scope.py` declares one, and loops at module level over lists of others)."""
    return {name for node in ast.walk(tree) if isinstance(node, ast.Global) for name in node.names}


def _may_declare_global(text: str) -> bool:
    """Whether a `global` statement may be in the text: the keyword where a statement may start
    (a line's start, after a lone CR too, after `;` or a header's `:`). Prose in a docstring
    may pass too. (The keyword is searched for first: a pattern that starts with a line's
    start is tried at every character.)"""
    for match in _GLOBAL_KEYWORD.finditer(text):
        before = match.start() - 1
        while before >= 0 and text[before] in " \t\f":
            before -= 1
        if before < 0 or text[before] in "\n\r;:":
            return True
    return False


# What `entry_points.served_program` knows: the packages of the servers, the names of what
# makes an app or a router, and of the task decorators.
_SERVED = (*SERVED_APPS, *ROUTERS, *TASK_DECORATORS, *SERVICE_DECORATORS)
_SERVER_ROOTS = frozenset(name.split(".")[0] for name in _SERVED) | DJANGO_PACKAGES
_SERVER_NAMES = frozenset(name.rpartition(".")[2] for name in _SERVED)
_APP_MAKERS = frozenset({*SERVED_APPS, *ROUTERS})
_HANDLER_DECORATORS = frozenset({*TASK_DECORATORS, *SERVICE_DECORATORS})


def _may_be_served(
    tree: ast.Module, text: str, at_import: list[ast.AST], decorators: list[ast.expr]
) -> bool:
    """Whether a server may import the module: it names Django's INSTALLED_APPS (its settings,
    however they bind it: `+=`, under `global`), imports a server's package at import time
    (in a `try` too), makes an app or router at module level, or decorates a function with a
    task decorator or a handler method, whatever module the names come from (a project
    module may pass them on)."""
    if DJANGO_SETTINGS_NAME in text:
        return True
    for node in at_import:
        if isinstance(node, ast.Import):
            roots = {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            roots = {(node.module or "").split(".")[0]}
        else:
            continue
        if roots & _SERVER_ROOTS:
            return True
    for statement in tree.body:
        made = statement.value if isinstance(statement, ast.Assign) else None
        if isinstance(made, ast.Call) and _spelled_last(made.func) in _SERVER_NAMES:
            return True
    return any(
        _spelled_last(decorator) in _SERVER_NAMES
        or (isinstance(decorator, ast.Attribute) and decorator.attr in PROJECT_APP_METHODS)
        for decorator in decorators
    )


def _acts(statement: ast.stmt) -> bool:
    """What `entry_points._acts` says of libcst's tree: a loop, a `with`, or a call whose
    result is not kept."""
    if isinstance(statement, (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith)):
        return True
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)


def runs_a_main(qualified: str) -> bool:
    """Whether a call of `qualified` may run a program's main function: one of RUNNERS, or a
    name that `tensorflow_api.canonical_api` may read as TF_RUNNER."""
    return qualified in RUNNERS or qualified == TF_RUNNER or qualified.endswith("." + TF_RUNNER)


def may_be_main_guard(statement: ast.stmt) -> TypeGuard[ast.If]:
    """`if __name__ == ...:`, either way round (`entry_points.is_main_guard` also wants `"__main__"`
    as a plain string literal, which CPython's tree cannot tell from concatenated ones)."""
    if not isinstance(statement, ast.If) or not isinstance(statement.test, ast.Compare):
        return False
    test = statement.test
    if len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
        return False
    sides = (test.left, *test.comparators)
    return any(isinstance(side, ast.Name) and side.id == "__name__" for side in sides)


def _runs_tests(guard: ast.If, lines: LineIndex) -> bool:
    """What `entry_points.runs_tests` says of libcst's tree: no `else`, and an indented block (not
    a suite on the `if` line) of calls of TEST_RUNNERS alone."""
    if guard.orelse or not all(
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Call)
        and dotted(statement.value.func) in TEST_RUNNERS
        for statement in guard.body
    ):
        return False
    # The block's first statement opens its line (`if __name__ == "__main__": test.main()`
    # is a suite, and so is one after `):` on a line of its own), and no backslash joins that
    # line to the one before (outside brackets, only a backslash joins lines).
    first = guard.body[0]
    test_ends = guard.test.end_lineno or guard.lineno
    if not test_ends < first.lineno <= len(lines.starts):
        return False
    line_start = lines.starts[first.lineno - 1]
    indent = lines.text[line_start : lines.utf8_offset(first.lineno, first.col_offset)]
    joined = any(lines.line(row).endswith("\\") for row in range(test_ends, first.lineno))
    return not indent.strip(" \t\f") and not joined


def _spelled_last(func: ast.expr) -> str | None:
    """The last name of a call's function: `GradientTape` of `tf.GradientTape`."""
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else None


def _trains(func: ast.expr) -> bool:
    """`model.fit`, as `entry_points.trains` spells it (it also wants the word `keras`)."""
    return isinstance(func, ast.Attribute) and func.attr in TRAINING_METHODS


def _cli_method(decorator: ast.expr) -> bool:
    """`@cli.command()`: `entry_points.is_command` asks what `cli` is; it may be a click group."""
    return (
        isinstance(decorator, ast.Attribute)
        and decorator.attr in CLI_METHODS
        and isinstance(decorator.value, ast.Name)
    )


class _Spellings:
    """The names that the nodes bind by an import or a plain alias (`run = app.run`): given
    every node that may bind a name of the module's scope, a reference there may be spelled as
    no more than `names.spelled_names` spells it, which counts only some of those bindings and
    gives up on any other kind."""

    def __init__(
        self,
        nodes: Iterable[ast.AST],
        tree: ast.Module,
        project: Callable[[], FileResolver | None],
        every_scope: bool,
    ) -> None:
        """`nodes`: every node that may bind a name of the module's scope, from `tree`;
        `every_scope`: they come from every scope (a function's `global` may bind one there),
        so where a name of the module's scope comes from, the module's statements cannot
        tell."""
        self.imports: dict[str, set[str]] = {}
        self.aliases: dict[str, list[ast.expr]] = {}
        self.star = False
        self._tree, self._project, self._every_scope = tree, project, every_scope
        self._module: ModuleSummary | None = None
        self._summarized = False  # `_module` is summarized when first needed
        # Each name's spellings, by depth: aliases of aliases may share names many times over.
        self._known: dict[tuple[str, int], set[str] | None] = {}
        for node in nodes:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self.star = self.star or star_import(node) is not None
                for name, qualified in imported_names(node):
                    self.imports.setdefault(name, set()).add(qualified)
            elif isinstance(node, ast.Assign) and len(node.targets) == 1:
                self._alias(node.targets[0], node.value)
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                self._alias(node.target, node.value)

    def _module_summary(self) -> ModuleSummary | None:
        """The module's own bindings and star imports; None where it nests too deeply."""
        if not self._summarized:
            self._module, self._summarized = summarize(self._tree), True
        return self._module

    def _from_a_star(self, name: str, stars: list[str]) -> set[str] | None:
        """A name no statement of the module's scope binds, as `names.spelled_names` spells it
        from the star imports (a bound one it never looks for there): from the one that binds
        it, as the project index tells, or from the only one outside the project."""
        project = self._project()
        if project is not None:
            source = project.star_source(stars, name)
            return set() if source is None else {member(source, name)}
        absolute = [star for star in stars if not star.startswith(".")]
        return {member(absolute[0], name)} if len(absolute) == 1 else None

    def _alias(self, target: ast.expr, value: ast.expr) -> None:
        if isinstance(target, ast.Name) and (
            isinstance(value, ast.Attribute) or _as_name(value) is not None
        ):
            self.aliases.setdefault(target.id, []).append(value)

    def of(self, expr: ast.expr, depth: int = 0) -> set[str] | None:
        """What `expr` may be spelled as; None where it may be anything."""
        if depth > MAX_SPELLING_DEPTH:
            return None
        if isinstance(expr, ast.Attribute):
            heads = self.of(expr.value, depth + 1)
            return None if heads is None else {f"{head}.{expr.attr}" for head in heads}
        name = _as_name(expr)
        if name is None:
            return set()  # a call's result, a subscript: spelled as nothing
        if self.star:
            module = None if self._every_scope else self._module_summary()
            if module is None:
                return None
            if name not in module.bindings:
                return self._from_a_star(name, module.stars)
        key = (name, depth)
        if key not in self._known:
            self._known[key] = self._name(name, depth)
        return self._known[key]

    def _name(self, name: str, depth: int) -> set[str] | None:
        found = set(self.imports.get(name, ()))
        for value in self.aliases.get(name, ()):
            inner = self.of(value, depth + 1)
            if inner is None:
                return None
            found |= inner
        return found


def _as_name(expr: ast.expr) -> str | None:
    """The name an expression is, as libcst reads it: `None`, `True` and `False` are names
    there (which a star import may be taken to bind), constants in CPython's tree."""
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Constant) and any(expr.value is v for v in (None, True, False)):
        return str(expr.value)
    return None


def runs_at_import(tree: ast.Module) -> Iterator[ast.AST]:
    """Every node of the module's code outside function and lambda bodies, which run when
    called; their decorators and defaults run now. (Every call that `names` puts in the module's
    scope is among them.)"""
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            pending.extend(getattr(node, "decorator_list", []))
            pending.extend(node.args.defaults)
            pending.extend(d for d in node.args.kw_defaults if d is not None)
            continue
        yield node
        pending.extend(ast.iter_child_nodes(node))
