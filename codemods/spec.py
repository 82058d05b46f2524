"""Migration specs: what moving one legacy warmup onto the contract changes in a repo.

A spec is made of small parts, each checked when made (every field's type included, so a typo fails with the
field named): the `Legacy` warmup that goes, the `Kernel`, the `Registration` that comes, and either a `Lift`
(a plain Triton kernel becomes a contract dispatcher) or an `Adoption` (the kernel's class takes the contract's
base). The built-in specs live beside each family in `migrate/`; your own are TOML files with one flat
`[[migration]]` table per spec, whose keys are the parts' fields (`MigrationSpec.from_fields`). Each field's
documentation is written once, here, and docs/spec-reference.md's field tables are generated from it
(codemods.spec_reference).
"""

from __future__ import annotations

import ast
import dataclasses
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .engines import DEFAULT_ENGINE
from .syntax import free_names, loads, stores


class SpecError(ValueError):
    """A migration spec is malformed or names something the repo does not have."""


IMPORT_STYLES = ("auto", "module", "lazy")

# What a field holds, as (check of a value, what it must be, the value normalized).
_KINDS = {
    "text": (lambda v: isinstance(v, str), "a string"),
    "strings": (lambda v: isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v), "a list of strings"),
    "classes": (
        lambda v: isinstance(v, str) or (isinstance(v, (list, tuple)) and v and all(isinstance(x, str) for x in v)),
        "a string or a list of strings",
    ),
    "pairs": (
        lambda v: (
            isinstance(v, (list, tuple))
            and all(isinstance(p, (list, tuple)) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in v)
        ),
        "a list of pairs of strings",
    ),
}


def _field(key: str, doc: str, default: Any = dataclasses.MISSING, kind: str = "text", name: str = ""):
    """A part's field: `key` is its name in a TOML spec (and in errors), `doc` its reference documentation;
    `name` ("dotted" or "identifier") the form a non-empty value must have."""
    return dataclasses.field(default=default, metadata={"key": key, "doc": doc, "kind": kind, "name": name})


def _written_for(part: str, what: str, home: str) -> Any:
    """The field of a hand-written `part` that pins the code it was written from (planning/pins.py checks it)."""
    return _field(
        f"{part}_written_for",
        f'`[["Class.method", "digest"]]`: the definitions {what}; `f()`: a function\'s parameters alone; `f(g)`: '
        "only its calls of g and the assignments of what they pass; `pkg.module:f` in another module than "
        f"{home}), each with the digest of the code it was written from (docstrings, layout, log lines, local "
        "names, and whether a call to an undecorated repo function passes an argument by position or by name "
        f"aside): a tree whose code differs is refused at that definition, with its digest (the {part} may not fit "
        "it)",
        (),
        kind="pairs",
    )


def _checked(part: Any) -> None:
    """Check (and normalize to tuples) every field of a part, by its declared kind and name form."""
    for field in dataclasses.fields(part):
        key, value = field.metadata["key"], getattr(part, field.name)
        check, expected = _KINDS[field.metadata["kind"]]
        if not check(value):
            raise SpecError(f"spec field {key}={value!r}: must be {expected}")
        if field.metadata["kind"] == "classes":
            value = (value,) if isinstance(value, str) else tuple(value)
        elif field.metadata["kind"] != "text":
            value = tuple(tuple(v) if isinstance(v, (list, tuple)) else v for v in value)
        object.__setattr__(part, field.name, value)
        required = field.default is dataclasses.MISSING
        if field.metadata["name"] == "dotted" and (value or required):
            _dotted(key, value)
        elif field.metadata["name"] == "identifier" and (value or required):
            _identifier(key, value)


def _dotted(key: str, value: str) -> None:
    if not value or not all(part.isidentifier() for part in value.split(".")):
        raise SpecError(f"spec field {key}={value!r}: must be a dotted Python name")


def _identifier(key: str, value: str) -> None:
    if not value.isidentifier():
        raise SpecError(f"spec field {key}={value!r}: must be a Python identifier")


