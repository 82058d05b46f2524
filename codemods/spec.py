"""Migration specs: what moving one legacy warmup onto the contract changes in a repo.

A spec names anchors (modules, functions, classes, the kernel) and the code to insert;
the codemods apply it. Specs are checked when made, every field's type included, so a typo
fails with the field named. They are Python dataclasses (the built-in ones live beside each
family in `migrate/`) or TOML files with one `[[migration]]` table per spec (see docs/spec-reference.md).
"""

from __future__ import annotations

import ast
import dataclasses
import re
import tomllib
from pathlib import Path


class SpecError(ValueError):
    """A migration spec is malformed or names something the repo does not have."""


IMPORT_STYLES = ("auto", "module", "lazy")


def _dotted(field: str, value: str) -> None:
    if not value or not all(part.isidentifier() for part in value.split(".")):
        raise SpecError(f"spec field {field}={value!r}: must be a dotted Python name")


def _identifier(field: str, value: str) -> None:
    if not value.isidentifier():
        raise SpecError(f"spec field {field}={value!r}: must be a Python identifier")


def free_names(source: str, mode: str) -> set[str]:
    """Names a snippet reads that it does not bind itself (the first name of each attribute chain)."""
    tree = ast.parse(source, mode=mode)
    stored = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    stored |= {
        (a.asname or a.name).split(".")[0]
        for n in ast.walk(tree)
        if isinstance(n, (ast.Import, ast.ImportFrom))
        for a in n.names
    }
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - stored


