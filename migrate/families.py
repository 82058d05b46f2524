"""Kernel families, the plug-in unit of zerojit, and the one place that plans, warms and verifies a preset.

A family is found through the entry-point group `zerojit.families` (the built-in ones
register the same way as an engine's own): each entry names a `Family` object, which
carries its compiler backend (a `zerojit.contract.backends.Backend`), its presets (named
serving configurations, each with a model of the family's own `preset_model` type), how to
build the model's layers for a preset (the registry's capture window wraps that), how to
draw in-range launches, its key-equivalence adapter and its migration specs. The CLI,
cooperative ranks, the pytest plugin and the benches all go through `plan_preset`,
`warm_preset` and `verify_preset` here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import shutil
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from zerojit.codemods.spec import MigrationSpec
from zerojit.contract import (
    CoverageReport,
    JitKernel,
    Parallelism,
    ServingLimits,
    WarmupPlan,
    WarmupRegistry,
    execute,
    verify_zero_jit,
)
from zerojit.contract.backends import Backend
from zerojit.contract.cache import (
    ArtifactProblem,
    CacheDir,
    CacheDirError,
    CacheWarning,
    check_artifacts,
    default_cache_dir,
    fingerprint_mismatch,
    open_cache_dir,
    read_fingerprint,
    read_history,
    record_results,
    warming,
)
from zerojit.contract.executor import Progress, start_workers

if TYPE_CHECKING:
    from zerojit.codemods.runner import MigrationResult
    from zerojit.contract import WarmupReport
    from zerojit.migrate.engine_trees.equivalence import EquivalenceReport

ENTRY_POINT_GROUP = "zerojit.families"
MAX_LAUNCHES = 100_000  # per kernel, for verification: far beyond any useful sample, far below memory trouble

Launches = list[tuple[JitKernel, dict[str, Any]]]
ModelT = TypeVar("ModelT")


@dataclasses.dataclass(frozen=True)
class Preset(Generic[ModelT]):
    """A named serving configuration of one family: the engine's limits and what the family's model needs."""

    name: str
    family: str
    description: str
    limits: ServingLimits
    num_layers: int = 1
    model: ModelT | None = None  # an instance of the family's `preset_model` (one dataclass per family)


@dataclasses.dataclass(frozen=True)
class Family:
    """A kernel family: its backend, presets, model construction, launch sampler, equivalence adapter and specs."""

    name: str
    title: str
    backend: Backend
    presets: tuple[Preset, ...]
    # Build the model's layers for a preset; returns every kernel the model may launch.
    construct: Callable[[Preset], Sequence[JitKernel]]
    # In-range launches for zero-JIT verification: (preset, kernels, per-kernel count, seed).
    sample_launches: Callable[[Preset, Sequence[JitKernel], int, int], Launches]
    # The dataclass every preset's `model` is (None: the family's presets carry no model).
    preset_model: type | None = None
    # "module:Class" of the key-equivalence adapter, imported only when asked for (it may load engine trees).
    equivalence: str | None = None
    # The migration specs `zerojit migrate FAMILY` applies.
    specs: tuple[MigrationSpec, ...] = ()

    def __post_init__(self) -> None:
        for preset in self.presets:
            if preset.family != self.name:
                raise TypeError(f"preset {preset.name!r} names family {preset.family!r}, not {self.name!r}")
            if self.preset_model is not None and not isinstance(preset.model, self.preset_model):
                raise TypeError(
                    f"preset {preset.name!r}: model must be a {self.preset_model.__name__}, "
                    f"not {type(preset.model).__name__}"
                )

    @property
    def backend_name(self) -> str:
        return self.backend.NAME

    @property
    def loads(self) -> tuple[str, ...]:
        """The suffixes of the cache files its backend's compiles load (`Backend.LOADS`; a family's own backend may
        declare none)."""
        return getattr(self.backend, "LOADS", ())

    def configure_backend(self, preset: Preset, cache_dir: Path) -> Path:
        """Point the backend at the preset's target and at a (vetted) disk cache directory."""
        return self.backend.configure(preset.limits.arch, cache_dir)

    def fingerprint(self) -> dict[str, str]:
        """What a cache this family's backend compiled is only valid for (once the backend is configured)."""
        return self.backend.fingerprint()

    def equivalence_adapter(self) -> Any:
        """A new key-equivalence adapter (legacy vs migrated keys over serving-config grids), or None."""
        if self.equivalence is None:
            return None
        module, _, attribute = self.equivalence.partition(":")
        return getattr(importlib.import_module(module), attribute)()


class FamilyError(LookupError):
    """An unknown family, preset or grid (one line, naming the known ones)."""

    def __str__(self) -> str:
        return str(self.args[0])


