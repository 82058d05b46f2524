"""Map an engine's remaining legacy warmups: what each compiles, where its kernels are built, what moves by spec.

From the orchestrator's entry function, every standalone warmup call and inline warmup
step is followed (through the orchestrator's own helpers, e.g. an autotune wrapper that
calls two warmups) to the warmup functions; what can run of them (codemods.walk: the engine
functions and objects' methods they reach) is searched for kernels: `@triton.jit`-style
decorated functions, module-level objects of a `*JitKernel` class, and CuTe DSL kernel classes
(codemods.compile_units). Each kernel's construction sites are the engine classes outside the
warmup package that reference it; a `register_warmup` call on it means it already registers
with the contract. Each warmup is classified by the work that stays when its kernels move
(codemods.classify). Everything is read with `ast`; nothing is imported. The JSON form
(`SURVEY_FORMAT`) is documented in docs/json-formats.md.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from . import classify, compile_units, lift, objects
from .engines import DEFAULT_ENGINE, Engine
from .files import discover_paths
from .repo import RepoModules, call_sites, dotted_name
from .spec import default_dispatcher, provider_of
from .syntax import module_level
from .walk import Step, Walk

SURVEY_FORMAT = "zerojit-survey/4"
VERDICTS = ("spec", "lift", "manual")
KERNEL_DECORATORS = ("jit", "autotune", "heuristics", "kernel")
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclasses.dataclass
class KernelFinding:
    name: str
    module: str
    line: int
    kind: str  # the decorator (e.g. "triton.jit") or "JitKernel object"
    on_contract: bool  # it has register_warmup (a JitKernel object, or a *_with_warmup dispatcher)
    registers_at: list[str]  # "module:line" of register_warmup calls on it
    launched_by: list[str]  # "module:function" outside the warmups that reference it (its wrappers)
    constructed_in: list[str]  # "module:Class" referencing it, or one of its wrappers, outside the warmups
    verdict: str = "manual"  # "spec" (a spec moves it), "lift" (the lift puts it on the contract), "manual"
    reasons: list[str] = dataclasses.field(default_factory=list)  # why manual, or what a human must confirm
    launcher: str | None = None  # "module:function" whose launch a lift turns into the dispatcher
    step: str | None = None  # "module:function" of the legacy code the lift translates into the provider
    parameters: list[str] = dataclasses.field(default_factory=list)  # the lifted provider's: the registration's
    dispatcher: str | None = None  # the lifted dispatcher's name (what the registration calls)
    lifted_with: list[str] = dataclasses.field(default_factory=list)  # the launcher's other kernels, lifted together
    # "migratable": a compile key of the engine's; "not compile keys": its warmup measures launches on the device
    classification: str = "migratable"
    moves_by: str | None = None  # "spec", "lift" or "CuTe DSL owner" (adopted as one); None: `reasons` say why not
    specs: list[str] = dataclasses.field(default_factory=list)  # families of known specs that move it (survey_specs)


@dataclasses.dataclass
class WarmupFinding:
    function: str
    module: str
    kind: str  # "standalone" (a function of another module) or "inline step" (of the orchestrator)
    via: str | None  # the orchestrator helper it is reached through, if any
    gate: str | None  # the conditions the orchestrator calls it under, as source
    line: int  # of the call in the orchestrator
    kernels: list[KernelFinding]
    verdict: str  # "spec"/"lift" (every kernel it warms moves so), or "manual"
    reasons: list[str]  # why manual, or what a human must confirm
    classification: str = "unseen"  # one of classify.CLASSIFICATIONS
    stays: list[classify.Work] = dataclasses.field(default_factory=list)  # its work that is not a compile key
    specs: list[str] = dataclasses.field(default_factory=list)  # families of known specs that move a kernel of it
    all_moved: bool = False  # those specs move every kernel it warms, and the survey sees no other work of it

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _is_warmup_name(name: str) -> bool:
    """A warmup entry by vLLM's naming: `*warmup*`, or `autotune_*` (not predicates like `use_*_autotune_*`)."""
    return "warmup" in name.lower() or name.startswith("autotune_")


