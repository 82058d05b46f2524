"""The guards a legacy warmup call ran under, read from the tree, and the gate its registration carries.

A legacy call runs when every condition around it holds: the orchestrator's enclosing `if`s
and early returns, then the legacy function's, then the step's up to the kernel call. Each
conjunct of those conditions is an *atom*, put in canonical terms so two trees' atoms compare:
locals become what they were assigned, parameters the caller's arguments, names their defining
module's qualified names, and the worker's config `@config`.

  * An atom that reads the model or the model runner is a per-layer fact: the layer that
    registers is what the legacy step searched the model for, and the registration's own
    body decides it for that layer.
  * Any other atom is a gate the construction site carries, written in the site's names.
  * The registry's own gate (JIT warmup on) is the contract's: a legacy call that ran without
    it is a difference every migration has, stated in words, never silently.

A spec may write the gate itself; it is then checked against the tree's, and every difference
must be listed in `intended_differences` with a reason, or the migration refuses.
"""

from __future__ import annotations

import ast
import builtins
import copy
import dataclasses
import re

from .findings import PlacedError
from .repo import CallSite, Gate, RepoModules, call_sites, calls_to, method_calls
from .runner_state import runner_config_value
from .spec import MigrationSpec, SpecError
from .syntax import Place, conjuncts, local_names, negated, parameters

CONFIG = "@config"  # the engine's config, however a scope reaches it
WORKER = "@worker"  # the orchestrator's argument
SELF = "@self"  # the object under construction at the site
UNKNOWN = "@local"  # a local the reader cannot follow (a loop variable, an unpacked tuple)
# Calls that walk the model's layers: torch's module tree, or a dict of layers (the engine's forward context maps
# layer names to layers).
LAYER_ITERATORS = {"modules", "named_modules", "children", "named_children", "values", "items"}
CAUGHT = "@caught"  # the legacy call's failures were caught (a `try` around it)


@dataclasses.dataclass
class Frame:
    """One function of the call chain at the point the chain leaves it."""

    module: str
    function: ast.FunctionDef | None
    assigned: dict[str, ast.expr]
    arguments: dict[str, tuple[ast.expr, Frame | None]]
    imports: dict[str, tuple[str, str | None]] = dataclasses.field(default_factory=dict)
    classes: tuple[str, ...] = ()  # at a construction site: what `self` is an instance of (qualified names)
    held: frozenset[str] = frozenset()  # at a construction site: the attributes every built layer of its class has


@dataclasses.dataclass(frozen=True)
class Atom:
    """One conjunct of a gate: `canonical` compares across trees; `written` is what the tree says, at `where`."""

    canonical: str
    written: str
    where: str
    per_layer: bool
    expression: ast.expr = dataclasses.field(compare=False, repr=False)
    spellings: frozenset[str] = dataclasses.field(default=frozenset(), compare=False, repr=False)
    at_layer: bool = False  # a filter of the legacy step's model search, on the layer it kept (codemods.model_search)

    def report(self) -> dict:
        return {"canonical": self.canonical, "written": self.written, "where": self.where, "per_layer": self.per_layer}

    @property
    def caught(self) -> bool:
        """Not a condition: the legacy call ran inside a `try` that caught its failures."""
        return self.canonical.startswith(CAUGHT)

    @property
    def expressible(self) -> bool:
        """The site can write it: it reads neither the worker nor a local the reader cannot follow, and the layer
        only through its attributes (`self.x`, `getattr(self, "x", None)`: the registration is placed after them),
        not as a value handed to a function."""
        text = self.canonical
        if WORKER in text or UNKNOWN in text:
            return False
        return SELF not in text or (self.at_layer and layer_attributes(self.expression) is not None)

    @property
    def unwritable(self) -> str:
        """Why the site cannot write it, in the legacy code's own names (for a refusal; "" where it can)."""
        text = self.canonical
        if UNKNOWN in text:
            names = " and ".join(f"`{n}`" for n in dict.fromkeys(re.findall(rf"{UNKNOWN}:(\w+)", text)))
            return f"it reads {names}, which the legacy code binds to something other than the layer or the config"
        if WORKER in text:
            reads = " and ".join(f"`{r[1:]}`" for r in dict.fromkeys(re.findall(rf"{WORKER}(?:\.\w+)*", text)))
            return f"it reads {reads}, which only the worker has, not a constructor"
        if SELF in text and not self.expressible:
            return "it hands the layer to a call, and what that reads of it is not known where the layer is built"
        return ""


