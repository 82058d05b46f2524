"""The guards a legacy warmup call ran under, read from the tree, and the gate its registration carries.

A legacy call runs when every condition around it holds: the orchestrator's enclosing `if`s
and early returns, then the legacy function's, then the step's up to the kernel call. Each
conjunct of those conditions is an *atom*, put in canonical terms so two trees' atoms compare:
locals become what they were assigned, parameters the caller's arguments, names their defining
module's qualified names, and the worker's config `@vllm_config`.

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

from .repo import CallSite, Gate, RepoModules, call_sites, calls_to, method_calls
from .spec import VLLM_ORCHESTRATOR_ENTRY, VLLM_REGISTRY_HOLDER, VLLM_REGISTRY_WARMUP, MigrationSpec, SpecError

CONFIG = "@vllm_config"  # the engine's config, however a scope reaches it
WORKER = "@worker"  # the orchestrator's argument
SELF = "@self"  # the object under construction at the site
UNKNOWN = "@local"  # a local the reader cannot follow (a loop variable, an unpacked tuple)
CAUGHT = "@caught"  # the legacy call's failures were caught (a `try` around it)
_MODEL_STATE = ("model_runner", "get_model", "model")  # what a worker holds that is the model, not config
_CONFIG_ACCESSORS = ("get_current_vllm_config", "get_current_vllm_config_or_none")


@dataclasses.dataclass
class _Frame:
    """One function of the call chain at the point the chain leaves it."""

    module: str
    function: ast.FunctionDef | None
    assigned: dict[str, ast.expr]
    arguments: dict[str, tuple[ast.expr, _Frame | None]]
    imports: dict[str, tuple[str, str | None]] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Atom:
    """One conjunct of a gate: `canonical` compares across trees; `written` is what the tree says, at `where`."""

    canonical: str
    written: str
    where: str
    per_layer: bool
    expression: ast.expr = dataclasses.field(compare=False, repr=False)
    spellings: frozenset[str] = dataclasses.field(default=frozenset(), compare=False, repr=False)

    def report(self) -> dict:
        return {"canonical": self.canonical, "written": self.written, "where": self.where, "per_layer": self.per_layer}

    @property
    def caught(self) -> bool:
        """Not a condition: the legacy call ran inside a `try` that caught its failures."""
        return self.canonical.startswith(CAUGHT)

    @property
    def expressible(self) -> bool:
        return WORKER not in self.canonical and UNKNOWN not in self.canonical and SELF not in self.canonical


@dataclasses.dataclass(frozen=True)
class Difference:
    """A way the migrated gate differs from the legacy one, with why that is intended."""

    kind: str  # "dropped": the legacy call required it; "added": the registration requires it; "uncaught"
    atom: Atom
    reason: str

    def render(self) -> str:
        condition = f"`{self.atom.written}`"
        if (
            self.atom.canonical.replace("@", "") not in (self.atom.written, self.atom.canonical)
            and len(self.atom.canonical) < 80
        ):
            condition += f" (`{self.atom.canonical.replace('@', '')}`)"
        if self.kind == "uncaught":
            return (
                f"{self.atom.where}: the legacy call's failures were caught ({self.atom.written}); the "
                f"registration's are not: {self.reason}"
            )
        if self.kind == "dropped":
            return (
                f"{self.atom.where}: the legacy call ran only when {condition}; the registration does not "
                f"require it: {self.reason}"
            )
        return (
            f"{self.atom.where}: the legacy call ran whatever {condition} said; the registration is warmed "
            f"only when it holds: {self.reason}"
        )


@dataclasses.dataclass(frozen=True)
class GatePlan:
    """What a spec's registration is gated on, and how that compares with the legacy call's guards."""

    family: str
    site: str  # path:line of the constructor the registration goes into
    legacy: tuple[Atom, ...]
    registry: tuple[Atom, ...]
    gate: str  # the registration's gate in the site's names ("" when none is needed)
    imports: tuple[str, ...]  # `from m import n [as a]` lines the gate needs at the site
    differences: tuple[Difference, ...]
    per_layer: tuple[Atom, ...]  # legacy conditions the registering layer's own facts decide

    def report(self) -> dict:
        return {
            "family": self.family,
            "site": self.site,
            "legacy_gate": [a.report() for a in self.legacy if not a.per_layer],
            "per_layer": [a.report() for a in self.per_layer],
            "registry_gate": [a.report() for a in self.registry],
            "gate": self.gate,
            "intended_differences": [
                {
                    "kind": d.kind,
                    "where": d.atom.where,
                    "condition": d.atom.written,
                    "reason": d.reason,
                    "words": d.render(),
                }
                for d in self.differences
            ],
        }


def _negated(test: ast.expr) -> ast.expr:
    flips = {
        ast.Eq: ast.NotEq,
        ast.NotEq: ast.Eq,
        ast.In: ast.NotIn,
        ast.NotIn: ast.In,
        ast.Is: ast.IsNot,
        ast.IsNot: ast.Is,
    }
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return test.operand
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in flips:
        return ast.Compare(test.left, [flips[type(test.ops[0])]()], test.comparators)
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        return ast.BoolOp(ast.And(), [_negated(v) for v in test.values])
    return ast.UnaryOp(ast.Not(), test)


def conjuncts(test: ast.expr) -> list[ast.expr]:
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return [part for value in test.values for part in conjuncts(value)]
    return [test]


class _Canonical(ast.NodeTransformer):
    """An expression of a frame in canonical terms (see the module docstring)."""

    def __init__(self, modules: RepoModules, frame: _Frame, depth: int):
        self.modules, self.frame, self.depth = modules, frame, depth

    def visit_Name(self, node: ast.Name) -> ast.expr:
        frame, name = self.frame, node.id
        if name.startswith("@") or "." in name:
            return node
        if name in frame.assigned and self.depth < 12:
            rest = _Frame(
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
        if frame.function is not None and name in _parameters(frame.function):
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
        if frame.function is not None and name in _locals(frame.function):
            return ast.Name(f"{UNKNOWN}:{name}")
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.expr:
        node = self.generic_visit(node)
        value = node.value
        if (
            isinstance(value, ast.Attribute)
            and isinstance(value.value, ast.Name)
            and value.value.id == WORKER
            and value.attr == "model_runner"
            and node.attr == "vllm_config"
        ):
            return ast.Name(CONFIG)  # the runner's config is the worker's
        if isinstance(value, ast.Name) and value.id == WORKER:
            if node.attr == "vllm_config":
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
                return ast.Name(f"{resolved}.{name}")  # `module.name`: the name where it is defined
        return node

    def visit_NamedExpr(self, node: ast.NamedExpr) -> ast.expr:
        return self.visit(node.value)  # `(x := v)` tests v

    def visit_Call(self, node: ast.Call) -> ast.expr:
        node = self.generic_visit(node)
        if (
            isinstance(node.func, ast.Name)
            and node.func.id.rsplit(".", 1)[-1] in _CONFIG_ACCESSORS
            and not node.args
            and not node.keywords
        ):
            return ast.Name(CONFIG)
        return node


def canonical(modules: RepoModules, node: ast.expr, frame: _Frame, depth: int = 0) -> ast.expr:
    return _Canonical(modules, frame, depth).visit(copy.deepcopy(node))


def _parameters(function: ast.FunctionDef) -> list[str]:
    a = function.args
    return [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)] + [
        p.arg for p in (a.vararg, a.kwarg) if p is not None
    ]


def _locals(function: ast.FunctionDef) -> set[str]:
    return {n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _bind(function: ast.FunctionDef, call: ast.Call, caller: _Frame) -> dict[str, tuple[ast.expr, _Frame | None]]:
    """The callee's parameters bound to the call's arguments (read in the caller's frame)."""
    positional = [p.arg for p in (*function.args.posonlyargs, *function.args.args)]
    bound = {name: (value, caller) for name, value in zip(positional, call.args) if not isinstance(value, ast.Starred)}
    bound.update({k.arg: (k.value, caller) for k in call.keywords if k.arg is not None})
    return bound


def _function(modules: RepoModules, module: str, name: str) -> ast.FunctionDef | None:
    node = modules.definition(module, name)
    return node if isinstance(node, ast.FunctionDef) else None


def _where(modules: RepoModules, module: str, node: ast.AST) -> str:
    path = modules.path(module)
    shown = path.relative_to(modules.repo).as_posix() if path else module
    return f"{shown}:{node.lineno}"


def _atoms(modules: RepoModules, gates: tuple[Gate, ...], frame: _Frame) -> list[Atom]:
    found = []
    for gate in gates:
        condition = gate.test if gate.holds_when else _negated(gate.test)
        spelled = {ast.dump(gate.test), ast.dump(condition)}
        for part in conjuncts(condition):
            form = canonical(modules, part, frame)
            text = ast.unparse(form)
            reads_model = any(f"{WORKER}.{state}" in text for state in _MODEL_STATE)
            per_layer = SELF in text or (reads_model and _found_in_model(modules, form))
            found.append(
                Atom(
                    text,
                    ast.unparse(part),
                    _where(modules, frame.module, gate.test),
                    per_layer,
                    form,
                    frozenset(spelled | {ast.dump(part), ast.dump(form)}),
                )
            )
    return found


def _found_in_model(modules: RepoModules, test: ast.expr) -> bool:
    """The test only asks whether a function of the repo found something in the model (`x is not None`, `x`,
    `not x` of its result): the legacy step searching the model for the layers that now register themselves.
    Any other test of the model (an attribute, a flag) is a guard the site cannot write."""
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
    if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and "." in test.func.id):
        return False
    home, _, name = test.func.id.rpartition(".")
    return modules.ours(home) and isinstance(modules.definition(home, name), ast.FunctionDef)


