"""Map an engine's remaining legacy warmups: what each compiles, where its kernels are built, what moves by spec.

From the orchestrator's entry function, every standalone warmup call and inline warmup
step is followed (through the orchestrator's own helpers, e.g. an autotune wrapper that
calls two warmups) to the warmup functions; their bodies, and the engine functions they
call (to a small depth), are searched for kernels: `@triton.jit`-style decorated functions
and module-level objects of a `*JitKernel` class. Each kernel's construction sites are the
engine classes outside the warmup package that reference it; a `register_warmup` call on
it means it already registers with the contract. Everything is read with `ast`; nothing
is imported. The JSON form (`SURVEY_FORMAT`) is documented in the README.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .files import discover_paths
from .repo import RepoModules, call_sites, dotted_name

SURVEY_FORMAT = "zerojit-survey/1"
KERNEL_DECORATORS = ("jit", "autotune", "heuristics", "kernel")
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
FOLLOW_DEPTH = 3  # engine functions followed from a warmup function while looking for its kernels


@dataclasses.dataclass
class KernelFinding:
    name: str
    module: str
    line: int
    kind: str                 # the decorator (e.g. "triton.jit") or "JitKernel object"
    on_contract: bool         # it has register_warmup (a JitKernel object, or a *_with_warmup dispatcher)
    registers_at: list[str]   # "module:line" of register_warmup calls on it
    launched_by: list[str]    # "module:function" outside the warmups that reference it (its wrappers)
    constructed_in: list[str]  # "module:Class" referencing it, or one of its wrappers, outside the warmups


@dataclasses.dataclass
class WarmupFinding:
    function: str
    module: str
    kind: str            # "standalone" (a function of another module) or "inline step" (of the orchestrator)
    via: str | None      # the orchestrator helper it is reached through, if any
    gate: str | None     # the conditions the orchestrator calls it under, as source
    line: int            # of the call in the orchestrator
    kernels: list[KernelFinding]
    verdict: str         # "spec" or "manual"
    reasons: list[str]   # why manual, or what a human must confirm for the spec

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _is_warmup_name(name: str) -> bool:
    """A warmup entry by vLLM's naming: `*warmup*`, or `autotune_*` (not predicates like `use_*_autotune_*`)."""
    return "warmup" in name.lower() or name.startswith("autotune_")


class Survey:
    def __init__(self, repo: Path, orchestrator: str = "vllm.model_executor.warmup.kernel_warmup",
                 entry: str = "kernel_warmup"):
        self.repo, self.orchestrator, self.entry = Path(repo), orchestrator, entry
        self.modules = RepoModules(self.repo, orchestrator.split(".")[0])
        self.warmup_package = orchestrator.rpartition(".")[0]
        if self.modules.tree(orchestrator) is None:
            why = self.modules.why_unreadable(orchestrator)
            if why:
                raise FileNotFoundError(f"the orchestrator module {orchestrator} cannot be read: {why}")
            raise FileNotFoundError(f"{repo} has no orchestrator module {orchestrator} (--orchestrator names it)")
        if not isinstance(self.modules.definition(orchestrator, entry), ast.FunctionDef):
            raise FileNotFoundError(f"{orchestrator} defines no function {entry}()")
        self._index: dict[str, list[str]] | None = None

    # -- the orchestrator ------------------------------------------------------------------------

    def run(self) -> list[WarmupFinding]:
        findings: list[WarmupFinding] = []
        tree = self.modules.tree(self.orchestrator)
        sites = [s for s in call_sites(tree, lambda call, assigned: True, loops_allowed=True)
                 if s.function.name == self.entry]
        seen: set[tuple[str, str]] = set()
        for site in sites:
            gate = " and ".join(("" if g.holds_when else "not ") + f"({ast.unparse(g.test)})" for g in site.gates) or None
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
            reached = [t for inner in self._calls_in(module, function) for t in [self._call_target(module, inner)]
                       if t and t[0] != module and _is_warmup_name(t[1])]
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
        return self.modules.definition(module, name) is not None or bool(self.modules.why_unreadable(module)) or \
            (self.modules.ours(module) and self.modules.tree(module) is not None and _is_warmup_name(name))

    def _calls_in(self, module: str, function: str) -> list[ast.Call]:
        node = self.modules.definition(module, function)
        return [n for n in ast.walk(node) if isinstance(n, ast.Call)] if node else []

    # -- what a warmup compiles ------------------------------------------------------------------

    def _finding(self, module: str, function: str, kind: str, via: str | None, gate: str | None,
                 line: int) -> WarmupFinding:
        kernels = [self._kernel(m, n) for m, n in self._kernels_of(module, function)]
        verdict, reasons = self._verdict(module, function, kind, kernels)
        return WarmupFinding(function, module, kind, via, gate, line, kernels, verdict, reasons)

    def _kernels_of(self, module: str, function: str) -> list[tuple[str, str]]:
        found: dict[tuple[str, str], None] = {}
        pending, visited = [(module, function, 0)], set()
        while pending:
            current, name, depth = pending.pop(0)
            if (current, name) in visited:
                continue
            visited.add((current, name))
            node = self.modules.definition(current, name)
            if node is None:
                continue
            for ref in ast.walk(node):
                target = self.modules.reference(current, ref)
                if target is None or target == (current, name):
                    continue
                if self._kernel_kind(*target) is not None:
                    found[target] = None
                elif depth < FOLLOW_DEPTH and isinstance(self.modules.definition(*target), ast.FunctionDef):
                    pending.append((*target, depth + 1))  # an engine function it calls (methods are not followed)
        return list(found)

    def _kernel_kind(self, module: str, name: str) -> str | None:
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
            if isinstance(cls, ast.ClassDef) and any(isinstance(n, ast.FunctionDef) and n.name == "warmup"
                                                     for n in cls.body):
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
        return KernelFinding(name, module, node.lineno, kind, on_contract, registers,
                             [w.removesuffix("()") for w in wrappers], list(dict.fromkeys(classes)))

    def _uses(self, module: str, name: str) -> tuple[list[str], list[str]]:
        """register_warmup calls on `module.name`, and what references it outside the warmups:
        "module:Class" for classes, "module:function()" for module-level functions."""
        registers, constructed = [], []
        for other in self._mentions().get(name, ()):
            if other.startswith(self.warmup_package + "."):
                continue
            tree = self.modules.tree(other)
            aliases = {local for local, source in self.modules.imports(other).items()
                       if source[1] == name and self.modules.resolve(*source) == (module, name)}
            if other == module:
                aliases.add(name)
            if not aliases or tree is None:
                continue
            for owner, node in _owned_nodes(tree):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                        and node.func.attr == "register_warmup" and dotted_name(node.func.value) in aliases:
                    registers.append(f"{other}:{node.lineno}")
                if owner and isinstance(node, ast.Name) and node.id in aliases and isinstance(node.ctx, ast.Load):
                    constructed.append(f"{other}:{owner}")
        return registers, list(dict.fromkeys(constructed))

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
            return "manual", [f"{module} ({self.modules.path(module)}) defines no {function}(); the orchestrator calls it"]
        manual = []
        if "autotune" in function.lower():
            manual.append("autotunes at init (measures configurations on the device); not a set of compile keys")
        if not kernels:
            manual.append("no kernel found in it or the engine functions it calls (launched through an engine "
                          "object's methods, looked up at run time, or another library's)")
        elif len(kernels) > 1:
            manual.append(f"warms {len(kernels)} kernels; a spec moves one kernel: split the warmup into one "
                          "step per kernel first (then one spec each)")
        elif not kernels[0].constructed_in:
            manual.append(f"{kernels[0].name} is referenced by no engine class outside the warmups, directly or "
                          "through its wrappers (no construction site to register in)")
        if manual:
            return "manual", manual
        kernel = kernels[0]
        confirm = ["gate: the draft registers under the orchestrator's gate of this warmup (or the JIT switch); "
                   "check it holds exactly where the kernel is launched",
                   f"insertion point: the end of __init__ of {', '.join(kernel.constructed_in)}; check the kernel is "
                   "selected there"]
        if not kernel.on_contract:
            confirm.append(f"{kernel.name} ({kernel.kind}) is not on the contract: put it there first (vLLM's "
                           "triton_kernel_dispatcher_with_warmup with its warmup inputs, or a JitKernel object)")
        if kernel.registers_at:
            confirm.append(f"{kernel.name} already registers at {', '.join(kernel.registers_at)}: the standalone "
                           "warmup may only need removing")
        return "spec", confirm


