"""The dispatcher's side of a lift: which Triton kernels a launcher launches, the launch's arguments, what the
dispatcher takes as inputs and copies from the launcher, and what the launcher no longer needs."""

from __future__ import annotations

import ast

from ..engines import Engine
from ..repo import RepoModules
from ..syntax import Place, loads, module_level, source_segment, stores
from .provider import unpacked_names
from .tables import PURE_BUILTINS, PURE_MATH, SAME_SHAPE, SHAPE_FACTS, TENSOR_FACTS
from .values import LiftError


def repo_function(modules: RepoModules, module: str, name: str, what: str) -> ast.FunctionDef:
    home, target = modules.resolve(module, name)
    node = modules.definition(home, target) if target else None
    if not isinstance(node, ast.FunctionDef):
        raise LiftError(None, f"{what} {module}.{name} is not a function defined in the repo")
    return node


def kernel_reference(modules: RepoModules, module: str, spelled: ast.expr) -> tuple[str, str] | None:
    """What a name or `module.name` read in `module` refers to in the repo (`RepoModules.reference`), through
    module-level aliases (`alias_value`): what a launch of it launches."""
    found = modules.reference(module, spelled)
    for _ in range(4):
        value = alias_value(modules, *found) if found else None
        if value is None:
            break
        found = modules.reference(found[0], value)
    return found


def alias_value(modules: RepoModules, module: str, name: str) -> ast.expr | None:
    """What `module` binds `name` to where it is an alias of another name on every path: each module-level binding
    of it is `name = <the same name or module.name>` (annotated or not), one at the top level or one in each arm of
    a top-level `if`, and no function rebinds it (`global`). None where it is anything else."""
    tree = modules.tree(module) or ast.Module(body=[], type_ignores=[])
    bindings = [s for s in module_level(tree) if not isinstance(s, ast.If | ast.Try) and name in stores(s)]
    values = [_aliased(b) for b in bindings]
    if not values or None in values or len({ast.dump(v) for v in values}) != 1:
        return None
    if any(isinstance(n, ast.Global) and name in n.names for n in ast.walk(tree)):
        return None
    both_arms = any(
        isinstance(s, ast.If) and _binds_at_top(s.body, name) and _binds_at_top(s.orelse, name) for s in tree.body
    )
    return values[0] if both_arms or any(b in tree.body for b in bindings) else None


def _aliased(statement: ast.stmt) -> ast.expr | None:
    """The name or `module.name` a one-target assignment (annotated or not) binds its target to, else None."""
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name):
        value = statement.value
    elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
        value = statement.value
    else:
        return None
    return value if isinstance(value, ast.Name | ast.Attribute) else None


def _binds_at_top(block: list[ast.stmt], name: str) -> bool:
    return any(name in stores(s) for s in block)


def is_triton_kernel(modules: RepoModules, module: str, name: str | ast.expr) -> bool:
    """`name` (or a name or `module.name` expression), read in `module`, is a function of the repo decorated as a
    Triton kernel (or a module-level alias of one: `alias_value`)."""
    found = kernel_reference(modules, module, ast.Name(name, ast.Load()) if isinstance(name, str) else name)
    node = modules.definition(*found) if found else None
    return isinstance(node, ast.FunctionDef) and any(
        ast.unparse(d.func if isinstance(d, ast.Call) else d).endswith(("jit", "heuristics", "autotune"))
        for d in node.decorator_list
    )


def launched(node: ast.AST) -> ast.expr | None:
    """What `node` launches when it is a `kernel[grid]` or `module.kernel[grid]` subscript, else None."""
    if isinstance(node, ast.Subscript) and (
        isinstance(node.value, ast.Name)
        or (isinstance(node.value, ast.Attribute) and isinstance(node.value.value, ast.Name))
    ):
        return node.value
    return None


def flat_body(launcher: ast.FunctionDef) -> list[ast.stmt]:
    """The launcher's statements as they run around its launches: a `with` that holds a launch (a device context
    around it) stands as its context managers alone, then its body in place (a `with` runs its body once, in
    order); the dispatcher's call goes where the launch was, inside it."""
    return list(_flattened(launcher.body))


