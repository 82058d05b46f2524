"""The pre-migration code of the gated RMS norm: vLLM 0.33.0's own, run from the release's tree.

The legacy side of `zerojit keys diff` is vLLM 0.33.0 itself: `kernel_warmup` calls
`qwen_triton_warmup`, which (for a Qwen GDN model type whose GDN layers hold their KV cache)
calls its step `_warm_gated_rms_norm_kernel`, which expands `LayerNormFwdKernel.get_warmup_keys`
for the first such layer (migrate/engine_trees/warmup.py runs it). A migrated tree's registration
runs as `QwenGatedDeltaNetAttention.__init__` wrote it, with the layer's attributes.

Run from the tree: the spec's modules (orchestrator, warmup module, the kernel's module), vLLM's
jit_warmup and its Triton helper (the key's value classes and pointer variants), math_utils.
Stubbed with values, and only these:
  vllm.platforms.current_platform (CUDA, the arch under test);
  vllm.utils.platform_utils.num_compute_units (the GPU's SM count under test);
  vllm.triton_utils (Triton itself);
  vllm.model_executor.layers.mamba.mamba_utils.is_conv_state_dim_first (the conv cache layout).
A GDN layer is a namespace holding what its constructor sets (heads, dims, TP size, the output
norm's weight and flags) and, once the engine allocated it, its KV cache as meta tensors.
"""

from __future__ import annotations

import types
from typing import Any

import torch

from zerojit.contract.backends.triton import value_class
from zerojit.contract.limits import serving_dtype, torch_dtype
from zerojit.migrate.engine_trees.errors import EngineRunError
from zerojit.migrate.engine_trees.warmup import VllmPlatform, vllm_worker

from .engine_kernel import KERNEL_RELEASE, triton_stub
from .kernel import LayerNormKey
from .spec import SPEC

LEGACY_RELEASE = KERNEL_RELEASE