class _Canonical(ast.NodeTransformer):
    """An expression of a frame in canonical terms (see the module docstring)."""

    def __init__(self, modules: RepoModules, frame: Frame, depth: int):
        self.modules, self.frame, self.depth = modules, frame, depth

    def visit_Name(self, node: ast.Name) -> ast.expr:
        frame, name = self.frame, node.id
        if name.startswith("@") or "." in name:
            return node
        if name in frame.assigned and self.depth < 12:
            rest = Frame(
                frame.module,
                frame.function,
                {k: v for k, v in frame.assigned.items() if k != name},
                frame.arguments,
                frame.imports,
            )
            return canonical(self.modules, frame.assigned[name], rest, self.depth + 1)
        if name in frame.arguments:
            value, caller = frame.arguments[name]
            return canonical(self.modules, value, caller, self.depth + 1) if caller else copy.copy(value)
        if frame.function is not None and name in parameters(frame.function):
            return ast.Name(f"{UNKNOWN}:{name}")
        source = frame.imports.get(name) or self.modules.imports(frame.module).get(name)
        if source is not None:
            module, attribute = source
            if attribute is None:
                found = ast.Name(module)
                found.module = name  # a module the tree imports as `name`
                return found
            target, defined = self.modules.resolve(module, attribute)
            found = ast.Name(f"{target}.{defined}" if defined else target)
            found.local = name  # how the tree spells it: the site may import it under the same name
            return found
        if self.modules.definition(frame.module, name) is not None:
            return ast.Name(f"{frame.module}.{name}")
        if hasattr(builtins, name):
            return node
        if frame.function is not None and name in local_names(frame.function):
            return ast.Name(f"{UNKNOWN}:{name}")
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.expr:
        node = self.generic_visit(node)
        value = node.value
        if _of_runner(self.modules, node) == self.modules.engine.config_parameter:
            return ast.Name(CONFIG)  # the runner's config is the worker's
        if isinstance(value, ast.Name) and value.id == WORKER:
            if node.attr == self.modules.engine.config_parameter:
                return ast.Name(CONFIG)
            if node.attr.endswith("_config"):
                return ast.Attribute(ast.Name(CONFIG), node.attr)
        if (
            isinstance(value, ast.Name)
            and "." in value.id
            and not value.id.startswith("@")
            and self.modules.ours(value.id)
            and self.modules.tree(value.id) is not None
        ):
            resolved, name = self.modules.resolve(value.id, node.attr)
            if name and self.modules.definition(resolved, name) is not None:
                found = ast.Name(f"{resolved}.{name}")  # `module.name`: the name where it is defined
                found.through = value.id, node.attr  # read at each use, as an attribute of that module
                return found
        return node

    def visit_NamedExpr(self, node: ast.NamedExpr) -> ast.expr:
        return self.visit(node.value)  # `(x := v)` tests v

    def visit_Compare(self, node: ast.Compare) -> ast.expr:
        """`sys.modules.get("m") is not None` (through a local that holds it, too) as `"m" in sys.modules`."""
        node = self.generic_visit(node)
        left, (op, *more), (right, *_) = node.left, node.ops, node.comparators
        if more or not isinstance(op, (ast.Is, ast.IsNot)) or not isinstance(right, ast.Constant) or right.value:
            return node
        named = isinstance(left, ast.Call) and ast.unparse(left.func) == "sys.modules.get" and left.args[:1]
        if not (named and isinstance(named[0], ast.Constant) and isinstance(named[0].value, str)):
            return node
        test = ast.In() if isinstance(op, ast.IsNot) else ast.NotIn()
        return ast.Compare(named[0], [test], [ast.Attribute(ast.Name("sys"), "modules")])

    def visit_Call(self, node: ast.Call) -> ast.expr:
        node = self.generic_visit(node)
        if (
            isinstance(node.func, ast.Name)
            and node.func.id.rsplit(".", 1)[-1] in self.modules.engine.config_accessors
            and not node.args
            and not node.keywords
        ):
            return ast.Name(CONFIG)
        return node


