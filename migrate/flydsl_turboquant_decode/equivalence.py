"""Key equivalence for TurboQuant decode: what vLLM 0.33.0's own decode path builds vs what the layers register.

The legacy side is the engine itself (legacy.py): nothing in 0.33.0 warms these kernels, so it is
what a server's decode steps build. One difference is intended: with JIT warmup off the registry
warms nothing, and the engine builds the kernels at its first decode steps, as 0.33.0 does anyway.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import NamedTuple

from hypothesis import strategies as st

from zerojit.contract import ServingLimits
from zerojit.migrate.engine_trees.equivalence import canonical, keys_via_registry

from .kernel import KV_CACHE_DTYPES, TurboQuantLayer
from .legacy import LEGACY_RELEASE, engine_keys
from .model import TurboQuantAttention


class AttentionShape(NamedTuple):
    num_heads: int  # whole model; vLLM divides by the TP size (KV heads are replicated past their count)
    num_kv_heads: int
    head_size: int


MODELS = {
    "qwen3-32b": AttentionShape(64, 8, 128),  # query groups of 8
    "minimax-m2": AttentionShape(48, 8, 128),  # 6
    "qwen3-235b": AttentionShape(64, 4, 128),  # 16 at TP4
    "llama-3.1-8b": AttentionShape(32, 8, 128),  # 4: the SoA Triton decode
    "qwen2.5-0.5b": AttentionShape(14, 2, 64),  # head size 64: the SoA Triton decode
}
TP_SIZES = (1, 2, 4, 8)
BLOCK_SIZES = (16, 32, 64)
MODEL_LENS = (2048, 4097, 65536, 200000)
KV_SPLITS = (1, 16, 32, 64)
ARCHS = ("gfx950", "gfx942")


@dataclasses.dataclass(frozen=True)
class TurboQuantConfig:
    model: str = "qwen3-32b"
    tp_size: int = 1
    block_size: int = 16
    kv_cache_dtype: str = "turboquant_4bit_nc"
    max_model_len: int = 32768
    max_num_kv_splits: int = 32
    dtype: str = "bf16"
    arch: str = "gfx950"
    enable_jit_warmup: bool = True
    sliding_window: int | None = None
    has_sinks: bool = False
    max_num_seqs: int = 256
    pool_rows: int = 512  # vLLM's largest CUDA-graph capture size

    @property
    def num_heads(self) -> int:
        return MODELS[self.model].num_heads // self.tp_size

    @property
    def num_kv_heads(self) -> int:
        return max(1, MODELS[self.model].num_kv_heads // self.tp_size)

    @property
    def head_size(self) -> int:
        return MODELS[self.model].head_size

    @property
    def scale(self) -> float:
        return self.head_size**-0.5

    def limits(self) -> ServingLimits:
        return ServingLimits(
            max_num_seqs=self.max_num_seqs,
            max_num_batched_tokens=8192,
            max_model_len=self.max_model_len,
            tp_size=self.tp_size,
            dtype=self.dtype,
            kv_cache_dtype=self.kv_cache_dtype,
            arch=self.arch,
            enable_jit_warmup=self.enable_jit_warmup,
        )

    def layer(self) -> TurboQuantLayer:
        return TurboQuantLayer(
            self.num_heads,
            self.num_kv_heads,
            self.head_size,
            self.block_size,
            self.kv_cache_dtype,
            self.scale,
            self.sliding_window,
            self.has_sinks,
        )


def _full() -> list[TurboQuantConfig]:
    """Every model, TP size, block size, cache preset, context and split count; the dtype, target, JIT switch,
    sliding window, sinks and batch limit take turns."""
    configs = []
    for index, (model, tp, block, kv, length, splits) in enumerate(
        itertools.product(MODELS, TP_SIZES, BLOCK_SIZES, KV_CACHE_DTYPES, MODEL_LENS, KV_SPLITS)
    ):
        configs.append(
            TurboQuantConfig(
                model,
                tp,
                block,
                kv,
                length,
                splits,
                ("bf16", "fp16")[index % 2],
                ARCHS[index // 7 % 2],
                index % 11 != 0,
                (None, 4096)[index % 13 == 0],
                index % 17 == 0,
                (256, 1, 1024)[index % 3],
                (512, 4096)[index % 5 == 0],
            )
        )
    return configs


class TurboQuantEquivalence:
    family = "flydsl-turboquant-decode"
    grids = {"full": _full, "smoke": lambda: _full()[::41]}
    legacy_source = (
        f"vLLM {LEGACY_RELEASE}'s own decode path (TurboQuantAttentionImpl._decode_attention -> "
        "flydsl_turboquant_decode_attention -> _get_kernel), run from its tree on decode steps"
    )
    migrated_source = "zerojit's migrated family modules (TurboQuantAttention registers the two kernels)"

    def strategy(self):
        return st.builds(
            TurboQuantConfig,
            model=st.sampled_from(tuple(MODELS)),
            tp_size=st.sampled_from(TP_SIZES),
            block_size=st.sampled_from(BLOCK_SIZES),
            kv_cache_dtype=st.sampled_from(tuple(KV_CACHE_DTYPES)),
            max_model_len=st.integers(16, 300_000),
            max_num_kv_splits=st.integers(1, 128),
            dtype=st.sampled_from(("bf16", "fp16")),
            arch=st.sampled_from(ARCHS),
            enable_jit_warmup=st.booleans(),
            sliding_window=st.sampled_from((None, 0, 1024)),
            has_sinks=st.booleans(),
            max_num_seqs=st.integers(1, 2048),
            pool_rows=st.sampled_from((1, 512, 8192)),
        )

    def legacy_keys(self, config: TurboQuantConfig) -> set[str]:
        return canonical(engine_keys(config))

    def migrated_keys(self, config: TurboQuantConfig) -> set[str]:
        limits = config.limits()
        return keys_via_registry(
            limits, lambda: TurboQuantAttention(limits, config.layer(), config.max_num_kv_splits, config.pool_rows)
        )

    def intended(self, config: TurboQuantConfig, legacy: set[str], migrated: set[str]) -> str | None:
        if not config.enable_jit_warmup and not migrated:
            return (
                "JIT warmup is off: the registry warms nothing, and the engine builds these kernels at its first "
                "decode steps, as vLLM 0.33.0 does for every server"
            )
        return None
