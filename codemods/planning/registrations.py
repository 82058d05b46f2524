"""Planning the registrations: where a kernel's registration goes and under what gate (insert_registration writes it).

It reads the tree (`ast`, through the repo model) and decides; the operation's libcst command only writes what
was decided. A site's gate is the legacy call's guards carried into the constructor's names; a subclass that
replaces the constructor without running it is a site too; the kernel must be on the contract, and the
registration's arguments must fit the kernel's `get_warmup_keys`.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
from typing import TYPE_CHECKING

from .. import construction_site, guards, model_search, simplify, site_gate, syntax
from ..findings import Findings
from ..repo import RepoModules, absolute_module
from ..spec import MigrationSpec, SpecError
from ..syntax import free_names
from ..transforms.adopt_contract import RewriteDispatch, adoption, shadowed_state
from ..transforms.insert_registration import InsertRegistration
from ..transforms.registration_code import joined_into_registration_if, renamed_in
from . import after_building, layer_filters, pins, recording, subclasses

if TYPE_CHECKING:
    from ..planner import Planner, SourceModule


def plan(planner: Planner) -> Findings:
    """Every spec's registration goes into each of its construction classes and into the subclasses that
    replace their constructor (the kernel on the contract first), gated as the tree gated the legacy call."""
    findings = Findings()
    for spec in planner.specs:
        check_contract(planner, findings, spec)
        modules = planner.repo_model(spec.kernel.module)
        done = planner.migrated(spec)
        if spec.registration.written_for and not done:
            field = "orchestrator_module" if spec.legacy.orchestrator_step else "legacy_module"
            warming = planner.module(spec, field, spec.legacy.warming()[0])
            pins.check(planner, findings, spec, "registration", spec.registration.written_for, warming)
        try:
            legacy = (
                [] if done else [model_search.in_layer_terms(modules, a) for a in guards.legacy_guards(modules, spec)]
            )
            legacy += [found for atom in legacy if atom.per_layer for found in model_search.filters(modules, atom)]
            registry = [] if done else guards.registry_guards(modules, spec)
        except guards.GuardsUnreadable as exc:
            findings.refuse("guards", exc.why, exc.place)  # beside the transforms' refusals, which often say more
            continue
        findings.warnings += [
            f"{atom.where}: the legacy step warmed only the first layer its search found (`next(...)`); every layer "
            "that passes the search's filters registers, so a layer of another shape, which compiled while serving, "
            "is warmed too"
            for atom in legacy
            if atom.per_layer and guards.first_layer_found(guards.search_call(modules, atom.expression)) is not None
        ]
        constructions = spec.registration.constructions()
        discovered = set()
        if spec.registration.subclasses_of and not done:  # a fork's own class of that kind registers too
            listed = {(module, name) for module, name in constructions}
            discovered = set(subclasses.direct_subclasses(planner, modules, spec.registration.subclasses_of)) - listed
            constructions += sorted(discovered)
        for construction, name in constructions:
            home = planner.module(spec, "construction_module", construction)
            node = next(
                (n for n in syntax.statements(home.tree) if isinstance(n, ast.ClassDef) and n.name == name), None
            )
            if node is None:
                raise SpecError(f"{spec.family}: construction_class {name!r} not found in {home.name}")
            method = spec.registration.method
            init = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == method), None)
            override = (
                ""
                if init is not None or method == "__init__"
                else subclasses.override_source(modules, home.name, node, method, spec.family)
            )
            if override:  # the method the class gets, placed (for what reports say) at the class's line
                init = ast.increment_lineno(ast.parse(override), node.lineno - 1).body[0]
            anchor, renamed = spec.registration.insert_after, {}
            if (home.name, name) in discovered and (override or init is None or not _holds_anchor(home, init, anchor)):
                anchor = ""  # a class the spec does not name: its end, where it lacks the named statement
            elif anchor and not done and init is not None and not override and not _holds_anchor(home, init, anchor):
                anchor, renamed = _anchor_renamed(planner, findings, spec, home, init)
            sites = [(home, name, init, anchor)]
            # A subclass whose constructor never runs this one's registers too (or the run refuses).
            sites += [
                (
                    sub_home,
                    sub,
                    sub_init,
                    spec.registration.insert_after
                    if _holds_anchor(sub_home, sub_init, spec.registration.insert_after)
                    else "",
                )
                for sub_home, sub, sub_init in subclasses.replacing_subclasses(
                    planner, modules, home.name, name, method
                )
            ]
            if spec.registration.early_returns == "skip" and init is not None and not done:
                for line, why in recording.problems(home.text, node, init, anchor):
                    findings.refuse("recording", why, syntax.where(planner.repo, home.path, line), spec.family)
            reads = set() if done else subclasses.self_reads(spec)  # changed after the registration: read stale
            for built_home, statement, changed in after_building.changed_after_building(
                planner, modules, home.name, name, reads, method
            ):
                findings.refuse(
                    "construction",
                    f"this changes {changed} after {name} is built, and the registration in its {method} read "
                    "the value before: set it through the constructor, or register after this line by hand",
                    syntax.where(planner.repo, built_home.path, statement.lineno),
                )
            sited = {(module, cls) for module, cls in constructions}
            for sub_home, sub, statement, late in subclasses.set_after_parent(
                planner, modules, home.name, name, method, reads
            ):
                if (sub_home.name, sub) not in sited:
                    findings.refuse(
                        "subclass",
                        f"{sub}.{method} changes self.{', self.'.join(late)} after running {name}.{method}, whose "
                        f"registration reads the value it replaces: register in {sub} by hand",
                        syntax.where(planner.repo, sub_home.path, statement.lineno),
                    )
            for site_home, site_class, site_init, _anchor in sites[1:]:
                unset = (
                    subclasses.unset_attributes(modules, site_home.name, site_class, site_init, spec)
                    if method == "__init__"
                    else []
                )
                if unset and not done:
                    findings.refuse(
                        "subclass",
                        f"{site_class} replaces {name}.__init__ without running it and never sets "
                        f"self.{', self.'.join(unset)}, which the registration reads: register there by hand, or "
                        "have it call the parent's",
                        syntax.where(planner.repo, site_home.path, site_init.lineno),
                    )
                    sites = [site for site in sites if site[1] != site_class]
            for site_home, site_class, site_init, anchor in sites:
                site_spec = in_site_names(modules, spec, site_home.name, site_init) if site_init else spec
                for old, new in renamed.items() if site_init is init else ():
                    site_spec = _renamed(site_spec, old, new)
                gate = (
                    SiteGate(site_spec.registration.gate, site_spec.registration.gate_imports)
                    if done or site_init is None
                    else gate_for_site(planner, findings, modules, site_spec, site_home, site_init, legacy, registry)
                )
                lazy = site_spec.registration.import_style == "lazy" or (
                    site_spec.registration.import_style == "auto" and imports_lazily(site_home, site_spec)
                )
                findings.add(
                    site_home.name,
                    InsertRegistration(
                        site_class,
                        gate.gate,
                        gate.code or site_spec.registration.code,
                        anchor,
                        site_spec.kernel.module,
                        site_spec.kernel_name,
                        lazy,
                        gate.imports,
                        frozenset(
                            site_spec.registration.binding_names()
                            | (free_names(gate.gate, "eval") if gate.gate else set())
                        )
                        - _walrus_names(gate.gate),
                        site_spec.registration.call(),
                        gate.inner_gate,
                        gate.inner_imports,
                        method,
                        override if site_class == name else "",
                        site_spec.registration.early_returns == "register",
                    ),
                )
    return findings


def _walrus_names(gate: str) -> set[str]:
    """Names the gate binds itself (`(vllm_config := ...) is not None`): bound wherever the block runs."""
    tree = ast.parse(gate or "None", mode="eval")
    return {n.target.id for n in ast.walk(tree) if isinstance(n, ast.NamedExpr) and isinstance(n.target, ast.Name)}


def in_site_names(modules: RepoModules, spec: MigrationSpec, module: str, init: ast.FunctionDef) -> MigrationSpec:
    """The spec as this constructor writes it: the engine config under the constructor's own name for it (a fork's
    `engine_config: VllmConfig`) where the spec's `vllm_config` names nothing there, and a name the registration
    imports under the module's own alias for it (a fork's `current_platform as platform`)."""
    frame = construction_site.site_frame(modules, module, init)
    own, name = construction_site.config_name(modules, frame), modules.engine.config_parameter
    if own is not None and own != name and name in frame.arguments:
        spec = _renamed(spec, name, own)
    return _imports_as_aliased(modules, spec, module)


def _imports_as_aliased(modules: RepoModules, spec: MigrationSpec, module: str) -> MigrationSpec:
    """The spec with each name its gate_imports bind read under the alias the module imports it by at its top,
    that import left out, where the module binds the name itself nowhere."""
    table, kept = modules.imports(module), []
    top = {
        alias.asname or alias.name
        for statement in syntax.module_level(modules.tree(module) or ast.Module(body=[], type_ignores=[]))
        if isinstance(statement, ast.ImportFrom)
        for alias in statement.names
    }
    for line in spec.registration.gate_imports:
        statement = ast.parse(line).body[0]
        names = []
        for alias in statement.names:
            bound = alias.asname or alias.name
            local = next((n for n in sorted(top) if table[n] == (statement.module, alias.name)), None)
            if local is None or local == bound or bound in table or modules.definition(module, bound) is not None:
                names.append(alias)
            else:
                spec = _renamed(spec, bound, local)
        if names:
            kept.append(
                line if len(names) == len(statement.names) else ast.unparse(ast.ImportFrom(statement.module, names, 0))
            )
    return spec if tuple(kept) == spec.registration.gate_imports else spec.replaced(gate_imports=tuple(kept))


def _reads_through(guard: guards.Atom, atom: guards.Atom) -> bool:
    """Whether `atom` reads an attribute or item of what `guard` checks is there (`x is not None`, or `x`)."""
    test = guard.expression
    if isinstance(test, ast.Compare) and [type(o) for o in test.ops] == [ast.IsNot]:
        if not (isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None):
            return False
        test = test.left
    elif not isinstance(test, ast.Attribute | ast.Name):
        return False
    checked = ast.dump(test)
    return any(
        isinstance(n, ast.Attribute | ast.Subscript) and ast.dump(n.value) == checked for n in ast.walk(atom.expression)
    )


def _renamed(spec: MigrationSpec, old: str, new: str) -> MigrationSpec:
    code, gate = spec.registration.code, spec.registration.gate
    return spec.replaced(registration=renamed_in(code, old, new), gate=gate and renamed_in(gate, old, new))


@dataclasses.dataclass(frozen=True)
class SiteGate:
    gate: str  # the block's condition
    imports: tuple[str, ...]  # imports it needs at the module's top
    inner_gate: str = ""  # conditions that need a name the module imports only inside functions: checked after
    inner_imports: tuple[str, ...] = ()  # ... those imports, made inside the block
    code: str = ""  # the registration's code with the search's filters it checks joined in ("": the spec's)


def gate_for_site(
    planner: Planner,
    findings: Findings,
    modules: RepoModules,
    spec: MigrationSpec,
    home: SourceModule,
    init: ast.FunctionDef,
    legacy: list[guards.Atom],
    registry: list[guards.Atom],
) -> SiteGate:
    """The registration's gate at this site: the tree's guards in the site's names, after the spec's own gate
    (checked against them: a difference the spec does not list as intended refuses the run)."""
    where = syntax.where(planner.repo, home.path, init.lineno)
    frame = construction_site.site_frame(modules, home.name, init)
    inside = construction_site.registration_guards(modules, frame, spec.registration.code)
    written = construction_site.spec_gate_atoms(modules, frame, spec.registration.gate)
    differences, refusals, unused = site_gate.compare(modules, spec, frame, legacy, registry, inside + written, where)
    findings.warnings += [warning for warning in unused if warning not in findings.warnings]  # said once, not per site
    if refusals:
        raise SpecError(
            f"{spec.family}: the registration's gate differs from the guards the legacy call ran "
            "under:\n" + "\n".join(refusals)
        )
    dropped = {d.atom.canonical for d in differences} | construction_site.holds_at_site(frame)
    # the registration's own checks answer a filter: `getattr(self, "weight", None).dtype` that of `self.weight.dtype`
    forms = lambda atom: {atom.canonical, simplify.attribute_form(atom.expression)}  # noqa: E731
    covered = set().union(*map(forms, inside + written + registry), dropped)
    carried = [a for a in legacy if not a.per_layer and not a.caught and not forms(a) & covered]
    implied = site_gate.implied(carried + inside + written, modules)
    carried = [a for a in carried if a.canonical not in implied]
    answered = set().union(*map(forms, legacy))  # the checks of the registration's own code the legacy made too
    unanswered = [a for a in inside if not forms(a) & answered]
    if narrowed := layer_filters.checked_otherwise([a for a in carried if a.at_layer], unanswered):
        raise SpecError(f"{spec.family}: " + "\n".join(narrowed))
    # A carried filter of the search ran only once the filters before it held (`weight.shape[1]` once
    # `isinstance(weight, torch.Tensor)` did): those come along, in the search's order, where the site can write them.
    searched = [a for a in legacy if a.at_layer]
    guarded_by = {
        id(a): [g for g in searched[: searched.index(a)] if g.expressible and g.canonical not in dropped]
        for a in searched
    }
    # ... unless the registration's own `if` checks them all: the filter joins that `if`, after them.
    checked = set().union(*map(forms, inside))
    joinable = [
        a for a in carried if a.at_layer and guarded_by[id(a)] and all(forms(g) & checked for g in guarded_by[id(a)])
    ]
    in_registration = {
        id(a): text
        for a in joinable
        if (text := site_gate.in_registration_names(modules, frame, spec.registration.code, a))
    }
    joined_code = (
        joined_into_registration_if(spec.registration.code, list(in_registration.values())) if in_registration else None
    )
    if joined_code is None:
        in_registration = {}  # no `if` of the registration holds all its calls: the filters stay in the gate
    carried = [a for a in carried if id(a) not in in_registration]
    last = max((i for i, a in enumerate(searched) if a in carried), default=0)
    guarding = [a for a in searched[:last] if a.expressible and a.canonical not in dropped]
    # A carried guard that reads through what a dropped one checked (`x.y` after `x is not None`) ran only once that
    # one held: it comes along, before it, whatever made the spec drop it.
    through = [
        d
        for i, d in enumerate(legacy)
        if d.canonical in dropped
        and d.expressible
        and not (d.per_layer or d.caught)
        and any(_reads_through(d, a) for a in legacy[i + 1 :] if a in carried)
    ]
    carried = [a for a in legacy if a in carried or a in guarding or a in through]
    if problems := layer_filters.problems(planner, modules, frame, [a for a in carried if a.at_layer]):
        raise SpecError(f"{spec.family}: " + "\n".join(problems))
    removed = frozenset(filter(None, (spec.legacy.module, spec.legacy.orchestrator_module)))
    rendered = [site_gate.render_gate(modules, home.name, init, [atom], where, removed) for atom in carried]
    inner = [
        (text, lines)
        for text, lines in rendered
        if any(
            _imported_only_in_functions(home, source) or _imports_from(modules, source, home.name)
            for source in (line.split()[1] for line in lines)
        )
    ]
    outer = [part for part in rendered if part not in inner]
    config = modules.engine.config_parameter
    if (
        config in free_names(spec.registration.code, "exec") | free_names(spec.registration.gate or "None", "eval")
        and config not in frame.arguments
        and config not in syntax.local_names(init)
        and not any(text.startswith(f"({config} :=") for text, _ in rendered)
    ):  # the registration reads the config where the constructor has none: bound through the accessor
        binding, line = site_gate.config_binding(modules, home.name, init, where)
        outer.insert(0, (binding, (line,)))
    gate = [
        *(
            syntax.conjuncts(ast.parse(spec.registration.gate, mode="eval").body)
            if spec.registration.gate.strip()
            else []
        ),
        *(part for text, _ in outer for part in syntax.conjuncts(ast.parse(text, mode="eval").body)),
    ]  # each rendered guard's conjuncts: one that binds the config (`(vllm_config := ...) is not None`) is written once
    before = _anchor_line(home, init, spec.registration.insert_after)

    def simple(parts: list[str]) -> str:
        return site_gate.simplified(modules, home.name, init, syntax.conjunction(parts), before) if parts else ""

    found = SiteGate(
        spec.registration.gate.strip() if gate and not outer else simple([ast.unparse(part) for part in gate]),
        tuple(dict.fromkeys((*spec.registration.gate_imports, *(line for _, lines in outer for line in lines)))),
        simple([text for text, _ in inner]),
        tuple(dict.fromkeys(line for _, lines in inner for line in lines)),
        joined_code or "",
    )
    findings.gate_plans.append(
        site_gate.GatePlan(
            spec.family,
            str(where),
            tuple(legacy),
            tuple(registry),
            syntax.conjunction([found.gate, found.inner_gate]),
            found.imports + found.inner_imports,
            tuple(differences),
            tuple(a for a in legacy if a.per_layer or a.at_layer),
        )
    )
    return found


def _holds_anchor(home: SourceModule, init: ast.FunctionDef, insert_after: str) -> bool:
    """Whether the constructor has the statement the registration goes after."""
    segment = syntax.source_segment(home.text, init)
    return any(syntax.holds_anchor(line, insert_after) for line in syntax.source_lines(segment))


def _anchor_renamed(
    planner: Planner, findings: Findings, spec: MigrationSpec, home: SourceModule, init: ast.FunctionDef
) -> tuple[str, dict[str, str]]:
    """insert_after where the method writes that statement with a local named otherwise (a fork's
    `self.dtypes.add(quant_dtype)` for `self.dtypes.add(dtype)`): the first line of the one statement that reads as
    it once its names are renamed one to one, and that renaming, for the registration to read the method's names;
    the spec's, and none, where no one statement does (the run then refuses as before)."""
    anchor = spec.registration.insert_after
    found = [
        (statement, names)
        for statement in syntax.statements(init)
        if isinstance(statement, ast.stmt)
        and (names := syntax.renaming(anchor, syntax.source_segment(home.text, statement) or "")) is not None
        and not set(names) & set(names.values())  # renamed one after another by the registration
    ]
    if len(found) != 1:
        return anchor, {}
    statement, names = found[0]
    line = syntax.source_lines(home.text)[statement.lineno - 1].strip()
    findings.warnings.append(
        f"{spec.family}: insert_after {anchor!r} taken for {line!r} "
        f"({syntax.where(planner.repo, home.path, statement.lineno)}), which this tree writes with "
        f"{', '.join(f'{theirs} for {ours}' for ours, theirs in names.items())}: the registration reads it so; "
        "check that it is the same statement"
    )
    return line, names