class _RunnerConfigs(ast.NodeTransformer):
    """`@worker.model_runner.<x>` as what the runner computed it from its config (`runner_config_value`)."""

    def __init__(self, modules: RepoModules):
        self.modules = modules

    def visit_Attribute(self, node: ast.Attribute) -> ast.expr:
        node = self.generic_visit(node)
        if (held := _of_runner(self.modules, node)) and (value := runner_config_value(self.modules, held, CONFIG)):
            return value
        return node

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.expr:
        node = self.generic_visit(node)  # `not runner.is_pooling_model`: `model_config.runner_type != 'pooling'`
        return negated(node.operand) if isinstance(node.op, ast.Not) else node


def _of_runner(modules: RepoModules, node: ast.Attribute) -> str | None:
    """The attribute `node` reads from the worker's model runner (`@worker.model_runner.<it>`), if it reads one."""
    value = node.value
    if (
        isinstance(value, ast.Attribute)
        and isinstance(value.value, ast.Name)
        and value.value.id == WORKER
        and value.attr == modules.engine.runner
    ):
        return node.attr
    return None


def canonical(modules: RepoModules, node: ast.expr, frame: Frame, depth: int = 0) -> ast.expr:
    return _Canonical(modules, frame, depth).visit(copy.deepcopy(node))


def _bind(function: ast.FunctionDef, call: ast.Call, caller: Frame) -> dict[str, tuple[ast.expr, Frame | None]]:
    """The callee's parameters bound to the call's arguments (read in the caller's frame)."""
    positional = [p.arg for p in (*function.args.posonlyargs, *function.args.args)]
    bound = {name: (value, caller) for name, value in zip(positional, call.args) if not isinstance(value, ast.Starred)}
    bound.update({k.arg: (k.value, caller) for k in call.keywords if k.arg is not None})
    return bound


def _function(modules: RepoModules, module: str, name: str) -> ast.FunctionDef | None:
    node = modules.definition(module, name)
    return node if isinstance(node, ast.FunctionDef) else None


def _where(modules: RepoModules, module: str, node: ast.AST) -> Place:
    return modules.where(module, node) if modules.path(module) else Place(module, node.lineno)


def gate_atoms(modules: RepoModules, gates: tuple[Gate, ...], frame: Frame) -> list[Atom]:
    found = []
    for gate in gates:
        condition = gate.test if gate.holds_when else negated(gate.test)
        spelled = {ast.dump(gate.test), ast.dump(condition)}
        tested = frame if gate.assigned is None else dataclasses.replace(frame, assigned=gate.assigned)
        for part in conjuncts(condition):
            form = canonical(modules, part, tested)
            text = ast.unparse(form)
            reads_model = any(f"{WORKER}.{state}" in text for state in modules.engine.model_state)
            per_layer = SELF in text or (reads_model and search_call(modules, form) is not None)
            if reads_model and not per_layer:  # a config the runner holds, such as `runner.speculative_config`
                form = _RunnerConfigs(modules).visit(form)
                text = ast.unparse(form)
            found.append(
                Atom(
                    text,
                    ast.unparse(part),
                    str(_where(modules, frame.module, gate.test)),
                    per_layer,
                    form,
                    frozenset(spelled | {ast.dump(part), ast.dump(form)}),
                )
            )
    return found


