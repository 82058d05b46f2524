"""Moving the gated-RMS-norm step of vLLM 0.33.0's standalone Qwen Triton warmup onto the contract, as a spec.

`qwen_triton_warmup` warms six kernels; its first step, `_warm_gated_rms_norm_kernel`, warms
`_LAYER_NORM_FWD_KERNEL`, which is already a `VllmJitKernel` (its own keys, dispatch and
compile) that nothing registers. The step and its call go; each `QwenGatedDeltaNetAttention`
registers the kernel right after it builds its output norm, with that norm's facts. The other
five steps stay in the warmup module. The step's model-type gate goes, on purpose: the layer
that registers is the Qwen GDN layer, whichever model builds it.
"""

from zerojit.codemods.engines import VLLM
from zerojit.codemods.spec import Kernel, Legacy, MigrationSpec, Registration
from zerojit.migrate.triton_lifts.specs import QWEN_GDN_CONFIG_PINS, QWEN_GDN_SEARCH

SPEC = MigrationSpec(
    family="fla-layer-norm",
    legacy=Legacy(
        module="vllm.model_executor.warmup.qwen_triton_warmup",
        function="qwen_triton_warmup",
        step="_warm_gated_rms_norm_kernel",
        orchestrator_module=VLLM.orchestrator,
    ),
    kernel=Kernel(module="vllm.third_party.flash_linear_attention.ops.layernorm_guard", name="_LAYER_NORM_FWD_KERNEL"),
    registration=Registration(
        module="vllm.model_executor.layers.mamba.gdn.qwen_gdn_linear_attn",
        classes="QwenGatedDeltaNetAttention",
        insert_after="self.norm = RMSNormGated(",
        written_for=(
            *QWEN_GDN_CONFIG_PINS,
            ("_warm_gated_rms_norm_kernel", "88ca6653aebc421f"),
            ("qwen_triton_warmup(_warm_gated_rms_norm_kernel)", "d05d78aa19f83fe4"),  # the dtype and budget it passes
        ),
        code="""_LAYER_NORM_FWD_KERNEL.register_warmup(
    max_num_tokens=max(1, vllm_config.scheduler_config.max_num_batched_tokens),
    rows_per_token=self.num_v_heads // self.tp_size,
    group_size=self.head_v_dim,
    x_dtype=vllm_config.model_config.dtype,
    weight_dtype=self.norm.weight.dtype,
    device=self.norm.weight.device,
    norm_before_gate=self.norm.norm_before_gate,
    is_rms_norm=True,
    activation=self.norm.activation,
)""",
        intended_differences=[
            (
                "model_type not in _QWEN_MODEL_TYPES",
                "every model that builds a QwenGatedDeltaNetAttention layer runs this kernel, so each registers it "
                "(InternS2-Mobius builds it too and is now warmed); the model-type list named only the Qwen models",
            ),
            *QWEN_GDN_SEARCH,
        ],
        # The layer's module imports the FLA ops package at the top, which imports layernorm_guard: a top-level
        # import costs nothing (the module's only other import of it sits inside a function).
        import_style="module",
    ),
)