def _sites(modules: RepoModules, module: str, matcher, function: ast.FunctionDef) -> list[CallSite]:
    return call_sites(modules.tree(module), matcher, loops_allowed=True, functions=[function])


class GuardsUnreadable(SpecError):
    """The legacy call's guards cannot be read (the planner reports it with the run's other refusals)."""


def _chain_into(
    modules: RepoModules,
    spec: MigrationSpec,
    module: str,
    callee_module: str,
    callee: str,
    frame: _Frame,
    atoms: list[Atom],
    defined_here: bool = False,
) -> _Frame:
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
            f"{_where(modules, module, frame.function)}: {frame.function.name} does not call "
            f"{callee} as a plain statement of its own body or of its if/with/try blocks, so "
            "the guards the legacy call runs under cannot be read"
        )
    shapes = {tuple(a.canonical for a in _atoms(modules, site.gates, _with(frame, site))) for site in sites}
    if len(shapes) > 1:
        raise GuardsUnreadable(
            f"{spec.family}: {module}.{frame.function.name} calls {callee} from {len(sites)} places "
            f"under different guards ({_where(modules, module, sites[0].call)}); one registration "
            "gate cannot stand for them"
        )
    site = sites[0]
    atoms += _atoms(modules, site.gates, _with(frame, site)) + _caught(modules, module, frame.function, site.call)
    target = _function(modules, callee_module, callee)
    if target is None:
        raise GuardsUnreadable(f"{spec.family}: {callee_module}.{callee} is not a function the guards can be read from")
    return _Frame(callee_module, target, {}, _bind(target, site.call, _with(frame, site)))


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
                    _where(modules, module, node),
                    False,
                    ast.Constant(True),
                )
            )
    return found