def search_call(modules: RepoModules, test: ast.expr) -> ast.Call | None:
    """The call of a repo function that the test only asks whether it found something in the model (`x is not
    None`, `x`, `not x` of its result): the legacy step searching the model for the layers that now register
    themselves. None for any other test of the model (an attribute, a flag): a guard the site cannot write."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], (ast.Is, ast.IsNot))
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    ):
        test = test.left
    if first_layer_found(test) is not None:
        return test
    if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and "." in test.func.id):
        return None
    home, _, name = test.func.id.rpartition(".")
    found = modules.ours(home) and isinstance(modules.definition(home, name), ast.FunctionDef)
    return test if found else None


def first_layer_found(call: ast.expr) -> ast.comprehension | None:
    """`next((m for m in <model>.modules() if ...), None)`: a search of the model written inline, which returns the
    first layer that passes its `if`s; its loop (None for anything else)."""
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "next"):
        return None
    found = call.args[0] if len(call.args) == 2 and not call.keywords else None
    loop = found.generators[0] if isinstance(found, ast.GeneratorExp) and len(found.generators) == 1 else None
    walks = loop and isinstance(loop.iter, ast.Call) and getattr(loop.iter.func, "attr", None) in LAYER_ITERATORS
    return loop if walks and isinstance(found.elt, ast.Name) and ast.dump(found.elt) == ast.dump(loop.target) else None


def layer_attributes(expression: ast.expr) -> dict[str, bool] | None:
    """The layer's (`@self`'s) attributes an expression reads, each with whether it reads it through `getattr` with
    a default or `hasattr` (which do not raise where the layer lacks it); None when it reads the layer otherwise
    (`f(@self)`: what that reads is unknown). `isinstance(@self, C)` reads no attribute."""
    found, held = {}, set()
    for node in ast.walk(expression):
        if isinstance(node, ast.Attribute) and _is_self(node.value):
            found.setdefault(node.attr, False)
            held.add(id(node.value))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr")
            and len(node.args) == (3 if node.func.id == "getattr" else 2)
            and _is_self(node.args[0])
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            found[node.args[1].value] = True
            held.add(id(node.args[0]))
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance" and len(node.args) == 2:
            held.add(id(node.args[0]))  # its type only, which it has from the start
    unknown = any(_is_self(n) and id(n) not in held for n in ast.walk(expression))
    return None if unknown else found


def _is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == SELF


def _sites(modules: RepoModules, module: str, matcher, function: ast.FunctionDef) -> list[CallSite]:
    return call_sites(modules.tree(module), matcher, functions=[function])


class GuardsUnreadable(PlacedError):
    """The legacy call's guards cannot be read (the planner reports it with the run's other refusals)."""


def _chain_into(
    modules: RepoModules,
    spec: MigrationSpec,
    module: str,
    callee_module: str,
    callee: str,
    frame: Frame,
    atoms: list[Atom],
    defined_here: bool = False,
) -> Frame:
    """Follow the one call of `callee_module.callee` in `frame`'s function: its guards join `atoms`."""
    tree = modules.tree(module)
    sites = _sites(modules, module, calls_to(tree, module, callee_module, callee, defined_here), frame.function)
    if not sites:
        for helper in (n for n in tree.body if isinstance(n, ast.FunctionDef) and n is not frame.function):
            if _sites(modules, module, calls_to(tree, module, callee_module, callee, defined_here), helper) and _sites(
                modules, module, calls_to(tree, module, module, helper.name, True), frame.function
            ):
                inner = _chain_into(modules, spec, module, module, helper.name, frame, atoms, defined_here=True)
                return _chain_into(modules, spec, module, callee_module, callee, inner, atoms, defined_here)
        raise GuardsUnreadable(
            _where(modules, module, frame.function),
            f"{frame.function.name} does not call "
            f"{callee} as a plain statement of its own body or of its if/with/try blocks, so "
            "the guards the legacy call runs under cannot be read",
        )
    _refuse_unsaid_returns(modules, module, frame.function, sites, callee)
    shapes = {tuple(a.canonical for a in gate_atoms(modules, site.gates, _with(frame, site))) for site in sites}
    if len(shapes) > 1:
        raise GuardsUnreadable(
            None,
            f"{spec.family}: {module}.{frame.function.name} calls {callee} from {len(sites)} places "
            f"under different guards ({_where(modules, module, sites[0].call)}); one registration "
            "gate cannot stand for them",
        )
    site = sites[0]
    atoms += gate_atoms(modules, site.gates, _with(frame, site)) + _caught(modules, module, frame.function, site.call)
    target = _function(modules, callee_module, callee)
    if target is None:
        raise GuardsUnreadable(
            None, f"{spec.family}: {callee_module}.{callee} is not a function the guards can be read from"
        )
    return Frame(callee_module, target, {}, _bind(target, site.call, _with(frame, site)))


