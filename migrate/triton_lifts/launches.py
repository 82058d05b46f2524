"""Random launches of the lifted kernels through vLLM's own launchers, for zero-JIT checks of a migrated tree.

Each launch is drawn the way the engine calls the launcher (the layer's facts, the runner's request and token
counts), "in range" where its shape stays in the key classes the legacy step warmed (token and request counts,
cache slots, attn_res profiles drawn at random) and "beyond" where it leaves them (prefill-sized attn_res
batches, one-block profiles: what neither the legacy step nor the lift warms). `launch_coverage` records the
keys on the CPU; bench/lifted_launches.py makes the same launches on a GPU.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import torch

from . import equivalence as lifts

SERVING = {  # each family's equivalence adapter and the serving configurations launched
    "fla-fused-post-conv": (
        lifts.FusedPostConvEquivalence,
        [lifts.GdnTritonConfig(), lifts.GdnTritonConfig(model="qwen3.5-moe", tp_size=2, dtype="fp16")],
    ),
    "fla-sigmoid-gating": (
        lifts.SigmoidGatingEquivalence,
        [lifts.GdnTritonConfig(), lifts.GdnTritonConfig(model="qwen3.5-moe", tp_size=2, dtype="fp16")],
    ),
    "mamba-batch-memcpy": (lifts.BatchMemcpyEquivalence, [lifts.MambaConfig()]),
    "kimi-k3-attn-res": (
        lifts.AttnResEquivalence,
        [lifts.KimiConfig(), lifts.KimiConfig(model="kimi-k3-small", attn_res_block_size=12, dtype="fp16")],
    ),
}


def _real(meta: torch.Tensor, blocks: int | None = None) -> torch.Tensor:
    """A random CUDA tensor with a meta tensor's dtype and strides (`blocks` first-dimension rows)."""
    shape = (blocks or meta.shape[0], *meta.shape[1:])
    return torch.empty_strided(shape, meta.stride(), dtype=meta.dtype, device="cuda").normal_()