def _flattened(body: list[ast.stmt]):
    for statement in body:
        if _holds_launch(statement):
            yield ast.copy_location(ast.With(items=statement.items, body=[]), statement)
            yield from _flattened(statement.body)
        else:
            yield statement


def _holds_launch(statement: ast.stmt) -> bool:
    """A `with` written over several lines whose body launches a kernel (`kernel[grid](...)`), itself or in a
    `with` inside it."""
    return (
        isinstance(statement, ast.With)
        and statement.body[0].lineno > statement.lineno
        and any(
            isinstance(s, ast.Expr)
            and isinstance(s.value, ast.Call)
            and launched(s.value.func) is not None
            or _holds_launch(s)
            for s in statement.body
        )
    )


def launched_kernels(modules: RepoModules, module: str, launcher: str) -> list[str]:
    """The Triton kernels of the repo that `module.launcher` launches by a name of its module (`kernel[grid](...)`);
    one it launches as another module's attribute is the lift's to refuse or take, by its spec."""
    function = repo_function(modules, module, launcher, "the launcher")
    names = [
        node.func.value.id
        for node in ast.walk(function)
        if isinstance(node, ast.Call) and isinstance(launched(node.func), ast.Name)
    ]
    return [name for name in dict.fromkeys(names) if is_triton_kernel(modules, module, name)]


def parameter_names(kernel: ast.FunctionDef) -> list[str]:
    return [a.arg for a in kernel.args.posonlyargs + kernel.args.args + kernel.args.kwonlyargs]


def unread_names(
    launcher: ast.FunctionDef, launches: list[ast.stmt], copied: list[ast.stmt], removed: list[ast.stmt]
) -> list[tuple[int, str, bool]]:
    """(line, name, dropped) of names a copied `a, b = x, y` the launcher keeps binds that it no longer reads;
    `removed`: the copied statements it no longer keeps (`unread_after`). A name whose value has no effect goes
    with its value (dropped), so what only that value read may become unread in turn; any other is written `_`."""
    staying = [
        s
        for s in copied
        if s not in removed and isinstance(s, ast.Assign) and len(s.targets) == 1 and unpacked_names(s.targets[0])
    ]
    kept = [s for s in flat_body(launcher) if s not in launches and s not in removed]
    unread: dict[tuple[int, str], bool] = {}
    while True:
        reads = set().union(*(_reads_kept(s, unread) for s in kept))
        found = {}
        for statement in staying:
            names = unpacked_names(statement.targets[0])
            values = spread_values(statement.value, len(names)) or [None] * len(names)
            gone = {n: v is not None and effect_free(v) for n, v in zip(names, values) if n not in reads}
            if len(gone) == len(names):  # nothing would be left of the statement: its names are written `_`
                gone = dict.fromkeys(gone, False)
            found |= {(statement.lineno, name): dropped for name, dropped in gone.items()}
        if found == unread:
            return [(line, name, dropped) for (line, name), dropped in found.items()]
        unread = found


def _reads_kept(statement: ast.stmt, unread: dict[tuple[int, str], bool]) -> set[str]:
    """The names a statement still reads once the values of its dropped names go."""
    if not (isinstance(statement, ast.Assign) and any(unread.get((statement.lineno, n)) for n in stores(statement))):
        return loads(statement)
    names = unpacked_names(statement.targets[0])
    values = spread_values(statement.value, len(names))
    return set().union(*(loads(v) for n, v in zip(names, values) if not unread.get((statement.lineno, n))))


def spread_values(value: ast.expr, count: int) -> list[ast.expr] | None:
    """The value of each of `count` targets (a tensor's `.shape`, starred or unpacked whole, stands for each target
    it spreads over: it can be indexed); None when they cannot be matched."""
    if not isinstance(value, ast.Tuple):
        return [value] * count if _shape(value) else None
    starred = [e for e in value.elts if isinstance(e, ast.Starred)]
    spread = count - len(value.elts) + 1
    if len(starred) > 1 or (starred and (spread < 1 or not _shape(starred[0].value))):
        return None
    if not starred and len(value.elts) != count:
        return None
    return [v for e in value.elts for v in ([e.value] * spread if isinstance(e, ast.Starred) else [e])]