def _refuse_unsaid_returns(
    modules: RepoModules, module: str, function: ast.FunctionDef, sites: list[CallSite], callee: str
) -> None:
    """A return above the call on a path no gate says (in a loop, a `with` or `try` block, a branch that does not
    always leave): the legacy call ran only where it did not return, a condition no registration gate can carry."""
    returned = next((site.after_return for site in sites if site.after_return is not None), None)
    if returned is not None:
        raise GuardsUnreadable(
            _where(modules, module, returned),
            f"{function.name} may return here (inside a loop, a with/try block or one branch of an if) before it "
            f"calls {callee}, so the condition the legacy call ran under cannot be read; write the return as "
            "`if <condition>: return` of its own, or migrate this warmup by hand",
        )


def _caught(modules: RepoModules, module: str, function: ast.FunctionDef, call: ast.Call) -> list[Atom]:
    """A `try` of `function` whose handlers catch what the call raises: the legacy call could fail quietly."""
    found = []
    for node in ast.walk(function):
        if isinstance(node, ast.Try) and node.handlers and any(call in ast.walk(s) for s in node.body):
            caught = ", ".join(ast.unparse(h.type) if h.type else "everything" for h in node.handlers)
            found.append(
                Atom(
                    f"{CAUGHT}:{caught}",
                    f"try: ... except {caught}",
                    str(_where(modules, module, node)),
                    False,
                    ast.Constant(True),
                )
            )
    return found


def _with(frame: Frame, site: CallSite) -> Frame:
    return Frame(frame.module, frame.function, dict(site.assigned), frame.arguments, frame.imports)


def _entry(modules: RepoModules, spec: MigrationSpec) -> Frame:
    entry = _function(modules, spec.legacy.orchestrator_module, modules.engine.orchestrator_entry)
    if entry is None:
        raise SpecError(
            f"{spec.family}: {spec.legacy.orchestrator_module} has no {modules.engine.orchestrator_entry}() to read "
            "the legacy call's guards from"
        )
    worker = parameters(entry)[:1]
    return Frame(spec.legacy.orchestrator_module, entry, {}, {name: (ast.Name(WORKER), None) for name in worker})


def _step(modules: RepoModules, spec: MigrationSpec, atoms: list[Atom]) -> Frame:
    """The frame of the function that warms the kernel (the step, or the legacy function or the orchestrator's
    own step), the guards of the calls on the way there joining `atoms`."""
    frame = _entry(modules, spec)
    if spec.legacy.orchestrator_step:
        return _chain_into(
            modules,
            spec,
            spec.legacy.orchestrator_module,
            spec.legacy.orchestrator_module,
            spec.legacy.orchestrator_step,
            frame,
            atoms,
            defined_here=True,
        )
    frame = _chain_into(
        modules, spec, spec.legacy.orchestrator_module, spec.legacy.module, spec.legacy.function, frame, atoms
    )
    if spec.legacy.step:
        frame = _chain_into(
            modules, spec, spec.legacy.module, spec.legacy.module, spec.legacy.step, frame, atoms, defined_here=True
        )
    return frame


