"""In-range gated-norm launches, for zero-JIT verification: one per step, of any token count a step holds."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from zerojit.contract import JitKernel, ServingLimits

from .kernel import GatedNorm, LayerNormFwd


def norm_launches(limits: ServingLimits, norm: GatedNorm, count: int, seed: int) -> list[dict[str, Any]]:
    """The norm of a step of 1..max_num_batched_tokens tokens (both ends first): tokens x value heads rows."""
    rng = random.Random(seed)
    tokens = limits.max_num_batched_tokens
    counts = [1, tokens] + [rng.randint(1, tokens) for _ in range(max(0, count - 2))]
    shape = LayerNormFwd.launch_shape(limits, norm)
    return [{**shape, "num_rows": n * norm.rows_per_token} for n in counts[:count]]


def sample_launches(preset: Any, kernels: Sequence[JitKernel], per_kernel: int, seed: int):
    """The family's verification hook: in-range norm launches of the preset's model for every kernel."""
    return [
        (kernel, inputs)
        for kernel in kernels
        for inputs in norm_launches(preset.limits, preset.model.norm, per_kernel, seed)
    ]
