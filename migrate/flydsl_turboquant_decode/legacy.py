"""What vLLM 0.33.0 itself compiles for TurboQuant decode: its own decode path, run from its tree, recording.

Nothing in 0.33.0 warms these kernels: a server builds them in its first decode steps. So the legacy
side of `zerojit keys diff` is the engine's own code on the decode steps a server runs (one sequence
and `max_num_seqs`, each of length 1 and `max_model_len`): `TurboQuantAttentionImpl.__init__` (its
TurboQuant config, `max_num_kv_splits`, whether FlyDSL is available) and `_decode_attention` (which
layers take the FlyDSL decode) calling `flydsl_turboquant_decode_attention`, whose `_get_kernel`
derives the key and stores it in `_KERN_CACHE`. Each config starts as a fresh server: an empty
kernel cache and buffer pool.

Run from the tree: the backend, the launcher, the TurboQuant config, the block table's width
(`get_block_table_width`), math_utils. Stubbed with values, and only these:
  vllm.platforms.rocm.on_gfx950 (the arch under test), the logger, vllm.triton_utils (Triton);
  vllm.config.get_current_vllm_config (max_num_kv_splits, max_model_len, the largest CUDA-graph size);
  vllm.v1.worker.workspace (initialized, handing out the step's buffers as views of one allocation, as in a
  server; since the rest of the model sizes it, every step runs with it both within 2 GB and past it);
  vllm.v1.attention.backends.fa_utils (no FlashAttention: it serves prefill, which this does not run);
  FlyDSL's compiler in the launcher (`_FLYC.jit` keeps the function, `build_tq_decode_module` builds
  nothing: the key is what is recorded), the reduction's launch (recorded), and the SoA Triton
  decode that ineligible layers take (recorded as taken: its kernels are another family's).
Tensors are meta tensors of the step's real shapes.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import math
import types
from collections.abc import Iterator
from typing import Any

import torch

from zerojit.contract.backends.triton import value_class
from zerojit.contract.limits import serving_dtype, torch_dtype
from zerojit.migrate.engine_trees.sources import EngineSources

from .engine_kernel import KERNEL_MODULES, KERNEL_RELEASE, LAUNCHER_MODULE, engine_stubs
from .kernel import BUFFER_LIMIT, DecodeKey, ReduceKey

LEGACY_RELEASE = KERNEL_RELEASE
BACKEND_MODULE = "vllm.v1.attention.backends.turboquant_attn"
BLOCK_TABLE_MODULE = "vllm.v1.worker.block_table"
REAL_MODULES = (
    *KERNEL_MODULES,
    BACKEND_MODULE,
    BLOCK_TABLE_MODULE,
    "vllm.utils.math_utils",
    "vllm.model_executor.layers.quantization.turboquant.config",
)


class Workspace:
    """vLLM's workspace manager as the decode asks it: views of one buffer, which the rest of the model sizes,
    so it is run both ways: exactly what the decode asks for, or that plus `padding` bytes."""

    def __init__(self, padding: int):
        self.padding = padding

    def get_simultaneous(self, *specs: tuple[tuple[int, ...], torch.dtype]) -> list[torch.Tensor]:
        sizes = [math.prod(shape) * dtype.itemsize for shape, dtype in specs]
        buffer = torch.empty(sum(sizes) + self.padding, dtype=torch.uint8, device="meta")
        starts = itertools.accumulate([0, *sizes])
        return [
            buffer[start : start + size].view(dtype).view(shape)
            for start, size, (shape, dtype) in zip(starts, sizes, specs)
        ]


class EngineState:
    """The config under test, which the stubs read when engine code calls them (loaded modules are reused)."""

    config: Any = None
    workspace_padding = 0  # bytes the rest of the model adds to the workspace

    def vllm_config(self) -> types.SimpleNamespace:
        return types.SimpleNamespace(
            attention_config=types.SimpleNamespace(tq_max_kv_splits_for_cuda_graph=self.config.max_num_kv_splits),
            model_config=types.SimpleNamespace(max_model_len=self.config.max_model_len),
            compilation_config=types.SimpleNamespace(cudagraph_capture_sizes=[self.config.pool_rows]),
        )

    def on_gfx950(self) -> bool:
        return self.config.arch == "gfx950"


@functools.cache
def sources() -> tuple[EngineSources, EngineState]:
    from zerojit.migrate.engine_trees.releases import vllm_tree

    state = EngineState()
    stubs = {
        **engine_stubs(),
        "vllm.platforms.rocm": {"on_gfx950": state.on_gfx950},
        "vllm.config": {"get_current_vllm_config": state.vllm_config},
        "vllm.v1.worker.workspace": {
            "is_workspace_manager_initialized": lambda: True,
            "current_workspace_manager": lambda: Workspace(state.workspace_padding),
        },
        "vllm.v1.attention.backends.fa_utils": {
            "is_flash_attn_varlen_func_available": lambda: False,
            "get_flash_attn_version": lambda **_: None,
        },
    }
    return EngineSources(vllm_tree(LEGACY_RELEASE), "vllm", REAL_MODULES, stubs), state


def engine_keys(config: Any) -> list[DecodeKey | ReduceKey]:
    """The FlyDSL and Triton variants vLLM's own decode path builds for `config`'s decode steps."""
    engine, state = sources()
    state.config = config
    with engine.installed(config.arch == "gfx950"):  # the launcher decides FlyDSL's availability once per process
        backend, launcher = engine.module(BACKEND_MODULE), engine.module(LAUNCHER_MODULE)
        width = engine.module(BLOCK_TABLE_MODULE).get_block_table_width(
            engine.module("vllm.utils.math_utils").cdiv(config.max_model_len, config.block_size), config.block_size
        )
        with _recording(launcher) as launches:
            impl = backend.TurboQuantAttentionImpl(
                config.num_heads,
                config.head_size,
                config.scale,
                config.num_kv_heads,
                kv_cache_dtype=config.kv_cache_dtype,
                sliding_window=config.sliding_window,
                sinks=torch.empty(config.num_heads) if config.has_sinks else None,
            )
            impl._dispatch_decode_soa = lambda **_: None  # an ineligible layer's decode: not this family's kernels
            for padding, num_seqs, length in itertools.product(
                (0, BUFFER_LIMIT), sorted({1, config.max_num_seqs}), sorted({1, config.max_model_len})
            ):
                state.workspace_padding = padding
                impl._decode_attention(*_step(config, impl, num_seqs, length, width))
        builds, reductions = launches
        # Each kernel-cache miss builds once, in order: the key as the launcher stores it, the scale it compiles.
        keys: list[DecodeKey | ReduceKey] = [
            DecodeKey(*key, build["softmax_scale"]) for key, build in zip(launcher._KERN_CACHE, builds, strict=True)
        ]
    return keys + [_reduce_key(call) for call in reductions]


def _step(config: Any, impl: Any, num_seqs: int, length: int, width: int) -> tuple:
    """`_decode_attention`'s arguments for a decode step of `num_seqs` sequences of `length` tokens."""
    meta = {"device": "meta"}
    tq = impl.tq_config
    metadata = types.SimpleNamespace(
        block_table=torch.empty(num_seqs, width, dtype=torch.int32, **meta),
        seq_lens=torch.empty(num_seqs, dtype=torch.int32, **meta),
        max_seq_len=length,
    )
    query = torch.empty(num_seqs, config.num_heads, config.head_size, dtype=torch_dtype(config.dtype), **meta)
    kv_cache = torch.empty(
        4, config.block_size, config.num_kv_heads, tq.key_packed_size + tq.value_packed_size, dtype=torch.uint8, **meta
    )
    return (
        query,
        kv_cache,
        metadata,
        torch.empty(config.head_size, config.head_size, **meta),
        torch.empty(tq.n_centroids, **meta),
        None,
        types.SimpleNamespace(),
    )


