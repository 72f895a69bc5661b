"""TFM205's walk: from an entry point, the code that runs is followed in the order it runs (the
module's statements, the functions of the module and of the project it calls, the project
modules it imports), up to the first call that starts the runtime, noting whether something set
GPU memory up before it; and what counts as setting it up.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from tfmemlint.project.index import FileResolver
from tfmemlint.project.module_summary import member
from tfmemlint.project.names import CallSite, ModuleNames, Scope, dotted_name
from tfmemlint.reading.cst_walk import walk
from tfmemlint.rules import literals, starters
from tfmemlint.rules.entry_points import Handler, is_main_guard, runner, trains
from tfmemlint.rules.family import DEVICE_CONFIGURATION_WORDS, FORCE_GROWTH_WORD
from tfmemlint.rules.process_settings import FORCE_GROWTH, VISIBLE_DEVICES, process_wide
from tfmemlint.rules.programs import (
    KERAS_IMPORTERS,
    KERAS_ONLY_METHODS,
    METHOD_RUNNERS,
    OTHER_MODEL_LIBRARIES,
    PARTIAL,
    STDLIB_THAT_RUNS_FUNCTIONS,
)
from tfmemlint.rules.runtime import (
    GROWTH,
    LIMIT,
    LIST_GPUS,
    argument,
    hides_all_gpus,
    starts_runtime,
)
from tfmemlint.rules.unconfigured_program import flags, frameworks
from tfmemlint.rules.unconfigured_program.screen import (
    GRAPH_MODE,
    calls_tensorflow_at_import,
    tf1_at_import,
    tf1_code,
    tf1_definition,
)

if TYPE_CHECKING:
    from tfmemlint.checking.engine import FileContext

# How many statements the walk follows, over every function and module it enters: a bound on
# its cost in a large program. Past it, what was not reached counts as not there.
MAX_STATEMENTS = 2000

MAX_CALL_DEPTH = 32

GPU_CHOOSERS = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER")

# A module that holds none of these sets no GPU memory up.
_CONFIGURATION_WORDS = (*DEVICE_CONFIGURATION_WORDS, FORCE_GROWTH_WORD)

# What a module that sets GPU memory up or chooses the GPUs at import time holds (the
# frameworks' names: `import merlin.models.tf` in a project module configures too).
_IMPORT_TIME_WORDS = (
    *_CONFIGURATION_WORDS,
    *(word.encode() for word in GPU_CHOOSERS),
    *{framework.name.split(".")[0].encode() for framework in frameworks.IMPORTS},
)

_TENSORFLOW_WORDS = (b"tensorflow", b"keras")
# The packages a module imports Keras from: its own, its libraries', TensorFlow's `tf.keras`.
_KERAS_ROOTS = KERAS_IMPORTERS | {"tensorflow", "tf_keras"}
# What a module whose import runs TF1 code holds: a session, or TF2 turned off.
_TF1_WORDS = (b"Session", b"disable_eager_execution", b"disable_v2_behavior")

MAX_MODULES = 200  # project modules one walk may visit (it parses only a few of them)

# How deep the walk looks through modules that cannot configure for ones that do: a setting
# at import time sits in a module the program imports, or one that module imports.
IMPORT_LEVELS = 3

_BRANCHES = (cst.Else, cst.Finally, cst.ExceptHandler, cst.ExceptStarHandler, cst.MatchCase)


@dataclass(frozen=True)
class Start:
    """The call that starts the runtime, where the walk met it first."""

    ctx: FileContext
    node: cst.CSTNode
    what: str
    top: int  # which statement of the entry module's body was running


def runs_on_tensorflow(
    ctx: FileContext, site: CallSite, api: str | None, keras_on_tensorflow: bool
) -> bool:
    """Whether a call of the TF API `api` runs on TensorFlow: a Keras one does through
    `tf.keras` or `tf_keras` always, through Keras itself where its backend is TensorFlow."""
    if api is None or not api.startswith("keras.") or keras_on_tensorflow:
        return True
    qualified = ctx.names.qualified_names(site.node.func, site.scope, site.order) or set()
    return not qualified or not all(name.startswith("keras.") for name in qualified)


def configures_env(variable: str, text: str | None) -> bool:
    """TF_FORCE_GPU_ALLOW_GROWTH set to anything but a plain no (TFM201 checks its spelling),
    or CUDA_VISIBLE_DEVICES set to hide every GPU."""
    if variable == FORCE_GROWTH:
        return text is None or text.strip().lower() not in ("false", "0", "no", "off")
    return variable == VISIBLE_DEVICES and text is not None and text.strip() in ("", "-1")


def configuration(ctx: FileContext, site: CallSite) -> str | None:
    """What the call sets up, when it sets GPU memory up, and not only when a flag that is
    off by default is passed (`flags.py`)."""
    found = sets_gpu_memory(ctx, site)
    return None if found is None or flags.gate(ctx, site) is not None else found


def sets_gpu_memory(ctx: FileContext, site: CallSite) -> str | None:
    """What the call sets up, when it sets GPU memory up, whatever runs it."""
    names = ctx.names
    api = names.api_of(site.node.func, site.scope, site.order)
    if api in LIMIT and on_cpus(ctx, site):
        return None  # virtual CPUs, for a distribution strategy's demo: no GPU memory set
    if api in GROWTH or api in LIMIT:
        return api
    if hides_all_gpus(names, site):
        return "set_visible_devices([], 'GPU')"
    for qualified in names.qualified_names(site.node.func, site.scope, site.order) or ():
        if frameworks.called(qualified, site.node) is not None:
            return qualified
    return None


def on_cpus(ctx: FileContext, site: CallSite) -> bool:
    """Whether a logical-device configuration's device is a CPU: one of
    `list_physical_devices("CPU")`, called there or bound once to a name."""
    device = argument(site.node, 0, "device")
    if isinstance(device, cst.Subscript):
        device = device.value
    if isinstance(device, cst.Name):
        found = ctx.names.lookup(device.value, site.scope, site.order)
        bound = found[1] if found is not None else []
        if len(bound) != 1 or bound[0].kind != "assign" or bound[0].value is None:
            return False
        scope, order = bound[0].scope, bound[0].order
        device = bound[0].value
        if isinstance(device, cst.Subscript):
            device = device.value
    else:
        scope, order = site.scope, site.order
    if not isinstance(device, cst.Call):
        return False
    listed = argument(device, 0, "device_type")
    return (
        ctx.names.api_of(device.func, scope, order) in LIST_GPUS
        and listed is not None
        and (literals.string(listed) or "").upper() == "CPU"
    )


# -- the walk ------------------------------------------------------------------------------------
class Walk:
    """Follows the code an entry point runs, in order, to the first call that starts the
    runtime, noting whether something set GPU memory up before it."""

    def __init__(
        self,
        entry: FileContext,
        import_top: int,
        anchor_top: int,
        keras_on_tensorflow: bool,
        starts_at_import: bool = False,
        served: bool = False,
    ) -> None:
        self.entry = entry
        # A server imports the entry module: its `__main__` guard never runs.
        self.served = served
        # Whether a project module's import-time code is read for a start too, not only for a
        # setting: where the entry never imports TensorFlow, the start may be in one.
        self.starts_at_import = starts_at_import
        self.import_top = import_top  # the statement with the import the finding is at
        # Up to the statement after which the fix goes, a start at import time decides where
        # a fix can go: modules imported there are read for one.
        self.anchor_top = anchor_top
        # Whether Keras itself runs on TensorFlow (its backend, read once for the process).
        self.keras_on_tensorflow = keras_on_tensorflow
        self.first_start: Start | None = None
        self.configured = False  # a setting came first (or TF1 code: no op starts the runtime)
        # The project modules of TF1 code the program enters, in the order it meets them, each
        # with the function or class of it the program runs (None: its import-time code); and
        # whether `configured` stands for TF1 code, not a setting.
        self.tf1_modules: list[tuple[str, str | None]] = []
        self.turned_tf1 = False
        self.budget = MAX_STATEMENTS
        self.depth = 0
        self.top = 0
        self.followed: set[tuple[int, int]] = set()
        self.modules: set[str] = {entry.filename}
        # The class of each method being followed (None for a plain function): what `self` is.
        self.owners: list[tuple[FileContext, cst.ClassDef] | None] = []
        self.unsure = False  # a call it could not follow may have set GPU memory up
        self.chooses_gpus = False  # a module it entered sets CUDA_VISIBLE_DEVICES
        self.early_start: str | None = None  # a module imported early that may start it
        self.contexts: list[FileContext] = [entry]  # every module it read
        # Functions handed by name to calls the walk could not enter, to follow last.
        self.handed_over: list[tuple[FileContext, cst.FunctionDef, cst.ClassDef | None]] = []

    def done(self) -> bool:
        return self.first_start is not None or self.configured or self.unsure or self.budget <= 0

    def enter(self, path: str, runs: str | None = None) -> FileContext | None:
        """Another module of the project, parsed, unless CPython's reading already shows it is
        TF1 code: a start found there would be TF1's, of which TFM205 says nothing, so what
        it runs counts as starting nothing. `runs`: the function or class of it that the
        program is about to run; one that runs TF1 code itself (`make_session()` building a
        `tf.Session`) makes the program a TF1 one from there on, as graph mode does."""
        project = self.entry.names.project
        if project is not None and project.tree_answer(path, tf1_code):
            if (path, runs) not in self.tf1_modules:
                self.tf1_modules.append((path, runs))
            if (
                project.tree_answer(path, tf1_definition, runs)
                if runs is not None
                else project.tree_answer(path, tf1_at_import)
            ):
                self.configured = self.turned_tf1 = True
            return None
        return self.read(self.entry.other_module(path))

    def read(self, other: FileContext | None) -> FileContext | None:
        """Another module the walk enters, noted: its reads count for the entry's result, and
        a GPU choice made there makes the fix's place unsure."""
        if other is not None and other not in self.contexts:
            self.contexts.append(other)
            if any(word in other.text for word in GPU_CHOOSERS):
                self.chooses_gpus = True
        return other

    def run(self, functions: Sequence[Handler]) -> None:
        """The entry module's body in order, then what runs beyond it: its functions (a
        command, a route), and for a class a server builds (a deployment, a service, a view),
        its `__init__`, `__call__` and public methods."""
        entry = self.entry
        for index, statement in enumerate(entry.module.body):
            if self.done():
                return
            self.top = index
            if isinstance(statement, cst.If) and is_main_guard(statement):
                if not self.served:
                    self.block(entry, statement.body)
            else:
                self.statement(entry, statement)
        self.top = len(entry.module.body)
        for function in functions:
            if isinstance(function, cst.ClassDef):
                called = (_method(function, "__init__"), _method(function, "__call__"))
                for method in (*filter(None, called), *_public_methods(function)):
                    if self.done():
                        return
                    self.function_body(entry, method, function)
                continue
            self.function_body(entry, function)
        while self.handed_over and not self.done():
            where, function, owner = self.handed_over.pop(0)
            self.function_body(where, function, owner)

    def starts(self, ctx: FileContext, node: cst.CSTNode, what: str) -> None:
        if self.first_start is None:
            self.first_start = Start(ctx, node, what, self.top)

    def block(self, ctx: FileContext, suite: cst.BaseSuite | cst.CSTNode | None) -> None:
        statements = getattr(suite, "body", ())
        for statement in statements:
            if self.done():
                return
            self.statement(ctx, statement)

    def statement(self, ctx: FileContext, node: cst.CSTNode) -> None:
        self.budget -= 1
        if isinstance(node, cst.FunctionDef):
            # Its decorators and default values run now; its body when it is called.
            for decorator in node.decorators:
                self.expression(ctx, decorator.decorator)
            for default in _defaults(node.params):
                self.expression(ctx, default)
            return
        if isinstance(node, cst.ClassDef):
            for decorator in node.decorators:
                self.expression(ctx, decorator.decorator)
            for base in (*node.bases, *node.keywords):
                self.expression(ctx, base.value)
            self.block(ctx, node.body)  # a class body runs as the class is defined
            return
        if isinstance(node, cst.If) and is_main_guard(node):
            return  # another module's: it does not run on import
        if isinstance(node, cst.SimpleStatementLine):
            for small in node.body:
                self.small_statement(ctx, small)
            return
        if isinstance(node, cst.BaseSmallStatement):
            self.small_statement(ctx, node)
            return
        for part in _parts(node):
            if self.done():
                return
            if isinstance(part, cst.BaseSuite):
                self.block(ctx, part)
            elif isinstance(part, _BRANCHES):
                self.block(ctx, part.body)
            elif isinstance(part, cst.If):
                self.statement(ctx, part)
            else:
                self.expression(ctx, part)

    def small_statement(self, ctx: FileContext, node: cst.CSTNode) -> None:
        if self.done():
            return
        if isinstance(node, (cst.Import, cst.ImportFrom)):
            self.imports(ctx, node)
            return
        if isinstance(node, cst.Assign):
            setting = _env_setting(ctx, node)
            if setting:
                self.configured = True
                return
        self.expression(ctx, node)

    def expression(self, ctx: FileContext, node: cst.CSTNode) -> None:
        for call in _calls_in_order(node):
            if self.done():
                return
            self.call(ctx, call)

    def call(self, ctx: FileContext, call: cst.Call) -> None:
        names = ctx.names
        site = names.call_site(call)
        if site is None:
            return
        configured = configuration(ctx, site)
        if configured is None and _env_setting(ctx, call):
            configured = "environment"
        if configured is not None:
            self.configured = True
            return
        api = names.api_of(call.func, site.scope, site.order)
        if api in GRAPH_MODE:
            self.configured = self.turned_tf1 = True  # TF1 from here on: no op starts it
            return
        if starts_runtime(api) and runs_on_tensorflow(ctx, site, api, self.keras_on_tensorflow):
            self.starts(ctx, call, f"{dotted_name(call.func) or api}()")
            return
        func = call.func
        if (
            trains(ctx, func)
            and api is None
            and self.keras_on_tensorflow
            and not _another_librarys_model(ctx, site)
        ):
            self.starts(ctx, call, f"{dotted_name(func) or 'fit'}()")
            return
        if self._library_start(ctx, site):
            method = func.attr.value if isinstance(func, cst.Attribute) else "call"
            self.starts(ctx, call, f"{dotted_name(func) or method}()")
            return
        run = runner(ctx, site)
        if run is not None:
            spelled = names.qualified_names(func, site.scope, site.order) or set()
            for target in run:
                self.callee(ctx, site, target, every_method=bool(spelled & METHOD_RUNNERS))
            return
        if self.callee(ctx, site, func):
            return
        if api is None and self.keras_on_tensorflow and self._keras_only_method(func):
            self.starts(ctx, call, f"{dotted_name(func) or 'fit'}()")
            return
        if not _hands_functions_over(ctx, site):
            return
        for target in _function_arguments(ctx, site):
            found = self._definition(ctx, site, target)
            if found is not None and isinstance(found[1], cst.FunctionDef):
                # It runs when the callee wants: a search's objective at once, a request
                # handler later, if ever. Followed after the rest of the entry code, so that
                # a setting made there first counts.
                self.handed_over.append((found[0], found[1], found[2]))

    def _keras_only_method(self, func: cst.BaseExpression) -> bool:
        """`model.fit_generator(...)` and the other training methods only Keras has, where no
        method of the project's is called so, in a module that never names Keras, on what it
        may have from a module the walk read that imports Keras (`model = unet()`, `unet`
        made in `model.py`)."""
        if not (isinstance(func, cst.Attribute) and func.attr.value in KERAS_ONLY_METHODS):
            return False
        return any(
            name.split(".")[0] in _KERAS_ROOTS
            for other in self.contexts
            for name in (
                *(binding.qualified or "" for binding in other.names.module_body_imports()),
                *other.names.module_scope.star_imports,
            )
        )

    def _library_start(self, ctx: FileContext, site: CallSite) -> bool:
        """A call into a library that starts TensorFlow's runtime (`starters.py`), directly
        (`tfds.load(...)`) or as a method of what one of its calls made
        (`tfds.builder("mnist").as_dataset()`, also through a name bound once to it). As
        spelled, too: in the library's own repository, its package is the project's, and
        resolves to where it defines the name (`keras_cv.src.models...`)."""
        names = ctx.names
        func = site.node.func
        for qualified in _spelled_and_resolved(names, func, site.scope, site.order):
            if starters.started_by(qualified, self.keras_on_tensorflow) is not None:
                return True
        if not isinstance(func, cst.Attribute):
            return False
        maker = func.value
        if isinstance(maker, cst.Name):
            found = names.lookup(maker.value, site.scope, site.order)
            bound = found[1] if found is not None else []
            if len(bound) != 1 or bound[0].kind != "assign":
                return False
            maker = bound[0].value  # type: ignore[assignment]
            if not isinstance(maker, cst.Call):
                return False
            maker_names = _spelled_and_resolved(names, maker.func, bound[0].scope, bound[0].order)
        elif isinstance(maker, cst.Call):
            maker_names = _spelled_and_resolved(names, maker.func, site.scope, site.order)
        else:
            return False
        return any(
            starters.started_by_method(name, func.attr.value) is not None for name in maker_names
        )

    def callee(
        self,
        ctx: FileContext,
        site: CallSite,
        func: cst.BaseExpression,
        every_method: bool = False,
    ) -> bool:
        """Follow a call into what it runs, and say whether it could: a function of the
        module's or the project's, a class's `__init__`, a method of a class of theirs
        (`self.run()`, `Trainer().run()`, `t.run()` after `t = Trainer()`, `Gpu.setup()`).
        A class a runner runs (`fire.Fire(Trainer)`, `every_method`) runs any of its public
        methods too, as the command line says. A call into a project module that sets GPU
        memory up somewhere, but that cannot be followed, leaves the walk unsure."""
        found = self._definition(ctx, site, func)
        if found is not None:
            where, definition, owner = found
            if isinstance(definition, cst.FunctionDef) and _is_a_graph_function(where, definition):
                self.starts(ctx, site.node, f"{dotted_name(func) or 'call'}()")
                return True
            methods: list[cst.FunctionDef] = []
            if isinstance(definition, cst.ClassDef):
                if every_method:
                    methods = _public_methods(definition)
                owner, definition = definition, _method(definition, "__init__")
            if definition is not None:
                self.function_body(where, definition, owner)
            for method in methods:
                if self.done():
                    break
                self.function_body(where, method, owner)
            return True
        if isinstance(func, cst.Attribute):
            owner_found = self._class_of(ctx, site, func.value)
            if owner_found is not None:
                where, owner = owner_found
                method = _method(owner, func.attr.value)
                if method is not None and _is_a_graph_function(where, method):
                    self.starts(ctx, site.node, f"{dotted_name(func) or func.attr.value}()")
                elif method is not None:
                    self.function_body(where, method, owner)
                return True
        project = ctx.names.project
        head = _head(func)
        spelled = ctx.names.spelled_names(head, site.scope, site.order) if head else None
        for name in spelled or () if project is not None else ():
            path = project.module(name) or project.module_of(name.rpartition(".")[0])
            if path is not None and project.mentions(path, _CONFIGURATION_WORDS):
                self.unsure = True
        return False

    def _definition(
        self, ctx: FileContext, site: CallSite, func: cst.BaseExpression
    ) -> tuple[FileContext, cst.FunctionDef | cst.ClassDef, cst.ClassDef | None] | None:
        """Where `func` is defined, when it is a function, class or static method of this
        module or of a project module: (that module, the definition, its class if a method)."""
        if isinstance(func, cst.Name):
            local = _local_definition(ctx, site, func)
            if local is not None:
                return ctx, local, None
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
            local = _local_definition(ctx, site, func.value)
            if isinstance(local, cst.ClassDef):  # `Gpu.setup()`
                method = _method(local, func.attr.value)
                return (ctx, method, local) if method is not None else None
        project = ctx.names.project
        spelled = ctx.names.spelled_names(func, site.scope, site.order)
        if project is None or spelled is None or len(spelled) != 1:
            return None
        (name,) = spelled
        head, _, last = name.rpartition(".")
        path = project.locate(name)
        if path is not None:
            other = self.enter(path, runs=last)
            function = module_definition(other, last) if other is not None else None
            return (other, function, None) if other is not None and function else None
        # `mod.Class` or `mod.Class.method`, the class defined in the project module `mod`
        for class_path, method_name in ((name, None), (head, last)):
            module, _, class_name = class_path.rpartition(".")
            path = project.module(module) if module else None
            other = self.enter(path, runs=class_name) if path is not None else None
            definition = module_definition(other, class_name) if other is not None else None
            if other is None or not isinstance(definition, cst.ClassDef):
                continue
            if method_name is None:
                return other, definition, None
            method = _method(definition, method_name)
            return (other, method, definition) if method is not None else None
        return None

    def _class_of(
        self, ctx: FileContext, site: CallSite, receiver: cst.BaseExpression
    ) -> tuple[FileContext, cst.ClassDef] | None:
        """The class of the module's or the project's whose object `receiver` is, where that
        is plain: `self` in a method being followed, `Trainer()`, a name bound once to it."""
        if isinstance(receiver, cst.Name) and receiver.value == "self":
            return self.owners[-1] if self.owners and self.owners[-1] else None
        if isinstance(receiver, cst.Name):
            found = ctx.names.lookup(receiver.value, site.scope, site.order)
            if found is None or len(found[1]) != 1 or found[1][0].kind != "assign":
                return None
            receiver = found[1][0].value  # type: ignore[assignment]
        if isinstance(receiver, cst.Call):
            found_class = self._definition(ctx, site, receiver.func)
            if found_class is not None and isinstance(found_class[1], cst.ClassDef):
                return found_class[0], found_class[1]
        return None

    def function_body(
        self, ctx: FileContext, function: cst.FunctionDef, owner: cst.ClassDef | None = None
    ) -> None:
        key = (id(ctx), id(function))
        if key in self.followed or self.depth >= MAX_CALL_DEPTH:
            return
        self.followed.add(key)
        self.depth += 1
        self.owners.append((ctx, owner) if owner is not None else None)
        try:
            self.block(ctx, function.body)
        finally:
            self.depth -= 1
            self.owners.pop()

    def imports(self, ctx: FileContext, node: cst.Import | cst.ImportFrom) -> None:
        """An import runs the project modules it names, once: their import-time code. Where the
        start may be in any of them, one of the project's that is not there leaves the walk
        unsure: it may set GPU memory up."""
        project = ctx.names.project
        if self.starts_at_import and project is not None and _misses_a_module(project, node):
            self.unsure = True
            return
        for name in _imported_names(node):
            if frameworks.imported(name) is not None:
                self.configured = True
                return
            if name.split(".")[0] in KERAS_IMPORTERS and not self.keras_on_tensorflow:
                # Keras on another backend sets TF_FORCE_GPU_ALLOW_GROWTH=true as it is
                # imported (keras/src/backend/config.py).
                self.configured = True
                return
            path = project.module(name) if project is not None else None
            if path is not None and project is not None:
                self.module(project, path)
            if self.done():
                return

    def module(self, project: FileResolver, path: str, depth: int = 0) -> None:
        """Run a project module's import-time code, as far as it may set GPU memory up or
        choose the GPUs: only a module whose text could is parsed; the others are crossed,
        IMPORT_LEVELS deep, through the modules they import. One that may call TensorFlow at
        import (read with `ast`) is read in full, for a start there."""
        if path in self.modules:
            return
        self.modules.add(path)
        if len(self.modules) > MAX_MODULES:
            self.unsure = True  # past what a lint may spend on one program
            return
        if project.mentions(path, _IMPORT_TIME_WORDS) or (
            self.starts_at_import and project.mentions(path, _TENSORFLOW_WORDS)
        ):
            other = self.enter(path)
            if other is not None:
                self.block(other, other.module)
            return
        if (
            project.mentions(path, _TF1_WORDS)
            and project.tree_answer(path, tf1_code)
            and project.tree_answer(path, tf1_at_import)
        ):
            self.configured = self.turned_tf1 = True  # TF1 from here on (a session)
            return
        if project.mentions(path, _TENSORFLOW_WORDS):
            # Read cheaply for a call that may start the runtime at import, and where one may,
            # in full: a start there comes before any setting the entry makes later.
            calls = project.tree_answer(path, calls_tensorflow_at_import)
            if calls:
                other = self.enter(path)
                if other is not None:
                    self.block(other, other.module)
                    if self.done():
                        return
            if self.top <= self.anchor_top and calls is not False:
                # before the fix's place, a start it may make would come before the fix
                self.early_start = project.display(path)
        if depth + 1 >= IMPORT_LEVELS and not self.starts_at_import:
            return  # (where the start may be anywhere, as far as MAX_MODULES: so may a setting)
        for imported in project.imports_of(path):
            self.module(project, imported, depth + 1)
            if self.done():
                return


