"""ROCm NVFP4-KV launchers of MiniMax M3 sparse attention (FlyDSL, gfx950).

kernel.py          keys, dispatch, key spaces and thresholds of the six launchers
flydsl_kernels.py  the FlyDSL kernels behind them (stand-ins with the real specialization surface)
model.py           the migrated form: the attention layer registers the launchers
legacy.py          the pre-migration standalone warmup sweep
launches.py        in-range serving steps and the launches they make, for zero-JIT verification
presets.py         named serving configurations
equivalence.py     legacy vs migrated keys
spec.py            the migration spec; example_tree/ is a legacy layout to apply it to,
example.py         which adds that layout to a real vLLM tree
"""

from __future__ import annotations

from pathlib import Path

from zerojit.contract import flydsl_backend

from ..families import Family, Preset
from .kernel import FAMILY as NAME
from .kernel import ModelDims
from .launches import sample_launches
from .model import build_model
from .presets import PRESETS
from .spec import SPEC


def _construct(preset: Preset):
    layers = build_model(preset.limits, preset.num_layers, ModelDims(**preset.model))
    return layers[0].launchers if layers else ()


def _configure(preset: Preset, cache_dir: Path) -> Path:
    return flydsl_backend.configure(arch=preset.limits.arch, cache_dir=cache_dir)


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
    sample_launches=sample_launches,
    equivalence=_equivalence,
    specs=(SPEC,),
    fingerprint=flydsl_backend.fingerprint,
)
