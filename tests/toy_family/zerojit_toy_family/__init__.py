"""A toy kernel family, shaped like zerojit's built-in rooms, registered only by its entry point.

It is the template for a family of your own: copy this folder, rename it, add one entry to
`[project.entry-points."zerojit.families"]`.
backend.py  its compiler backend (Python's compiler), a module implementing zerojit's Backend protocol
kernel.py   key, dispatch, key space and a real compile (Python code generation, marshalled to a disk cache)
The rest of a room (preset model, model, launches, presets) is small enough to live here.
"""

from __future__ import annotations

import dataclasses
import random

from zerojit.contract import ServingLimits
from zerojit.migrate.families import Family, Preset

from . import backend
from .kernel import PolyKernel

NAME = "toy-poly"
MAX_TERMS = 16
DTYPES = ("bf16", "fp32")
TOY_POLY = PolyKernel()  # the kernel singleton; its compiles go to the configured cache


@dataclasses.dataclass(frozen=True)
class PolyModel:
    """A preset's model: what the layer evaluates (polynomials of up to `max_terms` terms, in these dtypes)."""

    max_terms: int = MAX_TERMS
    dtypes: tuple[str, ...] = DTYPES


PRESETS = (
    Preset(
        "toy-poly-small",
        NAME,
        "A toy server whose layer evaluates polynomials of up to 16 terms",
        ServingLimits(max_num_seqs=8, max_num_batched_tokens=512, max_model_len=4096),
        model=PolyModel(),
    ),
)


class PolyLayer:
    """Stands for the model layer that selects the kernel and registers its warmup."""

    def __init__(self, limits: ServingLimits, model: PolyModel):
        if limits.enable_jit_warmup:
            TOY_POLY.register_warmup(max_terms=model.max_terms, dtypes=model.dtypes)


def _construct(preset: Preset[PolyModel]):
    PolyLayer(preset.limits, preset.model)
    return (TOY_POLY,)


def _sample(preset: Preset[PolyModel], kernels, per_kernel: int, seed: int):
    rng = random.Random(seed)
    return [
        (k, {"num_terms": rng.randint(1, preset.model.max_terms), "dtype": rng.choice(preset.model.dtypes)})
        for k in kernels
        for _ in range(per_kernel)
    ]


FAMILY = Family(
    name=NAME,
    title="Toy polynomial kernels (Python codegen)",
    backend=backend,
    presets=PRESETS,
    construct=_construct,
    sample_launches=_sample,
    preset_model=PolyModel,
)
