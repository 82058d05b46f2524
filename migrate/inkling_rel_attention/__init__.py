"""Inkling FA4 relative attention (CuTe DSL / FlashAttention-4 with a relative-bias score_mod).

kernel.py     key, dispatch (query bucket, split and warps heuristics), key space, compile-only FA4 call
score_mod.py  the CuTe DSL score_mod that adds the relative-position bias
model.py      the migrated form: every Inkling attention layer registers the kernel
legacy.py     the pre-migration gate (HF config is Inkling)
spec.py       the migration spec (vLLM 0.29.0 -> 0.30.0)
"""

from __future__ import annotations

import random

from contract import ServingLimits

from ..families import Family, Preset, configure_cutedsl
from .kernel import FAMILY as NAME
from .kernel import InklingModel, InklingRelAttention
from .model import InklingAttention

# A 64-head, 8-KV-head Inkling (global and sliding-window layers alike) at TP8: per rank.
INKLING_TP8 = InklingModel(num_heads=8, num_kv_heads=1, head_dim=128, rel_extent=1024, sliding_window=512,
                           swa_num_heads=8, swa_num_kv_heads=1, swa_head_dim=128)
_LIMITS = dict(max_num_seqs=256, max_num_batched_tokens=8192, max_model_len=32768, tp_size=8, dtype="bf16")

PRESETS = (
    Preset("inkling-h200", NAME, "Inkling (64 heads, TP8) relative attention on H200 (sm_90a): no split-KV",
           ServingLimits(**_LIMITS, arch="sm90"), num_layers=4, model={"inkling": INKLING_TP8}),
    Preset("inkling-b200", NAME, "The same model on B200 (sm_100a): split-KV keys by request count",
           ServingLimits(**_LIMITS, arch="sm100"), num_layers=4, model={"inkling": INKLING_TP8}),
)


def _construct(preset: Preset):
    layers = [InklingAttention(preset.limits, preset.model["inkling"], is_local=i % 2 == 1)
              for i in range(preset.num_layers)]
    return (layers[0].kernel,)


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


def _sample(preset: Preset, kernels, per_kernel: int, seed: int):
    return [(kernel, inputs) for kernel in kernels
            for inputs in step_launches(preset.limits, preset.model["inkling"], per_kernel, seed)]


def _equivalence():
    from .equivalence import InklingEquivalence

    return InklingEquivalence()


FAMILY = Family(
    name=NAME,
    title="Inkling FA4 relative attention (CuTe DSL score_mod over paged KV)",
    backend="cutedsl",
    presets=PRESETS,
    construct=_construct,
    configure_backend=configure_cutedsl,
    sample_launches=_sample,
    equivalence=_equivalence,
)
