"""FA4 MLA prefill (CuTe DSL / FlashAttention-4): migration spec (the contract implementation is issue #4)."""
