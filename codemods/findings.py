"""What planning finds: each planning step returns its `Findings`, and the planner merges them.

A step never writes into the planner; so the steps can be read (and tested) one at a time, and the order they
run in is one list (`codemods.planning.STEPS`).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .gate import Renamed
    from .site_gate import GatePlan
    from .transforms.base import Operation


@dataclasses.dataclass(frozen=True)
class Refusal:
    """A change the migration will not make, found while planning: `code` says what kind (stable, for tools),
    `reason` is the sentence the run prints ("<family>: <path>:<line>: why")."""

    code: str
    reason: str

    def __str__(self) -> str:
        return self.reason


@dataclasses.dataclass
class Findings:
    operations: list[tuple[str, Operation]] = dataclasses.field(default_factory=list)  # (module, operation), in order
    refusals: list[Refusal] = dataclasses.field(default_factory=list)
    warnings: list[str] = dataclasses.field(default_factory=list)  # what a human should check (the run goes on)
    gate_plans: list[GatePlan] = dataclasses.field(default_factory=list)  # each registration's gate vs the legacy's
    leftovers: list[str] = dataclasses.field(default_factory=list)  # "path:line: what" legacy code left in place
    lifts: list[str] = dataclasses.field(default_factory=list)  # what each lift writes, in words
    deleted: set[str] = dataclasses.field(default_factory=set)  # modules the migration deletes
    deleted_functions: set[str] = dataclasses.field(default_factory=set)  # "module.function" it deletes
    renamed: list[Renamed] = dataclasses.field(default_factory=list)

    def add(self, module: str, operation: Operation) -> None:
        self.operations.append((module, operation))

    def refuse(self, code: str, reason: str) -> None:
        self.refusals.append(Refusal(code, reason))
