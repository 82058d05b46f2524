"""ROCm NVFP4-KV launchers of MiniMax M3 sparse attention (FlyDSL, gfx950).

launchers.py  keys, dispatch, key spaces and thresholds of the six launchers
kernels.py    the FlyDSL kernels behind them (stand-ins with the real specialization surface)
model.py      the migrated form: the attention layer registers the launchers
legacy.py     the pre-migration standalone warmup sweep (reference)
steps.py      random in-range serving steps for zero-JIT verification
spec.py       the migration spec the codemods apply; example_tree/ is a legacy layout to apply it to,
example.py    which adds that layout to a real vLLM tree
"""

from __future__ import annotations

from pathlib import Path

from contract import ServingLimits, flydsl_backend

from ..families import Family, Preset
from .launchers import FAMILY as NAME
from .launchers import ModelDims
from .model import build_model
from .steps import sample_launches

PRESETS = (
    Preset(
        name="minimax-m3-nvfp4-mi355x-tp4",
        family=NAME,
        description="The published MI355X server: MiniMax M3, TP4, NVFP4 KV cache, 8K in / 512 out, concurrency 16",
        limits=ServingLimits(max_num_seqs=16, max_num_batched_tokens=16384, max_model_len=8192 + 512, tp_size=4,
                             dtype="bf16", kv_cache_dtype="nvfp4", arch="gfx950"),
        num_layers=4,
    ),
    Preset(
        name="minimax-m3-nvfp4-mi355x-tp4-mtp3",
        family=NAME,
        description="The same server with 3-token MTP speculative decoding (decode query length 4)",
        limits=ServingLimits(max_num_seqs=16, max_num_batched_tokens=16384, max_model_len=8192 + 512, tp_size=4,
                             dtype="bf16", kv_cache_dtype="nvfp4", arch="gfx950", spec_query_lens=(4,)),
        num_layers=4,
    ),
    Preset(
        name="minimax-m3-nvfp4-mi355x-tp8-long",
        family=NAME,
        description="A long-context TP8 server: 64 sequences, 32K context, 8K-token steps, 2-token MTP",
        limits=ServingLimits(max_num_seqs=64, max_num_batched_tokens=8192, max_model_len=32768, tp_size=8,
                             dtype="bf16", kv_cache_dtype="nvfp4", arch="gfx950", spec_query_lens=(2, 3)),
        num_layers=4,
    ),
)


def _construct(preset: Preset):
    dims = ModelDims(**preset.model)
    layers = build_model(preset.limits, preset.num_layers, dims)
    return layers[0].launchers if layers else ()


def _configure(preset: Preset, cache_dir: Path | None) -> Path:
    return flydsl_backend.configure(arch=preset.limits.arch, cache_dir=cache_dir)


def _sample(preset: Preset, kernels, per_kernel: int, seed: int):
    return sample_launches(tuple(kernels), preset.limits, per_kernel, seed)


def _equivalence():
    from .equivalence import ROCmEquivalence

    return ROCmEquivalence()


FAMILY = Family(
    name=NAME,
    title="ROCm NVFP4-KV launchers (MiniMax M3 sparse attention, FlyDSL gfx950)",
    backend="flydsl",
    presets=PRESETS,
    construct=_construct,
    configure_backend=_configure,
    sample_launches=_sample,
    equivalence=_equivalence,
)