@dataclasses.dataclass(frozen=True)
class MigrationSpec:
    """One legacy warmup and its contract replacement.

    What goes:
      legacy_module / legacy_function: the standalone warmup module and the entry the
          orchestrator calls; the module is deleted once its entry has nothing left to do.
      legacy_step: a helper inside the legacy module that warms just this kernel, when the
          module warms several (removed with its call).
      orchestrator_step: instead of a legacy module, a step function inside the orchestrator
          itself (its calls and, when private and unused after, its def go; never the orchestrator).
      orchestrator_module: the module that calls the legacy entry (or holds the step).
    The kernel:
      singleton_module / singleton: where the kernel is defined, and its name (an object,
          or a function such as a `@triton.jit` kernel).
      private_singleton: the private name it takes everywhere it is referenced; empty when
          the name stays (the kernel is already private, or a function keeps its name).
    What comes:
      construction_module / construction_class: the class(es) whose `__init__` selects the
          kernel (a list for several; `module:Class` for a class in another module);
          `registration` is inserted there, after the first statement (at any depth) whose
          first line contains `insert_after` (at the end when empty), and before every early
          `return` of the constructor that comes before that point.
      construction_method: the method of those classes the registration goes into: `__init__` (the
          default), or one the engine calls inside a capture window once what the registration reads
          exists (vLLM binds each layer's KV cache in `bind_kv_cache`, inside the window that captures
          registrations depending on KV-cache strides); a class that only inherits it gets an override that
          runs the parent's first, then registers.
      gate: the registration's condition, in the construction site's names. Empty (the
          default): the tree's own, read from the guards the legacy call ran under
          (codemods.guards) and written in the site's names. Written: checked against the
          tree's; a difference refuses the migration unless `intended_differences` lists it.
      intended_differences: [condition, reason] pairs: a condition the legacy call ran under
          that the registration drops (as the tree writes it), or one the registration adds
          (as the site writes it), with why that is meant; the CLI, the JSON report and the PR
          body state each in words.
      gate_imports: `from module import name` lines the gate or registration needs.
      contract_base: `module:Class` of the engine's contract base class (vLLM's
          `vllm.model_executor.warmup.jit_warmup:VllmJitKernel`), when the kernel's class already
          owns its keys (`get_warmup_keys`) and its compile-only `compile` but does not derive from
          it: the class takes it as a base, which gives it `register_warmup`. Empty: the kernel
          must already be on the contract (a spec that registers one that is not is refused).
      launcher: a plain Triton kernel is lifted onto the contract (codemods.lift): `singleton` is the
          `@triton.jit`/`@triton.heuristics` function and `launcher` the function of `singleton_module`
          that launches it. Its launch becomes a call of the dispatcher `_<launcher>_dispatch` (decorated
          with the engine's `triton_kernel_dispatcher_with_warmup`), warmed by the provider
          `_<launcher>_warmup_inputs`, which is the legacy step (`legacy_step`, else `legacy_function`, or
          `orchestrator_step`) translated. `registration` registers the dispatcher and passes every
          provider parameter, in the site's names.
      dispatcher: the dispatcher's name where the launcher launches several kernels, each lifted by a spec
          of the same migration (`_<dispatcher without _dispatch>_warmup_inputs` is its provider); empty:
          `_<launcher>_dispatch`.
      confirm: what a human must check before the spec may run (`zerojit survey --draft-specs`
          fills it); `zerojit migrate` refuses a spec whose list is not empty.
      import_style: how the constructor's module gets the kernel's name: "module" (a top-level
          import), "lazy" (inside the inserted block), "auto" (lazy when that module already
          imports from the kernel's module only inside functions).
    """

    family: str
    orchestrator_module: str
    singleton_module: str
    singleton: str
    construction_module: str
    construction_class: str | tuple[str, ...]
    registration: str
    construction_method: str = "__init__"
    gate: str = ""
    intended_differences: tuple[tuple[str, str], ...] = ()
    legacy_module: str = ""
    legacy_function: str = ""
    legacy_step: str = ""
    orchestrator_step: str = ""
    private_singleton: str = ""
    insert_after: str = ""
    gate_imports: tuple[str, ...] = ()
    import_style: str = "auto"
    contract_base: str = ""
    launcher: str = ""
    dispatcher: str = ""
    confirm: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self._check_types()
        if isinstance(self.construction_class, str):
            object.__setattr__(self, "construction_class", (self.construction_class,))
        object.__setattr__(self, "gate_imports", tuple(self.gate_imports))
        object.__setattr__(self, "confirm", tuple(self.confirm))
        object.__setattr__(self, "intended_differences", tuple(tuple(d) for d in self.intended_differences))
        for field in ("orchestrator_module", "singleton_module", "construction_module"):
            _dotted(field, getattr(self, field))
        _identifier("singleton", self.singleton)
        if self.legacy_module:
            _dotted("legacy_module", self.legacy_module)
        for field in (
            "legacy_function",
            "legacy_step",
            "orchestrator_step",
            "private_singleton",
            "launcher",
            "construction_method",
            "dispatcher",
        ):
            if getattr(self, field):
                _identifier(field, getattr(self, field))
        if bool(self.orchestrator_step) == bool(self.legacy_module or self.legacy_function):
            raise SpecError(
                "spec fields legacy_module/legacy_function and orchestrator_step: name either a legacy "
                "module and its entry function, or a step inside the orchestrator, not both or neither"
            )
        if self.legacy_module and not self.legacy_function:
            raise SpecError("spec field legacy_function: required with legacy_module")
        if self.legacy_function and not self.legacy_module:
            raise SpecError("spec field legacy_module: required with legacy_function")
        if self.legacy_step and not self.legacy_module:
            raise SpecError("spec field legacy_step: a helper of the legacy module, so legacy_module is required")
        if self.legacy_module == self.orchestrator_module:
            raise SpecError(
                f"spec field legacy_module={self.legacy_module!r} is the orchestrator itself; a step "
                "inside the orchestrator is named with orchestrator_step"
            )
        if self.private_singleton == self.singleton:
            object.__setattr__(self, "private_singleton", "")
        if not self.construction_class:
            raise SpecError("spec field construction_class: name at least one class")
        if self.dispatcher and not (self.launcher and self.dispatcher.endswith("_dispatch")):
            raise SpecError(
                f"spec field dispatcher={self.dispatcher!r}: the name of a lifted kernel's dispatcher "
                "(with launcher), ending in _dispatch"
            )
        if self.launcher and (self.private_singleton or self.contract_base):
            raise SpecError(
                "spec field launcher: a lifted kernel keeps its name and needs no contract base (the "
                "dispatcher is the contract's); leave private_singleton and contract_base empty"
            )
        for target in self.construction_class:
            module, _, cls = target.rpartition(":")
            if module:
                _dotted("construction_class", module)
            _identifier("construction_class", cls)
        if self.contract_base:
            base_module, _, base = self.contract_base.rpartition(":")
            if not base_module:
                raise SpecError(f"spec field contract_base={self.contract_base!r}: must be module:Class")
            _dotted("contract_base", base_module)
            _identifier("contract_base", base)
        if self.import_style not in IMPORT_STYLES:
            raise SpecError(f"spec field import_style={self.import_style!r}: one of {', '.join(IMPORT_STYLES)}")
        checked = [("registration", self.registration, "exec")]
        checked += [("gate", self.gate, "eval")] if self.gate.strip() else []
        checked += [("intended_differences", condition, "eval") for condition, _ in self.intended_differences]
        for field, value, mode in checked:
            try:
                ast.parse(value, mode=mode)
            except SyntaxError as exc:
                raise SpecError(f"spec field {field}={value!r}: not valid Python ({exc.msg})") from None
        for condition, reason in self.intended_differences:
            if not reason.strip():
                raise SpecError(f"spec field intended_differences: {condition!r} needs a reason")
        if self.kernel_name not in free_names(self.registration, "exec"):
            raise SpecError(f"spec field registration={self.registration!r}: must use {self.kernel_name}")
        for line in self.gate_imports:
            try:
                tree = ast.parse(line)
            except SyntaxError:
                tree = None
            if (
                tree is None
                or len(tree.body) != 1
                or not isinstance(tree.body[0], ast.ImportFrom)
                or tree.body[0].level
                or any(a.name == "*" for a in tree.body[0].names)
            ):
                raise SpecError(f"spec field gate_imports: {line!r} is not one 'from module import name' line")

    def _check_types(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.name == "construction_class":
                ok = isinstance(value, str) or (
                    isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value)
                )
                expected = "a string or a list of strings"
            elif field.name == "intended_differences":
                ok = isinstance(value, (list, tuple)) and all(
                    isinstance(v, (list, tuple)) and len(v) == 2 and all(isinstance(x, str) for x in v) for v in value
                )
                expected = "a list of [condition, reason] pairs of strings"
            elif field.name in ("gate_imports", "confirm"):
                ok = isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)
                expected = "a list of strings"
            else:
                ok, expected = isinstance(value, str), "a string"
            if not ok:
                raise SpecError(f"spec field {field.name}={value!r}: must be {expected}")
        if isinstance(self.construction_class, list):
            object.__setattr__(self, "construction_class", tuple(self.construction_class))

    @property
    def kernel_name(self) -> str:
        """The kernel's name once migrated (what the registration calls): a lifted kernel's dispatcher."""
        if self.launcher:
            return self.dispatcher or default_dispatcher(self.launcher)
        return self.private_singleton or self.singleton

    @property
    def provider_name(self) -> str:
        """A lifted kernel's provider of warmup inputs."""
        return provider_of(self.kernel_name)

    def lifted_step(self) -> tuple[str, str]:
        """(module, function) of the legacy code a lift translates into the provider."""
        if self.orchestrator_step:
            return self.orchestrator_module, self.orchestrator_step
        return self.legacy_module, self.legacy_step or self.legacy_function

    def constructions(self) -> list[tuple[str, str]]:
        """(module, class) of every construction site."""
        out = []
        for target in self.construction_class:
            module, _, cls = target.rpartition(":")
            out.append((module or self.construction_module, cls))
        return out

    def binding_names(self) -> set[str]:
        """Names the inserted gate and registration read (each must be bound where it goes)."""
        gate = free_names(self.gate, "eval") if self.gate.strip() else set()
        return gate | free_names(self.registration, "exec")

    def registers_kernel(self) -> bool:
        """The registration calls `<kernel>.register_warmup(...)` (so the kernel must have that method)."""
        return any(
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "register_warmup"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == self.kernel_name
            for node in ast.walk(ast.parse(self.registration))
        )

    def registration_call(self) -> str:
        """The source of the registration's `register_warmup(...)` call (the last statement when it has none):
        what shows a site is migrated, whatever a formatter or an import sorter did to the lines around it."""
        tree = ast.parse(self.registration)
        calls = [
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "register_warmup"
        ]
        return ast.get_source_segment(self.registration, calls[0] if calls else tree.body[-1])

    def identifiers(self) -> tuple[str, ...]:
        """Words a file must contain to be touched by this spec (the cheap prefilter)."""
        words = [self.singleton, self.kernel_name, *(cls for _, cls in self.constructions())]
        words += [self.launcher] if self.launcher else []
        if self.legacy_module:
            words += [self.legacy_function, self.legacy_module.rsplit(".", 1)[-1]]
        else:
            words.append(self.orchestrator_step)
        return tuple(dict.fromkeys(words))


