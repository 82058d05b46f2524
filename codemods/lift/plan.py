"""`plan_lift`: the pipeline from a kernel, its launcher and the legacy step that warms it to what the lift writes."""

from __future__ import annotations

import ast
import dataclasses
import symtable
from typing import Any

from ..repo import RepoModules
from ..syntax import body_stores, loads, module_level, module_names, parameters, source_segment, stores
from . import emit
from .dispatcher import (
    alias_value,
    check_copies,
    defaults_the_helper_would_fill,
    dispatcher_inputs,
    flat_body,
    is_triton_kernel,
    kernel_reference,
    launch_arguments,
    launch_statement,
    launched,
    parameter_names,
    repo_function,
    unread_statements,
)
from .evaluator import Scope
from .provider import Lift
from .tables import LOGGING, SAME_TENSOR
from .values import DEVICE, Device, Facts, Keywords, LiftError, MaybeTensor, Tensor, Unknown, Value, per_case


@dataclasses.dataclass(frozen=True)
class LiftPlan:
    """What the lift writes into the kernel's module, and what it needs from the registration."""

    provider: str  # the provider function's source
    dispatcher: str  # the decorated dispatcher's source up to its body (decorator and def line)
    returned: str  # the dispatcher's last statement: `return <grid>, dict(<launch arguments>)`
    copied_lines: tuple[int, ...]  # the launcher's statements the dispatcher's body copies, in order
    removed_lines: tuple[int, ...]  # ... those the launcher no longer reads once its launch is the dispatcher's
    unread: tuple[tuple[int, str, bool], ...]  # (line, name, dropped): a kept `a, b = ...`'s names it no longer reads
    launch_line: int  # the launcher's `kernel[grid](...)` statement, replaced by `dispatch_call`
    launcher_line: int  # the launcher's `def` line (every line here is the file's)
    dispatch_call: str
    parameters: tuple[tuple[str, str], ...]  # the provider's keyword parameters, with what the step read for each
    helper_names: tuple[tuple[str, str], ...]  # (module, name) the launcher's module imports for the new code


