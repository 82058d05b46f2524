"""What planning finds: each planning step returns its `Findings`, and the planner merges them.

A step never writes into the planner; so the steps can be read (and tested) one at a time, and the order they
run in is one list (`codemods.planning.STEPS`).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from .spec import SpecError

if TYPE_CHECKING:
    from .gate import Renamed
    from .site_gate import GatePlan
    from .spec import MigrationSpec
    from .syntax import Place
    from .transforms.base import Operation


@dataclasses.dataclass(frozen=True)
class Refusal:
    """A change the migration will not make: `code` says what kind (stable, for tools: a planning step's word,
    or the name of the transform that refused), `place` where (when it has one), `reason` why, and `family`
    whose spec asked for it (when one did). Printed as "<family>: <path>:<line>: <reason>"."""

    code: str
    reason: str
    place: Place | None = None
    family: str = ""

    def __str__(self) -> str:
        return "".join(
            (f"{self.family}: " if self.family else "", f"{self.place}: " if self.place else "", self.reason)
        )


class PlacedError(SpecError):
    """An analysis cannot go on: where (when the cause has a place), and why; its planning step turns it into a
    `Refusal` of the same place and reason."""

    def __init__(self, place: Place | None, why: str):
        super().__init__(f"{place}: {why}" if place else why)
        self.place, self.why = place, why


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
    specs: list[MigrationSpec] = dataclasses.field(default_factory=list)  # specs the later steps read as amended

    def add(self, module: str, operation: Operation) -> None:
        self.operations.append((module, operation))

    def refuse(self, code: str, reason: str, place: Place | None = None, family: str = "") -> None:
        self.refusals.append(Refusal(code, reason, place, family))
