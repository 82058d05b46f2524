"""Key equivalence for FA4 MLA prefill: legacy standalone warmup vs the registering backend."""

from __future__ import annotations

import dataclasses
import itertools

from hypothesis import strategies as st

from zerojit.contract import ServingLimits
from zerojit.contract.cutedsl_backend import arch_family
from zerojit.contract.equivalence import canonical, keys_via_registry

from .kernel import SUPPORTED_DIMS, MLADims, select_fa_version
from .legacy import legacy_keys
from .model import FlashAttnPrefillBackend, MLAModel, selects_flash_attn_prefill

ARCHS = ("sm90", "sm100", "sm103", "sm110", "sm120", "gfx942", "gfx950")
DIMS = SUPPORTED_DIMS + (MLADims(256, 0, 256),)  # the last is not a FLASH_ATTN prefill layout
LIMITS = ((128, 16384, 32768), (1, 8, 8), (1024, 8192, 131072))


@dataclasses.dataclass(frozen=True)
class MLAConfig:
    arch: str
    dims: MLADims
    total_heads: int = 128
    tp_size: int = 8
    dtype: str = "bf16"
    forced_fa_version: int | None = None
    batch_invariant: bool = False
    is_pooling: bool = False
    use_mla: bool = True
    prefill_backend: str = "FLASH_ATTN"
    enable_jit_warmup: bool = True
    scheduler: tuple[int, int, int] = LIMITS[0]  # max_num_seqs, max_num_batched_tokens, max_model_len

    def limits(self) -> ServingLimits:
        seqs, tokens, model_len = self.scheduler
        return ServingLimits(max_num_seqs=seqs, max_num_batched_tokens=tokens, max_model_len=model_len,
                             tp_size=self.tp_size, dtype=self.dtype, arch=self.arch,
                             enable_jit_warmup=self.enable_jit_warmup)

    def model(self) -> MLAModel:
        return MLAModel(self.total_heads, self.dims, self.forced_fa_version, self.batch_invariant, self.is_pooling,
                        self.use_mla, self.prefill_backend)


def _full() -> list[MLAConfig]:
    core = [MLAConfig(arch, dims, dtype=dtype, forced_fa_version=forced, batch_invariant=invariant)
            for arch, dims, dtype, forced, invariant in itertools.product(
                ARCHS, DIMS, ("bf16", "fp16", "fp8"), (None, 4), (False, True))]
    gates = [MLAConfig(arch, MLADims(128, 64, 128), forced_fa_version=4, **change)
             for arch in ("sm90", "sm100")
             for change in ({"is_pooling": True}, {"use_mla": False}, {"prefill_backend": "FLASHINFER"},
                            {"enable_jit_warmup": False}, {"total_heads": 16, "tp_size": 1},
                            {"total_heads": 128, "tp_size": 1})]
    limits = [MLAConfig(arch, dims, forced_fa_version=4, scheduler=scheduler)
              for arch in ("sm90", "sm100") for dims in SUPPORTED_DIMS for scheduler in LIMITS]
    return core + gates + limits


class FA4MLAEquivalence:
    family = "fa4-mla-prefill"
    grids = {"full": _full, "smoke": lambda: _full()[::37]}

    def strategy(self):
        return st.builds(
            MLAConfig, arch=st.sampled_from(ARCHS), dims=st.sampled_from(DIMS),
            total_heads=st.sampled_from((16, 64, 128)), tp_size=st.sampled_from((1, 2, 8)),
            dtype=st.sampled_from(("bf16", "fp16", "fp8")), forced_fa_version=st.sampled_from((None, 2, 3, 4)),
            batch_invariant=st.booleans(), is_pooling=st.booleans(), use_mla=st.booleans(),
            prefill_backend=st.sampled_from(("FLASH_ATTN", "FLASHINFER", "CUDNN")),
            enable_jit_warmup=st.booleans(), scheduler=st.sampled_from(LIMITS))

    def legacy_keys(self, config: MLAConfig) -> set[str]:
        if not config.enable_jit_warmup:  # the orchestrator ran the FA4 step only with JIT warmup on
            return set()
        return canonical(legacy_keys(config.limits(), config.model()))

    def migrated_keys(self, config: MLAConfig) -> set[str]:
        limits, model = config.limits(), config.model()

        def construct():
            if selects_flash_attn_prefill(model):
                FlashAttnPrefillBackend(limits, model)

        return keys_via_registry(limits, construct)

    def intended(self, config: MLAConfig, only_legacy: set[str], only_migrated: set[str]) -> str | None:
        qk, v = config.dims.qk_head_dim, config.dims.v_head_dim
        runs_fa4 = select_fa_version(config.arch, qk, v, config.forced_fa_version, config.batch_invariant) == 4
        rechecked = select_fa_version(config.arch, qk, None, config.forced_fa_version, config.batch_invariant) == 4
        if only_legacy:
            return None
        if config.is_pooling and runs_fa4:
            return "legacy skipped pooling models; the migrated backend registers wherever it runs FA4"
        if runs_fa4 and not rechecked and arch_family(config.arch) == "sm100":
            return ("upstream defect: legacy expansion re-checks the FA version without the V head size, "
                    "so this sm100 server runs FA4 with nothing warmed")
        return None