def _parses(key: str, code: str, mode: str) -> None:
    try:
        ast.parse(code, mode=mode)
    except SyntaxError as exc:
        raise SpecError(f"spec field {key}={code!r}: not valid Python ({exc.msg})") from None


def _from_imports(key: str, lines: tuple[str, ...]) -> None:
    for line in lines:
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
            raise SpecError(f"spec field {key}: {line!r} is not one 'from module import name' line")


@dataclasses.dataclass(frozen=True)
class Legacy:
    """What goes: the legacy warmup (a module and its entry, or a step inside the orchestrator)."""

    orchestrator_module: str = _field(
        "orchestrator_module", "the module that calls the legacy entry (or holds the step)", name="dotted"
    )
    module: str = _field(
        "legacy_module",
        "the standalone warmup module the orchestrator calls; deleted once its entry has nothing left to do",
        "",
        name="dotted",
    )
    function: str = _field(
        "legacy_function", "the entry of `legacy_module` the orchestrator calls", "", name="identifier"
    )
    step: str = _field(
        "legacy_step",
        "a helper inside the legacy module that warms just this kernel, when the module warms several (removed "
        "with its call)",
        "",
        name="identifier",
    )
    orchestrator_step: str = _field(
        "orchestrator_step",
        "instead of `legacy_module` / `legacy_function`: a step function inside the orchestrator itself (its calls "
        "go, and its def when it is private and unused afterwards; the orchestrator stays)",
        "",
        name="identifier",
    )

    def __post_init__(self) -> None:
        _checked(self)
        if bool(self.orchestrator_step) == bool(self.module or self.function):
            raise SpecError(
                "spec fields legacy_module/legacy_function and orchestrator_step: name either a legacy "
                "module and its entry function, or a step inside the orchestrator, not both or neither"
            )
        if self.module and not self.function:
            raise SpecError("spec field legacy_function: required with legacy_module")
        if self.function and not self.module:
            raise SpecError("spec field legacy_module: required with legacy_function")
        if self.step and not self.module:
            raise SpecError("spec field legacy_step: a helper of the legacy module, so legacy_module is required")
        if self.module == self.orchestrator_module:
            raise SpecError(
                f"spec field legacy_module={self.module!r} is the orchestrator itself; a step "
                "inside the orchestrator is named with orchestrator_step"
            )

    def warming(self) -> tuple[str, str]:
        """(module, function) of the legacy code that warms just this kernel (what a lift translates)."""
        if self.orchestrator_step:
            return self.orchestrator_module, self.orchestrator_step
        return self.module, self.step or self.function


@dataclasses.dataclass(frozen=True)
class Kernel:
    """The kernel the warmup compiled."""

    module: str = _field(
        "singleton_module",
        "the module that defines the kernel (a lift's: the launcher's, where `kernel_module` names another)",
        name="dotted",
    )
    name: str = _field(
        "singleton",
        "the kernel's name: an object, or a function such as a `@triton.jit` or CuTe DSL kernel",
        name="identifier",
    )
    private_name: str = _field(
        "private_singleton",
        "the private name the kernel takes everywhere it is referenced; empty when the name stays (already "
        "private, or a function)",
        "",
        name="identifier",
    )

    def __post_init__(self) -> None:
        _checked(self)
        if self.private_name == self.name:
            object.__setattr__(self, "private_name", "")


