"""The whole engine's JIT map: every JIT kernel in the tree, and what (if anything) warms it before serving.

Starting from the files, not from the warmup orchestrator: every function a JIT DSL
decorates (Triton jit / heuristics / autotune / Gluon, CuTe DSL, FlyDSL, TileLang) and every
module-level object on the warmup contract is a kernel. Each gets one status:

  registered    on the contract, and a `register_warmup` call names it (where, under which gate)
  unregistered  on the contract, and nothing registers it
  legacy        reached by a legacy warmup the orchestrator runs (which one, and the survey's verdict)
  unwarmed      warmed by nothing zerojit can see (who launches it, and which engine classes construct those)

A Triton kernel that a `*_with_warmup` dispatcher wraps (`kernel=`) takes its dispatcher's
status. A DSL function called only from inside other DSL functions (a `@triton.jit` helper,
a `@cute.jit` method another jit method calls) compiles as part of its caller: it is a device
helper, counted apart and given no status; so is a device kernel (`@cute.kernel`, `@flyc.kernel`),
which compiles inside the jit function that launches it. Everything is read with `ast`;
nothing is imported. The JSON form (`JIT_MAP_FORMAT`) is documented in the README.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .files import discover_paths
from .repo import RepoModules, call_sites, dotted_name, module_name
from .survey import Survey

JIT_MAP_FORMAT = "zerojit-jit-map/1"
STATUSES = {
    "registered": "on the contract, registered",
    "unregistered": "on the contract, registered nowhere",
    "legacy": "reached by a legacy warmup",
    "unwarmed": "warmed by nothing zerojit can see",
}
BACKENDS = (
    "triton-jit",
    "triton-heuristics",
    "triton-autotune",
    "triton-gluon",
    "cute-dsl",
    "flydsl",
    "tilelang",
    "contract",
)
# The DSLs by the top-level package their decorators come from, and what each decorator makes.
DSL_ROOTS = {"triton": "triton", "cutlass": "cute-dsl", "flydsl": "flydsl", "tilelang": "tilelang"}
DEVICE_DECORATORS = ("kernel",)  # compiled inside the jit function that launches it
ENTRY_DECORATORS = ("jit", "autotune", "heuristics", "prim_func")
TRITON_KINDS = ("autotune", "heuristics", "jit")  # the outermost decides what the name is
LAUNCH_DEPTH = 3  # module functions followed from a kernel to the engine classes that launch it


@dataclasses.dataclass
class Registration:
    site: str  # "module:line" of the register_warmup call
    owner: str  # "module:Class.method" or "module:function" it sits in
    gate: str | None  # the conditions it runs under inside that function, as source


@dataclasses.dataclass
class MappedKernel:
    name: str  # qualified inside its module ("Class.__call__", "outer.<locals>.inner")
    module: str
    line: int
    backend: str  # one of BACKENDS
    decorator: str  # as written ("triton.jit", "flyc.jit"), or "Class(...)" for a contract object
    status: str = "unwarmed"
    registered_at: list[Registration] = dataclasses.field(default_factory=list)
    via: str | None = None  # "module:dispatcher" whose contract status a wrapped Triton kernel takes
    warmed_by: list[str] = dataclasses.field(default_factory=list)  # "module:function" of legacy warmups
    verdict: str | None = None  # the survey's verdict for a legacy-warmed kernel (spec / lift / manual)
    launched_by: list[str] = dataclasses.field(default_factory=list)  # "module:function" reaching it (unwarmed)
    constructed_in: list[str] = dataclasses.field(default_factory=list)  # "module:Class" of those launchers

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class _Definition:
    """A DSL-decorated function found in a module, before statuses are known."""

    qualname: str
    node: ast.FunctionDef | ast.AsyncFunctionDef
    backend: str
    decorator: str
    device: bool  # a device kernel (@cute.kernel, @flyc.kernel)
    method_of: str | None  # the class it is a method of
    top: str  # the module-level name it is reached through (itself, its class, or its outer function)


@dataclasses.dataclass
class _HostReads:
    """What a module's host code (outside every DSL function) reads."""

    names: set[str]  # names and attributes read
    passed_methods: set[str]  # attributes passed as a call's argument (`cute.compile(self.kernel, ...)`)
    everything: set[str]  # every name and attribute read anywhere in the module, DSL code included