def _shape(value: ast.expr) -> bool:
    return isinstance(value, ast.Attribute) and value.attr == "shape"


def effect_free(value: ast.expr) -> bool:
    """No call in it but of a pure builtin or math helper (`min`, `triton.cdiv`), and no `:=`: dropping it changes
    nothing."""
    return not any(isinstance(n, ast.NamedExpr) for n in ast.walk(value)) and all(
        isinstance(c.func, ast.Name)
        and c.func.id in PURE_BUILTINS
        or isinstance(c.func, ast.Attribute)
        and c.func.attr in PURE_MATH
        for c in ast.walk(value)
        if isinstance(c, ast.Call)
    )


def unread_statements(
    launcher: ast.FunctionDef, launches: list[ast.stmt], copied: list[ast.stmt]
) -> tuple[list[ast.stmt], list[tuple[int, str, bool]]]:
    """The copied statements the launcher no longer reads once dispatchers make its `launches` (`unread_after`),
    and the names of the `a, b = x, y` it keeps that it no longer reads (`unread_names`), each found again from the
    other until neither changes: `BV = ...` goes once `NK, NV = cdiv(K, BK), cdiv(V, BV)` drops `NV`."""
    removed, unread = unread_after(launcher, launches, copied, []), []
    while True:
        found = unread_names(launcher, launches, copied, removed)
        again = unread_after(launcher, launches, copied, found)
        if (again, found) == (removed, unread):
            return removed, unread
        removed, unread = again, found


def unread_after(
    launcher: ast.FunctionDef, launches: list[ast.stmt], copied: list[ast.stmt], unread: list[tuple[int, str, bool]]
) -> list[ast.stmt]:
    """The copied statements the launcher no longer reads once dispatchers make its `launches`; `unread`: the names
    of kept `a, b = x, y` that go with their values (`unread_names`), whose values read nothing any more."""
    dropped = {(line, name): gone for line, name, gone in unread}
    body = flat_body(launcher)
    rest = set().union(*(loads(s) for s in body if s not in launches and s not in copied))
    staying, removed = list(copied), []
    changed = True
    while changed:
        changed = False
        for statement in list(staying):
            others = rest.union(*(_reads_kept(s, dropped) for s in staying if s is not statement))
            if not set(stores(statement)) & others:
                staying.remove(statement)
                removed.append(statement)
                changed = True
    return sorted(removed, key=body.index)


def defaults_the_helper_would_fill(
    kernel: ast.FunctionDef,
    launcher_file: str,
    launch: ast.Expr,
    inputs: list[str],
    arguments: list[tuple[str, str]],
    kernel_source: str,
    engine: Engine,
) -> list[tuple[str, str]]:
    """Kernel parameters the launch leaves to their defaults that the engine's helper would fill: from an input
    of their name (`x`, `x_ptr`, `X`, `X_PTR`) or from a bound input's stride (`<x>_stride[_N]`). Each is
    passed its default explicitly, so the dispatcher launches what the launcher did."""
    names = parameter_names(kernel)
    passed = {name for name, _ in arguments}
    bound = passed | {t for n in inputs if (t := engine.binding_target(n, set(names))) is not None}
    positional = kernel.args.posonlyargs + kernel.args.args
    defaults = {a.arg: d for a, d in zip(positional[::-1], kernel.args.defaults[::-1])}
    defaults.update({a.arg: d for a, d in zip(kernel.args.kwonlyargs, kernel.args.kw_defaults) if d is not None})
    filled = []
    for name in names:
        if name in passed:
            continue
        stem, separator, dim = name.rpartition("_stride") if "_stride" in name else name.rpartition("_STRIDE")
        dim = dim.removeprefix("_")
        source = stem if stem in bound else f"{stem}_ptr" if separator == "_stride" else f"{stem}_PTR"
        strided = bool(separator) and (not dim or dim.isdigit()) and source in bound
        if name in bound or strided:
            if name not in defaults:
                raise LiftError(
                    Place(launcher_file, launch.lineno),
                    f"the engine's helper would fill the kernel parameter {name}, which the launch does not pass",
                )
            filled.append((name, source_segment(kernel_source, defaults[name])))
    return filled


