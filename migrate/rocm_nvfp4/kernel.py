"""The six ROCm NVFP4-KV launchers of MiniMax M3 sparse attention, on the warmup contract.

Each launcher's compile key holds exactly its variant selectors (plus the model dims
compiled into it); `dispatch` maps one concrete launch to that key; `key_space` declares
the launch inputs a server with the given limits can produce. Where the public facts give
no number (where "large" index prefill starts, split counts per row range, strip width,
the buffered-score bound), the number is a named field of `Thresholds`.
"""

from __future__ import annotations

import abc
import dataclasses
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
    next_power_of_two,
)
from zerojit.contract.backends import flydsl as flydsl_backend

FAMILY = "rocm-nvfp4"


@dataclasses.dataclass(frozen=True)
class Thresholds:
    """Variant boundaries of the launchers.

    fused_insert_small_max_tokens: published: steps of up to 512 tokens take the
        small-batch insert variant, larger steps the large-batch one.
    sparse_prefill_one_round_max_context: chosen: the top-k width; a prefill whose
        context fits in one top-k selection combines partial results in one round, a
        longer one needs a second round.
    decode_splits_by_rows: chosen: (max rows, splits) from fewest rows up; more rows
        than the last bound run unsplit (1 split).
    index_prefill_shared_max_tokens: chosen inside the published bracket: one 8K prompt
        runs the shared kernel and two 8K prompts in one step the large one, so the
        boundary lies in (8192 + output margin, 16384]; 12288 is the midpoint.
    index_decode_direct_max_scores: chosen: requests x context scores held in registers;
        above it the decode score is buffered through memory.
    topk_strip_tokens: chosen: context tokens one top-k strip covers.
    """

    fused_insert_small_max_tokens: int = 512
    sparse_prefill_one_round_max_context: int = 2048
    decode_splits_by_rows: tuple[tuple[int, int], ...] = ((16, 8), (64, 4), (256, 2))
    index_prefill_shared_max_tokens: int = 12288
    index_decode_direct_max_scores: int = 65536
    topk_strip_tokens: int = 4096


THRESHOLDS = Thresholds()


@dataclasses.dataclass(frozen=True)
class ModelDims:
    """Per-rank dims of the sparse-attention layer that the kernels compile in."""

    head_dim: int = 128
    index_head_dim: int = 128
    topk: int = 2048


@dataclasses.dataclass(frozen=True)
class FusedInsertKey(CompileKey):
    head_dim: int
    large_batch: bool


@dataclasses.dataclass(frozen=True)
class SparsePrefillKey(CompileKey):
    head_dim: int
    combine_rounds: int


@dataclasses.dataclass(frozen=True)
class SparseDecodeKey(CompileKey):
    head_dim: int
    num_splits: int


@dataclasses.dataclass(frozen=True)
class IndexPrefillKey(CompileKey):
    index_head_dim: int
    large: bool


@dataclasses.dataclass(frozen=True)
class IndexDecodeKey(CompileKey):
    index_head_dim: int
    rows: int
    buffered_score: bool


@dataclasses.dataclass(frozen=True)
class TopKKey(CompileKey):
    topk: int
    decode: bool
    strips: int


class FlyDSLLauncher(JitKernel):
    """A launcher backed by FlyDSL jit functions, compiled compile-only for gfx950."""

    family: ClassVar[str] = FAMILY
    backend: ClassVar[str] = flydsl_backend.NAME
    parallelism: ClassVar[Parallelism] = flydsl_backend.PARALLELISM
    # Probe buffer size for compile-only calls; layouts are dynamic, so it never matters.
    PROBE_ELEMENTS: ClassVar[int] = 256

    jit_names: ClassVar[tuple[str, ...]]

    def __init__(self, dims: ModelDims = ModelDims(), thresholds: Thresholds = THRESHOLDS):
        self.dims, self.thresholds = dims, thresholds

    def jit_functions(self) -> tuple[Any, ...]:
        # Imported on first compile: planning and key checks need no FlyDSL.
        from . import flydsl_kernels as kernels

        return tuple(getattr(kernels, name) for name in self.jit_names)

    @abc.abstractmethod
    def _jit_call(self, key: CompileKey) -> tuple[str, dict[str, Any]]:
        """The name of the jit function that compiles `key`, and its Constexpr arguments."""

    def _call(self, key: CompileKey, elements: int) -> Outcome:
        import torch

        from . import flydsl_kernels as kernels

        name, constexprs = self._jit_call(key)
        buffer = torch.zeros(elements, dtype=torch.float32)
        return flydsl_backend.compiled_during(
            getattr(kernels, name),
            kernels.dynamic(buffer),
            kernels.dynamic(torch.empty_like(buffer)),
            elements,
            **constexprs,
        )

    def compile(self, key: CompileKey) -> Outcome:
        return self._call(key, self.PROBE_ELEMENTS)

    def launch(self, **inputs: Any) -> CompileKey:
        """The runtime path, compile-only, with buffers sized by the launch as a real step's are.

        Layouts are dynamic, so a different size must never compile; only a new key may.
        """
        key = self.dispatch(**inputs)
        self._call(key, max(1, min(sum(int(v) for v in inputs.values()), 1 << 16)))
        return key

    def variant_count(self) -> int:
        return sum(flydsl_backend.variant_count(fn) for fn in self.jit_functions())

    def forget_variants(self) -> None:
        """Drop the in-memory variants, as a fresh server process starts (disk cache kept)."""
        for fn in self.jit_functions():
            fn._mem_cache.clear()

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and (other.dims, other.thresholds) == (self.dims, self.thresholds)

    def __hash__(self) -> int:
        return hash((type(self), self.dims, self.thresholds))


