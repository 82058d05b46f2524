# Engine warmup orchestrator: runs every standalone warmup step after the model loads.
import sys

from vllm.model_executor.warmup.deep_gemm_warmup import deep_gemm_warmup
from vllm.model_executor.warmup.rocm_nvfp4_kv_warmup import rocm_nvfp4_kv_warmup
from vllm.platforms import current_platform


def kernel_warmup(worker):
    vllm_config = worker.vllm_config
    if vllm_config.kernel_config.enable_jit_warmup:
        # Compile every kernel the model's layers registered (the JIT warmup contract's registry).
        worker.model_runner.jit_warmup_registry.warmup()
    deep_gemm_warmup(worker.get_model(), vllm_config.scheduler_config.max_num_batched_tokens)

    # MiniMax M3 on ROCm with an NVFP4 KV cache compiles its FlyDSL launchers here.
    if current_platform.is_rocm() and "vllm.model_executor.models.minimax_m3" in sys.modules:
        rocm_nvfp4_kv_warmup(vllm_config)
