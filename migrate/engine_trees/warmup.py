"""Run one kernel's warmup as an engine source tree does it, recording what it would compile.

Two ways a tree warms a kernel, both run from the tree's own code (`EngineSources`):
  * standalone: the orchestrator's entry calls the legacy warmup function (under the gates
    around that call), which calls the kernel's step (under its own gates), which calls
    `kernel.warmup(...)`;
  * contract: model construction calls `kernel.register_warmup()` (under the constructor's
    gates), then the orchestrator calls the registry's `warmup()` (under its gates).
Gates and call arguments are read from the tree with `ast` and evaluated against the
module they sit in and the enclosing function's bound parameters; nothing about them is
restated here. Every kernel class's `compile` records its key instead of compiling.
"""

from __future__ import annotations
import __future__

import ast
import builtins
import contextlib
import dataclasses
import inspect
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

from zerojit.codemods.engines import VLLM
from zerojit.codemods.repo import CallSite, Matcher, call_sites, calls_to, import_table, method_calls
from zerojit.contract.limits import device_capability

from .config_defaults import Defaulted, TreeConfigs
from .construction import ConstructorRun
from .errors import EngineRunError
from .sources import EngineSources, placeholder


def _run_once(tree: ast.Module, matches: Matcher) -> list[CallSite]:
    """`call_sites`, each a call the warmup runs once: a call in a loop may run any number of times, which running
    the tree as written cannot follow."""
    sites = call_sites(tree, matches)
    looped = next((site for site in sites if site.in_loop), None)
    if looped is not None:
        raise EngineRunError(f"{looped.function.name}: the call on line {looped.call.lineno} runs inside a loop")
    return sites


@dataclasses.dataclass(frozen=True)
class Engine:
    """Where an engine's warmup machinery lives (vLLM's by default)."""

    package: str = "vllm"
    entry: str = VLLM.orchestrator_entry  # the orchestrator function the engine calls at init
    jit_module: str = "vllm.model_executor.warmup.jit_warmup"
    kernel_base: str = "VllmJitKernel"
    registry_class: str = "JitWarmupRegistry"
    registry_holder: str = "jit_warmup_registry"  # the model runner's attribute holding the registry
    registry_method: str = "warmup"
    config_class: str = VLLM.config_class  # whose fields' defaults stand behind a family's stand-in config
    # Packages a layer's module imports that no constructor run needs (the models' config classes): names only.
    names_only: tuple[str, ...] = ("transformers",)
    # Names the warmup machinery itself reads, whatever the family (the registry's progress bar).
    stubs: dict[str, dict[str, Any]] = dataclasses.field(
        default_factory=lambda: {"vllm.distributed": {"is_global_first_rank": lambda: False}}
    )


VLLM = Engine()


def vllm_worker(vllm_config: Any, registry: Any, **runner: Any) -> types.SimpleNamespace:
    """What vLLM's orchestrator and standalone steps receive: a worker with its model runner."""
    model_runner = types.SimpleNamespace(vllm_config=vllm_config, jit_warmup_registry=registry, **runner)
    return types.SimpleNamespace(vllm_config=vllm_config, model_runner=model_runner)


class EngineFamily(Protocol):
    """What a family room provides to run its kernel inside an engine tree (migrate/<family>/legacy.py)."""

    real_modules: tuple[str, ...]  # run from the tree besides the spec's own modules
    # optional `names_only`: other top-level packages its modules import that run as names only (sources.py)

    def stubs(self, state: types.SimpleNamespace) -> dict[str, dict[str, Any]]: ...  # read state.config/.vllm_config

    def vllm_config(self, config: Any) -> Any: ...  # the engine's config for a serving configuration

    def worker(self, config: Any, vllm_config: Any, registry: Any) -> Any: ...  # the orchestrator's argument

    # Model construction inside `tree`: build the layers whole, or make their constructors' registrations
    # (tree.constructor_registrations) where the layers cannot be built from names-only modules.
    def construct(self, config: Any, vllm_config: Any, tree: TreeWarmup) -> None: ...

    def to_key(self, engine_key: Any) -> Any: ...  # the engine's key as the family's CompileKey

    def import_facts(self, config: Any) -> Any: ...  # what engine modules decide at import (e.g. the arch)


