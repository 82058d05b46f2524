"""The FLA gated-RMS-norm family (Triton): real sm_90 compiles of vLLM's own kernel, and its keys against Triton's.

Compiles run in child processes (triton_compile_probe.py): Triton's LLVM and its process-wide
driver stay out of the pytest process.
"""

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from zerojit.contract import ServingLimits
from zerojit.migrate.fla_layer_norm.equivalence import MODELS, TP_SIZES, GdnConfig
from zerojit.migrate.fla_layer_norm.kernel import GatedNorm, LayerNormFwd

pytestmark = pytest.mark.release_tree

PROBE = Path(__file__).with_name("triton_compile_probe.py")


def probe(*args):
    result = subprocess.run([sys.executable, str(PROBE), *map(str, args)], capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def zerojit(*args):
    result = subprocess.run(
        [sys.executable, "-m", "zerojit", *args, "--json"], capture_output=True, text=True, timeout=1800
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout)


def test_vllm_033s_own_warmup_and_zerojits_keys_make_triton_compile_the_same_specializations(tmp_path):
    """The oracle is Triton itself: vLLM 0.33.0's standalone step runs its kernel's real compile path (the tree's
    `LayerNormFwdKernel.compile` -> the JIT'd kernel's warmup), and Triton's JIT hook records each specialization
    it would compile; zerojit's keys go through the same kernel and hook."""
    configs = [
        GdnConfig(model=model, num_sms=sms, tp_size=tp, dtype=dtype, scheduler=scheduler)
        for model, sms, tp, dtype, scheduler in [
            ("qwen3-next", 132, 4, "bf16", (256, 8192, 32768)),
            ("qwen3.5-moe", 148, 1, "fp16", (16, 513, 4096)),
            ("qwen4-exp-v72", 114, 8, "bf16", (1, 1, 16)),
            ("qwen3-next", 132, 2, "fp16", (1024, 16384, 65536)),
        ]
    ]
    seen = probe("oracle", tmp_path, json.dumps([dataclasses.asdict(c) for c in configs]))
    for config, found in zip(configs, seen):
        assert found["legacy"] and found["legacy"] == found["migrated"], config
        assert {name for name, _ in found["legacy"]} == {"layer_norm_fwd_kernel"}
        assert len(found["legacy"]) == len(distinct_launches(config))


def distinct_launches(config: GdnConfig) -> set:
    """By hand from the kernel's launcher: per token count, the row count M = tokens x value heads per rank, its
    integer class for Triton (exactly 1 / a multiple of 16 / other) and rows per program (M over two programs per
    SM, up to a power of two, at most 4). Group width, strides and dtypes are the same for every launch."""
    rows = config.shape.num_v_heads // config.tp_size
    launches = set()
    for tokens in range(1, config.scheduler[1] + 1):
        m = tokens * rows
        per_program = 1
        while per_program < -(-m // (2 * config.num_sms)) and per_program < 4:
            per_program *= 2
        launches.add((m == 1, m % 16 == 0, per_program))
    return launches


def test_one_key_compiles_a_real_sm90_cubin_once_and_a_later_variant_is_reported(tmp_path):
    facts = probe("compile", tmp_path)
    assert (facts["first"], facts["again"], facts["variants"]) == ("compiled", "cached", 1)
    assert facts["cubin_magic"] == "7f454c46" and facts["cubin_bytes"] > 4096  # an ELF cubin with code in it
    assert facts["target"] == "GPUTarget(backend='cuda', arch=90, warp_size=32)"
    (event,) = facts["events"]  # one report per compile, with the specialization Triton compiled
    assert event.startswith("triton compiled layer_norm_fwd_kernel after warmup") and "'ROWS_PER_BLOCK': 4" in event
    assert facts["variants_after"] == 2


def test_a_second_target_or_an_unknown_one_is_refused_in_one_line(tmp_path):
    refused = probe("refusals", tmp_path)
    assert refused["sm100"].startswith("this process compiles Triton kernels for sm90; sm100 needs a process")
    assert refused["gfx950"].startswith("this process compiles Triton kernels for sm90; gfx950 needs a process")
    assert refused["tpu7"] == "the Triton backend compiles for NVIDIA (sm*) or AMD (gfx*) targets, not 'tpu7'"


def test_preset_warmup_compiles_every_variant_then_loads_them_and_verify_grows_nothing(tmp_path):
    cache = tmp_path / "cache"
    planned = zerojit("plan", "--preset", "qwen3-next-h200", "--variants", "--cache-dir", str(cache))
    cold = zerojit("warmup", "--preset", "qwen3-next-h200", "--cache-dir", str(cache))
    assert (cold["compiled"], cold["cached"], cold["failed"]) == (planned["total_variants"], 0, 0) == (6, 0, 0)
    warm = zerojit("warmup", "--preset", "qwen3-next-h200", "--cache-dir", str(cache))  # a new process: from disk
    assert (warm["compiled"], warm["cached"]) == (0, 6) and warm["kernels"][0]["variants"] == 6
    verify = zerojit("verify", "--preset", "qwen3-next-h200", "--launches", "300", "--cache-dir", str(cache))
    assert verify["cache_growth"] == 0 and verify["launches"] == 300 and not verify["post_warmup_compiles"]


def test_the_key_space_is_every_token_count_a_step_holds():
    """Brute force: every row count a server can launch (1..max_num_batched_tokens tokens) dispatches into the
    planned keys, and every planned key is some row count's."""
    kernel = LayerNormFwd(num_sms=132)
    for model in MODELS.values():
        for tp in TP_SIZES:
            norm = GatedNorm(
                rows_per_token=model.num_v_heads // tp,
                group_size=model.head_v_dim,
                weight_dtype="bf16",
                norm_before_gate=True,
                activation="silu",
            )
            limits = ServingLimits(max_num_seqs=16, max_num_batched_tokens=2048, max_model_len=4096, tp_size=tp)
            shape = LayerNormFwd.launch_shape(limits, norm)
            launched = {
                kernel.dispatch(**shape, num_rows=tokens * norm.rows_per_token)
                for tokens in range(1, limits.max_num_batched_tokens + 1)
            }
            assert set(kernel.warmup_keys(limits, norm=norm)) == launched


def test_every_launch_dispatches_as_vllms_own_launcher_does():
    """Per launch, not per set: for every row count a step can hold, zerojit's dispatch is the key vLLM 0.33.0's
    `LayerNormFwdKernel.dispatch` gives for the arguments its `__call__` passes (rows per program from the tree's
    own `calc_rows_per_block`), run from the release's tree."""
    from zerojit.contract.limits import torch_dtype
    from zerojit.migrate.engine_trees.releases import vllm_tree
    from zerojit.migrate.engine_trees.warmup import TreeWarmup
    from zerojit.migrate.fla_layer_norm.engine_kernel import KERNEL_MODULE
    from zerojit.migrate.fla_layer_norm.legacy import GdnEngine
    from zerojit.migrate.fla_layer_norm.spec import SPEC

    engine = GdnEngine()
    tree = TreeWarmup(vllm_tree("0.33.0"), SPEC, engine)
    for config in (
        GdnConfig(num_sms=132, tp_size=4),
        GdnConfig(model="qwen4-exp-v72", num_sms=114, tp_size=8, dtype="fp16", activation="sigmoid"),
    ):
        norm, kernel = config.norm(), LayerNormFwd(config.num_sms)
        shape = LayerNormFwd.launch_shape(config.limits(), norm)
        dtype = torch_dtype(config.dtype)

        def vllm_keys():
            module = tree.sources.module(KERNEL_MODULE)
            vllm_kernel, device = module._LAYER_NORM_FWD_KERNEL, torch.device("cuda", 0)
            block_n = min(65536 // dtype.itemsize, 1 << (norm.group_size - 1).bit_length())  # as __call__ computes it
            aligned = {f"{name}_aligned": True for name in ("x", "y", "weight", "bias", "z", "mean", "rstd")}
            return [
                engine.to_key(
                    vllm_kernel.dispatch(
                        x_dtype=dtype,
                        y_dtype=dtype,
                        weight_dtype=dtype,
                        bias_dtype=None,
                        z_dtype=dtype,
                        mean_dtype=None,
                        rstd_dtype=torch.float32,
                        **aligned,
                        stride_x_row=norm.group_size,
                        stride_y_row=norm.group_size,
                        stride_z_row=norm.group_size,
                        M=m,
                        N=norm.group_size,
                        BLOCK_N=block_n,
                        ROWS_PER_BLOCK=module.calc_rows_per_block(m, device),
                        norm_before_gate=True,
                        is_rms_norm=True,
                        activation=config.activation,
                    )
                )
                for m in rows
            ]

        rows = [tokens * norm.rows_per_token for tokens in range(1, 4097)]
        assert tree.within(config, vllm_keys) == [kernel.dispatch(**shape, num_rows=m) for m in rows]