def plan_lift(
    modules: RepoModules,
    *,
    kernel_module: str,
    kernel: str,
    launcher_module: str,
    launcher: str,
    step_module: str,
    step: str,
    dispatcher_name: str,
    provider_name: str,
    together: tuple[tuple[str, str], ...] = (),
    computed: frozenset[str] = frozenset(),
) -> LiftPlan:
    """The dispatcher and provider for `kernel`, launched by `launcher` and warmed by the legacy `step`.

    together: (module, name) of each of the launcher's other kernels the same migration lifts (each to its own
    dispatcher); the launcher may launch no other Triton kernel, since the step's deletion would take that kernel's
    warmup with it. computed: attributes of a step parameter's class that the provider computes as the class's
    property does (from the attributes it reads) instead of taking them whole.
    """
    kernel_def = _checked_kernel(modules, kernel_module, kernel)
    launcher_def = repo_function(modules, launcher_module, launcher, "the launcher")
    launches = _launches(modules, launcher_module, launcher_def, kernel_module, kernel, together)
    launch = launches[0]
    lift = Lift(modules, launcher_module, launcher)
    lift.launcher_def = launcher_def
    step_def = repo_function(modules, step_module, step, "the legacy step")
    launcher_scope = _run_to_launch(lift, step_module, step_def, launcher_module, launcher_def, launch, computed)

    inputs, kept = dispatcher_inputs(modules, launcher_module, launcher_def, launch)
    check_copies(modules.shown(launcher_module), launcher_def, launch, inputs, kept)
    # What the launcher keeps is decided over every launch the migration moves: the dispatchers copy what they
    # need, so a statement only launches read goes even when two of them read it.
    others = [s for other in launches[1:] for s in dispatcher_inputs(modules, launcher_module, launcher_def, other)[1]]
    copied = list(dict.fromkeys(kept + others))
    source = modules.path(launcher_module).read_text()
    launch_kwargs = _launch_kwargs(modules, kernel_module, kernel_def, launcher_module, launch, inputs, source)
    values = [f"{name}={_input_code(modules, launcher_module, launcher_scope, launch, name)}" for name in inputs]
    statements = emit.read_by(lift.statements, f"dict({', '.join(values)})")
    read = emit.provider_reads(modules.where(step_module, step_def), statements, values)
    # What the step read that only the launcher's other kernels use is not this provider's to take.
    used = {name: what for name, what in lift.parameters.items() if name in read}
    provider = emit.provider(
        provider_name, tuple(used), statements, values, _launcher_names(launcher_def, launcher_scope)
    )
    kinds = {name: launcher_scope.env.get(name) for name in inputs}
    tensors = {name: isinstance(v, MaybeTensor) for name, v in kinds.items() if isinstance(v, (Tensor, MaybeTensor))}
    # The kernel as the launcher names it (an import's alias where another module defines it), at module level:
    # the dispatcher's decorator reads it there.
    spelled = ast.unparse(_unaliased(modules, launcher_module, launch.value.func.value))  # `kernel`, `pk.kernel`
    if spelled.split(".")[0] not in module_names(symtable.symtable(source, str(modules.path(launcher_module)), "exec")):
        raise LiftError(
            modules.where(launcher_module, launch),
            f"{launcher} launches the kernel as `{spelled}`, which its module binds only inside a function: the "
            "dispatcher beside the launcher names the kernel at module level (import it there)",
        )
    dispatcher = emit.dispatcher(dispatcher_name, provider_name, spelled, launcher_def, inputs, source, tensors)
    helpers = emit.helper_names(provider, dispatcher, modules.engine)
    if missing := missing_helpers(modules, helpers):
        raise LiftError(
            modules.where(launcher_module, launch),
            f"the engine's contract is older than what the lift writes ({missing}): register this kernel by hand, "
            "with a JIT kernel class",
        )
    removed, unread = unread_statements(launcher_def, launches, copied)
    return LiftPlan(
        provider,
        dispatcher,
        emit.returned(source_segment(source, launch.value.func.slice), launch_kwargs),
        tuple(s.lineno for s in kept),
        tuple(s.lineno for s in removed),
        tuple(unread),
        launch.lineno,
        launcher_def.lineno,
        f"{dispatcher_name}({', '.join(f'{n}={n}' for n in inputs)})",
        tuple(used.items()),
        helpers,
    )


def missing_helpers(modules: RepoModules, helpers: tuple[tuple[str, str], ...] | None = None) -> str:
    """What of `helpers` (those every dispatcher uses unless named) the tree's modules neither define nor import, as
    `module has no a or b` (an older contract); empty where nothing is missing."""
    missing: dict[str, list[str]] = {}
    for module, name in emit.dispatcher_helpers(modules.engine) if helpers is None else helpers:
        if modules.definition(module, name) is None and name not in modules.imports(module):
            missing.setdefault(module, []).append(name)
    return "; ".join(f"{module} has no {' or '.join(names)}" for module, names in missing.items())


def _checked_kernel(modules: RepoModules, kernel_module: str, kernel: str) -> ast.FunctionDef:
    """The kernel's definition, refused unless it is a plain (or heuristics) Triton kernel."""
    kernel_def = repo_function(modules, kernel_module, kernel, "the kernel")
    where = modules.where(kernel_module, kernel_def)
    for decorator in kernel_def.decorator_list:
        written = ast.unparse(decorator.func if isinstance(decorator, ast.Call) else decorator)
        if written.endswith("autotune"):
            raise LiftError(
                where,
                f"{kernel} is autotuned (@{written}): the engine's helper launches an autotuned kernel "
                "for real to pick its config, which a compile-only warmup cannot do; warm it by hand",
            )
        if not (written.endswith("jit") or written.endswith("heuristics")):
            raise LiftError(where, f"{kernel} is decorated with @{written}, not @triton.jit or @triton.heuristics")
    return kernel_def


