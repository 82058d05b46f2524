"""ROCm NVFP4-KV launchers: variant boundaries and key counts, derived here from the stated rules.

Expected key sets are computed by brute force over every in-range input with the
thresholds written out in this file, not by calling the launchers' own dispatch.
"""

import math
import sys

import pytest

from zerojit.codemods.spec import MigrationSpec, SpecError
from zerojit.contract import WarmupRegistry
from zerojit.migrate.families import get_preset
from zerojit.migrate.rocm_nvfp4 import legacy
from zerojit.migrate.rocm_nvfp4.kernel import (
    FusedNormRopeKVInsert,
    IndexDecode,
    IndexPrefill,
    SparseDecode,
    SparsePrefill,
    TopK,
)
from zerojit.migrate.rocm_nvfp4.model import build_model, nvfp4_kv_launchers
from zerojit.migrate.rocm_nvfp4.spec import SPEC

MI355X = get_preset("minimax-m3-nvfp4-mi355x-tp4")[1].limits


def limits(**changes):
    return MI355X.replace(**changes)


def planned_keys(lim):
    registry = WarmupRegistry(lim)
    with registry.capture():
        build_model(lim, num_layers=3)
    return {p.kernel.name: set(p.keys) for p in registry.plan().kernels}


def test_fused_insert_boundary_512_513():
    launcher = FusedNormRopeKVInsert()
    assert launcher.dispatch(num_tokens=512).large_batch is False
    assert launcher.dispatch(num_tokens=513).large_batch is True
    assert {
        k.large_batch for k in planned_keys(limits(max_num_batched_tokens=512, max_num_seqs=16))[launcher.name]
    } == {False}
    assert {k.large_batch for k in planned_keys(limits(max_num_batched_tokens=513))[launcher.name]} == {False, True}


def test_index_prefill_one_vs_two_8k_prompts():
    launcher = IndexPrefill()
    assert launcher.dispatch(num_prefill_tokens=8192).large is False  # one 8K prompt: shared kernel
    assert launcher.dispatch(num_prefill_tokens=2 * 8192).large is True  # two 8K prompts: large kernel
    assert {k.large for k in planned_keys(limits(max_num_batched_tokens=8192))[launcher.name]} == {False}
    assert {k.large for k in planned_keys(MI355X)[launcher.name]} == {False, True}


@pytest.mark.parametrize("rows, splits", [(1, 8), (16, 8), (17, 4), (64, 4), (65, 2), (256, 2), (257, 1)])
def test_sparse_decode_splits_by_rows(rows, splits):
    assert SparseDecode().dispatch(num_reqs=rows, query_len=1).num_splits == splits


@pytest.mark.parametrize(
    "max_num_seqs, spec, expected",
    [(16, (), {8}), (16, (4,), {8, 4}), (64, (2, 3), {8, 4, 2}), (512, (), {8, 4, 2, 1})],
)
def test_sparse_decode_key_count_at_max_rows(max_num_seqs, spec, expected):
    lim = limits(max_num_seqs=max_num_seqs, spec_query_lens=spec, max_num_batched_tokens=max(16384, 4 * max_num_seqs))
    assert {k.num_splits for k in planned_keys(lim)[SparseDecode.name]} == expected


def brute_force(lim):
    """Every launcher's variants over all in-range inputs, from the thresholds stated in launchers.py."""
    q_lens = (1, *lim.spec_query_lens)

    def next_pow2(v):
        return 1 << (v - 1).bit_length()

    return {
        FusedNormRopeKVInsert.name: {t > 512 for t in range(1, lim.max_num_batched_tokens + 1)},
        SparsePrefill.name: {1 if c <= 2048 else 2 for c in range(1, lim.max_model_len + 1)},
        IndexPrefill.name: {t > 12288 for t in range(1, lim.max_num_batched_tokens + 1)},
        IndexDecode.name: {
            (next_pow2(r * q), r * c > 65536)
            for r in range(1, lim.max_num_seqs + 1)
            for q in q_lens
            for c in range(q, lim.max_model_len + 1)
        },
        TopK.name: {(d, math.ceil(c / 4096)) for d in (False, True) for c in range(1, lim.max_model_len + 1)},
    }


def project(name, key):
    return {
        FusedNormRopeKVInsert.name: lambda k: k.large_batch,
        SparsePrefill.name: lambda k: k.combine_rounds,
        IndexPrefill.name: lambda k: k.large,
        IndexDecode.name: lambda k: (k.rows, k.buffered_score),
        TopK.name: lambda k: (k.decode, k.strips),
    }[name](key)


