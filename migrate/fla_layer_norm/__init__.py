"""FLA's gated RMS norm of Qwen GDN linear attention (Triton): vLLM 0.33.0's `_LAYER_NORM_FWD_KERNEL`.

kernel.py       key, dispatch (block width, rows per program, Triton's integer value classes), key space,
                compile-only Triton warmup of the engine's own kernel
model.py        the migrated form: every GDN attention layer registers its output norm
legacy.py       vLLM 0.33.0's standalone step, run from its tree (and the kernel loaded from it)
launches.py     in-range norm launches for zero-JIT verification
presets.py      named serving configurations
equivalence.py  legacy vs migrated keys
spec.py         the migration spec (vLLM 0.33.0)
"""

from __future__ import annotations

from zerojit.contract.backends import triton as triton_backend

from ..families import Family, Preset
from .kernel import FAMILY as NAME
from .launches import sample_launches
from .model import GdnPresetModel, QwenGdnAttention
from .presets import PRESETS
from .spec import SPEC


def _construct(preset: Preset[GdnPresetModel]):
    layers = [
        QwenGdnAttention(preset.limits, preset.model.norm, preset.model.num_sms) for _ in range(preset.num_layers)
    ]
    return (layers[0].kernel,)


FAMILY = Family(
    name=NAME,
    title="FLA gated RMS norm of Qwen GDN attention (Triton, vLLM's own kernel)",
    backend=triton_backend,
    presets=PRESETS,
    preset_model=GdnPresetModel,
    construct=_construct,
    sample_launches=sample_launches,
    equivalence=f"{__name__}.equivalence:GdnNormEquivalence",
    specs=(SPEC,),
)