def _launches(
    modules: RepoModules,
    launcher_module: str,
    launcher_def: ast.FunctionDef,
    kernel_module: str,
    kernel: str,
    together: tuple[tuple[str, str], ...],
) -> list[ast.Expr]:
    """The launcher's top-level `kernel[grid](...)` statement, then those of the kernels lifted with it; refused
    where the launcher launches a kernel twice, or another kernel the migration does not lift."""
    launcher = launcher_def.name
    launch = launch_statement(modules, launcher_module, launcher_def, kernel_module, kernel)
    if launch is None:
        _refuse_alias(modules, launcher_module, launcher_def, kernel_module, kernel)
        raise LiftError(
            modules.where(launcher_module, launcher_def),
            f"{launcher} has no `{kernel}[grid](...)` statement "
            "at its top level (a launch under a condition or in a loop is not lifted)",
        )
    lifted = {modules.resolve(*other) for other in together}
    for node in ast.walk(launcher_def):
        spelled = launched(node) if node is not launch.value.func else None
        if spelled is None:
            continue
        if kernel_reference(modules, launcher_module, spelled) == modules.resolve(kernel_module, kernel):
            raise LiftError(
                modules.where(launcher_module, node),
                f"{launcher} launches {kernel} here too; the lift moves one "
                "launch, and the warmup of this one would be lost (put each on the dispatcher by hand)",
            )
        if is_triton_kernel(modules, launcher_module, spelled) and (
            kernel_reference(modules, launcher_module, spelled) not in lifted
        ):
            name = ast.unparse(spelled)
            raise LiftError(
                modules.where(launcher_module, node),
                f"{launcher} also launches {name}, which the legacy "
                "step warms through the same call: the migration would delete that warmup with the step (lift "
                f"{name} in the same migration, with a spec of its own and its own dispatcher name)",
            )
    launches = [launch]
    for other_module, other in together:
        found = launch_statement(modules, launcher_module, launcher_def, other_module, other)
        if found is None:
            raise LiftError(
                modules.where(launcher_module, launcher_def),
                f"{launcher} has no `{other}[grid](...)` statement at its top level to lift with this one",
            )
        launches.append(found)
    return launches


def _unaliased(modules: RepoModules, module: str, spelled: ast.expr) -> ast.expr:
    """The kernel as the launcher's module names it past its own module-level aliases (`_memcpy = kernel`): the
    dispatcher wraps the kernel itself, which the JIT map and the survey then see as warmed."""
    for _ in range(4):
        value = alias_value(modules, module, spelled.id) if isinstance(spelled, ast.Name) else None
        if value is None:
            break
        spelled = value
    return spelled


def _refuse_alias(
    modules: RepoModules, module: str, launcher: ast.FunctionDef, kernel_module: str, kernel: str
) -> None:
    """Refuse, at the launch, a launch through a name the module binds to the kernel only on some paths."""
    wanted = modules.resolve(kernel_module, kernel)
    bindings = [s for s in module_level(modules.tree(module)) if isinstance(s, ast.Assign | ast.AnnAssign)]
    for statement in flat_body(launcher):
        call = statement.value if isinstance(statement, ast.Expr) else None
        spelled = launched(call.func) if isinstance(call, ast.Call) else None
        if not isinstance(spelled, ast.Name):
            continue
        if any(spelled.id in stores(b) and b.value and modules.reference(module, b.value) == wanted for b in bindings):
            raise LiftError(
                modules.where(module, statement),
                f"{launcher.name} launches {kernel} as `{spelled.id}`, which its module does not bind to {kernel} on "
                "every path (under a condition, to another kernel too, or again through `global`): which kernel "
                f"the launch runs is not known here; launch {kernel} by its own name, or bind the alias once",
            )