def _with(frame: _Frame, site: CallSite) -> _Frame:
    return _Frame(frame.module, frame.function, dict(site.assigned), frame.arguments, frame.imports)


def _entry(modules: RepoModules, spec: MigrationSpec) -> _Frame:
    entry = _function(modules, spec.orchestrator_module, VLLM_ORCHESTRATOR_ENTRY)
    if entry is None:
        raise SpecError(
            f"{spec.family}: {spec.orchestrator_module} has no {VLLM_ORCHESTRATOR_ENTRY}() to read the "
            "legacy call's guards from"
        )
    worker = _parameters(entry)[:1]
    return _Frame(spec.orchestrator_module, entry, {}, {name: (ast.Name(WORKER), None) for name in worker})


def legacy_guards(modules: RepoModules, spec: MigrationSpec) -> list[Atom]:
    """Every condition under which the legacy warmup of `spec`'s kernel ran, outermost first."""
    atoms: list[Atom] = []
    frame = _entry(modules, spec)
    if spec.orchestrator_step:
        frame = _chain_into(
            modules,
            spec,
            spec.orchestrator_module,
            spec.orchestrator_module,
            spec.orchestrator_step,
            frame,
            atoms,
            defined_here=True,
        )
    else:
        frame = _chain_into(
            modules, spec, spec.orchestrator_module, spec.legacy_module, spec.legacy_function, frame, atoms
        )
        if spec.legacy_step:
            frame = _chain_into(
                modules, spec, spec.legacy_module, spec.legacy_module, spec.legacy_step, frame, atoms, defined_here=True
            )
    kernel_calls = _sites(modules, frame.module, _reaches_kernel(modules, frame.module, spec), frame.function)
    if not kernel_calls:
        raise GuardsUnreadable(
            f"{_where(modules, frame.module, frame.function)}: {frame.function.name} never calls "
            f"anything from {spec.singleton_module} where its guards can be read, so the "
            "conditions it warms the kernel under are unknown"
        )
    if kernel_calls:
        common = None
        for site in kernel_calls:
            found = _atoms(modules, site.gates, _with(frame, site)) + _caught(
                modules, frame.module, frame.function, site.call
            )
            common = found if common is None else [a for a in common if a in found]
        atoms += common
    return atoms


