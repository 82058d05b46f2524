"""FA4 MLA prefill and Inkling: key counts derived here from the stated rules, and the
registered-but-empty facts (upstream has it on sm100; the project's implementation does not)."""

import dataclasses
import itertools
import json
import math

import pytest
from typer.testing import CliRunner

from zerojit.contract import ServingLimits, WarmupRegistry
from zerojit.migrate.cli import app
from zerojit.migrate.fa4_mla_prefill.equivalence import FA4MLAEquivalence, MLAConfig
from zerojit.migrate.fa4_mla_prefill.kernel import SUPPORTED_DIMS, MLADims, select_fa_version
from zerojit.migrate.fa4_mla_prefill.model import FlashAttnPrefillBackend, MLAModel
from zerojit.migrate.inkling_rel_attention.kernel import InklingModel
from zerojit.migrate.inkling_rel_attention.model import InklingAttention

LIMITS = ServingLimits(max_num_seqs=128, max_num_batched_tokens=16384, max_model_len=32768, tp_size=8)
# DESIGN §4's six probes, plus the two multi-M-block probes this project adds (Sq = 257).
PROBES = [(1, 128), (129, 512), (1, 4096), (129, 4096), (1, 8192), (129, 8192), (257, 512), (257, 8192)]


def expected_mla_keys(arch, dims, splits):
    """DESIGN §4: a probe is kept when Sk < 4096, or splits != 1 and Sk = 4096, or splits != 1 and
    Sk = 8192 off sm90 with QK != V; each kept probe compiles causal x LSE."""
    kept = [
        (q, k)
        for q, k in PROBES
        if k < 4096
        or (splits != 1 and k == 4096)
        or (
            splits != 1
            and k == 8192
            and arch != "sm90"
            and dims.qk_nope_head_dim + dims.qk_rope_head_dim != dims.v_head_dim
        )
    ]
    return 4 * len(kept)


def mla_plan(arch, model, **limit_changes):
    limits = LIMITS.replace(arch=arch, **limit_changes)
    registry = WarmupRegistry(limits)
    with registry.capture():
        backend = FlashAttnPrefillBackend(limits, model)
    return backend, registry.plan()


@pytest.mark.parametrize(
    "arch, forced, splits", [("sm90", 4, 1), ("sm100", None, 0), ("sm103", None, 0), ("sm120", 4, 1)]
)
@pytest.mark.parametrize("dims", SUPPORTED_DIMS)
def test_mla_key_counts(arch, forced, splits, dims):
    backend, plan = mla_plan(arch, MLAModel(128, dims, forced_fa_version=forced))
    if backend.fa_version != 4:  # e.g. sm100 with a 256-wide QK and 256-wide V... or FA2 fallbacks
        assert plan.kernels == []
        return
    family = "sm100" if arch in ("sm100", "sm103") else arch
    assert plan.total_keys == expected_mla_keys(family, dims, splits)
    keys = plan.kernels[0].keys
    assert {k.num_splits for k in keys} == {splits}
    assert all(k.softmax_scale == (dims.qk_nope_head_dim + dims.qk_rope_head_dim) ** -0.5 for k in keys)
    assert all(k.q_shape[1] == 16 for k in keys)  # 128 heads / TP8


def test_mla_key_shapes_for_deepseek_v3():
    _, plan = mla_plan("sm100", MLAModel(128, MLADims(128, 64, 128)))
    key = next(k for k in plan.kernels[0].keys if (k.max_seqlen_q, k.max_seqlen_k) == (129, 512))
    assert key.q_shape == (129, 16, 192) and key.k_shape == (512, 16, 192) and key.v_shape == (512, 16, 128)
    assert key.v_stride == (16 * (128 + 128), 256, 1)
    assert key.cu_seqlens_q_shape == key.cu_seqlens_k_shape == (2,)


@pytest.mark.parametrize("dtype, expected", [("bf16", "bf16"), ("fp16", "fp16"), ("fp8", "bf16"), ("fp32", "bf16")])
def test_mla_dtype_coercion(dtype, expected):
    _, plan = mla_plan("sm100", MLAModel(128, MLADims(128, 64, 128)), dtype=dtype)
    assert {k.q_dtype for k in plan.kernels[0].keys} == {expected}


@pytest.fixture(scope="module")
def vllm029():
    return FA4MLAEquivalence()  # its legacy side runs vLLM 0.29.0 from the release's tree


def test_upstream_registers_then_expands_to_nothing_on_sm100(vllm029):
    """The upstream defect: the backend selects FA4 with (QK 192, V 128), expansion re-checks with QK only."""
    assert select_fa_version("sm100", 192, 128) == 4
    assert select_fa_version("sm100", 192, None) == 2
    assert vllm029.legacy.standalone_keys(MLAConfig("sm100", MLADims(128, 64, 128))) == set()
    result = CliRunner().invoke(app, ["plan", "--preset", "deepseek-v3-b200-vllm030", "--json"])
    plan = json.loads(result.stdout)
    assert plan["kernels"] == [
        {
            "kernel": "fa4_mla_prefill_upstream",
            "family": "fa4-mla-prefill",
            "backend": "cutedsl",
            "keys": 0,
            "empty": True,
        }
    ]
    assert plan["empty_kernels"] == ["fa4_mla_prefill_upstream"]


