"""vLLM 0.33.0's BF16x3 router GEMM (CuTe DSL, with a Triton split-K reduction), migrated by a spec of `engine_specs`
(no zerojit kernel of its own).

equivalence.py  the key check: the orchestrator's step over a model's `GateLinear` layers against the migrated
                constructors' registrations, each key a compile the module's own warmup reaches
"""
