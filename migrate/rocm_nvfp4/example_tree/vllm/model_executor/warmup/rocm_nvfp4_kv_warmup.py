# Legacy standalone warmup for the ROCm NVFP4-KV launchers of MiniMax M3.
import sys

from vllm.v1.attention.ops.rocm_nvfp4_kv import ROCM_NVFP4_KV_LAUNCHERS


def rocm_nvfp4_kv_warmup(vllm_config):
    if "vllm.model_executor.models.minimax_m3" not in sys.modules:
        return
    scheduler = vllm_config.scheduler_config
    tokens = 1
    while tokens <= min(vllm_config.model_config.max_model_len, scheduler.max_num_batched_tokens):
        ROCM_NVFP4_KV_LAUNCHERS.prefill(num_tokens=tokens, max_context_len=tokens)
        tokens *= 2
    for num_reqs in range(1, scheduler.max_num_seqs + 1):
        ROCM_NVFP4_KV_LAUNCHERS.decode(num_reqs=num_reqs, max_context_len=vllm_config.model_config.max_model_len)
