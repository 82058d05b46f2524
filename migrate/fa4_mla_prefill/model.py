"""The migrated form: the FlashAttention MLA prefill backend registers FA4 when it runs FA4.

The backend decides the FA version once, with both head sizes, and registers with the
same dims it will launch with; the key space trusts that decision instead of re-deriving
it. vLLM 0.29.0/0.30.0 re-derive it in the key expansion from the QK head size alone: on
the sm100 family a DeepSeek-style model (QK 192, V 128) runs FA4 yet expands to no keys.
`UpstreamFA4MLAPrefill` keeps that check so `zerojit plan` can show the registered-but-empty
kernel it produces (preset deepseek-v3-b200-vllm030).
"""

from __future__ import annotations

import dataclasses

from zerojit.contract import Empty, KeySpace, ServingLimits

from .kernel import SUPPORTED_DIMS, FA4MLAPrefill, MLADims, runtime_num_splits, select_fa_version

FA4_MLA_PREFILL = FA4MLAPrefill()


@dataclasses.dataclass(frozen=True)
class MLAModel:
    """What the engine knows of an MLA model when it picks the prefill backend."""

    total_heads: int
    dims: MLADims
    forced_fa_version: int | None = None
    batch_invariant: bool = False
    is_pooling: bool = False
    use_mla: bool = True
    prefill_backend: str = "FLASH_ATTN"

    def heads_per_rank(self, limits: ServingLimits) -> int:
        return self.total_heads // limits.tp_size


@dataclasses.dataclass(frozen=True)
class MLAPresetModel:
    """A preset's model: the MLA model, and whether to expand keys with vLLM 0.30.0's own logic."""

    mla: MLAModel
    upstream_keys: bool = False


class FlashAttnPrefillBackend:
    """MLA prefill on FlashAttention: picks the FA version and, for FA4, registers its warmup."""

    def __init__(self, limits: ServingLimits, model: MLAModel, kernel: FA4MLAPrefill = FA4_MLA_PREFILL):
        dims = model.dims
        self.num_heads = model.heads_per_rank(limits)
        self.fa_version = select_fa_version(
            limits.arch,
            dims.qk_head_dim,
            dims.v_head_dim,
            forced=model.forced_fa_version,
            batch_invariant=model.batch_invariant,
        )
        self.num_splits = runtime_num_splits(limits.arch, model.batch_invariant)
        if limits.enable_jit_warmup and self.fa_version == 4:
            kernel.register_warmup(
                num_heads=self.num_heads, dims=dims, fa_version=4, batch_invariant=model.batch_invariant
            )


class UpstreamFA4MLAPrefill(FA4MLAPrefill):
    """FA4 MLA prefill with upstream's expansion-time version check (no V head size)."""

    name = "fa4_mla_prefill_upstream"

    def __init__(self, forced_fa_version: int | None = None):
        self.forced_fa_version = forced_fa_version  # the engine's configured FA version, if any

    def key_space(
        self,
        limits: ServingLimits,
        *,
        num_heads: int,
        dims: MLADims,
        fa_version: int = 4,
        batch_invariant: bool = False,
    ) -> KeySpace:
        recheck = select_fa_version(
            limits.arch, dims.qk_head_dim, None, forced=self.forced_fa_version, batch_invariant=batch_invariant
        )
        if recheck != 4:
            return Empty()
        return super().key_space(
            limits, num_heads=num_heads, dims=dims, fa_version=fa_version, batch_invariant=batch_invariant
        )


def selects_flash_attn_prefill(model: MLAModel) -> bool:
    """The engine builds this backend for MLA models whose dims it supports, when FLASH_ATTN is chosen."""
    return model.use_mla and model.prefill_backend == "FLASH_ATTN" and model.dims in SUPPORTED_DIMS
