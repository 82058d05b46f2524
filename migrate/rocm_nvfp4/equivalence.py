"""Key equivalence for the ROCm NVFP4-KV launchers: legacy sweep vs the registering layer."""

from __future__ import annotations

import dataclasses
import itertools
import json

from hypothesis import strategies as st

from zerojit.contract import ServingLimits
from zerojit.contract.equivalence import canonical, keys_via_registry

from .legacy import legacy_keys
from .model import build_model, nvfp4_kv_launchers, uses_nvfp4_kv_launchers

SCHEDULERS = ((16, 16384, 8704), (16, 512, 8704), (16, 513, 8704), (64, 8192, 32768),
              (1, 12288, 12288), (1, 12289, 12289), (256, 256, 256))


@dataclasses.dataclass(frozen=True)
class ROCmConfig:
    arch: str = "gfx950"
    kv_cache_dtype: str = "nvfp4"
    is_minimax: bool = True
    enable_jit_warmup: bool = True
    scheduler: tuple[int, int, int] = SCHEDULERS[0]
    spec_query_lens: tuple[int, ...] = ()

    def limits(self) -> ServingLimits:
        seqs, tokens, model_len = self.scheduler
        return ServingLimits(max_num_seqs=seqs, max_num_batched_tokens=max(tokens, seqs * max((1, *self.spec_query_lens))),
                             max_model_len=model_len, arch=self.arch, kv_cache_dtype=self.kv_cache_dtype,
                             spec_query_lens=self.spec_query_lens, enable_jit_warmup=self.enable_jit_warmup)


def _full() -> list[ROCmConfig]:
    return [ROCmConfig(arch, kv, minimax, jit, scheduler, spec)
            for arch, kv, minimax, jit, scheduler, spec in itertools.product(
                ("gfx950", "gfx942", "sm90"), ("nvfp4", "fp8"), (True, False), (True, False), SCHEDULERS,
                ((), (2,), (2, 4)))]


class ROCmEquivalence:
    family = "rocm-nvfp4"
    grids = {"full": _full, "smoke": lambda: _full()[::23]}

    def strategy(self):
        return st.builds(ROCmConfig, arch=st.sampled_from(("gfx950", "gfx942", "sm100")),
                         kv_cache_dtype=st.sampled_from(("nvfp4", "fp8", "auto")), is_minimax=st.booleans(),
                         enable_jit_warmup=st.booleans(),
                         scheduler=st.tuples(st.integers(1, 64), st.integers(64, 20000), st.integers(16, 40000)),
                         spec_query_lens=st.sampled_from(((), (2,), (4,), (2, 3))))

    def legacy_keys(self, config: ROCmConfig) -> set[str]:
        # The orchestrator called the step on ROCm; the step returned early unless MiniMax M3 was imported.
        if not (config.arch.startswith("gfx") and config.is_minimax):
            return set()
        launchers = nvfp4_kv_launchers()
        return canonical(key for keys in legacy_keys(config.limits(), launchers).values() for key in keys)

    def migrated_keys(self, config: ROCmConfig) -> set[str]:
        limits = config.limits()
        return keys_via_registry(limits, lambda: build_model(limits, 2) if config.is_minimax else None)

    def intended(self, config: ROCmConfig, only_legacy: set[str], only_migrated: set[str]) -> str | None:
        limits = config.limits()
        if only_legacy and not only_migrated:
            if not uses_nvfp4_kv_launchers(limits):
                return ("legacy warmed the NVFP4 launchers on any ROCm GPU and KV dtype; the layer registers only "
                        "where it runs them")
            if not config.enable_jit_warmup:
                return "the migrated registration honours enable_jit_warmup; the legacy ROCm step ran regardless"
            return None
        if only_legacy:
            return None
        reasons = {_legacy_blind_spot(key) for key in only_migrated}
        return None if None in reasons else "; ".join(sorted(reasons))


def _legacy_blind_spot(key: str) -> str | None:
    """Why the legacy sweep (one prompt per step, context = prompt) cannot reach this key, if it cannot."""
    kind, fields = key.split(":", 1)
    fields = json.loads(fields)
    if (kind == "IndexPrefillKey" and fields["large"]) or (kind == "FusedInsertKey" and fields["large_batch"]):
        return "legacy never puts several prompts in one step (their tokens add up past a variant bound)"
    if kind == "SparsePrefillKey":
        return "legacy never prefills a chunk whose context is longer than the step (chunked prefill)"
    if kind == "TopKKey":
        return ("legacy sweeps contexts at powers of two (prefill only up to one step), so top-k strip counts "
                "in between are missed")
    return None