class FamilyPluginWarning(UserWarning):
    """A `zerojit.families` entry point could not be used; the others still are."""


@functools.cache
def families() -> dict[str, Family]:
    """Every family the installed distributions declare, by name (a broken plug-in is skipped with a warning)."""
    found: dict[str, Family] = {}
    for entry in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        try:
            family = entry.load()
        except Exception as exc:  # noqa: BLE001 - someone else's plug-in must not take the CLI down
            warnings.warn(
                f"family plug-in {entry.name!r} ({entry.value}) failed to load: {type(exc).__name__}: {exc}",
                FamilyPluginWarning,
                stacklevel=2,
            )
            continue
        if not isinstance(family, Family):
            warnings.warn(
                f"family plug-in {entry.name!r} ({entry.value}) is a {type(family).__name__}, not a "
                "zerojit.migrate.families.Family",
                FamilyPluginWarning,
                stacklevel=2,
            )
        elif family.name in found:
            warnings.warn(
                f"family {family.name!r} is declared twice; {entry.value} is ignored", FamilyPluginWarning, stacklevel=2
            )
        else:
            found[family.name] = family
    return found


def presets() -> dict[str, tuple[Family, Preset]]:
    return {preset.name: (family, preset) for family in families().values() for preset in family.presets}


def get_family(name: str) -> Family:
    known = families()
    if name not in known:
        raise FamilyError(f"unknown family {name!r}; known: {', '.join(sorted(known))}")
    return known[name]


def get_preset(name: str) -> tuple[Family, Preset]:
    known = presets()
    if name not in known:
        raise FamilyError(f"unknown preset {name!r}; known: {', '.join(sorted(known))}")
    return known[name]


def migration_specs() -> dict[str, MigrationSpec]:
    """The built-in specs, by spec family name: every installed family's, and those whose kernels have no room
    (engine_specs, and the lifted Triton kernels of triton_lifts)."""
    from .engine_specs import SPECS
    from .triton_lifts.specs import SPECS as LIFTS

    return {
        spec.family: spec for spec in (*SPECS, *LIFTS, *(s for family in families().values() for s in family.specs))
    }


def equivalence_adapter(name: str) -> Any:
    """A new key-equivalence adapter for a family or a built-in migration (None: it has none); unknown: FamilyError."""
    from .engine_specs import EQUIVALENCES as SPEC_EQUIVALENCES
    from .triton_lifts.specs import EQUIVALENCES as LIFT_EQUIVALENCES

    built_in = LIFT_EQUIVALENCES | SPEC_EQUIVALENCES
    if name in built_in:
        module, _, attribute = built_in[name].partition(":")
        return getattr(importlib.import_module(module), attribute)()
    if name not in families():
        raise FamilyError(
            f"unknown family {name!r}; known: {', '.join(sorted(families()))}; built-in migrations: "
            f"{', '.join(sorted(built_in))}"
        )
    return get_family(name).equivalence_adapter()


def plan_preset(family: Family, preset: Preset) -> tuple[WarmupPlan, Sequence[JitKernel]]:
    """Build the preset's model inside a capture window; return the plan and the model's kernels."""
    registry = WarmupRegistry(preset.limits)
    with registry.capture():
        kernels = family.construct(preset)
    return registry.plan(), kernels


def preset_variants(family: Family, preset: Preset, plan: WarmupPlan, cache_dir: Path | None = None) -> dict[str, int]:
    """Distinct backend variants per kernel of a plan (the backend is configured on the cache to resolve them)."""
    cache = open_cache_dir(
        cache_dir if cache_dir is not None else default_cache_dir(family.backend_name), family.backend_name
    )
    family.configure_backend(preset, cache.path)
    return {planned.kernel.name: len({planned.kernel.variant(key) for key in planned.keys}) for planned in plan.kernels}


@dataclasses.dataclass
class WarmupRun:
    plan: WarmupPlan
    kernels: Sequence[JitKernel]
    report: WarmupReport
    cache: CacheDir
    artifact_problems: list[ArtifactProblem]
    require_baked: bool = False
    bake: str | None = None  # one line on whether the cache's bake applies here (None: not a bake)

    @property
    def unbaked_compiles(self) -> int:
        """Keys that compiled although the cache was required to hold them all (0 unless require_baked)."""
        return self.report.count("compiled") if self.require_baked else 0