def _gdn_layer(tree: Any, config: Any) -> tuple[Any, int, int, torch.Tensor, torch.Tensor]:
    """The first GDN layer of the family's runner as its registration read it (meta tensors), its K and V head
    counts on this rank, and its A_log and dt_bias as CUDA tensors."""
    worker = tree.family.worker(config, tree.state.vllm_config, None)
    layer = next(iter(worker.model_runner.compilation_config.static_forward_context.values()))
    heads = (layer.num_k_heads // layer.tp_size, layer.num_v_heads // layer.tp_size)
    return layer, *heads, _real(layer.A_log), _real(layer.dt_bias)


def _post_conv(module: Any, tree: Any, config: Any, rng: random.Random, count: int):
    layer, h, hv, a_log, dt_bias = _gdn_layer(tree, config)
    k, v, dtype = layer.head_k_dim, layer.head_v_dim, layer.get_state_dtype()[0]
    for _ in range(count):
        length = rng.choice((1, 2, 16 * rng.randint(1, 512), rng.randint(1, 8192)))
        conv = torch.randn(length, 2 * h * k + hv * v, dtype=dtype, device="cuda")
        a, b = (torch.randn(length, hv, dtype=dtype, device="cuda") for _ in range(2))
        module.fused_post_conv_prep(conv, a, b, a_log, dt_bias, h, k, v)
        yield "in range"


def _sigmoid_gating(module: Any, tree: Any, config: Any, rng: random.Random, count: int):
    layer, h, hv, a_log, dt_bias = _gdn_layer(tree, config)
    k, v = layer.head_k_dim, layer.head_v_dim
    conv_state, ssm_meta = layer.kv_cache
    max_reqs = tree.state.vllm_config.scheduler_config.max_num_seqs
    state = _real(ssm_meta, blocks=max_reqs + 1).mul_(0.01)  # block 0 is the null block, as in vLLM
    for _ in range(count):
        reqs = rng.randint(1, max_reqs)
        q, kk = (torch.randn(1, reqs, h, k, dtype=conv_state.dtype, device="cuda") for _ in range(2))
        a, b = (torch.randn(reqs, hv, dtype=conv_state.dtype, device="cuda") for _ in range(2))
        slots = torch.tensor(rng.sample(range(1, max_reqs + 1), reqs), dtype=torch.int32, device="cuda")
        module.fused_sigmoid_gating_delta_rule_update(
            A_log=a_log,
            a=a,
            b=b,
            dt_bias=dt_bias,
            q=q,
            k=kk,
            v=torch.randn(1, reqs, hv, v, dtype=conv_state.dtype, device="cuda"),
            initial_state=state,
            inplace_final_state=True,
            cu_seqlens=torch.arange(reqs + 1, dtype=torch.int32, device="cuda"),
            ssm_state_indices=slots,
            use_qk_l2norm_in_kernel=True,
        )
        yield "in range"


def _batch_memcpy(module: Any, tree: Any, config: Any, rng: random.Random, count: int):
    slot, slots = 1 << 18, 64  # each copy of a batch writes a slot of its own: programs run concurrently
    source = torch.randint(0, 256, (slot * slots,), dtype=torch.uint8, device="cuda")
    target = torch.zeros_like(source)

    def pointers(tensor: torch.Tensor, offsets: list[int]) -> torch.Tensor:
        return torch.tensor([tensor.data_ptr() + o for o in offsets], dtype=torch.uint64, device="cuda")

    for _ in range(count):
        copies = rng.randint(1, slots)
        sizes = [rng.randint(1, slot // 4) for _ in range(copies)]
        starts = [rng.randrange(0, source.numel() - size) for size in sizes]
        ends = [i * slot + rng.randrange(0, slot - size) for i, size in enumerate(sizes)]
        module.batch_memcpy(
            pointers(source, starts), pointers(target, ends), torch.tensor(sizes, dtype=torch.int32, device="cuda")
        )
        for start, end, size in zip(starts, ends, sizes, strict=True) if not target.is_meta else ():
            assert torch.equal(target[end : end + size], source[start : start + size]), "a copy is wrong"
        yield "in range"


def _attn_res(module: Any, tree: Any, config: Any, rng: random.Random, count: int):
    text = tree.state.vllm_config.model_config.hf_text_config
    hidden, dtype = text.hidden_size, tree.state.vllm_config.model_config.dtype
    max_blocks = -(-text.num_hidden_layers // text.attn_res_block_size)
    profiles = module.get_attn_res_triton_warmup_profiles(max_blocks)
    norm, qk, output_norm = (torch.randn(hidden, dtype=dtype, device="cuda") for _ in range(3))
    for index in range(count):
        beyond = index % 10 == 9  # one launch in ten leaves the warmed key classes
        tokens = rng.randint(256, 4096) if beyond and index % 20 == 9 else rng.randint(1, 255)
        num_blocks, has_delta, write, apply_output_norm = rng.choice(profiles)
        if beyond and index % 20 == 19:
            num_blocks, write = 1, -1  # the first layers' residual: one valid block
        prefix = torch.randn(tokens, hidden, dtype=dtype, device="cuda")
        blocks = torch.randn(tokens, max_blocks, hidden, dtype=dtype, device="cuda")
        module.attn_res(
            prefix,
            torch.randn_like(prefix) if has_delta else None,
            blocks,
            norm,
            qk,
            output_norm if apply_output_norm else None,
            num_blocks=num_blocks,
            block_write_idx=write,
            eps=float(text.rms_norm_eps),
            output_norm_eps=float(text.rms_norm_eps) if apply_output_norm else 0.0,
        )
        yield "beyond" if beyond else "in range"


LAUNCHES = {
    "fla-fused-post-conv": _post_conv,
    "fla-sigmoid-gating": _sigmoid_gating,
    "mamba-batch-memcpy": _batch_memcpy,
    "kimi-k3-attn-res": _attn_res,
}


def serving_trees(root: Path, families: Iterable[str] = SERVING):
    """(family, spec, the migrated tree as the family runs it, serving configuration), for each configuration."""
    for family in families:
        equivalence, configs = SERVING[family]
        adapter = equivalence(migrated_tree=root)
        for config in configs:
            yield family, adapter.spec, adapter.migrated, config


def launched(family: str, spec: Any, tree: Any, config: Any, rng: random.Random, launches: int, cold) -> dict:
    """Launch counts and how many of them `cold()` saw compile, by whether the launch stays in the warmed key
    classes (`cold()`: compiles since it was last asked, read after each launch)."""
    by_range: dict[str, dict[str, int]] = {}

    def run() -> None:
        module = tree.sources.module(spec.kernel.module)
        cold()
        for where in LAUNCHES[family](module, tree, config, rng, launches):  # each yield follows one launch
            counts = by_range.setdefault(where, {"launches": 0, "compiles": 0})
            counts["launches"] += 1
            counts["compiles"] += cold()

    tree.within(config, run)
    return by_range


def launch_coverage(
    root: Path, launches: int, seed: int, families: Iterable[str] = SERVING
) -> Iterator[dict[str, Any]]:
    """The CPU check: Triton's key of every launch (recorded, nothing compiles) against the keys the registry
    warmed; a launch "compiles" when it asks for a key first, as it would on a GPU."""
    from zerojit.contract.backends import triton as triton_backend

    lifts.compile_only_triton()
    rng = random.Random(seed)
    for family, spec, tree, config in serving_trees(root, families):
        kernel = spec.kernel.name
        with triton_backend.jit_keys_recorded() as recorded, lifts.MetaAllocations():
            tree.registered_keys(config)
            warmed = {key for name, key in recorded if name == kernel}
            recorded.clear()
            count = len(warmed)

            def cold(kernel: str = kernel, held: set[str] = warmed) -> int:  # a key compiles once, then is held
                new = {key for name, key in recorded if name == kernel} - held
                recorded.clear()
                held |= new
                return len(new)

            by_range = launched(family, spec, tree, config, rng, launches, cold)
        yield {"family": family, "config": repr(config), "warmed_keys": count, **by_range}
