"""Serving presets of the TurboQuant decode family: models vLLM serves with a TurboQuant KV cache on MI355X (gfx950).

Shapes from each model's Hugging Face config (attention heads, KV heads, head dim 128, context), per rank; all
with the `turboquant_4bit_nc` cache (4-bit MSE keys, 4-bit values), the preset the FlyDSL decode computes.
"""

from __future__ import annotations

from zerojit.contract import ServingLimits

from ..families import Preset
from .kernel import FAMILY as NAME
from .kernel import TurboQuantLayer
from .model import TurboQuantPresetModel

SCALE = 128**-0.5
KV_CACHE = "turboquant_4bit_nc"


def _layer(num_heads: int, num_kv_heads: int, block_size: int) -> TurboQuantLayer:
    return TurboQuantLayer(
        num_heads=num_heads,
        num_kv_heads=num_kv_heads,
        head_size=128,
        block_size=block_size,
        kv_cache_dtype=KV_CACHE,
        scale=SCALE,
    )


PRESETS = (
    Preset(
        "qwen3-32b-tq-mi355x",
        NAME,
        "Qwen3-32B (64 heads, 8 KV heads: query groups of 8), TP1, 32K context, 16-token blocks, on MI355X",
        ServingLimits(
            max_num_seqs=256,
            max_num_batched_tokens=8192,
            max_model_len=32768,
            tp_size=1,
            dtype="bf16",
            kv_cache_dtype=KV_CACHE,
            arch="gfx950",
        ),
        num_layers=64,
        model=TurboQuantPresetModel(_layer(64, 8, 16)),
    ),
    Preset(
        "minimax-m2-tq-mi355x-tp4",
        NAME,
        "MiniMax-M2 (48 heads, 8 KV heads: groups of 6), TP4, 192K context, 32-token blocks, on MI355X",
        ServingLimits(
            max_num_seqs=64,
            max_num_batched_tokens=16384,
            max_model_len=196608,
            tp_size=4,
            dtype="bf16",
            kv_cache_dtype=KV_CACHE,
            arch="gfx950",
        ),
        num_layers=62,
        model=TurboQuantPresetModel(_layer(12, 2, 32)),
    ),
    Preset(
        "qwen3-235b-tq-mi355x-tp4",
        NAME,
        "Qwen3-235B-A22B (64 heads, 4 KV heads: groups of 16), TP4, 40K context, "
        "16-token blocks, 16 KV splits, on MI355X",
        ServingLimits(
            max_num_seqs=128,
            max_num_batched_tokens=8192,
            max_model_len=40960,
            tp_size=4,
            dtype="bf16",
            kv_cache_dtype=KV_CACHE,
            arch="gfx950",
        ),
        num_layers=94,
        model=TurboQuantPresetModel(_layer(16, 1, 16), max_num_kv_splits=16),
    ),
)