def warm_preset(
    family: Family,
    preset: Preset,
    *,
    jobs: int = 1,
    cache_dir: Path | None = None,
    progress: Progress | None = None,
    cooperative: bool = False,
    require_baked: bool = False,
    start: str = "forkserver",
    time_slice: bool = True,
    on_wait: Callable[[], None] | None = None,
) -> WarmupRun:
    """Compile every planned key of a preset (compile-only) into a vetted cache directory.

    The warmup holds the cache from its check to its record (`contract.cache.warming`): another warmup of the same
    cache waits for it (`on_wait` runs once if this one has to), then loads what it compiled.

    Everything that could fail at the end (cache dir, a read-only cache that would need writing)
    is checked before the first compile and raises CacheDirError.
    Cached artifacts that no longer match the key they were stored for are removed and
    recompiled (listed in `artifact_problems`). A cache baked elsewhere is checked against this
    environment (`fingerprint_mismatch`): a mismatch is a warning, or with `require_baked` an
    error before anything compiles — as is a planned key the bake lacks; a compile that still
    happens is counted in `unbaked_compiles`. `cooperative`: this process is one rank of a
    torch.distributed group that splits the plan (contract.cooperative). `progress`: told of each key
    (`execute`); `start`, `time_slice`: the compile workers' design (`contract.workers.Workers`).
    """
    cache = open_cache_dir(
        cache_dir if cache_dir is not None else default_cache_dir(family.backend_name), family.backend_name
    )
    # Cooperative ranks share the cache their parent holds (migrate.ranks) for the whole cooperative run.
    with contextlib.nullcontext() if cooperative else warming(cache, on_wait):
        return _warm(family, preset, cache, jobs, progress, cooperative, require_baked, start, time_slice)


def _warm(
    family: Family,
    preset: Preset,
    cache: CacheDir,
    jobs: int,
    progress: Progress | None,
    cooperative: bool,
    require_baked: bool,
    start: str,
    time_slice: bool,
) -> WarmupRun:
    """`warm_preset` in a cache this process holds."""
    started = time.perf_counter()
    plan, kernels = plan_preset(family, preset)
    # Cooperative ranks start unsynchronized: a late rank would judge an early one's fresh compiles as untrusted.
    problems, uncovered = check_artifacts(cache, plan, remove=not (require_baked or cooperative), loads=family.loads)
    if require_baked and (uncovered or problems):
        missing = (
            f"{problems[0]}".removesuffix("; recompiled") if problems else f"{uncovered} planned keys are not in it"
        )
        raise CacheDirError(f"--require-baked: the cache at {cache.path} does not hold this preset: {missing}")
    setup = (family.backend.configure, (preset.limits.arch, cache.path))  # picklable: a worker runs it first
    to_compile = uncovered + sum(problem.kernel is not None for problem in problems)
    # Compiles are coming: start the workers now (their forkserver imports the DSL while this process does).
    pool = (
        start_workers(jobs, setup, to_compile, start=start, time_slice=time_slice)
        if not cooperative
        and jobs > 1
        and to_compile > 1
        and any(p.kernel.parallelism is Parallelism.PROCESSES for p in plan.kernels)
        else None
    )
    planned = time.perf_counter()
    checked: dict[str, Any] = {}

    def set_up_here() -> None:
        """This process's backend, for its loads and the bake's fingerprint (while the workers compile)."""
        family.configure_backend(preset, cache.path)
        checked["here"] = here = family.fingerprint()
        checked["bake"] = _check_bake(cache, read_fingerprint(cache), here, require_baked)

    try:
        if cooperative:
            from zerojit.contract.cooperative import cooperative_execute

            set_up_here()
            report = cooperative_execute(plan)
        else:
            report = execute(
                plan,
                jobs=jobs,
                progress=progress,
                history=read_history(cache),
                process_setup=setup,
                pool=pool,
                meanwhile=set_up_here,
                start=start,
                time_slice=time_slice,
            )
    except BaseException:
        if pool is not None:  # an error or an interrupt before the workers were handed over: nothing waits for them
            pool.cancel()
        raise
    finally:
        if pool is not None:
            pool.close()
    report.phases = {"plan": planned - started, **report.phases}  # planning and the cache's check came first
    here, bake = checked["here"], checked["bake"]
    record_results(cache, report, here, peers_compile=cooperative)
    return WarmupRun(plan, kernels, report, cache, problems, require_baked, bake)


def _check_bake(cache: CacheDir, baked: dict[str, str], here: dict[str, str], required: bool) -> str | None:
    """One line on whether the cache's fingerprint applies here (a warning when not); with `required`, refuse it."""
    mismatch = fingerprint_mismatch(baked, here) if baked else None
    if required and not baked:
        raise CacheDirError(
            f"--require-baked: the cache at {cache.path} has no bake fingerprint (zerojit bake makes one)"
        )
    if mismatch and required:
        raise CacheDirError(f"--require-baked: the cache at {cache.path} does not apply here: {mismatch}")
    if mismatch:
        warnings.warn(
            f"the cache at {cache.path} does not apply here ({mismatch}): what it holds will recompile",
            CacheWarning,
            stacklevel=3,
        )
        return None
    return (
        f"the cache at {cache.path} applies here ({', '.join(f'{k} {v}' for k, v in baked.items())})" if baked else None
    )


