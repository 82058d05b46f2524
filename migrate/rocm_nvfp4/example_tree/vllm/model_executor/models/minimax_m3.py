# MiniMax M3 (excerpt): the sparse-attention layer selects the NVFP4-KV launchers.
from vllm.platforms import current_platform
from vllm.v1.attention.ops.rocm_nvfp4_kv import ROCM_NVFP4_KV_LAUNCHERS as nvfp4_launchers


class MiniMaxM3SparseAttention:
    def __init__(self, vllm_config, head_dim, topk):
        self.head_dim = head_dim
        self.topk = topk
        cache_dtype = vllm_config.cache_config.cache_dtype
        self.use_nvfp4_kv = current_platform.is_rocm() and cache_dtype == "nvfp4"

    def forward(self, num_tokens, max_context_len):
        if self.use_nvfp4_kv:
            return nvfp4_launchers.prefill(num_tokens, max_context_len)
        return None
