"""The configuration dataflow of a session site: the config a session entry point is given,
followed through variables (and their later uses), helper functions and the project's other
modules, and whether it limits GPU memory: AWARE, MISSING (with the edits that would make it
so), DISABLED or UNKNOWN. The session family reports the verdicts; the whole-script family
compares them between sessions."""

from __future__ import annotations

import enum
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import libcst as cst

from tfmemlint.fixing import fixes
from tfmemlint.model import Edit
from tfmemlint.project.names import Binding, CallSite, ReturnSite, Scope, dotted_name
from tfmemlint.rules import literals
from tfmemlint.rules.process_settings import process_wide
from tfmemlint.rules.runtime import starts_runtime
from tfmemlint.rules.session_sites import EntryPoint, entry_point
from tfmemlint.rules.tensorflow_api import (
    CONFIG_PB2,
    TF1,
    TF1_COMPAT,
    canonical_api,
    provides_config_protos,
)

if TYPE_CHECKING:
    from tfmemlint.checking.engine import FileContext


class State(enum.IntEnum):
    """Ordered so that combining several sources keeps the strongest: max() wins."""

    MISSING = 0
    DISABLED = 1
    UNKNOWN = 2
    AWARE = 3


@dataclass(frozen=True)
class Verdict:
    state: State
    reason: str = ""
    fix: tuple[str, tuple[Edit, ...]] | None = None  # (help message, edits) for MISSING

    @staticmethod
    def combine(verdicts: list[Verdict], fix: tuple[str, tuple[Edit, ...]] | None) -> Verdict:
        """The strongest verdict; a MISSING result takes the caller's fix, else the inner one."""
        if not verdicts:
            return Verdict(State.MISSING, fix=fix)
        best = max(verdicts, key=lambda v: v.state)
        if best.state is State.MISSING:
            return Verdict(State.MISSING, best.reason, fix or best.fix)
        return best


AWARE = Verdict(State.AWARE)


def _names_a_remote_server(value: cst.BaseExpression) -> bool:
    """A target built from a literal that names a server's address (`"grpc://" +
    os.environ["COLAB_TPU_ADDR"]`, `f"grpc://{host}:8470"`): another machine's, whatever
    follows."""
    while isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add):
        value = value.left
    if isinstance(value, cst.FormattedString):
        first = value.parts[0] if value.parts else None
        head = first.value if isinstance(first, cst.FormattedStringText) else ""
    else:
        head = literals.string(value) or ""
    return "://" in head