def verify_preset(
    family: Family,
    preset: Preset,
    *,
    launches: int,
    seed: int,
    cache_dir: Path | None = None,
    progress: Progress | None = None,
) -> tuple[WarmupRun, CoverageReport]:
    """Warm the preset, then prove that `launches` random in-range launches per kernel compile nothing."""
    if not 1 <= launches <= MAX_LAUNCHES:
        raise FamilyError(f"--launches must be between 1 and {MAX_LAUNCHES}, not {launches}")
    run = warm_preset(family, preset, cache_dir=cache_dir, progress=progress)
    coverage = verify_zero_jit(run.kernels, family.sample_launches(preset, run.kernels, launches, seed))
    return run, coverage


def key_equivalence(
    family_name: str,
    grid: str | None = "full",
    samples: int = 0,
    seed: int = 0,
    legacy_tree: Path | None = None,
    migrated_tree: Path | None = None,
    jobs: int = 1,
) -> EquivalenceReport:
    """Compare one family's migrated keys with its legacy keys over a grid and/or hypothesis samples.

    `legacy_tree` / `migrated_tree`: engine source trees to run the legacy side from (instead
    of the release the family's migration starts from) and the migrated side from (instead
    of the family's own modules), for families whose legacy side is engine code.
    `jobs`: configs compared in this many processes, each with its own adapter (the same report).
    """
    from zerojit.migrate.engine_trees.equivalence import compare, sample_configs  # offline: loads engine trees

    adapter = build_adapter(family_name, legacy_tree, migrated_tree)
    if grid is not None and grid not in adapter.grids:
        raise FamilyError(f"{family_name} has no grid {grid!r}; grids: {', '.join(adapter.grids)}")
    configs = (adapter.grids[grid]() if grid else []) + (sample_configs(adapter, samples, seed) if samples else [])
    if not configs:
        source = f"grid {grid!r} holds no configs" if grid else "no grid"
        raise FamilyError(f"{family_name}: nothing to compare ({source}, and no --samples)")
    return compare(
        adapter,
        configs,
        {"grid": grid, "samples": samples, "seed": seed if samples else None},
        jobs=jobs,
        rebuild=functools.partial(build_adapter, family_name, legacy_tree, migrated_tree),
    )


def build_adapter(family_name: str, legacy_tree: Path | None = None, migrated_tree: Path | None = None) -> Any:
    """A family's key-equivalence adapter, running its legacy (migrated) side from the tree given, if any."""
    from zerojit.migrate.engine_trees.equivalence import TreeEquivalence

    adapter = equivalence_adapter(family_name)
    if adapter is None:
        raise FamilyError(f"family {family_name!r} has no key-equivalence adapter")
    trees = {name: tree for name, tree in (("legacy_tree", legacy_tree), ("migrated_tree", migrated_tree)) if tree}
    if trees and not isinstance(adapter, TreeEquivalence):
        raise FamilyError(
            f"family {family_name!r} has no engine-tree legacy side; --legacy-tree/--migrated-tree "
            "apply to families whose legacy warmup is engine code"
        )
    return type(adapter)(**trees) if trees else adapter


def migration_keys_check(result: MigrationResult, grid: str = "smoke") -> dict[str, EquivalenceReport | None]:
    """Keys before vs after a planned migration, for each migrated family whose legacy side is engine code.

    The tree as it is now is the legacy side; a temporary copy of its changed packages with
    the planned changes applied is the migrated side (nothing in the repo is touched). None
    for a family without an engine-tree adapter, or a spec without a family room.
    """
    from zerojit.migrate.engine_trees.equivalence import TreeEquivalence

    reports: dict[str, EquivalenceReport | None] = {}
    with tempfile.TemporaryDirectory(prefix="zerojit-verify-keys-") as temporary:
        after = Path(temporary)
        for package in sorted({change.path.relative_to(result.repo).parts[0] for change in result.changes}):
            shutil.copytree(result.repo / package, after / package, ignore=shutil.ignore_patterns("__pycache__"))
        for change in result.changes:
            target = after / change.path.relative_to(result.repo)
            if change.after is None:
                target.unlink()
            else:
                target.write_text(change.after, encoding="utf-8")
        for name in result.families:
            try:
                adapter = equivalence_adapter(name)
            except FamilyError:
                adapter = None  # a spec without a family room or a lift of its own (engine_specs) has no adapter
            tree_based = isinstance(adapter, TreeEquivalence)
            reports[name] = (
                key_equivalence(name, grid, legacy_tree=result.repo, migrated_tree=after) if tree_based else None
            )
    return reports
