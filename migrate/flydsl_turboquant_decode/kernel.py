"""vLLM 0.33.0's TurboQuant decode attention on gfx950, on the warmup contract: its FlyDSL kernel and the Triton
reduction its launcher runs next.

`flydsl_turboquant_decode_attention` splits each sequence's KV into `num_partitions` partitions of
`tile_groups_per_partition` x 256 tokens, runs the FlyDSL kernel over them (one program per
sequence, KV head and partition) and reduces the partitions with `_reduce_partitions` (Triton).
The FlyDSL kernel is built per key (KV heads, partitions, block-table width, softmax scale, query
group size, KV block size, tile groups); partitions and tile groups come from the block table's
width (the worst-case sequence length, fixed once the model is loaded, so that CUDA/HIP graphs
replay the grid they captured) and `max_num_kv_splits`, rounded up to powers of two. The batch
size and the sequence lengths are runtime values: any decode step of a server compiles the same
two variants (checked: B = 1, 7, 64 and any KV-cache size trace to one FlyDSL artifact).
"""

from __future__ import annotations

import abc
import dataclasses
import math
from typing import Any, ClassVar

from zerojit.contract import (
    Choice,
    CompileKey,
    JitKernel,
    KeySpace,
    Outcome,
    Parallelism,
    Range,
    ServingLimits,
    Zip,
    next_power_of_two,
)
from zerojit.contract.backends import flydsl as flydsl_backend
from zerojit.contract.backends import triton as triton_backend
from zerojit.contract.backends.triton import VALUE_CLASS_REPRESENTATIVE, value_class
from zerojit.contract.kernel import BackendConfigError
from zerojit.contract.limits import torch_dtype

from .engine_kernel import FAMILY, compile_only_launches, launcher_module

HEAD_SIZE = 128  # the kernel's one head size
KV_COMPUTE_BLOCK = 256  # tokens one tile group of a partition covers (16 tiles of 16)
MAX_PARTITIONS = 32  # the launcher caps the split count, then loops over more tile groups
BLOCK_SIZES = (16, 32)  # KV block sizes the kernel walks
GROUP_SIZES = (6, 8, 16)  # query heads per KV head it computes
TOKEN_ALIGNMENT = 128  # vLLM pads a block table's width to whole 128-token runs
DEFAULT_POOL_ROWS = 512  # the launcher pools its buffers for this many sequences when vLLM names no CUDA-graph sizes
BUFFER_LIMIT = 2**31 - 1  # on AMD Triton specializes a pointer on its storage spanning at most this many bytes
ELEMENT_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}
KV_CACHE_DTYPES = {  # TurboQuant presets: (key bits, value bits); 8 key bits = FP8 keys
    "turboquant_k8v4": (8, 4),
    "turboquant_4bit_nc": (4, 4),
    "turboquant_k3v4_nc": (3, 4),
    "turboquant_3bit_nc": (3, 3),
}


@dataclasses.dataclass(frozen=True)
class TurboQuantLayer:
    """What a TurboQuant attention layer registers: its per-rank heads and its KV cache's format."""

    num_heads: int  # query heads per rank
    num_kv_heads: int  # KV heads per rank
    head_size: int
    block_size: int  # tokens per KV-cache block
    kv_cache_dtype: str  # a TurboQuant preset (KV_CACHE_DTYPES)
    scale: float  # the softmax scale
    sliding_window: int | None = None
    has_sinks: bool = False

    def takes_flydsl(self) -> bool:
        """Whether the backend's decode takes the FlyDSL kernel for this layer (else the SoA Triton decode)."""
        key_bits, value_bits = KV_CACHE_DTYPES[self.kv_cache_dtype]
        return (
            (key_bits, value_bits) == (4, 4)
            and self.head_size == HEAD_SIZE
            and self.num_heads // self.num_kv_heads in GROUP_SIZES
            and self.block_size in BLOCK_SIZES
            and not self.has_sinks
            and not (self.sliding_window and self.sliding_window > 0)
        )