class JitMap:
    def __init__(self, repo: Path, survey: Survey):
        self.repo, self.survey = Path(repo), survey
        self.modules: RepoModules = survey.modules
        self.package = self.modules.package
        self._dsl_functions: dict[tuple[str, str], str | None] = {}
        self._found: dict[str, list[_Definition]] = {}
        self._outside: dict[str, _HostReads] = {}

    # -- the map -----------------------------------------------------------------------------------

    def unreadable(self) -> dict[str, str]:
        """The engine's modules the map could not read (they hold no kernel it can see), with why."""
        return {module: why for module in self._modules if (why := self.modules.why_unreadable(module))}

    def run(self) -> tuple[list[MappedKernel], dict[str, int], list[Registration]]:
        """(entry kernels with their statuses, device helpers and kernels per backend, registrations naming nothing
        this map resolves). A module nested too deeply to read is listed as unreadable, and the map made again."""
        try:
            return self._run()
        except RecursionError:
            if not self.modules.drop_deep_trees():
                raise
            self._dsl_functions, self._found, self._outside = {}, {}, {}
            return self.run()

    def _run(self) -> tuple[list[MappedKernel], dict[str, int], list[Registration]]:
        definitions = [(module, d) for module in self._modules for d in self._definitions(module)]
        entries, helpers = self._split_helpers(definitions)
        kernels = [MappedKernel(d.qualname, module, d.node.lineno, d.backend, d.decorator) for module, d in entries]
        kernels += list(self._contract_objects())
        by_name = {(k.module, k.name): k for k in kernels}
        unresolved = self._registrations(by_name)
        self._legacy(by_name)
        for kernel in kernels:
            if kernel.status == "unwarmed" and kernel.backend == "contract":
                kernel.status = "unregistered"
        tops = {(module, d.qualname): d.top for module, d in entries}
        self._compiled_by_contract(by_name, tops)
        for kernel in kernels:
            top = tops.get((kernel.module, kernel.name), kernel.name)
            if kernel.status == "unwarmed":
                launched_by, kernel.constructed_in = self._launchers(kernel.module, top)
                # A kernel defined inside a function (a launcher factory) is launched through that function.
                kernel.launched_by = [f"{kernel.module}:{top}"] * ("<locals>" in kernel.name) + launched_by
        device = Counter(d.backend for _, d in helpers)
        return sorted(kernels, key=lambda k: (k.module, k.line)), dict(device), unresolved

    @functools.cached_property
    def _modules(self) -> list[str]:
        """Every module of the engine package (its .py files as discovery finds them: .gitignore honoured)."""
        paths, _ = discover_paths(self.repo)
        return [
            module_name(self.repo, path)[0]
            for path in paths
            if path.suffix == ".py" and path.relative_to(self.repo).parts[0] == self.package
        ]

    # -- kernels ----------------------------------------------------------------------------------

    def _definitions(self, module: str) -> list[_Definition]:
        """The module's DSL-decorated functions (methods and nested functions too), found once."""
        if module not in self._found:
            tree = self.modules.tree(module)
            self._found[module] = list(self._decorated(module, tree.body)) if tree is not None else []
        return self._found[module]

    def _decorated(self, module: str, body: list[ast.stmt]) -> Iterator[_Definition]:
        """DSL-decorated functions in `body`, at any depth (under `if` / `try` / `with` too), each with the
        module-level name it is reached through."""

        def visit(body: list[ast.stmt], prefix: str, method_of: str | None, top: str | None) -> Iterator[_Definition]:
            for node in body:
                if isinstance(node, ast.ClassDef):
                    yield from visit(node.body, f"{prefix}{node.name}.", node.name, top or node.name)
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    qualname = prefix + node.name
                    found = self._dsl_decorator(module, node)
                    if found is not None:
                        backend, decorator, device = found
                        yield _Definition(qualname, node, backend, decorator, device, method_of, top or node.name)
                    yield from visit(node.body, f"{qualname}.<locals>.", None, top or node.name)
                else:
                    for block in _blocks(node):
                        yield from visit(block, prefix, method_of, top)

        yield from visit(body, "", None, None)

    def _dsl_decorator(self, module: str, node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, str, bool] | None:
        """(backend, decorator as written, device kernel?) of the DSL decorator that decides what `node` is."""
        found = []
        for decorator in node.decorator_list:
            written = dotted_name(decorator)
            if "with_warmup" in written.rsplit(".", 1)[-1]:
                return None  # a dispatcher on the contract: a contract object, mapped with those
            path = self._dsl_of(module, written)
            if path is not None:
                found.append((path, written))
        if not found:
            return None
        backend = DSL_ROOTS[found[0][0].split(".")[0]]
        if backend == "triton":
            kinds = {path.rsplit(".", 1)[-1]: written for path, written in found}
            kind = next((k for k in TRITON_KINDS if k in kinds), "jit")
            gluon = any(".gluon." in path for path, _ in found)
            return ("triton-gluon" if gluon else f"triton-{kind}"), kinds.get(kind, found[0][1]), False
        path, written = found[0]
        return backend, written, path.rsplit(".", 1)[-1] in DEVICE_DECORATORS

    def _dsl_of(self, module: str, written: str, depth: int = 0) -> str | None:
        """The DSL decorator a decorator written in `module` is, as its full dotted path ("triton.jit",
        "cutlass.cute.kernel"): by where its name is imported from (an alias included: `from triton import jit as
        tjit`, `my_jit = triton.jit`), or, for an engine function (vLLM's `tilelang_jit`), by the DSL decorator its
        body applies. None: not a DSL's."""
        head, _, rest = written.partition(".")
        source, name = self.modules.imports(module).get(head, (None, None))
        if source is not None and self.modules.ours(source):  # an engine module's name: where it really comes from
            home, defined = self.modules.resolve(source, name) if name else (source, None)
            if defined is not None and self.modules.ours(home):
                return self._dsl_of_definition(home, defined, rest, depth)
            source, name = home, defined  # a module, or a name the engine imports from a DSL
        if source is None:
            return self._dsl_of_definition(module, head, rest, depth) if self.modules.definition(module, head) else None
        path = ".".join(part for part in (source, name, rest) if part)
        if path.split(".")[0] in DSL_ROOTS and path.rsplit(".", 1)[-1] in ENTRY_DECORATORS + DEVICE_DECORATORS:
            return path
        return None

    def _dsl_of_definition(self, module: str, name: str, rest: str, depth: int) -> str | None:
        """A decorator that `module` defines as `name`: an engine function applying a DSL decorator, or an alias
        (`my_jit = tr.jit`)."""
        node = self.modules.definition(module, name)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None if rest else self._dsl_applied_by(module, name)
        if isinstance(node, ast.Assign) and isinstance(node.value, (ast.Name, ast.Attribute)) and depth < 4:
            return self._dsl_of(module, ".".join(p for p in (dotted_name(node.value), rest) if p), depth + 1)
        return None

    def _dsl_applied_by(self, module: str, name: str) -> str | None:
        """The DSL decorator (its dotted path) an engine function applies (`return tilelang.jit(...)(fn)`), if any."""
        if (module, name) not in self._dsl_functions:
            self._dsl_functions[(module, name)] = None  # a recursive decorator decides nothing
            node = self.modules.definition(module, name)
            found = None
            for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
                target = call.func.func if isinstance(call.func, ast.Call) else call.func
                if isinstance(target, ast.Attribute) and target.attr in ENTRY_DECORATORS:
                    found = self._dsl_of(module, dotted_name(target))
                    if found:
                        break
            self._dsl_functions[(module, name)] = found
        return self._dsl_functions[(module, name)]

    def _split_helpers(self, definitions: list[tuple[str, _Definition]]) -> tuple[list, list]:
        """(entries, device helpers and kernels). A DSL function is an entry when host code can call it: it is read
        outside every DSL function somewhere (by name, or for a method as `.name` in a module that names its
        class), or, for a module-level function, nowhere at all; a method is also one when it is `__call__` (what
        `cute.compile(obj, ...)` compiles). Anything else compiles only as part of its caller."""
        entries, helpers = [], []
        for module, definition in definitions:
            if definition.device or not self._host_callable(module, definition):
                helpers.append((module, definition))
            else:
                entries.append((module, definition))
        return entries, helpers

    def _host_callable(self, module: str, definition: _Definition) -> bool:
        name = definition.node.name
        mentions = self.survey._mentions()
        if definition.method_of is not None:
            if name == "__call__":
                return True
            # A Triton kernel held by a class is launched as `self.kernel[grid](...)`; a CuTe DSL method other than
            # __call__ compiles as an entry only when host code hands it to a call (`cute.compile(self.run, ...)`).
            holders = set(mentions.get(definition.method_of, ()))
            triton = definition.backend.startswith("triton")
            return any(
                name in (reads.names if triton else reads.passed_methods)
                for other in mentions.get(name, ())
                if other in holders
                for reads in [self._reads_outside_dsl(other)]
            )
        reading = [other for other in mentions.get(name, ()) if name in self._reads_outside_dsl(other).everything]
        return not reading or any(name in self._reads_outside_dsl(other).names for other in reading)

    def _reads_outside_dsl(self, module: str) -> _HostReads:
        """What host code of `module` reads (outside every DSL function), read once per module."""
        if module not in self._outside:
            reads = _HostReads(set(), set(), set())
            dsl = {id(d.node) for d in self._definitions(module)}

            def walk(node: ast.AST, inside: bool) -> None:
                for child in ast.iter_child_nodes(node):
                    if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load):
                        reads.everything.add(child.id)
                        if not inside:
                            reads.names.add(child.id)
                    elif isinstance(child, ast.Attribute):
                        reads.everything.add(child.attr)
                        if not inside:
                            reads.names.add(child.attr)
                    elif isinstance(child, ast.Call) and not inside:
                        reads.passed_methods.update(
                            arg.attr
                            for arg in (*child.args, *(k.value for k in child.keywords))
                            if isinstance(arg, ast.Attribute)
                        )
                    walk(child, inside or id(child) in dsl)

            tree = self.modules.tree(module)
            if tree is not None:
                walk(tree, False)
            self._outside[module] = reads
        return self._outside[module]

    def _contract_objects(self) -> Iterator[MappedKernel]:
        """Module-level objects that can register with the contract: `X = Kernel(...)` of a class with
        register_warmup, and functions a `*_with_warmup` decorator (or factory) makes."""
        for module in self._modules:
            for node in getattr(self.modules.tree(module), "body", ()):
                if (
                    isinstance(node, ast.Assign)
                    and isinstance(node.value, ast.Call)
                    and len(node.targets) == 1
                    and isinstance(node.targets[0], ast.Name)
                ):
                    name = node.targets[0].id
                    if self.modules.kernel_class(module, name) and self.modules.off_contract(module, name) is None:
                        yield MappedKernel(name, module, node.lineno, "contract", f"{dotted_name(node.value)}(...)")
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.decorator_list:
                    written = [dotted_name(d) for d in node.decorator_list]
                    if (
                        any("with_warmup" in w.rsplit(".", 1)[-1] for w in written)
                        and self.modules.off_contract(module, node.name) is None
                    ):
                        yield MappedKernel(node.name, module, node.lineno, "contract", written[0])

    # -- statuses ---------------------------------------------------------------------------------

    def _registrations(self, kernels: dict[tuple[str, str], MappedKernel]) -> list[Registration]:
        """Attach every `X.register_warmup(...)` call to the kernel X resolves to; return those naming no kernel
        of the map (a receiver built at run time, `self._kernel`, or an object the map does not list)."""
        unresolved = []
        for module in self.survey._mentions().get("register_warmup", ()):
            tree = self.modules.tree(module)
            if tree is None:
                continue
            for owner, function, call in _calls_named(tree, "register_warmup"):
                gate, assigned = _context(tree, function, call)
                for receiver, condition in _receivers(call.func.value, assigned):
                    target = self.modules.reference(module, receiver)
                    kernel = kernels.get(target) if target else None
                    registration = Registration(
                        f"{module}:{call.lineno}",
                        f"{module}:{owner}",
                        " and ".join(c for c in (gate, condition) if c) or None,
                    )
                    if kernel is None:
                        unresolved.append(
                            dataclasses.replace(registration, owner=f"{registration.owner} ({ast.unparse(receiver)})")
                        )
                    else:
                        kernel.registered_at.append(registration)
                        kernel.status = "registered"
        return unresolved

    def _compiled_by_contract(
        self, kernels: dict[tuple[str, str], MappedKernel], tops: dict[tuple[str, str], str]
    ) -> None:
        """A DSL kernel a contract object compiles takes that object's status (`via`): the Triton kernel a
        dispatcher wraps (`@triton_kernel_dispatcher_with_warmup(kernel=k)`), and a kernel the object's class
        reads (a `VllmJitKernel` subclass whose compile launches it)."""
        by_class: dict[str, MappedKernel] = {}
        for kernel in (k for k in kernels.values() if k.backend == "contract"):
            node = self.modules.definition(kernel.module, kernel.name)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for decorator in node.decorator_list:
                    for keyword in decorator.keywords if isinstance(decorator, ast.Call) else ():
                        wrapped = (
                            self.modules.reference(kernel.module, keyword.value) if keyword.arg == "kernel" else None
                        )
                        if wrapped in kernels:
                            _take_status(kernels[wrapped], kernel)
            elif (found := self.modules.kernel_class(kernel.module, kernel.name)) is not None:
                by_class.setdefault(f"{found[0]}:{found[1].name}", kernel)
        for (module, name), kernel in kernels.items():
            if kernel.backend == "contract" or kernel.via:
                continue
            top = tops.get((module, name), name)
            # A method of the object's class (a Triton kernel it holds), or a kernel its class reads.
            owners = [f"{module}:{top}"] + self.survey._uses(module, top)[1]
            holder = next((by_class[owner] for owner in owners if owner in by_class), None)
            if holder is not None:
                _take_status(kernel, holder)

    def _legacy(self, kernels: dict[tuple[str, str], MappedKernel]) -> None:
        """Kernels the orchestrator's legacy warmups reach (the survey's findings), with the survey's verdict."""
        for finding in self.survey.run():
            for found in finding.kernels:
                kernel = kernels.get((found.module, found.name))
                if kernel is None:
                    continue
                kernel.warmed_by.append(f"{finding.module}:{finding.function}")
                kernel.verdict = found.verdict
                if kernel.status != "registered":
                    kernel.status = "legacy"

    def _launchers(self, module: str, name: str) -> tuple[list[str], list[str]]:
        """Who launches `module.name`: the module-level functions that reference it (and those that reference
        them, to LAUNCH_DEPTH), and the engine classes referencing any of them (outside the warmups)."""
        launchers: list[str] = []
        classes: list[str] = []
        frontier, seen = [(module, name)], {(module, name)}
        for _ in range(LAUNCH_DEPTH):
            following = []
            for current, current_name in frontier:
                for owner in self.survey._uses(current, current_name)[1]:
                    if not owner.endswith("()"):
                        classes.append(owner)
                        continue
                    function = tuple(owner.removesuffix("()").split(":", 1))
                    if function not in seen:
                        seen.add(function)
                        launchers.append(":".join(function))
                        following.append(function)
            if classes:
                break
            frontier = following
        return launchers, list(dict.fromkeys(classes))


