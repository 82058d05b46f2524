"""Zero-JIT coverage: after warmup, in-range launches must never grow a kernel's cache.

The caller supplies the launches (a family knows how to draw realistic ones from its
limits); each runs through the kernel's own runtime path, compile-only. A launch whose
variant was not warmed grows the variant count, and is reported with the key it needed.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .keys import jsonable
from .monitor import JitAfterWarmupWarning, JitMonitor, PostWarmupCompile

if TYPE_CHECKING:
    from .kernel import JitKernel


@dataclasses.dataclass
class KernelCoverage:
    name: str
    variants_before: int
    variants_after: int = 0
    launches: int = 0
    missed_keys: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    @property
    def grew(self) -> bool:
        return self.variants_after > self.variants_before


@dataclasses.dataclass
class CoverageReport:
    kernels: list[KernelCoverage]
    compiles: list[PostWarmupCompile] = dataclasses.field(default_factory=list)  # what the JIT monitors saw

    @property
    def launches(self) -> int:
        return sum(k.launches for k in self.kernels)

    @property
    def cache_growth(self) -> int:
        return sum(k.variants_after - k.variants_before for k in self.kernels)

    @property
    def ok(self) -> bool:
        return self.cache_growth == 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "launches": self.launches,
            "cache_growth": self.cache_growth,
            "launchers": [
                {
                    "name": k.name,
                    "variants": k.variants_after,
                    "launches": k.launches,
                    "grew": k.grew,
                    "missed_keys": k.missed_keys,
                }
                for k in self.kernels
            ],
            "post_warmup_compiles": [dataclasses.asdict(event) for event in self.compiles],
        }


def verify_zero_jit(
    kernels: Sequence[JitKernel], launches: Iterable[tuple[JitKernel, dict[str, Any]]]
) -> CoverageReport:
    """Run `launches` through each kernel's runtime path and report any cache growth.

    A JIT monitor is armed meanwhile, so compiles are also caught where they happen
    (backend, kernel, specialization), not only counted afterwards.
    """
    coverage = {id(k): KernelCoverage(k.name, k.variant_count()) for k in kernels}
    monitor = JitMonitor("warn")
    with monitor.armed(), warnings.catch_warnings():
        warnings.simplefilter("ignore", JitAfterWarmupWarning)
        for kernel, inputs in launches:
            entry = coverage[id(kernel)]
            before = kernel.variant_count()
            key = kernel.launch(**inputs)
            entry.launches += 1
            if kernel.variant_count() > before and key is not None:
                entry.missed_keys.append({"inputs": jsonable(inputs), "key": key.as_dict()})
    for kernel in kernels:
        coverage[id(kernel)].variants_after = kernel.variant_count()
    return CoverageReport(list(coverage.values()), monitor.events)