class TreeWarmup:
    """One family's kernel, warmed the way one engine tree warms it."""

    def __init__(self, root: Path, spec: Any, family: EngineFamily, engine: Engine = VLLM, run_compiles: bool = False):
        """`run_compiles`: the kernels' own `compile` runs (into a backend the caller set up and watches)
        instead of recording the key; the key sets returned are then empty."""
        self.root, self.spec, self.family, self.engine = Path(root), spec, family, engine
        self.run_compiles = run_compiles
        self.state = types.SimpleNamespace(config=None, vllm_config=None)  # what the stubs read
        wanted = (
            engine.jit_module,
            spec.legacy.orchestrator_module,
            spec.kernel.module,
            spec.kernel_home,
            spec.registration.module,
            *(home for home, _ in spec.registration.constructions()),
            spec.legacy.module,
            *family.real_modules,
        )
        probe = EngineSources(root, engine.package, (), {})
        present = tuple(dict.fromkeys(m for m in wanted if m and probe.file_of(m).is_file()))
        for required in (engine.jit_module, spec.legacy.orchestrator_module, spec.kernel.module):
            if required not in present:
                raise FileNotFoundError(f"the tree at {root} has no module {required}")
        stubs = {name: dict(attrs) for name, attrs in engine.stubs.items()}
        for name, attrs in family.stubs(self.state).items():
            stubs.setdefault(name, {}).update(attrs)
        names_only = (*engine.names_only, *getattr(family, "names_only", ()))
        self.sources = EngineSources(root, engine.package, present, stubs, names_only)
        self.configs = TreeConfigs(self.sources, engine.config_class)
        self._trees: dict[str, ast.Module] = {}
        self.has_legacy = (
            spec.legacy.module in present
            if spec.legacy.module
            else any(
                isinstance(node, ast.FunctionDef) and node.name == spec.legacy.orchestrator_step
                for node in self._tree(spec.legacy.orchestrator_module).body
            )
        )

    def _tree(self, module: str) -> ast.Module:
        if module not in self._trees:
            self._trees[module] = ast.parse(self.sources.file_of(module).read_text(encoding="utf-8"))
        return self._trees[module]

    def constant(self, module: str, name: str) -> Any:
        """A module-level constant of the tree, read off its source: a literal, or `frozenset`/`set`/`tuple` of one,
        bound once (None when the module or the name is not there, or the module binds it again)."""
        if not self.sources.file_of(module).is_file():
            return None
        bound = [
            node
            for node in self._tree(module).body
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign))
            and any(
                isinstance(t, ast.Name) and t.id == name
                for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
            )
        ]
        once = len(bound) == 1 and not isinstance(bound[0], ast.AugAssign) and bound[0].value is not None
        return _literal(bound[0].value) if once else None

    def describe(self) -> str:
        """The tree as a report names it: path and the release its `_version.py` states."""
        return f"{self.engine.package} {self.version()} at {self.root}"

    def version(self) -> str:
        path = self.sources.file_of(f"{self.engine.package}._version")
        if path.is_file():
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if (
                    isinstance(node, ast.Assign)
                    and isinstance(node.value, ast.Constant)
                    and any(isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets)
                ):
                    return str(node.value.value)
        return "(version unknown)"

    # -- the two ways of warming ------------------------------------------------------------

    def standalone_keys(self, config: Any, by_kernel: bool = False) -> set:
        """Keys the tree's standalone warmup (orchestrator -> legacy function -> step, or the orchestrator's
        own step) compiles; `by_kernel`: each as (the kernel module's name of the object that compiled it, key)."""
        if not self.has_legacy:
            return set()
        spec = self.spec
        with self._running(config) as (recorded, worker, _):
            orchestrator = self.sources.module(spec.legacy.orchestrator_module)
            tree = self._tree(spec.legacy.orchestrator_module)
            if spec.legacy.orchestrator_step:
                step = calls_to(
                    tree,
                    spec.legacy.orchestrator_module,
                    spec.legacy.orchestrator_module,
                    spec.legacy.orchestrator_step,
                    defined_here=True,
                )
                for site in self._entry_sites(_run_once(tree, step)):
                    self._run(site, self._entry_scope(orchestrator, site, worker))
                return self._keys(recorded, by_kernel)
            sites = _run_once(
                tree, calls_to(tree, spec.legacy.orchestrator_module, spec.legacy.module, spec.legacy.function)
            )
            legacy = self.sources.module(spec.legacy.module)
            for site in self._entry_sites(sites):
                arguments = self._entry_scope(orchestrator, site, worker)
                if not self._gates_hold(site, arguments):
                    continue
                args, kwargs = self._arguments(site, arguments)
                if not spec.legacy.step:
                    getattr(legacy, spec.legacy.function)(*args, **kwargs)
                    continue
                function = getattr(legacy, spec.legacy.function)
                scope = self._bound(legacy, function, args, kwargs)
                legacy_tree = self._tree(spec.legacy.module)
                for step in _run_once(
                    legacy_tree,
                    calls_to(legacy_tree, spec.legacy.module, spec.legacy.module, spec.legacy.step, defined_here=True),
                ):
                    if step.function.name == spec.legacy.function:
                        self._run(step, scope)
            return self._keys(recorded, by_kernel)

    def registered_keys(self, config: Any, by_kernel: bool = False) -> set:
        """Keys the tree's contract path compiles: registrations made while the model is built,
        expanded by the registry when the orchestrator runs it (`by_kernel` as in `standalone_keys`)."""
        engine = self.engine
        with self._running(config) as (recorded, worker, registry):
            with registry.activate():
                self.family.construct(config, worker.vllm_config, self)
            orchestrator = self.sources.module(self.spec.legacy.orchestrator_module)
            tree = self._tree(self.spec.legacy.orchestrator_module)
            for site in self._entry_sites(
                _run_once(tree, method_calls(engine.registry_holder, engine.registry_method))
            ):
                self._run(site, self._entry_scope(orchestrator, site, worker))
            return self._keys(recorded, by_kernel)

    def constructor_registrations(self, cls: str, bound: dict[str, Any]) -> None:
        """Make the registrations `cls.__init__` makes (`cls`: a class of the spec's construction module, or
        `module:Class`), by running the constructor from the tree on every path its undecided branches take
        (`ConstructorRun`), with its parameters `bound` (`self`: the family's stand-in for what the constructor
        sets; parameters left out take their defaults, or a names-only value). A registration is a
        `<kernel>.register_warmup(...)` call, or a call of a method of the class that makes one; a kernel is
        the spec's, or any name the constructor's module imports from the kernel's module (another object of
        the kernel's class, such as a variant). Raises `ConstructionBroken` where a path registers wrongly.
        Call it inside a family's `construct`.
        """
        module, _, cls = cls.rpartition(":")
        module = module or self.spec.registration.module
        tree = self._tree(module)
        method = self.spec.registration.method
        body = next((node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == cls), None)
        methods = {item.name: item for item in body.body if isinstance(item, ast.FunctionDef)} if body else {}
        if method not in methods and method != "__init__":
            return  # inherited as it is: this class adds no registration there
        if method not in methods:
            raise EngineRunError(f"{module} has no {cls}.{method}")
        table = import_table(tree, module, self.sources.file_of(module).name == "__init__.py")
        kernels = (self.spec.kernel.name, self.spec.kernel.private_name, self.spec.kernel_name)
        kernels += tuple(local for local, (home, name) in table.items() if home == self.spec.kernel.module and name)
        matchers = [method_calls(name, "register_warmup") for name in dict.fromkeys(kernels) if name]

        def kernel_call(call: ast.Call) -> bool:
            return any(matches(call, {}) for matches in matchers)

        helpers = {
            name
            for name, item in methods.items()
            if any(isinstance(n, ast.Call) and kernel_call(n) for n in ast.walk(item))
        }

        def registers(call: ast.Call) -> bool:
            return kernel_call(call) or any(method_calls("self", helper)(call, {}) for helper in helpers)

        run = [methods[name] for name in (method, *helpers)]
        read = {node.id for item in run for node in ast.walk(item) if isinstance(node, ast.Name)}
        namespace: dict[str, Any] = {"__name__": module, "__builtins__": builtins}
        for name in read & table.keys():
            with contextlib.suppress(AttributeError, ImportError):  # only an error if a registration reads it
                namespace[name] = self._imported(*table[name])
        for statement in tree.body:  # the module's own constants and functions that the run reads
            if _defines(statement) & read:
                with contextlib.suppress(Exception):  # one its names cannot define: a NameError where it is read
                    exec(_compiled(statement, module), namespace)
        functions: dict[str, Any] = {}
        for item in methods.values():
            with contextlib.suppress(Exception):  # a method its names cannot define: `self` gives a value stub
                exec(_compiled(item, module), dict(namespace), functions)
        parameters = (
            {
                name: placeholder(f"{cls}.{method}({name})")()
                if parameter.default is parameter.empty
                else parameter.default
                for name, parameter in inspect.signature(functions[method]).parameters.items()
                if parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD)
            }
            if method in functions
            else {}
        )
        where = self.sources.file_of(module).relative_to(self.root).as_posix()
        ConstructorRun(namespace, where, cls, methods[method], functions, registers).run(parameters | bound)

    def _imported(self, module: str, name: str | None) -> Any:
        imported = self.sources.module(module)
        return imported if name is None else getattr(imported, name)

    def within(self, config: Any, function: Callable[[], Any]) -> Any:
        """`function()` run inside the tree, with the stubs giving this configuration's facts."""
        with self._running(config):
            return function()

    def warmed_keys(self, config: Any, by_kernel: bool = False) -> set:
        """Everything the tree warms for this kernel, either way (`by_kernel` as in `standalone_keys`)."""
        return self.standalone_keys(config, by_kernel) | self.registered_keys(config, by_kernel)

    # -- machinery ------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _running(self, config: Any) -> Iterator[tuple[list, Any, Any]]:
        self.state.config = config
        self.state.vllm_config = vllm_config = self.configs.around(self.family.vllm_config(config), "vllm_config")
        with self.sources.installed(self.family.import_facts(config)):
            jit = self.sources.module(self.engine.jit_module)
            self.sources.module(self.spec.kernel.module)
            # The kernel's own class too: before a migration adopts the contract it may not derive from the base.
            recording = (
                contextlib.nullcontext([])
                if self.run_compiles
                else _recording_compiles(getattr(jit, self.engine.kernel_base), self._kernel_type())
            )
            with recording as recorded:
                registry = getattr(jit, self.engine.registry_class)(vllm_config)
                worker = self.family.worker(config, vllm_config, registry)
                if isinstance(vllm_config, Defaulted):  # a worker holds each part of the engine config
                    for name, part in vllm_config.sub_configs().items():
                        if not hasattr(worker, name):
                            setattr(worker, name, part)
                yield recorded, worker, registry

    def _kernel_type(self) -> type:
        module = self.sources.module(self.spec.kernel_home)
        for name in (self.spec.kernel.private_name, self.spec.kernel.name):
            if name and hasattr(module, name):
                return type(getattr(module, name))
        raise EngineRunError(
            f"{self.spec.kernel_home} defines neither {self.spec.kernel.name} nor {self.spec.kernel.private_name}"
        )

    def _keys(self, recorded: list, by_kernel: bool = False) -> set:
        if not recorded:
            return set()  # a tree without the kernel object yet (its owner is what the migration writes) too
        kernel = self._kernel_type()
        keys = [(owner, self.family.to_key(key)) for owner, key in recorded if isinstance(owner, kernel)]
        if not by_kernel:
            return {key for _, key in keys}
        names = {id(value): name for name, value in vars(self.sources.module(self.spec.kernel.module)).items()}
        return {(names.get(id(owner), "(unnamed)"), key) for owner, key in keys}

    def _entry_sites(self, sites: list[CallSite]) -> list[CallSite]:
        for site in sites:
            if site.function.name != self.engine.entry:
                raise EngineRunError(
                    f"{self.spec.legacy.orchestrator_module}: the warmup call on line {site.call.lineno} is "
                    f"in {site.function.name}(), not in the entry {self.engine.entry}()"
                )
        return sites

    def _entry_scope(self, module: types.ModuleType, site: CallSite, worker: Any) -> dict[str, Any]:
        return self._bound(module, getattr(module, site.function.name), (worker,), {})

    @staticmethod
    def _bound(module: types.ModuleType, function: Callable, args: tuple, kwargs: dict) -> dict[str, Any]:
        bound = inspect.signature(function).bind(*args, **kwargs)
        bound.apply_defaults()
        return {**vars(module), **bound.arguments}

    @staticmethod
    def _evaluate(node: ast.expr, site: CallSite, scope: dict[str, Any], what: str) -> Any:
        """`node` evaluated where it sits: module names, bound parameters, and the locals it reads
        (each from its `name = value` before the call, evaluated the same way)."""
        scope = dict(scope)

        def resolve(expression: ast.expr, pending: frozenset[str]) -> None:
            for name in {n.id for n in ast.walk(expression) if isinstance(n, ast.Name)} - scope.keys():
                value = site.assigned.get(name)
                if value is None or name in pending:
                    continue  # a builtin, or unknown: eval says which
                resolve(value, pending | {name})
                scope[name] = eval(compile(ast.Expression(value), f"<{name}>", "eval"), scope)

        resolve(node, frozenset())
        try:
            return eval(compile(ast.Expression(node), f"<{what}>", "eval"), scope)
        except NameError as exc:
            raise EngineRunError(
                f"{site.function.name}(): {what} `{ast.unparse(node)}` reads {exc.name!r}, which "
                "is neither a module name, a parameter nor a plain assignment before it"
            ) from None

    def _run(self, site: CallSite, scope: dict[str, Any]) -> None:
        """The call at `site`, made as written when its gates hold (callee and arguments evaluated in `scope`)."""
        if self._gates_hold(site, scope):
            args, kwargs = self._arguments(site, scope)
            self._evaluate(site.call.func, site, scope, "the callee")(*args, **kwargs)

    def _gates_hold(self, site: CallSite, scope: dict[str, Any]) -> bool:
        return all(bool(self._evaluate(g.test, site, scope, "the gate")) == g.holds_when for g in site.gates)

    def _arguments(self, site: CallSite, scope: dict[str, Any]) -> tuple[tuple, dict]:
        if any(isinstance(a, ast.Starred) for a in site.call.args) or any(k.arg is None for k in site.call.keywords):
            raise EngineRunError(f"{site.function.name}(): *args/**kwargs in the call on line {site.call.lineno}")
        args = tuple(self._evaluate(a, site, scope, "an argument") for a in site.call.args)
        return args, {k.arg: self._evaluate(k.value, site, scope, "an argument") for k in site.call.keywords}


