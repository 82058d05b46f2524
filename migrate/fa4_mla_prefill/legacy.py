"""The pre-migration code of FA4 MLA prefill: vLLM's own, run from a release's source tree.

The legacy side of `zerojit keys diff` is vLLM 0.29.0 itself: `kernel_warmup` calls
`fa4_cutedsl_warmup`, whose step `_warm_fa4_mla_prefill` expands
`FA4MLAPrefillKernel.get_warmup_keys` (migrate/engine_trees/warmup.py runs it). The same
description runs a migrated tree's `FlashAttnPrefillBackend.__init__` registration.

Run from the tree: the spec's modules (orchestrator, legacy module, flash_attn), vLLM's
jit_warmup, fa_utils and the MLA prefill base. Stubbed with values, and only these:
  vllm.envs.VLLM_BATCH_INVARIANT; vllm.platforms.current_platform (the arch under test);
  vllm.config.get_current_vllm_config(_or_none) (the config under test);
  vllm.vllm_flash_attn.flash_attn_interface (every FA version supported);
  vllm.platforms.rocm.on_gfx1250 (False) and `flash_attn` (absent: no upstream FA on ROCm);
  vllm.model_executor.layers.attention.mla_attention.get_mla_dims (the dims under test);
  vllm.v1.attention.backends.mla.prefill.get_mla_prefill_backend (the configured backend:
  the tree's FlashAttnPrefillBackend when FLASH_ATTN is chosen and its own `is_available`
  and `supports_mla_dimensions` accept, ValueError otherwise; a named stand-in for others).
Everything else vLLM imports is names only (migrate/engine_trees/sources.py).
"""

from __future__ import annotations

import dataclasses
import importlib
import types
from typing import Any

from zerojit.contract.limits import serving_dtype, torch_dtype
from zerojit.migrate.engine_trees.warmup import VllmPlatform, vllm_worker

from .kernel import FA4MLAPrefillKey, MLADims

LEGACY_RELEASE = "0.29.0"
REAL_MODULES = ("vllm.v1.attention.backends.fa_utils", "vllm.v1.attention.backends.mla.prefill.base")
FLASH_ATTN = "vllm.v1.attention.backends.mla.prefill.flash_attn"
KV_LORA_RANK = 512


def flash_attn_accepts(dims: MLADims) -> bool:
    """Whether the tree's own FlashAttnPrefillBackend takes these MLA dims (run inside the tree)."""
    base = importlib.import_module("vllm.v1.attention.backends.mla.prefill.base")
    return importlib.import_module(FLASH_ATTN).FlashAttnPrefillBackend.supports_mla_dimensions(
        base.MLADimensions(
            qk_nope_head_dim=dims.qk_nope_head_dim, qk_rope_head_dim=dims.qk_rope_head_dim, v_head_dim=dims.v_head_dim
        )
    )


def _selected_backend(state: types.SimpleNamespace):
    """The prefill backend class vLLM's selector returns for the configuration under test."""
    config = state.config
    if config.prefill_backend != "FLASH_ATTN":
        return type(
            config.prefill_backend,
            (),
            {"get_name": staticmethod(lambda: config.prefill_backend), "__init__": lambda self, **kwargs: None},
        )
    backend = importlib.import_module(FLASH_ATTN).FlashAttnPrefillBackend
    if not backend.is_available():
        raise ValueError("FLASH_ATTN is not available on this platform")
    if not flash_attn_accepts(config.dims):
        raise ValueError(f"FLASH_ATTN does not support MLA dims {config.dims}")
    return backend


class FA4MLAEngine:
    """FA4 MLA prefill inside a vLLM tree, for `MLAConfig`s (equivalence.py)."""

    real_modules = REAL_MODULES

    def stubs(self, state: types.SimpleNamespace) -> dict[str, dict[str, Any]]:
        def envs(name: str) -> Any:
            if name == "VLLM_BATCH_INVARIANT":
                return state.config.batch_invariant
            raise AttributeError(name)

        return {
            "vllm.envs": {"__getattr__": envs},
            "vllm.platforms": {"current_platform": VllmPlatform(state)},
            "vllm.platforms.rocm": {"on_gfx1250": lambda: False},
            "flash_attn": {},
            "vllm.config": {
                "get_current_vllm_config_or_none": lambda: state.vllm_config,
                "get_current_vllm_config": lambda: state.vllm_config,
            },
            "vllm.vllm_flash_attn.flash_attn_interface": {
                "is_fa_version_supported": lambda version: True,
                "fa_version_unsupported_reason": lambda version: None,
            },
            "vllm.model_executor.layers.attention.mla_attention": {
                "get_mla_dims": lambda model_config: types.SimpleNamespace(**dataclasses.asdict(state.config.dims))
            },
            "vllm.v1.attention.backends.mla.prefill": {
                "get_mla_prefill_backend": lambda vllm_config: _selected_backend(state)
            },
        }

    def import_facts(self, config: Any) -> str:
        return config.arch

    def vllm_config(self, config: Any) -> types.SimpleNamespace:
        seqs, tokens, model_len = config.scheduler
        heads = config.total_heads // config.tp_size
        parallel = types.SimpleNamespace(tensor_parallel_size=config.tp_size)
        return types.SimpleNamespace(
            model_config=types.SimpleNamespace(
                dtype=torch_dtype(config.dtype),
                use_mla=config.use_mla,
                is_diffusion=False,
                hf_text_config=None,
                max_model_len=model_len,
                get_num_attention_heads=lambda parallel_config: heads,
            ),
            attention_config=types.SimpleNamespace(flash_attn_version=config.forced_fa_version),
            kernel_config=types.SimpleNamespace(enable_jit_warmup=config.enable_jit_warmup),
            scheduler_config=types.SimpleNamespace(max_num_seqs=seqs, max_num_batched_tokens=tokens),
            parallel_config=parallel,
            cache_config=types.SimpleNamespace(cache_dtype="auto", block_size=16),
        )

    def worker(self, config: Any, vllm_config: Any, registry: Any) -> types.SimpleNamespace:
        return vllm_worker(vllm_config, registry, is_pooling_model=config.is_pooling)

    def construct(self, config: Any, vllm_config: Any, tree: Any) -> None:
        """An MLA layer builds the prefill backend vLLM selected (model construction)."""
        if not config.use_mla:
            return
        selector = importlib.import_module("vllm.v1.attention.backends.mla.prefill").get_mla_prefill_backend
        try:
            backend = selector(vllm_config)
        except ValueError:
            return
        dims = config.dims
        backend(
            num_heads=config.total_heads // config.tp_size,
            scale=(dims.qk_head_dim) ** -0.5,
            kv_lora_rank=KV_LORA_RANK,
            qk_nope_head_dim=dims.qk_nope_head_dim,
            qk_rope_head_dim=dims.qk_rope_head_dim,
            v_head_dim=dims.v_head_dim,
            vllm_config=vllm_config,
        )

    def to_key(self, key: Any) -> FA4MLAPrefillKey:
        fields = dataclasses.asdict(key)
        fields["q_dtype"] = serving_dtype(fields["q_dtype"])
        return FA4MLAPrefillKey(**fields)

    def backend_fa_version(self, config: Any, qk_head_dim: int, v_head_dim: int | None) -> int | None:
        """The FA version the tree's fa_utils decides for these head sizes (the backend passes both)."""
        return importlib.import_module("vllm.v1.attention.backends.fa_utils").get_flash_attn_version(
            head_size=qk_head_dim, head_size_v=v_head_dim
        )
