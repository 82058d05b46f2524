"""Random launches of the lifted kernels through vLLM's own launchers, for zero-JIT checks of a migrated tree.

Each launch is drawn the way the engine calls the launcher: the layer's facts, the runner's request and token
counts, cache slots, and for attn_res the calls a Kimi-K3 forward makes layer by layer. A launch is "in range"
where its shape stays in the key classes the legacy step warmed, and "beyond" where it leaves them (what neither
the legacy step nor the lift warms: the lift keeps the legacy keys). A GDN prefill is drawn alone or after the
decodes of a mixed batch, as a row slice of the batch's tensors. `launch_coverage` records the keys on the CPU
(a meta tensor's address counts its offset, so a slice's alignment shows); bench/lifted_launches.py makes the
same launches on a GPU.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import torch

from . import equivalence as lifts
from .meta_memory import MetaAllocations

MAX_SPEC_REQUESTS = 256  # vLLM's default max_num_seqs


def _real(meta: torch.Tensor, blocks: int | None = None) -> torch.Tensor:
    """A random CUDA tensor with a meta tensor's dtype and strides (`blocks` first-dimension rows)."""
    shape = (blocks or meta.shape[0], *meta.shape[1:])
    return torch.empty_strided(shape, meta.stride(), dtype=meta.dtype, device="cuda").normal_()


def _first_layer(tree: Any, config: Any) -> Any:
    """The first layer of the family's runner, built the way the one the registration read was (meta tensors)."""
    worker = tree.family.worker(config, tree.state.vllm_config, None)
    return next(iter(worker.model_runner.compilation_config.static_forward_context.values()))


