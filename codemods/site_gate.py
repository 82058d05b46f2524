"""The registration's gate at its site: the legacy call's guards compared with the gate the registration gets
(every difference intended and said, or refused), then written in the constructor's own names.

`guards` reads the conditions; this decides what they become.
"""

from __future__ import annotations

import ast
import builtins
import copy
import dataclasses
from collections import Counter

from . import simplify
from .construction_site import config_name, holds_at_site, site_frame
from .guards import CONFIG, SELF, Atom, Frame, canonical
from .repo import RepoModules
from .simplify import size
from .spec import MigrationSpec, SpecError
from .syntax import Place, conjunction, enclosing_class, expression_or_none, negated, parameters, renaming


@dataclasses.dataclass(frozen=True)
class Difference:
    """A way the migrated gate differs from the legacy one, with why that is intended."""

    kind: str  # "dropped": the legacy call required it; "added": the registration requires it; "uncaught"
    atom: Atom
    reason: str

    def render(self) -> str:
        condition = f"`{self.atom.written}`"
        if not self.atom.at_layer and (
            self.atom.canonical.replace("@", "") not in (self.atom.written, self.atom.canonical)
            and len(self.atom.canonical) < 80
        ):
            condition += f" (`{self.atom.canonical.replace('@', '')}`)"
        if self.kind == "uncaught":
            return (
                f"{self.atom.where}: the legacy call's failures were caught ({self.atom.written}); the "
                f"registration's are not: {self.reason}"
            )
        if self.kind == "dropped" and self.atom.at_layer:
            return (
                f"{self.atom.where}: the legacy step warmed only the layers where {condition}; the registration "
                f"does not check it: {self.reason}"
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
    per_layer: tuple[Atom, ...]  # legacy conditions the registering layer's own facts decide, its search's filters

    def report(self) -> dict:
        return {
            "family": self.family,
            "site": self.site,
            "legacy_gate": [a.report() for a in self.legacy if not (a.per_layer or a.at_layer)],
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


def _matches(parsed: ast.expr | None, atom: Atom, modules: RepoModules, frame: Frame) -> bool:
    """Whether an entry (`parsed`: None where it is no expression) names the condition as written or as read."""
    if parsed is None:
        return False
    return ast.dump(parsed) in atom.spellings or ast.unparse(canonical(modules, parsed, frame)) == atom.canonical


def _inverted_dump(expression: ast.expr | None) -> str | None:
    return ast.dump(simplify.inverted(expression)) if expression is not None else None


def _forms(atom: Atom) -> list[str]:
    """A legacy condition as the tree writes it, and as the early return that skips the call tests it
    (`device.type != 'cuda'` for `device.type == 'cuda'`): an entry may name either, as the spec's tree wrote it."""
    written = expression_or_none(atom.written)
    return [atom.written] if written is None else [atom.written, ast.unparse(negated(written))]


def _renamed_entries(spec: MigrationSpec, legacy: list[Atom], matched: set[int], exact: set[int]) -> dict:
    """Each intended difference that names a local of the legacy code (`layer is not None`) which this tree names
    otherwise (`kda_layer is not None`): the one legacy condition it reads as once renamed, where it matches
    nothing as written, and no other entry matches that condition (index -> (atom, renaming)). An entry that two
    conditions could be is left unmatched, and the run refuses as before."""
    found = {}
    for index, (entry, _) in enumerate(spec.registration.intended_differences):
        if index in matched:
            continue
        alike = [
            (atom, names)
            for atom in legacy
            if id(atom) not in exact
            and (names := next(filter(None, (renaming(entry, form) for form in _forms(atom))), None)) is not None
        ]
        if len(alike) == 1:
            found[index] = alike[0]
    return found


def compare(
    modules: RepoModules,
    spec: MigrationSpec,
    frame: Frame,
    legacy: list[Atom],
    registry: list[Atom],
    migrated: list[Atom],
    site_where: Place,
) -> tuple[list[Difference], list[str], list[str]]:
    """Differences between the legacy guards and the migrated gate (with the registry's), refusals, and warnings
    (an intended difference this tree does not have: a spec may serve trees whose guards differ).

    Every legacy condition that can be written at the site and that the spec does not drop on purpose is
    carried into the gate (so it is no difference); one that cannot be written there is refused. A condition
    the spec's gate or registration adds is refused unless listed as intended."""
    refusals, differences, used, warnings = [], [], set(), []
    have = {a.canonical for a in migrated} | {a.canonical for a in registry} | holds_at_site(frame)
    wanted = {a.canonical for a in legacy}
    entries = spec.registration.intended_differences
    # A legacy condition is also named by its early return's test, wherever the tree writes it as a condition, and
    # either may be written with a comparison under `not` inverted (`not len(x) < 2` for `len(x) >= 2`).
    negations = {
        id(atom): {_inverted_dump(expression_or_none(form)) for form in _forms(atom)} - {None} for atom in legacy
    }
    parsed = [expression_or_none(entry) for entry, _ in entries]
    dumps = [_inverted_dump(entry) for entry in parsed]
    exact = {
        (index, id(atom))
        for atom in legacy + migrated + registry
        for index in range(len(entries))
        if _matches(parsed[index], atom, modules, frame) or dumps[index] in negations.get(id(atom), ())
    }
    renamed = _renamed_entries(spec, legacy, {i for i, _ in exact}, {a for _, a in exact})

    def intended(atom: Atom) -> str | None:
        for index, (entry, reason) in enumerate(entries):
            if (index, id(atom)) in exact:
                used.add(index)
                return reason
            if index in renamed and renamed[index][0] is atom:
                used.add(index)
                names = ", ".join(f"{theirs} for {ours}" for ours, theirs in renamed[index][1].items())
                warnings.append(
                    f"{spec.family}: intended_differences entry `{entry}` taken for `{atom.written}` ({atom.where}), "
                    f"which this tree writes with {names}: check that it is the same condition"
                )
                return reason
        return None

    # A legacy guard that requires the registry's switch off: the registry would never compile a registration
    # under it. The registration drops it, and is warmed when the switch is on instead.
    switches = {f"not {r.canonical}": r for r in registry}
    for atom in legacy:
        if atom.per_layer or atom.canonical in have:
            continue
        reason = intended(atom)
        if atom.canonical in switches and not atom.caught:
            switch = f"`{switches[atom.canonical].written}`"
            differences.append(
                Difference(
                    "dropped",
                    atom,
                    reason
                    or f"the registry compiles registrations only when {switch} holds, so none would compile under "
                    f"this guard; the kernel is warmed with {switch} on, and with it off compiles in the first "
                    "requests that use it",
                )
            )
            continue
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
        elif not atom.expressible and atom.at_layer:
            refusals.append(
                f"{atom.where}: the legacy step warmed only the layers where `{atom.written}`, which the "
                f"registration at {site_where} cannot check: {atom.unwritable}. Check it in the "
                "registration's code, or list it in intended_differences with a reason if the layer need not"
            )
        elif not atom.expressible:
            refusals.append(
                f"{atom.where}: the legacy call runs only when `{atom.written}`, which cannot be "
                f"written at {site_where}: {atom.unwritable}. List it in "
                "intended_differences with a reason if the site need not check it"
            )
    for atom in migrated + registry:
        differed = {d.atom.canonical for d in differences}
        if (
            atom.per_layer
            or atom.canonical in wanted | holds_at_site(frame)
            or atom.canonical in differed
            or f"not {atom.canonical}" in differed
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
        for index, (entry, _) in enumerate(entries)
        if index not in used
    ]
    return differences, refusals, warnings + unused


def _shown(atoms: list[Atom]) -> str:
    gates = [a.written for a in atoms if not (a.per_layer or a.at_layer)]
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


def implied(atoms: list[Atom], modules: RepoModules) -> set[str]:
    """The `not <check>` conditions that another of `atoms` implies: `not current_platform.is_rocm()` beside
    `current_platform.is_cuda()` (the engine's exclusive device checks)."""
    exclusive = modules.engine.exclusive_checks
    required = {a.canonical for a in atoms} & exclusive
    return {f"not {check}" for check in exclusive if required - {check}}


def in_registration_names(modules: RepoModules, frame: Frame, code: str, atom: Atom) -> str | None:
    """The atom as the registration's code writes it where it registers: a value the code names at its top
    level (`weight = getattr(self, "weight", None)`) by that name, the layer as `self`. None where it reads
    anything else (a repo name the code does not import, a local of the legacy code)."""
    tree = ast.parse(code)
    imported = {  # by the code, and at the top of the site's module
        alias.asname or alias.name.split(".")[0]
        for node in (*tree.body, *modules.tree(frame.module).body)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    }
    named = {
        ast.dump(canonical(modules, statement.value, frame)): statement.targets[0].id
        for statement in tree.body
        if isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
    }

    class Named(ast.NodeTransformer):
        def visit(self, node: ast.AST) -> ast.AST:
            if isinstance(node, ast.expr) and ast.dump(node) in named:
                return ast.Name(named[ast.dump(node)])
            if isinstance(node, ast.Name) and node.id == SELF:
                return ast.Name("self")
            return self.generic_visit(node)

    written = Named().visit(copy.deepcopy(atom.expression))
    readable = {"self", *named.values(), *imported, *dir(builtins)}
    names = [n.id for n in ast.walk(written) if isinstance(n, ast.Name)]
    if not all(n in readable for n in names):
        return None
    return simplify.condition(ast.unparse(written), {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)})


def _names_in(init: ast.FunctionDef) -> set[str]:
    """Every name the constructor binds or reads, its parameters included: a name the gate adds must be new."""
    return {n.id for n in ast.walk(init) if isinstance(n, ast.Name)} | set(parameters(init))


def simplified(modules: RepoModules, module: str, init: ast.FunctionDef, condition: str, before: float) -> str:
    """A written gate as a maintainer writes it (codemods.simplify): each value once, in the site's names, reading
    what the constructor already holds above `before` (the insertion line) in a local or a `self.` attribute it
    binds once, from names it binds once; `getattr(x, "a", default)` read as `x.a` where the constructor read
    `x.a` already (the lookup succeeded, so the default is never taken)."""
    taken = _names_in(init)
    stored = Counter(n.id for n in ast.walk(init) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    # `self.x` is read where the class stores x once, and no function outside a class stores any `.x`
    # (attributes of the module's other classes are their own).
    tree = modules.tree(module)
    stores = [n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)]
    home = {id(n): enclosing_class(tree, n.lineno) for n in stores}
    site = enclosing_class(tree, init.lineno)
    attributes = Counter(n.attr for n in stores if site is not None and home[id(n)] is site)
    attributes.update({n.attr: 2 for n in stores if home[id(n)] is None})
    owner = init.args.args[0].arg if init.args.args else None
    held = {}
    for statement in init.body:
        target = _single_target(statement)
        if target is None or statement.lineno >= before:
            continue
        value = statement.value
        if isinstance(target, ast.Name) and stored[target.id] == 1:
            holder = target.id
        elif (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == owner
            and attributes[target.attr] == 1
        ):
            holder = f"{owner}.{target.attr}"
        else:
            continue
        if (
            all(isinstance(n, (ast.Attribute, ast.Name, ast.Load)) for n in ast.walk(value))
            and all(stored[n.id] <= 1 for n in ast.walk(value) if isinstance(n, ast.Name))
            and size(value) > 2
        ):
            held[ast.dump(value)] = holder
    cdiv = _top_level_binding(modules, module, modules.engine.ceil_division)
    return simplify.condition(condition, taken, cdiv, held)


def _single_target(statement: ast.stmt) -> ast.expr | None:
    """What `x = value` or `x: T = value` assigns (one target), else None."""
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        return statement.targets[0]
    if isinstance(statement, ast.AnnAssign) and statement.value is not None:
        return statement.target
    return None


def render_gate(
    modules: RepoModules,
    module: str,
    init: ast.FunctionDef,
    atoms: list[Atom],
    where: Place,
    removed: frozenset[str] = frozenset(),
) -> tuple[str, tuple[str, ...]]:
    """The atoms as one condition in the site's names, and the imports it needs there.

    `removed`: modules whose code the migration removes from (the legacy warmup, the orchestrator's step):
    a condition that needs a name from one of them is refused rather than imported from code that goes.

    A qualified name the module binds at its top level is written with that binding. One the tree read off its
    module (`envs.X`: vLLM computes its settings at each access) is read off that module at the site too, the
    module imported (`from vllm import envs`) where the site lacks it; any other is imported (`from m import n`).
    The config is the constructor's config parameter (`vllm_config`), or the engine's non-raising accessor (never
    one that asserts outside a config context, which would break building the layer in a unit test).
    """
    engine = modules.engine
    in_init = _names_in(init)
    taken = in_init | {n.id for n in ast.walk(modules.tree(module)) if isinstance(n, ast.Name)}
    imports: dict[str, str] = {}
    config = config_name(modules, site_frame(modules, module, init))
    uses_config = False

    class Site(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.expr:
            nonlocal uses_config
            if node.id == SELF:
                return ast.Name(init.args.args[0].arg)
            if node.id == CONFIG:
                uses_config = True
                return ast.Name(config or engine.config_parameter)
            if getattr(node, "module", None) is not None:  # a module: read through the site's import, or one added
                local = _top_level_binding(modules, module, node.id)
                home, _, name = node.id.rpartition(".")
                return ast.Name(local) if local is not None else import_as(home, name, node.module)
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
            through, attribute = getattr(node, "through", (home, name))
            held = _top_level_binding(modules, module, through)
            if held is not None:  # the site imports the name's module (`import vllm.envs as envs`): read through it
                return ast.Attribute(ast.Name(held), attribute)
            if hasattr(node, "through"):  # the tree read it off its module at each use: so does the site
                home, _, name = through.rpartition(".")
                return ast.Attribute(import_as(home, name, name), attribute)
            return import_as(home, name, getattr(node, "local", name))

    def import_as(home: str, name: str, spelled: str) -> ast.Name:
        """`name` of `home` as the site reads it: under the name the tree uses or its own, imported (`from home
        import name [as local]`, or `import name [as local]` for a top-level module: home empty) where the site
        binds neither to anything else."""
        for local in dict.fromkeys((name, spelled)):
            if local not in taken or imports.get(local) == (home, name):
                imports[local] = (home, name)
                return ast.Name(local)
        raise SpecError(
            f"{where}: the tree's gate reads {home}.{name}, but {name} already names something else in {module}; "
            "write the gate in the spec"
        )

    parts = [ast.unparse(Site().visit(copy.deepcopy(a.expression))) for a in atoms]
    lines = tuple(
        (f"from {home} import {name}" if home else f"import {name}") + (f" as {local}" if local != name else "")
        for local, (home, name) in sorted(imports.items())
    )
    if uses_config and not config:
        binding, line = config_binding(modules, module, init, where)
        parts.insert(0, binding)
        lines += (line,)
    return conjunction(parts), lines


def config_binding(modules: RepoModules, module: str, init: ast.FunctionDef, where: Place) -> tuple[str, str]:
    """The gate's first condition where the constructor has no config of its own: the engine config bound through
    the non-raising accessor (`(vllm_config := get_current_vllm_config_or_none()) is not None`), and its import."""
    engine = modules.engine
    accessor, parameter, getter = engine.config_module, engine.config_parameter, engine.config_accessors[1]
    if modules.definition(*modules.resolve(accessor, getter)) is None:
        raise SpecError(
            f"{where}: the registration reads the engine config, which {module} cannot reach: no "
            f"{parameter} parameter, and {accessor} has no {getter}()"
        )
    if parameter in _names_in(init):  # the gate binds it in the constructor, where nothing else may use the name
        raise SpecError(
            f"{where}: the registration reads the engine config and {parameter} already names "
            "something in the constructor; write the gate in the spec"
        )
    return f"({parameter} := {getter}()) is not None", f"from {accessor} import {getter}"
