"""Migration specs: what moving one legacy warmup onto the contract changes in a repo.

A spec names anchors (modules, functions, a class, a singleton) and the code to insert;
the codemods apply it. Specs are checked when made, so a typo fails with the field named.
They are Python dataclasses (the built-in ones live beside each family in `migrate/`) or
TOML files with one `[[migration]]` table per spec (see README).
"""

from __future__ import annotations

import ast
import dataclasses
import tomllib
from pathlib import Path
from typing import Any


class SpecError(ValueError):
    """A migration spec is malformed or names something the repo does not have."""


def _dotted(field: str, value: Any) -> None:
    if not isinstance(value, str) or not value or not all(part.isidentifier() for part in value.split(".")):
        raise SpecError(f"spec field {field}={value!r}: must be a dotted Python name")


def _identifier(field: str, value: Any) -> None:
    if not isinstance(value, str) or not value.isidentifier():
        raise SpecError(f"spec field {field}={value!r}: must be a Python identifier")


@dataclasses.dataclass(frozen=True)
class MigrationSpec:
    """One legacy warmup and its contract replacement.

    legacy_module / legacy_function: the standalone warmup module and the entry function
        the orchestrator calls. The module is deleted once its entry has nothing left to do.
    legacy_step: a helper inside the legacy module that warms just this kernel, when the
        module warms several (removed with its call); empty when the entry is the step.
    orchestrator_module: the module that imports and calls the legacy entry.
    singleton_module / singleton / private_singleton: the kernel singleton, renamed to its
        private name everywhere it is referenced.
    construction_module / construction_class: the class whose `__init__` selects the
        kernel; `registration` is inserted there under `gate`, after the first statement
        whose first line contains `insert_after` (at the end when empty).
    gate_imports: `from module import name` lines the gate or registration needs.
    """

    family: str
    legacy_module: str
    legacy_function: str
    orchestrator_module: str
    singleton_module: str
    singleton: str
    private_singleton: str
    construction_module: str
    construction_class: str
    registration: str
    gate: str
    legacy_step: str = ""
    insert_after: str = ""
    gate_imports: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for field in ("legacy_module", "orchestrator_module", "singleton_module", "construction_module"):
            _dotted(field, getattr(self, field))
        for field in ("legacy_function", "singleton", "private_singleton", "construction_class"):
            _identifier(field, getattr(self, field))
        if self.legacy_step:
            _identifier("legacy_step", self.legacy_step)
        if self.singleton == self.private_singleton:
            raise SpecError(f"spec field private_singleton={self.private_singleton!r}: must differ from singleton")
        for field, mode in (("registration", "exec"), ("gate", "eval")):
            try:
                ast.parse(getattr(self, field), mode=mode)
            except SyntaxError as exc:
                raise SpecError(f"spec field {field}={getattr(self, field)!r}: not valid Python ({exc.msg})") from exc
        if self.private_singleton not in self.registration:
            raise SpecError(f"spec field registration={self.registration!r}: must call {self.private_singleton}")
        if not isinstance(self.gate_imports, tuple):
            object.__setattr__(self, "gate_imports", tuple(self.gate_imports))
        for line in self.gate_imports:
            tree = ast.parse(line) if isinstance(line, str) else None
            if tree is None or len(tree.body) != 1 or not isinstance(tree.body[0], ast.ImportFrom):
                raise SpecError(f"spec field gate_imports: {line!r} is not one 'from module import name' line")

    def identifiers(self) -> tuple[str, ...]:
        """Words a file must contain to be touched by this spec (the cheap prefilter)."""
        return (self.singleton, self.private_singleton, self.legacy_function, self.construction_class,
                self.legacy_module.rsplit(".", 1)[-1])


def load_specs(path: Path) -> list[MigrationSpec]:
    """Specs from a TOML file: one `[[migration]]` table each; errors name the table and key."""
    try:
        data = tomllib.loads(Path(path).read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise SpecError(f"{path}: cannot read spec file ({exc})") from exc
    tables = data.get("migration")
    if not isinstance(tables, list) or not tables:
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