def normalized(code: str) -> str:
    """Code with its layout gone (whitespace, and the trailing commas a formatter adds or drops), for comparison."""
    return re.sub(r",([)\]}])", r"\1", "".join(code.split()))


def default_dispatcher(launcher: str) -> str:
    """The dispatcher a lift names after the launcher whose one kernel it lifts."""
    return f"_{launcher.lstrip('_')}_dispatch"


def provider_of(dispatcher: str) -> str:
    """The provider of warmup inputs a lift writes for `dispatcher`."""
    return f"{dispatcher.removesuffix('_dispatch')}_warmup_inputs"


def load_specs(path: Path) -> list[MigrationSpec]:
    """Specs from a TOML file: one `[[migration]]` table each; errors name the table and key."""
    try:
        data = tomllib.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SpecError(f"{path}: cannot read spec file ({exc})") from None
    tables = data.get("migration")
    if not isinstance(tables, list) or not tables or not all(isinstance(t, dict) for t in tables):
        raise SpecError(f"{path}: expected one or more [[migration]] tables")
    names = {f.name for f in dataclasses.fields(MigrationSpec)}
    required = {f.name for f in dataclasses.fields(MigrationSpec) if f.default is dataclasses.MISSING}
    specs = []
    for index, table in enumerate(tables):
        unknown, missing = sorted(set(table) - names), sorted(required - set(table))
        if unknown or missing:
            raise SpecError(f"{path}: [[migration]] #{index + 1}: unknown keys {unknown}, missing keys {missing}")
        try:
            specs.append(MigrationSpec(**table))
        except SpecError as exc:
            raise SpecError(f"{path}: [[migration]] #{index + 1}: {exc}") from None
    return specs
