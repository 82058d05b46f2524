"""FlyDSL launcher kernels for the ROCm NVFP4-KV path, compiled for gfx950.

The production launchers (MiniMax M3 sparse attention, NVFP4 KV cache) are not public.
These stand-ins reproduce exactly their *compile-time specialization surface*: each
`@flyc.jit` launcher takes the same variant selectors as `fx.Constexpr` parameters, so
FlyDSL compiles one variant per selector combination, as the real launchers do.

What they compute is deliberately simple, and the same for all of them: every thread
loads one fp32 element x of its block of a flat buffer and writes back the polynomial
x + x^2 + ... evaluated by `rounds` fused multiply-adds, scaled by `scale`. `rounds`
and `scale` are derived from the launcher's selectors, so each variant is distinct
machine code. Buffers are passed with dynamic layouts: the batch size and context
length are runtime values and never cause a recompile; only the selectors do.
"""

from __future__ import annotations

import flydsl.compiler as flyc
import flydsl.expr as fx

BLOCK = 64


@flyc.kernel
def _fma_chain(X: fx.Tensor, OUT: fx.Tensor, ROUNDS: fx.Constexpr[int], SCALE: fx.Constexpr[int]):
    """OUT[i] = SCALE * (x + x*x + ... ) with ROUNDS multiply-adds, x = X[i]; one element per thread."""
    block, lane = fx.block_idx.x, fx.thread_idx.x
    register = fx.MemRefType.get(fx.T.f32, fx.LayoutType.get(1, 1), fx.AddressSpace.Register)
    copy = fx.make_copy_atom(fx.UniversalCopy32b(), fx.Float32)

    def element(tensor):
        tile = fx.slice(fx.logical_divide(tensor, fx.make_layout(BLOCK, 1)), (None, block))
        return fx.slice(fx.logical_divide(tile, fx.make_layout(1, 1)), (None, lane))

    staged = fx.memref_alloca(register, fx.make_layout(1, 1))
    fx.copy_atom_call(copy, element(X), staged)
    x = fx.memref_load_vec(staged)
    acc = x
    for _ in fx.range_constexpr(ROUNDS):
        acc = acc * x + x
    for _ in fx.range_constexpr(SCALE - 1):
        acc = acc + acc
    fx.memref_store_vec(acc, staged)
    fx.copy_atom_call(copy, staged, element(OUT))


def _launch_chain(X, OUT, n, rounds: int, scale: int, stream) -> None:
    """Emit the one kernel launch every launcher makes, with its variant's rounds and scale."""
    _fma_chain(X, OUT, rounds, scale).launch(grid=((n + BLOCK - 1) // BLOCK, 1, 1), block=[BLOCK, 1, 1], stream=stream)


@flyc.jit
def fused_norm_rope_kv_insert(
    X: fx.Tensor,
    OUT: fx.Tensor,
    n: fx.Int32,
    HEAD_DIM: fx.Constexpr[int],
    LARGE_BATCH: fx.Constexpr[bool],
    stream: fx.Stream = fx.Stream(None),
):
    """Stand-in for the fused RMS-norm + RoPE + NVFP4 KV-cache insert; small/large token batches differ."""
    _launch_chain(X, OUT, n, 1 + int(LARGE_BATCH), HEAD_DIM // 64, stream)


@flyc.jit
def sparse_prefill(
    X: fx.Tensor,
    OUT: fx.Tensor,
    n: fx.Int32,
    HEAD_DIM: fx.Constexpr[int],
    COMBINE_ROUNDS: fx.Constexpr[int],
    stream: fx.Stream = fx.Stream(None),
):
    """Stand-in for sparse-attention prefill; one or two rounds of partial-result combine."""
    _launch_chain(X, OUT, n, COMBINE_ROUNDS, HEAD_DIM // 64, stream)


@flyc.jit
def sparse_decode(
    X: fx.Tensor,
    OUT: fx.Tensor,
    n: fx.Int32,
    HEAD_DIM: fx.Constexpr[int],
    NUM_SPLITS: fx.Constexpr[int],
    stream: fx.Stream = fx.Stream(None),
):
    """Stand-in for split-KV sparse-attention decode; the split count is compiled in."""
    _launch_chain(X, OUT, n, NUM_SPLITS, HEAD_DIM // 64, stream)


@flyc.jit
def index_prefill(
    X: fx.Tensor,
    OUT: fx.Tensor,
    n: fx.Int32,
    INDEX_HEAD_DIM: fx.Constexpr[int],
    LARGE: fx.Constexpr[bool],
    stream: fx.Stream = fx.Stream(None),
):
    """Stand-in for the NVFP4 index-score prefill: the shared kernel, or the large one for big steps."""
    _launch_chain(X, OUT, n, 3 if LARGE else 1, INDEX_HEAD_DIM // 64, stream)


@flyc.jit
def index_decode(
    X: fx.Tensor,
    OUT: fx.Tensor,
    n: fx.Int32,
    INDEX_HEAD_DIM: fx.Constexpr[int],
    ROWS: fx.Constexpr[int],
    BUFFERED_SCORE: fx.Constexpr[bool],
    stream: fx.Stream = fx.Stream(None),
):
    """Stand-in for the NVFP4 index-score decode: row count compiled in, score buffered or direct."""
    rounds = 2 * ROWS.bit_length() + int(BUFFERED_SCORE)
    _launch_chain(X, OUT, n, rounds, INDEX_HEAD_DIM // 64, stream)


@flyc.jit
def topk_prefill(
    X: fx.Tensor,
    OUT: fx.Tensor,
    n: fx.Int32,
    TOPK: fx.Constexpr[int],
    STRIPS: fx.Constexpr[int],
    stream: fx.Stream = fx.Stream(None),
):
    """Stand-in for the strip-wise top-k selection over index scores; the strip count is compiled in."""
    _launch_chain(X, OUT, n, STRIPS, TOPK // 1024, stream)


@flyc.jit
def topk_decode(
    X: fx.Tensor,
    OUT: fx.Tensor,
    n: fx.Int32,
    TOPK: fx.Constexpr[int],
    STRIPS: fx.Constexpr[int],
    stream: fx.Stream = fx.Stream(None),
):
    """Stand-in for the decode-step top-k kernel (one query row per request)."""
    _launch_chain(X, OUT, n, STRIPS + 1, TOPK // 1024, stream)


def dynamic(tensor):
    """Pass a CPU buffer with a dynamic layout so its size never enters the cache key."""
    return flyc.from_dlpack(tensor).mark_layout_dynamic(leading_dim=0)