class Survey:
    def __init__(
        self,
        repo: Path,
        orchestrator: str | None = None,
        entry: str | None = None,
        require_orchestrator: bool = True,
        engine: Engine = DEFAULT_ENGINE,
    ):
        """`orchestrator`, `entry`: the engine's own unless named. `require_orchestrator=False`: a tree without the
        orchestrator (an engine with no legacy warmup left) is surveyed as having no legacy warmups
        (`orchestrator_problem` says why) instead of refused."""
        orchestrator = orchestrator or engine.orchestrator
        self.repo, self.orchestrator, self.entry = Path(repo), orchestrator, entry or engine.orchestrator_entry
        self.modules = RepoModules(self.repo, orchestrator.split(".")[0], engine)
        self.warmup_package = orchestrator.rpartition(".")[0]
        self.orchestrator_problem = self._orchestrator_problem()
        if self.orchestrator_problem and require_orchestrator:
            raise FileNotFoundError(self.orchestrator_problem)
        self._index: dict[str, list[str]] | None = None
        # A CuTe DSL kernel class -> (what compiles it, the object that owns it or None, through a registry?).
        self._compile_units: dict[tuple[str, str], tuple[str, str | None, bool]] = {}
        self._reads: dict[str, tuple[dict[str, list[str]], dict[str, list[int]]]] = {}
        self.walk = Walk(self.modules, lambda module, name: self._kernel_kind(module, name) is not None)
        self._kernels: dict[tuple[str, str], list[tuple[str, str]]] = {}

    def _orchestrator_problem(self) -> str | None:
        if self.modules.tree(self.orchestrator) is None:
            why = self.modules.why_unreadable(self.orchestrator)
            if why:
                return f"the orchestrator module {self.orchestrator} cannot be read: {why}"
            return f"{self.repo} has no orchestrator module {self.orchestrator} (--orchestrator names it)"
        if not isinstance(self.modules.definition(self.orchestrator, self.entry), ast.FunctionDef):
            return f"{self.orchestrator} defines no function {self.entry}()"
        return None

    # -- the orchestrator ------------------------------------------------------------------------

    def run(self) -> list[WarmupFinding]:
        findings: list[WarmupFinding] = []
        if self.orchestrator_problem:
            return findings
        tree = self.modules.tree(self.orchestrator)
        sites = [s for s in call_sites(tree, lambda call, assigned: True) if s.function.name == self.entry]
        seen: set[tuple[str, str]] = set()
        for site in sites:
            gate = site.gate_source()
            for module, function, via in self._warmups_called(site.call):
                if (module, function) in seen:
                    continue
                seen.add((module, function))
                kind = "inline step" if module == self.orchestrator else "standalone"
                findings.append(self._finding(module, function, kind, via, gate, site.call.lineno))
        return findings

    def _warmups_called(self, call: ast.Call) -> Iterator[tuple[str, str, str | None]]:
        """(module, function, via helper) of the warmups this orchestrator call reaches."""
        target = self._call_target(self.orchestrator, call)
        if target is None:
            return
        module, function = target
        if module == self.orchestrator:
            reached = [
                t
                for inner in self._calls_in(module, function)
                for t in [self._call_target(module, inner)]
                if t and t[0] != module and _is_warmup_name(t[1])
            ]
            if reached:  # a helper of the orchestrator that calls warmups of other modules
                for inner_module, inner_function in dict.fromkeys(reached):
                    yield inner_module, inner_function, function
            elif _is_warmup_name(function):
                yield module, function, None
        elif self.modules.ours(module) and _is_warmup_name(function):
            yield module, function, None

    def _call_target(self, module: str, call: ast.Call) -> tuple[str, str] | None:
        func = call.func
        if isinstance(func, ast.Name):
            target, name = self.modules.resolve(module, func.id)
            return (target, name) if name and self._defines(target, name) else None
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            holder, name = self.modules.resolve(module, func.value.id)
            if name is None and self.modules.why_unreadable(holder):
                return holder, func.attr
            if name is None and self.modules.tree(holder) is not None:  # a module's function
                target, attribute = self.modules.resolve(holder, func.attr)
                return (target, attribute) if attribute and self._defines(target, attribute) else None
        return None

    def _defines(self, module: str, name: str) -> bool:
        """`module` defines `name`, or is the engine's own module and cannot be read or lacks it (then the survey
        lists the call with why, never drops it)."""
        return (
            self.modules.definition(module, name) is not None
            or bool(self.modules.why_unreadable(module))
            or (self.modules.ours(module) and self.modules.tree(module) is not None and _is_warmup_name(name))
        )

    def _calls_in(self, module: str, function: str) -> list[ast.Call]:
        node = self.modules.definition(module, function)
        return [n for n in ast.walk(node) if isinstance(n, ast.Call)] if node else []

    # -- what a warmup compiles ------------------------------------------------------------------

    def _finding(
        self, module: str, function: str, kind: str, via: str | None, gate: str | None, line: int
    ) -> WarmupFinding:
        kernels = [self._kernel(m, n) for m, n in self._kernels_of(module, function)]
        definition = self.modules.definition(module, function)
        walk = self.walk.steps(module, definition) if isinstance(definition, ast.FunctionDef) else []
        stays = self._work(walk) + self._idle_providers(walk)
        tuned = [w for w in stays if w.owner == classify.TUNING]
        verdict, reasons = self._verdict(module, function, kind, kernels)
        for kernel in kernels:
            kernel.verdict, kernel.reasons = self._kernel_verdict(module, function, kind, kernel, tuned)
            kernel.classification = "not compile keys" if tuned else "migratable"
            kernel.moves_by = None if tuned else classify.moves_by(kernel.verdict, kernel.kind)
        structural = verdict == "manual" and (
            not kernels or any("cannot be read" in r or "defines no" in r for r in reasons)
        )
        if tuned:
            reasons = []
        elif not structural:
            # The warmup moves when each of its kernels does (one spec per kernel, --draft-specs); else why not.
            manual = [k for k in kernels if k.verdict == "manual"]
            if manual:
                verdict, reasons = "manual", [f"{k.name}: {k.reasons[0]}" for k in manual]
            elif len(kernels) > 1 or verdict == "manual" or kernels[0].verdict == "lift":
                verdict = "lift" if any(k.verdict == "lift" for k in kernels) else "spec"
                reasons = [f"{k.name} ({k.verdict}): {r}" for k in kernels for r in k.reasons]
        if stays:  # moving its kernels leaves this work: the warmup itself stays
            verdict, reasons = "manual", [classify.stays_reason(stays), *reasons]
        classification = classify.classification(sum(k.classification == "migratable" for k in kernels), stays)
        return WarmupFinding(function, module, kind, via, gate, line, kernels, verdict, reasons, classification, stays)

    def _work(self, walk: list[Step]) -> list[classify.Work]:
        reaches_kernel = lambda called: bool(self._kernels_of(*called))  # noqa: E731
        return classify.work(self.modules, self.modules.engine, walk, reaches_kernel)

    def _idle_providers(self, walk: list[Step]) -> list[classify.Work]:
        """The work of each registry provider that compiles no CuTe DSL kernel the survey finds: what its method
        runs (another library's kernels), else its module's library, else the provider itself, unexplained."""
        found: list[classify.Work] = []
        mentioning = lambda word: self._mentions().get(word, ())  # noqa: E731
        for module, _, _, nodes in walk:
            for provider, name, method in compile_units.registry_providers(self.modules, module, nodes, mentioning):
                if method is None or compile_units.compiled_kernels(self.modules, method[0], provider, method[1]):
                    continue
                where = f"{method[0]}:{method[1].lineno}"
                stays = self._work(self.walk.steps(*method, provider))
                shown = f"{provider[1]}.{name}()"
                owner = classify.library(self.modules, provider[0])
                found += [classify.Work(w.owner, f"{shown} -> {w.what}", w.where) for w in stays] or [
                    classify.Work(
                        owner or f"{provider[0]}:{provider[1]}", f"{shown} compiles no kernel of the engine", where
                    )
                ]
        return found

    def _kernel_verdict(
        self, module: str, function: str, kind: str, kernel: KernelFinding, tuned: list[classify.Work]
    ) -> tuple[str, list[str]]:
        """One kernel's verdict: what its warmup's verdict says of it alone, or the lift's answer for a plain
        Triton kernel off the contract (a lift verdict only where codemods.lift accepts its launcher and step)."""
        if tuned:
            return "manual", [
                f"{kernel.name} runs the configurations its warmup measures on the device ({tuned[0].where}), "
                "not ones a compile key names"
            ]
        if kernel.kind == "cute.compile":
            where, owner, registry = self._compile_units[(kernel.module, kernel.name)]
            return "manual", [
                f"{kernel.name} is a CuTe DSL kernel that {where} compiles"
                + (" for a registry of providers" if registry else "")
                + f": put {owner or kernel.name} on the contract as a CuTe DSL JIT kernel owner (its compile keys, "
                "registered where it is built)" + (" and its compile unit leaves the registry" if registry else "")
            ]
        if not kernel.on_contract and kernel.kind.rsplit(".", 1)[-1] in ("jit", "heuristics"):
            return self._lift_verdict(module, function, kind, kernel)
        if kernel.kind.rsplit(".", 1)[-1] == "autotune":
            return "manual", [
                f"{kernel.name} is autotuned: the engine's helper launches it for real to pick a "
                "config, which a compile-only warmup cannot"
            ]
        verdict, reasons = self._verdict(module, function, kind, [kernel])
        if verdict == "spec" and len(self._kernels_of(module, function)) > 1:
            home = self.orchestrator if kind == "inline step" else module
            steps = [
                step for w in kernel.launched_by if (step := self._step_calling(home, function, *w.partition(":")[::2]))
            ]
            if not steps or steps[0] == function:
                return "manual", [
                    f"{kernel.name} is warmed in one step with other kernels: split the warmup into "
                    "one step per kernel first (then one spec each)"
                ]
            kernel.step = f"{home}:{steps[0]}"
        return verdict, reasons

    def _lift_verdict(self, module: str, function: str, kind: str, kernel: KernelFinding) -> tuple[str, list[str]]:
        step_home = self.orchestrator if kind == "inline step" else module
        launchers = [w.partition(":")[2] for w in kernel.launched_by if w.partition(":")[0] == kernel.module]
        why = (
            [
                f"{kernel.name} is launched from no function of its own module ({kernel.module}) that the lift can "
                "turn into a dispatcher"
            ]
            if not launchers
            else []
        )
        for launcher in launchers:
            step = self._step_calling(step_home, function, kernel.module, launcher)
            if step is None:
                why.append(
                    f"no function of {step_home} calls {kernel.module}.{launcher} by name (the warmup "
                    "reaches it through an engine object's methods)"
                )
                continue
            # A launcher's kernels go together: the step that warms one through it warms them all.
            kernels = list(dict.fromkeys([kernel.name, *lift.launched_kernels(self.modules, kernel.module, launcher)]))
            plans = {}
            try:
                for name in kernels:
                    dispatcher = _dispatcher_name(launcher, name, kernels)
                    plans[name] = lift.plan_lift(
                        self.modules,
                        kernel_module=kernel.module,
                        kernel=name,
                        launcher_module=kernel.module,
                        launcher=launcher,
                        step_module=step_home,
                        step=step,
                        dispatcher_name=dispatcher,
                        provider_name=provider_of(dispatcher),
                        together=tuple((kernel.module, other) for other in kernels if other != name),
                    )
            except lift.LiftError as exc:
                failed = next(name for name in kernels if name not in plans)
                why.append(
                    str(exc)
                    if failed == kernel.name
                    else f"{launcher} also launches {failed}, which must be lifted with it and is not: {exc}"
                )
                continue
            plan = plans[kernel.name]
            kernel.launcher, kernel.step = f"{kernel.module}:{launcher}", f"{step_home}:{step}"
            kernel.parameters = [name for name, _ in plan.parameters]
            kernel.dispatcher = _dispatcher_name(launcher, kernel.name, kernels)
            kernel.lifted_with = [name for name in kernels if name != kernel.name]
            confirm = [
                f"registration: pass {name} (the legacy step read {read}) in the site's names"
                for name, read in plan.parameters
            ]
            sites = ", ".join(kernel.constructed_in) or "no engine class found: name the class that launches it"
            confirm.append(
                f"site: {sites}; register in __init__, or in the method where what the registration "
                "reads exists inside a capture window (construction_method, e.g. "
                f"{self.modules.engine.bound_later[0][1]} for KV-cache facts)"
            )
            confirm += [
                f"{launcher} also launches {name}: migrate its draft ({name.strip('_')}.toml) in the same "
                "run, or the step's deletion loses its warmup"
                for name in kernel.lifted_with
            ]
            return "lift", confirm
        return "manual", why

    def _step_calling(self, module: str, function: str, kernel_module: str, launcher: str) -> str | None:
        """The function of `module` the warmup `function` runs (itself or one it calls) that calls
        `kernel_module.launcher` the fewest calls away (`function` first among equals)."""
        wanted = self.modules.resolve(kernel_module, launcher)
        names = [function] + [
            n.name
            for n in getattr(self.modules.tree(module), "body", [])
            if isinstance(n, ast.FunctionDef)
            and n.name != function
            and self.modules.reaches(module, function, (module, n.name))
        ]
        depths = {name: self.modules.reaches(module, name, wanted) for name in names}
        reaching = sorted((depth, index, name) for index, (name, depth) in enumerate(depths.items()) if depth)
        return reaching[0][2] if reaching else None  # the closest to the launcher: the step of this kernel

    def _kernels_of(self, module: str, function: str) -> list[tuple[str, str]]:
        """The kernels the warmup `function` can reach (its `Walk`): named, or compiled with `cute.compile` by what
        it runs or by the providers of a registry it reads. For a class, what its methods reach; for "Class.method",
        what that call runs."""
        if (module, function) in self._kernels:
            return self._kernels[(module, function)]
        cls, _, method = function.rpartition(".")
        definition = self.modules.definition(module, cls or function)
        starts = [(module, definition, None)] if isinstance(definition, ast.FunctionDef) else []
        if isinstance(definition, ast.ClassDef) and method and cls:  # "Class.method": what that call runs
            starts = objects.called_methods(self.modules, self.modules.engine, (module, cls), method)
        elif isinstance(definition, ast.ClassDef):
            starts = [(module, m, (module, function)) for m in definition.body if isinstance(m, ast.FunctionDef)]
        found: dict[tuple[str, str], None] = {}
        steps = (step for home, start, owner in starts for step in self.walk.steps(home, start, owner))
        for current, owner, node, nodes in steps:
            found |= dict.fromkeys(self._compiled_for(current, nodes))
            for kernel in compile_units.compiled_kernels(self.modules, current, owner, node, nodes):
                self._compile_units.setdefault(kernel, (f"{current}:{node.name}", None, False))
                found[kernel] = None
            found |= {
                target: None for _, target in self.walk.references(current, node, nodes) if self._kernel_kind(*target)
            }
        self._kernels[(module, function)] = [kernel for kernel in found if not self._library_unit(kernel)]
        return self._kernels[(module, function)]

    def _library_unit(self, kernel: tuple[str, str]) -> bool:
        """A CuTe DSL compile unit of a library's vendored copy (FA4's in `vllm_flash_attn`): its interface keys and
        caches its own variants, so it is the library's JIT, not a compile key of the engine's."""
        return self._kernel_kind(*kernel) == "cute.compile" and classify.library(self.modules, kernel[0]) is not None

    def _compiled_for(self, module: str, nodes: list[ast.AST]) -> Iterator[tuple[str, str]]:
        """The CuTe DSL kernels that the providers of a registry `nodes` read compile (codemods.compile_units)."""
        mentioning = lambda word: self._mentions().get(word, ())  # noqa: E731
        for kernel, where, owner in compile_units.registry_kernels(self.modules, module, nodes, mentioning):
            self._compile_units.setdefault(kernel, (where, owner, True))
            yield kernel

    def _kernel_kind(self, module: str, name: str) -> str | None:
        if (module, name) in self._compile_units:
            return "cute.compile"
        node = self.modules.definition(module, name)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for decorator in node.decorator_list:
                dotted = dotted_name(decorator)
                last = dotted.rsplit(".", 1)[-1]
                if last in KERNEL_DECORATORS or "with_warmup" in last:
                    return dotted
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name):
            cls_module, cls_name = self.modules.resolve(module, node.value.func.id)
            cls = self.modules.definition(cls_module, cls_name) if cls_name else None
            if isinstance(cls, ast.ClassDef) and any("JitKernel" in ast.unparse(base) for base in cls.bases):
                return "JitKernel object"
            if isinstance(cls, ast.ClassDef) and any(
                isinstance(n, ast.FunctionDef) and n.name == "warmup" for n in cls.body
            ):
                return f"{cls_name} object (its own warmup())"
        return None

    def _kernel(self, module: str, name: str) -> KernelFinding:
        kind = self._kernel_kind(module, name)
        node = self.modules.definition(module, name)
        registers, owners = self._uses(module, name)
        wrappers = [owner for owner in owners if owner.endswith("()")]
        classes = [owner for owner in owners if not owner.endswith("()")]
        for wrapper in wrappers:  # the classes that call its wrapper functions select it too
            wrapper_module, _, wrapper_name = wrapper.removesuffix("()").partition(":")
            classes += [owner for owner in self._uses(wrapper_module, wrapper_name)[1] if not owner.endswith("()")]
        on_contract = self.modules.off_contract(module, name) is None
        return KernelFinding(
            name,
            module,
            node.lineno,
            kind,
            on_contract,
            registers,
            [w.removesuffix("()") for w in wrappers],
            list(dict.fromkeys(classes)),
        )

    def _uses(self, module: str, name: str) -> tuple[list[str], list[str]]:
        """register_warmup calls on `module.name`, and what references it outside the warmups:
        "module:Class" for classes, "module:function()" for module-level functions."""
        registers, constructed = [], []
        for other in self._mentions().get(name, ()):
            if other.startswith(self.warmup_package + "."):
                continue
            aliases = {
                local
                for local, source in self.modules.imports(other).items()
                if source[1] == name and self.modules.resolve(*source) == (module, name)
            }
            if other == module:
                aliases.add(name)
            loads, registrations = self._names_read(other)
            for alias in sorted(aliases):
                registers += [f"{other}:{line}" for line in registrations.get(alias, ())]
                constructed += [f"{other}:{owner}" for owner in loads.get(alias, ())]
        return registers, list(dict.fromkeys(constructed))

    def _names_read(self, module: str) -> tuple[dict[str, list[str]], dict[str, list[int]]]:
        """(name -> the top-level classes and "function()"s of `module` reading it, receiver -> lines of its
        register_warmup calls), read once per module."""
        if module not in self._reads:
            loads: dict[str, dict[str, None]] = {}
            registers: dict[str, list[int]] = {}
            tree = self.modules.tree(module)
            for owner, node in _owned_nodes(tree) if tree is not None else ():
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "register_warmup"
                ):
                    registers.setdefault(dotted_name(node.func.value), []).append(node.lineno)
                if owner and isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                    loads.setdefault(node.id, {})[owner] = None
            self._reads[module] = ({name: list(owners) for name, owners in loads.items()}, registers)
        return self._reads[module]

    def _mentions(self) -> dict[str, list[str]]:
        """Identifier -> the engine modules whose text contains it (read once: the cheap prefilter)."""
        if self._index is None:
            self._index = {}
            paths, _ = discover_paths(self.repo)
            for path in paths:
                relative = path.relative_to(self.repo)
                if path.suffix != ".py" or relative.parts[0] != self.modules.package:
                    continue
                parts = relative.with_suffix("").parts
                module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
                try:
                    words = set(IDENTIFIER.findall(path.read_text(encoding="utf-8")))
                except (OSError, UnicodeDecodeError):
                    continue
                for word in words:
                    self._index.setdefault(word, []).append(module)
        return self._index

    # -- verdict ------------------------------------------------------------------------------------

    def _verdict(self, module: str, function: str, kind: str, kernels: list[KernelFinding]) -> tuple[str, list[str]]:
        unreadable = self.modules.why_unreadable(module)
        if unreadable:
            return "manual", [f"its module cannot be read: {unreadable}"]
        if self.modules.definition(module, function) is None:
            return "manual", [
                f"{module} ({self.modules.path(module)}) defines no {function}(); the orchestrator calls it"
            ]
        manual = []
        if not kernels:
            manual.append(
                "no kernel found in it or the engine functions it calls (launched through an engine "
                "object's methods, looked up at run time, or another library's)"
            )
        elif len(kernels) > 1:
            manual.append(
                f"warms {len(kernels)} kernels; a spec moves one kernel: split the warmup into one "
                "step per kernel first (then one spec each)"
            )
        elif not kernels[0].constructed_in:
            manual.append(
                f"{kernels[0].name} is referenced by no engine class outside the warmups, directly or "
                "through its wrappers (no construction site to register in)"
            )
        if manual:
            return "manual", manual
        kernel = kernels[0]
        confirm = [
            "gate: the draft registers under the orchestrator's gate of this warmup (or the JIT switch); "
            "check it holds exactly where the kernel is launched",
            f"insertion point: the end of __init__ of {', '.join(kernel.constructed_in)}; check the kernel is "
            "selected there",
        ]
        if not kernel.on_contract:
            confirm.append(
                f"{kernel.name} ({kernel.kind}) is not on the contract: put it there first (vLLM's "
                "triton_kernel_dispatcher_with_warmup with its warmup inputs, or a JitKernel object)"
            )
        if kernel.registers_at:
            confirm.append(
                f"{kernel.name} already registers at {', '.join(kernel.registers_at)}: the standalone "
                "warmup may only need removing"
            )
        return "spec", confirm


