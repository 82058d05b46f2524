"""Key equivalence: does the migrated kernel warm exactly what the legacy warmup did?

For each serving configuration, the legacy side lists the keys the pre-migration code
compiled: an engine release's own code run from its tree (`TreeEquivalence`), or a legacy
sweep run for real. The migrated side goes the whole way a server goes (registration
gates inside model construction, the registry, expansion): the family's own modules via
`keys_via_registry`, or a migrated engine tree. Keys compare in canonical JSON. A
difference made on purpose is explained by one of the adapter's rules, written from the
legacy code's own facts, each with its evidence; any other difference is a mismatch.
"""

from __future__ import annotations

import dataclasses
import functools
import multiprocessing
import subprocess
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Protocol

from zerojit.contract.keys import CompileKey, jsonable
from zerojit.contract.limits import ServingLimits
from zerojit.contract.registry import WarmupRegistry

from .construction import ConstructionBroken
from .warmup import EngineFamily, TreeWarmup


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
    legacy_source: str  # what the legacy side runs, as the report names it
    migrated_source: str

    def strategy(self) -> Any: ...  # a hypothesis strategy of configurations

    def legacy_keys(self, config: Any) -> set[str]: ...

    def migrated_keys(self, config: Any) -> set[str]: ...

    def intended(self, config: Any, legacy: set[str], migrated: set[str]) -> str | None: ...  # why they differ


# What a report says it covered: how many configs had each value of these fields (those a config has).
COVERAGE_FIELDS = ("arch", "tp_size", "dtype", "kv_cache_dtype", "num_sms", "scheduler")


@dataclasses.dataclass
class ConfigDiff:
    config: Any
    legacy: int
    migrated: int
    only_legacy: list[str]
    only_migrated: list[str]
    intended: str | None
    broken: str | None = None  # how the migrated tree's construction registers wrongly (its keys: none)

    def to_dict(self) -> dict[str, Any]:
        return {
            "config": jsonable(self.config),
            "legacy_keys": self.legacy,
            "migrated_keys": self.migrated,
            "only_legacy": self.only_legacy,
            "only_migrated": self.only_migrated,
            "intended": self.intended,
            "broken": self.broken,
        }


@dataclasses.dataclass
class EquivalenceReport:
    family: str
    configs: int
    diffs: list[ConfigDiff]
    legacy_source: str = ""
    migrated_source: str = ""
    coverage: dict[str, dict[str, int]] = dataclasses.field(default_factory=dict)  # field -> value -> configs
    inputs: dict[str, Any] = dataclasses.field(default_factory=dict)  # the grid, samples and seed drawn from
    # Engine-config fields no config of the grid sets that the trees read, each at the tree's own default
    # ("vllm_config.parallel_config.tensor_parallel_size = 1"): the check ran at those values only.
    defaults: tuple[str, ...] = ()

    @property
    def mismatches(self) -> list[ConfigDiff]:
        return [d for d in self.diffs if d.intended is None]

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def to_dict(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "legacy_source": self.legacy_source,
            "migrated_source": self.migrated_source,
            "configs": self.configs,
            "inputs": self.inputs,
            "coverage": self.coverage,
            "defaults": list(self.defaults),
            "mismatches": len(self.mismatches),
            "intended_differences": len(self.diffs) - len(self.mismatches),
            "details": [d.to_dict() for d in self.diffs],
        }

    def covered(self) -> str:
        """One line per covered field: `arch: sm90 x12, sm100 x12`, then what the configs were drawn from."""
        lines = [
            f"{field}: " + ", ".join(f"{value} x{count}" for value, count in values.items())
            for field, values in self.coverage.items()
        ]
        drawn = ", ".join(f"{name} {value}" for name, value in self.inputs.items() if value is not None)
        lines += [f"drawn from: {drawn}"] if drawn else []
        return "\n".join(lines + ([f"at the tree's defaults: {', '.join(self.defaults)}"] if self.defaults else []))


def compare(
    adapter: EquivalenceAdapter,
    configs: Iterable[Any],
    inputs: dict[str, Any] | None = None,
    jobs: int = 1,
    rebuild: Callable[[], EquivalenceAdapter] | None = None,
) -> EquivalenceReport:
    """Legacy vs migrated keys for each config; `inputs` (grid, samples, seed) is recorded as given.

    With `jobs` > 1 and `rebuild` (a picklable function making the same adapter), the configs are
    compared in that many worker processes, every `jobs`-th config in each, each worker with its
    own adapter (engine trees load once per worker); the report is the one a single process makes.
    """
    configs = list(configs)
    if jobs > 1 and rebuild is not None and len(configs) > 1:
        parts = [list(enumerate(configs))[start::jobs] for start in range(jobs)]
        with ProcessPoolExecutor(min(jobs, len(configs)), mp_context=multiprocessing.get_context("fork")) as pool:
            parts = list(pool.map(_diff_part, [rebuild] * jobs, parts))
        found = sorted((pair for pairs, _ in parts for pair in pairs), key=lambda pair: pair[0])
        diffs = [diff for _, diff in found]
        defaults = set().union(*(read for _, read in parts))
    else:
        diffs = [diff for config in configs if (diff := config_diff(adapter, config)) is not None]
        defaults = _defaults_read(adapter)
    coverage: dict[str, dict[str, int]] = {}
    for config in configs:
        for field in COVERAGE_FIELDS:
            if hasattr(config, field):
                value, values = str(getattr(config, field)), coverage.setdefault(field, {})
                values[value] = values.get(value, 0) + 1
    return EquivalenceReport(
        adapter.family,
        len(configs),
        diffs,
        adapter.legacy_source,
        adapter.migrated_source,
        coverage,
        dict(inputs or {}),
        tuple(sorted(defaults)),
    )


