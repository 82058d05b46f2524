"""vLLM 0.33.0's ll_bf16 router GEMM (CuTe DSL), migrated by a spec of `engine_specs` (no zerojit kernel of its own).

equivalence.py  the key check: GateLinear layers of a vLLM tree, the orchestrator's step against the migrated
                registrations, keyed by the kernel object each key is warmed on
"""