class SessionConfig:
    def __init__(
        self,
        ctx: FileContext,
        site: CallSite,
        entry: EntryPoint,
        spelling: cst.BaseExpression,
        anchor: cst.CSTNode | None = None,
    ) -> None:
        self.ctx = ctx
        self.site = site
        self.call = site.node
        self.entry = entry
        self.spelling = spelling
        # Where the config is used: the call, or the `return` of a helper that builds it.
        self.anchor = anchor or site.node
        self.depth = 0
        self.names = ctx.names

    @cached_property
    def label(self) -> str:
        """The call as messages name it: "`tf.Session()`", and where its module came from."""
        func = self.call.func
        label = f"`{dotted_name(func) or ' '.join(self.ctx.code(func).split())}()`"
        return label + self.ctx.origin_note(func, self.site.scope, self.site.order)

    # -- entry --------------------------------------------------------------------------------
    def assess(self) -> tuple[Verdict, cst.Arg | None]:
        """What the session gets, and the argument that carries its config (if any); worked
        out once per call, since the session and whole-script families both ask."""
        memo = self.ctx.cache.setdefault("assess", {})
        assert isinstance(memo, dict)
        if self.anchor is self.call and self.call in memo:
            return memo[self.call]
        verdict = self._assess()
        if self.anchor is self.call:
            memo[self.call] = verdict
        return verdict

    def _assess(self) -> tuple[Verdict, cst.Arg | None]:
        until = self._first_op_after() if self.entry.starts_at_first_op else None
        if process_wide(self.ctx).limits_memory_for(self.site, until):
            return AWARE, None
        on_server = self._on_server()
        if on_server is not None:
            return on_server, None
        fraction = self._own_fraction()
        if fraction is not None:
            return fraction, None
        config, dynamic = self.config_argument()
        if config is None and dynamic:
            reason = "its config may hide among * or ** or positional arguments"
            return Verdict(State.UNKNOWN, reason), None
        if config is None or literals.is_none(config.value):
            return (AWARE if self.entry.missing_is_fine else Verdict(State.MISSING)), config
        if self.entry.creator:
            # The creator's own constructor is an entry point, checked where it is built.
            return Verdict(
                State.UNKNOWN, "its session creator is checked where it is built"
            ), config
        return self._config_expression(config.value), config

    def _first_op_after(self) -> int:
        """Where, in the call's own scope, the runtime may first start after it: the first call
        that starts it or that may run anything (a function of the module, `print`), rather
        than configure TensorFlow or set a variable (`os.environ.setdefault`)."""
        names = self.ctx.names
        for site in names.calls:
            if site.scope is not self.site.scope or site.order <= self.site.order:
                continue
            api = names.api_of(site.node.func, site.scope, site.order)
            if starts_runtime(api) or (
                api is None and not (dotted_name(site.node.func) or "").startswith("os.")
            ):
                return site.order
        return sys.maxsize

    # The APIs that build a server, whose `.target` a session may run on.
    SERVERS = (
        "train.Server",
        "train.Server.create_local_server",
        "distribute.Server",
        "distribute.Server.create_local_server",
    )

    def _on_server(self) -> Verdict | None:
        """The verdict for a call that runs on a server rather than in this process; None for
        one in this process (no target, `""`) or whose target cannot be told (a flag).

        A remote target spelled out (`"grpc://host:2222"`) is that machine's server's to
        limit; a server of this module's is checked where it is built; the `.target` of a
        server built out of sight (an object named like one: `server`, `self._server`) is for
        the off-by-default TFM190. Any other target (`FLAGS.target`, `args.master`) may be
        `""`: this process's own."""
        target = self._target()
        if target is None:
            return None
        argument, (value, scope, order) = target
        text = literals.string(value)
        if text is not None:
            return AWARE if text else None
        if _names_a_remote_server(value):
            return AWARE
        if not (isinstance(value, cst.Attribute) and value.attr.value == "target"):
            return None
        if self._is_server(value.value, scope, order):
            return AWARE
        holder = dotted_name(value.value) or ""
        if "server" not in holder.rpartition(".")[2].lower():
            return None
        spelled = " ".join(self.ctx.code(argument.value).split())
        return Verdict(State.UNKNOWN, f"it runs on `{spelled}`, a server built out of sight")

    def on_another_machine(self) -> bool:
        """Whether the call runs on a server whose address it spells (`"grpc://host:2222"`,
        `"grpc://" + address`): that machine's process holds the GPU memory, not this one."""
        target = self._target()
        return target is not None and _names_a_remote_server(target[1][0])

    def _target(self) -> tuple[cst.Arg, tuple[cst.BaseExpression, Scope, int]] | None:
        """The argument the call takes its server in, and what it stands for (`bound_value`)."""
        if self.entry.target is None:
            return None
        argument = self._argument(*self.entry.target)
        if argument is None:
            return None
        return argument, self.bound_value(argument.value, self.site.scope, self.site.order)

    def _is_server(self, expr: cst.BaseExpression, scope: Scope, order: int) -> bool:
        """Whether `expr` is a server built here: a call to one, or a name every binding of
        which is (`server = tf.train.Server(...)` in each branch of an `if`)."""
        if isinstance(expr, cst.Name):
            found = self.names.lookup(expr.value, scope, order)
            bindings = found[1] if found is not None else []
            return bool(bindings) and all(
                b.kind == "assign"
                and isinstance(b.value, cst.Call)
                and self.names.api_of(b.value.func, b.scope, b.order) in self.SERVERS
                for b in bindings
            )
        return isinstance(expr, cst.Call) and (
            self.names.api_of(expr.func, scope, order) in self.SERVERS
        )

    def _argument(self, keyword: str, position: int) -> cst.Arg | None:
        """The call's argument for a parameter, when no * or ** comes before it."""
        positional = 0
        for arg in self.call.args:
            if arg.star:
                return None
            if arg.keyword is not None:
                if arg.keyword.value == keyword:
                    return arg
            elif positional == position:
                return arg
            else:
                positional += 1
        return None

    def bound_value(
        self, expr: cst.BaseExpression, scope: Scope, order: int
    ) -> tuple[cst.BaseExpression, Scope, int]:
        """What a name stands for when it is assigned once where the call sees it (`server`
        in `server.target`), with where that value is; else the expression itself."""
        if isinstance(expr, cst.Name):
            found = self.names.lookup(expr.value, scope, order)
            if found is not None and len(found[1]) == 1 and found[1][0].kind == "assign":
                binding = found[1][0]
                if binding.value is not None:
                    return binding.value, binding.scope, binding.order
        return expr, scope, order

    def _own_fraction(self) -> Verdict | None:
        """contrib.learn.RunConfig(gpu_memory_fraction=F), 4th positional: F in (0, 1) limits
        memory; its default, 1, is the whole GPU. None when the keyword is not given."""
        keyword = self.entry.fraction_keyword
        if keyword is None:
            return None
        positional = [a for a in self.call.args if a.keyword is None and not a.star]
        given = next((a for a in self.call.args if a.keyword and a.keyword.value == keyword), None)
        if given is None and len(positional) > 3:
            given = positional[3]
        if given is None:
            return None
        value = literals.number(given.value)
        if value is None:
            return Verdict(State.UNKNOWN, f"its `{keyword}` is not a literal")
        if 0 < value < 1:
            return AWARE
        return Verdict(State.DISABLED, f"`{keyword}={self.ctx.code(given.value)}`, the whole GPU")

    def config_argument(self) -> tuple[cst.Arg | None, bool]:
        """The argument that carries the config, and whether * or ** arguments could hide it."""
        dynamic = False
        positional = 0
        for arg in self.call.args:
            if arg.star:
                dynamic = True
            elif arg.keyword is not None:
                if arg.keyword.value == self.entry.keyword:
                    return arg, False
            else:
                if positional == self.entry.position and not dynamic:
                    return arg, False
                positional += 1
        if positional > self.entry.max_positional:
            dynamic = True
        return None, dynamic

    # -- what a config expression holds ------------------------------------------------------
    def api(self, expr: cst.BaseExpression) -> str | None:
        return self.names.api_of(expr, self.site.scope, self.site.order)

    def _config_expression(self, expr: cst.BaseExpression) -> Verdict:
        if isinstance(expr, cst.Call) and self.api(expr.func) == "ConfigProto":
            return self._config_call(expr)
        if isinstance(expr, cst.Name):
            return self._variable(expr, "ConfigProto")
        if isinstance(expr, cst.Call):
            helper = self._helper(expr, self.site.scope, self.site.order)
            if helper is not None:
                return helper
        return Verdict(State.UNKNOWN, f"its config `{self.ctx.code(expr)}` is not built here")

    def _returned(
        self, call: cst.Call, scope: Scope, order: int
    ) -> tuple[FileContext, ReturnSite] | None:
        """The module and the one `return value` of the function `call` calls: a function of
        this module, or of another module of the project (`from utils.config import
        session_config`); None for anything else."""
        returned = self.names.single_return(call.func, scope, order)
        if returned is not None:
            return self.ctx, returned
        project = self.names.project
        spelled = self.names.spelled_names(call.func, scope, order)
        if project is None or spelled is None or len(spelled) != 1:
            return None
        name = next(iter(spelled))
        path = project.locate(name)
        other = self.ctx.other_module(path) if path is not None else None
        if other is None:
            return None
        function = cst.Name(name.rpartition(".")[2])
        returned = other.names.single_return(function, other.names.module_scope, sys.maxsize)
        return (other, returned) if returned is not None else None

    def _helper(self, call: cst.Call, scope: Scope, order: int) -> Verdict | None:
        """A config from a function of this module with one `return`, followed one level deep:
        `def get_config(): ...; return config`. None when `call` is no such helper."""
        if self.depth > 0:
            return None
        found = self._returned(call, scope, order)
        if found is None:
            return None
        ctx, returned = found
        assert returned.node.value is not None
        inside = CallSite(self.call, returned.scope, returned.order, returned.ancestry)
        helper = SessionConfig(ctx, inside, self.entry, self.spelling, anchor=returned.node)
        helper.depth = self.depth + 1
        verdict = helper._config_expression(returned.node.value)
        name = dotted_name(call.func)
        if ctx is not self.ctx:
            # Another module's: say where, and offer no fix there, which would change every
            # caller of the helper.
            assert self.names.project is not None
            row = ctx.lines.location(ctx.span(returned.node)[0]).row
            place = f"`{self.names.project.display(ctx.filename)}`, line {row}"
            if verdict.state is State.UNKNOWN:
                return Verdict(State.UNKNOWN, f"{verdict.reason} (in `{name}()`, {place})")
            where = f"`{name}()` builds it in {place}"
            return Verdict(verdict.state, f"{verdict.reason}; {where}" if verdict.reason else where)
        if verdict.state is State.UNKNOWN:
            return Verdict(State.UNKNOWN, f"{verdict.reason} (in `{name}()`)")
        return Verdict(verdict.state, verdict.reason, verdict.fix)

    def _keywords(self, call: cst.Call) -> dict[str, cst.BaseExpression] | None:
        """A proto constructor's keyword arguments; None when some cannot be seen (`**`)."""
        found = {}
        for arg in call.args:
            if arg.keyword is None:
                return None
            found[arg.keyword.value] = arg.value
        return found

    def _config_call(self, call: cst.Call) -> Verdict:
        keywords = self._keywords(call)
        if keywords is None:
            return Verdict(State.UNKNOWN, "its ConfigProto takes ** or positional arguments")
        verdicts = []
        gpu_options = keywords.get("gpu_options")
        if gpu_options is not None:
            verdicts.append(self._gpu_options_expression(gpu_options))
        if "device_count" in keywords:
            verdicts.append(self._device_count(keywords["device_count"]))
        fix = None
        # The fix costs positions (a whole-module pass): build it only when it will be used.
        if gpu_options is None and Verdict.combine(verdicts, None).state is State.MISSING:
            prefix_edits = self.proto_prefix(call.func)
            if prefix_edits is not None:
                prefix, import_edits = prefix_edits
                field, value = self.ctx.policy.gpu_option
                new = f"{prefix}GPUOptions({field}={value})"
                edit = fixes.add_keyword(self.ctx, call, "gpu_options", new)
                if edit is not None:
                    fix = (f"Add `gpu_options={new}`", (edit, *import_edits))
        return Verdict.combine(verdicts, fix)

    def _device_count(self, expr: cst.BaseExpression) -> Verdict:
        if not isinstance(expr, cst.Dict):
            return Verdict(State.UNKNOWN, "its device_count is not a literal")
        for element in expr.elements:
            if not isinstance(element, cst.DictElement):
                return Verdict(State.UNKNOWN, "its device_count is not a literal")
            if literals.string(element.key) == "GPU":
                count = literals.number(element.value)
                if count is None:
                    return Verdict(State.UNKNOWN, "its GPU device count is not a literal")
                if count == 0:
                    return AWARE
        return Verdict(State.MISSING)

    def _gpu_options_expression(self, expr: cst.BaseExpression) -> Verdict:
        if isinstance(expr, cst.Call) and self.api(expr.func) == "GPUOptions":
            keywords = self._keywords(expr)
            if keywords is None:
                return Verdict(State.UNKNOWN, "its GPUOptions takes ** or positional arguments")
            verdicts = self._gpu_fields(keywords)
            if Verdict.combine(verdicts, None).state is not State.MISSING:
                return Verdict.combine(verdicts, None)  # no fix needed: skip building one
            field, value = self.ctx.policy.gpu_option
            edit = fixes.add_keyword(self.ctx, expr, field, value)
            fix = (f"Add `{field}={value}` to `GPUOptions`", (edit,)) if edit else None
            return Verdict.combine(verdicts, fix)
        if isinstance(expr, cst.Dict):
            keywords = {}
            for element in expr.elements:
                key = literals.string(element.key) if isinstance(element, cst.DictElement) else None
                if key is None or not isinstance(element, cst.DictElement):
                    return Verdict(State.UNKNOWN, "its gpu_options dict is not a literal")
                keywords[key] = element.value
            return Verdict.combine(self._gpu_fields(keywords), None)
        if isinstance(expr, cst.Name):
            return self._variable(expr, "GPUOptions")
        return Verdict(State.UNKNOWN, f"its gpu_options `{self.ctx.code(expr)}` is not built here")

    def _gpu_fields(self, keywords: dict[str, cst.BaseExpression]) -> list[Verdict]:
        verdicts = []
        for name, value in keywords.items():
            verdict = self._field_value(("gpu_options", name), value)
            if verdict is not None:
                verdicts.append(verdict)
        return verdicts

    def _field_value(self, path: tuple[str, ...], value: cst.BaseExpression) -> Verdict | None:
        """What setting `path` (from the ConfigProto down) to `value` means; None: unrelated."""
        if path == ("gpu_options", "allow_growth"):
            flag = literals.boolean(value)
            if flag is None:
                return Verdict(State.UNKNOWN, "its allow_growth is not a literal")
            return AWARE if flag else Verdict(State.DISABLED, "`allow_growth=False`")
        if path == ("gpu_options", "per_process_gpu_memory_fraction"):
            fraction = literals.number(value)
            if fraction is None:
                return Verdict(State.UNKNOWN, "its memory fraction is not a literal")
            if fraction > 0:
                return AWARE
            return Verdict(State.DISABLED, "`per_process_gpu_memory_fraction=0`")
        if path == ("gpu_options", "experimental"):
            if isinstance(value, cst.Call):
                names = {a.keyword.value for a in value.args if a.keyword is not None}
                if "virtual_devices" in names:
                    return AWARE
                if all(a.keyword is not None for a in value.args):
                    return None
            return Verdict(State.UNKNOWN, "its experimental GPU options are not a literal")
        return None

    # -- a config or GPUOptions held in a variable -------------------------------------------
    def _variable(self, name: cst.Name, kind: str) -> Verdict:
        what = f"its config `{name.value}`"
        if name.value in self.names.declared_global:
            return Verdict(State.UNKNOWN, f"{what} is declared global or nonlocal")
        found = self.names.lookup(name.value, self.site.scope, self.site.order)
        if found is None:
            return Verdict(State.UNKNOWN, f"{what} is not defined in this module")
        scope, bindings = found
        same_scope = scope is self.site.scope
        if same_scope:
            binding = bindings[-1]
            if binding.order > self.site.order or not self._dominates(binding):
                return Verdict(State.UNKNOWN, f"{what} may be assigned in several ways")
        elif len(bindings) == 1:
            binding = bindings[0]
        else:
            return Verdict(State.UNKNOWN, f"{what} is assigned more than once")
        value = binding.value
        if binding.kind != "assign" or not isinstance(value, cst.Call):
            return Verdict(State.UNKNOWN, f"{what} is not built in this module")
        if self.names.api_of(value.func, binding.scope, binding.order) == kind:
            built = (
                self._config_call(value)
                if kind == "ConfigProto"
                else self._gpu_options_expression(value)
            )
        else:
            helper = (
                self._helper(value, binding.scope, binding.order) if kind == "ConfigProto" else None
            )
            if helper is None:
                return Verdict(State.UNKNOWN, f"{what} comes from `{self.ctx.code(value.func)}()`")
            built = Verdict(helper.state, helper.reason)  # a fix goes after this line instead
        if built.state is State.UNKNOWN:
            return built
        verdicts = [built] if built.state is not State.MISSING else []
        until = self.ctx.span(self.anchor)[0] if same_scope else None
        late: list[int] = []
        for verdict, row, in_time in self._uses(binding, scope, until):
            if in_time:
                verdicts.append(verdict)
            elif verdict.state is State.AWARE:
                late.append(row)
        result = Verdict.combine(verdicts, self._variable_fix(binding, kind))
        if result.state is State.MISSING and not result.reason and built.reason:
            result = Verdict(State.MISSING, built.reason, result.fix)  # where a helper built it
        if result.state is State.MISSING and late:
            return Verdict(
                State.MISSING,
                f"its memory setting on {self.ctx.place(late[0])} comes after the session, "
                "too late",
                result.fix,
            )
        return result

    def _dominates(self, binding: Binding) -> bool:
        """Whether the binding's statement runs whenever the session call does."""
        if binding.ancestry is None or binding.ancestry.parent is None:
            return False
        block = binding.ancestry.parent.node
        return any(node is block for node in self.site.ancestry) or isinstance(block, cst.Module)

    def _variable_fix(self, binding: Binding, kind: str) -> tuple[str, tuple[Edit, ...]] | None:
        field, value = self.ctx.policy.gpu_option
        path = "gpu_options." if kind == "ConfigProto" else ""
        line = f"{binding.name}.{path}{field} = {value}"
        edit = fixes.insert_line_after(self.ctx, binding, line)
        return (f"Add `{line}` after the config is built", (edit,)) if edit else None

    def _uses(
        self, binding: Binding, scope: Scope, until: int | None
    ) -> Iterator[tuple[Verdict, int, bool]]:
        """Each later use of the variable: (its verdict, its row, whether it runs in time, i.e.
        before the call, or anywhere when the call is in another scope)."""
        after = self.ctx.span(binding.statement)[1] if binding.statement is not None else 0
        prefix = ("gpu_options",) if self._is_gpu_options(binding) else ()
        # A loop entered after the config is built runs its body again before a later session:
        # a setting below the session in that loop still comes in time for it.
        outer_loop = None
        binding_blocks = set(map(id, binding.ancestry or ()))
        for node in self.site.ancestry:
            if isinstance(node, (cst.For, cst.While)) and id(node) not in binding_blocks:
                outer_loop = node
        for reference in self.names.references(binding.name, scope):
            start = self.ctx.span(reference.node)[0]
            if start < after:
                continue
            ancestors = list(reference.parents)
            verdict = self._use(reference.node, ancestors, prefix)
            if verdict is None:
                continue
            in_loop = outer_loop is not None and any(node is outer_loop for node in ancestors)
            in_time = until is None or start < until or in_loop
            yield verdict, self.ctx.lines.location(start).row, in_time

    def _only_reads(self, arg: cst.Arg, call: cst.CSTNode | None) -> bool:
        """Whether `arg` hands the variable to a session entry point as its config, or to a
        ConfigProto as its gpu_options: both only read it."""
        if not isinstance(call, cst.Call):
            return False
        if arg.keyword is not None and arg.keyword.value == "gpu_options":
            return self.api(call.func) == "ConfigProto"
        site = self.names.call_site(call)
        found = entry_point(self.ctx, site) if site is not None else None
        if found is None:
            return False
        config, _ = SessionConfig(self.ctx, site, *found).config_argument()
        return config is arg

    def _is_gpu_options(self, binding: Binding) -> bool:
        value = binding.value
        return isinstance(value, cst.Call) and (
            self.names.api_of(value.func, binding.scope, binding.order) == "GPUOptions"
        )

    def _use(
        self, name: cst.Name, ancestors: list[cst.CSTNode], prefix: tuple[str, ...]
    ) -> Verdict | None:
        """What one use of the variable does to its memory settings; None: nothing.

        `ancestors` are the nodes enclosing the use, innermost first.
        """
        path: list[str] = list(prefix)
        node: cst.CSTNode = name
        index = 0
        while index < len(ancestors):
            parent = ancestors[index]
            if isinstance(parent, cst.Attribute) and parent.value is node:
                path.append(parent.attr.value)
            elif isinstance(parent, cst.Subscript) and parent.value is node:
                element = parent.slice[0].slice if len(parent.slice) == 1 else None
                key = literals.string(element.value) if isinstance(element, cst.Index) else None
                path.append(f"[{key}]")
            else:
                break
            node = parent
            index += 1
        holder = ancestors[index] if index < len(ancestors) else None
        above = ancestors[index + 1] if index + 1 < len(ancestors) else None
        if node is name and isinstance(holder, cst.Arg) and self._only_reads(holder, above):
            return None
        if (
            isinstance(holder, cst.AssignTarget)
            and isinstance(above, cst.Assign)
            and len(above.targets) == 1
            and node is not name
        ):
            if path[-1:] == ["[GPU]"] and path[:-1] == ["device_count"]:
                count = literals.number(above.value)
                if count is None:
                    return Verdict(State.UNKNOWN, "its GPU device count is not a literal")
                return AWARE if count == 0 else None
            if path in (["gpu_options"], ["device_count"]) or "virtual_devices" in path:
                return Verdict(State.UNKNOWN, "a whole sub-message of its config is replaced")
            return self._field_value(tuple(path), above.value)
        if isinstance(holder, cst.Call) and holder.func is node and len(path) > len(prefix):
            method = path[-1]
            if "virtual_devices" in path and method in ("add", "append", "extend"):
                return AWARE
            if method in ("SerializeToString", "ByteSize", "HasField", "ListFields"):
                return None
        return Verdict(State.UNKNOWN, f"`{name.value}` is used in a way that may change it")

    # -- spelling ConfigProto and GPUOptions --------------------------------------------------
    def namespace_head(self, func: cst.BaseExpression) -> tuple[str, set[str]] | None:
        """The longest head of a callee that names TF namespaces holding the protos, as
        (its dotted spelling, those namespaces): `tf.compat.v1` in `tf.compat.v1.train.Server`."""
        head = func.value if isinstance(func, cst.Attribute) else None
        while isinstance(head, (cst.Name, cst.Attribute)):
            namespaces = self.names.namespaces_of(head, self.site.scope, self.site.order)
            spelled = dotted_name(head)  # never the comments or line breaks inside it
            if spelled and namespaces and all(provides_config_protos(n) for n in namespaces):
                return spelled, namespaces
            head = head.value if isinstance(head, cst.Attribute) else None
        return None

    def proto_prefix(
        self, func: cst.BaseExpression, in_tf2: bool = False
    ) -> tuple[str, tuple[Edit, ...]] | None:
        """How to spell `ConfigProto` for the callee `func`: (prefix, import edits), or None.

        The callee's own module prefix comes first (`tf.`, `tf.compat.v1.`, `config_pb2.`); then
        a module-level alias already in reach; then a new `config_pb2` import. `in_tf2`: the
        callee also exists in TF2, where `tf.ConfigProto` does not, so use `tf.compat.v1.`.
        """
        names = self.names
        site = self.site
        head = self.namespace_head(func)
        if head is not None:
            spelled, namespaces = head
            if in_tf2 and TF1 in namespaces:
                return f"{spelled}.compat.v1.", ()
            return f"{spelled}.", ()
        qualified = names.qualified_names(func, site.scope, site.order) or set()
        from_top_level = not in_tf2 and any(
            q.startswith(f"{TF1}.")
            and not q.startswith(("tensorflow.compat.", "tensorflow.python.", "tensorflow.core."))
            for q in qualified
        )
        if self._visible_api("ConfigProto") and self._visible_api("GPUOptions"):
            return "", ()
        for binding in self._module_imports():
            module = binding.qualified or ""
            if module in (TF1_COMPAT, CONFIG_PB2):
                return f"{binding.name}.", ()
            if module == TF1:
                return (f"{binding.name}." if from_top_level else f"{binding.name}.compat.v1."), ()
        if "config_pb2" in names.all_names:
            return None
        edit = self._import_edit(func, "tensorflow.core.protobuf", "config_pb2")
        return ("config_pb2.", (edit,)) if edit else None

    def _visible_api(self, api: str) -> bool:
        return any(
            binding.name == api and canonical_api(binding.qualified or "") == api
            for binding in self._module_imports()
        )

    def _module_imports(self) -> Iterator[Binding]:
        """Imports made at the top level of the module (not under `if` or `try`, which may not
        run), bound once, reaching the call unshadowed and before it, in source order."""
        module_scope = self.names.module_scope
        for binding in self.names.top_level_imports():
            if binding.order > self.site.order and self.site.scope is module_scope:
                continue
            reach = self.names.lookup(binding.name, self.site.scope, self.site.order)
            if reach is not None and reach[1] == [binding]:
                yield binding

    def _import_edit(self, func: cst.BaseExpression, module: str, name: str) -> Edit | None:
        """An edit adding `from module import name` where it keeps the TensorFlow imports in
        order: before the first module-level one that sorts after it, else after the last.
        Without module-level TensorFlow imports, after the import of the call's own name."""
        line = f"from {module} import {name}"
        tensorflow_imports = [
            (imported, binding)
            for binding in self._module_imports()
            if (imported := _imported_module(binding)) and imported.startswith("tensorflow")
        ]
        for imported, binding in tensorflow_imports:
            if imported > module:
                edit = fixes.insert_line_before(self.ctx, binding, line, key=line)
                if edit is not None:
                    return edit
        for _, binding in reversed(tensorflow_imports):
            edit = fixes.insert_line_after(self.ctx, binding, line, key=line)
            if edit is not None:
                return edit
        root: cst.BaseExpression = func
        while isinstance(root, cst.Attribute):
            root = root.value
        if not isinstance(root, cst.Name):
            return None
        found = self.names.lookup(root.value, self.site.scope, self.site.order)
        if found is None or len(found[1]) != 1 or found[1][0].kind != "import":
            return None
        own_import = found[1][0]
        if own_import.order > self.site.order or not self._dominates(own_import):
            return None
        return fixes.insert_line_after(self.ctx, own_import, line, key=line)


def _imported_module(binding: Binding) -> str | None:
    """The module an import statement names: `a.b` for `import a.b` and `from a.b import c`."""
    statement = binding.statement
    if isinstance(statement, cst.ImportFrom) and statement.module is not None:
        return None if statement.relative else dotted_name(statement.module)
    if isinstance(statement, cst.Import):
        return binding.qualified
    return None