ARCHS = ("sm90", "sm100", "sm103", "sm110", "sm120", "sm121", "gfx942", "gfx950")


@pytest.mark.parametrize(
    "arch, dims, forced, invariant",
    list(itertools.product(ARCHS, SUPPORTED_DIMS + (MLADims(256, 0, 256),), (None, 3, 4), (False, True))),
)
def test_project_never_registers_an_empty_fa4(arch, dims, forced, invariant):
    backend, plan = mla_plan(arch, MLAModel(128, dims, forced_fa_version=forced, batch_invariant=invariant))
    assert plan.empty_kernels == []
    assert bool(plan.kernels) == (backend.fa_version == 4)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dims", SUPPORTED_DIMS + (MLADims(256, 0, 256),))
def test_fa_version_is_vllms_own_decision(vllm029, arch, dims):
    """select_fa_version against vLLM 0.29.0's fa_utils.get_flash_attn_version, run from its tree."""
    for forced, invariant in itertools.product((None, 2, 3, 4), (False, True)):
        config = MLAConfig(arch, dims, forced_fa_version=forced, batch_invariant=invariant)
        theirs = vllm029.legacy.within(
            config, lambda: vllm029.engine.backend_fa_version(config, dims.qk_head_dim, dims.v_head_dim)
        )
        assert select_fa_version(arch, dims.qk_head_dim, dims.v_head_dim, forced, invariant) == theirs, config


def test_mla_legacy_gates_as_vllm_029_ran_them(vllm029):
    forced = MLAConfig("sm90", MLADims(128, 64, 128), forced_fa_version=4)
    # vLLM's 6 probes at num_splits=0 on sm90: its own filter drops the two Sk=8192 ones -> 4 x causal x LSE.
    assert len(vllm029.legacy.standalone_keys(forced)) == 16
    for skipped in (
        {"is_pooling": True},
        {"use_mla": False},
        {"prefill_backend": "FLASHINFER"},
        {"enable_jit_warmup": False},
        {"forced_fa_version": None},
    ):  # sm90 without forcing runs FA3
        assert vllm029.legacy.standalone_keys(dataclasses.replace(forced, **skipped)) == set(), skipped


INKLING = InklingModel(
    num_heads=8,
    num_kv_heads=1,
    head_dim=128,
    rel_extent=1024,
    sliding_window=512,
    swa_num_heads=8,
    swa_num_kv_heads=1,
    swa_head_dim=128,
)


def inkling_plan(arch, **limit_changes):
    limits = ServingLimits(
        **{"max_num_seqs": 256, "max_num_batched_tokens": 8192, "max_model_len": 32768, "arch": arch, **limit_changes}
    )
    registry = WarmupRegistry(limits)
    with registry.capture():
        for index in range(4):
            InklingAttention(limits, INKLING, is_local=index % 2 == 1)
    return registry, registry.plan()


@pytest.mark.parametrize("tokens, seqs", [(8192, 256), (2048, 64), (8192, 2048), (1000, 1000)])
def test_inkling_sm90_count(tokens, seqs):
    """DESIGN §4: on sm90 the count is 2 x (ceil(log2 tokens) + 1), doubled when max_num_seqs > 1024."""
    registry, plan = inkling_plan("sm90", max_num_batched_tokens=tokens, max_num_seqs=seqs)
    assert registry.duplicates == 3  # four layers, one registration
    expected = 2 * (math.ceil(math.log2(tokens)) + 1) * (2 if seqs > 1024 else 1)
    assert plan.total_keys == expected


def brute_force_inkling_sm100(limits):
    """Every (layer, query, requests) point in range, with the split rules written out here."""
    keys = set()
    for local in (False, True):
        max_kv = 512 if local else limits.max_model_len
        for reqs in range(1, limits.max_num_seqs + 1):
            for query in range(1, limits.max_num_batched_tokens - reqs + 2):
                bucket = 1 << (query - 1).bit_length()
                if local:
                    splits = 1
                else:
                    tiles = -(-(bucket * 8) // 256)  # 8 query heads per KV head, 256 rows a tile
                    single = tiles == 1 and reqs == 1
                    target = 256 if single else (128 if tiles == 1 else 64)
                    cap = 128 if not single else (32 if max_kv <= 8192 else (64 if max_kv <= 65536 else 128))
                    splits = max(1, min(target // (reqs * tiles), cap, -(-max_kv // 128)))
                warps = None
                if splits > 1:
                    w = min(-(-reqs // 31), 32)
                    warps = 1 << (w - 1).bit_length()
                keys.add((local, bucket, splits, warps, reqs > 1024))
    return keys


def test_inkling_sm100_keys_equal_brute_force():
    limits = ServingLimits(max_num_seqs=64, max_num_batched_tokens=1024, max_model_len=32768, arch="sm100")
    registry = WarmupRegistry(limits)
    with registry.capture():
        InklingAttention(limits, INKLING, is_local=False)
    planned = {
        (k.is_local, k.max_seqlen_q, k.num_splits, k.num_warps_bucket, k.large_num_reqs)
        for k in registry.plan().kernels[0].keys
    }
    assert planned == brute_force_inkling_sm100(limits)


def test_inkling_registration_gate():
    registry, plan = inkling_plan("sm90", enable_jit_warmup=False)
    assert plan.kernels == []
