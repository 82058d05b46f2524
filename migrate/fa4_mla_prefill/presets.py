"""Serving presets of the FA4 MLA prefill family: DeepSeek-V3 on H200 (sm_90a) and B200 (sm_100a)."""

from __future__ import annotations

from zerojit.contract import ServingLimits

from ..families import Preset
from .kernel import FAMILY as NAME
from .kernel import MLADims
from .model import MLAModel, MLAPresetModel

DEEPSEEK_V3 = MLAModel(total_heads=128, dims=MLADims(128, 64, 128))
_LIMITS = dict(max_num_seqs=128, max_num_batched_tokens=16384, max_model_len=32768, tp_size=8, dtype="bf16")

PRESETS = (
    Preset(
        "deepseek-v3-h200",
        NAME,
        "DeepSeek-V3 MLA prefill on 8x H200 (sm_90a), FA4 forced over the FA3 default",
        ServingLimits(**_LIMITS, arch="sm90"),
        model=MLAPresetModel(MLAModel(128, MLADims(128, 64, 128), forced_fa_version=4)),
    ),
    Preset(
        "deepseek-v3-b200",
        NAME,
        "DeepSeek-V3 MLA prefill on 8x B200 (sm_100a), FA4 by default",
        ServingLimits(**_LIMITS, arch="sm100"),
        model=MLAPresetModel(DEEPSEEK_V3),
    ),
    Preset(
        "deepseek-v3-b200-vllm030",
        NAME,
        "The same B200 server with vLLM 0.30.0's key logic: FA4 registers, then expands to no keys",
        ServingLimits(**_LIMITS, arch="sm100"),
        model=MLAPresetModel(DEEPSEEK_V3, upstream_keys=True),
    ),
)