class GdnEngine:
    """The gated RMS norm inside a vLLM tree, for `GdnConfig`s (equivalence.py)."""

    real_modules = ("vllm.model_executor.warmup.jit_warmup_triton_helper", "vllm.utils.math_utils")

    def stubs(self, state: types.SimpleNamespace) -> dict[str, dict[str, Any]]:
        return {
            "vllm.platforms": {"current_platform": VllmPlatform(state)},
            "vllm.utils.platform_utils": {"num_compute_units": lambda device_id=0: state.config.num_sms},
            "vllm.triton_utils": triton_stub(),
            "vllm.model_executor.layers.mamba.mamba_utils": {"is_conv_state_dim_first": lambda: True},
            # The engine builds the model, and binds its KV caches (WorkerWrapperBase.initialize_from_config), with
            # the config under test current.
            "vllm.config": {"get_current_vllm_config_or_none": lambda: state.vllm_config},
        }

    def import_facts(self, config: Any) -> None:
        return None  # these modules decide nothing at import

    def vllm_config(self, config: Any) -> types.SimpleNamespace:
        seqs, tokens, model_len = config.scheduler
        text = types.SimpleNamespace(model_type=config.shape.model_type)
        return types.SimpleNamespace(
            model_config=types.SimpleNamespace(
                hf_config=text, hf_text_config=text, dtype=torch_dtype(config.dtype), max_model_len=model_len
            ),
            scheduler_config=types.SimpleNamespace(max_num_seqs=seqs, max_num_batched_tokens=tokens),
            kernel_config=types.SimpleNamespace(enable_jit_warmup=config.enable_jit_warmup),
            compilation_config=types.SimpleNamespace(static_forward_context={}),
            speculative_config=None,
        )

    def worker(self, config: Any, vllm_config: Any, registry: Any) -> types.SimpleNamespace:
        """The model runner after KV-cache allocation: its GDN layers hold their caches."""
        seqs, tokens, _ = config.scheduler
        compilation = vllm_config.compilation_config
        for index in range(config.shape.gdn_layers):
            layer = self.layer(config, vllm_config)
            layer.kv_cache = _gdn_cache(config, layer)
            compilation.static_forward_context[f"model.layers.{index}.linear_attn"] = layer
        return vllm_worker(
            vllm_config,
            registry,
            device=torch.device("cuda", 0),
            max_num_tokens=tokens,
            max_num_reqs=seqs,
            compilation_config=compilation,
            is_pooling_model=False,
            speculative_config=None,
        )

    def layer(self, config: Any, vllm_config: Any) -> types.SimpleNamespace:
        """What `QwenGatedDeltaNetAttention.__init__` has set when it builds its output norm."""
        shape = config.shape
        norm = types.SimpleNamespace(
            weight=torch.empty(shape.head_v_dim, dtype=torch_dtype(config.dtype), device="meta"),
            norm_before_gate=True,
            activation=config.activation,
        )
        heads = shape.num_v_heads // config.tp_size
        return types.SimpleNamespace(
            num_k_heads=shape.num_k_heads,
            num_v_heads=shape.num_v_heads,
            head_k_dim=shape.head_k_dim,
            head_v_dim=shape.head_v_dim,
            conv_kernel_size=4,
            tp_size=config.tp_size,
            norm=norm,
            A_log=torch.empty(heads, dtype=torch.float32, device="meta"),
            dt_bias=torch.empty(heads, device="meta"),
            kv_cache=None,
        )

    def construct(self, config: Any, vllm_config: Any, tree: Any) -> None:
        """A Qwen GDN model builds one `QwenGatedDeltaNetAttention` per linear-attention layer."""
        for _ in range(config.shape.gdn_layers):
            tree.constructor_registrations(
                SPEC.registration.classes[0],
                {
                    "self": self.layer(config, vllm_config),
                    "vllm_config": vllm_config,
                    "prefix": "",
                    "gqa_interleaved_layout": False,
                    "reduce_results": True,
                },
            )

    def to_key(self, key: Any) -> LayerNormKey:
        """vLLM's key as zerojit's; refused when it holds a launch shape zerojit's key does not describe."""
        expected = dict(
            y_dtype=key.x_dtype,
            z_dtype=key.x_dtype,
            bias_dtype=None,
            rstd_dtype=torch.float32,
            mean_dtype=None if key.IS_RMS_NORM else torch.float32,
            stride_y_row=key.stride_x_row,
            stride_z_row=key.stride_x_row,
        )
        differs = {name: getattr(key, name) for name, value in expected.items() if getattr(key, name) != value}
        unaligned = [name for name, aligned in key.input_variant.alignments if not aligned]
        if differs or unaligned:
            raise EngineRunError(
                f"vLLM's layer-norm key holds a launch zerojit's key does not describe: {differs or unaligned}"
            )
        return LayerNormKey(
            serving_dtype(key.x_dtype),
            serving_dtype(key.weight_dtype),
            key.N,
            key.BLOCK_N,
            key.ROWS_PER_BLOCK,
            value_class(key.M),
            value_class(key.stride_x_row),
            key.IS_RMS_NORM,
            key.NORM_BEFORE_GATE,
            key.ACTIVATION,
        )


def _gdn_cache(config: Any, layer: types.SimpleNamespace) -> list[torch.Tensor]:
    """A layer's (conv state, SSM state) cache for a few blocks, as meta tensors."""
    shape = config.shape
    heads_k, heads_v = shape.num_k_heads // config.tp_size, shape.num_v_heads // config.tp_size
    conv_dim = 2 * heads_k * shape.head_k_dim + heads_v * shape.head_v_dim
    dtype = torch_dtype(config.dtype)
    return [
        torch.empty(4, conv_dim, layer.conv_kernel_size - 1, dtype=dtype, device="meta"),
        torch.empty(4, heads_v, shape.head_v_dim, shape.head_k_dim, dtype=dtype, device="meta"),
    ]
