"""Name resolution: which TensorFlow API a call refers to, from the module's own imports.

A small scope table built in one pass stands in for libcst's QualifiedNameProvider, which costs
several times the parse. Resolution is flow-insensitive except for one thing: in the scope that
makes the reference, only bindings that come before it count (`tf = tf.compat.v1`).
A name is resolved only when every binding that can reach it agrees; anything else (a local class,
a parameter, a `requests.Session`) resolves to nothing, so it can never become a finding.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, NamedTuple, Protocol

import libcst as cst

from tfmemlint.project.module_summary import member
from tfmemlint.reading.cst_walk import walk

if TYPE_CHECKING:
    from tfmemlint.project.index import FileResolver

# "annotation": PEP 695's scope of type parameters and of a type alias's value; unlike a
# function's, it sees the names of a class right around it.
ScopeKind = Literal["module", "function", "class", "lambda", "comprehension", "annotation"]


class ApiPaths(Protocol):
    """Which qualified names are TensorFlow's API, and under which public path: the rules'
    knowledge (`rules/tensorflow_api.py`), handed to `ModuleNames` by its caller."""

    def canonical_api(self, qualified: str) -> str | None: ...

    def namespace_of(self, module: str) -> str | None: ...


@dataclass(eq=False)
class Binding:
    name: str
    scope: Scope
    kind: Literal["import", "assign", "other"]
    order: int
    statement: cst.CSTNode | None = None
    ancestry: Ancestry | None = None
    qualified: str | None = None  # for imports
    value: cst.BaseExpression | None = None  # for a plain `name = value`


@dataclass(eq=False)
class Scope:
    kind: ScopeKind
    node: cst.CSTNode
    parent: Scope | None
    bindings: dict[str, list[Binding]] = field(default_factory=dict)
    # Names a function makes local without a value (`x: int`): they hide outer bindings and
    # star imports, but a binding with a value, where there is one, says more.
    declarations: dict[str, list[Binding]] = field(default_factory=dict)
    globals: set[str] = field(default_factory=set)
    star_imports: list[str] = field(default_factory=list)

    def module(self) -> Scope:
        scope = self
        while scope.parent is not None:
            scope = scope.parent
        return scope


def _sees_names_of(inner: Scope | None, scope: Scope) -> bool:
    """Whether code in `inner` (None: in `scope` itself) sees the names `scope` binds: a class's
    names are seen only in its own body and in annotation scopes right inside it."""
    return inner is None or scope.kind != "class" or inner.kind == "annotation"


@dataclass(frozen=True, eq=False)
class Ancestry:
    """A persistent linked list of enclosing statements and blocks, innermost first."""

    node: cst.CSTNode
    parent: Ancestry | None

    def __iter__(self) -> Iterator[cst.CSTNode]:
        cell: Ancestry | None = self
        while cell is not None:
            yield cell.node
            cell = cell.parent


@dataclass(frozen=True, eq=False)
class CallSite:
    node: cst.Call
    scope: Scope
    order: int
    ancestry: Ancestry


@dataclass(frozen=True, eq=False)
class ReturnSite:
    node: cst.Return
    scope: Scope
    order: int
    ancestry: Ancestry


@dataclass(frozen=True, eq=False)
class TargetAssign:
    """`x[key] = value` or `x.attr = value`: `os.environ["TF_FORCE_GPU_ALLOW_GROWTH"] = "true"`,
    `config.gpu_options.per_process_gpu_memory_fraction = 0.4`."""

    node: cst.Assign
    target: cst.Subscript | cst.Attribute
    scope: Scope
    order: int
    ancestry: Ancestry | None = None


def dotted_name(expr: cst.BaseExpression) -> str | None:
    """'a.b.c' for a chain of names and attributes, else None."""
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        head = dotted_name(expr.value)
        return None if head is None else f"{head}.{expr.attr.value}"
    return None


def target_names(target: cst.BaseExpression) -> Iterator[cst.Name]:
    """The names an assignment target binds (attributes and subscripts bind none)."""
    if isinstance(target, cst.Name):
        yield target
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from target_names(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from target_names(target.value)


_BLOCK_NODES = (
    cst.Module,
    cst.SimpleStatementLine,
    cst.BaseCompoundStatement,
    cst.BaseSuite,
    cst.Else,
    cst.ExceptHandler,
    cst.ExceptStarHandler,
    cst.Finally,
    cst.MatchCase,
)


@dataclass(frozen=True, eq=False)
class Reference:
    """One use of a name, with every node that encloses it (innermost first)."""

    node: cst.Name
    scope: Scope
    parents: Ancestry


def _is_reference(node: cst.Name, parent: cst.CSTNode | None) -> bool:
    """A Name node also spells attribute names, keywords, and the names of definitions."""
    if isinstance(parent, cst.Attribute):
        return parent.attr is not node
    if isinstance(parent, cst.Arg):
        return parent.keyword is not node
    if isinstance(parent, (cst.TypeAlias, cst.TypeVar, cst.TypeVarTuple, cst.ParamSpec)):
        return parent.name is not node  # `type X[T: Bound] = value`: only bounds and values
    definitions = (cst.ImportAlias, cst.AsName, cst.FunctionDef, cst.ClassDef, cst.Param)
    return not isinstance(parent, (*definitions, cst.NameItem))


class _ReferenceCollector(cst.CSTVisitor):
    def __init__(self, names: ModuleNames) -> None:
        self.scopes = names.scope_of_node
        self.scope = names.module_scope
        self.outer: list[Scope] = []  # the scope around each scope node entered
        self.ancestry: Ancestry | None = None
        self.found: dict[str, list[Reference]] = {}

    def on_visit(self, node: cst.CSTNode) -> bool:
        if (
            isinstance(node, cst.Name)
            and self.ancestry is not None
            and _is_reference(node, self.ancestry.node)
        ):
            reference = Reference(node, self.scope, self.ancestry)
            self.found.setdefault(node.value, []).append(reference)
        if node in self.scopes:
            self.outer.append(self.scope)
            self.scope = self.scopes[node]
        self.ancestry = Ancestry(node, self.ancestry)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if original_node in self.scopes:
            # Not the scope's parent: a generic class's parent is its type parameters' scope.
            self.scope = self.outer.pop()
        assert self.ancestry is not None
        self.ancestry = self.ancestry.parent


@functools.cache
def _handler(visitor: type, prefix: str, node_type: type) -> Callable[..., object] | None:
    """The visitor's `visit_<Node>` or `leave_<Node>` method, looked up once per node class
    (libcst's dispatch builds the name and looks it up again for every node); None where it is
    the empty one every CSTVisitor inherits, which libcst marks so that it can skip it too."""
    handler = getattr(visitor, f"{prefix}{node_type.__name__}", None)
    return None if getattr(handler, "_is_no_op", False) else handler


@functools.cache
def _kind_of(node_type: type) -> tuple[bool, bool]:
    """(opens a block, is a statement) for a node class. Cached per class: the libcst base
    classes are ABCs, and isinstance against them is slow once per node."""
    block = issubclass(node_type, _BLOCK_NODES) and not issubclass(node_type, cst.Module)
    statement = issubclass(node_type, (cst.BaseSmallStatement, cst.BaseCompoundStatement))
    return block, statement


class _Plan(NamedTuple):
    """What ModuleNames does on a node class, looked up once per node (see `_plan`)."""

    block: bool
    statement: bool
    visit: Callable[..., object] | None
    leave: Callable[..., object] | None


_PLANS: dict[type, _Plan] = {}


def _plan(node_type: type) -> _Plan:
    plan = _PLANS[node_type] = _Plan(
        *_kind_of(node_type),
        _handler(ModuleNames, "visit_", node_type),
        _handler(ModuleNames, "leave_", node_type),
    )
    return plan


class ModuleNames(cst.CSTVisitor):
    """The module's scopes, bindings and call sites, collected in one pass."""

    def __init__(
        self, module: cst.Module, api: ApiPaths, project: FileResolver | None = None
    ) -> None:
        self.module_scope = Scope("module", module, None)
        self.api = api
        # Names imported from the project's own modules resolve through its index.
        self.project = project
        self.calls: list[CallSite] = []
        # Each function's `return` statements (not its nested functions'), as call-like sites.
        self.returns: dict[cst.CSTNode, list[ReturnSite]] = {}
        self.subscript_assigns: list[TargetAssign] = []
        self.attribute_assigns: list[TargetAssign] = []
        self.all_names: set[str] = set()
        self.declared_global: set[str] = set()  # names some scope declares global or nonlocal
        self.scope_of_node: dict[cst.CSTNode, Scope] = {}
        self._module = module
        self._references: dict[str, list[Reference]] | None = None
        self._call_sites: dict[cst.Call, CallSite] | None = None
        # api_of's answers: every rule family asks it of every call. The tree never changes,
        # and the project's answers are pinned per file (FileResolver keeps the first).
        self._apis: dict[tuple[int, int, int], str | None] = {}
        self._scope = self.module_scope
        self._order = 0
        self._ancestry = Ancestry(module, None)
        self._statement: cst.CSTNode | None = None
        walk(module, self)

    # -- bookkeeping -------------------------------------------------------------------------
    def on_visit(self, node: cst.CSTNode) -> bool:
        self._order += 1
        plan = _PLANS.get(type(node)) or _plan(type(node))
        if plan.block:
            self._ancestry = Ancestry(node, self._ancestry)
        if plan.statement:
            self._statement = node
        if plan.visit is not None:
            plan.visit(self, node)  # none of ModuleNames' visit_ methods prunes the walk
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        plan = _PLANS[type(original_node)]  # made when the node was visited
        if plan.leave is not None:
            plan.leave(self, original_node)
        if plan.block:
            assert self._ancestry.parent is not None
            self._ancestry = self._ancestry.parent

    def _bind(
        self,
        name: str,
        kind: Literal["import", "assign", "other"],
        scope: Scope | None = None,
        declaration: bool = False,
        **extra: object,
    ) -> None:
        """Bind `name`; a declaration (`x: int` in a function) goes to the scope's own table."""
        self.all_names.add(name)
        scope = scope or self._scope
        if name in scope.globals:
            scope = scope.module()
        binding = Binding(name, scope, kind, self._order, self._statement, self._ancestry, **extra)  # type: ignore[arg-type]
        table = scope.declarations if declaration else scope.bindings
        table.setdefault(name, []).append(binding)

    def _bind_targets(self, target: cst.BaseExpression) -> None:
        for name in target_names(target):
            self._bind(name.value, "other")

    def _push(self, kind: ScopeKind, node: cst.CSTNode) -> None:
        self._scope = Scope(kind, node, self._scope)
        self.scope_of_node[node] = self._scope

    def _pop(self) -> None:
        assert self._scope.parent is not None
        self._scope = self._scope.parent

    # -- scopes ------------------------------------------------------------------------------
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._bind(node.name.value, "other")
        self._push("function", node)
        self._bind_type_params(node.type_parameters)
        self._bind_params(node.params)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._pop()

    def _bind_type_params(self, type_parameters: cst.TypeParameters | None) -> None:
        """PEP 695's `[T, *Ts, **P]`: names bound in the scope that the definition opens."""
        for type_param in type_parameters.params if type_parameters is not None else ():
            self._bind(type_param.param.name.value, "other")

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self._push("lambda", node)
        self._bind_params(node.params)

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self._pop()

    def _bind_params(self, params: cst.Parameters) -> None:
        every = [*params.posonly_params, *params.params, *params.kwonly_params]
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                every.append(star)
        for param in every:
            self._bind(param.name.value, "other")

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._bind(node.name.value, "other")
        if node.type_parameters is not None:
            # A class's type parameters live in a scope of their own around it, which its
            # methods see (they skip the class's own scope).
            self._scope = Scope("annotation", node.type_parameters, self._scope)
            self._bind_type_params(node.type_parameters)
        self._push("class", node)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._pop()
        if original_node.type_parameters is not None:
            self._pop()

    def visit_TypeAlias(self, node: cst.TypeAlias) -> None:
        self._bind(node.name.value, "other")
        self._push("annotation", node)  # the value is evaluated lazily, in a scope of its own
        self._bind_type_params(node.type_parameters)

    def leave_TypeAlias(self, original_node: cst.TypeAlias) -> None:
        self._pop()

    def _visit_comprehension(self, node: cst.CSTNode) -> None:
        self._push("comprehension", node)

    def _leave_comprehension(self, original_node: cst.CSTNode) -> None:
        self._pop()

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _visit_comprehension
    leave_ListComp = leave_SetComp = leave_DictComp = leave_GeneratorExp = _leave_comprehension

    def visit_Global(self, node: cst.Global) -> None:
        self._scope.globals.update(item.name.value for item in node.names)
        self.declared_global.update(item.name.value for item in node.names)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.declared_global.update(item.name.value for item in node.names)

    # -- bindings ----------------------------------------------------------------------------
    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = dotted_name(alias.name)
            if full is None:
                continue
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self._bind(alias.asname.name.value, "import", qualified=full)
            else:
                head = full.split(".", 1)[0]
                self._bind(head, "import", qualified=head)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        module = dotted_name(node.module) if node.module is not None else ""
        if module is not None and node.relative:
            # `..compat`: the project index resolves it; on its own it is never TensorFlow.
            module = "." * len(node.relative) + module
        if isinstance(node.names, cst.ImportStar):
            if module:
                self._scope.star_imports.append(module)
            return
        for alias in node.names:
            imported = dotted_name(alias.name)
            if imported is None:
                continue
            local = imported
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            qualified = member(module, imported) if module else None
            self._bind(local, "import", qualified=qualified)

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Subscript):
            target = node.targets[0].target
            self.subscript_assigns.append(
                TargetAssign(node, target, self._scope, self._order, self._ancestry)
            )
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Attribute):
            target = node.targets[0].target
            self.attribute_assigns.append(TargetAssign(node, target, self._scope, self._order))
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            self._bind(node.targets[0].target.value, "assign", value=node.value)
            return
        # `a = b = X` makes aliases; tuple targets unpack. Neither can be followed safely.
        for target in node.targets:
            self._bind_targets(target.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is None:
            # `x: int` makes x local to a function; in a module or class it binds nothing.
            if self._scope.kind == "function" and isinstance(node.target, cst.Name):
                self._bind(node.target.value, "other", declaration=True)
            return
        if isinstance(node.target, cst.Name):
            self._bind(node.target.value, "assign", value=node.value)
        else:
            self._bind_targets(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind_targets(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._bind_targets(node.target)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._bind_targets(node.target)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._bind_targets(node.asname.name)

    def visit_ExceptHandler(self, node: cst.ExceptHandler | cst.ExceptStarHandler) -> None:
        if node.name is not None:
            self._bind_targets(node.name.name)

    visit_ExceptStarHandler = visit_ExceptHandler

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        # PEP 572: in a comprehension, := binds in the enclosing function or module.
        scope = self._scope
        while scope.kind == "comprehension" and scope.parent is not None:
            scope = scope.parent
        for name in target_names(node.target):
            self._bind(name.value, "other", scope)

    def visit_Del(self, node: cst.Del) -> None:
        self._bind_targets(node.target)

    def visit_MatchAs(self, node: cst.MatchAs) -> None:
        if node.name is not None:
            self._bind(node.name.value, "other")

    def visit_MatchStar(self, node: cst.MatchStar) -> None:
        if node.name is not None:
            self._bind(node.name.value, "other")

    def visit_MatchMapping(self, node: cst.MatchMapping) -> None:
        if node.rest is not None:  # `case {"k": v, **rest}`
            self._bind(node.rest.value, "other")

    # -- references --------------------------------------------------------------------------
    def visit_Return(self, node: cst.Return) -> None:
        if self._scope.kind == "function":
            site = ReturnSite(node, self._scope, self._order, self._ancestry)
            self.returns.setdefault(self._scope.node, []).append(site)

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append(CallSite(node, self._scope, self._order, self._ancestry))

    def release(self) -> None:
        """Let the tree go the moment the file's check is done: each binding points back at
        its scope, and that cycle would keep the scopes, and through them the whole tree,
        until the cycle collector walks every node of it. The names answer nothing after."""
        for scope in (self.module_scope, *self.scope_of_node.values()):
            scope.bindings.clear()
            scope.declarations.clear()

    # -- queries -----------------------------------------------------------------------------
    def module_body_imports(self) -> list[Binding]:
        """Every import made directly in the module body (not under `if` or `try`, which may
        not run; in a notebook, in any cell), in source order."""
        found = [
            binding
            for bindings in self.module_scope.bindings.values()
            for binding in bindings
            if binding.kind == "import"
            and binding.ancestry is not None
            and binding.ancestry.parent is not None
            and isinstance(binding.ancestry.parent.node, cst.Module)
        ]
        return sorted(found, key=lambda binding: binding.order)

    def top_level_imports(self) -> list[Binding]:
        """The module body's imports of names bound once, in source order."""
        return [
            binding
            for binding in self.module_body_imports()
            if len(self.module_scope.bindings[binding.name]) == 1
        ]

    def single_return(
        self, func: cst.BaseExpression, scope: Scope, order: int
    ) -> ReturnSite | None:
        """The one `return value` of the module's own function that `func` names, if it has
        exactly one: how helpers are followed one level deep."""
        if not isinstance(func, cst.Name):
            return None
        found = self.lookup(func.value, scope, order)
        if found is None or len(found[1]) != 1:
            return None
        definition = found[1][0].statement
        if not isinstance(definition, cst.FunctionDef):
            return None
        returns = self.returns.get(definition, [])
        if len(returns) != 1 or returns[0].node.value is None:
            return None
        return returns[0]

    def call_site(self, call: cst.Call) -> CallSite | None:
        if self._call_sites is None:
            self._call_sites = {site.node: site for site in self.calls}
        return self._call_sites.get(call)

    def references(self, name: str, scope: Scope) -> list[Reference]:
        """The uses of `name` that refer to its binding in `scope`, in source order.

        The index of every use in the file is built on the first call, in one extra pass.
        """
        if self._references is None:
            collector = _ReferenceCollector(self)
            walk(self._module, collector)
            self._references = collector.found
        return [r for r in self._references.get(name, ()) if self._refers_to(r, name, scope)]

    @staticmethod
    def _refers_to(reference: Reference, name: str, scope: Scope) -> bool:
        current: Scope | None = reference.scope
        inner: Scope | None = None
        while current is not None and current is not scope:
            declared = name in current.bindings or name in current.declarations
            shadows = declared and name not in current.globals
            if shadows and _sees_names_of(inner, current):
                return False
            inner, current = current, current.parent
        return current is scope

    def lookup(self, name: str, scope: Scope, order: int) -> tuple[Scope, list[Binding]] | None:
        """The bindings of `name` that can reach a reference made in `scope` at `order`."""
        current: Scope | None = scope
        inner: Scope | None = None
        while current is not None:
            if current.kind == "class" and not _sees_names_of(inner, current):  # hot: test kind
                inner, current = current, current.parent
                continue
            if name in current.globals:
                current = current.module()
            bindings = current.bindings.get(name)
            if not bindings and name not in self.declared_global:
                bindings = current.declarations.get(name)  # local, with no value known
            if bindings:
                if inner is None:
                    earlier = [b for b in bindings if b.order < order]
                    return current, earlier or bindings
                return current, bindings
            inner, current = current, current.parent
        return None

    def qualified_names(
        self, expr: cst.BaseExpression, scope: Scope, order: int
    ) -> set[str] | None:
        """Every qualified name `expr` may stand for, or None if any of them is unknown. A name
        from one of the project's own modules stands for what that module binds it to."""
        names = self.spelled_names(expr, scope, order)
        if names is None or self.project is None:
            return names
        return self.project.resolve(names)

    def origin(
        self, expr: cst.BaseExpression, scope: Scope, order: int
    ) -> tuple[str, str, str] | None:
        """(name, what it stands for, the project file it came from) for the shortest head of
        `expr` (`tf` in `tf.Session`, `B.tf` in `B.tf.Session`) that was imported from another
        module of the project; None when none was."""
        if self.project is None:
            return None
        heads = []
        while isinstance(expr, cst.Attribute):
            heads.append(expr)
            expr = expr.value
        heads.append(expr)
        for head in reversed(heads):
            spelled = self.spelled_names(head, scope, order)
            if spelled is None or len(spelled) != 1:
                return None
            resolved = self.project.resolve(spelled)
            through = self.project.via(next(iter(spelled)))
            if resolved and through is not None:
                return dotted_name(head) or "", " or ".join(sorted(resolved)), through
        return None

    def spelled_names(
        self, expr: cst.BaseExpression, scope: Scope, order: int, depth: int = 0
    ) -> set[str] | None:
        """qualified_names, as this module's own imports spell them."""
        if depth > 8:
            return None
        if isinstance(expr, cst.Attribute):
            heads = self.spelled_names(expr.value, scope, order, depth + 1)
            return None if heads is None else {f"{h}.{expr.attr.value}" for h in heads}
        if not isinstance(expr, cst.Name):
            return None
        found = self.lookup(expr.value, scope, order)
        if found is None:
            stars = scope.module().star_imports
            if self.project is not None and stars:
                source = self.project.star_source(stars, expr.value)
                return None if source is None else {member(source, expr.value)}
            stars = [star for star in stars if not star.startswith(".")]  # the project's, unread
            return {member(module, expr.value) for module in stars} if len(stars) == 1 else None
        names: set[str] = set()
        for binding in found[1]:
            if binding.kind == "import" and binding.qualified is not None:
                names.add(binding.qualified)
            elif binding.kind == "assign" and isinstance(binding.value, (cst.Name, cst.Attribute)):
                inner = self.spelled_names(binding.value, binding.scope, binding.order, depth + 1)
                if inner is None:
                    return None
                names |= inner
            else:
                return None
        return names

    def api_of(self, expr: cst.BaseExpression, scope: Scope, order: int) -> str | None:
        """The TF API ('Session', 'ConfigProto', ...) `expr` names, if every binding agrees."""
        key = (id(expr), id(scope), order)  # both live as long as this table
        if key in self._apis:
            return self._apis[key]
        names = self.qualified_names(expr, scope, order)
        apis = {self.api.canonical_api(name) for name in names or ()}
        api = self._apis[key] = apis.pop() if len(apis) == 1 else None
        return api

    def namespaces_of(self, expr: cst.BaseExpression, scope: Scope, order: int) -> set[str]:
        """The known TF namespaces `expr` may name; empty if any binding is something else."""
        names = self.qualified_names(expr, scope, order)
        namespaces = {self.api.namespace_of(name) for name in names or ()}
        return set() if None in namespaces else namespaces  # type: ignore[return-value]
