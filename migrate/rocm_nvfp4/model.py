"""The migrated form: the sparse-attention layer registers the launchers it will use.

This is where the contract replaces the legacy warmup module: the layer that selects
the NVFP4-KV launchers (gfx950, NVFP4 KV cache) calls `register_warmup()` in its
constructor, and the engine's registry compiles every key at init.
"""

from __future__ import annotations

import functools

from zerojit.contract import JitKernel, ServingLimits

from .kernel import (
    THRESHOLDS,
    FusedNormRopeKVInsert,
    IndexDecode,
    IndexPrefill,
    ModelDims,
    SparseDecode,
    SparsePrefill,
    Thresholds,
    TopK,
)

LAUNCHER_TYPES = (FusedNormRopeKVInsert, SparsePrefill, SparseDecode, IndexPrefill, IndexDecode, TopK)


@functools.cache
def nvfp4_kv_launchers(dims: ModelDims = ModelDims(), thresholds: Thresholds = THRESHOLDS) -> tuple[JitKernel, ...]:
    """One shared set of launchers per model dims: every layer of a model uses the same objects."""
    return tuple(cls(dims, thresholds) for cls in LAUNCHER_TYPES)


def uses_nvfp4_kv_launchers(limits: ServingLimits) -> bool:
    """The runtime selects these launchers on gfx950 with an NVFP4 KV cache."""
    return limits.arch == "gfx950" and limits.kv_cache_dtype == "nvfp4"


class MiniMaxM3SparseAttention:
    """The attention layer as far as warmup is concerned: it picks the launchers and registers them."""

    def __init__(self, limits: ServingLimits, dims: ModelDims = ModelDims()):
        self.launchers = nvfp4_kv_launchers(dims) if uses_nvfp4_kv_launchers(limits) else ()
        if self.launchers and limits.enable_jit_warmup:
            for launcher in self.launchers:
                launcher.register_warmup()


def build_model(
    limits: ServingLimits, num_layers: int, dims: ModelDims = ModelDims()
) -> list[MiniMaxM3SparseAttention]:
    """Construct the model's attention layers (the registry's capture window wraps this)."""
    return [MiniMaxM3SparseAttention(limits, dims) for _ in range(num_layers)]