def _gdn_layer(tree: Any, config: Any) -> tuple[Any, int, int, torch.Tensor, torch.Tensor]:
    """A GDN layer of the family's runner (`_first_layer`), its K and V head counts on this rank, and its A_log
    and dt_bias as CUDA tensors."""
    layer = _first_layer(tree, config)
    heads = (layer.num_k_heads // layer.tp_size, layer.num_v_heads // layer.tp_size)
    return layer, *heads, _real(layer.A_log), _real(layer.dt_bias)


def _post_conv(module: Any, tree: Any, config: Any, rng: random.Random, count: int):
    """A prefill of 1..8192 tokens (the three key classes mixed). Every other one follows the decodes of a mixed
    batch: the GDN layer passes the prefill part as row slices (`a_non_spec[num_decode_tokens:]`), which start
    off a 16-byte boundary where a row is not a multiple of 16 bytes (2 * HV bytes for `a` and `b`). Triton keys
    a pointer's alignment and the legacy step warmed aligned tensors: such a launch is "beyond"."""
    layer, h, hv, a_log, dt_bias = _gdn_layer(tree, config)
    k, v, dtype = layer.head_k_dim, layer.head_v_dim, layer.get_state_dtype()[0]
    max_reqs = tree.state.vllm_config.scheduler_config.max_num_seqs
    for index in range(count):
        length = rng.choice((1, 2, 16 * rng.randint(1, 512), rng.randint(1, 8192)))
        decodes = rng.randint(1, max_reqs) if index % 2 else 0
        conv = torch.randn(decodes + length, 2 * h * k + hv * v, dtype=dtype, device="cuda")[decodes:]
        a, b = (torch.randn(decodes + length, hv, dtype=dtype, device="cuda")[decodes:] for _ in range(2))
        module.fused_post_conv_prep(conv, a, b, a_log, dt_bias, h, k, v)
        yield "in range" if all(t.data_ptr() % 16 == 0 for t in (conv, a, b)) else "beyond"


def _sigmoid_gating(module: Any, tree: Any, config: Any, rng: random.Random, count: int):
    layer, h, hv, a_log, dt_bias = _gdn_layer(tree, config)
    conv_state, ssm_meta = layer.kv_cache
    dtype = conv_state.dtype
    max_reqs = tree.state.vllm_config.scheduler_config.max_num_seqs
    state = _real(ssm_meta, blocks=max_reqs + 1).mul_(0.01)  # block 0 is the null block, as in vLLM
    for _ in range(count):
        reqs = rng.randint(1, max_reqs)
        query, key = (torch.randn(1, reqs, h, layer.head_k_dim, dtype=dtype, device="cuda") for _ in range(2))
        a, b = (torch.randn(reqs, hv, dtype=dtype, device="cuda") for _ in range(2))
        slots = torch.tensor(rng.sample(range(1, max_reqs + 1), reqs), dtype=torch.int32, device="cuda")
        module.fused_sigmoid_gating_delta_rule_update(
            A_log=a_log,
            a=a,
            b=b,
            dt_bias=dt_bias,
            q=query,
            k=key,
            v=torch.randn(1, reqs, hv, layer.head_v_dim, dtype=dtype, device="cuda"),
            initial_state=state,
            inplace_final_state=True,
            cu_seqlens=torch.arange(reqs + 1, dtype=torch.int32, device="cuda"),
            ssm_state_indices=slots,
            use_qk_l2norm_in_kernel=True,
        )
        yield "in range"


def _causal_conv1d(module: Any, tree: Any, config: Any, rng: random.Random, count: int):
    """A prefill batch of 1..8 sequences of 1..512 tokens each, channel-last as the GDN layer passes it, on the
    layer's conv state (the cache layout the registration read, one slot a sequence). Every batch keeps the key
    classes of the legacy step's one token: the output `torch.empty_like(x)` keeps x's token stride (the conv
    dim), whatever the token count."""
    layer = _first_layer(tree, config)
    conv_meta = layer.kv_cache[0]
    dim, width, dtype = conv_meta.shape[1], layer.conv_kernel_size, conv_meta.dtype
    weight = torch.randn(dim, width, dtype=dtype, device="cuda")
    for _ in range(count):
        lengths = [rng.choice((1, rng.randint(1, 512))) for _ in range(rng.choice((1, rng.randint(1, 8))))]
        starts = [0, *itertools.accumulate(lengths)]
        states = _real(conv_meta, blocks=len(lengths) + 1)
        module.causal_conv1d_fn(
            torch.randn(starts[-1], dim, dtype=dtype, device="cuda").t(),
            weight,
            None,
            states,
            torch.tensor(starts, dtype=torch.int32, device="cuda"),
            cache_indices=torch.tensor(
                rng.sample(range(1, len(lengths) + 1), len(lengths)), dtype=torch.int32, device="cuda"
            ),
            has_initial_state=torch.tensor([rng.random() < 0.5 for _ in lengths], dtype=torch.bool, device="cuda"),
            activation="silu",
        )
        yield "in range"


def _batch_memcpy(module: Any, tree: Any, config: Any, rng: random.Random, count: int):
    """Copies between two buffers, and within one where a copy's target starts below its source and overlaps it
    (the kernel's left-overlap case); each copy of a batch owns its slot, as the programs run concurrently. The
    whole target buffer is compared with the copies made one by one in torch."""
    slot, slots = 1 << 18, 64
    source = torch.randint(0, 256, (slot * slots,), dtype=torch.uint8, device="cuda")
    target = torch.randint(0, 256, (slot * slots,), dtype=torch.uint8, device="cuda")

    def pointers(tensor: torch.Tensor, offsets: list[int]) -> torch.Tensor:
        return torch.tensor([tensor.data_ptr() + o for o in offsets], dtype=torch.uint64, device="cuda")

    for _ in range(count):
        copies, within = rng.randint(1, slots), rng.random() < 0.5
        sizes = [rng.randint(1, slot // 4) for _ in range(copies)]
        dst_offsets = [i * slot + rng.randrange(0, slot // 2) for i in range(copies)]
        if within:  # overlapping and starting above the target, in the copy's own slot
            src_offsets = [d + rng.randint(1, size) for d, size in zip(dst_offsets, sizes, strict=True)]
        else:
            src_offsets = [rng.randrange(0, source.numel() - size) for size in sizes]
        origin = target if within else source
        expected = None if target.is_meta else target.clone()
        for src, dst, size in zip(src_offsets, dst_offsets, sizes, strict=True) if expected is not None else ():
            expected[dst : dst + size] = (expected if within else source)[src : src + size].clone()
        module.batch_memcpy(
            pointers(origin, src_offsets),
            pointers(target, dst_offsets),
            torch.tensor(sizes, dtype=torch.int32, device="cuda"),
        )
        if expected is not None:
            assert torch.equal(target, expected), "batch_memcpy copied wrong bytes"
        yield "in range"


def attn_res_calls(layers: int, block_size: int, max_blocks: int) -> Iterator[tuple[int, bool, int, bool]]:
    """(num_blocks, has delta, block_write_idx, has output norm) of each attn_res call of a Kimi-K3 forward on one
    pipeline rank: each decoder layer mixes its blocks before attention (layer 0 has no delta yet) and after the
    MLP (a layer that writes a block starts a new prefix), then the model mixes them for its output."""
    for index in range(layers):
        writes, valid = index % block_size == 0, -(-index // block_size)
        yield valid, index > 0, index // block_size if writes else -1, True
        yield (valid + 1, False, -1, True) if writes else (valid, True, -1, True)
    yield max_blocks, True, -1, False


def _attn_res(module: Any, tree: Any, config: Any, rng: random.Random, count: int):
    """Every other launch a profile of the legacy step's, with a decode batch (1..255 tokens: the step warmed
    one); the others a call of the model's forward, at decode or prefill size, in range only where it is both."""
    text = tree.state.vllm_config.model_config.hf_text_config
    hidden, dtype = text.hidden_size, tree.state.vllm_config.model_config.dtype
    max_blocks = -(-text.num_hidden_layers // text.attn_res_block_size)
    profiles = module.get_attn_res_triton_warmup_profiles(max_blocks)
    forward = list(attn_res_calls(text.num_hidden_layers, text.attn_res_block_size, max_blocks))
    norm, qk, output_norm = (torch.randn(hidden, dtype=dtype, device="cuda") for _ in range(3))
    eps = float(text.rms_norm_eps)
    for index in range(count):
        from_forward = index % 2 == 1
        call = rng.choice(forward if from_forward else profiles)
        tokens = rng.randint(256, 4096) if from_forward and rng.random() < 0.2 else rng.randint(1, 255)
        num_blocks, has_delta, write, has_output_norm = call
        prefix = torch.randn(tokens, hidden, dtype=dtype, device="cuda")
        module.attn_res(
            prefix,
            torch.randn_like(prefix) if has_delta else None,
            torch.randn(tokens, max_blocks, hidden, dtype=dtype, device="cuda"),
            norm,
            qk,
            output_norm if has_output_norm else None,
            num_blocks=num_blocks,
            block_write_idx=write,
            eps=eps,
            output_norm_eps=eps if has_output_norm else 0.0,
        )
        yield "in range" if call in profiles and tokens < 256 else "beyond"


def _recurrent_kda(module: Any, tree: Any, config: Any, rng: random.Random, count: int):
    """Speculative decode steps of 1..MAX_SPEC_REQUESTS requests of `num_spec + 1` tokens, launched as the KDA
    layer launches them: q, k and v split from the short convolution's fresh output, the raw gate its own
    projection, beta a column of the layer's packed projection (rows padded to 16 elements), and each token its
    own state slot. Every other step shares its batch with prefills or plain decodes: the gate, beta and output
    are row slices of the batch's, starting after the other tokens where those come first."""
    layer = _first_layer(tree, config)
    h, d, tokens_per_request = layer.local_num_heads, layer.head_dim, layer.num_spec + 1
    dtype = layer.model_config.dtype
    beta_column = 4 * h * d + d  # after q, k, v, the output gate and f_a
    width = beta_column + h
    width += -width % 16
    state = _real(layer.kv_cache[1], blocks=MAX_SPEC_REQUESTS * tokens_per_request + 1).mul_(0.01)
    a_log, dt_bias = _real(layer.A_log), _real(layer.dt_bias)
    for index in range(count):
        requests = rng.randint(1, MAX_SPEC_REQUESTS)
        tokens = requests * tokens_per_request
        others = rng.randint(1, 512) if index % 2 else 0
        start = others if rng.random() < 0.5 else 0
        rows = slice(start, start + tokens)
        projected = torch.randn(tokens + others, width, dtype=dtype, device="cuda")
        beta = projected[:, beta_column : beta_column + h].unsqueeze(0)[:, rows]
        gate = torch.randn(1, tokens + others, h, d, dtype=dtype, device="cuda")[:, rows]
        out = torch.empty(1, tokens + others, h, d, dtype=dtype, device="cuda")[:, rows]
        q, k, v = (
            x.view(1, tokens, h, d)
            for x in torch.randn(tokens, 3 * h * d, dtype=dtype, device="cuda").split(h * d, dim=-1)
        )
        slots = rng.sample(range(1, state.shape[0]), tokens)
        module.fused_recurrent_kda(
            q=q,
            k=k,
            v=v,
            raw_g=gate,
            raw_beta=beta,
            A_log=a_log,
            dt_bias=dt_bias,
            lower_bound=layer.gate_lower_bound,
            initial_state=state,
            cu_seqlens=torch.arange(0, tokens + 1, tokens_per_request, dtype=torch.int32, device="cuda"),
            ssm_state_indices=torch.tensor(slots, dtype=torch.int32, device="cuda").view(requests, -1),
            num_accepted_tokens=torch.tensor(
                [rng.randint(1, tokens_per_request) for _ in range(requests)], dtype=torch.int32, device="cuda"
            ),
            out=out,
        )
        yield "in range" if all(t.data_ptr() % 16 == 0 for t in (gate, beta, out)) else "beyond"


def _mtp_decode(module: Any, tree: Any, config: Any, rng: random.Random, count: int):
    """Speculative decode steps of 1..max_num_seqs requests of `num_spec + 1` tokens, launched as the GDN layer's
    fused MTP decode launches them (both kernels, one after the other): q, k, v and the output gate split from one
    projection's rows, b and a chunked from another's, each request's state slots a row of the runner's slot table
    and its accepted-token count, the state the layer's bound SSM state. The request count only picks the value
    tile against the compute units, which the legacy step warmed each of: every step stays in range."""
    layer, h, hv, a_log, dt_bias = _gdn_layer(tree, config)
    k, v, dtype = layer.head_k_dim, layer.head_v_dim, layer.model_config.dtype
    conv_dim, tokens_per_request = 2 * h * k + hv * v, layer.num_spec + 1
    max_reqs = tree.state.vllm_config.scheduler_config.max_num_seqs
    state = _real(layer.kv_cache[1], blocks=max_reqs * tokens_per_request + 1).mul_(0.01)  # block 0: the null block
    norm_weight = _real(layer.norm.weight)
    slots = rng.sample(range(1, state.shape[0]), max_reqs * tokens_per_request)
    table = torch.tensor(slots, dtype=torch.int32, device="cuda").view(max_reqs, tokens_per_request)
    starts = torch.arange(0, (max_reqs + 1) * tokens_per_request, tokens_per_request, dtype=torch.int32, device="cuda")
    for _ in range(count):
        requests = rng.randint(1, max_reqs)
        tokens = requests * tokens_per_request
        projected = torch.randn(tokens, conv_dim + hv * v, dtype=dtype, device="cuda")
        mixed_qkv, output_gate = projected.split([conv_dim, hv * v], dim=-1)
        b, a = torch.randn(tokens, 2 * hv, dtype=dtype, device="cuda").chunk(2, dim=-1)
        accepted = [rng.randint(1, tokens_per_request) for _ in range(requests)]
        module.fused_gdn_decode_post_conv_mtp_triton(
            mixed_qkv=mixed_qkv,
            a=a,
            b=b,
            A_log=a_log,
            dt_bias=dt_bias,
            state_indices=table[:requests],
            cu_seqlens=starts[: requests + 1],
            num_accepted_tokens=torch.tensor(accepted, dtype=torch.int32, device="cuda"),
            state=state,
            output_gate=output_gate.reshape(tokens, hv, v),
            norm_weight=norm_weight,
            out=torch.empty(tokens, hv, v, dtype=dtype, device="cuda"),
            scale=k**-0.5,
            norm_eps=1e-6,
            output_gate_activation=layer.norm.activation,
        )
        yield "in range"


class Served(NamedTuple):
    equivalence: type  # the family's key-equivalence adapter: how its tree runs
    configs: list  # the serving configurations launched
    launches: Callable[..., Iterator[str]]  # (kernel module, tree, config, rng, count) -> each launch's range


_GDN_CONFIGS = [lifts.GdnTritonConfig(), lifts.GdnTritonConfig(model="qwen3.5-moe", tp_size=2, dtype="fp16")]
_MTP_CONFIGS = [
    lifts.MtpConfig(model="qwen3.5-moe"),
    lifts.MtpConfig(model="qwen3.5-moe", tp_size=2, num_spec=3, num_sms=132),
]
SERVING = {
    # Qwen3-Next at TP8 has 4 V heads a rank: a mixed batch's prefill slices of `a` and `b` can be misaligned.
    "fla-fused-post-conv": Served(
        lifts.FusedPostConvEquivalence, [*_GDN_CONFIGS, lifts.GdnTritonConfig(tp_size=8)], _post_conv
    ),
    "fla-sigmoid-gating": Served(lifts.SigmoidGatingEquivalence, _GDN_CONFIGS, _sigmoid_gating),
    "mamba-causal-conv1d": Served(lifts.CausalConv1dEquivalence, _GDN_CONFIGS, _causal_conv1d),
    "mamba-batch-memcpy": Served(lifts.BatchMemcpyEquivalence, [lifts.MambaConfig()], _batch_memcpy),
    "kimi-k3-attn-res": Served(
        lifts.AttnResEquivalence,
        [lifts.KimiConfig(), lifts.KimiConfig(model="kimi-k3-small", attn_res_block_size=12, dtype="fp16")],
        _attn_res,
    ),
    # Qwen3.5's layout (Qwen3-Next's interleaved one runs no fused decode), bf16; 2 and 4 tokens a request, and
    # compute-unit counts that put the value tile's thresholds at other request counts.
    "fla-gdn-mtp-update": Served(lifts.MtpUpdateEquivalence, _MTP_CONFIGS, _mtp_decode),
    "fla-gdn-mtp-rmsnorm": Served(lifts.MtpNormEquivalence, _MTP_CONFIGS, _mtp_decode),
    "kimi-k3-recurrent-kda": Served(
        lifts.RecurrentKdaEquivalence,
        [lifts.KdaConfig(num_spec=3, kda_heads=8), lifts.KdaConfig(dtype="fp16", num_spec=1, kda_heads=2)],
        _recurrent_kda,
    ),
}


def serving_trees(root: Path, families: Iterable[str] = SERVING):
    """(family, spec, the migrated tree as the family runs it, serving configuration), for each configuration."""
    for family in families:
        adapter = SERVING[family].equivalence(migrated_tree=root)
        for config in SERVING[family].configs:
            yield family, adapter.spec, adapter.migrated, config


def launched(family: str, spec: Any, tree: Any, config: Any, rng: random.Random, launches: int, cold) -> dict:
    """Launch counts and how many of them `cold()` saw compile, by whether the launch stays in the legacy step's
    key classes (`cold()`: compiles since it was last asked, read after each launch)."""
    by_range: dict[str, dict[str, int]] = {}

    def run() -> None:
        module = tree.sources.module(spec.kernel.module)
        cold()
        for where in SERVING[family].launches(module, tree, config, rng, launches):  # each yield follows one launch
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
        with triton_backend.jit_keys_recorded() as recorded, MetaAllocations():
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
