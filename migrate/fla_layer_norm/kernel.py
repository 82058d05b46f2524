"""FLA's gated RMS norm, the output norm of Qwen GDN linear attention, on the contract (Triton).

The kernel is vLLM's own `layer_norm_fwd_kernel` (third_party/flash_linear_attention/ops/
layernorm_guard.py): it normalises each `group_size`-wide row of the attention output
(tokens x value heads rows), scales by the norm weight and gates with the z branch. It is
compiled from the installed vLLM, or else from the vLLM release's own tree, so the cubins are
the engine's. Triton specializes it on the argument types, on each integer argument's value
class (the constant 1, a multiple of 16, anything else), on pointer alignment and on its
constexprs: the block width (the group size up to a power of two), the rows one program
handles (from the row count and the GPU's SM count) and the norm's flags. A model of one
dtype therefore compiles a handful of variants however many tokens a step carries.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from zerojit.contract import (
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
from zerojit.contract.backends import triton as triton_backend
from zerojit.contract.backends.triton import VALUE_CLASS_REPRESENTATIVE, value_class
from zerojit.contract.limits import torch_dtype

from .engine_kernel import FAMILY, engine_kernel

MAX_ROW_BYTES = 65536  # one program holds a group of at most 64 KB (wider groups are refused)
MAX_ROWS_PER_BLOCK = 4
ELEMENT_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}


@dataclasses.dataclass(frozen=True)
class GatedNorm:
    """What a GDN attention layer registers: its per-rank output norm."""

    rows_per_token: int  # value heads per rank: the norm runs once per head and token
    group_size: int  # the value head dim: one normalised row
    weight_dtype: str
    norm_before_gate: bool
    activation: str
    is_rms_norm: bool = True


@dataclasses.dataclass(frozen=True)
class LayerNormKey(CompileKey):
    x_dtype: str
    weight_dtype: str
    group_size: int
    block_n: int
    rows_per_block: int
    num_rows: str  # Triton's value class of the row count
    row_stride: str  # ... of the rows' stride (input, output and gate rows alike)
    is_rms_norm: bool
    norm_before_gate: bool
    activation: str


class LayerNormFwd(JitKernel):
    name: ClassVar[str] = "fla_layer_norm_fwd"
    family: ClassVar[str] = FAMILY
    backend: ClassVar[str] = triton_backend.NAME
    parallelism: ClassVar[Parallelism] = triton_backend.PARALLELISM

    def __init__(self, num_sms: int):
        self.num_sms = num_sms  # the GPU's: rows per program depend on it

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.num_sms == self.num_sms

    def __hash__(self) -> int:
        return hash((type(self), self.num_sms))

    def dispatch(
        self,
        *,
        x_dtype: str,
        weight_dtype: str,
        num_rows: int,
        row_stride: int,
        group_size: int,
        is_rms_norm: bool,
        norm_before_gate: bool,
        activation: str,
    ) -> LayerNormKey | None:
        """The variant one launch compiles; None for a group wider than one program holds (the launch refuses it)."""
        block_n = min(MAX_ROW_BYTES // ELEMENT_BYTES[x_dtype], next_power_of_two(group_size))
        if group_size > block_n:
            return None
        programs_per_sm_pair = -(-num_rows // (2 * self.num_sms))
        rows_per_block = min(next_power_of_two(programs_per_sm_pair), MAX_ROWS_PER_BLOCK)
        return LayerNormKey(
            x_dtype,
            weight_dtype,
            group_size,
            block_n,
            rows_per_block,
            value_class(num_rows),
            value_class(row_stride),
            is_rms_norm,
            norm_before_gate,
            activation,
        )

    @staticmethod
    def launch_shape(limits: ServingLimits, norm: GatedNorm) -> dict[str, Any]:
        """A layer's fixed dispatch inputs: rows are contiguous groups of the value head dim."""
        return {
            "x_dtype": limits.dtype,
            "weight_dtype": norm.weight_dtype,
            "row_stride": norm.group_size,
            "group_size": norm.group_size,
            "is_rms_norm": norm.is_rms_norm,
            "norm_before_gate": norm.norm_before_gate,
            "activation": norm.activation,
        }

    def key_space(self, limits: ServingLimits, *, norm: GatedNorm) -> KeySpace:
        rows = norm.rows_per_token
        return Zip([self.launch_shape(limits, norm)]) * Range(
            "num_rows", rows, rows * limits.max_num_batched_tokens, step=rows
        )

    def warmup_arguments(self, key: LayerNormKey) -> tuple[tuple, dict[str, Any]]:
        """The kernel's arguments for a compile-only launch of `key` (aligned pointers, one integer per value class)."""
        import torch

        pointer = triton_backend.Pointer
        x = torch_dtype(key.x_dtype)
        fp32 = torch.float32
        stride = VALUE_CLASS_REPRESENTATIVE[key.row_stride]
        args = (
            pointer(x),
            pointer(x),
            pointer(torch_dtype(key.weight_dtype)),
            None,
            pointer(x),
            None if key.is_rms_norm else pointer(fp32),
            pointer(fp32),
            stride,
            stride,
            stride,
            VALUE_CLASS_REPRESENTATIVE[key.num_rows],
            key.group_size,
            1e-6,
        )
        kwargs = {
            "BLOCK_N": key.block_n,
            "ROWS_PER_BLOCK": key.rows_per_block,
            "HAS_BIAS": False,
            "HAS_Z": True,
            "NORM_BEFORE_GATE": key.norm_before_gate,
            "IS_RMS_NORM": key.is_rms_norm,
            "ACTIVATION": key.activation,
            "num_warps": min(max(key.block_n // 256, 1), 8),
            "grid": (1, 1),
        }
        return args, kwargs

    def compile(self, key: LayerNormKey) -> Outcome:
        args, kwargs = self.warmup_arguments(key)
        return triton_backend.compiled_during(engine_kernel(), *args, **kwargs)

    def variant(self, key: LayerNormKey) -> str:
        args, kwargs = self.warmup_arguments(key)
        return triton_backend.variant_of(engine_kernel(), *args, **kwargs)

    def variant_count(self) -> int:
        return triton_backend.variant_count(engine_kernel())