def _anchor_line(home: SourceModule, init: ast.FunctionDef, insert_after: str) -> float:
    """The first line of the constructor's statement the registration goes after (infinity: at its end)."""
    if not insert_after:
        return float("inf")
    lines = syntax.source_lines(home.text)
    found = (
        s.lineno
        for s in ast.walk(init)
        if isinstance(s, ast.stmt) and syntax.holds_anchor(lines[s.lineno - 1], insert_after)
    )
    return min(found, default=float("inf"))


def _imports_from(modules: RepoModules, module: str, source: str) -> bool:
    """`module` imports from `source` at its top level (a subclass's module from its base's): imported there at
    the top, it would close an import circle, so the site imports it inside the block."""
    return modules.ours(module) and any(home == source for home, _ in modules.imports(module).values())


def _imported_only_in_functions(module: SourceModule, source: str) -> bool:
    """The module imports from `source` inside functions and never at its top level (so a new import waits too)."""
    found = [
        n
        for n in ast.walk(module.tree)
        if isinstance(n, ast.ImportFrom) and absolute_module(module.package, n.module, n.level) == source
    ]
    top = {id(n) for n in module.tree.body}
    return bool(found) and not any(id(n) in top for n in found)


def check_contract(planner: Planner, findings: Findings, spec: MigrationSpec) -> None:
    """A registration on a kernel that has no register_warmup would fail when the layer is built: refuse it,
    unless the spec adopts the contract for the kernel's class (which must own its keys and compile)."""
    if not spec.registers_kernel() or spec.lift or spec.owner:
        return  # a lifted kernel's dispatcher is the contract's (transforms/lift_kernel.py), as is an owner
    home = planner.module(spec, "singleton_module")
    name = spec.kernel.name if spec.kernel.name in home.defs else spec.kernel_name
    modules = planner.repo_model(home.name)
    reason = modules.off_contract(home.name, name)
    found = modules.kernel_class(home.name, name)
    if reason and spec.adoption:
        if found is None:
            raise SpecError(
                f"{spec.family}: contract_base: {name} in {home.name} is not an object of a class "
                "defined in the repo, so no class can adopt the contract"
            )
        cls_module, cls = found
        missing = [
            method for method in ("compile", "get_warmup_keys") if modules.method(cls_module, cls, method) is None
        ]
        if missing:
            raise SpecError(
                f"{spec.family}: contract_base: {cls.name} ({cls_module}:{cls.lineno}) does not define "
                f"{', '.join(missing)}: the registry could not warm it; that is a kernel "
                "author's change, not a codemod's"
            )
        base_module, _, base = spec.adoption.contract_base.rpartition(":")
        planner.module(spec, "contract_base", base_module)
        adopt, why = adoption(modules, cls_module, cls, base_module, base)
        if why:
            raise SpecError(
                f"{spec.family}: contract_base: {why}. The class cannot take the base's initializer, "
                "and adopting the base without it leaves compile_key() and the registry's cache "
                "broken: make dispatch traceable first (a kernel author's change)"
            )
        for operation in adopt:
            findings.add(cls_module, operation)
        if any(isinstance(operation, RewriteDispatch) for operation in adopt):
            dispatch = modules.method(cls_module, cls, "dispatch")
            findings.warnings.append(
                f"{modules.where(cls_module, dispatch)}: {cls.name}.dispatch is rewritten into the form "
                f"{base}.__init__ traces (it could not trace the original); proven to return the same key on "
                "every path of its conditions, its calls and lookups taken as deterministic (as the tracer takes them)"
            )
        findings.leftovers += shadowed_state(modules, cls_module, cls, base_module, base)
    if not reason or spec.adoption:
        method = found and modules.method(found[0], found[1], "get_warmup_keys")
        if method:  # else not readable in the repo (a decorator's object, another library's class)
            check_registration_arguments(spec, found[1], method, found[0], modules.engine.config_parameter)
    else:
        raise SpecError(
            f"{spec.family}: the registration calls {spec.kernel_name}.register_warmup(), but "
            f"{reason}. Put the kernel on the engine's contract first (a class with register_warmup, "
            "such as vLLM's VllmJitKernel, or a triton_kernel_dispatcher_with_warmup dispatcher), or "
            "name the contract base in contract_base when its class owns get_warmup_keys and compile"
        )


