"""The project's FA4 MLA prefill and Inkling keys against vLLM 0.29.0's own pre-migration logic.

vLLM's code runs from its wheel sources (tests/vllm_oracle.py says what is stubbed). Where
the project differs on purpose, the configurations and the difference are named here:
  * sm100 family with DeepSeek dims (QK 192, V 128): vLLM expands to no keys (its
    expansion re-checks the FA version without the V head size); the project warms them.
  * Every arch: the project adds two probes with Sq = 257 (multi-M-block queries on sm100).
  * sm90: FA4 4.0.0b36 cannot split the KV loop on sm90, so the project runs num_splits=1
    and has no split-only probes (Sk = 4096); vLLM asks for num_splits=0 there.
"""

import dataclasses
import types

import pytest
import torch

from zerojit.contract import ServingLimits, WarmupRegistry
from zerojit.migrate.fa4_mla_prefill.kernel import MULTI_BLOCK_Q, MLADims
from zerojit.migrate.fa4_mla_prefill.model import FlashAttnPrefillBackend, MLAModel
from zerojit.migrate.inkling_rel_attention.kernel import InklingModel
from zerojit.migrate.inkling_rel_attention.model import InklingAttention
from vllm_oracle import Oracle

TORCH_TO_NAME = {torch.bfloat16: "bf16", torch.float16: "fp16"}
CAPABILITY = {"sm90": (9, 0), "sm100": (10, 0)}


@pytest.fixture(scope="module")
def oracle():
    return Oracle("0.29.0")


def vllm_fields(key) -> tuple:
    fields = dataclasses.asdict(key)
    for name, value in fields.items():
        if isinstance(value, torch.dtype):
            fields[name] = TORCH_TO_NAME[value]
    return tuple(sorted(fields.items()))


def our_fields(key) -> tuple:
    return tuple(sorted(key.as_dict().items()))


def our_mla_keys(arch, dims, forced):
    limits = ServingLimits(max_num_seqs=128, max_num_batched_tokens=16384, max_model_len=32768, tp_size=8,
                           arch=arch)
    registry = WarmupRegistry(limits)
    with registry.capture():
        FlashAttnPrefillBackend(limits, MLAModel(128, dims, forced_fa_version=forced))
    return {our_fields(k) for _, k in registry.plan().work()}


def vllm_mla_keys(oracle, arch, dims, forced):
    return {vllm_fields(k) for k in oracle.fa4_mla_keys(
        capability=CAPABILITY[arch], qk_nope=dims.qk_nope_head_dim, qk_rope=dims.qk_rope_head_dim,
        v_head_dim=dims.v_head_dim, heads_per_rank=16, dtype=torch.bfloat16, forced_fa_version=forced)}


def without_additions(keys):
    return {k for k in keys if dict(k)["max_seqlen_q"] != MULTI_BLOCK_Q}


def sm90_unsplit(keys):
    """vLLM's sm90 keys as FA4 can compile them: unsplit, without the split-only probes."""
    return {tuple(sorted({**dict(k), "num_splits": 1}.items())) for k in keys if dict(k)["max_seqlen_k"] < 4096}


def test_deepseek_dims_on_sm90_match_vllm_up_to_the_named_differences(oracle):
    deepseek = MLADims(128, 64, 128)
    theirs = vllm_mla_keys(oracle, "sm90", deepseek, forced=4)
    ours = our_mla_keys("sm90", deepseek, forced=4)
    assert len(theirs) == 16 and len(ours) == 12
    assert without_additions(ours) == sm90_unsplit(theirs)


def test_deepseek_dims_on_sm100_are_the_upstream_defect(oracle):
    deepseek = MLADims(128, 64, 128)
    assert vllm_mla_keys(oracle, "sm100", deepseek, forced=None) == set()
    assert len(our_mla_keys("sm100", deepseek, forced=None)) == 32


def test_a_qk128_layout_on_sm100_matches_vllm_exactly_but_for_the_added_probes(oracle):
    dims = MLADims(64, 64, 128)
    theirs = vllm_mla_keys(oracle, "sm100", dims, forced=None)
    ours = our_mla_keys("sm100", dims, forced=None)
    assert theirs and without_additions(ours) == theirs
    assert {dict(k)["max_seqlen_q"] for k in ours - theirs} == {MULTI_BLOCK_Q}


HF_CONFIGS = {
    "64 heads, TP8": (types.SimpleNamespace(num_attention_heads=64, num_key_value_heads=8, head_dim=128,
                                            rel_extent=1024, sliding_window_size=512, swa_num_attention_heads=64,
                                            swa_num_key_value_heads=8, swa_head_dim=128), 8),
    "12 heads, TP1": (types.SimpleNamespace(num_attention_heads=12, num_key_value_heads=4, head_dim=128,
                                            rel_extent=1024, sliding_window_size=512, swa_num_attention_heads=12,
                                            swa_num_key_value_heads=4, swa_head_dim=64), 1),
}


@pytest.mark.parametrize("arch", ["sm90", "sm100"])
@pytest.mark.parametrize("name", list(HF_CONFIGS))
def test_inkling_keys_equal_vllm(oracle, arch, name):
    hf, tp = HF_CONFIGS[name]
    limits = ServingLimits(max_num_seqs=96, max_num_batched_tokens=2048, max_model_len=32768, tp_size=tp, arch=arch)
    theirs = {vllm_fields(k) for k in oracle.inkling_keys(
        capability=CAPABILITY[arch], tp=tp, hf_config=hf, dtype=torch.bfloat16, block_size=128,
        max_num_seqs=limits.max_num_seqs, max_num_batched_tokens=limits.max_num_batched_tokens,
        max_model_len=limits.max_model_len)}
    model = InklingModel(num_heads=hf.num_attention_heads // tp, num_kv_heads=max(1, hf.num_key_value_heads // tp),
                         head_dim=hf.head_dim, rel_extent=hf.rel_extent, sliding_window=hf.sliding_window_size,
                         swa_num_heads=hf.swa_num_attention_heads // tp,
                         swa_num_kv_heads=max(1, hf.swa_num_key_value_heads // tp), swa_head_dim=hf.swa_head_dim)
    registry = WarmupRegistry(limits)
    with registry.capture():
        InklingAttention(limits, model, is_local=False)
        InklingAttention(limits, model, is_local=True)
    ours = {our_fields(k) for _, k in registry.plan().work()}
    assert theirs and ours == theirs
