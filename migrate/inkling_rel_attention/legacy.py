"""The pre-migration code of Inkling relative attention: vLLM's own, run from a release's tree.

The legacy side of `zerojit keys diff` is vLLM 0.29.0 itself: `kernel_warmup` calls
`fa4_cutedsl_warmup`, whose step `_warm_inkling_fa4_rel_attention` warms the kernel when
the HF config is an Inkling config, expanding `InklingFA4RelAttentionKernel.get_warmup_keys`
(migrate/engine_trees/warmup.py runs it). The same description builds a migrated tree's
`InklingAttention` layers (global and sliding-window), whose constructor registers.

Run from the tree: the spec's modules (orchestrator, legacy module, the kernel's ops module,
the attention layer) and vLLM's jit_warmup. Stubbed with values, and only these:
  vllm.platforms.current_platform (the arch under test);
  vllm.distributed.get_tensor_model_parallel_world_size (the TP size under test);
  vllm.config.get_current_vllm_config (the config under test);
  vllm.utils.torch_utils.kv_cache_dtype_str_to_dtype ("auto": the model dtype);
  vllm.models.inkling.configs (InklingModelConfig / InklingMMConfig: the HF config classes).
Everything else vLLM imports is names only (migrate/engine_trees/sources.py): the layer's
linear, norm and short-convolution modules are built as placeholders.
"""

from __future__ import annotations

import dataclasses
import importlib
import types
from typing import Any

import torch

from zerojit.contract.limits import serving_dtype, torch_dtype
from zerojit.migrate.engine_trees.warmup import VllmPlatform, vllm_worker

from .kernel import InklingKey

LEGACY_RELEASE = "0.29.0"
KV_CACHE_BLOCK = 128


class InklingModelConfig(types.SimpleNamespace):
    """Stands for vLLM's Inkling HF config class (the legacy step checks isinstance)."""


class InklingMMConfig(types.SimpleNamespace):
    """Stands for the multimodal Inkling HF config class."""


class InklingEngine:
    """Inkling relative attention inside a vLLM tree, for `InklingConfig`s (equivalence.py)."""

    real_modules = ()

    def stubs(self, state: types.SimpleNamespace) -> dict[str, dict[str, Any]]:
        return {
            "vllm.platforms": {"current_platform": VllmPlatform(state)},
            "vllm.distributed": {"get_tensor_model_parallel_world_size": lambda: state.config.tp_size},
            "vllm.config": {
                "get_current_vllm_config": lambda: state.vllm_config,
                "get_current_vllm_config_or_none": lambda: state.vllm_config,
            },
            "vllm.utils.torch_utils": {"kv_cache_dtype_str_to_dtype": _kv_cache_dtype},
            "vllm.models.inkling.configs": {
                "InklingModelConfig": InklingModelConfig,
                "InklingMMConfig": InklingMMConfig,
            },
        }

    def import_facts(self, config: Any) -> str:
        return config.arch

    def vllm_config(self, config: Any) -> types.SimpleNamespace:
        seqs, tokens, model_len = config.scheduler
        hf_class = InklingModelConfig if config.is_inkling else types.SimpleNamespace
        return types.SimpleNamespace(
            model_config=types.SimpleNamespace(
                hf_config=hf_class(**config.hf_config()), dtype=torch_dtype(config.dtype), max_model_len=model_len
            ),
            scheduler_config=types.SimpleNamespace(max_num_seqs=seqs, max_num_batched_tokens=tokens),
            cache_config=types.SimpleNamespace(cache_dtype="auto", block_size=KV_CACHE_BLOCK),
            kernel_config=types.SimpleNamespace(enable_jit_warmup=config.enable_jit_warmup),
            compilation_config=types.SimpleNamespace(static_forward_context={}),
            parallel_config=types.SimpleNamespace(tensor_parallel_size=config.tp_size),
        )

    def worker(self, config: Any, vllm_config: Any, registry: Any) -> types.SimpleNamespace:
        return vllm_worker(vllm_config, registry)

    def construct(self, config: Any, vllm_config: Any, tree: Any) -> None:
        """An Inkling decoder builds one global and one sliding-window attention layer (as its model does)."""
        if not config.is_inkling:
            return
        attention = importlib.import_module("vllm.models.inkling.nvidia.attention").InklingAttention
        hf = vllm_config.model_config.hf_config
        for index, is_local in enumerate((False, True)):
            attention(
                hf,
                num_heads=hf.swa_num_attention_heads if is_local else hf.num_attention_heads,
                num_kv_heads=hf.swa_num_key_value_heads if is_local else hf.num_key_value_heads,
                head_dim=hf.swa_head_dim if is_local else hf.head_dim,
                rel_extent=hf.rel_extent,
                local_extent=hf.sliding_window_size,
                is_local=is_local,
                prefix=f"model.layers.{index}.attn",
                quant_config=None,
                conv_owner=None,
            )

    def to_key(self, key: Any) -> InklingKey:
        fields = dataclasses.asdict(key)
        for name in ("dtype", "kv_dtype"):
            fields[name] = serving_dtype(fields[name])
        return InklingKey(**fields)


def _kv_cache_dtype(cache_dtype: str, model_config: Any) -> torch.dtype:
    if cache_dtype != "auto":
        raise ValueError(f"the Inkling grids serve an unquantized KV cache, not {cache_dtype!r}")
    return model_config.dtype