def check_registration_arguments(
    spec: MigrationSpec, cls: ast.ClassDef, method: ast.FunctionDef, where: str, config_parameter: str
) -> None:
    """The registry calls `get_warmup_keys(*args, **kwargs)` (`method` of `cls`, defined in `where`) with what was
    registered, or with the engine config alone (`config_parameter`) where nothing was: they must bind."""
    call = next(
        node
        for node in ast.walk(ast.parse(spec.registration.code))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "register_warmup"
    )
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return
    signature = _signature(method)
    try:
        signature.bind(None, *call.args, **{k.arg: k.value for k in call.keywords})
    except TypeError as exc:
        if call.args or call.keywords or config_parameter not in signature.parameters:
            shown = str(signature).replace("(self, ", "(")
            raise SpecError(
                f"{spec.family}: the registration's arguments do not fit {cls.name}."
                f"get_warmup_keys{shown} ({where}:{method.lineno}), which the registry calls "
                f"with them: {exc}"
            ) from None


class _Source(str):
    """A default value shown as its source text."""

    __repr__ = str.__str__


def _signature(function: ast.FunctionDef) -> inspect.Signature:
    """A function's parameters as `inspect` sees them, read from its source (defaults as their source text)."""
    arguments, kind = function.args, inspect.Parameter

    def default(node: ast.expr | None) -> object:
        return kind.empty if node is None else _Source(ast.unparse(node))

    positional = [*arguments.posonlyargs, *arguments.args]
    defaults = [None] * (len(positional) - len(arguments.defaults)) + list(arguments.defaults)
    parameters = [
        kind(
            a.arg,
            kind.POSITIONAL_ONLY if a in arguments.posonlyargs else kind.POSITIONAL_OR_KEYWORD,
            default=default(d),
        )
        for a, d in zip(positional, defaults)
    ]
    if arguments.vararg:
        parameters.append(kind(arguments.vararg.arg, kind.VAR_POSITIONAL))
    parameters += [
        kind(a.arg, kind.KEYWORD_ONLY, default=default(d)) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults)
    ]
    if arguments.kwarg:
        parameters.append(kind(arguments.kwarg.arg, kind.VAR_KEYWORD))
    return inspect.Signature(parameters)


def imports_lazily(module: SourceModule, spec: MigrationSpec) -> bool:
    """The module imports from the kernel's module only inside functions (never at the top level)."""
    return module.name != spec.kernel.module and _imported_only_in_functions(module, spec.kernel.module)
