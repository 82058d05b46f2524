"""Key equivalence for FA4 MLA prefill: vLLM 0.29.0's standalone warmup vs the registering backend.

The legacy side is vLLM's own code (legacy.py). The differences zerojit makes on purpose
are rules that turn the legacy keys into the keys expected from the migrated side, each
derived from the legacy keys or the legacy tree's own functions, never from zerojit's:
  * pooling: vLLM's step skipped pooling models, which still build the prefill backend;
    the migrated backend registers where it runs (expected: the same model's keys unpooled);
  * sm90 unsplit: FA4 4.0.0b36 has no split-KV forward on sm90 ("SplitKV not supported on
    SM 9.0"); vLLM asks num_splits=0 there (expected: num_splits=1, and no split-only
    Sk >= 4096 probes, which vLLM's own probe filter drops at num_splits=1);
  * Sq = 257: on sm100 a query longer than q_stage x tile_m = 256 rows is another FA4
    variant; zerojit adds the 129-row probes at Sk 512 and 8192 again with 257 rows;
  * legacy warms nothing where its own backend runs FA4 (vLLM's expansion re-decides the
    version from the QK head size alone and skips the sm100 family but sm100 itself):
    the legacy side offers no keys to compare, the report says why.
With a migrated tree, only the pooling rule and new MLA layouts (dims the legacy tree's
backend refuses and the migrated tree's accepts) apply.
"""

from __future__ import annotations

import dataclasses
import itertools

from hypothesis import strategies as st

from zerojit.contract import ServingLimits
from zerojit.migrate.engine_trees.equivalence import TreeEquivalence, canonical, keys_via_registry

from .kernel import SUPPORTED_DIMS, MLADims
from .legacy import LEGACY_RELEASE, FA4MLAEngine, flash_attn_accepts
from .model import FlashAttnPrefillBackend, MLAModel, selects_flash_attn_prefill
from .spec import SPEC

ARCHS = ("sm90", "sm100", "sm103", "sm110", "sm120", "gfx942", "gfx950")
DIMS = SUPPORTED_DIMS + (MLADims(256, 0, 256),)  # the last is not a FLASH_ATTN prefill layout in 0.29.0
TP_SIZES = (1, 2, 4, 8)
LIMITS = ((128, 16384, 32768), (1, 8, 8), (1024, 8192, 131072))
SPLIT_ONLY_K = 4096  # vLLM's LONG_K: probes from here exist only to reach split configurations
MULTI_BLOCK_Q, MULTI_BLOCK_FROM_Q, MULTI_BLOCK_K = 257, 129, (512, 8192)


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
        return ServingLimits(
            max_num_seqs=seqs,
            max_num_batched_tokens=tokens,
            max_model_len=model_len,
            tp_size=self.tp_size,
            dtype=self.dtype,
            arch=self.arch,
            enable_jit_warmup=self.enable_jit_warmup,
        )

    def model(self) -> MLAModel:
        return MLAModel(
            self.total_heads,
            self.dims,
            self.forced_fa_version,
            self.batch_invariant,
            self.is_pooling,
            self.use_mla,
            self.prefill_backend,
        )


def _full() -> list[MLAConfig]:
    core = [
        MLAConfig(arch, dims, tp_size=tp, dtype=dtype, forced_fa_version=forced, batch_invariant=invariant)
        for arch, dims, tp, dtype, forced, invariant in itertools.product(
            ARCHS, DIMS, TP_SIZES, ("bf16", "fp16", "fp8"), (None, 4), (False, True)
        )
        if dtype != "fp16" or tp == 8
    ]
    gates = [
        MLAConfig(arch, MLADims(128, 64, 128), forced_fa_version=4, tp_size=tp, **change)
        for arch in ("sm90", "sm100")
        for tp in TP_SIZES
        for change in (
            {"is_pooling": True},
            {"use_mla": False},
            {"prefill_backend": "FLASHINFER"},
            {"enable_jit_warmup": False},
            {"total_heads": 16},
        )
    ]
    limits = [
        MLAConfig(arch, dims, forced_fa_version=4, scheduler=scheduler)
        for arch in ("sm90", "sm100")
        for dims in SUPPORTED_DIMS
        for scheduler in LIMITS
    ]
    return core + gates + limits


