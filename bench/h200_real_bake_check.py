"""On a real GPU: load a baked (compile-only, fake-tensor) cache and serve real launches from it.

    python3 bench/h200_real_bake_check.py PRESET CACHE_DIR LAUNCHES SEED

Configures the preset's backend on the baked cache, then runs the warmup and the preset's
sampled launches with real CUDA tensors (zero-filled, so every sequence is empty and every
launch is safe) instead of fake ones, counting real `cute.compile` calls and FA4 variant
growth. Prints one JSON line: keys, compiles during the warmup, launches, compiles during the
launches, variant growth.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import torch

from zerojit.contract import execute, verify_zero_jit
from zerojit.contract.backends import cutedsl as cutedsl_backend
from zerojit.migrate.families import get_preset, plan_preset


@contextlib.contextmanager
def real_zeroed_cuda() -> Iterator[None]:
    """Stands in for fake_cuda: tensors are real, on the GPU, and zero (empty sequences, in-range indices)."""
    empty, empty_strided = torch.empty, torch.empty_strided

    def zeroed(*args, **kwargs):
        return empty(*args, **kwargs).zero_()

    def zeroed_strided(*args, **kwargs):
        return empty_strided(*args, **kwargs).zero_()

    torch.empty, torch.empty_strided = zeroed, zeroed_strided
    try:
        yield
    finally:
        torch.empty, torch.empty_strided = empty, empty_strided


def main() -> None:
    preset_name, cache, launches, seed = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    family, preset = get_preset(preset_name)
    plan, kernels = plan_preset(family, preset)
    family.configure_backend(preset, cache)
    cutedsl_backend.fake_cuda = real_zeroed_cuda
    import cutlass.cute

    compiles: list[str] = []
    counted = cutlass.cute.compile

    def counting(kernel, *args, **kwargs):
        compiles.append(getattr(kernel, "__name__", type(kernel).__name__))
        return counted(kernel, *args, **kwargs)

    cutlass.cute.compile = counting
    report = execute(plan)
    warmup_compiles = len(compiles)
    coverage = verify_zero_jit(kernels, family.sample_launches(preset, kernels, launches, seed))
    torch.cuda.synchronize()
    print(
        json.dumps(
            {
                "preset": preset_name,
                "gpu": torch.cuda.get_device_name(),
                "keys": plan.total_keys,
                "failed": report.count("failed"),
                "warmup_compiles": warmup_compiles,
                "launches": coverage.launches,
                "launch_compiles": len(compiles) - warmup_compiles,
                "variant_growth": coverage.cache_growth,
                "failures": [f.cause for f in report.failures][:3],
            }
        )
    )


if __name__ == "__main__":
    main()