def _run_to_launch(
    lift: Lift,
    step_module: str,
    step_def: ast.FunctionDef,
    launcher_module: str,
    launcher_def: ast.FunctionDef,
    launch: ast.Expr,
    computed: frozenset[str],
) -> Scope:
    """Run the step up to its call of the launcher (through the engine functions between them), then the
    launcher up to the launch: the launcher's scope there, whose names hold what the launch reads."""
    modules, launcher = lift.modules, launcher_def.name
    step_scope = Scope(lift, step_module, step_def, {})
    for argument in step_def.args.posonlyargs + step_def.args.args + step_def.args.kwonlyargs:
        annotation = ast.unparse(argument.annotation) if argument.annotation else ""
        cls = _annotated_class(modules, step_module, argument.annotation)
        step_scope.env[argument.arg] = (
            DEVICE
            if argument.arg == "device" or "device" in annotation
            else Facts(argument.arg, _tensor_fields(cls), _properties(cls, computed))
        )
    wanted = modules.resolve(launcher_module, launcher)

    def towards_launcher(scope: Scope, statement: ast.stmt) -> ast.Call | None:
        """The statement's call of the launcher, or of an engine function that (in turn) calls it."""
        call = getattr(statement, "value", None) if isinstance(statement, (ast.Expr, ast.Assign, ast.Return)) else None
        if isinstance(call, ast.Call) and _called_name(call.func) not in scope.env:
            target = modules.callee(scope.module, scope.function, call.func)
            if target is not None and (target == wanted or modules.reaches(*target, wanted)):
                return call
        return None

    check_step(modules, step_module, step_def, wanted)
    scope, call = step_scope, lift.walk(step_scope, step_def.body, towards_launcher, gates=True)
    while call is not None and modules.callee(scope.module, scope.function, call.func) != wanted:
        # An engine function between the step and the launcher (the op the step calls): run it too.
        home, name = modules.callee(scope.module, scope.function, call.func)
        function = modules.definition(home, name)
        inner = Scope(lift, home, function, {})
        inner.env.update(_bind_call(scope, function, call, inner, forwards=True))
        scope, call = inner, lift.walk(inner, function.body, towards_launcher)
    if call is None:
        raise LiftError(
            modules.where(step_module, step_def),
            f"{step_def.name} never calls {launcher} (or an engine "
            "function that calls it) as a statement the lift follows",
        )
    launcher_scope = Scope(lift, launcher_module, launcher_def, {})
    bound = _bind_call(scope, launcher_def, call, launcher_scope)
    missing = [a.arg for a in launcher_def.args.args + launcher_def.args.kwonlyargs if a.arg not in bound]
    if missing:
        raise LiftError(modules.where(step_module, call), f"the step's call passes no {', '.join(missing)}")
    launcher_scope.env.update(bound)
    if lift.walk(launcher_scope, launcher_def.body, lambda scope, s: s if s is launch else None) is None:
        raise LiftError(
            modules.where(launcher_module, launch),
            "the step's arguments never reach the launch (the launcher returns before it)",
        )
    return launcher_scope


def _launch_kwargs(
    modules: RepoModules,
    kernel_module: str,
    kernel_def: ast.FunctionDef,
    launcher_module: str,
    launch: ast.Expr,
    inputs: list[str],
    source: str,
) -> list[str]:
    """The dispatcher's launch arguments: every kernel argument the launch passes (or the helper would fill)
    that no dispatcher input binds by the helper's naming rule."""
    shown = modules.shown(launcher_module)
    kernel_parameters = parameter_names(kernel_def)
    arguments = launch_arguments(launch, kernel_parameters, shown, source)
    arguments += defaults_the_helper_would_fill(
        kernel_def, shown, launch, inputs, arguments, modules.path(kernel_module).read_text(), modules.engine
    )
    names, passed, binding_target = set(kernel_parameters), dict(arguments), modules.engine.binding_target
    omitted = set()
    for name in inputs:
        target = binding_target(name, names)
        if (
            target is not None
            and passed[target] == name
            and sum(binding_target(n, names) == target for n in inputs) == 1
        ):
            omitted.add(target)
    return [f"{name}={code}" for name, code in arguments if name not in omitted]


