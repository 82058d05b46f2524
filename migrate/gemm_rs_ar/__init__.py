"""vLLM 0.33.0's GEMM-RS/AR (CuTe DSL), migrated by a spec of `engine_specs` (no zerojit kernel of its own).

equivalence.py  the key check: the tree's own `GemmRsAr.can_run` over a model's projections, then the orchestrator's
                step against the migrated registrations, each key the arguments of `Sm100GemmRsAr.compile`
"""
