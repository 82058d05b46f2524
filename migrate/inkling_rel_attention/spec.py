"""How vLLM moved Inkling FA4 relative-attention warmup onto the contract (0.29.0 -> 0.30.0), as a spec.

The attention layer registers at the end of its constructor when JIT warmup is on; the
legacy step `_warm_inkling_fa4_rel_attention` leaves the shared `fa4_cutedsl_warmup` module.
"""

from zerojit.codemods.engines import VLLM
from zerojit.codemods.spec import Kernel, Legacy, MigrationSpec, Registration

SPEC = MigrationSpec(
    family="inkling-rel-attention",
    legacy=Legacy(
        module="vllm.model_executor.warmup.fa4_cutedsl_warmup",
        function="fa4_cutedsl_warmup",
        step="_warm_inkling_fa4_rel_attention",
        orchestrator_module=VLLM.orchestrator,
    ),
    kernel=Kernel(
        module="vllm.models.inkling.nvidia.ops.fa4_rel_attention",
        name="INKLING_FA4_REL_ATTENTION_KERNEL",
        private_name="_INKLING_FA4_REL_ATTENTION_KERNEL",
    ),
    registration=Registration(
        module="vllm.models.inkling.nvidia.attention",
        classes="InklingAttention",
        code="_INKLING_FA4_REL_ATTENTION_KERNEL.register_warmup()",
        gate="vllm_config.kernel_config.enable_jit_warmup",
        intended_differences=[
            (
                "not isinstance(hf_config, (InklingMMConfig, InklingModelConfig))",
                "only Inkling models build InklingAttention, so the layer registering is the model check",
            )
        ],
    ),
)
