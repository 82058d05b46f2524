"""The migrated form: every Inkling attention layer registers the relative-attention kernel.

Global and sliding-window layers both run it; each registers the model's attention
shape, and the registry keeps one registration (they are equal).
"""

from __future__ import annotations

import functools

from zerojit.contract import ServingLimits

from .kernel import InklingModel, InklingRelAttention


@functools.cache
def inkling_kernel(arch: str) -> InklingRelAttention:
    """The process's kernel object for its GPU arch (the split heuristic depends on it)."""
    return InklingRelAttention(arch)


class InklingAttention:
    def __init__(self, limits: ServingLimits, model: InklingModel, is_local: bool):
        self.is_local = is_local
        self.kernel = inkling_kernel(limits.arch)
        if limits.enable_jit_warmup:
            self.kernel.register_warmup(model=model)