def _another_librarys_model(ctx: FileContext, site: CallSite) -> bool:
    """Whether a training method's receiver is a model of a library that runs no TensorFlow
    (OTHER_MODEL_LIBRARIES): made there by a call (`KNeighborsClassifier().fit(...)`), a name
    every binding of which is such a call, or what a function of the module returns that is
    one (`model = create_model()`, which returns its classifier)."""
    receiver = site.node.func.value if isinstance(site.node.func, cst.Attribute) else None
    return receiver is not None and _made_by_another_library(ctx, receiver, site.scope, site.order)


# How far a model is followed back: a name, the call bound to it, the name a helper returns, and
# the call bound to that.
_MODEL_MAKER_DEPTH = 4


def _made_by_another_library(
    ctx: FileContext, expr: cst.BaseExpression, scope: Scope, order: int, depth: int = 0
) -> bool:
    names = ctx.names
    if depth > _MODEL_MAKER_DEPTH:
        return False
    if isinstance(expr, cst.Name):
        found = names.lookup(expr.value, scope, order)
        bindings = found[1] if found is not None else []
        return bool(bindings) and all(
            binding.kind == "assign"
            and binding.value is not None
            and _made_by_another_library(
                ctx, binding.value, binding.scope, binding.order, depth + 1
            )
            for binding in bindings
        )
    if not isinstance(expr, cst.Call):
        return False
    qualified = names.qualified_names(expr.func, scope, order) or set()
    if qualified and all(name.split(".")[0] in OTHER_MODEL_LIBRARIES for name in qualified):
        return True
    returned = names.single_return(expr.func, scope, order)
    return (
        returned is not None
        and returned.node.value is not None
        and _made_by_another_library(
            ctx, returned.node.value, returned.scope, returned.order, depth + 1
        )
    )