def _input_code(modules: RepoModules, launcher_module: str, scope: Scope, launch: ast.Expr, name: str) -> str:
    """What the provider passes for the dispatcher input `name`: the launch's value of it, as code. A grid the
    launcher computes with a function of its own (`def grid(META)`, which may fill buffers as Triton calls it) is
    None: the helper warms a kernel without launching it, so it never reads the grid."""
    value = scope.env.get(name)
    if isinstance(value, Unknown):
        if name not in _argument_names(launch) and _a_function(scope, name):
            return "None"
        raise value.error
    if value is None:
        raise LiftError(
            modules.where(launcher_module, launch), f"the launch reads {name}, which the lift cannot follow"
        )
    if isinstance(value, Device):
        raise LiftError(modules.where(launcher_module, launch), f"the launch passes a device ({name})")
    return value.code() if isinstance(value, (Tensor, MaybeTensor)) else scope._as_value(launch, value).code


def _argument_names(launch: ast.Expr) -> set[str]:
    """The names the launch's arguments read (not its grid)."""
    call = launch.value
    return set().union(*map(loads, [*call.args, *(k.value for k in call.keywords)]))


def _a_function(scope: Scope, name: str) -> bool:
    """`name` is a function the launcher defines (at its top level or in a branch): a `def`, or a lambda it
    assigns (`grid = lambda META: ...`)."""
    return any(
        isinstance(n, ast.FunctionDef)
        and n.name == name
        or isinstance(n, ast.Assign)
        and isinstance(n.value, ast.Lambda)
        and [ast.unparse(t) for t in n.targets] == [name]
        for n in ast.walk(scope.function)
        if n is not scope.function
    )


def _annotated_class(modules: RepoModules, module: str, annotation: ast.expr | None) -> ast.ClassDef | None:
    """The class of a step parameter (`config: _QwenGDNWarmupConfig`, a dataclass of the step's own module)."""
    spelled = annotation.value if isinstance(annotation, ast.Constant) else annotation
    name = spelled if isinstance(spelled, str) else ast.unparse(spelled) if spelled is not None else ""
    node = modules.definition(module, name) if name.isidentifier() else None
    return node if isinstance(node, ast.ClassDef) else None


def _tensor_fields(cls: ast.ClassDef | None) -> frozenset[str]:
    """The fields a step parameter's class annotates as `torch.Tensor`, so never None."""
    return frozenset(
        s.target.id
        for s in getattr(cls, "body", ())
        if isinstance(s, ast.AnnAssign)
        and isinstance(s.target, ast.Name)
        and ast.unparse(s.annotation) == "torch.Tensor"
    )


def _properties(cls: ast.ClassDef | None, wanted: frozenset[str]) -> tuple[tuple[str, str], ...]:
    """(name, what it returns) for each of `wanted` that the class defines as a property returning one expression."""
    found = []
    for member in getattr(cls, "body", ()):
        if not isinstance(member, ast.FunctionDef) or member.name not in wanted:
            continue
        body = member.body[1:] if ast.get_docstring(member) else member.body
        returns = body[0] if len(body) == 1 and isinstance(body[0], ast.Return) else None
        if [ast.unparse(d) for d in member.decorator_list] == ["property"] and getattr(returns, "value", None):
            found.append((member.name, ast.unparse(returns.value)))
    return tuple(found)


def _called_name(func: ast.expr) -> str | None:
    """The name a call's function starts from (`launch` or `ops` of `ops.launch`): a local of that name is no import."""
    while isinstance(func, ast.Attribute):
        func = func.value
    return func.id if isinstance(func, ast.Name) else None


