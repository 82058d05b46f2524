"""The legacy form of Inkling warmup (vLLM <= 0.29): a standalone step gated on the HF config.

It warmed the kernel only when the model's config is an Inkling config, whatever the
engine's JIT-warmup switch said inside the step; the keys it expanded are the kernel's own.
"""

from __future__ import annotations

from zerojit.contract import ServingLimits

from .kernel import InklingModel
from .model import inkling_kernel


def legacy_keys(limits: ServingLimits, model: InklingModel, hf_config_is_inkling: bool) -> list:
    if not hf_config_is_inkling:
        return []
    return inkling_kernel(limits.arch).warmup_keys(limits, model=model)
