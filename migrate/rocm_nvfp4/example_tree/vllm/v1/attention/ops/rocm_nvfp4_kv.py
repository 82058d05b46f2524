# FlyDSL launchers of the NVFP4 KV cache path (gfx950).


class NVFP4KVLaunchers:
    def register_warmup(self, **params):
        from vllm.model_executor.warmup.jit_warmup import register_warmup

        register_warmup(self, **params)

    def prefill(self, num_tokens, max_context_len):
        return ("prefill", num_tokens, max_context_len)

    def decode(self, num_reqs, max_context_len):
        return ("decode", num_reqs, max_context_len)


ROCM_NVFP4_KV_LAUNCHERS = NVFP4KVLaunchers()

__all__ = ["NVFP4KVLaunchers", "ROCM_NVFP4_KV_LAUNCHERS"]
