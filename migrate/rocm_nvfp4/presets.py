"""Serving presets of the ROCm NVFP4-KV family: MiniMax M3 servers on MI355X (gfx950)."""

from __future__ import annotations

from zerojit.contract import ServingLimits

from ..families import Preset
from .kernel import FAMILY as NAME
from .kernel import ModelDims

PRESETS = (
    Preset(
        name="minimax-m3-nvfp4-mi355x-tp4",
        family=NAME,
        description="The published MI355X server: MiniMax M3, TP4, NVFP4 KV cache, 8K in / 512 out, concurrency 16",
        limits=ServingLimits(
            max_num_seqs=16,
            max_num_batched_tokens=16384,
            max_model_len=8192 + 512,
            tp_size=4,
            dtype="bf16",
            kv_cache_dtype="nvfp4",
            arch="gfx950",
        ),
        num_layers=4,
        model=ModelDims(),
    ),
    Preset(
        name="minimax-m3-nvfp4-mi355x-tp4-mtp3",
        family=NAME,
        description="The same server with 3-token MTP speculative decoding (decode query length 4)",
        limits=ServingLimits(
            max_num_seqs=16,
            max_num_batched_tokens=16384,
            max_model_len=8192 + 512,
            tp_size=4,
            dtype="bf16",
            kv_cache_dtype="nvfp4",
            arch="gfx950",
            spec_query_lens=(4,),
        ),
        num_layers=4,
        model=ModelDims(),
    ),
    Preset(
        name="minimax-m3-nvfp4-mi355x-tp8-long",
        family=NAME,
        description="A long-context TP8 server: 64 sequences, 32K context, 8K-token steps, 2-token MTP",
        limits=ServingLimits(
            max_num_seqs=64,
            max_num_batched_tokens=8192,
            max_model_len=32768,
            tp_size=8,
            dtype="bf16",
            kv_cache_dtype="nvfp4",
            arch="gfx950",
            spec_query_lens=(2, 3),
        ),
        num_layers=4,
        model=ModelDims(),
    ),
)
