"""Key equivalence for Inkling relative attention: vLLM 0.29.0's HF-config-gated step vs registering layers.

The legacy side is vLLM's own code (legacy.py). The migration changes where the kernel
registers, not what it warms: no difference is intended, in either mode.
"""

from __future__ import annotations

import dataclasses
import itertools

from hypothesis import strategies as st

from zerojit.contract import ServingLimits
from zerojit.migrate.engine_trees.equivalence import TreeEquivalence, keys_via_registry

from .kernel import InklingModel
from .legacy import LEGACY_RELEASE, InklingEngine
from .model import InklingAttention
from .spec import SPEC

ARCHS = ("sm90", "sm100", "sm103", "sm120")
MODELS = {  # (heads, kv heads, sliding-window heads, sliding-window kv heads) before TP
    "inkling-64h": (64, 8, 64, 8),
    "inkling-12h": (12, 4, 12, 4),
}
SCHEDULERS = ((256, 8192, 32768), (1, 1, 16), (16, 513, 4096), (1100, 2048, 8192))
TP_SIZES = (1, 2, 4, 8)
HIDDEN, D_REL, REL_EXTENT, WINDOW, HEAD_DIM = 1024, 16, 1024, 512, 128


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
        return ServingLimits(
            max_num_seqs=seqs,
            max_num_batched_tokens=tokens,
            max_model_len=model_len,
            tp_size=self.tp_size,
            dtype=self.dtype,
            arch=self.arch,
            enable_jit_warmup=self.enable_jit_warmup,
        )

    def attention(self) -> InklingModel:
        heads, kv, swa_heads, swa_kv = MODELS[self.model]
        tp = self.tp_size
        return InklingModel(
            num_heads=heads // tp,
            num_kv_heads=max(1, kv // tp),
            head_dim=HEAD_DIM,
            rel_extent=REL_EXTENT,
            sliding_window=WINDOW,
            swa_num_heads=swa_heads // tp,
            swa_num_kv_heads=max(1, swa_kv // tp),
            swa_head_dim=HEAD_DIM,
        )

    def hf_config(self) -> dict[str, object]:
        """The model's HF config (whole-model head counts; vLLM divides them by the TP size)."""
        heads, kv, swa_heads, swa_kv = MODELS[self.model]
        return dict(
            num_attention_heads=heads,
            num_key_value_heads=kv,
            head_dim=HEAD_DIM,
            rel_extent=REL_EXTENT,
            sliding_window_size=WINDOW,
            swa_num_attention_heads=swa_heads,
            swa_num_key_value_heads=swa_kv,
            swa_head_dim=HEAD_DIM,
            hidden_size=HIDDEN,
            d_rel=D_REL,
            log_scaling_n_floor=4096,
            log_scaling_alpha=0.1,
            q_bias=False,
            o_bias=False,
            rms_norm_eps=1e-6,
            sconv_kernel_size=4,
        )


def runs_at(model: str, tp: int) -> bool:
    """Whether the model's heads split over `tp` ranks (vLLM asserts they do)."""
    heads, kv, swa_heads, swa_kv = MODELS[model]
    return heads % tp == 0 and swa_heads % tp == 0 and all(k % tp == 0 or tp % k == 0 for k in (kv, swa_kv))


def _full() -> list[InklingConfig]:
    return [
        InklingConfig(arch, model, tp, dtype, inkling, jit, scheduler)
        for arch, model, tp, dtype, inkling, jit, scheduler in itertools.product(
            ARCHS, MODELS, TP_SIZES, ("bf16", "fp16"), (True, False), (True, False), SCHEDULERS
        )
        if runs_at(model, tp) and not (scheduler[0] > 1024 and arch not in ("sm90", "sm100"))
    ]


class InklingEquivalence(TreeEquivalence):
    family = "inkling-rel-attention"
    spec = SPEC
    engine = InklingEngine()
    legacy_release = LEGACY_RELEASE
    grids = {"full": _full, "smoke": lambda: _full()[::29]}

    def strategy(self):
        return st.builds(
            InklingConfig,
            arch=st.sampled_from(ARCHS),
            model=st.sampled_from(tuple(MODELS)),
            tp_size=st.sampled_from(TP_SIZES),
            dtype=st.sampled_from(("bf16", "fp16")),
            is_inkling=st.booleans(),
            enable_jit_warmup=st.booleans(),
            scheduler=st.sampled_from(SCHEDULERS[:3]),
        ).filter(lambda c: runs_at(c.model, c.tp_size))

    def family_keys(self, config: InklingConfig) -> set[str]:
        limits = config.limits()

        def construct():
            if config.is_inkling:  # only an Inkling model builds Inkling attention layers
                for index in range(2):
                    InklingAttention(limits, config.attention(), is_local=index == 1)

        return keys_via_registry(limits, construct)

    def intended(self, config, legacy, migrated) -> str | None:
        return None  # the migration changes where the kernel registers, not what it warms
