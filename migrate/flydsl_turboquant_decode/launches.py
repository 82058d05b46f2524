"""In-range decode steps for zero-JIT verification: any batch of 1..max_num_seqs sequences, any length up to
max_model_len (both ends first), each run through vLLM's own launcher."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from zerojit.contract import JitKernel

from .kernel import TurboQuantDecode


def decode_steps(preset: Any, count: int, seed: int) -> list[dict[str, Any]]:
    """Decode steps; each hands its output in a workspace of either size, as a server does, or (one in three) in
    the launcher's own pooled buffer."""
    rng, limits, model = random.Random(seed), preset.limits, preset.model
    shape = TurboQuantDecode.launch_shape(limits, model.layer, model.max_num_kv_splits, model.pool_rows)
    ends = [(1, 1, True), (limits.max_num_seqs, limits.max_model_len, False)]
    steps = ends + [
        (rng.randint(1, limits.max_num_seqs), rng.randint(1, limits.max_model_len), rng.choice((True, False, None)))
        for _ in range(max(0, count - len(ends)))
    ]
    return [
        {**shape, "num_seqs": seqs, "max_seq_len": length, "workspace_within_2gb": workspace}
        for seqs, length, workspace in steps[:count]
    ]


def sample_launches(preset: Any, kernels: Sequence[JitKernel], per_kernel: int, seed: int):
    """The family's verification hook: each decode step, for each of the two kernels it compiles."""
    return [(kernel, inputs) for kernel in kernels for inputs in decode_steps(preset, per_kernel, seed)]
