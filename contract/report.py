"""The warmup report: per-key outcomes and timing, as JSON (the CLI draws its table: migrate/cli/tables.py)."""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import TYPE_CHECKING, Any

from .keys import CompileKey

if TYPE_CHECKING:
    from .plan import WarmupPlan


@dataclasses.dataclass(frozen=True)
class KeyResult:
    kernel: str
    family: str
    key: CompileKey
    outcome: str  # "compiled" | "cached" | "failed"
    seconds: float
    cause: str | None = None
    detail: str | None = None
    started: float = 0.0  # wall-clock start (time.time()), for timelines
    worker: str = ""  # process / thread that ran it
    artifacts: tuple[str, ...] = ()  # backend cache files this key's compile wrote or its load read
    cpu_s: float = 0.0  # CPU seconds of the thread that ran it (below `seconds`: it waited for a core)


@dataclasses.dataclass
class WarmupReport:
    plan: WarmupPlan
    results: list[KeyResult]
    wall_s: float
    variants: dict[str, int]
    # Where the warmup's wall time went, in seconds, in the order it happened (see executor.execute;
    # warm_preset adds its own steps before it).
    phases: dict[str, float] = dataclasses.field(default_factory=dict)

    def count(self, outcome: str) -> int:
        return sum(1 for r in self.results if r.outcome == outcome)

    @property
    def failures(self) -> list[KeyResult]:
        return [r for r in self.results if r.outcome == "failed"]

    @property
    def ok(self) -> bool:
        return not self.failures

    def per_kernel(self) -> list[dict[str, Any]]:
        """One row per kernel: its keys, outcomes, compile seconds and variants (the JSON's and the table's)."""
        rows = []
        for planned in self.plan.kernels:
            mine = [r for r in self.results if r.kernel == planned.kernel.name]
            outcomes = Counter(r.outcome for r in mine)
            rows.append(
                {
                    "kernel": planned.kernel.name,
                    "family": planned.kernel.family,
                    "keys": len(planned.keys),
                    "empty": planned.empty,
                    "compiled": outcomes["compiled"],
                    "cached": outcomes["cached"],
                    "failed": outcomes["failed"],
                    "seconds": round(sum(r.seconds for r in mine), 4),
                    "variants": self.variants.get(planned.kernel.name, 0),
                }
            )
        # The same kernel registered with several params appears once per registration
        # in the plan; report it once.
        unique = {row["kernel"]: row for row in rows}
        return list(unique.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "compiled": self.count("compiled"),
            "cached": self.count("cached"),
            "failed": self.count("failed"),
            "wall_s": round(self.wall_s, 4),
            "longest_compile_s": round(
                max((r.seconds for r in self.results if r.outcome == "compiled"), default=0.0), 4
            ),
            "total_keys": len(self.results),
            "phases": {name: round(seconds, 4) for name, seconds in self.phases.items()},
            "kernels": self.per_kernel(),
            "failures": [
                {"kernel": r.kernel, "key": r.key.as_dict(), "cause": r.cause, "traceback": r.detail}
                for r in self.failures
            ],
            "empty_kernels": [p.kernel.name for p in self.plan.empty_kernels],
            "missed_registrations": [dataclasses.asdict(m) for m in self.plan.missed],
        }