@contextlib.contextmanager
def _recording(launcher: types.ModuleType) -> Iterator[tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    """The launcher as a fresh server has it, building nothing: its own `_get_kernel` fills `_KERN_CACHE` with the
    keys it derives; its builds (the arguments of `build_tq_decode_module`) and the reduction's launches are
    recorded with their arguments."""
    builds: list[dict[str, Any]] = []
    reductions: list[dict[str, Any]] = []

    def build(**arguments: Any) -> Any:
        builds.append(arguments)
        return lambda *args: types.SimpleNamespace(launch=lambda **_: None)

    class Reduction:
        def __getitem__(self, grid: Any) -> Any:
            return lambda **kwargs: reductions.append(kwargs)

    launcher._KERN_CACHE.clear()
    launcher._SEGM_POOL = launcher._SegmBufPool()
    available = launcher.is_flydsl_available()  # (it binds _TQ_MOD and _FLYC on its first call)
    saved = {name: getattr(launcher, name) for name in ("_reduce_partitions", "_TQ_MOD", "_FLYC")}
    stream = torch.cuda.current_stream
    if available:
        kernel_module = launcher._TQ_MOD
        launcher._TQ_MOD = types.SimpleNamespace(
            **{
                name: getattr(kernel_module, name)
                for name in ("HEAD_SIZE", "N_CENTROIDS", "KV_COMPUTE_BLOCK", "BLOCK_THREADS")
            },
            build_tq_decode_module=build,
        )
        launcher._FLYC = types.SimpleNamespace(jit=lambda function: function)
    launcher._reduce_partitions, torch.cuda.current_stream = Reduction(), lambda *_: None
    try:
        yield builds, reductions
    finally:
        torch.cuda.current_stream = stream
        for name, value in saved.items():
            setattr(launcher, name, value)


def _reduce_key(call: dict[str, Any]) -> ReduceKey:
    """A recorded reduction launch as zerojit's key (its buffers' dtypes checked: the key assumes them)."""
    output, partials, maxima, sums = (
        call[name] for name in ("output_ptr", "segm_out_ptr", "segm_max_ptr", "segm_sum_ptr")
    )
    if (partials.dtype, maxima.dtype, sums.dtype) != (torch.bfloat16, torch.float32, torch.float32):
        raise ValueError(f"the reduction's partial buffers are {partials.dtype}/{maxima.dtype}/{sums.dtype}")
    within = tuple(t.untyped_storage().nbytes() <= BUFFER_LIMIT for t in (output, partials, maxima, sums))
    return ReduceKey(
        serving_dtype(output.dtype),
        value_class(call["out_stride_n"]),
        value_class(call["out_stride_h"]),
        call["NUM_KV_HEADS"],
        call["QG"],
        call["NUM_PARTS"],
        call["HEAD_SIZE"],
        within,
    )
