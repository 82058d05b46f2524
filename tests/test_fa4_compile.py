"""Real FlashAttention-4 compiles for sm_90a on this CPU machine (compile-only, fake CUDA tensors)."""

import json
import subprocess
import sys

import pytest

from contract import Outcome, cutedsl_backend
from migrate.fa4_mla_prefill.kernel import FA4MLAPrefill, MLADims
from migrate.inkling_rel_attention.kernel import InklingRelAttention


@pytest.fixture(scope="module")
def sm90(tmp_path_factory):
    cutedsl_backend.configure("sm90", tmp_path_factory.mktemp("cutedsl-cache"))


def fa4_cache_size():
    from flash_attn.cute.interface import _flash_attn_fwd

    return len(_flash_attn_fwd.compile_cache.cache)


def test_one_mla_prefill_variant_compiles_once(sm90):
    kernel = FA4MLAPrefill()
    key = kernel.dispatch(batch_size=1, dtype="bf16", num_heads=16, dims=MLADims(128, 64, 128), max_seqlen_q=1,
                          max_seqlen_k=128, requires_v_padding=False, causal=True, fa_version=4, num_splits=1)
    before = fa4_cache_size()
    assert kernel.compile(key) is Outcome.COMPILED
    assert fa4_cache_size() == before + 1 and kernel.variant_count() == 1
    assert kernel.compile(key) is Outcome.CACHED
    assert fa4_cache_size() == before + 1


def test_one_inkling_variant_compiles_once_and_is_booked_to_inkling(sm90):
    kernel = InklingRelAttention("sm90")
    key = kernel.dispatch(is_local=True, num_heads=8, num_kv_heads=1, head_dim=128, rel_extent=512, dtype="bf16",
                          kv_dtype="bf16", block_size=128, window_size=(511, 0), max_kv_len=512, query_len=3,
                          num_reqs=2)
    assert (key.max_seqlen_q, key.num_splits, key.num_warps_bucket) == (4, 1, None)
    before, mla_before = fa4_cache_size(), FA4MLAPrefill().variant_count()
    assert kernel.compile(key) is Outcome.COMPILED
    assert fa4_cache_size() == before + 1 and kernel.variant_count() == 1
    assert FA4MLAPrefill().variant_count() == mla_before  # shared FA4 cache, separate books
    # The runtime path with other request counts in the same bucket reuses the variant.
    for reqs in (1, 5, 30):
        kernel.launch(is_local=True, num_heads=8, num_kv_heads=1, head_dim=128, rel_extent=512, dtype="bf16",
                      kv_dtype="bf16", block_size=128, window_size=(511, 0), max_kv_len=512, query_len=4,
                      num_reqs=reqs)
    assert fa4_cache_size() == before + 1


def test_reconfiguring_the_process_is_refused(sm90, tmp_path):
    with pytest.raises(cutedsl_backend.BackendConfigError, match="already targets sm_90a"):
        cutedsl_backend.configure("sm100", tmp_path)


def warmup(preset, cache_dir):
    result = subprocess.run([sys.executable, "-m", "migrate", "warmup", "--preset", preset, "--json",
                             "--cache-dir", str(cache_dir)], capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout)


@pytest.mark.parametrize("preset, keys", [("deepseek-v3-h200", 12), ("inkling-h200", 28)])
def test_preset_warmup_then_disk_cache(tmp_path, preset, keys):
    """The whole preset compiles in `zerojit warmup`; a second process loads everything from FA4's disk cache."""
    cold = warmup(preset, tmp_path)
    assert cold["failed"] == 0 and cold["compiled"] + cold["cached"] == keys and cold["compiled"] >= 1
    warm = warmup(preset, tmp_path)
    assert (warm["compiled"], warm["cached"]) == (0, keys)
    assert warm["kernels"][0]["variants"] == cold["kernels"][0]["variants"]
    verify = subprocess.run([sys.executable, "-m", "migrate", "verify", "--preset", preset, "--launches", "20",
                             "--json", "--cache-dir", str(tmp_path)], capture_output=True, text=True, timeout=1800)
    assert verify.returncode == 0, verify.stdout[-2000:]
    assert json.loads(verify.stdout)["cache_growth"] == 0