def _owned_nodes(tree: ast.Module) -> Iterator[tuple[str | None, ast.AST]]:
    """Every node with the class (or module-level function) it sits in; None at module level."""
    for top in tree.body:
        owner = f"{top.name}" if isinstance(top, ast.ClassDef) else \
            f"{top.name}()" if isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
        for node in ast.walk(top):
            yield owner, node


def survey_report(repo: Path, findings: list[WarmupFinding], orchestrator: str, entry: str) -> dict[str, Any]:
    """The stable JSON form (format "zerojit-survey/1", documented in the README)."""
    return {"format": SURVEY_FORMAT, "repo": str(repo), "orchestrator": orchestrator, "entry": entry,
            "counts": {"warmups": len(findings), "spec": sum(f.verdict == "spec" for f in findings),
                       "manual": sum(f.verdict == "manual" for f in findings)},
            "warmups": [finding.to_dict() for finding in findings]}


def draft_spec(finding: WarmupFinding, orchestrator: str) -> str:
    """A TOML migration spec for a "spec" finding; its `confirm` list holds what a human must check first."""
    kernel = finding.kernels[0]
    step = finding.via or (finding.function if finding.kind == "inline step" else None)
    classes = kernel.constructed_in
    fields: dict[str, Any] = {"family": finding.function.strip("_").replace("_", "-")}
    if step:
        fields["orchestrator_step"] = step
    else:
        fields.update(legacy_module=finding.module, legacy_function=finding.function)
    fields.update(orchestrator_module=orchestrator, singleton_module=kernel.module, singleton=kernel.name,
                  construction_module=classes[0].partition(":")[0], construction_class=classes,
                  registration=f"{kernel.name}.register_warmup()",
                  gate="get_current_vllm_config().kernel_config.enable_jit_warmup",
                  gate_imports=["from vllm.config import get_current_vllm_config"],
                  confirm=[*finding.reasons, f"the orchestrator called it under: {finding.gate or 'no gate'}"])
    lines = [f"# Drafted by `zerojit survey` from {finding.module}.{finding.function}; `zerojit migrate` refuses it",
             "# until `confirm` is empty: check each item, change the spec where it is wrong, then delete the item.",
             "[[migration]]"]
    lines += [f"{key} = {json.dumps(value)}" for key, value in fields.items()]  # JSON strings/lists are TOML too
    return "\n".join(lines) + "\n"