@dataclasses.dataclass(frozen=True)
class Registration:
    """What comes: the `register_warmup(...)` call, where it is inserted and the gate it runs under."""

    module: str = _field(
        "construction_module", "the module of the class(es) whose constructor selects the kernel", name="dotted"
    )
    classes: tuple[str, ...] = _field(
        "construction_class",
        'the class(es) whose constructor selects the kernel: a list for several, `"pkg.module:Class"` for a class '
        "in another module",
        kind="classes",
    )
    code: str = _field("registration", "the code inserted; may span lines, and is re-indented")
    subclasses_of: str = _field(
        "construction_subclasses_of",
        '`"pkg.module:Base"`: every class of the repo that lists this base registers too, as the construction '
        "classes do (a fork's own layer of that kind included); empty: only the classes named",
        "",
    )
    method: str = _field(
        "construction_method",
        "the method the registration goes into: `__init__` (the default), or one the engine calls inside a "
        f"capture window once what the registration reads exists (`{DEFAULT_ENGINE.bound_later[0][1]}` for "
        "KV-cache strides; a class that only inherits it gets an override that runs the parent's first)",
        "__init__",
        name="identifier",
    )
    insert_after: str = _field(
        "insert_after",
        "the first line of the constructor statement (at any depth) to insert after; empty: the end; matching "
        "none (a fork reworded it): after the last statement that sets what the registration reads. The "
        "registration also goes before every early `return` that comes before that point (unless `early_returns` is "
        "`skip`)",
        "",
    )
    early_returns: str = _field(
        "early_returns",
        "what a `return` of the method above the insertion point means: `register` (the object is still built "
        "and used, so the registration also goes before it), or `skip` (the method decided against the kernel, as "
        "a `can_run` check's `return False`: that path registers nothing, as it recorded nothing the legacy "
        "warmup read)",
        "register",
    )
    gate: str = _field(
        "gate",
        "the registration's condition in the site's names; empty: the tree's own guards, read from where the "
        "legacy call ran; written: checked against them (a difference refuses the run unless "
        "`intended_differences` lists it)",
        "",
    )
    intended_differences: tuple[tuple[str, str], ...] = _field(
        "intended_differences",
        '`[["condition", "why"]]`: a legacy guard the registration drops (as the tree writes it) or one it adds '
        "(as the site writes it), with the reason; stated in the CLI summary, the JSON report and the PR body",
        (),
        kind="pairs",
    )
    gate_imports: tuple[str, ...] = _field(
        "gate_imports",
        "`from x import y` lines a written gate or the registration needs, added where the site's module lacks them; "
        "where it imports `y` under another name (`from x import y as z`), the registration reads `z` instead",
        (),
        kind="strings",
    )
    written_for: tuple[tuple[str, str], ...] = _written_for(
        "registration",
        "the registration's arguments translate by hand (the legacy step they are the arguments of, the search "
        "that reads them off the layer",
        "the legacy warmup's",
    )
    import_style: str = _field(
        "import_style",
        "how the constructor's module gets the kernel's name: `module` (a top-level import), `lazy` (inside the "
        "inserted block), `auto` (lazy where that module already imports from the kernel's module only inside "
        "functions)",
        "auto",
    )

    def __post_init__(self) -> None:
        _checked(self)
        for target in self.classes:
            module, _, cls = target.rpartition(":")
            if module:
                _dotted("construction_class", module)
            _identifier("construction_class", cls)
        if self.subclasses_of:
            module, _, cls = self.subclasses_of.rpartition(":")
            _dotted("construction_subclasses_of", module)
            _identifier("construction_subclasses_of", cls)
        if self.early_returns not in ("register", "skip"):
            raise SpecError(f"spec field early_returns={self.early_returns!r}: register or skip")
        if self.import_style not in IMPORT_STYLES:
            raise SpecError(f"spec field import_style={self.import_style!r}: one of {', '.join(IMPORT_STYLES)}")
        _parses("registration", self.code, "exec")
        if self.gate.strip():
            _parses("gate", self.gate, "eval")
        for condition, reason in self.intended_differences:
            _parses("intended_differences", condition, "eval")
            if not reason.strip():
                raise SpecError(f"spec field intended_differences: {condition!r} needs a reason")
        _from_imports("gate_imports", self.gate_imports)

    def constructions(self) -> list[tuple[str, str]]:
        """(module, class) of every construction site."""
        return [(module or self.module, cls) for module, _, cls in (c.rpartition(":") for c in self.classes)]

    def binding_names(self) -> set[str]:
        """Names the inserted gate and registration read (each must be bound where it goes)."""
        gate = free_names(self.gate, "eval") if self.gate.strip() else set()
        return gate | free_names(self.code, "exec")

    def call(self) -> str:
        """The source of the `register_warmup(...)` call (the last statement when it has none): what shows a site
        is migrated, whatever a formatter or an import sorter did to the lines around it."""
        tree = ast.parse(self.code)
        calls = [
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "register_warmup"
        ]
        return ast.get_source_segment(self.code, calls[0] if calls else tree.body[-1])


