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

from zerojit.contract.backends import flydsl as flydsl_backend

from ..families import Family, Preset
from .kernel import FAMILY as NAME
from .kernel import ModelDims
from .launches import sample_launches
from .model import build_model
from .presets import PRESETS
from .spec import SPEC


def _construct(preset: Preset[ModelDims]):
    layers = build_model(preset.limits, preset.num_layers, preset.model)
    return layers[0].launchers if layers else ()


FAMILY = Family(
    name=NAME,
    title="ROCm NVFP4-KV launchers (MiniMax M3 sparse attention, FlyDSL gfx950)",
    backend=flydsl_backend,
    presets=PRESETS,
    preset_model=ModelDims,
    construct=_construct,
    sample_launches=sample_launches,
    equivalence=f"{__name__}.equivalence:ROCmEquivalence",
    specs=(SPEC,),
)
