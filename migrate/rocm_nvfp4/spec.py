"""The migration spec for the ROCm NVFP4-KV launchers (applied by `zerojit migrate rocm-nvfp4`)."""

from zerojit.codemods.engines import VLLM
from zerojit.codemods.spec import Kernel, Legacy, MigrationSpec, Registration

SPEC = MigrationSpec(
    family="rocm-nvfp4",
    legacy=Legacy(
        module="vllm.model_executor.warmup.rocm_nvfp4_kv_warmup",
        function="rocm_nvfp4_kv_warmup",
        orchestrator_module=VLLM.orchestrator,
    ),
    kernel=Kernel(
        module="vllm.v1.attention.ops.rocm_nvfp4_kv",
        name="ROCM_NVFP4_KV_LAUNCHERS",
        private_name="_ROCM_NVFP4_KV_LAUNCHERS",
    ),
    registration=Registration(
        module="vllm.model_executor.models.minimax_m3",
        classes="MiniMaxM3SparseAttention",
        code="_ROCM_NVFP4_KV_LAUNCHERS.register_warmup(head_dim=self.head_dim, topk=self.topk)",
        gate="vllm_config.kernel_config.enable_jit_warmup and self.use_nvfp4_kv",
        intended_differences=[
            (
                "process_local_only",
                "the orchestrator runs the registry before that return, so elastic EP's process-local re-warm compiles "
                "the registered launchers too; the legacy step after it did not run there",
            ),
        ],
    ),
)
