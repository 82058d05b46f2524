"""The migrated form: every Qwen GDN attention layer registers the gated RMS norm it launches.

All GDN layers of a model share one norm shape, so the registry keeps one registration.
"""

from __future__ import annotations

import dataclasses
import functools

from zerojit.contract import ServingLimits

from .kernel import GatedNorm, LayerNormFwd


@dataclasses.dataclass(frozen=True)
class GdnPresetModel:
    """A preset's model: the GDN layers' output norm, and the GPU's SM count (rows per program depend on it)."""

    norm: GatedNorm
    num_sms: int


@functools.cache
def layer_norm_kernel(num_sms: int) -> LayerNormFwd:
    """The process's kernel object for its GPU (rows per program depend on the SM count)."""
    return LayerNormFwd(num_sms)


class QwenGdnAttention:
    def __init__(self, limits: ServingLimits, norm: GatedNorm, num_sms: int):
        self.kernel = layer_norm_kernel(num_sms)
        if limits.enable_jit_warmup:
            self.kernel.register_warmup(norm=norm)