def _reaches_kernel(modules: RepoModules, module: str, spec: MigrationSpec):
    """A matcher for calls whose callee comes from the kernel's module (the kernel, its methods, its wrappers)."""
    table = modules.imports(module)

    def matches(call: ast.Call, assigned: dict) -> bool:
        root = call.func
        while isinstance(root, ast.Attribute):
            root = root.value
        if not isinstance(root, ast.Name):
            return False
        source = table.get(root.id)
        homes = {source[0], f"{source[0]}.{source[1]}"} if source and source[1] else {source[0] if source else module}
        return spec.singleton_module in homes or root.id == spec.singleton

    return matches


def registry_guards(modules: RepoModules, spec: MigrationSpec) -> list[Atom]:
    """The conditions under which the orchestrator runs the registry's warmup (what every registration is under)."""
    frame, atoms = _entry(modules, spec), []
    module, tree = spec.orchestrator_module, modules.tree(spec.orchestrator_module)
    registry = method_calls(VLLM_REGISTRY_HOLDER, VLLM_REGISTRY_WARMUP)
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
            f"{spec.family}: {spec.orchestrator_module}.{VLLM_ORCHESTRATOR_ENTRY} never calls "
            f"{VLLM_REGISTRY_HOLDER}.{VLLM_REGISTRY_WARMUP}(): a registration would warm nothing"
        )
    return atoms + _atoms(modules, sites[0].gates, _with(frame, sites[0]))


def site_frame(
    modules: RepoModules,
    module: str,
    init: ast.FunctionDef,
    extra_imports: dict[str, tuple[str, str | None]] | None = None,
) -> _Frame:
    """The construction site's names: `self`, its config (a `vllm_config` parameter or the accessor)."""
    arguments: dict[str, tuple[ast.expr, _Frame | None]] = {"self": (ast.Name(SELF), None)}
    if "vllm_config" in _parameters(init):
        arguments["vllm_config"] = (ast.Name(CONFIG), None)
    return _Frame(module, init, _site_locals(init), arguments, dict(extra_imports or {}))


def _site_locals(init: ast.FunctionDef) -> dict[str, ast.expr]:
    """`name = value` statements of the constructor's own body (not its branches), the first per name."""
    found: dict[str, ast.expr] = {}
    for statement in init.body:
        if (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
        ):
            found.setdefault(statement.targets[0].id, statement.value)
    return found


def config_name(modules: RepoModules, frame: _Frame) -> str | None:
    """The constructor's own name for the engine config (a parameter, or a local assigned from an accessor)."""
    for name in ("vllm_config", "config"):
        if name in frame.arguments or name in frame.assigned:
            if ast.unparse(canonical(modules, ast.Name(name), frame)) == CONFIG:
                return name
    return None


def registration_guards(modules: RepoModules, frame: _Frame, registration: str) -> list[Atom]:
    """The conditions inside the spec's registration around its `register_warmup` call, in canonical terms."""
    tree = ast.parse(registration)
    imports = {**frame.imports}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            imports.update({a.asname or a.name: (node.module, a.name) for a in node.names})
    function = ast.FunctionDef("registration", ast.arguments([], [], None, [], [], None, []), tree.body, [])
    inner = _Frame(frame.module, frame.function, {}, frame.arguments, imports)
    sites = call_sites(
        ast.Module([function], []),
        lambda call, assigned: isinstance(call.func, ast.Attribute) and call.func.attr == "register_warmup",
        loops_allowed=True,
        functions=[function],
    )
    found = []
    for site in sites[:1]:
        found = _atoms(
            modules, site.gates, _Frame(inner.module, inner.function, dict(site.assigned), inner.arguments, imports)
        )
    return [dataclasses.replace(a, where="registration") for a in found]