@dataclasses.dataclass(frozen=True)
class Lift:
    """A plain Triton kernel lifted onto the contract (codemods.lift): its launch becomes a call of a dispatcher
    decorated with the engine's `triton_kernel_dispatcher_with_warmup`, warmed by a provider that is the legacy
    step translated; the registration registers the dispatcher and passes every provider parameter."""

    launcher: str = _field(
        "launcher",
        "the function of `singleton_module` that launches the kernel (`singleton`, a `@triton.jit` function): "
        "its launch becomes `<launcher>_dispatch` (`_<launcher>_dispatch` where only its own module registers "
        "it), warmed by `_<launcher>_warmup_inputs` ([lift.md](lift.md))",
        name="identifier",
    )
    dispatcher: str = _field(
        "dispatcher",
        "the dispatcher's name where the launcher launches several kernels, each lifted by its own spec in the "
        "same run (ends in `_dispatch`); empty: `_<launcher>_dispatch`",
        "",
        name="identifier",
    )
    kernel_module: str = _field(
        "kernel_module",
        "the module that defines `singleton` where it is not `singleton_module` (which then holds the launcher, "
        "and gets the dispatcher the registration imports); empty: `singleton_module`",
        "",
        name="dotted",
    )

    def __post_init__(self) -> None:
        if isinstance(self.dispatcher, str) and self.dispatcher and not self.dispatcher.endswith("_dispatch"):
            raise SpecError(
                f"spec field dispatcher={self.dispatcher!r}: the name of a lifted kernel's dispatcher "
                "(with launcher), ending in _dispatch"
            )
        _checked(self)


@dataclasses.dataclass(frozen=True)
class Adoption:
    """A kernel class that already owns its keys (`get_warmup_keys`) and a compile-only `compile` takes the
    engine's contract base, which gives it `register_warmup`."""

    contract_base: str = _field(
        "contract_base",
        f"`\"module:Class\"` of the engine's contract base (vLLM's `{DEFAULT_ENGINE.jit_module}:VllmJitKernel`): "
        "the kernel's class adopts it",
    )

    def __post_init__(self) -> None:
        _checked(self)
        base_module, _, base = self.contract_base.rpartition(":")
        if not base_module:
            raise SpecError(f"spec field contract_base={self.contract_base!r}: must be module:Class")
        _dotted("contract_base", base_module)
        _identifier("contract_base", base)


@dataclasses.dataclass(frozen=True)
class Owner:
    """A compile unit that no contract object owns (a cached compile function or class method) gets one: the
    owner's code, a class of the engine's contract base and its object, goes into the kernel's module."""

    code: str = _field(
        "owner",
        "module-level code that defines `singleton`: the owner class (its `get_warmup_keys` and a `compile` that "
        "calls the unit's own compile) and its object; may span lines",
    )
    after: str = _field(
        "owner_after",
        "the first line of the module-level statement the owner goes after (the compile unit it calls)",
    )
    imports: tuple[str, ...] = _field(
        "owner_imports",
        "`from x import y` lines the owner needs, added where the kernel's module lacks them",
        (),
        kind="strings",
    )
    written_for: tuple[tuple[str, str], ...] = _written_for(
        "owner", "the owner and its registration translate (the legacy step, its compile loop", "the kernel's"
    )

    def __post_init__(self) -> None:
        _checked(self)
        _parses("owner", self.code, "exec")
        _from_imports("owner_imports", self.imports)