def check_step(modules: RepoModules, module: str, step: ast.FunctionDef, wanted: tuple[str, str]) -> None:
    """The step goes with the migration: it must call the launcher exactly once and do nothing else that a
    deletion would lose (another kernel's warmup, a call kept for its effect); logging and filling the tensors
    it allocates are fine."""
    reaching = [
        call
        for call in ast.walk(step)
        if isinstance(call, ast.Call)
        and (target := modules.callee(module, step, call.func)) is not None
        and (target == wanted or modules.reaches(*target, wanted))
    ]
    if len(reaching) > 1:
        raise LiftError(
            modules.where(module, reaching[1]),
            f"{step.name} reaches {wanted[1]} more than once; the provider "
            "translates one call (move each into its own step, or write the provider by hand)",
        )
    for statement in (n for n in ast.walk(step) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call)):
        func = statement.value.func
        if (
            statement.value in reaching
            or isinstance(func, ast.Attribute)
            and (
                isinstance(func.value, ast.Name)
                and func.value.id == "logger"
                and func.attr in LOGGING
                or func.attr in SAME_TENSOR
            )
        ):
            continue
        raise LiftError(
            modules.where(module, statement),
            f"{step.name} also runs `{ast.unparse(func)}(...)`, which the "
            "migration would delete with the step; move it out of the step first",
        )


def _launcher_names(launcher_def: ast.FunctionDef, scope: Scope) -> dict[str, str]:
    """The locals the launcher computes (`head_sequences = H * N`, `heads, num_cus = ...`), by what each holds as the
    provider writes it: a value the provider reads twice takes the launcher's name for it."""
    assigned = set(body_stores(launcher_def)) - set(parameters(launcher_def))
    return {
        value.code: name
        for name, value in scope.env.items()
        if name in assigned and isinstance(value, Value) and not value.fixed and not value.code.isidentifier()
    }


def _bind_call(
    scope: Scope, function: ast.FunctionDef, call: ast.Call, callee: Scope, forwards: bool = False
) -> dict[str, Any]:
    """The values `call` passes to `function`'s parameters, and the function's own defaults (read in `callee`, the
    function's scope) for the rest. A `**` of a dict the code builds passes its entries; an entry some cases leave
    out (`**(state if flag else {})`) is the default in those. `forwards`: `function` is one between the step and
    the launcher, whose `**kwargs` holds the keywords it takes no parameter for. What Python would refuse (a
    parameter passed twice, one the function does not take, too many positional arguments) is refused."""
    args = function.args
    positional = [a.arg for a in args.posonlyargs + args.args]
    if args.vararg or args.kwarg and not forwards:
        raise scope.refuse(call, f"{function.name} takes *args/**kwargs: the dispatcher needs explicit parameters")
    if len(call.args) > len(positional):
        raise scope.refuse(
            call, f"passes {len(call.args)} positional arguments, and {function.name} takes {len(positional)}"
        )
    defaults = _parameter_defaults(function)
    names = {*positional, *(a.arg for a in args.kwonlyargs)}
    bound = {name: scope.value(value) for name, value in zip(positional, call.args)}
    extra: dict[str, Any] = {}
    for keyword in call.keywords:
        passed = (
            [(keyword.arg, scope.value(keyword.value))] if keyword.arg else scope.keywords(call, keyword.value).items
        )
        for name, value in passed:
            into = bound if name in names else extra
            if name in bound or name in extra:
                raise scope.refuse(call, f"passes `{name}` twice, which Python refuses")
            if into is extra and not args.kwarg:
                raise scope.refuse(call, f"passes `{name}`, which {function.name} does not take")

            def missing(name: str = name) -> Any:
                if name not in defaults:
                    raise scope.refuse(
                        call, f"`{name}` is left out of the call in some cases, and {function.name} has no default"
                    )
                return callee.value(defaults[name])

            into[name] = per_case(value, missing) if into is bound else value
            if into[name] is None:
                raise scope.refuse(call, f"`{name}` is chosen per case between values the lift cannot write as one")
    for name, default in defaults.items():
        if name not in bound:
            bound[name] = callee.value(default)
    if args.kwarg:
        bound[args.kwarg.arg] = Keywords(tuple(extra.items()))
    return bound


def _parameter_defaults(function: ast.FunctionDef) -> dict[str, ast.expr]:
    args = function.args
    positional = args.posonlyargs + args.args
    out = {a.arg: d for a, d in zip(positional[len(positional) - len(args.defaults) :], args.defaults)}
    out.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
    return out