def _literal(value: ast.expr) -> Any:
    """A literal's value, through one `frozenset`/`set`/`tuple` call around it; None for anything else."""
    wrap = None
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and len(value.args) == 1 and not value.keywords:
        wrap = {"frozenset": frozenset, "set": set, "tuple": tuple}.get(value.func.id)
        if wrap is None:
            return None
        value = value.args[0]
    try:
        found = ast.literal_eval(value)
    except (ValueError, TypeError, SyntaxError):
        return None
    return wrap(found) if wrap else found


def _defines(statement: ast.stmt) -> set[str]:
    """The names a module-level statement defines (an import's are the import table's)."""
    match statement:
        case ast.FunctionDef(name=name) | ast.AsyncFunctionDef(name=name) | ast.ClassDef(name=name):
            return {name}
        case ast.Assign(targets=targets):
            return {node.id for target in targets for node in ast.walk(target) if isinstance(node, ast.Name)}
        case ast.AnnAssign(target=ast.Name(id=name), value=value) if value is not None:
            return {name}
    return set()


def _compiled(statement: ast.stmt, module: str) -> types.CodeType:
    """A statement of `module` compiled alone, its annotations left unevaluated (as where the module postpones them:
    a definition must not fail on an annotation naming what the run has no value for)."""
    return compile(ast.Module([statement], []), module, "exec", flags=__future__.annotations.compiler_flag)