class FusedNormRopeKVInsert(FlyDSLLauncher):
    name = "rocm_fused_norm_rope_kv_insert"
    jit_names = ("fused_norm_rope_kv_insert",)

    def dispatch(self, *, num_tokens: int) -> FusedInsertKey:
        return FusedInsertKey(self.dims.head_dim, num_tokens > self.thresholds.fused_insert_small_max_tokens)

    def key_space(self, limits: ServingLimits) -> KeySpace:
        return Range.powers_of_two("num_tokens", 1, limits.max_num_batched_tokens)

    def _jit_call(self, key: FusedInsertKey):
        return "fused_norm_rope_kv_insert", {"HEAD_DIM": key.head_dim, "LARGE_BATCH": key.large_batch}


class SparsePrefill(FlyDSLLauncher):
    name = "rocm_sparse_prefill"
    jit_names = ("sparse_prefill",)

    def dispatch(self, *, max_context_len: int) -> SparsePrefillKey:
        rounds = 1 if max_context_len <= self.thresholds.sparse_prefill_one_round_max_context else 2
        return SparsePrefillKey(self.dims.head_dim, rounds)

    def key_space(self, limits: ServingLimits) -> KeySpace:
        return Range.powers_of_two("max_context_len", 1, limits.max_model_len)

    def _jit_call(self, key: SparsePrefillKey):
        return "sparse_prefill", {"HEAD_DIM": key.head_dim, "COMBINE_ROUNDS": key.combine_rounds}


class SparseDecode(FlyDSLLauncher):
    name = "rocm_sparse_decode"
    jit_names = ("sparse_decode",)

    def dispatch(self, *, num_reqs: int, query_len: int) -> SparseDecodeKey:
        rows = num_reqs * query_len
        splits = next((s for bound, s in self.thresholds.decode_splits_by_rows if rows <= bound), 1)
        return SparseDecodeKey(self.dims.head_dim, splits)

    def key_space(self, limits: ServingLimits) -> KeySpace:
        return Range("num_reqs", 1, limits.max_num_seqs) * Choice("query_len", limits.decode_query_lens)

    def _jit_call(self, key: SparseDecodeKey):
        return "sparse_decode", {"HEAD_DIM": key.head_dim, "NUM_SPLITS": key.num_splits}


class IndexPrefill(FlyDSLLauncher):
    name = "rocm_index_prefill"
    jit_names = ("index_prefill",)

    def dispatch(self, *, num_prefill_tokens: int) -> IndexPrefillKey:
        large = num_prefill_tokens > self.thresholds.index_prefill_shared_max_tokens
        return IndexPrefillKey(self.dims.index_head_dim, large)

    def key_space(self, limits: ServingLimits) -> KeySpace:
        return Range.powers_of_two("num_prefill_tokens", 1, limits.max_num_batched_tokens)

    def _jit_call(self, key: IndexPrefillKey):
        return "index_prefill", {"INDEX_HEAD_DIM": key.index_head_dim, "LARGE": key.large}


class IndexDecode(FlyDSLLauncher):
    name = "rocm_index_decode"
    jit_names = ("index_decode",)

    def dispatch(self, *, num_reqs: int, query_len: int, max_context_len: int) -> IndexDecodeKey:
        buffered = num_reqs * max_context_len > self.thresholds.index_decode_direct_max_scores
        return IndexDecodeKey(self.dims.index_head_dim, next_power_of_two(num_reqs * query_len), buffered)

    def key_space(self, limits: ServingLimits) -> KeySpace:
        # Buffering grows with the context, so the shortest and longest contexts reach
        # both answers wherever a request count has both.
        return (
            Range("num_reqs", 1, limits.max_num_seqs)
            * Choice("query_len", limits.decode_query_lens)
            * Choice("max_context_len", (1, limits.max_model_len))
        )

    def _jit_call(self, key: IndexDecodeKey):
        return "index_decode", {
            "INDEX_HEAD_DIM": key.index_head_dim,
            "ROWS": key.rows,
            "BUFFERED_SCORE": key.buffered_score,
        }


class TopK(FlyDSLLauncher):
    name = "rocm_topk"
    jit_names = ("topk_prefill", "topk_decode")

    def dispatch(self, *, context_len: int, decode: bool) -> TopKKey:
        strips = -(-context_len // self.thresholds.topk_strip_tokens)
        return TopKKey(self.dims.topk, decode, strips)

    def key_space(self, limits: ServingLimits) -> KeySpace:
        # 1, 1 + strip, 1 + 2*strip, ... reach every strip count up to the longest context.
        contexts = Range("context_len", 1, limits.max_model_len, step=self.thresholds.topk_strip_tokens)
        return contexts * Choice("decode", (False, True))

    def _jit_call(self, key: TopKKey):
        return ("topk_decode" if key.decode else "topk_prefill"), {"TOPK": key.topk, "STRIPS": key.strips}
