"""Compiler backends: one module per JIT DSL, each implementing the `Backend` protocol as its module API.

cutedsl.py  CuTe DSL / FlashAttention-4 under FakeTensorMode (sm_90a, sm_100a)
flydsl.py   FlyDSL in compile-only mode (gfx950), with the ziglang LLD
triton.py   Triton through a compile-only driver (sm_90, sm_100)

A backend module is the implementation (PEP 544: modules may implement protocols), so a
family names its backend by the module (`backend=cutedsl`) and shared code calls the same
operations on all of them. A family that brings its own DSL brings a module (or any object)
with these members; a family whose kernels span built-in DSLs that can share a process names
them `Together` (FlyDSL's TurboQuant decode and the Triton reduction its launcher runs next).
Importing a backend module imports no DSL: each loads its DSL when asked.
"""

from __future__ import annotations

import dataclasses
import importlib
import sys
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..kernel import Outcome, Parallelism

BUILT_IN = ("cutedsl", "flydsl", "triton")


@runtime_checkable
class Backend(Protocol):
    NAME: str  # the backend's name: a kernel's `backend`, the cache's subfolder, the bake's folder
    DSL_MODULE: str  # the DSL's top-level module: in sys.modules means this process loaded it
    PARALLELISM: Parallelism  # how its kernels' compiles may overlap by default
    # Suffixes of the cache files its compiles load: one that no manifest entry names is removed before a compile
    # could load it (contract.cache.check_artifacts). Optional for a family's own backend (then nothing is).
    LOADS: tuple[str, ...]

    def configure(self, arch: str, cache_dir: Path | None = None) -> Path:
        """Target `arch` with the DSL's disk cache under `cache_dir` (refused once the process targets another)."""

    def fingerprint(self) -> dict[str, str]:
        """What a cache this backend compiled is only valid for (called once configured)."""

    def install_compile_hook(self) -> None:
        """Hook the DSL's compile entry point once, so real compiles are counted and reach the JIT monitors."""

    def compiled_during(self, handle: Any, *args: Any, **kwargs: Any) -> Outcome:
        """Run one compile-only call for `handle` (what the backend books variants to); say whether it compiled."""

    def variant_count(self, handle: Any) -> int:
        """Variants this process holds for `handle`."""


def built_in(name: str) -> Backend:
    """A built-in backend by name."""
    if name not in BUILT_IN:
        raise KeyError(f"unknown backend {name!r}; built in: {', '.join(BUILT_IN)}")
    return importlib.import_module(f"{__name__}.{name}")  # type: ignore[return-value]  # modules implement it


def loaded() -> list[Backend]:
    """The built-in backends whose DSL this process has loaded (hooking one that is not loaded could load it, and
    FlyDSL and CuTe DSL cannot share a process)."""
    found = [built_in(name) for name in BUILT_IN]
    return [backend for backend in found if backend.DSL_MODULE in sys.modules]


@dataclasses.dataclass(frozen=True)
class Together:
    """Built-in backends whose kernels compile in one process, into one cache folder (each DSL keeps its own
    files apart: FlyDSL's `<key>.pkl`, Triton's hash folders). Named by the members' names, so it is picklable
    for a worker's setup, and its cache and bake folder ("flydsl+triton") is no member's alone."""

    names: tuple[str, ...]

    def __post_init__(self) -> None:
        if {"flydsl", "cutedsl"} <= set(self.names):
            raise ValueError("FlyDSL and CuTe DSL cannot share a process (their MLIR runtimes collide)")
        for name in self.names:
            built_in(name)

    @property
    def members(self) -> list[Backend]:
        return [built_in(name) for name in self.names]

    @property
    def NAME(self) -> str:  # noqa: N802 - the protocol's name
        return "+".join(self.names)

    @property
    def DSL_MODULE(self) -> str:  # noqa: N802
        return self.members[0].DSL_MODULE

    @property
    def PARALLELISM(self) -> Parallelism:  # noqa: N802
        return self.members[0].PARALLELISM

    @property
    def LOADS(self) -> tuple[str, ...]:  # noqa: N802
        return tuple(dict.fromkeys(suffix for member in self.members for suffix in member.LOADS))

    def configure(self, arch: str, cache_dir: Path | None = None) -> Path:
        """Every member targets `arch` with its disk cache in the same folder (the first member's default)."""
        cache = self.members[0].configure(arch, cache_dir)
        for member in self.members[1:]:
            member.configure(arch, cache)
        return cache

    def fingerprint(self) -> dict[str, str]:
        return {key: value for member in self.members for key, value in member.fingerprint().items()}

    def install_compile_hook(self) -> None:
        for member in self.members:
            member.install_compile_hook()

    def compiled_during(self, handle: Any, *args: Any, **kwargs: Any) -> Outcome:
        return self._owner(handle).compiled_during(handle, *args, **kwargs)

    def variant_count(self, handle: Any) -> int:
        return self._owner(handle).variant_count(handle)

    def _owner(self, handle: Any) -> Backend:
        """The member whose DSL made `handle` (by the module its class comes from)."""
        root = type(handle).__module__.split(".")[0]
        for member in self.members:
            if member.DSL_MODULE == root:
                return member
        raise TypeError(f"{type(handle).__name__} belongs to none of {self.NAME}")