def spec_gate_atoms(modules: RepoModules, frame: _Frame, gate: str) -> list[Atom]:
    if not gate.strip():
        return []
    test = ast.parse(gate, mode="eval").body
    return [dataclasses.replace(a, where="spec gate") for a in _atoms(modules, (Gate(test, True),), frame)]


def _matches(entry: str, atom: Atom, modules: RepoModules, frame: _Frame) -> bool:
    try:
        parsed = ast.parse(entry, mode="eval").body
    except SyntaxError:
        return False
    return ast.dump(parsed) in atom.spellings or ast.unparse(canonical(modules, parsed, frame)) == atom.canonical


def holds_at_site(frame: _Frame) -> set[str]:
    """Conditions true wherever the site's constructor runs (canonical): its own module is loaded, and (as
    the legacy call always had one) the engine has a config."""
    return {f"{frame.module!r} in sys.modules", f"{CONFIG} is not None"}


def compare(
    modules: RepoModules,
    spec: MigrationSpec,
    frame: _Frame,
    legacy: list[Atom],
    registry: list[Atom],
    migrated: list[Atom],
    site_where: str,
) -> tuple[list[Difference], list[str], list[str]]:
    """Differences between the legacy guards and the migrated gate (with the registry's), refusals, and warnings
    (an intended difference this tree does not have: a spec may serve trees whose guards differ).

    Every legacy condition that can be written at the site and that the spec does not drop on purpose is
    carried into the gate (so it is no difference); one that cannot be written there is refused. A condition
    the spec's gate or registration adds is refused unless listed as intended."""
    refusals, differences, used = [], [], set()
    have = {a.canonical for a in migrated} | {a.canonical for a in registry} | holds_at_site(frame)
    wanted = {a.canonical for a in legacy}

    def intended(atom: Atom) -> str | None:
        for index, (entry, reason) in enumerate(spec.intended_differences):
            if _matches(entry, atom, modules, frame):
                used.add(index)
                return reason
        return None

    for atom in legacy:
        if atom.per_layer or atom.canonical in have:
            continue
        reason = intended(atom)
        if atom.caught:
            differences.append(
                Difference(
                    "uncaught",
                    atom,
                    reason
                    or "start-up went on when the legacy call "
                    "failed; the registry logs a registered kernel's compile failure and "
                    "raises, so start-up stops",
                )
            )
            continue
        if reason is None and atom.expressible:
            continue
        if reason is not None:
            differences.append(Difference("dropped", atom, reason))
        elif not atom.expressible:
            refusals.append(
                f"{atom.where}: the legacy call runs only when `{atom.written}`, which cannot be "
                f"written at {site_where} (it reads `{atom.canonical}`). List it in "
                "intended_differences with a reason if the site need not check it"
            )
    for atom in migrated + registry:
        if (
            atom.per_layer
            or atom.canonical in wanted | holds_at_site(frame)
            or atom.canonical in {d.atom.canonical for d in differences}
            or (atom not in registry and atom.canonical in {r.canonical for r in registry})
        ):
            continue
        reason = intended(atom)
        if reason is None and atom in registry:
            reason = (
                "the registry compiles registrations only then, so with it off this kernel compiles in the "
                "first requests that use it"
            )
        if reason is not None:
            differences.append(Difference("added", atom, reason))
        else:
            refusals.append(
                f"{site_where}: the registration requires `{atom.written}`, which the legacy call "
                f"did not. Legacy gate: {_shown(legacy)}; migrated gate: {_shown(migrated + registry)}. "
                "List it in intended_differences with a reason if that is meant"
            )
    unused = [
        f"{spec.family}: intended_differences entry `{entry}` matches no difference between the legacy gate "
        f"({_shown(legacy)}) and the migrated one at {site_where} ({_shown(migrated + registry)})"
        for index, (entry, _) in enumerate(spec.intended_differences)
        if index not in used
    ]
    return differences, refusals, unused


def _shown(atoms: list[Atom]) -> str:
    gates = [a.written for a in atoms if not a.per_layer]
    return " and ".join(f"`{g}`" for g in dict.fromkeys(gates)) or "(none)"