def _blocks(node: ast.stmt) -> Iterator[list[ast.stmt]]:
    """The statement blocks of a compound statement (`if`, `try`, `with`, loops): definitions under them count."""
    for field in ("body", "orelse", "finalbody"):
        block = getattr(node, field, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            yield block
    for handler in getattr(node, "handlers", ()):
        yield handler.body


def _take_status(kernel: MappedKernel, holder: MappedKernel) -> None:
    kernel.via = f"{holder.module}:{holder.name}"
    kernel.status, kernel.registered_at = holder.status, list(holder.registered_at)
    kernel.warmed_by, kernel.verdict = list(holder.warmed_by), holder.verdict


def _calls_named(tree: ast.Module, attribute: str) -> Iterator[tuple[str, ast.FunctionDef | None, ast.Call]]:
    """Every `<...>.attribute(...)` call, with the "Class.method" / "function" it sits in and that function."""

    def visit(node: ast.AST, prefix: str, function: ast.FunctionDef | None, owner: str):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                yield from visit(child, f"{prefix}{child.name}.", function, owner)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield from visit(child, f"{prefix}{child.name}.<locals>.", child, prefix + child.name)
            else:
                if (
                    isinstance(child, ast.Call)
                    and isinstance(child.func, ast.Attribute)
                    and child.func.attr == attribute
                ):
                    yield owner or "<module>", function, child
                yield from visit(child, prefix, function, owner)

    yield from visit(tree, "", None, "")


def _context(
    tree: ast.Module, function: ast.FunctionDef | None, call: ast.Call
) -> tuple[str | None, dict[str, ast.expr]]:
    """The conditions `call` runs under inside `function` as source ("(a) and not (b)"), and the locals assigned
    before it."""
    if function is None:
        return None, {}
    sites = call_sites(tree, lambda candidate, assigned: candidate is call, functions=[function])
    if not sites:
        return None, {}
    return sites[0].gate_source(), sites[0].assigned


def _receivers(
    receiver: ast.expr, assigned: dict[str, ast.expr], depth: int = 0
) -> Iterator[tuple[ast.expr, str | None]]:
    """What a register_warmup receiver may be, each with the condition choosing it: both arms of
    `A if c else B`, and the value of a local assigned before the call."""
    if isinstance(receiver, ast.Name) and receiver.id in assigned and depth < 4:
        yield from _receivers(assigned[receiver.id], assigned, depth + 1)
    elif isinstance(receiver, ast.IfExp) and depth < 4:
        test = ast.unparse(receiver.test)
        for arm, condition in ((receiver.body, f"({test})"), (receiver.orelse, f"not ({test})")):
            for inner, more in _receivers(arm, assigned, depth + 1):
                yield inner, " and ".join(c for c in (condition, more) if c)
    else:
        yield receiver, None


def jit_map_report(
    repo: Path,
    kernels: list[MappedKernel],
    device: dict[str, int],
    unresolved: list[Registration],
    problem: str | None = None,
    unreadable: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The stable JSON form (format "zerojit-jit-map/1", documented in the README); `problem`: why no kernel can
    be reached by a legacy warmup (the orchestrator is missing or unreadable), or None; `unreadable`: modules
    the map could not read, with why."""
    counts = {
        backend: {status: sum(k.backend == backend and k.status == status for k in kernels) for status in STATUSES}
        for backend in BACKENDS
    }
    for backend, row in counts.items():
        row["total"] = sum(row.values())
        row["device_helpers"] = device.get(backend, 0)
    totals = {status: sum(k.status == status for k in kernels) for status in STATUSES}
    return {
        "format": JIT_MAP_FORMAT,
        "repo": str(repo),
        "statuses": STATUSES,
        "orchestrator_problem": problem,
        "counts": {"kernels": len(kernels), **totals, "by_backend": counts},
        "kernels": [k.to_dict() for k in kernels],
        "unresolved_registrations": [dataclasses.asdict(r) for r in unresolved],
        "unreadable_modules": dict(unreadable or {}),
    }