def check_copies(
    module: str, launcher: ast.FunctionDef, launch: ast.stmt, inputs: list[str], copied: list[ast.stmt]
) -> None:
    """The dispatcher can copy these statements: none of them shares its line with another statement, and none
    sets a name the dispatcher takes as an input (the copy would overwrite what the launcher passes)."""
    body = flat_body(launcher)
    lines = [s.lineno for s in body]
    for statement in copied:
        if lines.count(statement.lineno) > 1 or body[lines.index(statement.lineno)] is not statement:
            raise LiftError(
                Place(module, statement.lineno),
                "this line holds several statements; split it before the lift copies one of them",
            )
        clobbered = sorted(set(stores(statement)) & set(inputs))
        if clobbered:
            raise LiftError(
                Place(module, statement.lineno),
                f"the launch needs {', '.join(clobbered)} as the launcher "
                "leaves it, which this statement (copied into the dispatcher) would set again",
            )
    if lines.count(launch.lineno) > 1:
        raise LiftError(Place(module, launch.lineno), "the launch shares its line with another statement")
    end = body.index(launch)
    for statement in copied:  # the dispatcher computes it from the inputs as the launch reads them
        read = loads(statement.value if isinstance(statement, ast.Assign) else statement)
        for later in body[body.index(statement) + 1 : end]:
            if rebound := sorted(n for n in set(stores(later)) & read if not _same_shape(statement, later, n)):
                raise LiftError(
                    Place(module, later.lineno),
                    f"line {statement.lineno} computes what the launch reads from {', '.join(rebound)}, which this "
                    "statement sets again before the launch: the dispatcher would compute it from the new value. "
                    "Compute it after this line, or give the new value a name of its own",
                )
    local = {s.name for s in body[:end] if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)}
    local |= {
        t.id for s in body[:end] if isinstance(s, ast.Assign) and isinstance(s.value, ast.Lambda) for t in s.targets
    }
    for node in (n for s in [*copied, launch] for n in ast.walk(s)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in local & set(inputs):
            raise LiftError(
                Place(module, node.lineno),
                f"the launch calls {node.func.id}, a function the launcher defines: the dispatcher would take it as "
                "an input, which its warmup cannot give. Write what it computes in the launcher",
            )


def _same_shape(reader: ast.stmt, rebinding: ast.stmt, name: str) -> bool:
    """`reader` reads only the shape of the tensor `name` (`x.shape[0]`, `x.size(1)`, `len(x)`), and `rebinding`
    is `name = name.<method>(...)` of a method that keeps it (`x = x.to(torch.int64)`): the value is the same."""
    match rebinding:
        case ast.Assign(
            targets=[ast.Name(id=target)], value=ast.Call(func=ast.Attribute(value=ast.Name(id=held), attr=method))
        ) if target == held == name and method in SAME_SHAPE:
            pass
        case _:
            return False
    nodes = list(ast.walk(reader))
    shaped = {id(n.value) for n in nodes if isinstance(n, ast.Attribute) and n.attr in SHAPE_FACTS}
    shaped |= {id(n.args[0]) for n in nodes if isinstance(n, ast.Call) and loads(n.func) == {"len"} and n.args}
    return all(id(n) in shaped for n in nodes if isinstance(n, ast.Name) and n.id == name)


def launch_statement(
    modules: RepoModules, module: str, launcher: ast.FunctionDef, kernel_module: str, kernel: str
) -> ast.Expr | None:
    """The launcher's `kernel[grid](...)` statement at its top level, or in a `with` there (`flat_body`)."""
    for statement in flat_body(launcher):
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
            spelled = launched(statement.value.func)
            if spelled is not None and kernel_reference(modules, module, spelled) == modules.resolve(
                kernel_module, kernel
            ):
                return statement
    return None


def launch_arguments(launch: ast.Expr, kernel_parameters: list[str], module: str, source: str) -> list[tuple[str, str]]:
    call = launch.value
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        raise LiftError(Place(module, launch.lineno), "the launch unpacks its arguments (*args/**kwargs)")
    if any(isinstance(n, ast.NamedExpr) for n in ast.walk(call)):
        raise LiftError(
            Place(module, launch.lineno), "the launch binds a name with `:=`; bind it on a line of its own before it"
        )
    if len(call.args) > len(kernel_parameters):
        raise LiftError(Place(module, launch.lineno), "the launch passes more arguments than the kernel takes")
    named = [(name, source_segment(source, value)) for name, value in zip(kernel_parameters, call.args)]
    return named + [(k.arg, source_segment(source, k.value)) for k in call.keywords]


def dispatcher_inputs(
    modules: RepoModules, module: str, launcher: ast.FunctionDef, launch: ast.Expr
) -> tuple[list[str], list[ast.stmt]]:
    """The dispatcher's parameters (what the launch reads that the launcher does not compute purely before it)
    and the launcher's statements it copies (those pure computations, in order)."""
    body = flat_body(launcher)
    before = body[: body.index(launch)]
    pure_calls = frozenset(PURE_BUILTINS | PURE_MATH | TENSOR_FACTS | set(modules.engine.device_queries))
    definitions: dict[str, list[ast.stmt]] = {}
    for statement in before:
        for name in dict.fromkeys(stores(statement)):
            definitions.setdefault(name, []).append(statement)
    parameters = [a.arg for a in launcher.args.posonlyargs + launcher.args.args + launcher.args.kwonlyargs]
    inputs: list[str] = []
    kept: list[ast.stmt] = []

    def need(node: ast.AST) -> None:
        for name in sorted(
            {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)},
            key=lambda n: (n not in parameters, n),
        ):
            statements = definitions.get(name, [])
            if len(statements) == 1 and _pure_assignment(statements[0], name, pure_calls):
                if statements[0] not in kept:
                    kept.append(statements[0])
                    need(statements[0].value if isinstance(statements[0], ast.Assign) else statements[0])
            elif statements or name in parameters:
                if name not in inputs:
                    inputs.append(name)

    need(launch)
    order = {name: i for i, name in enumerate(parameters)}
    inputs.sort(
        key=lambda n: (order.get(n, len(order)), min((before.index(s) for s in definitions.get(n, [])), default=0))
    )
    return inputs, kept