def _top_level_binding(modules: RepoModules, module: str, qualified: str) -> str | None:
    """The local name `module` binds at its top level to the qualified name (an import or a definition), if any."""
    tree = modules.tree(module)
    home, _, last = qualified.rpartition(".")
    for node in tree.body if tree else ():
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and f"{module}.{node.name}" == qualified:
            return node.name
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        for alias in node.names:
            local = alias.asname or alias.name.split(".")[0]
            source = modules.imports(module).get(local)
            if (
                source is None
                or (source[1] is None and source[0] != qualified)
                or (source[1] is not None and source[1] != last and source[0] != qualified)
            ):
                continue
            target, name = source if source[1] is None else modules.resolve(*source)
            if (f"{target}.{name}" if name else target) == qualified:
                return local
    return None


def render_gate(
    modules: RepoModules,
    module: str,
    init: ast.FunctionDef,
    atoms: list[Atom],
    where: str,
    removed: frozenset[str] = frozenset(),
) -> tuple[str, tuple[str, ...]]:
    """The atoms as one condition in the site's names, and the imports it needs there.

    `removed`: modules whose code the migration removes from (the legacy warmup, the orchestrator's step):
    a condition that needs a name from one of them is refused rather than imported from code that goes.

    A qualified name the module binds at its top level is written with that binding; any
    other is imported (`from m import n`). The config is the constructor's `vllm_config`
    parameter, or the engine's non-raising accessor (never one that asserts outside a config
    context, which would break building the layer in a unit test).
    """
    taken = (
        set(_locals(init))
        | set(_parameters(init))
        | {n.id for n in ast.walk(modules.tree(module)) if isinstance(n, ast.Name)}
    )
    imports: dict[str, str] = {}
    config = config_name(modules, site_frame(modules, module, init))
    uses_config = False

    class Site(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.expr:
            nonlocal uses_config
            if node.id == CONFIG:
                uses_config = True
                return ast.Name(config or "vllm_config")
            if getattr(node, "module", None) is not None:  # a module: the site must import it already
                local = _top_level_binding(modules, module, node.id)
                if local is None:
                    raise SpecError(
                        f"{where}: the tree's gate reads the module {node.id}, which {module} does not "
                        "import; write the gate in the spec or list the condition as intended"
                    )
                return ast.Name(local)
            if "." not in node.id:
                return node
            local = _top_level_binding(modules, module, node.id)
            if local is not None:
                return ast.Name(local)
            home, _, name = node.id.rpartition(".")
            if home in removed:
                raise SpecError(
                    f"{where}: the tree's gate reads {name} from {home}, the legacy warmup code this "
                    "migration removes; write the gate in the spec, or list the condition in "
                    "intended_differences with a reason"
                )
            if modules.tree(node.id) is not None:
                raise SpecError(f"{where}: the tree's gate reads the module {node.id}; write the gate in the spec")
            for local in dict.fromkeys((name, getattr(node, "local", name))):
                if local not in taken or imports.get(local) == (home, name):
                    imports[local] = (home, name)
                    return ast.Name(local)
            raise SpecError(
                f"{where}: the tree's gate reads {node.id}, but {name} already names something else "
                f"in {module}; write the gate in the spec"
            )

    parts = [ast.unparse(Site().visit(copy.deepcopy(a.expression))) for a in atoms]
    lines = tuple(
        f"from {home} import {name}" + (f" as {local}" if local != name else "")
        for local, (home, name) in sorted(imports.items())
    )
    if uses_config and not config:
        accessor = f"{modules.package}.config"
        if modules.definition(*modules.resolve(accessor, _CONFIG_ACCESSORS[1])) is None:
            raise SpecError(
                f"{where}: the tree's gate reads the engine config, which {module} cannot reach: no "
                f"vllm_config parameter, and {accessor} has no {_CONFIG_ACCESSORS[1]}()"
            )
        if "vllm_config" in taken:
            raise SpecError(
                f"{where}: the tree's gate reads the engine config and vllm_config already names "
                "something in the constructor; write the gate in the spec"
            )
        parts.insert(0, f"(vllm_config := {_CONFIG_ACCESSORS[1]}()) is not None")
        lines += (f"from {accessor} import {_CONFIG_ACCESSORS[1]}",)
    return " and ".join(parts), lines
