"""A toy kernel family, shaped like zerojit's built-in rooms, registered only by its entry point.

kernel.py  key, dispatch, key space and a real compile (Python code generation, marshalled to a disk cache)
The rest of a room (model, launches, presets) is small enough to live here.
"""

from __future__ import annotations

import random
from pathlib import Path

from zerojit.contract import ServingLimits
from zerojit.migrate.families import Family, Preset

from . import kernel
from .kernel import PolyKernel

NAME = "toy-poly"
MAX_TERMS = 16
DTYPES = ("bf16", "fp32")
TOY_POLY = PolyKernel()  # the kernel singleton; its compiles go to the configured cache

PRESETS = (
    Preset("toy-poly-small", NAME, "A toy server whose layer evaluates polynomials of up to 16 terms",
           ServingLimits(max_num_seqs=8, max_num_batched_tokens=512, max_model_len=4096)),
)


class PolyLayer:
    """Stands for the model layer that selects the kernel and registers its warmup."""

    def __init__(self, limits: ServingLimits):
        if limits.enable_jit_warmup:
            TOY_POLY.register_warmup(max_terms=MAX_TERMS, dtypes=DTYPES)


def _construct(preset: Preset):
    PolyLayer(preset.limits)
    return (TOY_POLY,)


def _configure(preset: Preset, cache_dir: Path) -> Path:
    kernel.configure(cache_dir)
    return cache_dir


def _sample(preset: Preset, kernels, per_kernel: int, seed: int):
    rng = random.Random(seed)
    return [(k, {"num_terms": rng.randint(1, MAX_TERMS), "dtype": rng.choice(DTYPES)})
            for k in kernels for _ in range(per_kernel)]


FAMILY = Family(name=NAME, title="Toy polynomial kernels (Python codegen)", backend="python", presets=PRESETS,
                construct=_construct, configure_backend=_configure, sample_launches=_sample)
