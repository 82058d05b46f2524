"""The legacy form of FA4 MLA prefill warmup (vLLM <= 0.29), and the upstream key defect.

Legacy orchestration warmed the kernel from a standalone module: skip pooling models,
non-MLA models and prefill backends other than FLASH_ATTN, then expand the keys. Upstream's
key expansion re-checks the FA version from the QK head size alone, while the backend
decides it with the V head size too: on the sm100 family a DeepSeek-style model
(QK 192, V 128) runs FA4 yet expands to no keys. `UpstreamFA4MLAPrefill` keeps that
check so `zerojit plan` can show the registered-but-empty kernel it produces.
"""

from __future__ import annotations

from zerojit.contract import Empty, KeySpace, ServingLimits

from .kernel import FA4MLAPrefill, MLADims, select_fa_version
from .model import MLAModel, selects_flash_attn_prefill


class UpstreamFA4MLAPrefill(FA4MLAPrefill):
    """FA4 MLA prefill with upstream's expansion-time version check (no V head size)."""

    name = "fa4_mla_prefill_upstream"

    def __init__(self, forced_fa_version: int | None = None):
        self.forced_fa_version = forced_fa_version  # the engine's configured FA version, if any

    def key_space(self, limits: ServingLimits, *, num_heads: int, dims: MLADims, fa_version: int = 4,
                  batch_invariant: bool = False) -> KeySpace:
        recheck = select_fa_version(limits.arch, dims.qk_head_dim, None, forced=self.forced_fa_version,
                                    batch_invariant=batch_invariant)
        if recheck != 4:
            return Empty()
        return super().key_space(limits, num_heads=num_heads, dims=dims, fa_version=fa_version,
                                 batch_invariant=batch_invariant)


def legacy_keys(limits: ServingLimits, model: MLAModel) -> list:
    """What the legacy standalone warmup compiled for this model and server."""
    if model.is_pooling or not selects_flash_attn_prefill(model):
        return []
    kernel = UpstreamFA4MLAPrefill(model.forced_fa_version)
    return kernel.warmup_keys(limits, num_heads=model.heads_per_rank(limits), dims=model.dims,
                              batch_invariant=model.batch_invariant)