def _spelled_and_resolved(
    names: ModuleNames, func: cst.BaseExpression, scope: Scope, order: int
) -> set[str]:
    """What a call's function names: as the module spells it, and resolved through the
    project."""
    spelled = names.spelled_names(func, scope, order) or set()
    return spelled | (names.qualified_names(func, scope, order) or set())


def _misses_a_module(project: FileResolver, node: cst.Import | cst.ImportFrom) -> bool:
    """Whether an absolute import names a module of the project's packages that is not there."""
    if isinstance(node, cst.ImportFrom):
        if node.relative or node.module is None:
            return False
        modules = [dotted_name(node.module)]
    else:
        modules = [dotted_name(alias.name) for alias in node.names]
    return any(name and project.missing_from_project(name) for name in modules)


def _imported_names(node: cst.Import | cst.ImportFrom) -> Iterator[str]:
    """The modules an import may run, outermost first (`a`, `a.b` for `import a.b`), and for a
    `from` import the names it takes, which may be submodules."""
    if isinstance(node, cst.Import):
        for alias in node.names:
            full = dotted_name(alias.name)
            parts = full.split(".") if full else []
            for length in range(1, len(parts) + 1):
                yield ".".join(parts[:length])
        return
    module = dotted_name(node.module) if node.module is not None else ""
    if module is None:
        return
    dots = "." * len(node.relative)
    parts = module.split(".") if module else []
    for length in range(1, len(parts) + 1):
        yield dots + ".".join(parts[:length])
    base = dots + module
    if isinstance(node.names, cst.ImportStar):
        return
    for alias in node.names:
        imported = dotted_name(alias.name)
        if imported is not None:
            yield member(base, imported)


