"""The migration spec for the ROCm NVFP4-KV launchers (applied by `zerojit migrate rocm-nvfp4`)."""

from zerojit.codemods.engines import VLLM
from zerojit.codemods.spec import MigrationSpec

SPEC = MigrationSpec(
    family="rocm-nvfp4",
    legacy_module="vllm.model_executor.warmup.rocm_nvfp4_kv_warmup",
    legacy_function="rocm_nvfp4_kv_warmup",
    orchestrator_module=VLLM.orchestrator,
    singleton_module="vllm.v1.attention.ops.rocm_nvfp4_kv",
    singleton="ROCM_NVFP4_KV_LAUNCHERS",
    private_singleton="_ROCM_NVFP4_KV_LAUNCHERS",
    construction_module="vllm.model_executor.models.minimax_m3",
    construction_class="MiniMaxM3SparseAttention",
    registration="_ROCM_NVFP4_KV_LAUNCHERS.register_warmup(head_dim=self.head_dim, topk=self.topk)",
    gate="vllm_config.kernel_config.enable_jit_warmup and self.use_nvfp4_kv",
    intended_differences=[
        (
            "process_local_only",
            "the orchestrator runs the registry before that return, so elastic EP's process-local re-warm compiles "
            "the registered launchers too; the legacy step after it did not run there",
        ),
    ],
)
