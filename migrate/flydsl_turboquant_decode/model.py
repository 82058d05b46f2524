"""The migrated form: each TurboQuant attention layer registers the two kernels its FlyDSL decode compiles.

This is where vLLM would put it: `TurboQuantAttentionImpl.__init__`, which knows the layer's heads,
head size, scale, KV-cache dtype and `max_num_kv_splits`, and sets `_use_flydsl` (gfx950 with FlyDSL).
All attention layers of a model share one shape, so the registry keeps one registration.
"""

from __future__ import annotations

import dataclasses
import functools

from zerojit.contract import JitKernel, ServingLimits

from .kernel import DEFAULT_POOL_ROWS, TurboQuantDecode, TurboQuantLayer, TurboQuantReduce

DEFAULT_MAX_NUM_KV_SPLITS = 32  # vLLM's attention_config.tq_max_kv_splits_for_cuda_graph default


@dataclasses.dataclass(frozen=True)
class TurboQuantPresetModel:
    """A preset's model: its attention layers' facts (per rank), the server's KV split setting, and its largest
    CUDA-graph capture size (the launcher pools its buffers for that many sequences)."""

    layer: TurboQuantLayer
    max_num_kv_splits: int = DEFAULT_MAX_NUM_KV_SPLITS
    pool_rows: int = DEFAULT_POOL_ROWS


@functools.cache
def decode_kernels() -> tuple[JitKernel, ...]:
    """The process's two kernel objects: the FlyDSL decode and its Triton reduction."""
    return TurboQuantDecode(), TurboQuantReduce()


class TurboQuantAttention:
    def __init__(
        self,
        limits: ServingLimits,
        layer: TurboQuantLayer,
        max_num_kv_splits: int = DEFAULT_MAX_NUM_KV_SPLITS,
        pool_rows: int = DEFAULT_POOL_ROWS,
    ):
        self.kernels = decode_kernels()
        # The backend takes the FlyDSL decode on gfx950 only, and only for the layers the kernel computes.
        if limits.enable_jit_warmup and limits.arch == "gfx950" and layer.takes_flydsl():
            for kernel in self.kernels:
                kernel.register_warmup(layer=layer, max_num_kv_splits=max_num_kv_splits, pool_rows=pool_rows)
