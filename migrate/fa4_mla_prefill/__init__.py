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

from pathlib import Path

from zerojit.contract import cutedsl_backend

from ..families import Family, Preset
from .kernel import FAMILY as NAME
from .launches import sample_launches
from .model import FA4_MLA_PREFILL, FlashAttnPrefillBackend, MLAModel, UpstreamFA4MLAPrefill, selects_flash_attn_prefill
from .presets import PRESETS
from .spec import SPEC


def _construct(preset: Preset):
    model: MLAModel = preset.model["mla"]
    if not selects_flash_attn_prefill(model):
        return ()
    kernel = UpstreamFA4MLAPrefill(model.forced_fa_version) if preset.model.get("upstream_keys") else FA4_MLA_PREFILL
    backend = FlashAttnPrefillBackend(preset.limits, model, kernel=kernel)
    return (kernel,) if backend.fa_version == 4 else ()


def _configure(preset: Preset, cache_dir: Path) -> Path:
    return cutedsl_backend.configure(preset.limits.arch, cache_dir)


def _equivalence():
    from .equivalence import FA4MLAEquivalence

    return FA4MLAEquivalence()


FAMILY = Family(
    name=NAME,
    title="FA4 MLA prefill (CuTe DSL, FlashAttention-4 varlen forward)",
    backend="cutedsl",
    presets=PRESETS,
    construct=_construct,
    configure_backend=_configure,
    sample_launches=sample_launches,
    equivalence=_equivalence,
    specs=(SPEC,),
    fingerprint=cutedsl_backend.fingerprint,
)