def _dispatcher_name(launcher: str, kernel: str, kernels: list[str]) -> str:
    """The dispatcher a lift writes: the spec's default for a launcher of one kernel, else one per kernel; public,
    since the engine class that registers it sits in another module."""
    if len(kernels) == 1:
        return default_dispatcher(launcher)
    return f"{kernel.strip('_').removesuffix('_kernel')}_dispatch"


def _owned_nodes(tree: ast.Module) -> Iterator[tuple[str | None, ast.AST]]:
    """Every node with the class (or module-level function) it sits in, those a module-level `if` or `try` holds
    included (`if HAS_TRITON: def launcher`); None at module level."""
    for top in module_level(tree):
        if isinstance(top, ast.If | ast.Try):  # its statements come next, each on its own
            yield from ((None, node) for node in ast.walk(top.test)) if isinstance(top, ast.If) else ()
            continue
        owner = (
            f"{top.name}"
            if isinstance(top, ast.ClassDef)
            else f"{top.name}()"
            if isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef))
            else None
        )
        for node in ast.walk(top):
            yield owner, node


def survey_report(repo: Path, findings: list[WarmupFinding], orchestrator: str, entry: str) -> dict[str, Any]:
    """The stable JSON form (format SURVEY_FORMAT, documented in docs/json-formats.md)."""
    moved = [k for f in findings for k in f.kernels if k.specs]
    return {
        "format": SURVEY_FORMAT,
        "repo": str(repo),
        "orchestrator": orchestrator,
        "entry": entry,
        "counts": {
            "warmups": len(findings),
            **{v: sum(f.verdict == v for f in findings) for v in VERDICTS},
            "kernels": {
                "total": sum(len(f.kernels) for f in findings),
                **{v: sum(k.verdict == v for f in findings for k in f.kernels) for v in VERDICTS},
            },
            "classifications": {c: sum(f.classification == c for f in findings) for c in classify.CLASSIFICATIONS},
            "moved_by_specs": {"kernels": len(moved), "warmups": sum(f.all_moved for f in findings)},
        },
        "warmups": [finding.to_dict() for finding in findings],
    }
