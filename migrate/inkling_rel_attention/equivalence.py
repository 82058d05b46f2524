"""Key equivalence for Inkling relative attention: legacy HF-config-gated step vs registering layers."""

from __future__ import annotations

import dataclasses
import itertools

from hypothesis import strategies as st

from zerojit.contract import ServingLimits
from zerojit.contract.equivalence import canonical, keys_via_registry

from .kernel import InklingModel
from .legacy import legacy_keys
from .model import InklingAttention

ARCHS = ("sm90", "sm100", "sm103", "sm120")
MODELS = {  # (heads, kv heads, sliding-window heads, sliding-window kv heads) before TP
    "inkling-64h": (64, 8, 64, 8),
    "inkling-12h": (12, 4, 12, 4),
}
SCHEDULERS = ((256, 8192, 32768), (1, 1, 16), (16, 513, 4096), (1100, 2048, 8192))


@dataclasses.dataclass(frozen=True)
class InklingConfig:
    arch: str
    model: str = "inkling-64h"
    tp_size: int = 8
    dtype: str = "bf16"
    is_inkling: bool = True
    enable_jit_warmup: bool = True
    scheduler: tuple[int, int, int] = SCHEDULERS[0]

    def limits(self) -> ServingLimits:
        seqs, tokens, model_len = self.scheduler
        return ServingLimits(max_num_seqs=seqs, max_num_batched_tokens=tokens, max_model_len=model_len,
                             tp_size=self.tp_size, dtype=self.dtype, arch=self.arch,
                             enable_jit_warmup=self.enable_jit_warmup)

    def attention(self) -> InklingModel:
        heads, kv, swa_heads, swa_kv = MODELS[self.model]
        tp = self.tp_size
        return InklingModel(num_heads=heads // tp, num_kv_heads=max(1, kv // tp), head_dim=128, rel_extent=1024,
                            sliding_window=512, swa_num_heads=swa_heads // tp, swa_num_kv_heads=max(1, swa_kv // tp),
                            swa_head_dim=128)


def _full() -> list[InklingConfig]:
    return [InklingConfig(arch, model, tp, dtype, inkling, jit, scheduler)
            for arch, model, tp, dtype, inkling, jit, scheduler in itertools.product(
                ARCHS, MODELS, (1, 4), ("bf16", "fp16"), (True, False), (True, False), SCHEDULERS)
            if not (scheduler[0] > 1024 and arch not in ("sm90", "sm100"))]


class InklingEquivalence:
    family = "inkling-rel-attention"
    grids = {"full": _full, "smoke": lambda: _full()[::29]}

    def strategy(self):
        return st.builds(InklingConfig, arch=st.sampled_from(ARCHS), model=st.sampled_from(tuple(MODELS)),
                         tp_size=st.sampled_from((1, 2, 4)), dtype=st.sampled_from(("bf16", "fp16")),
                         is_inkling=st.booleans(), enable_jit_warmup=st.booleans(),
                         scheduler=st.sampled_from(SCHEDULERS[:3]))

    def legacy_keys(self, config: InklingConfig) -> set[str]:
        if not config.enable_jit_warmup:  # the orchestrator ran the FA4 step only with JIT warmup on
            return set()
        return canonical(legacy_keys(config.limits(), config.attention(), hf_config_is_inkling=config.is_inkling))

    def migrated_keys(self, config: InklingConfig) -> set[str]:
        limits = config.limits()

        def construct():
            if config.is_inkling:  # only an Inkling model builds Inkling attention layers
                for index in range(2):
                    InklingAttention(limits, config.attention(), is_local=index == 1)

        return keys_via_registry(limits, construct)

    def intended(self, config, only_legacy, only_migrated) -> str | None:
        return None  # the migration changes where the kernel registers, not what it warms
