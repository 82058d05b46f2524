"""Serving presets of the Inkling relative-attention family: a 64-head TP8 model on H200 and B200."""

from __future__ import annotations

from zerojit.contract import ServingLimits

from ..families import Preset
from .kernel import FAMILY as NAME
from .kernel import InklingModel

# A 64-head, 8-KV-head Inkling (global and sliding-window layers alike) at TP8: per rank.
INKLING_TP8 = InklingModel(
    num_heads=8,
    num_kv_heads=1,
    head_dim=128,
    rel_extent=1024,
    sliding_window=512,
    swa_num_heads=8,
    swa_num_kv_heads=1,
    swa_head_dim=128,
)
_LIMITS = dict(max_num_seqs=256, max_num_batched_tokens=8192, max_model_len=32768, tp_size=8, dtype="bf16")

PRESETS = (
    Preset(
        "inkling-h200",
        NAME,
        "Inkling (64 heads, TP8) relative attention on H200 (sm_90a): no split-KV",
        ServingLimits(**_LIMITS, arch="sm90"),
        num_layers=4,
        model=INKLING_TP8,
    ),
    Preset(
        "inkling-b200",
        NAME,
        "The same model on B200 (sm_100a): split-KV keys by request count",
        ServingLimits(**_LIMITS, arch="sm100"),
        num_layers=4,
        model=INKLING_TP8,
    ),
)
