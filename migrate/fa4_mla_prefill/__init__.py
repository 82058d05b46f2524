"""FA4 MLA prefill (CuTe DSL / FlashAttention-4).

kernel.py  key, dispatch, key space and compile-only FA4 call; FA version and split rules
model.py   the migrated form: the prefill backend registers FA4 when it selected FA4
legacy.py  the pre-migration gates and upstream's expansion (with its registered-but-empty defect)
spec.py    the migration spec (vLLM 0.29.0 -> 0.30.0)
"""

from __future__ import annotations

import random

from contract import ServingLimits

from ..families import Family, Preset, configure_cutedsl
from .kernel import FAMILY as NAME
from .kernel import MLADims, runtime_num_splits
from .legacy import UpstreamFA4MLAPrefill
from .model import FA4_MLA_PREFILL, FlashAttnPrefillBackend, MLAModel, selects_flash_attn_prefill

DEEPSEEK_V3 = MLAModel(total_heads=128, dims=MLADims(128, 64, 128))
_LIMITS = dict(max_num_seqs=128, max_num_batched_tokens=16384, max_model_len=32768, tp_size=8, dtype="bf16")

PRESETS = (
    Preset("deepseek-v3-h200", NAME, "DeepSeek-V3 MLA prefill on 8x H200 (sm_90a), FA4 forced over the FA3 default",
           ServingLimits(**_LIMITS, arch="sm90"), model={"mla": MLAModel(128, MLADims(128, 64, 128),
                                                                            forced_fa_version=4)}),
    Preset("deepseek-v3-b200", NAME, "DeepSeek-V3 MLA prefill on 8x B200 (sm_100a), FA4 by default",
           ServingLimits(**_LIMITS, arch="sm100"), model={"mla": DEEPSEEK_V3}),
    Preset("deepseek-v3-b200-vllm030", NAME,
           "The same B200 server with vLLM 0.30.0's key logic: FA4 registers, then expands to no keys",
           ServingLimits(**_LIMITS, arch="sm100"), model={"mla": DEEPSEEK_V3, "upstream_keys": True}),
)


def _construct(preset: Preset):
    model: MLAModel = preset.model["mla"]
    if not selects_flash_attn_prefill(model):
        return ()
    kernel = UpstreamFA4MLAPrefill(model.forced_fa_version) if preset.model.get("upstream_keys") else FA4_MLA_PREFILL
    backend = FlashAttnPrefillBackend(preset.limits, model, kernel=kernel)
    return (kernel,) if backend.fa_version == 4 else ()


def prefill_launches(limits: ServingLimits, model: MLAModel, count: int, seed: int):
    """In-range prefill launches: new-token (causal, K = Q) and context-chunk (non-causal, LSE) calls."""
    rng = random.Random(seed)
    heads, splits = model.heads_per_rank(limits), runtime_num_splits(limits.arch, model.batch_invariant)
    tokens, longest = limits.max_num_batched_tokens, limits.max_model_len

    def launch(batch, q, k, causal, lse):
        return {"batch_size": batch, "dtype": limits.dtype, "num_heads": heads, "dims": model.dims,
                "max_seqlen_q": q, "max_seqlen_k": k, "requires_v_padding": False, "causal": causal,
                "fa_version": 4, "return_lse": lse, "num_splits": splits}

    prompt = min(tokens, longest)
    edges = [
        launch(1, 1, 1, True, False),                                    # one-token prompt
        launch(1, prompt, prompt, True, True),                           # the longest prompt a step holds
        launch(tokens // prompt, prompt, longest, False, True),          # context chunks at full context
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


def _sample(preset: Preset, kernels, per_kernel: int, seed: int):
    return [(kernel, inputs) for kernel in kernels
            for inputs in prefill_launches(preset.limits, preset.model["mla"], per_kernel, seed)]


def _equivalence():
    from .equivalence import FA4MLAEquivalence

    return FA4MLAEquivalence()


FAMILY = Family(
    name=NAME,
    title="FA4 MLA prefill (CuTe DSL, FlashAttention-4 varlen forward)",
    backend="cutedsl",
    presets=PRESETS,
    construct=_construct,
    configure_backend=configure_cutedsl,
    sample_launches=_sample,
    equivalence=_equivalence,
)