def block_table_width(max_model_len: int, block_size: int) -> int:
    """Entries per request of the engine's block table: blocks for the longest sequence, padded to 128 tokens."""
    blocks = -(-max_model_len // block_size)
    alignment = TOKEN_ALIGNMENT // math.gcd(TOKEN_ALIGNMENT, block_size)
    return -(-blocks // alignment) * alignment


def partitions(block_table_width: int, block_size: int, max_num_kv_splits: int) -> tuple[int, int]:
    """(partitions, tile groups per partition) of a launch: enough to cover the block table's worst case, at least
    `max_num_kv_splits` and at most 32 partitions (2 at the least), each count a power of two."""
    required = -(-(block_table_width * block_size) // KV_COMPUTE_BLOCK)
    floor = min(MAX_PARTITIONS, max(1, max_num_kv_splits))
    num_partitions = max(2, next_power_of_two(max(floor, min(MAX_PARTITIONS, required))))
    return num_partitions, next_power_of_two(max(1, -(-required // num_partitions)))


@dataclasses.dataclass(frozen=True)
class DecodeKey(CompileKey):
    """The launcher's `_KERN_CACHE` key, field for field, and the softmax scale the kernel is built with: the
    launcher keys the scale rounded to 8 decimals but compiles the exact one into the kernel, so a variant built
    from the rounded scale is another artifact, which a server would compile again."""

    num_kv_heads: int
    num_partitions: int
    max_blocks_per_seq: int
    scale: float  # rounded to 8 decimals, as the launcher keys it
    query_group_size: int
    kv_block_size: int
    tile_groups_per_partition: int
    softmax_scale: float  # exact, as the launcher builds it


@dataclasses.dataclass(frozen=True)
class ReduceKey(CompileKey):
    """The Triton specialization of `_reduce_partitions`: output dtype, stride value classes, constexprs, and
    whether each buffer's storage is within 2 GB (the output, the partial outputs, their max and sum)."""

    output_dtype: str
    out_stride_n: str  # Triton's value class of the output's sequence stride
    out_stride_h: str  # ... and of its head stride
    num_kv_heads: int
    query_group_size: int
    num_partitions: int
    head_size: int
    within_2gb: tuple[bool, bool, bool, bool]


class _DecodeCallKernel(JitKernel):
    """One of the two kernels a decode call compiles: both take the same launch inputs, a decode step."""

    family: ClassVar[str] = FAMILY

    @staticmethod
    def launch_shape(
        limits: ServingLimits, layer: TurboQuantLayer, max_num_kv_splits: int, pool_rows: int = DEFAULT_POOL_ROWS
    ) -> dict[str, Any]:
        """A layer's fixed decode inputs on this server: its facts, the target, the block table's width, and the
        sequences the launcher pools its buffers for (vLLM's largest CUDA-graph capture size)."""
        return {
            "layer": layer,
            "arch": limits.arch,
            "dtype": limits.dtype,
            "max_num_kv_splits": max_num_kv_splits,
            "block_table_width": block_table_width(limits.max_model_len, layer.block_size),
            "pool_rows": pool_rows,
        }

    def key_space(
        self,
        limits: ServingLimits,
        *,
        layer: TurboQuantLayer,
        max_num_kv_splits: int,
        pool_rows: int = DEFAULT_POOL_ROWS,
    ) -> KeySpace:
        """The decode steps a server can run: 1..max_num_seqs sequences, each up to max_model_len tokens long, with
        the output in vLLM's workspace, which the rest of the model sizes (so under 2 GB or past it)."""
        return (
            Zip([self.launch_shape(limits, layer, max_num_kv_splits, pool_rows)])
            * Range("num_seqs", 1, limits.max_num_seqs)
            * Choice("max_seq_len", (1, limits.max_model_len))
            * Choice("workspace_within_2gb", (True, False))
        )

    def dispatch(
        self,
        *,
        layer: TurboQuantLayer,
        arch: str,
        dtype: str,
        block_table_width: int,
        max_num_kv_splits: int,
        pool_rows: int,
        num_seqs: int,
        max_seq_len: int,
        workspace_within_2gb: bool | None = None,
    ) -> CompileKey | None:
        """The variant a decode step builds; None where the backend decodes otherwise (not gfx950, or a layer the
        kernel does not compute: the SoA Triton decode). `workspace_within_2gb`: whether the output is a view of
        vLLM's workspace within 2 GB, or past it; None: the launcher's own pooled output (no workspace)."""
        if arch != "gfx950" or not layer.takes_flydsl():
            return None
        num_partitions, tile_groups = partitions(block_table_width, layer.block_size, max_num_kv_splits)
        return self.key(
            layer, dtype, block_table_width, num_partitions, tile_groups, max(pool_rows, num_seqs), workspace_within_2gb
        )

    @abc.abstractmethod
    def key(
        self,
        layer: TurboQuantLayer,
        dtype: str,
        block_table_width: int,
        num_partitions: int,
        tile_groups: int,
        rows: int,
        workspace_within_2gb: bool | None,
    ) -> CompileKey:
        """This kernel's key for a step the FlyDSL decode takes (`rows`: sequences its buffers are pooled for)."""

    def launch(self, **inputs: Any) -> CompileKey | None:
        """The runtime path, compile-only: the engine's own launcher runs the decode step on host tensors (its key
        derivation, `_get_kernel`, the FlyDSL launch and the reduction's), compiling whatever it misses."""
        key = self.dispatch(**inputs)
        if key is not None:
            run_decode_step(**inputs)
        return key


class TurboQuantDecode(_DecodeCallKernel):
    name: ClassVar[str] = "flydsl_turboquant_decode"
    backend: ClassVar[str] = flydsl_backend.NAME
    parallelism: ClassVar[Parallelism] = flydsl_backend.PARALLELISM

    def key(
        self,
        layer: TurboQuantLayer,
        dtype: str,
        block_table_width: int,
        num_partitions: int,
        tile_groups: int,
        rows: int,
        workspace_within_2gb: bool | None,
    ) -> DecodeKey:
        """The FlyDSL variant (the batch and sequence lengths never change it)."""
        return DecodeKey(
            layer.num_kv_heads,
            num_partitions,
            block_table_width,
            round(float(layer.scale), 8),
            layer.num_heads // layer.num_kv_heads,
            layer.block_size,
            tile_groups,
            float(layer.scale),
        )

    def compile(self, key: DecodeKey) -> Outcome:
        """Build the variant as `_get_kernel` does (into `_KERN_CACHE`) and trace its launch on a one-sequence step's
        buffers, compile-only (FlyDSL's null stream: torch's CUDA stream needs a GPU)."""
        import flydsl.expr as fx
        import torch

        module = launcher_module()
        launch = module._get_kernel(
            key.num_kv_heads,
            key.num_partitions,
            key.max_blocks_per_seq,
            key.softmax_scale,
            key.query_group_size,
            key.kv_block_size,
            tile_groups_per_partition=key.tile_groups_per_partition,
        )
        heads, shape = (
            key.num_kv_heads * key.query_group_size,
            (1, key.num_kv_heads, key.num_partitions, key.query_group_size),
        )
        return flydsl_backend.compiled_during(
            launch,
            torch.empty(*shape, HEAD_SIZE, dtype=torch.bfloat16),
            torch.empty(shape),
            torch.empty(shape),
            torch.empty(1, heads, HEAD_SIZE, dtype=torch.bfloat16),
            torch.empty(1, key.kv_block_size, key.num_kv_heads, HEAD_SIZE, dtype=torch.uint8),
            torch.empty(module._TQ_MOD.N_CENTROIDS),
            torch.empty(1, key.max_blocks_per_seq, dtype=torch.int32),
            torch.empty(1, dtype=torch.int32),
            1,
            key.num_kv_heads,
            key.num_partitions,
            fx.Stream(None),
        )

    def variant_count(self) -> int:
        return sum(flydsl_backend.variant_count(launch) for launch in launcher_module()._KERN_CACHE.values())


class TurboQuantReduce(_DecodeCallKernel):
    name: ClassVar[str] = "turboquant_reduce_partitions"
    backend: ClassVar[str] = triton_backend.NAME
    parallelism: ClassVar[Parallelism] = triton_backend.PARALLELISM

    def key(
        self,
        layer: TurboQuantLayer,
        dtype: str,
        block_table_width: int,
        num_partitions: int,
        tile_groups: int,
        rows: int,
        workspace_within_2gb: bool | None,
    ) -> ReduceKey:
        """The reduction's variant: the output is the step's [B, heads, 128] buffer, in the model's dtype."""
        within = _within_2gb(layer, dtype, num_partitions, rows)
        if workspace_within_2gb is not None:
            within = (workspace_within_2gb, *within[1:])
        return ReduceKey(
            dtype,
            value_class(layer.num_heads * HEAD_SIZE),
            value_class(HEAD_SIZE),
            layer.num_kv_heads,
            layer.num_heads // layer.num_kv_heads,
            num_partitions,
            HEAD_SIZE,
            within,
        )

    def warmup_arguments(self, key: ReduceKey) -> tuple[tuple, dict[str, Any]]:
        import torch

        output, partials, maxima, sums = (
            triton_backend.Pointer(dtype, within_2gb=within)
            for dtype, within in zip(
                (torch_dtype(key.output_dtype), torch.bfloat16, torch.float32, torch.float32), key.within_2gb
            )
        )
        args = (
            output,
            partials,
            maxima,
            sums,
            VALUE_CLASS_REPRESENTATIVE[key.out_stride_n],
            VALUE_CLASS_REPRESENTATIVE[key.out_stride_h],
        )
        return args, {
            "NUM_KV_HEADS": key.num_kv_heads,
            "QG": key.query_group_size,
            "NUM_PARTS": key.num_partitions,
            "HEAD_SIZE": key.head_size,
            "grid": (1, 1),
        }

    def compile(self, key: ReduceKey) -> Outcome:
        args, kwargs = self.warmup_arguments(key)
        return triton_backend.compiled_during(launcher_module()._reduce_partitions, *args, **kwargs)

    def variant(self, key: ReduceKey) -> str:
        args, kwargs = self.warmup_arguments(key)
        return triton_backend.variant_of(launcher_module()._reduce_partitions, *args, **kwargs)

    def variant_count(self) -> int:
        return triton_backend.variant_count(launcher_module()._reduce_partitions)


def _within_2gb(layer: TurboQuantLayer, dtype: str, num_partitions: int, rows: int) -> tuple[bool, bool, bool, bool]:
    """Whether each buffer the reduction reads or writes spans at most 2 GB, as the launcher pools them for `rows`
    sequences: the [rows, heads, 128] output, the [rows, KV heads, partitions, group, 128] bf16 partials, their
    fp32 max and sum."""
    group = layer.num_kv_heads * num_partitions * (layer.num_heads // layer.num_kv_heads)
    sizes = (
        rows * layer.num_heads * HEAD_SIZE * ELEMENT_BYTES[dtype],
        rows * group * HEAD_SIZE * 2,
        rows * group * 4,
        rows * group * 4,
    )
    return tuple(size <= BUFFER_LIMIT for size in sizes)


def run_decode_step(
    *,
    layer: TurboQuantLayer,
    arch: str,
    dtype: str,
    block_table_width: int,
    max_num_kv_splits: int,
    pool_rows: int,
    num_seqs: int,
    max_seq_len: int,
    workspace_within_2gb: bool | None = None,
) -> None:
    """One decode step through vLLM's own launcher, compile-only, on host tensors of the step's real shapes (the
    KV cache holds a few blocks: its size is a runtime value). With `workspace_within_2gb`, the output is a view
    of a workspace buffer as vLLM hands it (one allocation: the output's own size, or past 2 GB; never touched)."""
    import torch

    if pool_rows != DEFAULT_POOL_ROWS:
        raise BackendConfigError(
            f"the launcher runs here outside a vLLM config, so it pools its buffers for "
            f"{DEFAULT_POOL_ROWS} sequences, not {pool_rows}"
        )
    module = launcher_module()
    key_bits, value_bits = KV_CACHE_DTYPES[layer.kv_cache_dtype]
    slot = -(-HEAD_SIZE * key_bits // 8) + 2 + -(-HEAD_SIZE * value_bits // 8) + 4
    seq_lens = torch.full((num_seqs,), max_seq_len, dtype=torch.int32)
    output = None
    if workspace_within_2gb is not None:
        size = num_seqs * layer.num_heads * HEAD_SIZE * ELEMENT_BYTES[dtype]
        workspace = torch.empty(size if workspace_within_2gb else BUFFER_LIMIT + 1, dtype=torch.uint8)
        output = workspace[:size].view(torch_dtype(dtype)).view(num_seqs, layer.num_heads, HEAD_SIZE)
    with compile_only_launches(module):
        module.flydsl_turboquant_decode_attention(
            query=torch.zeros(num_seqs, layer.num_heads, HEAD_SIZE, dtype=torch_dtype(dtype)),
            output_buf=output,
            kv_cache=torch.zeros(4, layer.block_size, layer.num_kv_heads, slot, dtype=torch.uint8),
            block_table=torch.zeros(num_seqs, block_table_width, dtype=torch.int32),
            seq_lens=seq_lens,
            Pi=torch.eye(HEAD_SIZE),
            centroids=torch.zeros(2**key_bits),
            scale=layer.scale,
            mse_bits=key_bits,
            key_packed_size=0,
            value_quant_bits=value_bits,
            value_packed_size=0,
            max_seq_len=max_seq_len,
            max_num_kv_splits=max_num_kv_splits,
        )
