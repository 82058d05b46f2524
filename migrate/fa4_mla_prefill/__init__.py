"""FA4 MLA prefill (CuTe DSL / FlashAttention-4).

kernel.py       key, dispatch, key space and compile-only FA4 call; FA version and split rules
model.py        the migrated form: the prefill backend registers FA4 when it selected FA4 (and
                upstream's expansion with its registered-but-empty defect, for `plan`)
legacy.py       the pre-migration code: vLLM's own, run from its tree (what runs real, what is stubbed)
launches.py     in-range prefill launches for zero-JIT verification
presets.py      named serving configurations
equivalence.py  legacy vs migrated keys
spec.py         the migration spec (vLLM 0.29.0 -> 0.30.0)
"""

from __future__ import annotations

from zerojit.contract.backends import cutedsl as cutedsl_backend

from ..families import Family, Preset
from .kernel import FAMILY as NAME
from .launches import sample_launches
from .model import (
    FA4_MLA_PREFILL,
    FlashAttnPrefillBackend,
    MLAPresetModel,
    UpstreamFA4MLAPrefill,
    selects_flash_attn_prefill,
)
from .presets import PRESETS
from .spec import SPEC


def _construct(preset: Preset[MLAPresetModel]):
    model = preset.model.mla
    if not selects_flash_attn_prefill(model):
        return ()
    kernel = UpstreamFA4MLAPrefill(model.forced_fa_version) if preset.model.upstream_keys else FA4_MLA_PREFILL
    backend = FlashAttnPrefillBackend(preset.limits, model, kernel=kernel)
    return (kernel,) if backend.fa_version == 4 else ()


FAMILY = Family(
    name=NAME,
    title="FA4 MLA prefill (CuTe DSL, FlashAttention-4 varlen forward)",
    backend=cutedsl_backend,
    presets=PRESETS,
    preset_model=MLAPresetModel,
    construct=_construct,
    sample_launches=sample_launches,
    equivalence=f"{__name__}.equivalence:FA4MLAEquivalence",
    specs=(SPEC,),
)
