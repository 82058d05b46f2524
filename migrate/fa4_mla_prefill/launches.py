"""In-range FA4 MLA prefill launches, for zero-JIT verification."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from zerojit.contract import JitKernel, ServingLimits

from .kernel import runtime_num_splits
from .model import MLAModel


def prefill_launches(limits: ServingLimits, model: MLAModel, count: int, seed: int):
    """In-range prefill launches: new-token (causal, K = Q) and context-chunk (non-causal, LSE) calls."""
    rng = random.Random(seed)
    heads, splits = model.heads_per_rank(limits), runtime_num_splits(limits.arch, model.batch_invariant)
    tokens, longest = limits.max_num_batched_tokens, limits.max_model_len

    def launch(batch, q, k, causal, lse):
        return {
            "batch_size": batch,
            "dtype": limits.dtype,
            "num_heads": heads,
            "dims": model.dims,
            "max_seqlen_q": q,
            "max_seqlen_k": k,
            "requires_v_padding": False,
            "causal": causal,
            "fa_version": 4,
            "return_lse": lse,
            "num_splits": splits,
        }

    prompt = min(tokens, longest)
    edges = [
        launch(1, 1, 1, True, False),  # one-token prompt
        launch(1, prompt, prompt, True, True),  # the longest prompt a step holds
        launch(tokens // prompt, prompt, longest, False, True),  # context chunks at full context
        launch(min(limits.max_num_seqs, tokens), 1, longest, False, True),  # many one-token chunks
    ]
    out = edges[:count]
    while len(out) < count:
        batch = rng.randint(1, min(limits.max_num_seqs, tokens))
        q = rng.randint(1, min(tokens // batch, longest))
        if rng.random() < 0.5:
            out.append(launch(batch, q, q, True, rng.random() < 0.5))
        else:
            out.append(launch(batch, q, rng.randint(1, longest), False, True))
    return out


def sample_launches(preset: Any, kernels: Sequence[JitKernel], per_kernel: int, seed: int):
    """The family's verification hook: prefill launches of the preset's model for every kernel."""
    return [
        (kernel, inputs)
        for kernel in kernels
        for inputs in prefill_launches(preset.limits, preset.model.mla, per_kernel, seed)
    ]
