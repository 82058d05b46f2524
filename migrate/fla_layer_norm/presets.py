"""Serving presets of the gated-RMS-norm family: Qwen3-Next-80B-A3B's GDN layers at TP4 on H200 and B200."""

from __future__ import annotations

from zerojit.contract import ServingLimits

from ..families import Preset
from .kernel import FAMILY as NAME
from .kernel import GatedNorm
from .model import GdnPresetModel

# Qwen3-Next-80B-A3B: 32 value heads of dim 128, gated by SiLU after the norm; 8 heads per rank at TP4.
QWEN3_NEXT_TP4 = GatedNorm(
    rows_per_token=8, group_size=128, weight_dtype="bf16", norm_before_gate=True, activation="silu"
)
_LIMITS = dict(max_num_seqs=256, max_num_batched_tokens=8192, max_model_len=32768, tp_size=4, dtype="bf16")

PRESETS = (
    Preset(
        "qwen3-next-h200",
        NAME,
        "Qwen3-Next GDN output norm (TP4) on H200 (sm_90, 132 SMs)",
        ServingLimits(**_LIMITS, arch="sm90"),
        num_layers=36,
        model=GdnPresetModel(QWEN3_NEXT_TP4, num_sms=132),
    ),
    Preset(
        "qwen3-next-b200",
        NAME,
        "The same model on B200 (sm_100, 148 SMs)",
        ServingLimits(**_LIMITS, arch="sm100"),
        num_layers=36,
        model=GdnPresetModel(QWEN3_NEXT_TP4, num_sms=148),
    ),
)
