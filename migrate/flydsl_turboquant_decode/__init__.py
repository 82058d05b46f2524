"""vLLM 0.33.0's FlyDSL TurboQuant decode attention on gfx950: its FlyDSL kernel and the Triton reduction after it.

engine_kernel.py  where the kernels come from: vLLM's own launcher module (installed, or the 0.33.0 tree)
kernel.py         the launcher's key derivation as keys and dispatch, key spaces, compile-only adapters
model.py          the migrated form: every TurboQuant attention layer registers the two kernels
legacy.py         vLLM 0.33.0's own decode path run from its tree, recording the kernels it builds
launches.py       in-range decode steps for zero-JIT verification
presets.py        named serving configurations (MI355X)
equivalence.py    the engine's own keys vs the registered ones

No migration spec: nothing in vLLM 0.33.0 warms these kernels, so no legacy warmup moves; the first
decode step of every server builds them inside a request (`survey --kernels` lists the launcher as
warmed by nothing). The registration model.py makes belongs in `TurboQuantAttentionImpl.__init__`.
"""

from __future__ import annotations

from zerojit.contract.backends import Together

from ..families import Family, Preset
from .kernel import FAMILY as NAME
from .launches import sample_launches
from .model import TurboQuantAttention, TurboQuantPresetModel
from .presets import PRESETS


def _construct(preset: Preset[TurboQuantPresetModel]):
    model = preset.model
    layers = [
        TurboQuantAttention(preset.limits, model.layer, model.max_num_kv_splits, model.pool_rows)
        for _ in range(preset.num_layers)
    ]
    return layers[0].kernels


FAMILY = Family(
    name=NAME,
    title="TurboQuant decode attention (FlyDSL + its Triton reduction, gfx950, vLLM's own kernels)",
    backend=Together(("flydsl", "triton")),
    presets=PRESETS,
    preset_model=TurboQuantPresetModel,
    construct=_construct,
    sample_launches=sample_launches,
    equivalence=f"{__name__}.equivalence:TurboQuantEquivalence",
)