PARTS = {part.__name__.lower(): part for part in (Legacy, Kernel, Registration, Lift, Adoption, Owner)}
OPTIONAL_PARTS = ("lift", "adoption", "owner")


@dataclasses.dataclass(frozen=True)
class MigrationSpec:
    """One legacy warmup and its contract replacement, under a family name (`zerojit migrate NAME`)."""

    family: str = _field(
        "family",
        "the name the spec is applied under (`zerojit migrate NAME`); with `--spec` and no name, every spec of "
        "the file applies",
    )
    legacy: Legacy
    kernel: Kernel
    registration: Registration
    lift: Lift | None = None
    adoption: Adoption | None = None
    owner: Owner | None = None
    confirm: tuple[str, ...] = _field(
        "confirm",
        "what a human must check before the spec may run; `zerojit survey --draft-specs` fills it, and "
        "`zerojit migrate` refuses a spec whose list is not empty",
        (),
        kind="strings",
    )

    def __post_init__(self) -> None:
        if not isinstance(self.family, str):
            raise SpecError(f"spec field family={self.family!r}: must be a string")
        check, expected = _KINDS["strings"]
        if not check(self.confirm):
            raise SpecError(f"spec field confirm={self.confirm!r}: must be {expected}")
        object.__setattr__(self, "confirm", tuple(self.confirm))
        for name, part in PARTS.items():
            value = getattr(self, name)
            if not isinstance(value, part) and not (value is None and name in OPTIONAL_PARTS):
                raise SpecError(f"spec part {name}={value!r}: must be a {part.__name__}")
        if self.lift and (self.kernel.private_name or self.adoption):
            raise SpecError(
                "spec field launcher: a lifted kernel keeps its name and needs no contract base (the "
                "dispatcher is the contract's); leave private_singleton and contract_base empty"
            )
        if self.owner and (self.lift or self.adoption):
            raise SpecError(
                "spec field owner: a new owner object is the kernel's contract; a lifted kernel or an adopting "
                "class needs none (leave launcher or contract_base empty)"
            )
        if self.owner and self.kernel.name not in {n for s in ast.parse(self.owner.code).body for n in stores(s)}:
            raise SpecError(f"spec field owner: must define {self.kernel.name} (singleton) at its top level")
        if self.kernel_name not in loads(ast.parse(self.registration.code)):
            raise SpecError(f"spec field registration={self.registration.code!r}: must use {self.kernel_name}")

    @classmethod
    def from_fields(cls, fields: Mapping[str, Any]) -> MigrationSpec:
        """A spec from its flat fields, the keys of a TOML `[[migration]]` table (an optional part is made when one
        of its fields is set); unknown and missing keys are named."""
        keys = {f.metadata["key"]: (part, f) for part, kind in PARTS.items() for f in dataclasses.fields(kind)}
        required = {
            key
            for key, (part, field) in keys.items()
            if part in ("legacy", "kernel", "registration") and field.default is dataclasses.MISSING
        }
        unknown = sorted(set(fields) - set(keys) - {"family", "confirm"})
        missing = sorted((required | {"family"}) - set(fields))
        if unknown or missing:
            raise SpecError(f"unknown keys {unknown}, missing keys {missing}")
        parts: dict[str, dict[str, Any]] = {part: {} for part in PARTS}
        for key, value in fields.items():
            if key in keys:
                part, field = keys[key]
                parts[part][field.name] = value
        optional = {part: parts[part] if any(parts[part].values()) else None for part in OPTIONAL_PARTS}
        if optional["lift"] is not None and not optional["lift"].get("launcher"):
            given = ", ".join(
                f"{key}={fields[key]!r}" for key, (part, _) in keys.items() if part == "lift" and fields.get(key)
            )
            raise SpecError(
                f"spec field {given}: describes a lifted kernel, which needs launcher (the function launching it)"
            )
        if optional["owner"] is not None and (
            absent := [
                f.metadata["key"]
                for f in dataclasses.fields(Owner)
                if f.default is dataclasses.MISSING and not optional["owner"].get(f.name)
            ]
        ):
            raise SpecError(f"spec field {', '.join(absent)}: required with the owner's other fields")
        return cls(
            fields["family"],
            Legacy(**parts["legacy"]),
            Kernel(**parts["kernel"]),
            Registration(**parts["registration"]),
            *(PARTS[part](**values) if values is not None else None for part, values in optional.items()),
            confirm=fields.get("confirm", ()),
        )

    def fields(self) -> dict[str, Any]:
        """The flat fields (`from_fields` of them is this spec)."""
        flat: dict[str, Any] = {"family": self.family}
        for name, kind in PARTS.items():
            part = getattr(self, name)
            flat |= {f.metadata["key"]: getattr(part, f.name) if part else "" for f in dataclasses.fields(kind)}
        return flat | {"confirm": self.confirm}

    def replaced(self, **changes: Any) -> MigrationSpec:
        """This spec with some flat fields changed."""
        return MigrationSpec.from_fields(self.fields() | changes)

    @property
    def kernel_name(self) -> str:
        """The kernel's name once migrated (what the registration calls): a lifted kernel's dispatcher."""
        if self.lift:
            shared = any(module != self.kernel.module for module, _ in self.registration.constructions())
            return self.lift.dispatcher or default_dispatcher(self.lift.launcher, shared)
        return self.kernel.private_name or self.kernel.name

    @property
    def kernel_home(self) -> str:
        """The module that defines `singleton`: a lift's `kernel_module` where the spec names one."""
        return (self.lift and self.lift.kernel_module) or self.kernel.module

    @property
    def provider_name(self) -> str:
        """A lifted kernel's provider of warmup inputs."""
        return provider_of(self.kernel_name)

    def registers_kernel(self) -> bool:
        """The registration calls `<kernel>.register_warmup(...)` (so the kernel must have that method)."""
        return any(
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "register_warmup"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == self.kernel_name
            for node in ast.walk(ast.parse(self.registration.code))
        )

    def identifiers(self) -> tuple[str, ...]:
        """Words a file must contain to be touched by this spec (the cheap prefilter)."""
        words = [self.kernel.name, self.kernel_name, *(cls for _, cls in self.registration.constructions())]
        words += [self.lift.launcher] if self.lift else []
        if self.legacy.module:
            words += [self.legacy.function, self.legacy.module.rsplit(".", 1)[-1]]
        else:
            words.append(self.legacy.orchestrator_step)
        return tuple(dict.fromkeys(words))


def default_dispatcher(launcher: str, shared: bool = True) -> str:
    """The dispatcher a lift names after the launcher whose one kernel it lifts: public where another module
    registers it (it imports the name), private where only the launcher's own module does."""
    name = f"{launcher.lstrip('_')}_dispatch"
    return name if shared else f"_{name}"


def provider_of(dispatcher: str) -> str:
    """The provider of warmup inputs a lift writes for `dispatcher`: private (only the dispatcher reads it)."""
    return f"_{dispatcher.lstrip('_').removesuffix('_dispatch')}_warmup_inputs"


def load_specs(path: Path) -> list[MigrationSpec]:
    """Specs from a TOML file: one `[[migration]]` table each; errors name the table and key."""
    try:
        data = tomllib.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SpecError(f"{path}: cannot read spec file ({exc})") from None
    tables = data.get("migration")
    if not isinstance(tables, list) or not tables or not all(isinstance(t, dict) for t in tables):
        raise SpecError(f"{path}: expected one or more [[migration]] tables")
    specs = []
    for index, table in enumerate(tables):
        try:
            specs.append(MigrationSpec.from_fields(table))
        except SpecError as exc:
            raise SpecError(f"{path}: [[migration]] #{index + 1}: {exc}") from None
    return specs