def _pure_assignment(statement: ast.stmt, name: str, pure_calls: frozenset[str]) -> bool:
    """`name = <expression>` that allocates nothing and calls only `pure_calls` (shape arithmetic, the engine's
    device queries), or an if/else of such assignments under such a condition (copied into the dispatcher)."""
    if isinstance(statement, ast.If):  # each branch sets every name it sets, from what was there before
        sets = [{n for s in branch for n in stores(s)} for branch in (statement.body, statement.orelse)]
        return (
            name in sets[0]
            and sets[0] == sets[1]
            and not sets[0] & loads(statement)
            and _pure_expression(statement.test, pure_calls)
            and all(
                _pure_assignment(s, n, pure_calls) for s in statement.body + statement.orelse for n in stores(s)[:1]
            )
        )
    if not (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and (
            isinstance(statement.targets[0], ast.Name)
            and statement.targets[0].id == name
            or name in unpacked_names(statement.targets[0])
        )
    ):
        return False
    return _pure_expression(statement.value, pure_calls)


def _pure_expression(expression: ast.expr, pure_calls: frozenset[str]) -> bool:
    for node in ast.walk(expression):
        if isinstance(node, ast.Call):
            func = node.func
            callee = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if callee not in pure_calls:
                return False
        if isinstance(node, (ast.NamedExpr, ast.Await, ast.Yield, ast.Lambda)):
            return False
    return True
