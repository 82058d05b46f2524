"""Inkling FA4 relative attention on the contract.

FA4's varlen forward over a paged KV cache, with a CuTe DSL `score_mod` that adds the
relative-position bias (score_mod.py). A model has global layers (all heads, full
context, bias `rel_extent` wide) and sliding-window layers (window `sws`, bias `sws`
wide); both run this kernel. The variant depends on the layer kind, the query length
(bucketed up to a power of two), and, where FA4 splits the KV loop, the split count and
a warps bucket chosen from the request count.
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
from zerojit.contract.backends import cutedsl as cutedsl_backend
from zerojit.contract.limits import torch_dtype

FAMILY = "inkling-rel-attention"
LARGE_NUM_REQS = 1024  # above this many requests FA4 takes its large-batch scheduling path
REQS_PER_WARP = 31  # requests one combine warp handles
MAX_WARPS = 32


def bucket_query_len(query_len: int) -> int:
    """Round the longest query of a step up to a power of two (FA4's scheduling bound)."""
    return next_power_of_two(query_len)


def next_bucket_start(query_len: int) -> int:
    """The smallest query length past `query_len`'s bucket: 1, 2, 3, 5, 9, 17, ..."""
    return bucket_query_len(query_len) + 1


def warps_bucket(num_reqs: int) -> int:
    """Warps of the split combine: one per 31 requests, at most 32, rounded up to a power of two."""
    warps = min(-(-num_reqs // REQS_PER_WARP), MAX_WARPS)
    return next_power_of_two(warps)


def num_splits(
    *, arch: str, is_local: bool, num_reqs: int, max_seqlen_q: int, num_heads: int, num_kv_heads: int, max_kv_len: int
) -> int:
    """How many KV splits a step uses: none on sm90 or for sliding-window layers.

    Elsewhere, enough splits to reach a CTA target (256 for one single-tile request, 128
    for several single-tile requests, 64 for multi-tile queries), capped by a per-shape
    maximum and by one split per 128 KV tokens.
    """
    if cutedsl_backend.arch_family(arch) == "sm90" or is_local:
        return 1
    q_tiles = -(-(max_seqlen_q * (num_heads // num_kv_heads)) // 256)
    ctas = num_reqs * num_kv_heads * q_tiles
    single = q_tiles == 1 and num_reqs == 1
    target = 256 if single else (128 if q_tiles == 1 else 64)
    cap = 128
    if single:
        if num_kv_heads == 8:
            cap = 16
        elif num_kv_heads == 4 or max_kv_len <= 8192:
            cap = 32
        elif max_kv_len <= 65536:
            cap = 64
    return max(1, min(target // ctas, cap, -(-max_kv_len // 128)))


@dataclasses.dataclass(frozen=True)
class InklingModel:
    """The per-rank attention shape of an Inkling model (what its layers are built from)."""

    num_heads: int
    num_kv_heads: int
    head_dim: int
    rel_extent: int
    sliding_window: int
    swa_num_heads: int
    swa_num_kv_heads: int
    swa_head_dim: int
    block_size: int = 128
    kv_dtype: str | None = None  # None: the KV cache holds the serving dtype (vLLM's cache dtype "auto")


@dataclasses.dataclass(frozen=True)
class InklingKey(CompileKey):
    is_local: bool
    num_heads: int
    num_kv_heads: int
    head_dim: int
    rel_extent: int
    dtype: str
    kv_dtype: str
    block_size: int
    window_size: tuple[int, int]
    max_seqlen_q: int
    num_splits: int
    num_warps_bucket: int | None
    large_num_reqs: bool


class InklingRelAttention(cutedsl_backend.FA4Variants, JitKernel):
    name: ClassVar[str] = "inkling_fa4_rel_attention"
    family: ClassVar[str] = FAMILY
    backend: ClassVar[str] = cutedsl_backend.NAME
    parallelism: ClassVar[Parallelism] = cutedsl_backend.PARALLELISM

    def __init__(self, arch: str):
        self.arch = arch

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.arch == self.arch

    def __hash__(self) -> int:
        return hash((type(self), self.arch))

    def dispatch(
        self,
        *,
        is_local: bool,
        num_heads: int,
        num_kv_heads: int,
        head_dim: int,
        rel_extent: int,
        dtype: str,
        kv_dtype: str,
        block_size: int,
        window_size: tuple[int, int],
        max_kv_len: int,
        query_len: int,
        num_reqs: int,
    ) -> InklingKey:
        max_seqlen_q = bucket_query_len(query_len)
        splits = num_splits(
            arch=self.arch,
            is_local=is_local,
            num_reqs=num_reqs,
            max_seqlen_q=max_seqlen_q,
            num_heads=num_heads,
            num_kv_heads=num_kv_heads,
            max_kv_len=max_kv_len,
        )
        return InklingKey(
            is_local,
            num_heads,
            num_kv_heads,
            head_dim,
            rel_extent,
            dtype,
            kv_dtype,
            block_size,
            window_size,
            max_seqlen_q,
            splits,
            warps_bucket(num_reqs) if splits > 1 else None,
            num_reqs > LARGE_NUM_REQS,
        )

    @staticmethod
    def layer_kinds(limits: ServingLimits, model: InklingModel) -> list[dict[str, Any]]:
        """The two layer kinds' fixed dispatch inputs (global, then sliding-window)."""
        common = {"dtype": limits.dtype, "kv_dtype": model.kv_dtype or limits.dtype, "block_size": model.block_size}
        return [
            {
                "is_local": False,
                "num_heads": model.num_heads,
                "num_kv_heads": model.num_kv_heads,
                "head_dim": model.head_dim,
                "rel_extent": model.rel_extent,
                **common,
                "window_size": (-1, -1),
                "max_kv_len": limits.max_model_len,
            },
            {
                "is_local": True,
                "num_heads": model.swa_num_heads,
                "num_kv_heads": model.swa_num_kv_heads,
                "head_dim": model.swa_head_dim,
                "rel_extent": model.sliding_window,
                **common,
                "window_size": (model.sliding_window - 1, 0),
                "max_kv_len": model.sliding_window,
            },
        ]

    def key_space(self, limits: ServingLimits, *, model: InklingModel) -> KeySpace:
        tokens = limits.max_num_batched_tokens
        return (
            Zip(self.layer_kinds(limits, model))
            * Range("query_len", 1, tokens, step=next_bucket_start)
            * Range("num_reqs", 1, limits.max_num_seqs)
        ).where(lambda p: p["query_len"] + p["num_reqs"] <= tokens + 1)

    def compile(self, key: InklingKey) -> Outcome:
        return cutedsl_backend.compiled_during(self.name, self._call_fa4, key)

    @staticmethod
    def _probe_num_reqs(key: InklingKey) -> int:
        """A request count that dispatches to `key` (the smallest in its warps bucket and size class)."""
        floor = LARGE_NUM_REQS + 1 if key.large_num_reqs else 1
        if key.num_warps_bucket is None or key.num_warps_bucket == 1:
            return floor
        return max(floor, (key.num_warps_bucket // 2) * REQS_PER_WARP + 1)

    def _call_fa4(self, key: InklingKey, num_reqs: int | None = None) -> None:
        import torch
        from flash_attn.cute.interface import flash_attn_varlen_func

        from .score_mod import relative_bias_score_mod

        reqs = num_reqs or self._probe_num_reqs(key)
        dtype = torch_dtype(key.dtype)
        kv_dtype = torch_dtype(key.kv_dtype)
        total_q = key.max_seqlen_q + reqs - 1
        with cutedsl_backend.fake_cuda():

            def ints(*shape):
                return torch.empty(shape, dtype=torch.int32, device="cuda")

            cache_shape = (1, key.block_size, key.num_kv_heads, key.head_dim)
            flash_attn_varlen_func(
                torch.empty(total_q, key.num_heads, key.head_dim, dtype=dtype, device="cuda"),
                torch.empty(cache_shape, dtype=kv_dtype, device="cuda"),
                torch.empty(cache_shape, dtype=kv_dtype, device="cuda"),
                cu_seqlens_q=ints(reqs + 1),
                seqused_k=ints(reqs),
                page_table=ints(reqs, 1),
                max_seqlen_q=key.max_seqlen_q,
                softmax_scale=key.head_dim**-0.5,
                causal=True,
                window_size=(None, None) if key.window_size == (-1, -1) else key.window_size,
                num_splits=key.num_splits,
                return_lse=False,
                score_mod=relative_bias_score_mod(key.rel_extent),
                aux_tensors=[torch.empty(total_q, key.num_heads, key.rel_extent, dtype=dtype, device="cuda")],
            )

    def launch(self, **inputs: Any) -> InklingKey:
        """The runtime path, compile-only, with the step's real request count."""
        key = self.dispatch(**inputs)
        cutedsl_backend.compiled_during(self.name, self._call_fa4, key, inputs["num_reqs"])
        return key

    def variant_count(self) -> int:
        return cutedsl_backend.variant_count(self.name)