def _env_setting(ctx: FileContext, node: cst.CSTNode) -> str | None:
    """The environment variable a statement or call sets to configure GPU memory."""
    for setting in process_wide(ctx).env:
        if setting.node is node and configures_env(setting.variable, setting.text):
            return setting.variable
    return None


def _parts(node: cst.CSTNode) -> list[cst.CSTNode]:
    """A compound statement's expressions and blocks, in the order they run."""
    if isinstance(node, cst.If):
        return [node.test, node.body, *([node.orelse] if node.orelse is not None else [])]
    if isinstance(node, (cst.For, cst.While)):
        head = node.iter if isinstance(node, cst.For) else node.test
        return [head, node.body, *([node.orelse] if node.orelse is not None else [])]
    if isinstance(node, cst.With):
        return [*(item.item for item in node.items), node.body]
    if isinstance(node, (cst.Try, cst.TryStar)):
        tail = [p for p in (node.orelse, node.finalbody) if p is not None]
        return [node.body, *node.handlers, *tail]
    if isinstance(node, cst.Match):
        return [node.subject, *node.cases]
    return []


def _calls_in_order(node: cst.CSTNode) -> list[cst.Call]:
    """The calls in an expression or small statement in the order they complete: arguments
    before the call. Not those in a lambda, which runs later if at all."""
    calls = _CallsInOrder()
    walk(node, calls)  # libcst's own walk would rebuild every node it passes
    return calls.found