@contextlib.contextmanager
def _recording_compiles(*bases: type) -> Iterator[list]:
    """Every subclass of the given classes (the engine's kernel base, a kernel class) records `compile(key)`
    instead of compiling."""
    recorded: list = []

    def record(self: Any, key: Any, *args: Any, **kwargs: Any) -> None:
        recorded.append((self, key))

    classes, pending = [], list(bases)
    while pending:
        cls = pending.pop()
        if cls not in classes:
            classes.append(cls)
            pending.extend(cls.__subclasses__())
    saved = {cls: cls.__dict__.get("compile") for cls in classes}
    for cls in classes:
        cls.compile = record
    try:
        yield recorded
    finally:
        for cls, original in saved.items():
            if original is None:
                del cls.compile
            else:
                cls.compile = original


class DeviceCapability(tuple):
    """vLLM's (major, minor) capability named tuple."""

    major = property(lambda self: self[0])
    minor = property(lambda self: self[1])

    def to_int(self) -> int:
        return self[0] * 10 + self[1]


class VllmPlatform:
    """vLLM's `current_platform` on the arch of the configuration under test (`state.config.arch`)."""

    def __init__(self, state: types.SimpleNamespace):
        self._state = state

    def _arch(self) -> str:
        return self._state.config.arch

    def is_rocm(self) -> bool:
        return self._arch().startswith("gfx")

    def is_cuda(self) -> bool:
        return not self.is_rocm()

    def is_xpu(self) -> bool:
        return False

    def is_cpu(self) -> bool:
        return False

    def get_device_capability(self, device_id: int = 0) -> DeviceCapability:
        return DeviceCapability(device_capability(self._arch()))

    def is_device_capability(self, capability: int) -> bool:
        return self.get_device_capability().to_int() == capability

    def is_device_capability_family(self, capability: int) -> bool:
        return self.get_device_capability().to_int() // 10 == capability // 10

    def has_device_capability(self, capability: int) -> bool:
        return self.get_device_capability().to_int() >= capability

    def is_arch_support_pdl(self) -> bool:
        """Programmatic dependent launch: CUDA from Hopper on (vLLM's CudaPlatform)."""
        return self.is_cuda() and self.get_device_capability()[0] >= 9