class FA4MLAEquivalence(TreeEquivalence):
    family = "fa4-mla-prefill"
    spec = SPEC
    engine = FA4MLAEngine()
    legacy_release = LEGACY_RELEASE
    grids = {"full": _full, "smoke": lambda: _full()[::37]}

    def strategy(self):
        return st.builds(
            MLAConfig,
            arch=st.sampled_from(ARCHS),
            dims=st.sampled_from(DIMS),
            total_heads=st.sampled_from((16, 64, 128)),
            tp_size=st.sampled_from(TP_SIZES),
            dtype=st.sampled_from(("bf16", "fp16", "fp8")),
            forced_fa_version=st.sampled_from((None, 2, 3, 4)),
            batch_invariant=st.booleans(),
            is_pooling=st.booleans(),
            use_mla=st.booleans(),
            prefill_backend=st.sampled_from(("FLASH_ATTN", "FLASHINFER", "CUDNN")),
            enable_jit_warmup=st.booleans(),
            scheduler=st.sampled_from(LIMITS),
        )

    def family_keys(self, config: MLAConfig) -> set[str]:
        limits, model = config.limits(), config.model()

        def construct():
            if selects_flash_attn_prefill(model):
                FlashAttnPrefillBackend(limits, model)

        return keys_via_registry(limits, construct)

    def intended(self, config: MLAConfig, legacy: set[str], migrated: set[str]) -> str | None:
        """Why they differ, when a rule turns the legacy keys into exactly the migrated ones (else None)."""
        reasons: list[str] = []
        expected = self.legacy.standalone_keys(config)  # as key objects, for the rules to transform
        if config.is_pooling and not expected:
            expected = self.legacy.standalone_keys(dataclasses.replace(config, is_pooling=False))
            reasons.append("pooling: legacy skipped pooling models; the migrated backend registers where it runs FA4")
        if self.migrated is not None:
            if self._new_layout(config):
                return "new MLA layout: the legacy tree's backend refuses these dims, the migrated tree's accepts them"
        elif not expected and self._legacy_backend_runs_fa4(config):
            return (
                "legacy warmed nothing though its own backend runs FA4 here (vLLM re-decides the FA version from "
                "the QK head size alone and expands only on sm90, sm100 and sm120-with-one-split)"
            )
        elif expected:
            expected, changes = _zerojit_key_space_changes(config, expected)
            reasons += changes
        if reasons and canonical(expected) == migrated:
            return "; ".join(reasons)
        return None

    def _legacy_backend_runs_fa4(self, config: MLAConfig) -> bool:
        """Would vLLM 0.29.0 itself build the FA prefill backend on FA4 here (its own decision)?"""
        gates = config.use_mla and config.prefill_backend == "FLASH_ATTN" and config.enable_jit_warmup
        return gates and self.legacy.within(config, lambda: self._fa4_backend(config))

    def _new_layout(self, config: MLAConfig) -> bool:
        return (
            config.use_mla
            and config.prefill_backend == "FLASH_ATTN"
            and not self.legacy.within(config, lambda: flash_attn_accepts(config.dims))
            and self.migrated.within(config, lambda: flash_attn_accepts(config.dims))
        )

    def _fa4_backend(self, config: MLAConfig) -> bool:
        return (
            flash_attn_accepts(config.dims)
            and self.engine.backend_fa_version(config, config.dims.qk_head_dim, config.dims.v_head_dim) == 4
        )


def _zerojit_key_space_changes(config: MLAConfig, legacy: set) -> tuple[set, list[str]]:
    """The legacy keys as zerojit's key space is meant to change them, and which changes applied."""
    changes = []
    if config.arch == "sm90" and any(key.num_splits != 1 for key in legacy):
        legacy = {dataclasses.replace(key, num_splits=1) for key in legacy if key.max_seqlen_k < SPLIT_ONLY_K}
        changes.append("sm90 unsplit: FA4 4.0.0b36 has no split-KV forward on sm90")
    extra = {
        dataclasses.replace(key, max_seqlen_q=MULTI_BLOCK_Q, q_shape=(MULTI_BLOCK_Q, *key.q_shape[1:]))
        for key in legacy
        if key.max_seqlen_q == MULTI_BLOCK_FROM_Q and key.max_seqlen_k in MULTI_BLOCK_K
    }
    if extra:
        legacy = legacy | extra
        changes.append("Sq = 257 probes: queries spanning several M blocks are other FA4 variants on sm100")
    return legacy, changes
