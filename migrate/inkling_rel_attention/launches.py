"""In-range Inkling attention steps, for zero-JIT verification."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from zerojit.contract import JitKernel, ServingLimits

from .kernel import InklingModel, InklingRelAttention


def step_launches(limits: ServingLimits, model: InklingModel, count: int, seed: int):
    """In-range steps for each layer kind: a request count and a longest query that fit one step."""
    rng = random.Random(seed)
    kinds = InklingRelAttention.layer_kinds(limits, model)
    tokens = limits.max_num_batched_tokens
    edges = [(1, 1), (1, tokens), (min(limits.max_num_seqs, tokens), 1)]
    out = []
    for index in range(count):
        num_reqs, query_len = edges[index] if index < len(edges) else (None, None)
        if num_reqs is None:
            num_reqs = rng.randint(1, limits.max_num_seqs)
            query_len = rng.randint(1, tokens - num_reqs + 1)
        out.append({**kinds[index % 2], "query_len": query_len, "num_reqs": num_reqs})
    return out


def sample_launches(preset: Any, kernels: Sequence[JitKernel], per_kernel: int, seed: int):
    """The family's verification hook: in-range steps of the preset's model for every kernel."""
    return [
        (kernel, inputs)
        for kernel in kernels
        for inputs in step_launches(preset.limits, preset.model, per_kernel, seed)
    ]
