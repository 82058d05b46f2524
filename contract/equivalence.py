"""Key equivalence: does the migrated kernel warm exactly what the legacy warmup did?

For each serving configuration, the legacy side lists the keys its pre-migration logic
compiled; the migrated side goes the whole way a server goes (registration gates inside
model construction, the registry, expansion) via `keys_via_registry`. Keys compare in
canonical JSON. A difference the family made on purpose is explained by the adapter and
reported as such; any other difference is a mismatch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol

from .keys import CompileKey, jsonable
from .limits import ServingLimits
from .registry import WarmupRegistry

if TYPE_CHECKING:
    from rich.table import Table


def canonical(keys: Iterable[CompileKey]) -> set[str]:
    return {f"{type(key).__name__}:{key.to_json()}" for key in keys}


def keys_via_registry(limits: ServingLimits, construct: Callable[[], Any]) -> set[str]:
    """The keys a server with `limits` would compile after running `construct` (model construction)."""
    registry = WarmupRegistry(limits)
    with registry.capture():
        construct()
    return canonical(key for _, key in registry.plan().work())


class EquivalenceAdapter(Protocol):
    """What a kernel family provides to be checked (see migrate/<family>/equivalence.py)."""

    family: str
    grids: dict[str, Callable[[], list[Any]]]

    def strategy(self) -> Any: ...  # a hypothesis strategy of configurations

    def legacy_keys(self, config: Any) -> set[str]: ...

    def migrated_keys(self, config: Any) -> set[str]: ...

    def intended(self, config: Any, only_legacy: set[str], only_migrated: set[str]) -> str | None: ...


@dataclasses.dataclass
class ConfigDiff:
    config: Any
    legacy: int
    migrated: int
    only_legacy: list[str]
    only_migrated: list[str]
    intended: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"config": jsonable(self.config), "legacy_keys": self.legacy, "migrated_keys": self.migrated,
                "only_legacy": self.only_legacy, "only_migrated": self.only_migrated, "intended": self.intended}


@dataclasses.dataclass
class EquivalenceReport:
    family: str
    configs: int
    diffs: list[ConfigDiff]

    @property
    def mismatches(self) -> list[ConfigDiff]:
        return [d for d in self.diffs if d.intended is None]

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def to_dict(self) -> dict[str, Any]:
        return {"family": self.family, "configs": self.configs, "mismatches": len(self.mismatches),
                "intended_differences": len(self.diffs) - len(self.mismatches),
                "details": [d.to_dict() for d in self.diffs]}

    def table(self, limit: int = 20) -> Table:
        from rich.markup import escape
        from rich.table import Table

        verdict = "[green]equivalent[/]" if self.ok else f"[red]{len(self.mismatches)} mismatching[/]"
        table = Table(title=f"keys diff {self.family}: {self.configs} configs, {verdict}", show_lines=True)
        for column in ("config", "keys (legacy/migrated)", "only legacy", "only migrated", "verdict"):
            table.add_column(column, overflow="fold")
        for diff in (self.mismatches + [d for d in self.diffs if d.intended])[:limit]:
            table.add_row(escape(_brief(diff.config)), f"{diff.legacy}/{diff.migrated}", escape(_first(diff.only_legacy)),
                          escape(_first(diff.only_migrated)),
                          f"intended: {escape(diff.intended)}" if diff.intended else "[red]MISMATCH[/]")
        if len(self.diffs) > limit:
            table.caption = f"{len(self.diffs) - limit} more differing configs in --json"
        return table


def _brief(config: Any) -> str:
    """A config as the fields that differ from its defaults (all fields when it has none)."""
    if not dataclasses.is_dataclass(config):
        return str(config)
    parts = [f"{f.name}={getattr(config, f.name)!r}" for f in dataclasses.fields(config)
             if f.default is dataclasses.MISSING or getattr(config, f.name) != f.default]
    return ", ".join(parts)


def _first(keys: list[str], width: int = 90) -> str:
    if not keys:
        return "-"
    text = keys[0] if len(keys[0]) <= width else keys[0][: width - 1] + "…"
    return text + (f"\n(+{len(keys) - 1} more)" if len(keys) > 1 else "")


def compare(adapter: EquivalenceAdapter, configs: Iterable[Any]) -> EquivalenceReport:
    diffs, count = [], 0
    for config in configs:
        count += 1
        legacy, migrated = adapter.legacy_keys(config), adapter.migrated_keys(config)
        if legacy == migrated:
            continue
        only_legacy, only_migrated = legacy - migrated, migrated - legacy
        diffs.append(ConfigDiff(config, len(legacy), len(migrated), sorted(only_legacy), sorted(only_migrated),
                                adapter.intended(config, only_legacy, only_migrated)))
    return EquivalenceReport(adapter.family, count, diffs)


def sample_configs(adapter: EquivalenceAdapter, samples: int, seed: int) -> list[Any]:
    """`samples` configurations drawn by hypothesis from the adapter's strategy, reproducibly."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as with_seed

    drawn: list[Any] = []

    @with_seed(seed)
    @settings(max_examples=samples, database=None, deadline=None, derandomize=False,
              suppress_health_check=list(HealthCheck))
    @given(adapter.strategy())
    def draw(config: Any) -> None:
        drawn.append(config)

    draw()
    return drawn
