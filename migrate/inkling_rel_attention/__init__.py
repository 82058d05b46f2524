"""Inkling FA4 relative attention (CuTe DSL / FlashAttention-4 with a relative-bias score_mod).

kernel.py       key, dispatch (query bucket, split and warps heuristics), key space, compile-only FA4 call
score_mod.py    the CuTe DSL score_mod that adds the relative-position bias
model.py        the migrated form: every Inkling attention layer registers the kernel
legacy.py       the pre-migration gate (HF config is Inkling)
launches.py     in-range attention steps for zero-JIT verification
presets.py      named serving configurations
equivalence.py  legacy vs migrated keys
spec.py         the migration spec (vLLM 0.29.0 -> 0.30.0)
"""

from __future__ import annotations

from zerojit.contract.backends import cutedsl as cutedsl_backend

from ..families import Family, Preset
from .kernel import FAMILY as NAME
from .kernel import InklingModel
from .launches import sample_launches
from .model import InklingAttention
from .presets import PRESETS
from .spec import SPEC


def _construct(preset: Preset[InklingModel]):
    layers = [InklingAttention(preset.limits, preset.model, is_local=i % 2 == 1) for i in range(preset.num_layers)]
    return (layers[0].kernel,)


FAMILY = Family(
    name=NAME,
    title="Inkling FA4 relative attention (CuTe DSL score_mod over paged KV)",
    backend=cutedsl_backend,
    presets=PRESETS,
    preset_model=InklingModel,
    construct=_construct,
    sample_launches=sample_launches,
    equivalence=f"{__name__}.equivalence:InklingEquivalence",
    specs=(SPEC,),
)
