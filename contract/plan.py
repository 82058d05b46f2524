"""A warmup plan: which kernels registered, and the keys each one will compile.

The plan is deterministic (kernels by family and name, keys in expansion order) and
JSON-serializable, so two engine versions' plans can be stored and diffed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .keys import CompileKey, jsonable
from .limits import ServingLimits

if TYPE_CHECKING:
    from .kernel import JitKernel


@dataclasses.dataclass(frozen=True)
class MissedRegistration:
    kernel: str
    family: str
    site: str


@dataclasses.dataclass(frozen=True)
class PlannedKernel:
    kernel: JitKernel
    params: dict[str, Any]
    site: str
    keys: tuple[CompileKey, ...]

    @property
    def empty(self) -> bool:
        """Registered but expands to nothing: the runtime will compile whatever it launches."""
        return not self.keys

    def to_dict(self, include_keys: bool) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "kernel": self.kernel.name,
            "family": self.kernel.family,
            "backend": self.kernel.backend,
            "keys": len(self.keys),
            "empty": self.empty,
        }
        if include_keys:
            entry["params"] = jsonable(self.params)
            entry["compile_keys"] = [key.as_dict() for key in self.keys]
        return entry


@dataclasses.dataclass
class WarmupPlan:
    limits: ServingLimits
    kernels: list[PlannedKernel]
    missed: list[MissedRegistration]
    duplicate_registrations: int = 0

    def work(self) -> Iterator[tuple[JitKernel, CompileKey]]:
        """Every (kernel, key) to compile once, de-duplicated across registrations."""
        seen: set[tuple[int, CompileKey]] = set()
        for planned in self.kernels:
            for key in planned.keys:
                marker = (id(planned.kernel), key)
                if marker not in seen:
                    seen.add(marker)
                    yield planned.kernel, key

    @property
    def total_keys(self) -> int:
        return sum(1 for _ in self.work())

    @property
    def empty_kernels(self) -> list[PlannedKernel]:
        return [p for p in self.kernels if p.empty]

    def to_dict(self, include_keys: bool = False) -> dict[str, Any]:
        return {
            "total_keys": self.total_keys,
            "kernels": [p.to_dict(include_keys) for p in self.kernels],
            "empty_kernels": [p.kernel.name for p in self.empty_kernels],
            "missed_registrations": [dataclasses.asdict(m) for m in self.missed],
            "duplicate_registrations": self.duplicate_registrations,
            "limits": self.limits.as_dict(),
        }
