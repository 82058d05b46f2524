"""Key equivalence for the gated RMS norm: vLLM 0.33.0's standalone Qwen step vs registering GDN layers.

The legacy side is vLLM's own code (legacy.py). One difference is intended, in either mode:
vLLM's orchestrator calls `qwen_triton_warmup` whatever `kernel_config.enable_jit_warmup` says,
while the contract's registry runs only when it is on, so with JIT warmup off the migrated
side warms nothing where the legacy step still did.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import NamedTuple

from hypothesis import strategies as st

from zerojit.contract import ServingLimits
from zerojit.migrate.engine_trees.equivalence import TreeEquivalence, keys_via_registry

from .kernel import GatedNorm
from .legacy import LEGACY_RELEASE, GdnEngine
from .model import QwenGdnAttention
from .spec import SPEC


class GdnModel(NamedTuple):
    model_type: str
    num_k_heads: int  # whole model; vLLM divides by the TP size
    num_v_heads: int
    head_k_dim: int
    head_v_dim: int
    gdn_layers: int


MODELS = {
    "qwen3-next": GdnModel("qwen3_next", 16, 32, 128, 128, 3),
    "qwen3.5-moe": GdnModel("qwen3_5_moe", 16, 64, 128, 128, 3),
    "qwen4-exp-v72": GdnModel("qwen4_exp", 8, 24, 128, 72, 3),
    "llama": GdnModel("llama", 8, 8, 128, 128, 0),  # no GDN layer: neither side warms the norm
}
NUM_SMS = (132, 148, 114)  # H100/H200, B200, H100 PCIe
SCHEDULERS = ((256, 8192, 32768), (1, 1, 16), (16, 513, 4096), (1024, 16384, 65536))
TP_SIZES = (1, 2, 4, 8)


@dataclasses.dataclass(frozen=True)
class GdnConfig:
    model: str = "qwen3-next"
    num_sms: int = 132
    tp_size: int = 4
    dtype: str = "bf16"
    activation: str = "silu"
    enable_jit_warmup: bool = True
    scheduler: tuple[int, int, int] = SCHEDULERS[0]

    @property
    def shape(self) -> GdnModel:
        return MODELS[self.model]

    def limits(self) -> ServingLimits:
        seqs, tokens, model_len = self.scheduler
        return ServingLimits(
            max_num_seqs=seqs,
            max_num_batched_tokens=tokens,
            max_model_len=model_len,
            tp_size=self.tp_size,
            dtype=self.dtype,
            enable_jit_warmup=self.enable_jit_warmup,
        )

    def norm(self) -> GatedNorm:
        return GatedNorm(
            rows_per_token=self.shape.num_v_heads // self.tp_size,
            group_size=self.shape.head_v_dim,
            weight_dtype=self.dtype,
            norm_before_gate=True,
            activation=self.activation,
        )


def _full() -> list[GdnConfig]:
    return [
        GdnConfig(*values)
        for values in itertools.product(
            MODELS, NUM_SMS, TP_SIZES, ("bf16", "fp16"), ("silu", "sigmoid"), (True, False), SCHEDULERS
        )
    ]


class QwenModelTypes:
    """The Qwen migrations' intended difference in which models warm: the legacy function runs only for the model
    types of its `_QWEN_MODEL_TYPES`; each layer registers wherever a model builds it. A release whose list lacks
    a model that builds the layer (0.30.0's has no qwen4_exp) warmed nothing for it; its migration does."""

    def intended(self, config, legacy, migrated) -> str | None:
        listed = self.legacy.constant(self.spec.legacy.module, "_QWEN_MODEL_TYPES")
        model_type = config.shape.model_type
        if migrated and not legacy and listed is not None and model_type not in listed:
            return (
                f"the legacy warmup skips model type {model_type!r}, which this release's _QWEN_MODEL_TYPES lacks; "
                "the model builds the layer, which registers it"
            )
        return super().intended(config, legacy, migrated)


class GdnNormEquivalence(QwenModelTypes, TreeEquivalence):
    family = "fla-layer-norm"
    spec = SPEC
    engine = GdnEngine()
    legacy_release = LEGACY_RELEASE
    grids = {"full": _full, "smoke": lambda: _full()[::37]}

    def strategy(self):
        return st.builds(
            GdnConfig,
            model=st.sampled_from(tuple(MODELS)),
            num_sms=st.sampled_from(NUM_SMS),
            tp_size=st.sampled_from(TP_SIZES),
            dtype=st.sampled_from(("bf16", "fp16")),
            activation=st.sampled_from(("silu", "sigmoid")),
            enable_jit_warmup=st.booleans(),
            scheduler=st.sampled_from(SCHEDULERS),
        )

    def family_keys(self, config: GdnConfig) -> set[str]:
        limits = config.limits()

        def construct():
            for _ in range(config.shape.gdn_layers):
                QwenGdnAttention(limits, config.norm(), config.num_sms)

        return keys_via_registry(limits, construct)

    def intended(self, config, legacy, migrated) -> str | None:
        if not config.enable_jit_warmup and not migrated:
            return (
                "JIT warmup is off: vLLM's orchestrator runs the standalone Qwen step regardless, the "
                "contract's registry does not run"
            )
        return super().intended(config, legacy, migrated)