def config_diff(adapter: EquivalenceAdapter, config: Any) -> ConfigDiff | None:
    """How one config's legacy and migrated keys differ (None: they are the same). A migrated construction that
    registers wrongly is an unexplained difference, whatever keys its other paths make."""
    legacy = adapter.legacy_keys(config)
    try:
        migrated = adapter.migrated_keys(config)
    except ConstructionBroken as broken:
        return ConfigDiff(config, len(legacy), 0, sorted(legacy), [], None, str(broken))
    if legacy == migrated:
        return None
    return ConfigDiff(
        config,
        len(legacy),
        len(migrated),
        sorted(legacy - migrated),
        sorted(migrated - legacy),
        adapter.intended(config, legacy, migrated),
    )


def _diff_part(
    rebuild: Callable[[], EquivalenceAdapter], part: list[tuple[int, Any]]
) -> tuple[list[tuple[int, ConfigDiff]], set[str]]:
    """A worker's share of `compare`: (index, diff) of each of its configs that differ, and the defaults read."""
    adapter = rebuild()
    pairs = [(index, diff) for index, config in part if (diff := config_diff(adapter, config)) is not None]
    return pairs, _defaults_read(adapter)


def _defaults_read(adapter: EquivalenceAdapter) -> set[str]:
    """The engine-config defaults the adapter's engine trees read (none for an adapter that runs no tree)."""
    trees = [adapter.__dict__.get(side) for side in ("legacy", "migrated")]  # only those it opened
    return set().union(*(tree.configs.read for tree in trees if isinstance(tree, TreeWarmup)))


class TreeEquivalence:
    """An adapter whose legacy side is an engine release's own code, run from its source tree.

    The family gives its engine description (`engine`, see migrate/engine_trees/warmup.py), its
    migration spec, the release its migration starts from and `family_keys(config)` (its own
    migrated keys). With `migrated_tree`, the migrated side is that tree instead: the
    registration gates and key logic as a migration left them, run the same way.
    """

    family: str
    spec: Any
    engine: EngineFamily
    legacy_release: str
    # Each tree's kernels compile for real, into what the family records at the compile (its own keys then);
    # else the contract's compile records each key.
    run_compiles = False

    def __init__(self, legacy_tree: Path | None = None, migrated_tree: Path | None = None):
        self._legacy_tree, self._migrated_tree = legacy_tree, migrated_tree  # opened on first use

    @functools.cached_property
    def legacy(self) -> TreeWarmup:
        tree = self._legacy_tree
        if tree is None:
            from zerojit.migrate.engine_trees.releases import vllm_tree

            try:
                tree = vllm_tree(self.legacy_release)
            except (OSError, subprocess.CalledProcessError, StopIteration) as exc:
                raise FileNotFoundError(
                    f"the legacy side runs vLLM {self.legacy_release}'s own code, and its sources could not be "
                    f"fetched ({exc}); pass --legacy-tree PATH to a checkout of it"
                ) from None
        return TreeWarmup(tree, self.spec, self.engine, run_compiles=self.run_compiles)

    @functools.cached_property
    def migrated(self) -> TreeWarmup | None:
        if self._migrated_tree is None:
            return None
        return TreeWarmup(self._migrated_tree, self.spec, self.engine, run_compiles=self.run_compiles)

    @property
    def legacy_source(self) -> str:
        return f"standalone warmup of {self.legacy.describe()}"

    @property
    def migrated_source(self) -> str:
        if self.migrated is None:
            return "zerojit's migrated family modules"
        return f"what {self.migrated.describe()} warms (registrations and any standalone step)"

    def legacy_keys(self, config: Any) -> set[str]:
        return canonical(self.legacy.standalone_keys(config))

    def migrated_keys(self, config: Any) -> set[str]:
        if self.migrated is not None:
            return canonical(self.migrated.warmed_keys(config))
        return self.family_keys(config)

    def family_keys(self, config: Any) -> set[str]:
        raise FileNotFoundError(
            f"{self.family} has no family modules of its own: its migrated side is a migrated engine tree "
            "(pass --migrated-tree)"
        )

    def intended(self, config: Any, legacy: set[str], migrated: set[str]) -> str | None:
        """What every migration to registrations changes: with JIT warmup off the registry does not run."""
        if not config.enable_jit_warmup and not migrated:
            return (
                "JIT warmup is off: vLLM's orchestrator runs the standalone step regardless, the contract's "
                "registry does not run"
            )
        return None


def sample_configs(adapter: EquivalenceAdapter, samples: int, seed: int) -> list[Any]:
    """`samples` configurations drawn by hypothesis from the adapter's strategy, reproducibly."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as with_seed

    drawn: list[Any] = []

    @with_seed(seed)
    @settings(
        max_examples=samples, database=None, deadline=None, derandomize=False, suppress_health_check=list(HealthCheck)
    )
    @given(adapter.strategy())
    def draw(config: Any) -> None:
        drawn.append(config)

    draw()
    return drawn