@pytest.mark.parametrize(
    "preset", ["minimax-m3-nvfp4-mi355x-tp4", "minimax-m3-nvfp4-mi355x-tp4-mtp3", "minimax-m3-nvfp4-mi355x-tp8-long"]
)
def test_planned_keys_equal_brute_force_over_all_inputs(preset):
    lim = get_preset(preset)[1].limits
    planned = planned_keys(lim)
    for name, expected in brute_force(lim).items():
        assert {project(name, k) for k in planned[name]} == expected, name


def test_published_preset_key_count():
    # fused 2 + sparse prefill 2 + sparse decode 1 + index prefill 2 + topk 3 strips x 2
    # + index decode: rows 1,2,4 direct; rows 8 (reqs 5..8) and 16 (reqs 9..16) both ways = 7.
    registry = WarmupRegistry(MI355X)
    with registry.capture():
        build_model(MI355X, num_layers=4)
    plan = registry.plan()
    assert plan.total_keys == 2 + 2 + 1 + 2 + 6 + 7
    assert registry.duplicates == 3 * 6  # four layers, one shared launcher set


@pytest.mark.parametrize("changes", [{"arch": "gfx942"}, {"kv_cache_dtype": "fp8"}, {"enable_jit_warmup": False}])
def test_registration_gate(changes):
    registry = WarmupRegistry(limits(**changes))
    with registry.capture():
        build_model(registry.limits, num_layers=2)
    assert registry.registrations == []


def test_legacy_sweep_misses_only_the_large_index_prefill():
    launchers = nvfp4_kv_launchers()
    for lim in (MI355X, limits(spec_query_lens=(4,))):
        old = legacy.legacy_keys(lim, launchers, serving_minimax=True)  # the legacy entry, run and recorded
        new = set().union(*planned_keys(lim).values())
        assert new - old == {IndexPrefill().dispatch(num_prefill_tokens=16384)} and old <= new
    assert legacy.legacy_keys(MI355X, launchers, serving_minimax=False) == set()


# Every variant bound, pinned on both sides of its exact boundary (values from the kernels' published and
# chosen bounds, see Thresholds): a moved threshold changes which kernel a launch runs.
@pytest.mark.parametrize(
    "launcher, field, below, above",
    [
        (IndexPrefill(), "large", {"num_prefill_tokens": 12288}, {"num_prefill_tokens": 12289}),
        (FusedNormRopeKVInsert(), "large_batch", {"num_tokens": 512}, {"num_tokens": 513}),
        (SparsePrefill(), "combine_rounds", {"max_context_len": 2048}, {"max_context_len": 2049}),
        (
            IndexDecode(),
            "buffered_score",
            {"num_reqs": 16, "query_len": 1, "max_context_len": 4096},
            {"num_reqs": 16, "query_len": 1, "max_context_len": 4097},
        ),
        (TopK(), "strips", {"context_len": 4096, "decode": True}, {"context_len": 4097, "decode": True}),
    ],
)
def test_variant_bounds_at_their_exact_boundary(launcher, field, below, above):
    low, high = getattr(launcher.dispatch(**below), field), getattr(launcher.dispatch(**above), field)
    assert (low, high) == {
        "large": (False, True),
        "large_batch": (False, True),
        "combine_rounds": (1, 2),
        "buffered_score": (False, True),
        "strips": (1, 2),
    }[field]


def test_legacy_entry_returns_early_for_other_models(monkeypatch):
    monkeypatch.delitem(sys.modules, legacy.MODEL_MODULE, raising=False)
    assert legacy.rocm_nvfp4_kv_warmup(MI355X, nvfp4_kv_launchers()) == 0


def test_migration_spec_is_valid_and_bad_specs_name_the_field():
    assert SPEC.kernel.name == "ROCM_NVFP4_KV_LAUNCHERS" and SPEC.kernel.private_name.startswith("_")
    fields = SPEC.fields()
    with pytest.raises(SpecError, match="legacy_module='vllm..warmup'"):
        MigrationSpec.from_fields({**fields, "legacy_module": "vllm..warmup"})
    with pytest.raises(SpecError, match="gate="):
        MigrationSpec.from_fields({**fields, "gate": "self.use_nvfp4_kv and"})
    with pytest.raises(SpecError, match="gate_imports"):
        MigrationSpec.from_fields({**fields, "gate_imports": ("import os",)})
