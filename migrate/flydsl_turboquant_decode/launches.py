"""In-range decode steps for zero-JIT verification: any batch of 1..max_num_seqs sequences, any length up to
max_model_len (both ends first), each run through vLLM's own launcher."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from zerojit.contract import JitKernel

from .kernel import TurboQuantDecode


def decode_steps(preset: Any, count: int, seed: int) -> list[dict[str, Any]]:
    rng, limits, model = random.Random(seed), preset.limits, preset.model
    shape = TurboQuantDecode.launch_shape(limits, model.layer, model.max_num_kv_splits)
    ends = [(1, 1), (limits.max_num_seqs, limits.max_model_len)]
    steps = ends + [(rng.randint(1, limits.max_num_seqs), rng.randint(1, limits.max_model_len))
                    for _ in range(max(0, count - len(ends)))]
    return [{**shape, "num_seqs": seqs, "max_seq_len": length} for seqs, length in steps[:count]]


def sample_launches(preset: Any, kernels: Sequence[JitKernel], per_kernel: int, seed: int):
    """The family's verification hook: each decode step, for each of the two kernels it compiles."""
    return [(kernel, inputs) for kernel in kernels for inputs in decode_steps(preset, per_kernel, seed)]