def step_frame(modules: RepoModules, spec: MigrationSpec) -> Frame:
    """The legacy step's names as the call chain from the orchestrator binds them (its worker as `@worker`)."""
    return _step(modules, spec, [])


def legacy_guards(modules: RepoModules, spec: MigrationSpec) -> list[Atom]:
    """Every condition under which the legacy warmup of `spec`'s kernel ran, outermost first."""
    atoms: list[Atom] = []
    frame = _step(modules, spec, atoms)
    kernel_calls = _sites(modules, frame.module, _reaches_kernel(modules, frame, spec), frame.function)
    if not kernel_calls:
        raise GuardsUnreadable(
            _where(modules, frame.module, frame.function),
            f"{frame.function.name} never calls "
            f"anything from {spec.kernel.module} where its guards can be read, so the "
            "conditions it warms the kernel under are unknown",
        )
    if kernel_calls:
        _refuse_unsaid_returns(modules, frame.module, frame.function, kernel_calls, spec.kernel.name)
        common = None
        for site in kernel_calls:
            found = gate_atoms(modules, site.gates, _with(frame, site)) + _caught(
                modules, frame.module, frame.function, site.call
            )
            common = found if common is None else [a for a in common if a in found]
        atoms += common
    return atoms


def _reaches_kernel(modules: RepoModules, frame: Frame, spec: MigrationSpec):
    """A matcher for calls in `frame`'s function whose callee comes from the kernel's module (the kernel, its
    methods, its wrappers; a function of the module it looks up by name, `sys.modules.get("<module>")`)."""
    module = frame.module
    table = modules.imports(module)
    by_name = modules.modules_by_string(module, frame.function)

    def matches(call: ast.Call, assigned: dict) -> bool:
        root = call.func
        while isinstance(root, ast.Attribute):
            root = root.value
        if not isinstance(root, ast.Name):
            return False
        if by_name.get(root.id) == spec.kernel.module:
            return True
        source = table.get(root.id)
        homes = {source[0], f"{source[0]}.{source[1]}"} if source and source[1] else {source[0] if source else module}
        # A name a package re-exports (`from pkg.ops import launcher`, `ops.launcher`) is its defining module's.
        defined = modules.reference(module, call.func) if isinstance(call.func, (ast.Name, ast.Attribute)) else None
        return (
            spec.kernel.module in homes
            or root.id == spec.kernel.name
            or bool(defined and defined[0] == spec.kernel.module)
        )

    return matches


def registry_guards(modules: RepoModules, spec: MigrationSpec) -> list[Atom]:
    """The conditions under which the orchestrator runs the registry's warmup (what every registration is under)."""
    frame, atoms = _entry(modules, spec), []
    module, tree = spec.legacy.orchestrator_module, modules.tree(spec.legacy.orchestrator_module)
    engine = modules.engine
    registry = method_calls(engine.registry_holder, engine.registry_warmup)
    sites = _sites(modules, module, registry, frame.function)
    helper = (
        next(
            (
                n
                for n in tree.body
                if isinstance(n, ast.FunctionDef) and n is not frame.function and _sites(modules, module, registry, n)
            ),
            None,
        )
        if not sites
        else None
    )
    if helper is not None and _sites(
        modules, module, calls_to(tree, module, module, helper.name, True), frame.function
    ):  # the entry runs the registry through a helper of its own
        frame = _chain_into(modules, spec, module, module, helper.name, frame, atoms, defined_here=True)
        sites = _sites(modules, module, registry, frame.function)
    if not sites:
        raise SpecError(
            f"{spec.family}: {spec.legacy.orchestrator_module}.{engine.orchestrator_entry} never calls "
            f"{engine.registry_holder}.{engine.registry_warmup}(): a registration would warm nothing"
        )
    return atoms + gate_atoms(modules, sites[0].gates, _with(frame, sites[0]))
