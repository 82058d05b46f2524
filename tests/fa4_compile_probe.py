"""Compile-only FA4 checks run in a child process (see test_fa4_compile.py).

CuTe DSL and FlyDSL cannot share a process, and the pytest process runs FlyDSL tests, so
each check runs here and prints its observations as JSON for the test to assert on.
Usage: python fa4_compile_probe.py CHECK CACHE_DIR
"""

import json
import sys

from zerojit.contract.backends import cutedsl as cutedsl_backend


def fa4_cache_size():
    from flash_attn.cute.interface import _flash_attn_fwd

    return len(_flash_attn_fwd.compile_cache.cache)


def mla(facts):
    from zerojit.migrate.fa4_mla_prefill.kernel import FA4MLAPrefill, MLADims

    kernel = FA4MLAPrefill()
    key = kernel.dispatch(
        batch_size=1,
        dtype="bf16",
        num_heads=16,
        dims=MLADims(128, 64, 128),
        max_seqlen_q=1,
        max_seqlen_k=128,
        requires_v_padding=False,
        causal=True,
        fa_version=4,
        num_splits=1,
    )
    facts["before"] = fa4_cache_size()
    facts["first"] = kernel.compile(key).value
    facts["after_first"], facts["variants"] = fa4_cache_size(), kernel.variant_count()
    facts["second"] = kernel.compile(key).value
    facts["after_second"] = fa4_cache_size()


def inkling(facts):
    from zerojit.migrate.fa4_mla_prefill.kernel import FA4MLAPrefill
    from zerojit.migrate.inkling_rel_attention.kernel import InklingRelAttention

    kernel = InklingRelAttention("sm90")
    inputs = dict(
        is_local=True,
        num_heads=8,
        num_kv_heads=1,
        head_dim=128,
        rel_extent=512,
        dtype="bf16",
        kv_dtype="bf16",
        block_size=128,
        window_size=(511, 0),
        max_kv_len=512,
    )
    key = kernel.dispatch(**inputs, query_len=3, num_reqs=2)
    facts["key"] = key.as_dict()
    facts["before"] = fa4_cache_size()
    facts["first"] = kernel.compile(key).value
    facts["after_first"], facts["variants"] = fa4_cache_size(), kernel.variant_count()
    facts["mla_variants"] = FA4MLAPrefill().variant_count()
    for reqs in (1, 5, 30):  # other request counts in the same bucket reuse the variant
        kernel.launch(**inputs, query_len=4, num_reqs=reqs)
    facts["after_launches"] = fa4_cache_size()


def mla_sm100(facts):
    """sm_100a: a 257-row query is another variant than a 129-row one (max_m_blocks_leq_one flips)."""
    from zerojit.migrate.fa4_mla_prefill.kernel import MULTI_BLOCK_Q, Q_TILE, FA4MLAPrefill, MLADims

    kernel = FA4MLAPrefill()
    common = dict(
        batch_size=1,
        dtype="bf16",
        num_heads=16,
        dims=MLADims(128, 64, 128),
        max_seqlen_k=512,
        requires_v_padding=False,
        causal=True,
        fa_version=4,
        num_splits=0,
    )
    facts["before"] = fa4_cache_size()
    facts["one_block"] = kernel.compile(kernel.dispatch(**common, max_seqlen_q=Q_TILE + 1)).value
    facts["after_one_block"] = fa4_cache_size()
    multi = kernel.dispatch(**common, max_seqlen_q=MULTI_BLOCK_Q)
    facts["multi_block"] = kernel.compile(multi).value
    facts["after_multi_block"] = fa4_cache_size()
    facts["again"] = kernel.compile(multi).value
    facts["after_again"] = fa4_cache_size()


def inkling_sm100(facts):
    from zerojit.migrate.inkling_rel_attention.kernel import InklingRelAttention

    kernel = InklingRelAttention("sm100")
    key = kernel.dispatch(
        is_local=False,
        num_heads=8,
        num_kv_heads=1,
        head_dim=128,
        rel_extent=1024,
        dtype="bf16",
        kv_dtype="bf16",
        block_size=128,
        window_size=(-1, -1),
        max_kv_len=32768,
        query_len=1,
        num_reqs=4,
    )
    facts["key"] = key.as_dict()
    facts["before"] = fa4_cache_size()
    facts["first"] = kernel.compile(key).value
    facts["after_first"] = fa4_cache_size()
    facts["second"] = kernel.compile(key).value
    facts["after_second"] = fa4_cache_size()


def monitor(facts):
    from zerojit.contract.monitor import JitAfterWarmupError, JitMonitor
    from zerojit.migrate.fa4_mla_prefill.kernel import FA4MLAPrefill, MLADims

    kernel = FA4MLAPrefill()
    common = dict(
        batch_size=1,
        dtype="bf16",
        num_heads=16,
        dims=MLADims(128, 64, 128),
        max_seqlen_k=128,
        requires_v_padding=False,
        fa_version=4,
        num_splits=1,
    )
    warmed = kernel.dispatch(**common, max_seqlen_q=1, causal=True)
    kernel.compile(warmed)
    with JitMonitor("error").armed() as armed:
        kernel.compile(warmed)  # warmed: nothing to report
        facts["events_after_warmed_call"] = len(armed.events)
        try:
            kernel.compile(kernel.dispatch(**common, max_seqlen_q=1, causal=False))
        except JitAfterWarmupError as exc:
            facts["error"] = str(exc)


def reconfigure(facts):
    try:
        cutedsl_backend.configure("sm100", sys.argv[2] + "-other")
    except cutedsl_backend.BackendConfigError as exc:
        facts["refused"] = str(exc)
    try:
        from zerojit.contract.backends import flydsl as flydsl_backend

        flydsl_backend.configure()
    except RuntimeError as exc:
        facts["flydsl_refused"] = str(exc)


if __name__ == "__main__":
    check, cache_dir = sys.argv[1], sys.argv[2]
    cutedsl_backend.configure("sm100" if check.endswith("_sm100") else "sm90", cache_dir)
    observed: dict = {}
    {
        "mla": mla,
        "inkling": inkling,
        "reconfigure": reconfigure,
        "monitor": monitor,
        "mla_sm100": mla_sm100,
        "inkling_sm100": inkling_sm100,
    }[check](observed)
    print(json.dumps(observed))
