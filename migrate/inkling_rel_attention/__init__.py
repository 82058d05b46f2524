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

from pathlib import Path

from zerojit.contract import cutedsl_backend

from ..families import Family, Preset
from .kernel import FAMILY as NAME
from .launches import sample_launches
from .model import InklingAttention
from .presets import PRESETS
from .spec import SPEC


def _construct(preset: Preset):
    layers = [InklingAttention(preset.limits, preset.model["inkling"], is_local=i % 2 == 1)
              for i in range(preset.num_layers)]
    return (layers[0].kernel,)


def _configure(preset: Preset, cache_dir: Path) -> Path:
    return cutedsl_backend.configure(preset.limits.arch, cache_dir)


def _equivalence():
    from .equivalence import InklingEquivalence

    return InklingEquivalence()


FAMILY = Family(
    name=NAME,
    title="Inkling FA4 relative attention (CuTe DSL score_mod over paged KV)",
    backend="cutedsl",
    presets=PRESETS,
    construct=_construct,
    configure_backend=_configure,
    sample_launches=sample_launches,
    equivalence=_equivalence,
    specs=(SPEC,),
    fingerprint=cutedsl_backend.fingerprint,
)
