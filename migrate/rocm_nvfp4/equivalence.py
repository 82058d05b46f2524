"""Key equivalence for the ROCm NVFP4-KV launchers: the legacy sweep, run, vs the registering layer.

The legacy side runs the legacy warmup entry itself (legacy.py) with launchers that record
what they are asked to launch. Intended differences are facts stated here, not taken from
the migrated code: the launchers run on gfx950 with an NVFP4 KV cache only; the legacy
step ignored the JIT-warmup switch; and the sweep's blind spots, each checked key by key
against the published variant bounds (top-k strips of 4096 tokens, the large index
prefill above 12288 tokens, the large fused insert above 512).
"""

from __future__ import annotations

import dataclasses
import itertools
import json

from hypothesis import strategies as st

from zerojit.contract import ServingLimits
from zerojit.migrate.engine_trees.equivalence import canonical, keys_via_registry

from .legacy import legacy_keys
from .model import build_model, nvfp4_kv_launchers

SCHEDULERS = (
    (16, 16384, 8704),
    (16, 512, 8704),
    (16, 513, 8704),
    (64, 8192, 32768),
    (1, 12288, 12288),
    (1, 12289, 12289),
    (256, 256, 256),
)
TP_SIZES = (1, 2, 4, 8)
TOPK_STRIP, INDEX_PREFILL_SHARED_MAX, FUSED_INSERT_SMALL_MAX, SPARSE_PREFILL_ONE_ROUND = 4096, 12288, 512, 2048


@dataclasses.dataclass(frozen=True)
class ROCmConfig:
    arch: str = "gfx950"
    kv_cache_dtype: str = "nvfp4"
    is_minimax: bool = True
    enable_jit_warmup: bool = True
    scheduler: tuple[int, int, int] = SCHEDULERS[0]
    spec_query_lens: tuple[int, ...] = ()
    tp_size: int = 1

    def limits(self) -> ServingLimits:
        seqs, tokens, model_len = self.scheduler
        return ServingLimits(
            max_num_seqs=seqs,
            max_num_batched_tokens=max(tokens, seqs * max((1, *self.spec_query_lens))),
            max_model_len=model_len,
            arch=self.arch,
            kv_cache_dtype=self.kv_cache_dtype,
            tp_size=self.tp_size,
            spec_query_lens=self.spec_query_lens,
            enable_jit_warmup=self.enable_jit_warmup,
        )


def _full() -> list[ROCmConfig]:
    return [
        ROCmConfig(arch, kv, minimax, jit, scheduler, spec, tp)
        for arch, kv, minimax, jit, scheduler, spec, tp in itertools.product(
            ("gfx950", "gfx942", "sm90"),
            ("nvfp4", "fp8"),
            (True, False),
            (True, False),
            SCHEDULERS,
            ((), (2,), (2, 4)),
            TP_SIZES,
        )
        if tp == 1 or (kv == "nvfp4" and spec != (2,))
    ]


class ROCmEquivalence:
    family = "rocm-nvfp4"
    grids = {"full": _full, "smoke": lambda: _full()[::23]}

    def strategy(self):
        return st.builds(
            ROCmConfig,
            arch=st.sampled_from(("gfx950", "gfx942", "sm100")),
            kv_cache_dtype=st.sampled_from(("nvfp4", "fp8", "auto")),
            is_minimax=st.booleans(),
            enable_jit_warmup=st.booleans(),
            scheduler=st.tuples(st.integers(1, 64), st.integers(64, 20000), st.integers(16, 40000)),
            spec_query_lens=st.sampled_from(((), (2,), (4,), (2, 3))),
            tp_size=st.sampled_from(TP_SIZES),
        )

    legacy_source = "the legacy ROCm warmup step (migrate/rocm_nvfp4/legacy.py), run with recording launchers"
    migrated_source = "zerojit's migrated family modules"

    def legacy_keys(self, config: ROCmConfig) -> set[str]:
        # The orchestrator called the step on ROCm only (the step checks MiniMax M3 itself).
        if not config.arch.startswith("gfx"):
            return set()
        return canonical(legacy_keys(config.limits(), nvfp4_kv_launchers(), serving_minimax=config.is_minimax))

    def migrated_keys(self, config: ROCmConfig) -> set[str]:
        limits = config.limits()
        return keys_via_registry(limits, lambda: build_model(limits, 2) if config.is_minimax else None)

    def intended(self, config: ROCmConfig, legacy: set[str], migrated: set[str]) -> str | None:
        only_legacy, only_migrated = legacy - migrated, migrated - legacy
        runs_launchers = config.arch == "gfx950" and config.kv_cache_dtype == "nvfp4"
        if only_legacy and not migrated:
            if not runs_launchers:
                return (
                    "legacy warmed the NVFP4 launchers on any ROCm GPU and KV dtype; they run on gfx950 with an "
                    "NVFP4 KV cache only"
                )
            if not config.enable_jit_warmup:
                return "the migrated registration honours enable_jit_warmup; the legacy ROCm step ran regardless"
            return None
        if only_legacy or not runs_launchers or not config.is_minimax:
            return None
        reasons = {_legacy_blind_spot(key, config) for key in only_migrated}
        return None if None in reasons else "; ".join(sorted(reasons))


def _legacy_blind_spot(key: str, config: ROCmConfig) -> str | None:
    """Why the legacy sweep (one prompt per step, context = prompt) misses this reachable key, if it does."""
    kind, fields = key.split(":", 1)
    fields = json.loads(fields)
    limits = config.limits()
    longest_prompt = min(limits.max_model_len, limits.max_num_batched_tokens)
    if (
        kind == "IndexPrefillKey"
        and fields["large"]
        and longest_prompt <= INDEX_PREFILL_SHARED_MAX < limits.max_num_batched_tokens
    ):
        return "legacy never puts several prompts in one step (their tokens add up past the index prefill bound)"
    if (
        kind == "FusedInsertKey"
        and fields["large_batch"]
        and longest_prompt <= FUSED_INSERT_SMALL_MAX < limits.max_num_batched_tokens
    ):
        return "legacy never puts several prompts in one step (their tokens add up past the fused insert bound)"
    if (
        kind == "SparsePrefillKey"
        and fields["combine_rounds"] == 2
        and longest_prompt <= SPARSE_PREFILL_ONE_ROUND < limits.max_model_len
    ):
        return "legacy never prefills a chunk whose context is longer than the step (chunked prefill)"
    if kind == "TopKKey":
        swept = {
            -(-(1 << bit) // TOPK_STRIP)
            for bit in range(limits.max_model_len.bit_length())
            if (1 << bit) <= (limits.max_model_len if fields["decode"] else longest_prompt)
        }
        if fields["strips"] not in swept and fields["strips"] <= -(-limits.max_model_len // TOPK_STRIP):
            return (
                "legacy sweeps contexts at powers of two (prefill only up to one step), so top-k strip counts "
                "in between are missed"
            )
    return None
