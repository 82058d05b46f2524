"""FA4 MLA prefill on the contract: FlashAttention-4's varlen forward as MLA prefill runs it.

The serving key is what the backend passes FA4 (shapes, dtype, sequence bounds, scale,
mask, splits, ...); FA4 itself maps it to its compiled kernel. Warmup probes (query,
key) length pairs chosen to reach every tile / split configuration FA4 selects for a
batch of one (the case that splits most eagerly), times causal x LSE: vLLM's six, plus
two with queries longer than two Q tiles. On the sm100 family one Q tile pair
(q_stage 2) still fits 256 query rows in one M block, and FA4 compiles a different
(non-persistent) kernel once a query spans several M blocks; `zerojit verify` found
those launches compiling after a warmup of the six alone.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from zerojit.contract import Choice, CompileKey, Empty, JitKernel, KeySpace, Outcome, Parallelism, ServingLimits, Zip
from zerojit.contract.backends import cutedsl as cutedsl_backend
from zerojit.contract.backends.cutedsl import arch_family
from zerojit.contract.limits import device_capability, torch_dtype

FAMILY = "fa4-mla-prefill"
COMPILE_BATCH = 1
Q_TILE = 128
K_TILE = 128
LONG_K = 32 * K_TILE  # 4096: from here FA4 may split the KV loop
VERY_LONG_K = 64 * K_TILE  # 8192: splits again where V is narrower than QK (not on sm90)
MULTI_BLOCK_Q = 2 * Q_TILE + 1  # 257: more query rows than one M block holds, even with q_stage 2
PROBES = (
    (1, K_TILE),
    (Q_TILE + 1, 4 * K_TILE),
    (1, LONG_K),
    (Q_TILE + 1, LONG_K),
    (1, VERY_LONG_K),
    (Q_TILE + 1, VERY_LONG_K),
    (MULTI_BLOCK_Q, 4 * K_TILE),
    (MULTI_BLOCK_Q, VERY_LONG_K),
)
SUPPORTED_ARCH_FAMILIES = ("sm90", "sm100", "sm120")


@dataclasses.dataclass(frozen=True)
class MLADims:
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int

    @property
    def qk_head_dim(self) -> int:
        return self.qk_nope_head_dim + self.qk_rope_head_dim


# The MLA layouts the FA prefill backend accepts (DeepSeek-V2/V3, V3.2-style, small).
SUPPORTED_DIMS = (MLADims(128, 64, 128), MLADims(192, 64, 256), MLADims(64, 64, 128))


def select_fa_version(
    arch: str, qk_head_dim: int, v_head_dim: int | None, forced: int | None = None, batch_invariant: bool = False
) -> int | None:
    """The FlashAttention version the prefill backend runs, from the facts that decide it.

    Defaults by compute capability: FA3 on 9.x, FA4 on 10.x, FA2 elsewhere; a forced
    version wins, but FA3 becomes FA4 from 10.x on. FA4 is refused under batch invariance;
    on 10.x/11.x for QK = V = 256 (FA4's dedicated hd256 kernel, which the MLA prefill
    backend does not opt into); from 10.x on for QK heads wider than 128 unless the pair is
    (256, 256 or unknown) or (192, 128) (tensor-memory capacity). None off NVIDIA.
    """
    if arch.startswith("gfx"):
        return None
    major, _ = device_capability(arch)
    version = forced or {9: 3, 10: 4}.get(major, 2)
    if major >= 10 and version == 3:
        version = 4
    if version == 4 and batch_invariant:
        return 2
    if version == 4 and major in (10, 11) and qk_head_dim == 256 and v_head_dim in (256, None):
        return 2
    if (
        version == 4
        and major >= 10
        and qk_head_dim > 128
        and (qk_head_dim, v_head_dim) not in ((256, 256), (256, None), (192, 128))
    ):
        return 2
    return version


@dataclasses.dataclass(frozen=True)
class FA4MLAPrefillKey(CompileKey):
    q_shape: tuple[int, ...]
    k_shape: tuple[int, ...]
    v_shape: tuple[int, ...]
    q_dtype: str
    max_seqlen_q: int
    max_seqlen_k: int
    softmax_scale: float
    causal: bool
    fa_version: int
    v_stride: tuple[int, ...] | None = None
    cu_seqlens_q_shape: tuple[int, ...] | None = None
    cu_seqlens_k_shape: tuple[int, ...] | None = None
    window_size: tuple[int, int] | None = None
    return_softmax_lse: bool = False
    num_splits: int = 0


def runtime_num_splits(arch: str, batch_invariant: bool) -> int:
    """The split setting the backend passes FA4: 0 lets FA4 choose, 1 forbids splitting.

    Batch invariance forbids splitting. FA4 4.0.0b36 has no split-KV forward on sm90
    (it asserts when its heuristic picks more than one split) nor on sm120 (it forces
    one split), so those run unsplit too.
    """
    return 1 if batch_invariant or arch_family(arch) in ("sm90", "sm120") else 0


def keeps_probe(max_seqlen_k: int, num_splits: int, arch: str, dims: MLADims) -> bool:
    """Whether a probe reaches a configuration the shorter probes do not."""
    return (
        max_seqlen_k < LONG_K
        or (num_splits != 1 and max_seqlen_k == LONG_K)
        or (
            num_splits != 1
            and max_seqlen_k == VERY_LONG_K
            and arch_family(arch) != "sm90"
            and dims.qk_head_dim != dims.v_head_dim
        )
    )


class FA4MLAPrefill(cutedsl_backend.FA4Variants, JitKernel):
    name: ClassVar[str] = "fa4_mla_prefill"
    family: ClassVar[str] = FAMILY
    backend: ClassVar[str] = cutedsl_backend.NAME
    parallelism: ClassVar[Parallelism] = cutedsl_backend.PARALLELISM

    def dispatch(
        self,
        *,
        batch_size: int,
        dtype: str,
        num_heads: int,
        dims: MLADims,
        max_seqlen_q: int,
        max_seqlen_k: int,
        requires_v_padding: bool,
        causal: bool,
        fa_version: int,
        window_size: tuple[int, int] | None = None,
        return_lse: bool = False,
        num_splits: int = 0,
    ) -> FA4MLAPrefillKey:
        qk = dims.qk_head_dim
        v_width = qk if requires_v_padding else dims.v_head_dim
        return FA4MLAPrefillKey(
            q_shape=(batch_size * max_seqlen_q, num_heads, qk),
            k_shape=(batch_size * max_seqlen_k, num_heads, qk),
            v_shape=(batch_size * max_seqlen_k, num_heads, v_width),
            q_dtype="fp16" if dtype == "fp16" else "bf16",
            max_seqlen_q=max_seqlen_q,
            max_seqlen_k=max_seqlen_k,
            softmax_scale=qk**-0.5,
            causal=causal,
            fa_version=fa_version,
            # Unpadded V is a view into the kv_b projection output: [nope | v] per head.
            v_stride=None
            if requires_v_padding
            else (num_heads * (dims.qk_nope_head_dim + dims.v_head_dim), dims.qk_nope_head_dim + dims.v_head_dim, 1),
            cu_seqlens_q_shape=(batch_size + 1,),
            cu_seqlens_k_shape=(batch_size + 1,),
            window_size=window_size,
            return_softmax_lse=return_lse,
            num_splits=num_splits,
        )

    def key_space(
        self,
        limits: ServingLimits,
        *,
        num_heads: int,
        dims: MLADims,
        fa_version: int = 4,
        batch_invariant: bool = False,
    ) -> KeySpace:
        family = arch_family(limits.arch)
        num_splits = runtime_num_splits(limits.arch, batch_invariant)
        if fa_version != 4 or family not in SUPPORTED_ARCH_FAMILIES or num_heads <= 0:
            return Empty()
        rows = [
            {"max_seqlen_q": q, "max_seqlen_k": k} for q, k in PROBES if keeps_probe(k, num_splits, limits.arch, dims)
        ]
        fixed = Zip(
            [
                {
                    "batch_size": COMPILE_BATCH,
                    "dtype": limits.dtype,
                    "num_heads": num_heads,
                    "dims": dims,
                    "requires_v_padding": False,
                    "fa_version": fa_version,
                    "num_splits": num_splits,
                }
            ]
        )
        return fixed * Zip(rows) * Choice("causal", (False, True)) * Choice("return_lse", (False, True))

    def compile(self, key: FA4MLAPrefillKey) -> Outcome:
        return cutedsl_backend.compiled_during(self.name, self._call_fa4, key)

    @staticmethod
    def _call_fa4(key: FA4MLAPrefillKey) -> Any:
        import torch
        from flash_attn.cute.interface import flash_attn_varlen_func

        dtype = torch_dtype(key.q_dtype)
        with cutedsl_backend.fake_cuda():

            def tensor(shape, stride=None):
                if stride is None:
                    return torch.empty(shape, dtype=dtype, device="cuda")
                return torch.empty_strided(shape, stride, dtype=dtype, device="cuda")

            cu_q = torch.empty(key.cu_seqlens_q_shape, dtype=torch.int32, device="cuda")
            cu_k = torch.empty(key.cu_seqlens_k_shape, dtype=torch.int32, device="cuda")
            flash_attn_varlen_func(
                tensor(key.q_shape),
                tensor(key.k_shape),
                tensor(key.v_shape, key.v_stride),
                cu_seqlens_q=cu_q,
                cu_seqlens_k=cu_k,
                max_seqlen_q=key.max_seqlen_q,
                max_seqlen_k=key.max_seqlen_k,
                softmax_scale=key.softmax_scale,
                causal=key.causal,
                window_size=key.window_size or (None, None),
                return_lse=key.return_softmax_lse,
                num_splits=key.num_splits,
            )

    def variant_count(self) -> int:
        return cutedsl_backend.variant_count(self.name)
