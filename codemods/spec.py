"""Migration specs: what moving one legacy warmup onto the contract changes in a repo.

A spec names anchors (modules, a function, a class, a singleton) and the code to insert;
the codemods apply it. Specs are checked when made, so a typo fails with the field named.
"""

from __future__ import annotations

import ast
import dataclasses


class SpecError(ValueError):
    """A migration spec field is malformed."""


def _dotted(field: str, value: str) -> None:
    if not isinstance(value, str) or not value or not all(part.isidentifier() for part in value.split(".")):
        raise SpecError(f"spec field {field}={value!r}: must be a dotted Python name")


@dataclasses.dataclass(frozen=True)
class MigrationSpec:
    """One legacy warmup and its contract replacement.

    legacy_module / legacy_function: the standalone warmup module (deleted) and the
        function the orchestrator calls.
    orchestrator_module: the module that imports and calls the legacy function.
    singleton_module / singleton / private_singleton: the kernel singleton, renamed to
        its private name everywhere it is referenced.
    construction_module / construction_class: the class whose constructor selects the
        kernel; `registration` is appended to its `__init__` under `gate`.
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
    gate_imports: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for field in ("legacy_module", "orchestrator_module", "singleton_module", "construction_module"):
            _dotted(field, getattr(self, field))
        for field in ("legacy_function", "singleton", "private_singleton", "construction_class"):
            value = getattr(self, field)
            if not isinstance(value, str) or not value.isidentifier():
                raise SpecError(f"spec field {field}={value!r}: must be a Python identifier")
        for field, mode in (("registration", "exec"), ("gate", "eval")):
            try:
                ast.parse(getattr(self, field), mode=mode)
            except SyntaxError as exc:
                raise SpecError(f"spec field {field}={getattr(self, field)!r}: not valid Python ({exc.msg})") from exc
        for line in self.gate_imports:
            tree = ast.parse(line) if isinstance(line, str) else None
            if tree is None or len(tree.body) != 1 or not isinstance(tree.body[0], ast.ImportFrom):
                raise SpecError(f"spec field gate_imports: {line!r} is not one 'from module import name' line")