class _CallsInOrder(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[cst.Call] = []

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def leave_Call(self, original_node: cst.Call) -> None:
        self.found.append(original_node)


def _hands_functions_over(ctx: FileContext, site: CallSite) -> bool:
    """Whether a call the walk could not enter may run the functions it is given: any but the
    standard library's (`atexit.register`, `signal.signal` keep them for later, if ever), its
    threads and processes aside."""
    qualified = ctx.names.qualified_names(site.node.func, site.scope, site.order) or set()
    return not any(
        name.split(".")[0] in sys.stdlib_module_names
        and name.split(".")[0] not in STDLIB_THAT_RUNS_FUNCTIONS
        for name in qualified
    )


def _function_arguments(ctx: FileContext, site: CallSite) -> Iterator[cst.BaseExpression]:
    """The arguments that name a function (`study.optimize(objective)`,
    `Thread(target=train)`), or bind one (`functools.partial(objective, data)`)."""
    for arg in site.node.args:
        value = arg.value
        if isinstance(value, cst.Call) and value.args:
            spelled = ctx.names.qualified_names(value.func, site.scope, site.order) or set()
            if PARTIAL in spelled:
                value = value.args[0].value
        if isinstance(value, (cst.Name, cst.Attribute)) and not arg.star:
            yield value


def _local_definition(
    ctx: FileContext, site: CallSite, name: cst.Name
) -> cst.FunctionDef | cst.ClassDef | None:
    """The one `def` or `class` of this module that `name` is bound to where it is called."""
    found = ctx.names.lookup(name.value, site.scope, site.order)
    if found is None or len(found[1]) != 1:
        return None
    definition = found[1][0].statement
    if isinstance(definition, (cst.FunctionDef, cst.ClassDef)):
        return definition if definition.name.value == name.value else None
    return None


def _defaults(params: cst.Parameters) -> Iterator[cst.BaseExpression]:
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        if param.default is not None:
            yield param.default


def _public_methods(definition: cst.ClassDef) -> list[cst.FunctionDef]:
    """A class's methods whose names do not start with `_`, in order."""
    body = definition.body.body if isinstance(definition.body, cst.IndentedBlock) else ()
    return [
        statement
        for statement in body
        if isinstance(statement, cst.FunctionDef) and not statement.name.value.startswith("_")
    ]


def _method(definition: cst.ClassDef, name: str) -> cst.FunctionDef | None:
    body = definition.body.body if isinstance(definition.body, cst.IndentedBlock) else ()
    return next((s for s in body if isinstance(s, cst.FunctionDef) and s.name.value == name), None)


def _is_a_graph_function(ctx: FileContext, function: cst.FunctionDef) -> bool:
    """Whether `function` is decorated with `tf.function`: calling it runs its graph, on the
    runtime that the call starts."""
    for decorator in function.decorators:
        expr = decorator.decorator
        expr = expr.func if isinstance(expr, cst.Call) else expr
        if ctx.names.api_of(expr, ctx.names.module_scope, sys.maxsize) == "function":
            return True
    return False


def module_definition(ctx: FileContext, name: str) -> cst.FunctionDef | cst.ClassDef | None:
    """The function or class the module defines at its top level as `name`."""
    definitions = (cst.FunctionDef, cst.ClassDef)
    return next(
        (s for s in ctx.module.body if isinstance(s, definitions) and s.name.value == name),
        None,
    )


def _head(expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """The dotted name a call's target starts from: `gpu.setup` of `gpu.setup()`, `gpu.REGISTRY`
    of `gpu.REGISTRY["setup"]()`, `gpu.make` of `gpu.make().run()`."""
    while not isinstance(expr, (cst.Name, cst.Attribute)) or dotted_name(expr) is None:
        if isinstance(expr, (cst.Subscript, cst.Attribute)):
            expr = expr.value
        elif isinstance(expr, cst.Call):
            expr = expr.func
        else:
            return None
    return expr
