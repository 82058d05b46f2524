"""Kernel families and their presets: what the CLI can plan, warm and verify.

A preset is a named serving configuration (limits plus model dims). A family knows how
to construct the model's layers for a preset (the registry's capture window wraps that),
how to point its compiler backend at a cache, and how to draw in-range launches.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from contract import JitKernel, ServingLimits
from contract.equivalence import EquivalenceReport, compare, sample_configs

Launches = list[tuple[JitKernel, dict[str, Any]]]


@dataclasses.dataclass(frozen=True)
class Preset:
    name: str
    family: str
    description: str
    limits: ServingLimits
    num_layers: int = 1
    model: dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Family:
    name: str
    title: str
    backend: str
    presets: tuple[Preset, ...]
    # Build the model's layers for a preset; returns every kernel the model may launch.
    construct: Callable[[Preset], Sequence[JitKernel]]
    # Point the backend at its target and disk cache (None: the default cache); returns the cache.
    configure_backend: Callable[[Preset, Path | None], Path]
    # In-range launches for zero-JIT verification: (preset, kernels, per-kernel count, seed).
    sample_launches: Callable[[Preset, Sequence[JitKernel], int, int], Launches]
    # The key-equivalence adapter (legacy vs migrated keys over serving-config grids).
    equivalence: Callable[[], Any]


def configure_cutedsl(preset: Preset, cache_dir: Path | None) -> Path:
    """Backend set-up shared by the CuTe DSL families: target the preset's arch."""
    from contract import cutedsl_backend

    return cutedsl_backend.configure(preset.limits.arch, cache_dir)


def families() -> dict[str, Family]:
    from .fa4_mla_prefill import FAMILY as fa4
    from .inkling_rel_attention import FAMILY as inkling
    from .rocm_nvfp4 import FAMILY as rocm

    return {family.name: family for family in (rocm, fa4, inkling)}


def presets() -> dict[str, Preset]:
    return {preset.name: preset for family in families().values() for preset in family.presets}


class UnknownPresetError(KeyError):
    def __str__(self) -> str:
        return f"unknown preset {self.args[0]!r}; known: {', '.join(sorted(presets()))}"


class UnknownFamilyError(KeyError):
    def __str__(self) -> str:
        return f"unknown family {self.args[0]!r}; known: {', '.join(sorted(families()))}"


class UnknownGridError(LookupError):
    """A family's equivalence adapter has no grid of that name."""


def get_family(name: str) -> Family:
    known = families()
    if name not in known:
        raise UnknownFamilyError(name)
    return known[name]


def get_preset(name: str) -> tuple[Family, Preset]:
    known = presets()
    if name not in known:
        raise UnknownPresetError(name)
    preset = known[name]
    return families()[preset.family], preset


def key_equivalence(family_name: str, grid: str | None = "full", samples: int = 0, seed: int = 0) -> EquivalenceReport:
    """Compare one family's migrated keys with its legacy keys over a grid and/or hypothesis samples."""
    adapter = get_family(family_name).equivalence()
    if grid is not None and grid not in adapter.grids:
        raise UnknownGridError(f"{family_name} has no grid {grid!r}; grids: {', '.join(adapter.grids)}")
    configs = (adapter.grids[grid]() if grid else []) + (sample_configs(adapter, samples, seed) if samples else [])
    return compare(adapter, configs)
